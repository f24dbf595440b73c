//! cudacheck's compiler layer: everything between CUDA C++ source (or PTX) and a CUBIN, with no
//! driver and no GPU.
//!
//! - [`nvrtc`]: NVRTC and nvJitLink found and loaded by path (not through cudarc, so the
//!   application's cudarc linking mode never redirects them), the compatibility headers that let
//!   files written for nvcc compile unchanged, and `compile` with rustc-style diagnostics.
//! - [`cache`]: the on-disk module cache every compile goes through.
//! - [`prepared`]: compiled resources kept beside a crate (`cudacheck prepare`), read by the
//!   macro where NVRTC is absent.
//!
//! The `cudacheck` crate re-exports both modules as `cudacheck::nvrtc` and `cudacheck::cache`;
//! `cudacheck-macros` uses this crate directly to compile kernels at `cargo build`. Use it
//! through `cudacheck`.
#![warn(unsafe_op_in_unsafe_fn)]

pub mod cache;
pub mod nvrtc;
pub mod prepared;

/// A library load error read as the system loader reports it, with its cause (one wording for
/// NVRTC, nvJitLink and the driver).
#[doc(hidden)]
pub fn describe_load_error(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}
