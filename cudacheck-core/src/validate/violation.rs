//! The ways a launch configuration can break a limit, each written for the person who wrote it.
//!
//! Messages name the limit (with the CUDA attribute that reports it), the requested value, the
//! allowed value and the target, then the fix. They do not name the kernel: callers wrap them
//! ("kernel `saxpy`: ...").

use std::fmt;

use thiserror::Error;

use crate::dim::{Axis, Dim3};
use crate::limits::LimitsOrigin;
use crate::validate::Limiter;

/// Which extent of a launch a message is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaunchPart {
    Grid,
    Block,
    Cluster,
}

impl fmt::Display for LaunchPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LaunchPart::Grid => "grid",
            LaunchPart::Block => "block",
            LaunchPart::Cluster => "cluster",
        })
    }
}

/// The CUDA attribute name of a per-axis limit, for messages.
pub(crate) fn axis_attr(prefix: &str, axis: Axis) -> String {
    format!(
        "CU_DEVICE_ATTRIBUTE_MAX_{prefix}_DIM_{}",
        axis.to_string().to_uppercase()
    )
}

/// One rule a launch configuration breaks.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum Violation {
    #[error(
        "{part} {dims} is 0 along {axis}; every {part} dimension must be at least 1 (CUDA \
         rejects a zero extent with CUDA_ERROR_INVALID_VALUE). Skip the launch when there is \
         no work, or use at least 1 along each axis."
    )]
    ZeroExtent {
        part: LaunchPart,
        dims: Dim3,
        axis: Axis,
    },

    #[error(
        "block {block} is {requested} along {axis}; {target} allows at most {allowed} \
         ({attribute}). Spread the threads over the other axes, or use fewer threads per block \
         and more blocks."
    )]
    BlockDimTooLarge {
        block: Dim3,
        axis: Axis,
        requested: u32,
        allowed: u32,
        attribute: String,
        target: LimitsOrigin,
    },

    #[error(
        "block {block} has {} threads; {target} allows at most {allowed} per block \
         (CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK). Use fewer threads per block and more \
         blocks.",
        thread_count(*requested)
    )]
    TooManyThreadsPerBlock {
        block: Dim3,
        requested: u64,
        allowed: u32,
        target: LimitsOrigin,
    },

    #[error(
        "grid {grid} is {requested} along {axis}; {target} allows at most {allowed} \
         ({attribute}). {fix}"
    )]
    GridDimTooLarge {
        grid: Dim3,
        axis: Axis,
        requested: u32,
        allowed: u32,
        attribute: String,
        target: LimitsOrigin,
        fix: String,
    },

    #[error(
        "{registers_per_thread} registers per thread x {threads} threads = {product} registers \
         per block (allocated per warp: {registers_per_warp} registers x {warps} warps = \
         {requested}); {target} allows at most {allowed} per block \
         (CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK). The largest block that fits is \
         {max_threads} threads; or compile with at most {max_registers} registers per thread \
         (`__launch_bounds__({threads})` or `--maxrregcount={max_registers}`)."
    )]
    TooManyRegistersPerBlock {
        registers_per_thread: u32,
        threads: u64,
        /// `registers_per_thread x threads`, before any rounding.
        product: u64,
        /// Registers one warp is given: `registers_per_thread x 32` rounded up to the
        /// allocation unit.
        registers_per_warp: u64,
        /// The block's warps, rounded up to the SM's sub-partition count as the hardware check does.
        warps: u64,
        /// `registers_per_warp x warps`.
        requested: u64,
        allowed: u32,
        /// The largest block with this register count that fits.
        max_threads: u32,
        /// The most registers per thread that let this block size fit.
        max_registers: u32,
        target: LimitsOrigin,
    },

    #[error(
        "the kernel declares {static_bytes} bytes of static __shared__ memory; static shared \
         memory is limited to {allowed} bytes per block on every GPU, even after opting in. \
         Move the large array to dynamic shared memory (`extern __shared__`) and pass its size \
         at launch."
    )]
    StaticSharedTooLarge { static_bytes: u32, allowed: u32 },

    #[error(
        "a block uses {requested} bytes of shared memory ({static_bytes} static + \
         {dynamic_bytes} dynamic); without opting in, {target} allows at most {allowed} per \
         block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK). Opt in with \
         cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, {dynamic_bytes}) \
         ({target} allows up to {opt_in_allowed} bytes per block that way), or use less shared \
         memory."
    )]
    SharedMemoryNeedsOptIn {
        static_bytes: u32,
        dynamic_bytes: u32,
        requested: u64,
        allowed: u32,
        opt_in_allowed: u32,
        target: LimitsOrigin,
    },

    #[error(
        "a block uses {requested} bytes of shared memory ({static_bytes} static + \
         {dynamic_bytes} dynamic); {target} allows at most {allowed} per block even after \
         opting in (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). Use less shared \
         memory per block, for example smaller tiles."
    )]
    SharedMemoryTooLarge {
        static_bytes: u32,
        dynamic_bytes: u32,
        requested: u64,
        allowed: u32,
        target: LimitsOrigin,
    },

    #[error(
        "block {block} has {requested} threads; the kernel was compiled with \
         __launch_bounds__({allowed}), so it runs at most {allowed} threads per block \
         (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK). Launch with at most {allowed} threads per \
         block, or raise the bound and recompile."
    )]
    LaunchBoundsExceeded {
        block: Dim3,
        requested: u64,
        allowed: u32,
    },

    #[error(
        "block {block} differs from the block {required} the kernel was compiled for \
         (`.reqntid`); CUDA refuses any other block shape. Launch with block {required}."
    )]
    RequiredBlockMismatch { block: Dim3, required: Dim3 },

    #[error(
        "the launch asks for cluster {cluster}, but {target} has no thread block clusters \
         (they need compute capability 9.0; CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH). Launch without \
         a cluster, or target sm_90 or newer."
    )]
    ClustersUnsupported { cluster: Dim3, target: LimitsOrigin },

    #[error(
        "cluster {cluster} has {requested} blocks; {target} allows at most {allowed} blocks per \
         cluster portably (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED raises this on some \
         GPUs). Use at most {allowed} blocks per cluster."
    )]
    ClusterTooLarge {
        cluster: Dim3,
        requested: u64,
        allowed: u32,
        target: LimitsOrigin,
    },

    #[error(
        "grid {grid} is not a multiple of cluster {cluster} along {axis} ({grid_extent} % \
         {cluster_extent} = {remainder}); every cluster must be complete. Round the grid up \
         to {rounded_up} along {axis} and return early in the extra blocks."
    )]
    GridNotClusterMultiple {
        grid: Dim3,
        cluster: Dim3,
        axis: Axis,
        grid_extent: u32,
        cluster_extent: u32,
        remainder: u32,
        rounded_up: u64,
    },

    #[error(
        "the launch asks for cluster {requested}, but the kernel was compiled with \
         __cluster_dims__{compiled}, which a launch cannot change. Launch without a cluster \
         dimension, or with cluster {compiled}."
    )]
    ClusterMismatch { requested: Dim3, compiled: Dim3 },

    #[error(
        "not even one block of {threads} threads fits on an SM of {target}: its {limiter} allow 0 \
         blocks. Use fewer threads, registers or shared memory per block."
    )]
    NoBlockFits {
        threads: u64,
        limiter: Limiter,
        target: LimitsOrigin,
    },
}

/// A block's thread count for messages. [`Dim3::volume`] saturates at `u64::MAX` for absurd
/// extents, and a saturated count must not be printed as if it were exact.
fn thread_count(n: u64) -> String {
    if n == u64::MAX {
        format!("more than {}", u64::MAX - 1)
    } else {
        n.to_string()
    }
}
