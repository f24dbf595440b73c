//! The occupancy calculator: how many blocks of a kernel fit on one SM at once.
//!
//! This is NVIDIA's `cuda_occupancy.h` (CUDA 13.0), `cudaOccMaxActiveBlocksPerMultiprocessor`,
//! restated over [`ArchLimits`], with the inputs the CUDA runtime would give it:
//!
//! - the function's attributes as `cudaOccFuncAttributes(cudaFuncAttributes)` builds them:
//!   partitioned global caching off (it only exists on 5.x/6.x), one block barrier, no virtual
//!   resources, and `FUNC_SHMEM_LIMIT_OPTIN` with the opt-in set to exactly the launch's dynamic
//!   shared memory, because cudacheck's runtime opts in for what the launch asks;
//! - the device state's defaults: no cache preference and `cudaSharedmemCarveoutDefault`, for
//!   which the header assumes the largest carveout (the whole `sharedMemPerMultiprocessor`).
//!   [`occupancy_with_carveout`] takes an explicit preference instead.
//!
//! With one barrier per block, the barrier limit of 9.0+ (`cudaOccMaxBlocksPerSMBlockBarrierLimit`)
//! is never below the blocks-per-SM limit, so it is not modelled.

use std::fmt;

use serde::Serialize;

use crate::limits::ArchLimits;
use crate::resources::KernelResources;

/// What stops more blocks from being resident on an SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum Limiter {
    /// The SM's warp slots (threads per SM).
    Warps,
    /// The SM's register file.
    Registers,
    /// The SM's shared memory.
    SharedMemory,
    /// The SM's cap on resident blocks.
    BlocksPerSm,
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limiter::Warps => "warp slots",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::BlocksPerSm => "resident-block slots",
        })
    }
}

/// How many blocks of a kernel one SM holds at once, and why not more.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Occupancy {
    /// Resident blocks per SM: the smallest of the `by_*` limits.
    pub blocks_per_sm: u32,
    /// `blocks_per_sm` x warps per block.
    pub active_warps_per_sm: u32,
    /// The SM's warp slots.
    pub max_warps_per_sm: u32,
    /// The first of warps, registers, shared memory, blocks that equals `blocks_per_sm`
    /// (`cuda_occupancy.h`'s order; [`Occupancy::limiters`] lists all that do).
    pub limiter: Limiter,
    /// Blocks the warp slots allow.
    pub by_warps: u32,
    /// Blocks the register file allows; `u32::MAX` when the kernel uses no registers.
    pub by_registers: u32,
    /// Blocks shared memory allows; `u32::MAX` when a block uses none (before 8.0, where the
    /// driver reserves none).
    pub by_shared: u32,
    /// The SM's cap on resident blocks.
    pub by_blocks: u32,
    /// Registers allocated to one block (per-warp rounding included).
    pub registers_per_block: u32,
    /// Shared memory allocated to one block in bytes (reservation and rounding included).
    pub shared_per_block: u32,
}

impl Occupancy {
    /// Active warps over the SM's warp slots, from 0.0 to 1.0.
    pub fn ratio(&self) -> f64 {
        if self.max_warps_per_sm == 0 {
            return 0.0;
        }
        f64::from(self.active_warps_per_sm) / f64::from(self.max_warps_per_sm)
    }

    /// Every resource whose limit equals [`blocks_per_sm`](Self::blocks_per_sm), in
    /// `cuda_occupancy.h`'s order.
    pub fn limiters(&self) -> Vec<Limiter> {
        [
            (Limiter::Warps, self.by_warps),
            (Limiter::Registers, self.by_registers),
            (Limiter::SharedMemory, self.by_shared),
            (Limiter::BlocksPerSm, self.by_blocks),
        ]
        .into_iter()
        .filter(|&(_, by)| by == self.blocks_per_sm)
        .map(|(l, _)| l)
        .collect()
    }
}

/// A shared-memory/L1 split preference (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum SharedCarveout {
    /// `cudaSharedmemCarveoutDefault`: `cuda_occupancy.h` assumes the largest carveout.
    #[default]
    Default,
    /// A percentage of the largest carveout (0 = prefer L1, 100 = prefer shared); the driver
    /// rounds it up to a supported configuration, and ignores it when one block would not fit.
    Percent(u8),
}

