//! The hardware limits of each compute capability, and the limits every supported GPU shares.
//!
//! One table serves the proc macro (through [`PORTABLE`], at compile time), the offline CLI
//! (through [`ArchLimits::for_arch`]) and the runtime, which starts from
//! [`ArchLimits::for_arch`] and overwrites the fields it can query with `cuDeviceGetAttribute`
//! (renaming the [`origin`](ArchLimits::origin) to the device). Keeping a single table is what
//! keeps the three from disagreeing about a limit.
//!
//! # Sources
//!
//! - Per-SM warps, blocks, shared memory and the opt-in per-block maximum: the
//!   "Technical Specifications per Compute Capability" table of the
//!   [CUDA C++ Programming Guide](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#features-and-technical-specifications),
//!   cross-checked against CCCL's `cuda/__device/arch_traits.h` (NVIDIA's own machine-readable
//!   copy of that table; it computes the opt-in maximum as the per-SM shared memory less the
//!   1 KiB the driver reserves per block).
//! - Allocation units, carveouts, blocks per SM and sub-partitions: `cuda_occupancy.h` from the
//!   CUDA 13.0 toolkit (`cudaOccSMemAllocationGranularity`, `cudaOccRegAllocationGranularity`,
//!   `cudaOccSubPartitionsPerMultiprocessor`, `cudaOccMaxBlocksPerMultiprocessor`,
//!   `cudaOccAlignUpShmemSizeVoltaPlus`). Where the guide and the header differ, the header wins,
//!   because the occupancy calculator must equal `cudaOccupancyMaxActiveBlocksPerMultiprocessor`.

use std::fmt;

use serde::Serialize;

use crate::arch::{Arch, SUPPORTED_ARCHES};
use crate::dim::Dim3;

const KIB: u32 = 1024;

/// Where a set of limits came from, for messages: "sm_90 allows at most ..." or
/// "device 0 (NVIDIA H100 80GB HBM3) allows at most ...".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum LimitsOrigin {
    /// The table for an architecture, with no device at hand (macro, CLI).
    Arch(Arch),
    /// Values queried from a real device by the runtime.
    Device { ordinal: u32, name: String },
    /// What holds on every GPU cudacheck supports (the macro with no `arch`): a configuration
    /// that breaks it runs nowhere.
    EveryGpu,
}

impl fmt::Display for LimitsOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitsOrigin::Arch(arch) => write!(f, "{arch}"),
            LimitsOrigin::Device { ordinal, name } => write!(f, "device {ordinal} ({name})"),
            LimitsOrigin::EveryGpu => f.write_str("every GPU"),
        }
    }
}

