//! Kernels shipped as PTX: what candle and the crates built on it compile at build time
//! (`nvcc --ptx`) and load with `CudaContext::load_module`. A [`PtxSource`] is the module's
//! text; [`Kernel::from_ptx`](crate::Kernel::from_ptx) makes a kernel of one of its entries,
//! which launches with every check a kernel from CUDA source gets: its resources come from
//! assembling the PTX for the device (nvJitLink, the ptxas NVRTC uses), its parameter list
//! from the PTX, and bounds checking rewrites the PTX itself. No NVRTC is needed.
//!
//! A module is assembled once per architecture and process, however many of its kernels are
//! used (candle's modules hold hundreds).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use cudacheck_core::{find_entry, ptx_entries, Arch, PtxEntry};
use thiserror::Error;

use crate::nvrtc::{assemble_ptx, AssembleError, CudaSource, SourceReadError};

/// The text of a PTX module, and the name its diagnostics show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxSource {
    /// Shown in reports (`unary.ptx`).
    pub name: String,
    pub text: String,
}

impl PtxSource {
    /// PTX held in memory: what `include_str!` of a build-time `.ptx` gives, or candle's
    /// embedded modules (`candle_kernels::UNARY`).
    pub fn from_str(name: impl Into<String>, text: impl Into<String>) -> Self {
        PtxSource {
            name: name.into(),
            text: text.into(),
        }
    }

    /// Reads a `.ptx` file; its name in reports is the path as given.
    ///
    /// # Errors
    /// [`SourceReadError`] naming the path: missing, a directory, not UTF-8, or unreadable.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SourceReadError> {
        let s = CudaSource::from_file(path)?;
        Ok(PtxSource {
            name: s.name,
            text: s.text,
        })
    }

    /// The text as the kernel keeps it (a source whose file name is the module's).
    pub(crate) fn into_source(self) -> CudaSource {
        CudaSource::from_str(self.name, self.text)
    }
}

/// Why a kernel could not be built from PTX.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PtxBuildError {
    /// The text is not a PTX module the reader can follow.
    #[error("`{name}` is not a PTX module cudacheck can read: {source}")]
    Unreadable {
        name: String,
        #[source]
        source: cudacheck_core::instrument::PtxError,
    },
    /// ptxas (through nvJitLink) did not assemble it.
    #[error(transparent)]
    Assemble(#[from] AssembleError),
}

/// The entries of `ptx`, and the one `name` means (its symbol or C++ name).
///
/// # Errors
/// [`PtxBuildError::Unreadable`]; `Ok(Err(names))` lists every entry's C++ name when none is
/// `name`.
pub(crate) fn entry(
    ptx: &CudaSource,
    name: &str,
) -> Result<Result<PtxEntry, Vec<String>>, PtxBuildError> {
    let entries = ptx_entries(&ptx.text).map_err(|source| PtxBuildError::Unreadable {
        name: ptx.name.clone(),
        source,
    })?;
    Ok(match find_entry(&entries, name) {
        Some(e) => Ok(e.clone()),
        None => Err(entries.iter().map(|e| e.name.clone()).collect()),
    })
}

/// The names a fault report gives the parameters of kernel `name` in `ptx`: the PTX's own,
/// or `argument N` where the compiler named it `<symbol>_param_N`. Empty when there is no
/// such kernel (the report then says `argument N` too).
pub(crate) fn param_labels(ptx: &CudaSource, name: &str) -> Vec<String> {
    match entry(ptx, name) {
        Ok(Ok(e)) => (0..e.params.len()).map(|i| e.param_label(i)).collect(),
        _ => Vec::new(),
    }
}

/// The CUBIN of the whole module `ptx` for `arch`: assembled on first use, then shared by
/// every kernel of the module in this process.
///
/// # Errors
/// [`PtxBuildError::Assemble`] with ptxas's log.
pub(crate) fn assembled(
    ptx: &CudaSource,
    arch: Arch,
) -> Result<(Arc<Vec<u8>>, String), PtxBuildError> {
    type Memo = Mutex<HashMap<([u8; 32], Arch), (Arc<Vec<u8>>, String)>>;
    static MEMO: std::sync::OnceLock<Memo> = std::sync::OnceLock::new();
    let key = (*blake3::hash(ptx.text.as_bytes()).as_bytes(), arch);
    let memo = MEMO.get_or_init(Memo::default);
    if let Some(hit) = memo.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(hit.clone());
    }
    // Assembled outside the lock: two threads may both assemble a module once, never wait
    // on each other's ptxas.
    let out = assemble_ptx(&ptx.text, arch, &ptx.name)?;
    let value = (Arc::new(out.cubin), out.info_log);
    memo.lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, value.clone());
    Ok(value)
}