/// How many blocks of `block_threads` threads with `dynamic_shared_bytes` of dynamic shared
/// memory fit on one SM, exactly as `cudaOccupancyMaxActiveBlocksPerMultiprocessor` computes it
/// with the default carveout (see the module docs for the inputs assumed).
///
/// A launch that cannot run at all (0 threads, more threads than a block may have, too many
/// registers or too much shared memory for one block) gives `blocks_per_sm == 0`; [`validate`]
/// says why in words.
///
/// [`validate`]: crate::validate::validate
pub fn occupancy(
    kernel: &KernelResources,
    block_threads: u32,
    dynamic_shared_bytes: u32,
    limits: &ArchLimits,
) -> Occupancy {
    occupancy_with_carveout(
        kernel,
        block_threads,
        dynamic_shared_bytes,
        limits,
        SharedCarveout::Default,
    )
}

/// [`occupancy`] under an explicit shared-memory carveout preference.
pub fn occupancy_with_carveout(
    kernel: &KernelResources,
    block_threads: u32,
    dynamic_shared_bytes: u32,
    limits: &ArchLimits,
    carveout: SharedCarveout,
) -> Occupancy {
    let warps = warps_per_block(block_threads, limits);
    let (by_registers, registers_per_block) = blocks_by_registers(kernel.registers, warps, limits);
    let (by_shared, shared_per_block) =
        blocks_by_shared(kernel, dynamic_shared_bytes, limits, carveout);
    // cudaOccMaxBlocksPerSMWarpsLimit: a block too large for the device fits nowhere; otherwise
    // warp slots are allocated per whole warp (a 33-thread block takes 2).
    let by_warps = if block_threads == 0 || block_threads > limits.max_threads_per_block {
        0
    } else {
        limits.max_warps_per_sm / warps
    };
    let by_blocks = limits.max_blocks_per_sm;

    let blocks = by_registers.min(by_shared).min(by_warps).min(by_blocks);
    let limiter = [
        (Limiter::Warps, by_warps),
        (Limiter::Registers, by_registers),
        (Limiter::SharedMemory, by_shared),
    ]
    .into_iter()
    .find(|&(_, by)| by == blocks)
    .map_or(Limiter::BlocksPerSm, |(l, _)| l);

    Occupancy {
        blocks_per_sm: blocks,
        active_warps_per_sm: blocks.saturating_mul(warps),
        max_warps_per_sm: limits.max_warps_per_sm,
        limiter,
        by_warps,
        by_registers,
        by_shared,
        by_blocks,
        registers_per_block: registers_per_block.try_into().unwrap_or(u32::MAX),
        shared_per_block: shared_per_block.try_into().unwrap_or(u32::MAX),
    }
}

/// Warps a block of `threads` occupies (at least 1, so that callers can divide by it).
fn warps_per_block(threads: u32, limits: &ArchLimits) -> u32 {
    threads.div_ceil(limits.warp_size.max(1)).max(1)
}

fn round_up(x: u64, unit: u64) -> u64 {
    if unit == 0 {
        x
    } else {
        x.div_ceil(unit) * unit
    }
}

/// Registers one warp is given: `registers x warp size`, rounded up to the allocation unit.
fn registers_per_warp(registers: u32, limits: &ArchLimits) -> u64 {
    round_up(
        u64::from(registers) * u64::from(limits.warp_size),
        u64::from(limits.register_alloc_unit),
    )
}

/// `cudaOccMaxBlocksPerSMRegsLimit`: (blocks the register file allows, registers per block).
///
/// Registers are handed out per warp, and each of the SM's sub-partitions holds a quarter of
/// the register file and a quarter of the warps, so the SM holds `4 x (file/4 / per-warp)` warps.
/// The hardware's per-block check assumes a block's warps are spread over all sub-partitions,
/// i.e. it rounds the warp count up to a multiple of 4 before comparing with the block limit.
fn blocks_by_registers(registers: u32, warps: u32, limits: &ArchLimits) -> (u32, u64) {
    let per_warp = registers_per_warp(registers, limits);
    let allocated = per_warp * u64::from(warps);
    let partitions = u64::from(limits.warp_alloc_granularity.max(1));
    let assumed = per_warp * round_up(u64::from(warps), partitions);
    let block_limit = u64::from(limits.max_registers_per_block);
    if assumed > block_limit
        || allocated > block_limit
        || registers > limits.max_registers_per_thread
    {
        return (0, allocated);
    }
    if per_warp == 0 {
        return (u32::MAX, allocated);
    }
    let warps_per_partition = u64::from(limits.registers_per_sm) / partitions / per_warp;
    let warps_per_sm = warps_per_partition * partitions;
    let blocks = warps_per_sm / u64::from(warps);
    (blocks.try_into().unwrap_or(u32::MAX), allocated)
}

