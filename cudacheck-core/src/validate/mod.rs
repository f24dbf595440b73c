//! The pure launch validator: does a launch configuration fit a kernel on a target, and if so,
//! how many of its blocks does one SM hold?
//!
//! [`validate`] checks every rule and returns every [`Violation`] it finds, not only the first,
//! so that one run of the CLI or one failed launch shows everything there is to fix. The rules
//! are the ones `cuLaunchKernel`/`cuLaunchKernelEx` enforce (or fail on with a bare
//! `CUDA_ERROR_INVALID_VALUE`), each in one `check_*` function with its reason above it.

mod occupancy;
mod violation;

pub use occupancy::{
    kernel_max_threads, max_threads_for_registers, occupancy, occupancy_with_carveout, Limiter,
    Occupancy, SharedCarveout,
};
pub use violation::{LaunchPart, Violation};

use serde::Serialize;

use crate::dim::{Axis, Dim3};
use crate::limits::{ArchLimits, LimitsOrigin, PORTABLE};
use crate::resources::KernelResources;
use violation::axis_attr;

/// How a kernel is launched: `<<<grid, block, dynamic_shared_bytes>>>`, plus an optional
/// cluster (`cudaLaunchAttributeClusterDimension`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    /// Dynamic (`extern __shared__`) shared memory per block, in bytes.
    pub dynamic_shared_bytes: u32,
    /// Blocks per cluster, in blocks along each axis; `None` for no cluster (or the kernel's
    /// compile-time `__cluster_dims__`).
    pub cluster: Option<Dim3>,
}

impl LaunchConfig {
    /// `<<<grid, block>>>`: no dynamic shared memory, no cluster.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid.into(),
            block: block.into(),
            dynamic_shared_bytes: 0,
            cluster: None,
        }
    }
}

