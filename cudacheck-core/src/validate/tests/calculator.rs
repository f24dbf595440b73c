//! Occupancy worked by hand from cuda_occupancy.h's algorithm, a table of values from the
//! header itself, and the largest-block helpers.

use super::*;

#[test]
fn sm90_32_regs_256_threads_is_full_occupancy() {
    // warps/block = 256/32 = 8; by warps = 64/8 = 8.
    // regs/warp = 32x32 = 1024 (already a multiple of 256); per sub-partition 16384/1024 = 16
    // warps, x4 = 64 warps per SM; by regs = 64/8 = 8.
    // shared: 0 + 1024 reserved = 1024 per block; 228 KiB / 1 KiB = 228. blocks cap 32.
    let o = occ("sm_90", 32, 256, 0, 0);
    assert_eq!(
        (o.blocks_per_sm, o.active_warps_per_sm, o.max_warps_per_sm),
        (8, 64, 64)
    );
    assert_eq!(o.limiter, Limiter::Warps);
    assert_eq!(o.limiters(), vec![Limiter::Warps, Limiter::Registers]);
    assert_eq!(o.ratio(), 1.0);
}

#[test]
fn sm80_64_regs_256_threads_is_register_limited() {
    // regs/warp = 64x32 = 2048; 16384/2048 = 8 warps per sub-partition, 32 per SM;
    // by regs = 32/8 = 4 < by warps = 64/8 = 8. 4 blocks x 8 warps = 32 of 64 warps.
    let o = occ("sm_80", 64, 256, 0, 0);
    assert_eq!((o.blocks_per_sm, o.by_registers, o.by_warps), (4, 4, 8));
    assert_eq!(o.limiter, Limiter::Registers);
    assert_eq!(o.active_warps_per_sm, 32);
    assert_eq!(o.ratio(), 0.5);
}

#[test]
fn sm75_holds_only_1024_threads_per_sm() {
    // Turing: 32 warp slots. 256 threads = 8 warps -> 32/8 = 4 blocks; a 1024-thread block
    // takes the whole SM: 32/32 = 1.
    let o = occ("sm_75", 32, 256, 0, 0);
    assert_eq!(
        (o.blocks_per_sm, o.active_warps_per_sm, o.max_warps_per_sm),
        (4, 32, 32)
    );
    assert_eq!(o.limiter, Limiter::Warps);
    assert_eq!(occ("sm_75", 32, 1024, 0, 0).blocks_per_sm, 1);
}

#[test]
fn sm75_small_blocks_hit_the_16_block_cap() {
    // 64 threads = 2 warps -> 32/2 = 16 by warps; the 16-block cap ties and is also reported.
    let o = occ("sm_75", 16, 64, 0, 0);
    assert_eq!(o.blocks_per_sm, 16);
    assert_eq!(o.limiters(), vec![Limiter::Warps, Limiter::BlocksPerSm]);
}

#[test]
fn sm80_shared_memory_counts_the_reserved_kilobyte() {
    // 48 KiB dynamic + 1 KiB reserved = 50176 bytes (a multiple of 128); 167936 / 50176 = 3.
    // Without the reservation it would be 167936 / 49152 = 3 too, so also pin the allocation.
    let o = occ("sm_80", 32, 256, 0, 49152);
    assert_eq!(
        (o.blocks_per_sm, o.by_shared, o.shared_per_block),
        (3, 3, 50176)
    );
    assert_eq!(o.limiter, Limiter::SharedMemory);
    // Static shared counts the same way: 48128 + 1024 = 49152 -> 167936 / 49152 = 3.
    assert_eq!(occ("sm_80", 32, 256, 48128, 0).shared_per_block, 49152);
}

#[test]
fn sm90_reservation_decides_the_block_count() {
    // 100000 + 1024 = 101024, rounded up to 128 -> 101120; 233472 / 101120 = 2.
    let o = occ("sm_90", 32, 256, 0, 100_000);
    assert_eq!((o.blocks_per_sm, o.shared_per_block), (2, 101_120));
    // The whole opt-in maximum: 232448 + 1024 = 233472 = the SM; exactly one block.
    assert_eq!(occ("sm_90", 32, 256, 0, 232_448).blocks_per_sm, 1);
    // One byte more does not fit at all.
    assert_eq!(occ("sm_90", 32, 256, 0, 232_449).blocks_per_sm, 0);
}

