//! Compiled resources kept beside a crate's sources, so a build without NVRTC still checks
//! launch configurations against what only the compiled kernel knows (its registers, static
//! shared memory and launch bounds).
//!
//! `#[checked_kernel]` with an `arch` compiles the kernel at `cargo build` when NVRTC is found
//! (assembles it with nvJitLink, for a kernel shipped as PTX).
//! `cudacheck prepare` runs `cargo check` with [`ENV_PREPARE`] set, and each such compile writes
//! one small JSON file per kernel and architecture into the crate's [`DIR_NAME`] directory (as
//! `cargo sqlx prepare` writes `.sqlx/`); commit it. Where NVRTC is absent, the macro reads the
//! file instead: if the source or a header of the user's it includes changed since (its
//! [`source_fingerprint`](crate::cache::source_fingerprint) differs), the build fails and says
//! to run `cudacheck prepare` again; with no file, the build checks the limits the source and
//! the architecture alone decide.
//!
//! A file is named by what identifies the compile on any machine: the source as the attribute
//! names it, the kernel (its name expression), the architecture and a digest of the options as
//! written (defines, include directories, `max_registers`); never by absolute paths.

use std::io::Write;
use std::path::{Path, PathBuf};

use cudacheck_core::KernelResources;
use serde::{Deserialize, Serialize};

/// Set by `cudacheck prepare` (to a value unique to the run): the macro writes what it
/// compiles. The macro's expansion reads it with `option_env!`, so cargo expands again when it
/// changes.
pub const ENV_PREPARE: &str = "CUDACHECK_PREPARE";
/// Where prepared files are read and written instead of `<crate>/.cudacheck`.
pub const ENV_DIR: &str = "CUDACHECK_PREPARED_DIR";
/// The directory, beside the crate's `Cargo.toml`, that holds prepared files.
pub const DIR_NAME: &str = ".cudacheck";
/// The version of the file format below.
pub const FORMAT: u32 = 1;

/// What identifies one compile of one kernel on any machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The source as the attribute names it (`kernels/saxpy.cu`, `<inline source of `f`>`).
    pub source: &'a str,
    /// The kernel's name expression (`saxpy`, `scale<float>`).
    pub kernel: &'a str,
    /// `sm_90`.
    pub arch: &'a str,
    /// The options as written, one string each (`define TILE=16`, `include src`, ...).
    pub options: &'a [String],
}

impl Request<'_> {
    fn options_digest(&self) -> String {
        let mut h = blake3::Hasher::new();
        for o in self.options {
            h.update(&(o.len() as u64).to_le_bytes());
            h.update(o.as_bytes());
        }
        h.finalize().to_hex()[..16].to_string()
    }

    /// The file name of this request's entry: readable, and unique per request.
    pub fn file_name(&self) -> String {
        let mut h = blake3::Hasher::new();
        for part in [self.source, self.kernel, self.arch, &self.options_digest()] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let readable: String = self
            .kernel
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(48)
            .collect();
        format!(
            "kernel-{readable}-{}-{}.json",
            self.arch,
            &h.finalize().to_hex()[..16]
        )
    }
}

/// One kernel's compiled resources for one architecture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedKernel {
    pub format: u32,
    pub source: String,
    pub kernel: String,
    pub arch: String,
    /// A digest of the options as written.
    pub options: String,
    /// The source's [`source_fingerprint`](crate::cache::source_fingerprint) when prepared.
    pub fingerprint: String,
    /// What compiled it (`NVRTC 13.0`, `nvJitLink 13.0` for PTX).
    pub compiler: String,
    pub resources: KernelResources,
}

impl PreparedKernel {
    /// The entry for `request`, compiled by `compiler` from a source whose fingerprint is
    /// `fingerprint`.
    pub fn new(
        request: &Request<'_>,
        fingerprint: String,
        compiler: String,
        resources: KernelResources,
    ) -> Self {
        PreparedKernel {
            format: FORMAT,
            source: request.source.to_string(),
            kernel: request.kernel.to_string(),
            arch: request.arch.to_string(),
            options: request.options_digest(),
            fingerprint,
            compiler,
            resources,
        }
    }
}

