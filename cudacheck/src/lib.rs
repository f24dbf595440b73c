//! cudacheck: CUDA kernel launches that fail early, loudly and precisely.
//!
//! ```no_run
//! use cudacheck::{nvrtc::CudaSource, Kernel};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let stream = cudacheck::default_stream(0)?;
//! let saxpy = Kernel::new(CudaSource::from_file("kernels/saxpy.cu")?, "saxpy").build();
//! let n = 1 << 20;
//! let x = cudacheck::alloc_copy(&stream, &vec![1.0f32; n])?;
//! let mut y = cudacheck::alloc_zeros::<f32>(&stream, n)?;
//! // SAFETY: saxpy touches y[i] and x[i] for i < n only.
//! unsafe {
//!     saxpy.launch(&stream)
//!         .grid((n as u32).div_ceil(256))
//!         .block(256)
//!         .arg_mut(&mut y).arg(&x).arg(&2.0f32).arg(&(n as i32))
//!         .run()?;
//! }
//! # Ok(()) }
//! ```
//!
//! A wrong block size, too much shared memory, a missing argument or a buffer of another
//! device is an [`Error`] naming the kernel, the Rust launch site, the limit, the value asked
//! for, the value allowed and the fix, before anything reaches the GPU. A fault on the device
//! names the launch that caused it (debug builds synchronize after each launch) or the recent
//! launches that may have (release builds keep a ring of them per context).
//!
//! Works with the cudarc `CudaContext`/`CudaStream` you already have: per-context state is
//! created on first use. See [`recover`] for going on after a sticky device fault.
//!
//! Kernels a crate ships as PTX (candle's build-time modules) are [`Kernel::from_ptx`];
//! functions the application loaded itself with cudarc are [`Kernel::from_function`]. cudarc's
//! linking mode and CUDA version are the application's choice: this crate's features only
//! forward them (see the README, "Adding it to a project").
#![warn(unsafe_op_in_unsafe_fn)]

// The runtime's layers, bottom up: each module uses only those above it in this list (and the
// compiler layer, `cudacheck-nvrtc`, below them all). `tests/layers.rs` fails when one reaches
// down this list; ARCHITECTURE.md draws it.
mod driver; //    the only FFI: driver calls, `DriverError`, entry points
mod seqlock; //   lock-free slots
mod ring; //      `LaunchRecord` and the ring of recent launches
mod peer; //      context pairs with peer access
mod policy; //    sync / instrument resolution
mod ptx; //       kernels shipped as PTX (`PtxSource`)
mod instrument; // bounds-checked builds' PTX and fault reports (`Fault`)
mod error; //     `Error`: wraps the above
mod context; //   per-context state
mod args; //      argument slots
mod block; //     `Block`, `block!`
mod alloc; //     allocation helpers
mod build; //     compiled and loaded builds, keyed by variant
mod kernel; //    `Kernel`
pub mod capture; // checked launches under stream capture
mod launch; //    `Launch`: the one launch path and its plans
mod offline; //   checks with no GPU
mod doctor; //    `cudacheck doctor`: the driver beside the compiler layer

/// The on-disk module cache (from `cudacheck-nvrtc`, the compiler layer below this crate).
pub use cudacheck_nvrtc::cache;
/// Compiled resources kept beside a crate for builds without NVRTC (`cudacheck prepare`).
pub use cudacheck_nvrtc::prepared;

/// NVRTC, found without panicking, compiling to CUBINs with rustc-style diagnostics (from
/// `cudacheck-nvrtc`, the compiler layer below this crate), and the doctor's report.
pub mod nvrtc {
    pub use crate::doctor::{doctor_report, DoctorReport, DriverStatus};
    #[doc(inline)]
    pub use cudacheck_nvrtc::nvrtc::*;
    // The cached entry point sits above the cache in the compiler layer, outside its `nvrtc`
    // module; here it keeps its place beside the options and errors it takes and gives.
    #[doc(inline)]
    pub use cudacheck_nvrtc::compile;
}

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use alloc::{alloc_copy, alloc_zeros};
pub use args::{ByValue, KernelArg, KernelArgMut, MAX_ARGS};
pub use block::Block;
pub use context::{
    check, default_stream, device_count, device_limits, enable_peer_access, is_poisoned, recover,
    synchronize,
};
pub use driver::codes;
pub use driver::{CudaVersion, DriverError, EntryPoint, FunctionAttributes, MissingEntryPoint};
pub use error::{CaptureError, Error, LaunchError, LaunchErrorKind, PeerAccessError, PeerSupport};
pub use instrument::{
    BarrierErrorKind, BarrierMisuse, Coverage, DeviceAssert, Misaligned, OutOfBounds, RaceAccess,
    SharedRace,
};
pub use kernel::{Kernel, KernelBuilder, LoadedKernelInfo, ParamKind, ParamSpec};
pub use launch::{Grid, Launch, LaunchDims};
pub use offline::OfflineCheck;
pub use policy::{InstrumentMode, SyncMode};
pub use ptx::{PtxBuildError, PtxSource};
pub use ring::{LaunchRecord, RING_CAPACITY};

pub use cudacheck_core as core;
pub use cudacheck_macros::checked_kernel;
pub use cudarc;