#[test]
fn sm70_shared_memory_has_no_reservation_and_256_byte_units() {
    // 16384 static, no reservation before 8.0; 98304 / 16384 = 6 < 8 by warps.
    let o = occ("sm_70", 32, 256, 16384, 0);
    assert_eq!(
        (o.blocks_per_sm, o.by_shared, o.limiter),
        (6, 6, Limiter::SharedMemory)
    );
    // 20000 rounds up to 256 -> 20224 on Turing; 65536 / 20224 = 3.
    let o = occ("sm_75", 32, 128, 0, 20000);
    assert_eq!((o.blocks_per_sm, o.shared_per_block), (3, 20224));
    // No shared memory at all: shared memory does not limit (INT_MAX in the header).
    assert_eq!(occ("sm_70", 32, 256, 0, 0).by_shared, u32::MAX);
}

#[test]
fn blocks_that_are_not_a_multiple_of_32_take_whole_warps() {
    // 96 threads = 3 warps on sm_80: 64/3 = 21 by warps; regs 32x32 = 1024/warp, 64 warps
    // per SM / 3 = 21. 21 x 3 = 63 of 64 warps.
    let o = occ("sm_80", 32, 96, 0, 0);
    assert_eq!((o.blocks_per_sm, o.active_warps_per_sm), (21, 63));
    // 33 threads = 2 warps on sm_90: 64/2 = 32, exactly the 32-block cap.
    let o = occ("sm_90", 32, 33, 0, 0);
    assert_eq!((o.blocks_per_sm, o.active_warps_per_sm), (32, 64));
}

#[test]
fn sm86_and_sm120_have_48_warp_slots() {
    // 1536 threads per SM = 48 warps; 256 threads -> 48/8 = 6 blocks (regs would allow 8).
    for arch in ["sm_86", "sm_120"] {
        let o = occ(arch, 32, 256, 0, 0);
        assert_eq!((o.blocks_per_sm, o.max_warps_per_sm), (6, 48), "{arch}");
        assert_eq!(o.limiter, Limiter::Warps, "{arch}");
    }
    // 64 threads: 48/2 = 24 by warps, but sm_86 caps blocks at 16 (sm_89 at 24).
    let o = occ("sm_86", 32, 64, 0, 0);
    assert_eq!((o.blocks_per_sm, o.limiter), (16, Limiter::BlocksPerSm));
    assert_eq!(occ("sm_89", 32, 64, 0, 0).blocks_per_sm, 24);
}

#[test]
fn sm120_register_rounding_per_warp() {
    // 40 regs x 32 = 1280 = 5 x 256; 16384/1280 = 12 warps per sub-partition (12.8 floored),
    // 48 per SM; 384 threads = 12 warps -> 48/12 = 4. Warps: 48/12 = 4 too.
    let o = occ("sm_120", 40, 384, 0, 0);
    assert_eq!(
        (o.blocks_per_sm, o.by_registers, o.registers_per_block),
        (4, 4, 15360)
    );
}

#[test]
fn sm90_odd_register_counts_round_up_to_256_per_warp() {
    // 168 x 32 = 5376 = 21 x 256; 16384 / 5376 = 3 warps per sub-partition, 12 per SM;
    // 128 threads = 4 warps -> 12/4 = 3 blocks.
    let o = occ("sm_90", 168, 128, 0, 0);
    assert_eq!((o.blocks_per_sm, o.limiter), (3, Limiter::Registers));
    // 65 x 32 = 2080 -> 2304 per warp; 992 threads = 31 warps, checked as 32: 73728 > 65536.
    assert_eq!(occ("sm_90", 65, 992, 0, 0).blocks_per_sm, 0);
    // 64 x 32 = 2048; 31 warps checked as 32 -> 65536: fits, once.
    assert_eq!(occ("sm_90", 64, 992, 0, 0).blocks_per_sm, 1);
}

#[test]
fn a_kernel_without_registers_is_not_register_limited() {
    let o = occ("sm_70", 0, 1024, 0, 0);
    assert_eq!((o.blocks_per_sm, o.by_registers), (2, u32::MAX));
    assert_eq!(o.registers_per_block, 0);
}

#[test]
fn impossible_blocks_have_zero_occupancy() {
    assert_eq!(occ("sm_90", 32, 0, 0, 0).blocks_per_sm, 0);
    assert_eq!(occ("sm_90", 32, 1056, 0, 0).by_warps, 0);
    assert_eq!(occ("sm_90", 32, 1056, 0, 0).ratio(), 0.0);
}

