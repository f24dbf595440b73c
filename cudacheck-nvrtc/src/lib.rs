//! cudacheck's compiler layer: everything between CUDA C++ source (or PTX) and a CUBIN, with no
//! driver and no GPU.
//!
//! - [`nvrtc`]: NVRTC and nvJitLink found and loaded by path (not through cudarc, so the
//!   application's cudarc linking mode never redirects them), the compatibility headers that let
//!   files written for nvcc compile unchanged, and the compiler with rustc-style diagnostics.
//! - [`cache`]: the on-disk module cache every compile goes through.
//! - [`compile`]: the entry point, the cache in front of the compiler.
//! - [`prepared`]: compiled resources kept beside a crate (`cudacheck prepare`), read by the
//!   macro where NVRTC is absent.
//!
//! The `cudacheck` crate re-exports these as `cudacheck::nvrtc` (with `compile`),
//! `cudacheck::cache` and `cudacheck::prepared`; `cudacheck-macros` uses this crate directly to
//! compile kernels at `cargo build`. Use it through `cudacheck`.
#![warn(unsafe_op_in_unsafe_fn)]

// Layers, bottom up: a module uses only those declared before it (`tests/layers.rs` checks
// this, and `nvrtc/mod.rs`'s own list inside `nvrtc`; ARCHITECTURE.md's table follows both).
mod stats; //         counts of compiles, assemblies and cache hits
pub mod nvrtc; //     the compiler without the cache: FFI and discovery, input preparation, NVRTC
pub mod cache; //     the module cache, in front of the compiler
mod cached; //        `compile`: the cached entry point
pub mod prepared; //  `cudacheck prepare`'s records

pub use cached::compile;
#[doc(hidden)]
pub use nvrtc::describe_load_error;
