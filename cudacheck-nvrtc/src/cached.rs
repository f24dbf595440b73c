//! The entry point every caller compiles through: the module cache in front of the compiler.
//! The top layer of the crate, so that neither the compiler (`nvrtc`) nor the cache names the
//! other's caller: the cache calls down into the compiler on a miss, and nothing below it
//! knows there is a cache.

use crate::cache::through;
use crate::nvrtc::compile::{compile_uncached, CompileError, Compiled};
use crate::nvrtc::request::{CompileOptions, CudaSource};

/// Compiles `source` for `opts.arch` into a CUBIN.
///
/// ```no_run
/// use cudacheck_nvrtc::compile;
/// use cudacheck_nvrtc::nvrtc::{CompileOptions, CudaSource};
///
/// let src = CudaSource::from_str("k.cu", "extern \"C\" __global__ void k() {}\n");
/// let out = compile(&src, &CompileOptions::new("sm_90".parse().unwrap()))?;
/// assert!(out.cubin.starts_with(b"\x7fELF"));
/// # Ok::<(), cudacheck_nvrtc::nvrtc::CompileError>(())
/// ```
///
/// # Errors
/// - [`CompileError::NvrtcNotFound`] when NVRTC cannot be loaded;
/// - [`CompileError::UnsupportedArch`] when NVRTC cannot target `opts.arch`;
/// - [`CompileError::Failed`] with parsed [`Diagnostic`](crate::nvrtc::Diagnostic)s when the
///   source has errors;
/// - [`CompileError::InvalidOption`], [`CompileError::NameExpression`],
///   [`CompileError::NulInSource`], or [`CompileError::Nvrtc`] for other NVRTC failures.
///
/// A result found in the module cache ([`crate::cache`]) is returned without compiling; it is
/// the same, warnings and errors included, as the compile would give.
pub fn compile(source: &CudaSource, opts: &CompileOptions) -> Result<Compiled, CompileError> {
    through(source, opts, || compile_uncached(source, opts))
}
