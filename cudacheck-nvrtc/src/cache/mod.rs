//! The on-disk module cache: a compile NVRTC already did, in this process or another, is read
//! back instead of done again.
//!
//! [`compile`](crate::compile) uses it, so `cudacheck::Kernel`, the
//! `#[checked_kernel]` wrappers and `cudacheck check` all do. The [`Key`] covers everything that
//! can change the output: the source's name and text, every header file it may include (found
//! conservatively, see `deps.rs`), the compatibility headers handed over in memory, every
//! NVRTC option (architecture, defines, include directories, ...), name expressions, whether
//! PTX is kept, the NVRTC library's version and identity, cudacheck's version, and a
//! caller-supplied variant ([`CompileOptions::cache_variant`](crate::nvrtc::CompileOptions)).
//!
//! # Where, and switches
//! - `CUDACHECK_CACHE_DIR`: the directory; else `$XDG_CACHE_HOME/cudacheck`, else
//!   `~/.cache/cudacheck`.
//! - `CUDACHECK_CACHE=0` (or `off`, `false`, `no`): no cache at all.
//! - `CUDACHECK_CACHE_MAX_BYTES`: the size cap (default 1 GiB); least recently used entries
//!   go first.
//!
//! A cache that cannot be used (read-only or full disk, a bad setting) is never an error: the
//! compile runs uncached and the process prints one warning to stderr, the first time.
//!
//! ```
//! use cudacheck_nvrtc::cache::{Entry, Key, ModuleCache};
//! let dir = std::env::temp_dir().join(format!("cudacheck-doc-{}", std::process::id()));
//! let cache = ModuleCache::at(&dir, 1 << 20);
//! let key = Key::builder().source("k.cu", "__global__ void k() {}").variant(b"doc").build();
//! assert_eq!(cache.get(&key), None);
//! cache.put(&key, &Entry::failed("k.cu(1): error: ...".into()))?;
//! assert!(cache.get(&key).is_some());
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), cudacheck_nvrtc::cache::CacheError>(())
//! ```

mod checked;
mod deps;
mod entry;
mod fingerprint;
mod hook;
mod key;
mod manifest;
mod stamp;
mod store;
mod toolkit;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use thiserror::Error;

pub use crate::stats::{stats, CacheStats};
#[doc(hidden)]
pub use checked::CheckedBuild;
pub use entry::{Entry, EntryError, Outcome};
pub use fingerprint::source_fingerprint;
pub(crate) use hook::through;
#[doc(hidden)]
pub use hook::through_checked;
#[doc(hidden)]
pub use key::code_digest;
pub use key::{Key, KeyBuilder};
// Declared with the compile options that carry them; what they do is this module's.
pub use crate::nvrtc::request::{CacheMode, ModuleCache};
pub use store::{CacheError, CacheInfo, Lookup, DEFAULT_MAX_BYTES};

/// `CUDACHECK_CACHE`: `0`, `off`, `false` or `no` turn the cache off.
pub const ENV_ENABLE: &str = "CUDACHECK_CACHE";
/// `CUDACHECK_CACHE_DIR`: where the cache lives.
pub const ENV_DIR: &str = "CUDACHECK_CACHE_DIR";
/// `CUDACHECK_CACHE_MAX_BYTES`: the size cap in bytes.
pub const ENV_MAX_BYTES: &str = "CUDACHECK_CACHE_MAX_BYTES";

/// The cache settings the environment asks for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct CacheSettings {
    pub dir: PathBuf,
    pub max_bytes: u64,
    /// False when `CUDACHECK_CACHE=0`.
    pub enabled: bool,
}

/// An environment setting the cache cannot use.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsError {
    #[error(
        "{ENV_MAX_BYTES}=`{value}` is not a size in bytes; write a whole number such as \
         1073741824 (1 GiB, the default)"
    )]
    MaxBytes { value: String },
    #[error(
        "no directory for the module cache: {ENV_DIR}, XDG_CACHE_HOME and HOME are all unset; \
         set {ENV_DIR}"
    )]
    NoDirectory,
}

impl CacheSettings {
    /// Reads `CUDACHECK_CACHE`, `CUDACHECK_CACHE_DIR` and `CUDACHECK_CACHE_MAX_BYTES`.
    ///
    /// # Errors
    /// [`SettingsError`] for a size that is not a number, or no directory at all.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let enabled = !var(ENV_ENABLE).is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "off" | "false" | "no"
            )
        });
        let max_bytes = match var(ENV_MAX_BYTES) {
            None => DEFAULT_MAX_BYTES,
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| SettingsError::MaxBytes { value: v.clone() })?,
        };
        let dir = match var(ENV_DIR).filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            // dirs::cache_dir is $XDG_CACHE_HOME, else ~/.cache, on Linux.
            None => dirs::cache_dir()
                .ok_or(SettingsError::NoDirectory)?
                .join("cudacheck"),
        };
        Ok(CacheSettings {
            dir,
            max_bytes,
            enabled,
        })
    }
}

impl ModuleCache {
    /// The cache the environment sets up, or `None` when `CUDACHECK_CACHE=0`.
    ///
    /// # Errors
    /// [`SettingsError`] when a setting cannot be used.
    pub fn open() -> Result<Option<ModuleCache>, SettingsError> {
        let s = CacheSettings::from_env()?;
        Ok(s.enabled.then(|| ModuleCache::at(s.dir, s.max_bytes)))
    }

    /// [`open`](Self::open), read once per process; a bad setting is warned about once and
    /// means no cache.
    pub(crate) fn from_env_once() -> Option<&'static ModuleCache> {
        static CACHE: OnceLock<Option<ModuleCache>> = OnceLock::new();
        CACHE
            .get_or_init(|| ModuleCache::open().unwrap_or_else(|e| warn_once(&e)))
            .as_ref()
    }
}

/// Prints `problem` to stderr, saying the compile goes on uncached, the first time any cache
/// problem happens in this process; later ones are silent (one bad disk, one warning).
pub(crate) fn warn_once<T>(problem: &dyn std::fmt::Display) -> Option<T> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("warning: cudacheck: {problem}; compiling without the module cache");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<CacheSettings, SettingsError> {
        CacheSettings::from_vars(|n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_directory_variable_wins() {
        let s = settings(&[(ENV_DIR, "/somewhere")]).unwrap();
        assert_eq!(s.dir, PathBuf::from("/somewhere"));
        assert!(s.enabled);
        assert_eq!(s.max_bytes, DEFAULT_MAX_BYTES);
    }

    #[test]
    fn zero_turns_the_cache_off() {
        for v in ["0", "off", "FALSE", "no"] {
            let s = settings(&[(ENV_ENABLE, v), (ENV_DIR, "/x")]).unwrap();
            assert!(!s.enabled, "{v}");
        }
        assert!(
            settings(&[(ENV_ENABLE, "1"), (ENV_DIR, "/x")])
                .unwrap()
                .enabled
        );
    }

    #[test]
    fn the_cap_is_read_in_bytes() {
        let s = settings(&[(ENV_MAX_BYTES, "4096"), (ENV_DIR, "/x")]).unwrap();
        assert_eq!(s.max_bytes, 4096);
    }

    #[test]
    fn a_cap_that_is_not_a_number_says_how_to_write_it() {
        let e = settings(&[(ENV_MAX_BYTES, "1G"), (ENV_DIR, "/x")]).unwrap_err();
        assert_eq!(e, SettingsError::MaxBytes { value: "1G".into() });
        assert!(e.to_string().contains("whole number"), "{e}");
    }
}