/// `cudaOccMaxBlocksPerSMSmemLimit`: (blocks shared memory allows, bytes per block).
fn blocks_by_shared(
    kernel: &KernelResources,
    dynamic: u32,
    limits: &ArchLimits,
    carveout: SharedCarveout,
) -> (u32, u64) {
    let reserved = u64::from(limits.reserved_shared_per_block);
    let used = u64::from(kernel.static_shared_bytes) + reserved + u64::from(dynamic);
    let allocated = round_up(used, u64::from(limits.shared_alloc_unit));
    // cudaOccSMemPerBlock with FUNC_SHMEM_LIMIT_OPTIN: past the default, the opt-in limit
    // applies; the driver's reservation comes on top of either.
    let per_block_limit = if used > u64::from(limits.shared_per_block_default) {
        u64::from(limits.shared_per_block_opt_in)
    } else {
        u64::from(limits.shared_per_block_default)
    } + reserved;
    if allocated > per_block_limit {
        return (0, allocated);
    }
    let sm = u64::from(limits.shared_per_sm);
    let align_up = |bytes: u64| {
        u32::try_from(bytes)
            .ok()
            .and_then(|b| limits.align_up_carveout(b))
            .map_or(sm, u64::from)
    };
    let preferred = match carveout {
        SharedCarveout::Default => align_up(sm),
        SharedCarveout::Percent(p) => align_up(u64::from(p.min(100)) * sm / 100),
    };
    // A preference too small for one block is overridden by the smallest carveout that fits one.
    let per_sm = if preferred >= allocated {
        preferred
    } else {
        align_up(allocated)
    };
    if allocated == 0 {
        return (u32::MAX, 0);
    }
    (
        (per_sm / allocated).try_into().unwrap_or(u32::MAX),
        allocated,
    )
}

/// The largest block (a multiple of the warp size, at most `max_threads_per_block`) whose
/// registers fit in `max_registers_per_block`: what `cuFuncGetAttribute` reports as
/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` for a kernel with no launch bounds.
///
/// On sm_90: 255 registers -> 256 threads, 128 -> 512, 64 -> 1024. Returns 0 when the kernel
/// uses more registers per thread than the architecture has.
pub fn max_threads_for_registers(registers_per_thread: u32, limits: &ArchLimits) -> u32 {
    let cap = limits.max_threads_per_block / limits.warp_size.max(1) * limits.warp_size;
    if registers_per_thread > limits.max_registers_per_thread {
        return 0;
    }
    let per_warp = registers_per_warp(registers_per_thread, limits);
    if per_warp == 0 {
        return cap;
    }
    let partitions = u64::from(limits.warp_alloc_granularity.max(1));
    // The hardware rounds a block's warps up to a multiple of the sub-partition count before
    // checking the per-block limit, so only multiples of it can be the largest block.
    let warps = u64::from(limits.max_registers_per_block) / per_warp / partitions * partitions;
    let threads = warps * u64::from(limits.warp_size);
    threads.min(u64::from(cap)) as u32
}

/// The largest block `kernel` can be launched with: the register limit of
/// [`max_threads_for_registers`], lowered by `__launch_bounds__` (`.maxntid`) and pinned by a
/// required block size (`.reqntid`).
pub fn kernel_max_threads(kernel: &KernelResources, limits: &ArchLimits) -> u32 {
    let mut max = max_threads_for_registers(kernel.registers, limits);
    if let Some(bound) = kernel.max_threads_per_block {
        max = max.min(bound);
    }
    if let Some(b) = kernel.max_block {
        max = max.min(b.volume().try_into().unwrap_or(u32::MAX));
    }
    if let Some(b) = kernel.required_block {
        max = max.min(b.volume().try_into().unwrap_or(u32::MAX));
    }
    max
}
