//! What a compile is asked for: the source ([`CudaSource`]) and the options
//! ([`CompileOptions`]), with the NVRTC options they make. Every layer above reads them: input
//! preparation (`nvcc.rs`), the compiler, the cache (which keys on them) and the cached
//! `compile` at the top.
//!
//! [`CacheMode`] and the [`ModuleCache`] handle are declared here because the options carry
//! them: a handle is a directory and a size cap, plain data; what the cache does with it
//! lives in [`crate::cache`], above the compiler, which never looks at it.

use std::fmt;
use std::path::{Path, PathBuf};

use super::include_dirs::is_toolkit_include_dir;
use cudacheck_core::Arch;
use thiserror::Error;

/// A CUDA source file's text and the name diagnostics show for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaSource {
    /// The file name shown in diagnostics (`kernels/saxpy.cu`).
    pub name: String,
    pub text: String,
    /// Added first to the include path, so `#include "common.cuh"` finds the file's neighbours.
    pub dir: Option<PathBuf>,
}

/// A source file that could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SourceReadError {
    #[error("cannot read CUDA source `{path}`: no such file")]
    NotFound { path: PathBuf },
    #[error("cannot read CUDA source `{path}`: it is a directory; pass the .cu files in it")]
    IsDirectory { path: PathBuf },
    #[error(
        "cannot read CUDA source `{path}`: it is not UTF-8 (first bad byte at offset {offset}); \
         save it as UTF-8"
    )]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("cannot read CUDA source `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CudaSource {
    /// Reads a file; its name in diagnostics is the path as given, its directory goes on the
    /// include path. An empty file is read fine (NVRTC compiles it to a CUBIN with no kernels).
    ///
    /// # Errors
    /// [`SourceReadError`] naming the path: missing, a directory, not UTF-8, or unreadable.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SourceReadError> {
        let path = path.as_ref();
        if path.is_dir() {
            return Err(SourceReadError::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        let bytes = std::fs::read(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => SourceReadError::NotFound {
                path: path.to_path_buf(),
            },
            _ => SourceReadError::Io {
                path: path.to_path_buf(),
                source,
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|e| SourceReadError::NotUtf8 {
            path: path.to_path_buf(),
            offset: e.utf8_error().valid_up_to(),
        })?;
        let dir = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .map(Path::to_path_buf);
        Ok(CudaSource {
            name: path.display().to_string(),
            text,
            dir,
        })
    }

    /// A source held in memory; `name` is what diagnostics call it.
    pub fn from_str(name: impl Into<String>, text: impl Into<String>) -> Self {
        CudaSource {
            name: name.into(),
            text: text.into(),
            dir: None,
        }
    }

    /// The file name without directories, for summary lines.
    fn short_name(&self) -> &str {
        self.name.rsplit(['/', '\\']).next().unwrap_or(&self.name)
    }
}

/// How to compile. Build with [`CompileOptions::new`] and struct update syntax:
/// `CompileOptions { ptx: true, ..CompileOptions::new(arch) }`.
///
/// NVRTC is always given `--gpu-architecture=sm_XY` (a real architecture, so there is a CUBIN),
/// `--std=c++17` unless `extra_options` sets a standard, `-I` for the source's directory, then
/// `include_dirs`, then the CUDA header directories discovery found.
///
/// [`compile`](crate::compile) also passes what emulates nvcc, before `extra_options`:
/// `--pre-include` of nvcc's implicit includes, and `-default-device`, so that the unannotated
/// functions left once host code is set aside (host `constexpr` helpers device code calls)
/// get the device meaning nvcc's `--expt-relaxed-constexpr` gives them. `-default-device` is
/// more lenient than nvcc for a non-`constexpr` unannotated helper called from device code
/// (nvcc rejects the call); see docs/limits.md.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    pub arch: Arch,
    /// Extra `-I` directories, searched after the source's own directory.
    pub include_dirs: Vec<PathBuf>,
    /// `-DNAME` (`None`) or `-DNAME=VALUE`.
    pub defines: Vec<(String, Option<String>)>,
    /// Passed to NVRTC verbatim, last.
    pub extra_options: Vec<String>,
    /// `--maxrregcount`.
    pub max_registers: Option<u32>,
    /// Expressions such as `saxpy<float>` whose mangled names to return in
    /// [`Compiled::lowered_names`](crate::nvrtc::Compiled::lowered_names).
    pub name_expressions: Vec<String>,
    /// `-lineinfo` (default true): source lines in the CUBIN, for tools and for assert messages.
    pub line_info: bool,
    /// Also return the PTX.
    pub ptx: bool,
    /// `--ptxas-options=-v`: the log then carries ptxas's register/shared-memory report.
    pub ptxas_verbose: bool,
    /// Which on-disk module cache to use (default: the one the environment sets up, see
    /// [`crate::cache`]).
    pub cache: CacheMode,
    /// Added to the cache key: tells apart builds whose source and options are equal but whose
    /// meaning to the caller differs (e.g. an instrumented build per launch shape).
    pub cache_variant: Vec<u8>,
}

impl CompileOptions {
    /// Defaults: no extra directories or defines, line info on, no PTX, quiet ptxas.
    pub fn new(arch: Arch) -> Self {
        CompileOptions {
            arch,
            include_dirs: Vec::new(),
            defines: Vec::new(),
            extra_options: Vec::new(),
            max_registers: None,
            name_expressions: Vec::new(),
            line_info: true,
            ptx: false,
            ptxas_verbose: false,
            cache: CacheMode::FromEnv,
            cache_variant: Vec::new(),
        }
    }

    /// The option strings for NVRTC, user include dirs first.
    pub(crate) fn to_nvrtc_options(
        &self,
        source: &CudaSource,
        cuda_dirs: &[PathBuf],
    ) -> Vec<String> {
        let mut o = vec![format!("--gpu-architecture={}", self.arch.sm_name())];
        let sets_std = self
            .extra_options
            .iter()
            .any(|x| x.starts_with("-std") || x.starts_with("--std"));
        if !sets_std {
            o.push("--std=c++17".into());
        }
        if self.line_info {
            o.push("-lineinfo".into());
        }
        if let Some(n) = self.max_registers {
            o.push(format!("--maxrregcount={n}"));
        }
        if self.ptxas_verbose {
            o.push("--ptxas-options=-v".into());
        }
        for (name, value) in &self.defines {
            o.push(match value {
                Some(v) => format!("-D{name}={v}"),
                None => format!("-D{name}"),
            });
        }
        // The project's directories, then toolkit directories the user named with `-I` (still
        // the toolkit's: see `is_toolkit_include_dir`), then those discovery found.
        let given_toolkit = self
            .include_dirs
            .iter()
            .filter(|d| is_toolkit_include_dir(d));
        for dir in user_dirs(source, self)
            .iter()
            .chain(given_toolkit)
            .chain(cuda_dirs)
        {
            o.push(format!("-I{}", dir.display()));
        }
        o.extend(self.extra_options.iter().cloned());
        o
    }
}

/// The project's include directories: the source's own, then the `-I` directories that are not
/// a CUDA toolkit's (those hold the toolkit's headers, wherever they are named).
pub(crate) fn user_dirs(source: &CudaSource, opts: &CompileOptions) -> Vec<PathBuf> {
    source
        .dir
        .iter()
        .chain(project_dirs(&opts.include_dirs))
        .cloned()
        .collect()
}

/// The `-I` directories that are the project's, not a CUDA toolkit's.
pub(crate) fn project_dirs(include_dirs: &[PathBuf]) -> impl Iterator<Item = &PathBuf> {
    include_dirs.iter().filter(|d| !is_toolkit_include_dir(d))
}

impl fmt::Display for CudaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

/// Which cache a compile uses (a field of [`CompileOptions`]; read by [`crate::cache`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheMode {
    /// The one the environment sets up (see [`crate::cache`]'s docs); the default.
    #[default]
    FromEnv,
    /// Compile every time.
    Off,
    /// This one, whatever the environment says.
    In(ModuleCache),
}

