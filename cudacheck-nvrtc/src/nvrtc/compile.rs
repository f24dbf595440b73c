//! Compiling CUDA C++ to a CUBIN with NVRTC, with errors a person can act on.

use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};

use cudacheck_core::Arch;
use thiserror::Error;

use super::diagnostic::{parse_log, Diagnostic, Severity};
use super::discover::{nvrtc, Nvrtc, NvrtcNotFound};
use super::ffi::{CallError, Code, Program};
use super::headers::{compat_headers, users_own};
use super::nvcc;
use crate::cache::CacheMode;

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
/// [`compile`] also passes what emulates nvcc, before `extra_options`:
/// `--pre-include` of nvcc's implicit includes, and `-default-device`, so that the unannotated
/// functions left once host code is set aside (host `constexpr` helpers device code calls)
/// get the device meaning nvcc's `--expt-relaxed-constexpr` gives them. `-default-device` is
/// more lenient than nvcc for a non-`constexpr` unannotated helper called from device code
/// (nvcc rejects the call); see the README's known limits.
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
    /// [`Compiled::lowered_names`].
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
        for dir in user_dirs(source, self).iter().chain(cuda_dirs) {
            o.push(format!("-I{}", dir.display()));
        }
        o.extend(self.extra_options.iter().cloned());
        o
    }
}

pub(crate) fn user_dirs(source: &CudaSource, opts: &CompileOptions) -> Vec<PathBuf> {
    source
        .dir
        .iter()
        .chain(&opts.include_dirs)
        .cloned()
        .collect()
}

/// The output of a successful compilation.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Compiled {
    /// The ELF CUBIN for `arch`.
    pub cubin: Vec<u8>,
    pub ptx: Option<String>,
    /// NVRTC's raw log (warnings; ptxas's report when `ptxas_verbose`).
    pub log: String,
    /// `(name expression, mangled name)`, in the order asked.
    pub lowered_names: Vec<(String, String)>,
    /// The log's diagnostics: warnings, remarks and notes (a successful compile has no errors).
    pub warnings: Vec<Diagnostic>,
    pub arch: Arch,
}

/// A compilation that did not produce a CUBIN.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CompileError {
    #[error(transparent)]
    NvrtcNotFound(#[from] NvrtcNotFound),

    /// The source has errors; `diagnostics` holds them (and any warnings), in log order.
    #[error("{}", render_failed(source_name, diagnostics))]
    Failed {
        source_name: String,
        diagnostics: Vec<Diagnostic>,
        log: String,
    },

    #[error(
        "NVRTC {nvrtc_version} cannot generate code for {arch}; it supports {}. \
         Pick one of those, or point CUDACHECK_NVRTC at an NVRTC that still supports {arch} \
         (CUDA 12.9's targets sm_50 to sm_90: `pip install nvidia-cuda-nvrtc-cu12==12.9.*`)",
        supported.join(", ")
    )]
    UnsupportedArch {
        arch: Arch,
        nvrtc_version: String,
        supported: Vec<String>,
    },

    /// NVRTC rejected an option (or an option held a NUL byte).
    #[error("NVRTC rejected the compile options: {message}\n  options: {}", options.join(" "))]
    InvalidOption {
        options: Vec<String>,
        message: String,
    },

    /// A name expression that names nothing in the source.
    #[error(
        "name expression `{expr}` does not name a kernel or variable in `{source_name}`: {message}. \
         Write it as the kernel's name with its template arguments, e.g. `saxpy<float>`"
    )]
    NameExpression {
        expr: String,
        source_name: String,
        message: String,
    },

    /// The source text holds a NUL byte, which NVRTC's C interface cannot take.
    #[error("`{source_name}` contains a NUL byte at offset {offset}; NVRTC cannot compile it")]
    NulInSource { source_name: String, offset: usize },

    /// Any other NVRTC failure.
    #[error("{call} failed with {code}: {message}")]
    Nvrtc {
        call: &'static str,
        code: String,
        message: String,
    },
}

