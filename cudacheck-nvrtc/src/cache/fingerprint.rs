//! A source's fingerprint: its text and the contents of every header of the user's it may read,
//! with no NVRTC and no toolkit needed, so a machine without CUDA can tell whether data
//! prepared from the source elsewhere still describes it (`cudacheck prepare`).

use super::deps::{header_files, InMemory, SearchPath, Unlisted};
use super::stamp::Watch;
use crate::nvrtc::request::{user_dirs, CompileOptions, CudaSource};

/// The digest of `source`'s text and of the content of every header file it may include from
/// its own directory and `opts`'s include directories, in the order first reached. Toolkit
/// headers are not part of it (the machine reading the fingerprint may have none).
///
/// # Errors
/// Why the headers cannot be listed (`#include MACRO`, an unreadable header), in words.
pub fn source_fingerprint(source: &CudaSource, opts: &CompileOptions) -> Result<String, String> {
    let user = user_dirs(source, opts);
    let mut watch = Watch::new();
    let headers = header_files(
        &source.name,
        &source.text,
        source.dir.as_deref(),
        &InMemory {
            headers: &[],
            pre_included: &[],
        },
        &SearchPath {
            user_dirs: &user,
            cuda_dirs: &[],
            memo: None,
        },
        &mut watch,
    )
    .map_err(|e| match e {
        Unlisted::ComputedInclude { file, line } => {
            format!("{file}:{line} includes a header named by a macro")
        }
        Unlisted::Unreadable { path } => format!("{} cannot be read", path.display()),
    })?;
    let mut h = blake3::Hasher::new();
    h.update(&(source.text.len() as u64).to_le_bytes());
    h.update(source.text.as_bytes());
    for f in &headers {
        h.update(&f.digest);
    }
    Ok(h.finalize().to_hex().to_string())
}
