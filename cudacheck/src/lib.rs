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
//!
//! # Switches
//!
//! Four switches say what a launch does besides launching. Each is a `bool`, set the same way
//! on a kernel (a default for its launches) and on one launch (an override); a switch never set
//! leaves the choice to the next source in its row, left to right:
//!
//! | what | launch | kernel (macro key) | environment | otherwise |
//! |---|---|---|---|---|
//! | wait and check for faults | [`Launch::sync`] | [`KernelBuilder::sync`] | `CUDACHECK_SYNC` | debug: on |
//! | bounds-check | [`Launch::instrument`] | [`KernelBuilder::instrument`] (`instrument`) | `CUDACHECK_INSTRUMENT` | debug: on |
//! | race-check | [`Launch::races`] | [`KernelBuilder::races`] (`races`) | `CUDACHECK_RACES` | off |
//! | init-check | [`Launch::init`] | [`KernelBuilder::init`] (`init`) | `CUDACHECK_INIT` | off |
//!
//! ("debug: on": on in debug builds, off in release builds.) Bounds checking reports
//! [`Error::OutOfBounds`], [`Error::Misaligned`] and [`Error::DeviceAssert`]; race checking
//! [`Error::SharedRace`] and [`Error::BarrierMisuse`]; init checking (reads of memory nothing
//! wrote) [`Error::Uninitialized`], for the block's shared memory and for the global memory of
//! buffers made by [`alloc_uninit`] ([`TrackedSlice`]), which start unwritten; other buffers
//! count as written.
//!
//! The variables take `1`/`0` (also `true`/`false`, `yes`/`no`, `on`/`off`) and are read once
//! per process. The build profile is that of the crate that declares the kernel with
//! [`checked_kernel`], else cudacheck's own. A bounds-checked launch always synchronizes (its
//! fault record must be read); a launch into a stream being captured never does (see
//! [`capture`]).
//!
//! Race checking runs in the bounds-checked build, so asking for it asks for bounds checking
//! too. A launch's `races(true)` gives way only to that launch's `instrument(false)`; races
//! asked for by the kernel or `CUDACHECK_RACES` give way to bounds checking turned off by the
//! launch, the kernel or `CUDACHECK_INSTRUMENT`. A launch that is not bounds-checked is not
//! race-checked. Init checking follows the same rules as race checking.
//!
//! ```no_run
//! # use cudacheck::{nvrtc::CudaSource, Kernel};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let stream = cudacheck::default_stream(0)?;
//! # let mut y = cudacheck::alloc_zeros::<f32>(&stream, 256)?;
//! // 1. Every launch of this kernel is bounds-checked, in release builds too.
//! let k = Kernel::new(CudaSource::from_file("k.cu")?, "k").instrument(true).build();
//! // 2. This launch is race-checked as well, and the next one runs unchecked.
//! // SAFETY: k writes y[i] for i < 256 only.
//! unsafe { k.launch(&stream).grid(1).block(256).races(true).arg_mut(&mut y).run()? };
//! unsafe { k.launch(&stream).grid(1).block(256).instrument(false).arg_mut(&mut y).run()? };
//! # Ok(()) }
//! ```
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
mod shadow; //    the global init shadow of tracked buffers, per context
mod context; //   per-context state
mod args; //      argument slots
mod block; //     `Block`, `block!`
mod alloc; //     allocation helpers
mod tracked; //   `TrackedSlice`: buffers init checking follows
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
pub use tracked::{alloc_uninit, TrackedSlice};
// What checked launches report and what their checks cover: the bounds checker's
// `Coverage`, `OutOfBounds`, `Misaligned` and `DeviceAssert`, and the race checker's
// `RaceCoverage`, `SharedRace` (two `RaceAccess`es of an `AccessKind`) and `BarrierMisuse`
// (one or two `BarrierCall`s, a `BarrierMisuseKind`), and the init checker's `Uninitialized` and `InitCoverage`, so that no field's type needs a path
// into `cudacheck::core`.
#[allow(deprecated)]
pub use instrument::BarrierErrorKind;
pub use instrument::{
    AccessKind, BarrierCall, BarrierMisuse, BarrierMisuseKind, Coverage, DeviceAssert,
    InitCoverage, Misaligned, OutOfBounds, RaceAccess, RaceCoverage, SharedRace, Uninitialized,
};
pub use kernel::{Kernel, KernelBuilder, LoadedKernelInfo, ParamKind, ParamSpec};
pub use launch::{Grid, Launch, LaunchDims};
pub use offline::OfflineCheck;
pub use ptx::{PtxBuildError, PtxSource};
pub use ring::{LaunchRecord, RING_CAPACITY};

pub use cudacheck_core as core;
pub use cudacheck_macros::checked_kernel;
/// The cudarc that cudacheck is built on, for its types in cudacheck's signatures
/// (`CudaContext`, `CudaStream`, `CudaSlice`, ...), so that a program needs no cudarc line of
/// its own to use them.
///
/// It holds what cudacheck asks cudarc for, and what other crates of the build ask for (cargo
/// unifies features): by itself, cudarc's `std`, `driver` and `f16` features, with
/// `fallback-dynamic-loading` (the driver loaded at run time unless a crate of the build
/// names a linking mode) and a CUDA version from cudacheck's own features (`cuda-version-auto`
/// by default, or a `cuda-XXXXX` one). **Not `nvrtc`**: cudacheck compiles with its own NVRTC
/// loader ([`nvrtc`]: [`nvrtc::compile`], [`nvrtc::CudaSource`], or [`Kernel::new`] from a
/// source), so `cudacheck::cudarc::nvrtc` (`compile_ptx`, `Ptx`) and the cudarc calls that take
/// a `Ptx` (`CudaContext::load_module`) are there only when another crate of the build enables
/// cudarc's `nvrtc`. A program that uses them depends on cudarc itself, with a version
/// requirement compatible with cudacheck's (0.19) so that both name one cudarc, and `nvrtc`
/// among its features (one of cudarc's defaults; name it when turning the defaults off):
///
/// ```toml
/// [dependencies]
/// cudacheck = "0.1"
/// cudarc = { version = "0.19", features = ["nvrtc"] }
/// ```
///
/// and names them as `cudarc::nvrtc::...`. A function loaded that way launches with
/// cudacheck's checks through [`Kernel::from_function`]; a PTX module through
/// [`Kernel::from_ptx`].
pub use cudarc;