fn render_failed(source_name: &str, diagnostics: &[Diagnostic]) -> String {
    let mut s = String::new();
    for d in diagnostics {
        s.push_str(&d.to_string());
        s.push_str("\n\n");
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut counts = plural(errors, "error");
    if warnings > 0 {
        counts.push_str(&format!("; {}", plural(warnings, "warning")));
    }
    let short = source_name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(source_name);
    s.push_str(&format!("error: could not compile `{short}` ({counts})"));
    s
}

impl CompileError {
    fn from_call(e: CallError, nvrtc: &Nvrtc, log: Option<&str>) -> Self {
        let mut message = e.message(&nvrtc.bound);
        if let Some(log) = log.map(str::trim).filter(|l| !l.is_empty()) {
            message.push_str(&format!("; log:\n{log}"));
        }
        CompileError::Nvrtc {
            call: e.call,
            code: format!("{:?}", e.code),
            message,
        }
    }
}

/// Compiles `source` for `opts.arch` into a CUBIN.
///
/// # Errors
/// - [`CompileError::NvrtcNotFound`] when NVRTC cannot be loaded;
/// - [`CompileError::UnsupportedArch`] when NVRTC cannot target `opts.arch`;
/// - [`CompileError::Failed`] with parsed [`Diagnostic`]s when the source has errors;
/// - [`CompileError::InvalidOption`], [`CompileError::NameExpression`],
///   [`CompileError::NulInSource`], or [`CompileError::Nvrtc`] for other NVRTC failures.
///
/// A result found in the module cache ([`crate::cache`]) is returned without compiling; it is
/// the same, warnings and errors included, as the compile would give.
pub fn compile(source: &CudaSource, opts: &CompileOptions) -> Result<Compiled, CompileError> {
    crate::cache::through(source, opts, || compile_uncached(source, opts))
}

/// [`compile`] without the module cache.
fn compile_uncached(source: &CudaSource, opts: &CompileOptions) -> Result<Compiled, CompileError> {
    // The hook that makes a file written for nvcc compile unchanged (see `nvcc`): host code set
    // aside, nvcc's implicit includes, and a retry without the launch references when an
    // error came from them.
    let mut prepared = nvcc::prepare(source, opts);
    let first = prepared.first();
    let mut result = compile_prepared(&first.source, &first.headers, opts, &first.options);
    // Headers NVRTC cannot find (a host library's `<cublas_v2.h>`, `<omp.h>`), library headers
    // that only host code needs (Thrust beside a host launcher), and layout assertions on
    // `offsetof`: each round sets aside what NVRTC failed at, as long as it finds something
    // new (NVRTC stops at the first header it cannot find, so each costs a round).
    for _ in 0..MAX_LIBRARY_ROUNDS {
        let more = match &result {
            Err(CompileError::Failed { diagnostics, .. }) => {
                prepared.set_aside_after_failure(diagnostics)
            }
            _ => false,
        };
        if !more {
            break;
        }
        let next = prepared.first();
        result = compile_prepared(&next.source, &next.headers, opts, &next.options);
    }
    for attempt in 0..2 {
        let retry = match &result {
            Err(CompileError::Failed { diagnostics, .. }) => prepared.retry(diagnostics, attempt),
            _ => None,
        };
        match retry {
            Some(next) => {
                result = compile_prepared(&next.source, &next.headers, opts, &next.options)
            }
            None => break,
        }
    }
    // The remarks go into the log as well, in NVRTC's own form, so that a result the module
    // cache returns (whose diagnostics are read back from the log) has them too.
    let remarks = prepared.set_aside_remarks(result.is_ok());
    let remark_log: String = remarks
        .iter()
        .map(|d| {
            format!(
                "{}({}): remark: {}\n",
                d.file,
                d.line.unwrap_or(1),
                d.message
            )
        })
        .collect();
    match &mut result {
        Ok(compiled) => {
            compiled.log.push_str(&remark_log);
            compiled.warnings.extend(remarks);
        }
        Err(CompileError::Failed {
            diagnostics, log, ..
        }) => {
            prepared.restore_header_paths(diagnostics);
            prepared.explain(diagnostics);
            log.push_str(&remark_log);
            diagnostics.extend(remarks);
        }
        Err(_) => {}
    }
    result
}

/// How many times at most [`compile_uncached`] sets library includes aside and compiles again
/// (each round follows the errors into the next library or the next missing header; a round
/// that stops at a missing header takes a fraction of a second).
const MAX_LIBRARY_ROUNDS: usize = 32;

fn compile_prepared(
    source: &CudaSource,
    own_headers: &[(String, String)],
    opts: &CompileOptions,
    nvcc_options: &[String],
) -> Result<Compiled, CompileError> {
    let nvrtc = nvrtc()?;
    let sm = opts.arch.sm_name();
    if !nvrtc.supports(&sm) {
        return Err(CompileError::UnsupportedArch {
            arch: opts.arch,
            nvrtc_version: format!("{}.{}", nvrtc.version.0, nvrtc.version.1),
            supported: nvrtc.supported_arches.clone(),
        });
    }
    let mut options = opts.to_nvrtc_options(source, &nvrtc.include_dirs);
    let at = options.len() - opts.extra_options.len();
    options.splice(at..at, nvcc_options.iter().cloned());
    let c_options = options
        .iter()
        .map(|o| CString::new(o.as_str()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CompileError::InvalidOption {
            options: options.clone(),
            message: format!(
                "an option contains a NUL byte at offset {}",
                e.nul_position()
            ),
        })?;
    let c_source = CString::new(source.text.as_str()).map_err(|e| CompileError::NulInSource {
        source_name: source.name.clone(),
        offset: e.nul_position(),
    })?;
    // File names and name expressions with a NUL cannot come from a real file or kernel name;
    // they are reported as the NUL-in-source they amount to.
    let nul = |offset| CompileError::NulInSource {
        source_name: source.name.clone(),
        offset,
    };
    let c_name = CString::new(source.name.as_str()).map_err(|e| nul(e.nul_position()))?;
    // The project's own headers, host code set aside, first: they stand for files on disk.
    let headers = own_headers
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .chain(
            compat_headers(&user_dirs(source, opts))
                .into_iter()
                .filter(|(n, _)| !own_headers.iter().any(|(o, _)| o == n)),
        )
        .map(|(n, t)| Ok((CString::new(n)?, CString::new(t)?)))
        .collect::<Result<Vec<_>, std::ffi::NulError>>()
        .map_err(|e| nul(e.nul_position()))?;
    let exprs = opts
        .name_expressions
        .iter()
        .map(|x| CString::new(x.as_str()).map(|c| (x, c)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| nul(e.nul_position()))?;

    let mut prog = Program::create(&nvrtc.bound, &c_source, &c_name, &headers)
        .map_err(|e| CompileError::from_call(e, nvrtc, None))?;
    for (_, c) in &exprs {
        prog.add_name_expression(c)
            .map_err(|e| CompileError::from_call(e, nvrtc, None))?;
    }
    crate::cache::stats::count(crate::cache::stats::Event::NvrtcCompile);
    let code = prog.compile(&c_options);
    let log = prog
        .log()
        .map_err(|e| CompileError::from_call(e, nvrtc, None))?;
    match code {
        Code::SUCCESS => {}
        Code::COMPILATION => {
            let diagnostics = users_own(parse_log(&log));
            return Err(compilation_failed(source, opts, diagnostics, log));
        }
        Code::INVALID_OPTION => {
            let message = parse_log(&log)
                .into_iter()
                .map(|d| d.message)
                .collect::<Vec<_>>()
                .join("; ");
            return Err(CompileError::InvalidOption {
                options,
                message: if message.is_empty() {
                    log.trim().to_string()
                } else {
                    message
                },
            });
        }
        other => {
            let e = CallError {
                call: "nvrtcCompileProgram",
                code: other,
            };
            return Err(CompileError::from_call(e, nvrtc, Some(&log)));
        }
    }
    let cubin = prog
        .cubin()
        .map_err(|e| CompileError::from_call(e, nvrtc, None))?;
    let ptx = if opts.ptx {
        Some(
            prog.ptx()
                .map_err(|e| CompileError::from_call(e, nvrtc, None))?,
        )
    } else {
        None
    };
    let lowered_names = exprs
        .iter()
        .map(|(x, c)| {
            prog.lowered_name(c)
                .map(|l| ((*x).clone(), l))
                .map_err(|e| CompileError::NameExpression {
                    expr: (*x).clone(),
                    source_name: source.name.clone(),
                    message: e.message(&nvrtc.bound),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    drop(prog);
    Ok(Compiled {
        cubin,
        ptx,
        warnings: users_own(parse_log(&log)),
        log,
        lowered_names,
        arch: opts.arch,
    })
}

/// NVRTC compiles name expressions as `#pragma nv_mangled_name <expr>` lines of a pseudo-file
/// `__nv_name_map`; when every error is there, the source is fine and an expression is wrong.
pub(crate) fn compilation_failed(
    source: &CudaSource,
    opts: &CompileOptions,
    diagnostics: Vec<Diagnostic>,
    log: String,
) -> CompileError {
    const NAME_MAP: &str = "__nv_name_map";
    let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
    if !errors.is_empty() && errors.iter().all(|d| d.file == NAME_MAP) {
        let first = errors[0];
        let expr = first
            .source_line
            .as_deref()
            .and_then(|l| l.trim().strip_prefix("#pragma nv_mangled_name"))
            .map(|x| x.trim().to_string())
            .or_else(|| {
                // The pseudo-file has one line per expression after a header line.
                let idx = first.line.and_then(|l| (l as usize).checked_sub(2))?;
                opts.name_expressions.get(idx).cloned()
            })
            .unwrap_or_default();
        return CompileError::NameExpression {
            expr,
            source_name: source.name.clone(),
            message: first.message.clone(),
        };
    }
    CompileError::Failed {
        source_name: source.name.clone(),
        diagnostics,
        log,
    }
}

impl fmt::Display for CudaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(sev: Severity) -> Diagnostic {
        Diagnostic {
            file: "kernels/x.cu".into(),
            line: Some(3),
            column: Some(5),
            severity: sev,
            message: "m".into(),
            source_line: Some("    f(p);".into()),
            caret_column: Some(5),
            code: None,
            notes: vec![],
        }
    }

    #[test]
    fn failed_summary_counts_errors_and_warnings() {
        let e = CompileError::Failed {
            source_name: "kernels/x.cu".into(),
            diagnostics: vec![
                diag(Severity::Error),
                diag(Severity::Error),
                diag(Severity::Warning),
            ],
            log: String::new(),
        };
        let text = e.to_string();
        assert!(
            text.ends_with("error: could not compile `x.cu` (2 errors; 1 warning)"),
            "{text}"
        );
        assert_eq!(text.matches("--> kernels/x.cu:3:5").count(), 3, "{text}");
    }

    #[test]
    fn one_error_is_singular() {
        let text = render_failed("x.cu", &[diag(Severity::Error)]);
        assert!(text.ends_with("(1 error)"), "{text}");
    }

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