/// The limits a launch must respect on one compute capability (or one device), and the
/// allocation rules the occupancy calculator follows.
///
/// Byte counts are bytes; register counts are 32-bit registers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArchLimits {
    /// The compute capability these limits describe.
    pub arch: Arch,
    /// What to call the target in messages.
    pub origin: LimitsOrigin,
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_{X,Y,Z}`.
    pub max_block_dim: Dim3,
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_{X,Y,Z}`.
    pub max_grid_dim: Dim3,
    /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE`.
    pub warp_size: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`.
    pub max_threads_per_sm: u32,
    /// `max_threads_per_sm / warp_size`: the resident warp slots of one SM.
    pub max_warps_per_sm: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR`.
    pub max_blocks_per_sm: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR`.
    pub registers_per_sm: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK`.
    pub max_registers_per_block: u32,
    /// The most registers one thread can address (255: register 255 is the zero register).
    pub max_registers_per_thread: u32,
    /// Registers are allocated to a warp in multiples of this many (`regs x 32` rounded up).
    pub register_alloc_unit: u32,
    /// When the hardware checks a block's registers against
    /// [`max_registers_per_block`](Self::max_registers_per_block), it rounds the block's warps up
    /// to a multiple of this: the SM's 4 sub-partitions, which each hold a quarter of the
    /// register file (`cuda_occupancy.h`, `cudaOccMaxBlocksPerSMRegsLimit`).
    pub warp_alloc_granularity: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`: the largest carveout.
    pub shared_per_sm: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`: what a block may use without opting in.
    pub shared_per_block_default: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: what a block may use after
    /// `cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`.
    pub shared_per_block_opt_in: u32,
    /// `CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK`: shared memory the driver takes
    /// for itself in every block, on top of what the kernel asks for.
    pub reserved_shared_per_block: u32,
    /// Shared memory is allocated to a block in multiples of this many bytes.
    pub shared_alloc_unit: u32,
    /// The shared-memory sizes (KiB) an SM's unified L1/shared array can be split into, smallest
    /// first; the driver rounds a carveout request up to one of these.
    pub shared_carveout_options: &'static [u32],
    /// The portable maximum blocks per cluster (8), or `None` where clusters do not exist.
    pub max_cluster_size: Option<u32>,
}

/// The limits that hold on every GPU cudacheck supports; what the proc macro checks against at
/// compile time, when it does not know the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PortableLimits {
    pub max_threads_per_block: u32,
    pub max_block_dim: Dim3,
    pub max_grid_dim: Dim3,
    pub warp_size: u32,
    /// Statically declared `__shared__` memory can never exceed this, on any GPU, opt-in or not.
    pub max_static_shared_per_block: u32,
    /// What a block may use without opting in, everywhere.
    pub shared_per_block_default: u32,
    /// The smallest opt-in maximum of all supported arches (sm_75's 64 KiB): dynamic shared
    /// memory up to this works everywhere once the kernel opts in.
    pub shared_per_block_opt_in: u32,
    pub max_registers_per_thread: u32,
    pub max_registers_per_block: u32,
}

/// The limits shared by every architecture in [`SUPPORTED_ARCHES`] (the test
/// `portable_limits_hold_on_every_arch` keeps this true as the table grows).
pub const PORTABLE: PortableLimits = PortableLimits {
    max_threads_per_block: 1024,
    max_block_dim: Dim3::new(1024, 1024, 64),
    max_grid_dim: Dim3::new(i32::MAX as u32, 65535, 65535),
    warp_size: 32,
    max_static_shared_per_block: 48 * KIB,
    shared_per_block_default: 48 * KIB,
    shared_per_block_opt_in: 64 * KIB,
    max_registers_per_thread: 255,
    max_registers_per_block: 64 * KIB,
};

// Carveouts (KiB), `cudaOccAlignUpShmemSizeVoltaPlus` in cuda_occupancy.h (CUDA 13.0).
/// Volta (7.0, 7.2).
const CARVEOUT_VOLTA: &[u32] = &[0, 8, 16, 32, 64, 96];
/// Turing (7.5) has no zero-shared configuration.
const CARVEOUT_TURING: &[u32] = &[32, 64];
/// GA100 (8.0) and Orin (8.7).
const CARVEOUT_GA100: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164];
/// GA10x (8.6), Ada (8.9) and consumer Blackwell (12.0, 12.1).
const CARVEOUT_100K: &[u32] = &[0, 8, 16, 32, 64, 100];
/// Hopper (9.0) and datacenter/Thor Blackwell (10.0, 10.1, 10.3, 11.0).
const CARVEOUT_228K: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

/// The per-architecture values that differ; everything else is common to 7.0 and later.
struct Row {
    arch: Arch,
    max_threads_per_sm: u32,
    max_blocks_per_sm: u32,
    shared_per_sm_kib: u32,
    carveouts: &'static [u32],
}

const fn row(
    major: u32,
    minor: u32,
    max_threads_per_sm: u32,
    max_blocks_per_sm: u32,
    shared_per_sm_kib: u32,
    carveouts: &'static [u32],
) -> Row {
    Row {
        arch: Arch::new(major, minor),
        max_threads_per_sm,
        max_blocks_per_sm,
        shared_per_sm_kib,
        carveouts,
    }
}

/// Threads/SM and shared/SM from the Programming Guide table and CCCL's arch_traits.h; blocks/SM
/// from `cudaOccMaxBlocksPerMultiprocessor` (which agrees with the guide). 7.2 (Xavier) is
/// Volta's SM; 10.1 is Thor before CUDA 13 renamed it 11.0, and cuda_occupancy.h gives both
/// the same 24 blocks per SM, so both get 11.0's 1536 threads per SM.
const TABLE: &[Row] = &[
    row(7, 0, 2048, 32, 96, CARVEOUT_VOLTA),
    row(7, 2, 2048, 32, 96, CARVEOUT_VOLTA),
    row(7, 5, 1024, 16, 64, CARVEOUT_TURING),
    row(8, 0, 2048, 32, 164, CARVEOUT_GA100),
    row(8, 6, 1536, 16, 100, CARVEOUT_100K),
    row(8, 7, 1536, 16, 164, CARVEOUT_GA100),
    row(8, 9, 1536, 24, 100, CARVEOUT_100K),
    row(9, 0, 2048, 32, 228, CARVEOUT_228K),
    row(10, 0, 2048, 32, 228, CARVEOUT_228K),
    row(10, 1, 1536, 24, 228, CARVEOUT_228K),
    row(10, 3, 2048, 32, 228, CARVEOUT_228K),
    row(11, 0, 1536, 24, 228, CARVEOUT_228K),
    row(12, 0, 1536, 24, 100, CARVEOUT_100K),
    row(12, 1, 1536, 24, 100, CARVEOUT_100K),
];

impl ArchLimits {
    /// The limits of `arch`, or `None` when cudacheck has no table for it (see
    /// [`SUPPORTED_ARCHES`]).
    pub fn exact(arch: Arch) -> Option<ArchLimits> {
        TABLE
            .iter()
            .find(|r| r.arch == arch)
            .map(|r| Self::from_row(r, arch))
    }

    /// The limits of `arch`.
    ///
    /// Every architecture that [`Arch`]'s parser accepts has a table. For any other (a newer GPU
    /// than this release knows, built with [`Arch::new`]), this returns the table of the newest
    /// supported architecture older than `arch` (or of the oldest, 7.0, for anything older),
    /// relabelled as `arch`: the runtime overwrites the fields a device reports, so a guess from
    /// the nearest relative is better than refusing to run. Use [`ArchLimits::exact`] to refuse.
    pub fn for_arch(arch: Arch) -> ArchLimits {
        let nearest = TABLE
            .iter()
            .rev()
            .find(|r| r.arch <= arch)
            .unwrap_or(&TABLE[0]);
        Self::from_row(nearest, arch)
    }

    fn from_row(r: &Row, arch: Arch) -> ArchLimits {
        let ampere_or_later = r.arch.major >= 8;
        // The driver reserves 1 KiB per block from Ampere on (cudaOccSMemPerBlock adds it to the
        // per-block limit; CCCL's arch_traits sets it for cc >= 8.0).
        let reserved = if ampere_or_later { KIB } else { 0 };
        let shared_per_sm = r.shared_per_sm_kib * KIB;
        ArchLimits {
            arch,
            origin: LimitsOrigin::Arch(arch),
            max_threads_per_block: PORTABLE.max_threads_per_block,
            max_block_dim: PORTABLE.max_block_dim,
            max_grid_dim: PORTABLE.max_grid_dim,
            warp_size: 32,
            max_threads_per_sm: r.max_threads_per_sm,
            max_warps_per_sm: r.max_threads_per_sm / 32,
            max_blocks_per_sm: r.max_blocks_per_sm,
            registers_per_sm: 64 * KIB,
            max_registers_per_block: 64 * KIB,
            max_registers_per_thread: 255,
            // cudaOccRegAllocationGranularity: 256 on every arch since Kepler.
            register_alloc_unit: 256,
            // cudaOccSubPartitionsPerMultiprocessor: 4 on 7.x and later.
            warp_alloc_granularity: 4,
            shared_per_sm,
            shared_per_block_default: 48 * KIB,
            // The guide's opt-in maximum is what the SM has less the driver's reservation
            // (96 KiB on 7.0, 64 KiB on 7.5, 163 KiB on 8.0, 99 KiB on 8.6/8.9/12.x, 227 KiB on 9.0).
            shared_per_block_opt_in: shared_per_sm - reserved,
            reserved_shared_per_block: reserved,
            // cudaOccSMemAllocationGranularity: 256 bytes on 7.x, 128 from 8.x on.
            shared_alloc_unit: if ampere_or_later { 128 } else { 256 },
            shared_carveout_options: r.carveouts,
            // Thread block clusters arrived with Hopper; 8 blocks is the portable size (the
            // Programming Guide, "Thread Block Clusters"); larger needs a non-portable opt-in.
            max_cluster_size: (r.arch.major >= 9).then_some(8),
        }
    }

    /// The smallest carveout (bytes) of at least `bytes`, as the driver rounds a shared-memory
    /// configuration request (`cudaOccAlignUpShmemSizeVoltaPlus`), or `None` when no carveout is
    /// that large.
    pub fn align_up_carveout(&self, bytes: u32) -> Option<u32> {
        self.shared_carveout_options
            .iter()
            .map(|kib| kib * KIB)
            .find(|&c| c >= bytes)
    }

    /// All limits tables, oldest architecture first.
    pub fn all() -> impl Iterator<Item = ArchLimits> {
        SUPPORTED_ARCHES.iter().map(|&a| ArchLimits::for_arch(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(s: &str) -> ArchLimits {
        ArchLimits::exact(s.parse().unwrap()).unwrap()
    }

    #[test]
    fn every_supported_arch_has_exactly_one_table() {
        for &arch in SUPPORTED_ARCHES {
            assert!(ArchLimits::exact(arch).is_some(), "{arch} has no table");
            assert_eq!(TABLE.iter().filter(|r| r.arch == arch).count(), 1, "{arch}");
        }
        assert_eq!(TABLE.len(), SUPPORTED_ARCHES.len());
    }

    #[test]
    fn tables_are_self_consistent() {
        for l in ArchLimits::all() {
            let a = l.arch;
            assert_eq!(
                l.max_warps_per_sm * l.warp_size,
                l.max_threads_per_sm,
                "{a}"
            );
            assert!(l.max_threads_per_block <= l.max_threads_per_sm, "{a}");
            assert_eq!(l.max_block_dim.x, l.max_threads_per_block, "{a}");
            assert!(
                l.shared_per_block_opt_in >= l.shared_per_block_default,
                "{a}"
            );
            assert_eq!(
                l.shared_per_block_opt_in + l.reserved_shared_per_block,
                l.shared_per_sm,
                "{a}: opt-in plus the reservation is the whole SM"
            );
            assert_eq!(l.shared_per_sm % l.shared_alloc_unit, 0, "{a}");
            assert!(l.max_registers_per_block <= l.registers_per_sm, "{a}");
            assert_eq!(l.registers_per_sm % (l.register_alloc_unit * 4), 0, "{a}");
            let largest = l.shared_carveout_options.last().copied().unwrap_or(0) * KIB;
            assert_eq!(
                largest, l.shared_per_sm,
                "{a}: the largest carveout is the SM"
            );
            assert!(
                l.shared_carveout_options.windows(2).all(|w| w[0] < w[1]),
                "{a}"
            );
            assert_eq!(l.max_cluster_size.is_some(), a.major >= 9, "{a}");
            assert_eq!(l.origin, LimitsOrigin::Arch(a));
        }
    }

    #[test]
    fn portable_limits_hold_on_every_arch() {
        for l in ArchLimits::all() {
            let a = l.arch;
            assert!(
                PORTABLE.max_threads_per_block <= l.max_threads_per_block,
                "{a}"
            );
            for (p, v) in PORTABLE
                .max_block_dim
                .to_array()
                .iter()
                .zip(l.max_block_dim.to_array())
            {
                assert!(*p <= v, "{a}");
            }
            for (p, v) in PORTABLE
                .max_grid_dim
                .to_array()
                .iter()
                .zip(l.max_grid_dim.to_array())
            {
                assert!(*p <= v, "{a}");
            }
            assert!(
                PORTABLE.shared_per_block_default <= l.shared_per_block_default,
                "{a}"
            );
            assert!(
                PORTABLE.shared_per_block_opt_in <= l.shared_per_block_opt_in,
                "{a}"
            );
            assert!(
                PORTABLE.max_registers_per_block <= l.max_registers_per_block,
                "{a}"
            );
        }
        // The opt-in floor is attained (sm_75), so it is not needlessly low.
        assert_eq!(
            limits("sm_75").shared_per_block_opt_in,
            PORTABLE.shared_per_block_opt_in
        );
    }

    #[test]
    fn pinned_values_from_the_programming_guide() {
        let h100 = limits("sm_90");
        assert_eq!(h100.shared_per_block_opt_in, 232_448); // 227 KiB
        assert_eq!(h100.shared_per_sm, 233_472); // 228 KiB
        assert_eq!(h100.max_warps_per_sm, 64);
        assert_eq!(h100.max_cluster_size, Some(8));
        assert_eq!(h100.max_grid_dim, Dim3::new(2_147_483_647, 65535, 65535));

        let a100 = limits("sm_80");
        assert_eq!(a100.shared_per_block_opt_in, 166_912); // 163 KiB
        assert_eq!(a100.reserved_shared_per_block, 1024);
        assert_eq!(a100.shared_alloc_unit, 128);
        assert_eq!(a100.max_cluster_size, None);

        let v100 = limits("sm_70");
        assert_eq!(v100.shared_per_block_opt_in, 98_304); // 96 KiB
        assert_eq!(v100.reserved_shared_per_block, 0);
        assert_eq!(v100.shared_alloc_unit, 256);

        let t4 = limits("sm_75");
        assert_eq!(t4.max_threads_per_sm, 1024);
        assert_eq!(t4.max_blocks_per_sm, 16);

        for s in ["sm_86", "sm_89", "sm_120", "sm_121"] {
            assert_eq!(limits(s).shared_per_block_opt_in, 101_376, "{s}"); // 99 KiB
            assert_eq!(limits(s).max_threads_per_sm, 1536, "{s}");
        }
        assert_eq!(limits("sm_89").max_blocks_per_sm, 24);
        assert_eq!(limits("sm_86").max_blocks_per_sm, 16);
        assert_eq!(limits("sm_110").max_blocks_per_sm, 24);
        assert_eq!(limits("sm_100").max_blocks_per_sm, 32);
    }

    #[test]
    fn sm_90_table_equals_a_real_h100() {
        // cuDeviceGetAttribute on an NVIDIA H100 80GB HBM3, driver 580.159.04.
        let l = limits("sm_90");
        assert_eq!(l.max_threads_per_block, 1024);
        assert_eq!(l.max_block_dim, Dim3::new(1024, 1024, 64));
        assert_eq!(l.max_grid_dim, Dim3::new(2_147_483_647, 65535, 65535));
        assert_eq!(l.shared_per_block_default, 49152);
        assert_eq!(l.warp_size, 32);
        assert_eq!(l.max_registers_per_block, 65536);
        assert_eq!(l.max_threads_per_sm, 2048);
        assert_eq!(l.shared_per_sm, 233_472);
        assert_eq!(l.registers_per_sm, 65536);
        assert_eq!(l.shared_per_block_opt_in, 232_448);
        assert_eq!(l.max_blocks_per_sm, 32);
        assert_eq!(l.reserved_shared_per_block, 1024);
    }

    #[test]
    fn unknown_arches_fall_back_to_the_nearest_older_table() {
        let future = ArchLimits::for_arch(Arch::new(13, 0));
        assert_eq!(future.arch, Arch::new(13, 0));
        assert_eq!(future.origin.to_string(), "sm_130");
        assert_eq!(future.shared_per_sm, limits("sm_121").shared_per_sm);
        assert!(ArchLimits::exact(Arch::new(13, 0)).is_none());

        let between = ArchLimits::for_arch(Arch::new(8, 8));
        assert_eq!(between.max_blocks_per_sm, limits("sm_87").max_blocks_per_sm);

        let ancient = ArchLimits::for_arch(Arch::new(6, 1));
        assert_eq!(ancient.shared_per_sm, limits("sm_70").shared_per_sm);
    }

    #[test]
    fn carveouts_round_up_like_the_driver() {
        let h100 = limits("sm_90");
        assert_eq!(h100.align_up_carveout(0), Some(0));
        assert_eq!(h100.align_up_carveout(1), Some(8 * KIB));
        assert_eq!(h100.align_up_carveout(65 * KIB), Some(100 * KIB));
        assert_eq!(h100.align_up_carveout(229 * KIB), None);
        // Turing cannot turn shared memory off: the smallest configuration is 32 KiB.
        assert_eq!(limits("sm_75").align_up_carveout(0), Some(32 * KIB));
    }

    #[test]
    fn origin_names_the_arch_or_the_device() {
        assert_eq!(LimitsOrigin::Arch(Arch::new(9, 0)).to_string(), "sm_90");
        let dev = LimitsOrigin::Device {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
        };
        assert_eq!(dev.to_string(), "device 0 (NVIDIA H100 80GB HBM3)");
    }
}
