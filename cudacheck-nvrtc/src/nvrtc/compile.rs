//! Compiling CUDA C++ to a CUBIN with NVRTC, with errors a person can act on: the uncached
//! compiler, above input preparation (`nvcc.rs`, `headers.rs`) and below the module cache,
//! which calls [`compile_uncached`] on a miss (the public, cached entry point is
//! [`crate::compile`]).

use std::ffi::CString;
use std::path::Path;

use cudacheck_core::Arch;
use thiserror::Error;

use super::diagnostic::{parse_log, Diagnostic, Severity};
use super::discover::{nvrtc, Nvrtc, NvrtcNotFound};
use super::ffi::{CallError, Code, Program};
use super::headers::{compat_headers, users_own};
use super::nvcc;
use super::request::{user_dirs, CompileOptions, CudaSource};
use crate::stats::{count, Event};

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

/// [`crate::compile`] without the module cache: NVRTC runs, on the source prepared as nvcc's
/// device pass would see it.
///
/// # Errors
/// As [`crate::compile`]'s.
pub(crate) fn compile_uncached(
    source: &CudaSource,
    opts: &CompileOptions,
) -> Result<Compiled, CompileError> {
    // The hook that makes a file written for nvcc compile unchanged (see `nvcc`): host code set
    // aside, nvcc's implicit includes, and a retry without the launch references when an
    // error came from them.
    let mut prepared = nvcc::prepare(source, opts);
    let mut last = prepared.first();
    let mut result = compile_prepared(&last.source, &last.headers, opts, &last.options);
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
        last = prepared.first();
        result = compile_prepared(&last.source, &last.headers, opts, &last.options);
    }
    for attempt in 0..2 {
        let retry = match &result {
            Err(CompileError::Failed { diagnostics, .. }) => prepared.retry(diagnostics, attempt),
            _ => None,
        };
        match retry {
            Some(next) => {
                result = compile_prepared(&next.source, &next.headers, opts, &next.options);
                last = next;
            }
            None => break,
        }
    }
    if result.is_ok() {
        if let Some(dir) = std::env::var_os(DUMP_ENV) {
            dump_device_code(Path::new(&dir), &last);
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

/// `CUDACHECK_DUMP_DEVICE_CODE=DIR`: every successful uncached compile writes what NVRTC was
/// handed (the file with host code set aside, and the project's headers so changed, or
/// compiled as empty) under `DIR`, and the options cudacheck added in `DIR/<file>.options`:
/// to see what device code cudacheck kept, or to compile it with another compiler
/// (`scripts/wholeprog.sh device-reference` compiles it with nvcc).
pub const DUMP_ENV: &str = "CUDACHECK_DUMP_DEVICE_CODE";

/// Writes `attempt` under `dir` (see [`DUMP_ENV`]): the source by its file name, each
/// in-memory header by its spelling (a header compiled as empty only named in the options
/// file). A header spelled with `..` or as an absolute path is not
/// written (the original on disk stands for it). Failures to write are ignored: the dump is a
/// diagnostic aid, never a reason for a compile to fail.
fn dump_device_code(dir: &Path, attempt: &nvcc::Attempt) {
    let name = attempt
        .source
        .name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(&attempt.source.name);
    let safe = |spelling: &str| {
        let p = Path::new(spelling);
        p.is_relative()
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
    };
    write(name, &attempt.source.text);
    // A header compiled as empty is listed, not written: another compiler has the real one
    // (a C++ library's `<ratio>`, a toolkit's `<cublas_v2.h>`), and host code may need it.
    let mut listing = attempt.options.join("\n") + "\n";
    for (spelling, text) in attempt.headers.iter().filter(|(s, _)| safe(s)) {
        if text == nvcc::MISSING_HEADER_STUB {
            listing.push_str(&format!("# compiled as empty: {spelling}\n"));
        } else {
            write(spelling, text);
        }
    }
    write(&format!("{name}.options"), &listing);
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
    count(Event::NvrtcCompile);
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
}
