//! NVRTC, found without panicking, compiling to CUBINs with rustc-style diagnostics.
//!
//! This module is the compiler without the module cache; [`compile`](crate::compile), the
//! entry point every caller uses, sits above both (`cudacheck::nvrtc::compile` through the
//! `cudacheck` crate).
//!
//! ```no_run
//! use cudacheck_nvrtc::compile;
//! use cudacheck_nvrtc::nvrtc::{CompileOptions, CudaSource};
//!
//! // 1. A source, from a file (`CudaSource::from_file`) or from memory.
//! let src = CudaSource::from_str(
//!     "saxpy.cu",
//!     "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {\n\
//!          int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
//!          if (i < n) y[i] = a * x[i] + y[i];\n\
//!      }\n",
//! );
//! // 2. Compile for a real architecture: the result holds an ELF CUBIN.
//! let out = compile(&src, &CompileOptions::new("sm_90".parse().unwrap()))?;
//! assert!(out.cubin.starts_with(b"\x7fELF"));
//! # Ok::<(), cudacheck_nvrtc::nvrtc::CompileError>(())
//! ```
//!
//! # Finding NVRTC
//! [`nvrtc()`] searches for NVRTC, loads the library by full path (its `libnvrtc-builtins` first,
//! from the same directory), keeps it loaded for the process, and calls the functions it needs
//! through pointers resolved from that library. It does not use cudarc's NVRTC bindings, so it
//! works whatever linking mode the application chose for cudarc (with `dynamic-linking`, those
//! bindings are bound to whatever libnvrtc the link step found), and it needs no cudarc
//! `nvrtc` feature. The search order is exactly:
//!
//! 1. `CUDACHECK_NVRTC`: a path to a `libnvrtc.so*` file, or a directory holding one. When set,
//!    it is the only place looked at; `CUDACHECK_NVRTC=none` makes NVRTC absent (for tests).
//! 2. A libnvrtc already loaded in the process (`dlopen` with `RTLD_NOLOAD` of
//!    `libnvrtc.so.13`, `.12`, `libnvrtc.so`).
//! 3. `$CUDA_PATH`, then `$CUDA_HOME`: `lib64`, `lib`, `targets/x86_64-linux/lib`.
//! 4. pip wheels: `nvidia/cu13/lib`, `nvidia/cu12/lib`, `nvidia/cuda_nvrtc/lib` under
//!    `$VIRTUAL_ENV/lib/python3*/site-packages`, every `$PYTHONPATH` entry,
//!    `~/.local/lib/python3*/site-packages`, `/usr/local/lib/python3*/{site,dist}-packages`,
//!    `/usr/lib/python3/dist-packages`, and `.cuda/py` in the current directory or any ancestor
//!    (where `scripts/setup-cuda.sh` installs it).
//! 5. conda: `$CONDA_PREFIX/lib`.
//! 6. `/usr/local/cuda/lib64`, then `/usr/local/cuda-*/lib64`, newest version first.
//! 7. The system loader (`LD_LIBRARY_PATH`, `ld.so.cache`): `libnvrtc.so.13`, `.12`,
//!    `libnvrtc.so`.
//!
//! A candidate is taken only if it exports every function cudacheck calls; otherwise the
//! search goes on, and the reason is kept for [`NvrtcNotFound`].
//!
//! # Headers
//! See [`headers`]: CUDA include directories are found automatically, and small compatibility
//! headers make `<stdint.h>`, `<cmath>`, `<cfloat>`, `<climits>`, ... resolve under NVRTC.

// Layers, bottom up: a module uses only those declared before it (`tests/layers.rs` checks
// this, and ARCHITECTURE.md's table follows this order). Above this module's files come
// `crate::cache`, then the cached `crate::compile`.
//
// 1. FFI and discovery: the libraries found, loaded and called (every raw call is in `ffi.rs`
//    or `jitlink_ffi.rs`), and the CUDA header directories found beside NVRTC.
mod ffi;
mod jitlink_ffi;
mod search;
mod include_dirs;
pub(crate) mod discover;
pub(crate) mod locate;
// 2. Input preparation: what a compile is asked for, and what makes a file written for nvcc
//    ready for NVRTC (compatibility headers, nvcc's device pass), with the diagnostics both
//    speak.
pub(crate) mod diagnostic;
pub mod headers;
pub(crate) mod request;
pub(crate) mod nvcc;
// 3. The uncached compiler: NVRTC's compile and nvJitLink's assembly.
pub(crate) mod compile;
pub(crate) mod jitlink;

pub use compile::{CompileError, Compiled};
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub use diagnostic::check_parse_log;
pub use diagnostic::{parse_log, Diagnostic, Severity};
#[doc(hidden)]
pub use discover::loaded_nvrtc;
pub use discover::{nvrtc, Nvrtc, NvrtcNotFound, SearchAttempt};
#[doc(hidden)]
pub use ffi::describe_load_error;
pub use jitlink::{
    assemble_ptx, jitlink, AssembleError, Assembled, JitLink, JitLinkNotFound, NVJITLINK_ENV_VAR,
};
pub use nvcc::{device_code, has_device_code, DeviceCode};
pub use request::{CompileOptions, CudaSource, SourceReadError};
pub use search::{SearchStep, ENV_VAR};