/// (arch, regs, threads, static, dynamic) -> (blocks, by_warps, by_regs, by_shared, by_blocks,
/// registers per block, shared per block), each row produced by compiling CUDA 13.0's
/// `cuda_occupancy.h` with g++ and calling `cudaOccMaxActiveBlocksPerMultiprocessor` with
/// `cudaOccFuncAttributes` as built from `cudaFuncAttributes` (opt-in to exactly the dynamic
/// size) and the default device state. INT_MAX ("unlimited") is written as u32::MAX.
type ReferenceRow = (
    &'static str,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
);

#[rustfmt::skip]
const REFERENCE: &[ReferenceRow] = &[
    ("sm_70", 32, 256, 0, 0, 8, 8, 8, u32::MAX, 32, 8192, 0),
    ("sm_70", 64, 256, 0, 0, 4, 8, 4, u32::MAX, 32, 16384, 0),
    ("sm_70", 40, 128, 0, 0, 12, 16, 12, u32::MAX, 32, 5120, 0),
    ("sm_70", 32, 256, 16384, 0, 6, 8, 8, 6, 32, 8192, 16384),
    ("sm_70", 0, 1024, 0, 0, 2, 2, u32::MAX, u32::MAX, 32, 0, 0),
    ("sm_75", 32, 256, 0, 0, 4, 4, 8, u32::MAX, 16, 8192, 0),
    ("sm_75", 32, 1024, 0, 0, 1, 1, 2, u32::MAX, 16, 32768, 0),
    ("sm_75", 16, 64, 0, 0, 16, 16, 64, u32::MAX, 16, 1024, 0),
    ("sm_75", 32, 128, 0, 20000, 3, 8, 16, 3, 16, 4096, 20224),
    ("sm_75", 255, 128, 0, 0, 2, 8, 2, u32::MAX, 16, 32768, 0),
    ("sm_80", 64, 256, 0, 0, 4, 8, 4, 164, 32, 16384, 1024),
    ("sm_80", 32, 128, 0, 0, 16, 16, 16, 164, 32, 4096, 1024),
    ("sm_80", 32, 256, 0, 49152, 3, 8, 8, 3, 32, 8192, 50176),
    ("sm_80", 32, 256, 48128, 0, 3, 8, 8, 3, 32, 8192, 49152),
    ("sm_80", 0, 32, 0, 0, 32, 64, u32::MAX, 164, 32, 0, 1024),
    ("sm_80", 32, 96, 0, 0, 21, 21, 21, 164, 32, 3072, 1024),
    ("sm_80", 128, 512, 0, 0, 1, 4, 1, 164, 32, 65536, 1024),
    ("sm_80", 255, 256, 0, 0, 1, 8, 1, 164, 32, 65536, 1024),
    ("sm_80", 32, 256, 0, 166912, 1, 8, 8, 1, 32, 8192, 167936),
    ("sm_86", 32, 256, 0, 0, 6, 6, 8, 100, 16, 8192, 1024),
    ("sm_86", 32, 64, 0, 0, 16, 24, 32, 100, 16, 2048, 1024),
    ("sm_86", 32, 256, 0, 32768, 3, 6, 8, 3, 16, 8192, 33792),
    ("sm_86", 72, 1024, 0, 0, 0, 1, 0, 100, 16, 73728, 1024),
    ("sm_89", 32, 64, 0, 0, 24, 24, 32, 100, 24, 2048, 1024),
    ("sm_90", 32, 256, 0, 0, 8, 8, 8, 228, 32, 8192, 1024),
    ("sm_90", 168, 128, 0, 0, 3, 16, 3, 228, 32, 21504, 1024),
    ("sm_90", 32, 1024, 0, 0, 2, 2, 2, 228, 32, 32768, 1024),
    ("sm_90", 32, 256, 0, 100000, 2, 8, 8, 2, 32, 8192, 101120),
    ("sm_90", 32, 33, 0, 0, 32, 32, 32, 228, 32, 2048, 1024),
    ("sm_90", 32, 256, 0, 232448, 1, 8, 8, 1, 32, 8192, 233472),
    ("sm_90", 64, 992, 0, 0, 1, 2, 1, 228, 32, 63488, 1024),
    ("sm_90", 65, 992, 0, 0, 0, 2, 0, 228, 32, 71424, 1024),
    // 21 warps x 3072 = 64512 fits on paper; the hardware check rounds to 24 warps: 73728.
    ("sm_90", 96, 672, 0, 0, 0, 3, 0, 228, 32, 64512, 1024),
    ("sm_90", 96, 640, 0, 0, 1, 3, 1, 228, 32, 61440, 1024),
    ("sm_86", 80, 800, 0, 0, 0, 1, 0, 100, 16, 64000, 1024),
    ("sm_120", 32, 256, 0, 0, 6, 6, 8, 100, 24, 8192, 1024),
    ("sm_120", 32, 32, 0, 0, 24, 48, 64, 100, 24, 1024, 1024),
    ("sm_120", 40, 384, 0, 0, 4, 4, 4, 100, 24, 15360, 1024),
    ("sm_120", 32, 128, 0, 40000, 2, 12, 16, 2, 24, 4096, 41088),
];

