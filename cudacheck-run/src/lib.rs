//! `cudacheck run -- COMMAND`: cudacheck's launch validation and bounds checking under a
//! program that never calls cudacheck.
//!
//! Built as a shared object with the `interpose` feature, this crate is preloaded
//! (`LD_PRELOAD`) into the command and its children by the `cudacheck` CLI, which carries it
//! inside its own binary. It interposes on the CUDA driver API however a process reaches it:
//! linked directly (cudarc's `dynamic-linking`, C++ programs), opened with `dlopen` and
//! resolved with `dlsym` (cudarc's `dynamic-loading`, CuPy), or through `cuGetProcAddress`
//! (the CUDA runtime). It records what the program loads and allocates, validates every
//! launch against the device and the kernel, and launches the bounds-checked build of each
//! kernel whose module carries PTX (the library's own instrumenter, engine and module cache),
//! each pointer argument bounded by the allocation it points into. Findings go to stderr and,
//! on request, to a JSON file ([`protocol`]); each process's summary goes back to the
//! launcher.
//!
//! Without the feature this crate exports nothing: it is the [`protocol`] the CLI shares with
//! the interposer.

#![warn(unsafe_op_in_unsafe_fn)]

pub mod protocol;

// Compiled always, so that its pure parts are tested with the workspace; its hooks are
// exported under the driver's names only with `interpose`.
#[allow(dead_code)]
mod interpose;