/// Choices that change what [`validate`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Whether a block may use more than the default 48 KiB of shared memory by opting in
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`). cudacheck's runtime opts in by
    /// itself, so this is `true` by default; turn it off to check a launch that will go through
    /// a plain `cuLaunchKernel` with no opt-in.
    pub shared_opt_in: bool,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        Self {
            shared_opt_in: true,
        }
    }
}

/// Checks `cfg` against `kernel`'s resources and `limits`, and computes its occupancy.
///
/// # Errors
///
/// Every [`Violation`] found, in rule order: zero extents, block and grid sizes, registers,
/// shared memory, launch bounds, clusters. A configuration that breaks no per-block rule but
/// still fits no block on an SM (possible only with hand-made limits) gives
/// [`Violation::NoBlockFits`].
pub fn validate(
    kernel: &KernelResources,
    cfg: &LaunchConfig,
    limits: &ArchLimits,
    opts: &ValidateOptions,
) -> Result<Occupancy, Vec<Violation>> {
    let mut out = Vec::new();
    check_zero_extents(cfg, kernel, &mut out);
    check_block_dims(cfg.block, limits, &mut out);
    check_threads_per_block(cfg.block, limits, &mut out);
    check_grid_dims(cfg.grid, limits, &mut out);
    check_registers(kernel, cfg.block, limits, &mut out);
    check_static_shared(kernel, &mut out);
    check_shared_without_opt_in(kernel, cfg, limits, opts, &mut out);
    check_shared_opt_in_max(kernel, cfg, limits, &mut out);
    check_launch_bounds(kernel, cfg.block, &mut out);
    check_required_block(kernel, cfg.block, &mut out);
    check_cluster_matches_kernel(kernel, cfg, &mut out);
    if let Some(cluster) = effective_cluster(kernel, cfg) {
        check_cluster_arch(cluster, limits, &mut out);
        check_cluster_size(cluster, limits, &mut out);
        check_grid_cluster_multiple(cfg.grid, cluster, &mut out);
    }
    if !out.is_empty() {
        return Err(out);
    }
    // Past the per-block rules, the block size is at most max_threads_per_block (<= u32).
    let threads = cfg.block.volume() as u32;
    let occ = occupancy(kernel, threads, cfg.dynamic_shared_bytes, limits);
    if occ.blocks_per_sm == 0 {
        return Err(vec![Violation::NoBlockFits {
            threads: cfg.block.volume(),
            limiter: occ.limiter,
            target: limits.origin.clone(),
        }]);
    }
    Ok(occ)
}

/// Checks what is known of a launch against the limits every GPU shares, with no target named:
/// what fails here fails on every GPU ([`LimitsOrigin::EveryGpu`] in the messages). `block`
/// and `grid` are `None` when not known; the kernel's `resources` may be partial (what the
/// source alone tells). The violations read exactly as [`validate`]'s. A `cluster` is checked
/// for what holds wherever clusters exist (its size, the grid being a multiple of it).
pub fn validate_portable(
    kernel: &KernelResources,
    block: Option<Dim3>,
    grid: Option<Dim3>,
    dynamic_shared_bytes: u32,
    cluster: Option<Dim3>,
) -> Vec<Violation> {
    let widest = ArchLimits::all().fold(None::<ArchLimits>, |best, l| match best {
        Some(b) if b.shared_per_block_opt_in >= l.shared_per_block_opt_in => Some(b),
        _ => Some(l),
    });
    let Some(mut limits) = widest else {
        return Vec::new();
    };
    limits.origin = LimitsOrigin::EveryGpu;
    limits.max_threads_per_block = PORTABLE.max_threads_per_block;
    limits.max_block_dim = PORTABLE.max_block_dim;
    limits.max_grid_dim = PORTABLE.max_grid_dim;
    let mut out = Vec::new();
    let parts = [
        (LaunchPart::Block, block),
        (LaunchPart::Grid, grid),
        (LaunchPart::Cluster, cluster),
    ];
    for (part, dims) in parts {
        if let Some(dims) = dims {
            if let Some(axis) = first_zero_axis(dims) {
                out.push(Violation::ZeroExtent { part, dims, axis });
            }
        }
    }
    if let Some(b) = block {
        check_block_dims(b, &limits, &mut out);
        check_threads_per_block(b, &limits, &mut out);
        check_launch_bounds(kernel, b, &mut out);
        check_required_block(kernel, b, &mut out);
    }
    if let Some(g) = grid {
        check_grid_dims(g, &limits, &mut out);
    }
    check_static_shared(kernel, &mut out);
    let cfg = LaunchConfig {
        grid: grid.unwrap_or(Dim3::new(1, 1, 1)),
        block: block.unwrap_or(Dim3::new(1, 1, 1)),
        dynamic_shared_bytes,
        cluster,
    };
    check_shared_opt_in_max(kernel, &cfg, &limits, &mut out);
    if let Some(c) = cluster.filter(|c| first_zero_axis(*c).is_none()) {
        check_cluster_matches_kernel(kernel, &cfg, &mut out);
        check_cluster_size(c, &limits, &mut out);
        if let Some(g) = grid {
            check_grid_cluster_multiple(g, c, &mut out);
        }
    }
    out
}

/// The cluster the launch runs with: the one it asks for, else the kernel's compile-time one.
fn effective_cluster(kernel: &KernelResources, cfg: &LaunchConfig) -> Option<Dim3> {
    cfg.cluster.or(kernel.cluster_dims)
}

fn first_zero_axis(d: Dim3) -> Option<Axis> {
    Axis::ALL.into_iter().find(|a| a.of(d) == 0)
}

fn block_is_empty(block: Dim3) -> bool {
    block.volume() == 0
}

// CUDA's `dim3` defaults missing components to 1, so a 0 is always a bug (an empty problem or
// a forgotten axis), and the driver answers it with a bare CUDA_ERROR_INVALID_VALUE.
fn check_zero_extents(cfg: &LaunchConfig, kernel: &KernelResources, out: &mut Vec<Violation>) {
    let parts = [
        (LaunchPart::Grid, Some(cfg.grid)),
        (LaunchPart::Block, Some(cfg.block)),
        (LaunchPart::Cluster, effective_cluster(kernel, cfg)),
    ];
    for (part, dims) in parts {
        if let Some(dims) = dims {
            if let Some(axis) = first_zero_axis(dims) {
                out.push(Violation::ZeroExtent { part, dims, axis });
            }
        }
    }
}

// Each block axis has its own hardware maximum (z is only 64), separate from the total.
fn check_block_dims(block: Dim3, limits: &ArchLimits, out: &mut Vec<Violation>) {
    for axis in Axis::ALL {
        let (requested, allowed) = (axis.of(block), axis.of(limits.max_block_dim));
        if requested > allowed {
            out.push(Violation::BlockDimTooLarge {
                block,
                axis,
                requested,
                allowed,
                attribute: axis_attr("BLOCK", axis),
                target: limits.origin.clone(),
            });
        }
    }
}

// The block's total threads are capped independently of the per-axis limits: (32, 64, 1) passes
// every axis and still has 2048 threads. The product is taken in 64 bits, so it cannot wrap.
fn check_threads_per_block(block: Dim3, limits: &ArchLimits, out: &mut Vec<Violation>) {
    let requested = block.volume();
    if requested > u64::from(limits.max_threads_per_block) {
        out.push(Violation::TooManyThreadsPerBlock {
            block,
            requested,
            allowed: limits.max_threads_per_block,
            target: limits.origin.clone(),
        });
    }
}

// Grid x reaches 2^31-1 but y and z only 65535; 2-D launches over large images hit y first.
fn check_grid_dims(grid: Dim3, limits: &ArchLimits, out: &mut Vec<Violation>) {
    for axis in Axis::ALL {
        let (requested, allowed) = (axis.of(grid), axis.of(limits.max_grid_dim));
        if requested > allowed {
            let fix = match axis {
                Axis::X => "Loop over the extra work inside the kernel (a grid-stride loop), \
                            or split it over several launches."
                    .to_string(),
                Axis::Y | Axis::Z => format!(
                    "Put the large extent on x (up to {}), or loop over it inside the kernel \
                     (a grid-stride loop).",
                    limits.max_grid_dim.x
                ),
            };
            out.push(Violation::GridDimTooLarge {
                grid,
                axis,
                requested,
                allowed,
                attribute: axis_attr("GRID", axis),
                target: limits.origin.clone(),
                fix,
            });
        }
    }
}

// Registers are allocated per warp (rounded up to the allocation unit), and the hardware checks
// a block against the per-block register limit with its warps rounded up to the SM's 4
// sub-partitions (cuda_occupancy.h). A kernel compiled without launch bounds can use so many
// registers that a 1024-thread block cannot launch: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
// Blocks already over the thread limit are left to that rule.
fn check_registers(
    kernel: &KernelResources,
    block: Dim3,
    limits: &ArchLimits,
    out: &mut Vec<Violation>,
) {
    let threads = block.volume();
    if kernel.registers == 0 || threads == 0 || threads > u64::from(limits.max_threads_per_block) {
        return;
    }
    let warp = u64::from(limits.warp_size.max(1));
    let unit = u64::from(limits.register_alloc_unit.max(1));
    let partitions = u64::from(limits.warp_alloc_granularity.max(1));
    let registers = u64::from(kernel.registers);
    let registers_per_warp = (registers * warp).div_ceil(unit) * unit;
    let warps = threads.div_ceil(warp).div_ceil(partitions) * partitions;
    let requested = registers_per_warp * warps;
    let allowed = limits.max_registers_per_block;
    if requested <= u64::from(allowed) {
        return;
    }
    // The most registers per thread whose per-warp allocation, times these warps, fits.
    let per_warp_max = u64::from(allowed) / warps / unit * unit;
    let max_registers = (per_warp_max / warp).min(u64::from(limits.max_registers_per_thread));
    out.push(Violation::TooManyRegistersPerBlock {
        registers_per_thread: kernel.registers,
        threads,
        product: registers * threads,
        registers_per_warp,
        warps,
        requested,
        allowed,
        max_threads: max_threads_for_registers(kernel.registers, limits),
        max_registers: max_registers as u32,
        target: limits.origin.clone(),
    });
}

/// Static `__shared__` memory per block can never exceed this, on any GPU (the opt-in applies
/// to dynamic shared memory only).
const STATIC_SHARED_MAX: u32 = 48 * 1024;

// Only dynamic shared memory can go past 48 KiB; a larger static array cannot be opted in and
// fails at load or launch time. ptxas usually refuses it first, but a hand-written CUBIN or
// PTX may carry it.
fn check_static_shared(kernel: &KernelResources, out: &mut Vec<Violation>) {
    if kernel.static_shared_bytes > STATIC_SHARED_MAX {
        out.push(Violation::StaticSharedTooLarge {
            static_bytes: kernel.static_shared_bytes,
            allowed: STATIC_SHARED_MAX,
        });
    }
}

fn shared_requested(kernel: &KernelResources, cfg: &LaunchConfig) -> u64 {
    u64::from(kernel.static_shared_bytes) + u64::from(cfg.dynamic_shared_bytes)
}

// Past 48 KiB per block a kernel must opt in (cuFuncSetAttribute) before launching, or the
// launch fails with CUDA_ERROR_INVALID_VALUE. Reported only when the opt-in would help: past the
// opt-in maximum the next rule speaks, and an oversized static array has its own rule.
fn check_shared_without_opt_in(
    kernel: &KernelResources,
    cfg: &LaunchConfig,
    limits: &ArchLimits,
    opts: &ValidateOptions,
    out: &mut Vec<Violation>,
) {
    let requested = shared_requested(kernel, cfg);
    if opts.shared_opt_in
        || kernel.static_shared_bytes > STATIC_SHARED_MAX
        || requested <= u64::from(limits.shared_per_block_default)
        || requested > u64::from(limits.shared_per_block_opt_in)
    {
        return;
    }
    out.push(Violation::SharedMemoryNeedsOptIn {
        static_bytes: kernel.static_shared_bytes,
        dynamic_bytes: cfg.dynamic_shared_bytes,
        requested,
        allowed: limits.shared_per_block_default,
        opt_in_allowed: limits.shared_per_block_opt_in,
        target: limits.origin.clone(),
    });
}

// The opt-in maximum is the SM's shared memory less the driver's per-block reservation; no
// attribute raises it. (cuda_occupancy.h compares the rounded allocation including the
// reservation against the opt-in maximum plus the reservation; both sides are multiples of the
// allocation unit, so comparing the unrounded request with the opt-in maximum is the same test.)
fn check_shared_opt_in_max(
    kernel: &KernelResources,
    cfg: &LaunchConfig,
    limits: &ArchLimits,
    out: &mut Vec<Violation>,
) {
    let requested = shared_requested(kernel, cfg);
    if requested > u64::from(limits.shared_per_block_opt_in) {
        out.push(Violation::SharedMemoryTooLarge {
            static_bytes: kernel.static_shared_bytes,
            dynamic_bytes: cfg.dynamic_shared_bytes,
            requested,
            allowed: limits.shared_per_block_opt_in,
            target: limits.origin.clone(),
        });
    }
}

/// The thread limit `__launch_bounds__` (`.maxntid`) put on the kernel, if any.
fn launch_bound(kernel: &KernelResources) -> Option<u32> {
    let from_dims = kernel
        .max_block
        .map(|b| u32::try_from(b.volume()).unwrap_or(u32::MAX));
    match (kernel.max_threads_per_block, from_dims) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

// `__launch_bounds__(N)` lets the compiler spend registers assuming at most N threads; the
// driver refuses larger blocks with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, which does not say why.
fn check_launch_bounds(kernel: &KernelResources, block: Dim3, out: &mut Vec<Violation>) {
    let Some(allowed) = launch_bound(kernel) else {
        return;
    };
    let requested = block.volume();
    if !block_is_empty(block) && requested > u64::from(allowed) {
        out.push(Violation::LaunchBoundsExceeded {
            block,
            requested,
            allowed,
        });
    }
}

// A kernel compiled with a required block size (`.reqntid`) may be launched with exactly that
// shape and no other, even one with the same number of threads.
fn check_required_block(kernel: &KernelResources, block: Dim3, out: &mut Vec<Violation>) {
    if let Some(required) = kernel.required_block {
        if required != block {
            out.push(Violation::RequiredBlockMismatch { block, required });
        }
    }
}

// A compile-time `__cluster_dims__` is fixed (cuda.h, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
// "If the value is set during compile time, it cannot be set at runtime"), so a launch asking
// for a different cluster is a mistake. Repeating the same one is harmless.
fn check_cluster_matches_kernel(
    kernel: &KernelResources,
    cfg: &LaunchConfig,
    out: &mut Vec<Violation>,
) {
    if let (Some(requested), Some(compiled)) = (cfg.cluster, kernel.cluster_dims) {
        if requested != compiled {
            out.push(Violation::ClusterMismatch {
                requested,
                compiled,
            });
        }
    }
}

// Thread block clusters exist from compute capability 9.0 (Hopper) on.
fn check_cluster_arch(cluster: Dim3, limits: &ArchLimits, out: &mut Vec<Violation>) {
    if limits.max_cluster_size.is_none() {
        out.push(Violation::ClustersUnsupported {
            cluster,
            target: limits.origin.clone(),
        });
    }
}

// A cluster's blocks are co-scheduled on one GPC; 8 is the size every cluster-capable GPU
// guarantees. Larger clusters need the non-portable opt-in, which cudacheck does not assume.
fn check_cluster_size(cluster: Dim3, limits: &ArchLimits, out: &mut Vec<Violation>) {
    let Some(allowed) = limits.max_cluster_size else {
        return;
    };
    let requested = cluster.volume();
    if requested > u64::from(allowed) {
        out.push(Violation::ClusterTooLarge {
            cluster,
            requested,
            allowed,
            target: limits.origin.clone(),
        });
    }
}

// The grid is made of whole clusters; a grid extent that the cluster does not divide is
// rejected at launch with CUDA_ERROR_INVALID_CLUSTER_SIZE ("a kernel launch error due to cluster
// misconfiguration", cuda.h).
fn check_grid_cluster_multiple(grid: Dim3, cluster: Dim3, out: &mut Vec<Violation>) {
    for axis in Axis::ALL {
        let (g, c) = (axis.of(grid), axis.of(cluster));
        if c == 0 || g == 0 {
            continue; // reported as a zero extent
        }
        let remainder = g % c;
        if remainder != 0 {
            out.push(Violation::GridNotClusterMultiple {
                grid,
                cluster,
                axis,
                grid_extent: g,
                cluster_extent: c,
                remainder,
                rounded_up: u64::from(g).div_ceil(u64::from(c)) * u64::from(c),
            });
        }
    }
}

#[cfg(test)]
mod tests;