/// What the prepared directory holds for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// An entry whose fingerprint matches the source as it is now.
    Fresh(Box<PreparedKernel>),
    /// An entry prepared from another version of the source (or of a header it includes).
    Stale { file: PathBuf },
    /// No entry.
    Missing,
    /// An entry that cannot be read or is not this format; the string says why.
    Unreadable { file: PathBuf, why: String },
}

/// The prepared directory of the crate at `manifest_dir` (or [`ENV_DIR`]'s).
pub fn dir_for(manifest_dir: &Path) -> PathBuf {
    match std::env::var_os(ENV_DIR) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => manifest_dir.join(DIR_NAME),
    }
}

/// Looks `request` up in `dir`, comparing the entry's fingerprint with `fingerprint`.
pub fn lookup(dir: &Path, request: &Request<'_>, fingerprint: &str) -> Lookup {
    let file = dir.join(request.file_name());
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Missing,
        Err(e) => {
            return Lookup::Unreadable {
                file,
                why: e.to_string(),
            }
        }
    };
    let entry: PreparedKernel = match serde_json::from_slice(&bytes) {
        Ok(e) => e,
        Err(e) => {
            return Lookup::Unreadable {
                file,
                why: e.to_string(),
            }
        }
    };
    if entry.format != FORMAT {
        return Lookup::Unreadable {
            file,
            why: format!(
                "format {} (this cudacheck reads format {FORMAT})",
                entry.format
            ),
        };
    }
    if entry.fingerprint == fingerprint {
        Lookup::Fresh(Box::new(entry))
    } else {
        Lookup::Stale { file }
    }
}

/// Writes `entry` into `dir` (created if needed), replacing the file atomically, so builds
/// running side by side never see half a file.
///
/// # Errors
/// The I/O error, with the path.
pub fn write(dir: &Path, request: &Request<'_>, entry: &PreparedKernel) -> Result<PathBuf, String> {
    let file = dir.join(request.file_name());
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", file.display());
    std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    let mut text = serde_json::to_string_pretty(entry).map_err(|e| fail(&e))?;
    text.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
    tmp.write_all(text.as_bytes()).map_err(|e| fail(&e))?;
    tmp.persist(&file).map_err(|e| fail(&e.error))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(options: &'a [String]) -> Request<'a> {
        Request {
            source: "kernels/saxpy.cu",
            kernel: "scale<float>",
            arch: "sm_90",
            options,
        }
    }

    #[test]
    fn a_file_is_named_by_the_request_alone() {
        let none: Vec<String> = vec![];
        let tile = vec!["define TILE=16".to_string()];
        let a = request(&none).file_name();
        assert!(a.starts_with("kernel-scale_float_-sm_90-"), "{a}");
        assert_eq!(a, request(&none).file_name());
        assert_ne!(a, request(&tile).file_name());
        let other_arch = Request {
            arch: "sm_80",
            ..request(&none)
        };
        assert_ne!(a, other_arch.file_name());
    }

    #[test]
    fn an_entry_is_fresh_stale_missing_or_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let none: Vec<String> = vec![];
        let req = request(&none);
        assert_eq!(lookup(dir.path(), &req, "f1"), Lookup::Missing);
        let resources = KernelResources {
            symbol: "_Z5scaleIfEvPf".into(),
            registers: 40,
            ..KernelResources::default()
        };
        let entry = PreparedKernel::new(&req, "f1".into(), "NVRTC 13.0".into(), resources);
        let file = write(dir.path(), &req, &entry).unwrap();
        assert_eq!(
            lookup(dir.path(), &req, "f1"),
            Lookup::Fresh(Box::new(entry))
        );
        assert_eq!(
            lookup(dir.path(), &req, "f2"),
            Lookup::Stale { file: file.clone() }
        );
        std::fs::write(&file, b"{").unwrap();
        assert!(matches!(
            lookup(dir.path(), &req, "f1"),
            Lookup::Unreadable { .. }
        ));
    }
}