/// An on-disk cache of compiled modules. Cheap to clone; holds no open files.
///
/// Open one with [`ModuleCache::at`] or [`ModuleCache::open`]; its operations are
/// [`crate::cache`]'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleCache {
    pub(crate) dir: PathBuf,
    pub(crate) max_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_read_errors_name_the_path() {
        let e = CudaSource::from_file("/definitely/not/here.cu").unwrap_err();
        assert!(matches!(e, SourceReadError::NotFound { .. }));
        assert!(e.to_string().contains("/definitely/not/here.cu"), "{e}");
        let e = CudaSource::from_file(std::env::temp_dir()).unwrap_err();
        assert!(matches!(e, SourceReadError::IsDirectory { .. }), "{e}");
        let p = std::env::temp_dir().join(format!("cudacheck-latin1-{}.cu", std::process::id()));
        std::fs::write(&p, b"// caf\xe9\n").unwrap();
        let e = CudaSource::from_file(&p).unwrap_err();
        let _ = std::fs::remove_file(&p);
        assert!(
            matches!(e, SourceReadError::NotUtf8 { offset: 6, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("UTF-8"), "{e}");
    }

    #[test]
    fn empty_file_reads_fine_with_its_directory() {
        let p = std::env::temp_dir().join(format!("cudacheck-empty-{}.cu", std::process::id()));
        std::fs::write(&p, b"").unwrap();
        let s = CudaSource::from_file(&p);
        let _ = std::fs::remove_file(&p);
        let s = s.unwrap();
        assert_eq!(s.text, "");
        assert_eq!(s.dir.as_deref(), Some(std::env::temp_dir().as_path()));
    }

    /// A fake toolkit include directory: what `is_toolkit_include_dir` looks for.
    fn fake_toolkit(root: &Path) -> PathBuf {
        let inc = root.join("cuda/include");
        std::fs::create_dir_all(inc.join("crt")).unwrap();
        std::fs::write(inc.join("cuda_runtime.h"), "").unwrap();
        std::fs::write(inc.join("crt/host_defines.h"), "").unwrap();
        inc
    }

    #[test]
    fn a_toolkit_include_dir_given_with_dash_i_is_searched_as_the_toolkits() {
        let root = tempfile::tempdir().unwrap();
        let toolkit = fake_toolkit(root.path());
        let mine = root.path().join("mine");
        std::fs::create_dir_all(&mine).unwrap();
        let src = CudaSource {
            dir: Some(PathBuf::from("/src")),
            ..CudaSource::from_str("k.cu", "")
        };
        let opts = CompileOptions {
            include_dirs: vec![toolkit.clone(), mine.clone()],
            ..CompileOptions::new(Arch::new(9, 0))
        };
        // Not the project's: its headers are not scanned for host code or fingerprinted.
        assert_eq!(
            user_dirs(&src, &opts),
            [PathBuf::from("/src"), mine.clone()]
        );
        // Searched after the project's own directories, before the discovered toolkit's.
        let o = opts.to_nvrtc_options(&src, &[PathBuf::from("/cuda/include")]);
        let dirs: Vec<&String> = o.iter().filter(|x| x.starts_with("-I")).collect();
        assert_eq!(
            dirs,
            [
                "-I/src".to_string(),
                format!("-I{}", mine.display()),
                format!("-I{}", toolkit.display()),
                "-I/cuda/include".to_string(),
            ]
            .iter()
            .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_project_directory_with_a_cuda_named_header_is_still_the_projects() {
        let root = tempfile::tempdir().unwrap();
        let mine = root.path().join("include");
        std::fs::create_dir_all(&mine).unwrap();
        // A project may ship a header of a toolkit name; without the toolkit's crt/ it is not
        // a toolkit directory.
        std::fs::write(mine.join("cuda_runtime.h"), "").unwrap();
        assert!(!is_toolkit_include_dir(&mine));
        assert!(is_toolkit_include_dir(&fake_toolkit(root.path())));
    }

    #[test]
    fn options_follow_the_documented_order() {
        let src = CudaSource {
            dir: Some(PathBuf::from("/src")),
            ..CudaSource::from_str("k.cu", "")
        };
        let opts = CompileOptions {
            include_dirs: vec![PathBuf::from("/mine")],
            defines: vec![("A".into(), None), ("B".into(), Some("2".into()))],
            max_registers: Some(64),
            ptxas_verbose: true,
            extra_options: vec!["-G".into()],
            ..CompileOptions::new(Arch::new(8, 6))
        };
        assert_eq!(
            opts.to_nvrtc_options(&src, &[PathBuf::from("/cuda/include")]),
            [
                "--gpu-architecture=sm_86",
                "--std=c++17",
                "-lineinfo",
                "--maxrregcount=64",
                "--ptxas-options=-v",
                "-DA",
                "-DB=2",
                "-I/src",
                "-I/mine",
                "-I/cuda/include",
                "-G",
            ]
        );
        let own_std = CompileOptions {
            extra_options: vec!["--std=c++20".into()],
            line_info: false,
            ..CompileOptions::new(Arch::new(9, 0))
        };
        assert_eq!(
            own_std.to_nvrtc_options(&CudaSource::from_str("k.cu", ""), &[]),
            ["--gpu-architecture=sm_90", "--std=c++20"]
        );
    }
}