#[test]
fn equals_nvidias_occupancy_calculator() {
    for &(arch, regs, threads, st, dy, blocks, bw, br, bs, bb, rpb, spb) in REFERENCE {
        let o = occ(arch, regs, threads, st, dy);
        let case = format!("{arch} regs={regs} threads={threads} static={st} dynamic={dy}");
        assert_eq!(
            (
                o.blocks_per_sm,
                o.by_warps,
                o.by_registers,
                o.by_shared,
                o.by_blocks
            ),
            (blocks, bw, br, bs, bb),
            "{case}"
        );
        assert_eq!(
            (o.registers_per_block, o.shared_per_block),
            (rpb, spb),
            "{case}"
        );
    }
}

/// Block sizes of [`H100_DRIVER`]'s columns.
const H100_BLOCKS: [u32; 15] = [
    32, 33, 64, 96, 128, 160, 192, 256, 384, 512, 640, 672, 768, 896, 1024,
];

/// (registers, static shared, dynamic shared, blocks per SM for each of [`H100_BLOCKS`]), from
/// `cuOccupancyMaxActiveBlocksPerMultiprocessor` on a real H100 80GB HBM3 (driver 580.159.04),
/// for PTX kernels JIT-compiled with `CU_JIT_MAX_REGISTERS` caps (the register counts are what
/// `CU_FUNC_ATTRIBUTE_NUM_REGS` reported) and dynamic shared memory opted in past 48 KiB.
/// A 0 is a block size larger than the kernel's `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`, which
/// the probe did not ask about and which the calculator must also give 0 blocks.
#[rustfmt::skip]
const H100_DRIVER: &[(u32, u32, u32, [u32; 15])] = &[
    (12, 16384, 0, [13, 13, 13, 13, 13, 12, 10, 8, 5, 4, 3, 3, 2, 2, 2]),
    (12, 16384, 40000, [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2]),
    (24, 0, 0, [32, 32, 32, 21, 16, 12, 10, 8, 5, 4, 3, 3, 2, 2, 2]),
    (24, 0, 20000, [11, 11, 11, 11, 11, 11, 10, 8, 5, 4, 3, 3, 2, 2, 2]),
    (24, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]),
    (32, 0, 0, [32, 32, 32, 21, 16, 12, 10, 8, 5, 4, 3, 3, 2, 2, 2]),
    (32, 0, 20000, [11, 11, 11, 11, 11, 11, 10, 8, 5, 4, 3, 3, 2, 2, 2]),
    (32, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]),
    (40, 0, 0, [32, 24, 24, 16, 12, 9, 8, 6, 4, 3, 2, 2, 2, 1, 1]),
    (40, 0, 20000, [11, 11, 11, 11, 11, 9, 8, 6, 4, 3, 2, 2, 2, 1, 1]),
    (40, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1]),
    (48, 0, 0, [32, 20, 20, 13, 10, 8, 6, 5, 3, 2, 2, 1, 1, 1, 1]),
    (48, 0, 20000, [11, 11, 11, 11, 10, 8, 6, 5, 3, 2, 2, 1, 1, 1, 1]),
    (48, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1]),
    (56, 0, 0, [32, 18, 18, 12, 9, 7, 6, 4, 3, 2, 1, 1, 1, 1, 1]),
    (56, 0, 20000, [11, 11, 11, 11, 9, 7, 6, 4, 3, 2, 1, 1, 1, 1, 1]),
    (56, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1]),
    (64, 0, 0, [32, 16, 16, 10, 8, 6, 5, 4, 2, 2, 1, 1, 1, 1, 1]),
    (64, 0, 20000, [11, 11, 11, 10, 8, 6, 5, 4, 2, 2, 1, 1, 1, 1, 1]),
    (64, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1]),
    (65, 0, 0, [28, 14, 14, 9, 7, 5, 4, 3, 2, 1, 1, 1, 1, 1, 0]),
    (65, 0, 20000, [11, 11, 11, 9, 7, 5, 4, 3, 2, 1, 1, 1, 1, 1, 0]),
    (65, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0]),
    (72, 0, 0, [28, 14, 14, 9, 7, 5, 4, 3, 2, 1, 1, 1, 1, 1, 0]),
    (72, 0, 20000, [11, 11, 11, 9, 7, 5, 4, 3, 2, 1, 1, 1, 1, 1, 0]),
    (72, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0]),
    (80, 0, 0, [24, 12, 12, 8, 6, 4, 4, 3, 2, 1, 1, 1, 1, 0, 0]),
    (80, 0, 20000, [11, 11, 11, 8, 6, 4, 4, 3, 2, 1, 1, 1, 1, 0, 0]),
    (80, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0]),
    (88, 0, 0, [20, 10, 10, 6, 5, 4, 3, 2, 1, 1, 1, 0, 0, 0, 0]),
    (88, 0, 20000, [11, 10, 10, 6, 5, 4, 3, 2, 1, 1, 1, 0, 0, 0, 0]),
    (88, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0]),
    (95, 0, 0, [20, 10, 10, 6, 5, 4, 3, 2, 1, 1, 1, 0, 0, 0, 0]),
    (95, 0, 20000, [11, 10, 10, 6, 5, 4, 3, 2, 1, 1, 1, 0, 0, 0, 0]),
    (95, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0]),
    (96, 0, 0, [20, 10, 10, 6, 5, 4, 3, 2, 1, 1, 1, 0, 0, 0, 0]),
    (96, 0, 20000, [11, 10, 10, 6, 5, 4, 3, 2, 1, 1, 1, 0, 0, 0, 0]),
    (96, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0]),
    (104, 0, 0, [16, 8, 8, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (104, 0, 20000, [11, 8, 8, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (104, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (120, 0, 0, [16, 8, 8, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (120, 0, 20000, [11, 8, 8, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (120, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (128, 0, 0, [16, 8, 8, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (128, 0, 20000, [11, 8, 8, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (128, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0]),
    (136, 0, 0, [12, 6, 6, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (136, 0, 20000, [11, 6, 6, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (136, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (152, 0, 0, [12, 6, 6, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (152, 0, 20000, [11, 6, 6, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (152, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (168, 0, 0, [12, 6, 6, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (168, 0, 20000, [11, 6, 6, 4, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (168, 0, 100000, [2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0]),
    (184, 0, 0, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (184, 0, 20000, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (184, 0, 100000, [2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (200, 0, 0, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (200, 0, 20000, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (200, 0, 100000, [2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (216, 0, 0, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (216, 0, 20000, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (216, 0, 100000, [2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (232, 0, 0, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (232, 0, 20000, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (232, 0, 100000, [2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (248, 0, 0, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (248, 0, 20000, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (248, 0, 100000, [2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (255, 0, 0, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (255, 0, 20000, [8, 4, 4, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (255, 0, 100000, [2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
];

#[test]
fn equals_the_h100_driver() {
    let h100 = lim("sm_90");
    for &(regs, st, dy, blocks) in H100_DRIVER {
        for (threads, expected) in H100_BLOCKS.into_iter().zip(blocks) {
            let got = occ("sm_90", regs, threads, st, dy).blocks_per_sm;
            assert_eq!(
                got, expected,
                "regs={regs} static={st} dynamic={dy} threads={threads}"
            );
            // The zeros are exactly the blocks above the driver's per-kernel maximum.
            let fits = threads <= max_threads_for_registers(regs, &h100);
            assert_eq!(expected > 0, fits, "regs={regs} threads={threads}");
        }
    }
}

#[test]
fn max_threads_equals_the_h100_driver() {
    // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK on the same H100 for the same kernels.
    let h100 = lim("sm_90");
    #[rustfmt::skip]
    let driver = [
        (104, 512), (120, 512), (128, 512), (136, 384), (152, 384), (168, 384), (184, 256),
        (200, 256), (216, 256), (232, 256), (248, 256), (255, 256),
        (12, 1024),
        (24, 1024),
        (32, 1024),
        (40, 1024),
        (48, 1024),
        (56, 1024),
        (64, 1024),
        (65, 896),
        (72, 896),
        (80, 768),
        (88, 640),
        (95, 640),
        (96, 640),
    ];
    for (regs, max) in driver {
        assert_eq!(max_threads_for_registers(regs, &h100), max, "regs={regs}");
    }
}

#[test]
fn carveout_preferences_round_up_like_the_driver() {
    // (arch, threads, dynamic, percent, blocks): cuda_occupancy.h with state.carveoutConfig set.
    let cases = [
        // 0% on sm_90: align_up(0) = 0 < 1024 per block -> the smallest carveout that fits one
        // block, 8 KiB -> 8 blocks; still 8 (warps).
        ("sm_90", 256, 0, 0, 8),
        // 21120 per block; 0% -> 32 KiB -> 1 block; 25% of 228 KiB = 58368 -> 64 KiB -> 3.
        ("sm_90", 256, 20000, 0, 1),
        ("sm_90", 256, 20000, 25, 3),
        // 50% of 164 KiB = 83968 -> 100 KiB; 102400 / 11136 = 9.
        ("sm_80", 128, 10000, 50, 9),
        // Turing's smallest configuration is 32 KiB: 32768 / 10240 = 3.
        ("sm_75", 128, 10000, 0, 3),
        // 10% of 96 KiB = 9830 -> 16 KiB; 16384 / 10240 = 1.
        ("sm_70", 128, 10000, 10, 1),
        ("sm_90", 256, 0, 100, 8),
    ];
    for (arch, threads, dynamic, percent, blocks) in cases {
        let o = occupancy_with_carveout(
            &kernel(32),
            threads,
            dynamic,
            &lim(arch),
            SharedCarveout::Percent(percent),
        );
        assert_eq!(
            o.blocks_per_sm, blocks,
            "{arch} {threads} {dynamic} {percent}%"
        );
    }
}

// Largest blocks.

#[test]
fn max_threads_for_registers_matches_the_driver() {
    let h100 = lim("sm_90");
    // 255 x 32 = 8160 -> 8192 per warp; 65536 / 8192 = 8 warps = 256 threads.
    assert_eq!(max_threads_for_registers(255, &h100), 256);
    // 128 x 32 = 4096; 16 warps = 512.
    assert_eq!(max_threads_for_registers(128, &h100), 512);
    assert_eq!(max_threads_for_registers(64, &h100), 1024);
    assert_eq!(max_threads_for_registers(0, &h100), 1024);
    // 96 x 32 = 3072; 65536/3072 = 21 warps, down to a multiple of 4 = 20 -> 640 threads.
    assert_eq!(max_threads_for_registers(96, &h100), 640);
    // 72 x 32 = 2304; 28 warps -> 896.
    assert_eq!(max_threads_for_registers(72, &h100), 896);
    assert_eq!(max_threads_for_registers(256, &h100), 0);
}

#[test]
fn max_threads_for_registers_is_the_edge_of_occupancy() {
    // The largest block runs; one warp more does not: the two functions agree on every count.
    for arch in ["sm_70", "sm_75", "sm_80", "sm_90", "sm_120"] {
        let l = lim(arch);
        for regs in 1..=255 {
            let max = max_threads_for_registers(regs, &l);
            let k = kernel(regs);
            assert!(
                occupancy(&k, max, 0, &l).blocks_per_sm >= 1,
                "{arch} {regs}"
            );
            if max < l.max_threads_per_block {
                // The next launchable block (whole warps up to the next sub-partition multiple).
                assert_eq!(
                    occupancy(&k, max + 32, 0, &l).blocks_per_sm,
                    0,
                    "{arch} {regs}"
                );
            }
        }
    }
}

#[test]
fn kernel_max_threads_takes_launch_bounds_and_required_blocks() {
    let l = lim("sm_90");
    assert_eq!(kernel_max_threads(&kernel(128), &l), 512);
    let bounded = KernelResources {
        max_threads_per_block: Some(256),
        ..kernel(32)
    };
    assert_eq!(kernel_max_threads(&bounded, &l), 256);
    let bounded_3d = KernelResources {
        max_block: Some(Dim3::new(8, 8, 2)),
        ..kernel(32)
    };
    assert_eq!(kernel_max_threads(&bounded_3d, &l), 128);
    let required = KernelResources {
        required_block: Some(Dim3::new(64, 2, 1)),
        ..kernel(255)
    };
    assert_eq!(kernel_max_threads(&required, &l), 128);
}
