//! What only the compiled kernel knows, at `cargo build`: its registers, static shared memory
//! and launch bounds, for the literal configuration to be checked against.
//!
//! With `arch = "sm_XY"`, the kernel is compiled with NVRTC exactly as its first launch will
//! compile it (same source name, options and name expression), through the module cache, so a
//! second build, and the program's first launch on a GPU of that architecture, compile
//! nothing. Where NVRTC is absent, the resources `cudacheck prepare` recorded beside the crate
//! are read instead (`cudacheck_nvrtc::prepared`); with neither, the checks use what the source
//! alone tells. NVRTC being absent never fails a build; a source that does not compile does,
//! at the `file`/`source` literal, with NVRTC's diagnostics (file and line).
//!
//! `CUDACHECK_BUILD_LOG=<file>` appends one line per kernel saying where its resources came
//! from (`compiled`, `cache`, `prepared`, `none`): how a build's checks can be audited.

use std::io::Write;
use std::path::{Path, PathBuf};

use cudacheck_core::cubin::{ptxas_static_shared, read_cubin};
use cudacheck_core::{find_entry, ptx_entries, Arch, KernelResources};
use cudacheck_nvrtc::cache::{self, source_fingerprint};
use cudacheck_nvrtc::nvrtc::{self, AssembleError, CompileError, CompileOptions, CudaSource};
use cudacheck_nvrtc::prepared::{self, Lookup, PreparedKernel, Request};

use crate::model::{manifest_dir, Errors, Model, SourceSpec, Spanned};

/// Resources read from a compiled kernel, and where they came from (for the notes under an
/// error, which must say why the numbers are what they are).
pub struct Compiled {
    pub resources: KernelResources,
    /// "compiled for sm_90 by NVRTC 13.0", "prepared by `cudacheck prepare` (NVRTC 13.0)".
    pub origin: String,
    /// A prepared file the expansion must depend on, so a new `cudacheck prepare` rebuilds.
    pub prepared_file: Option<PathBuf>,
}

/// The environment variable `cudacheck prepare` sets.
const PREPARE_ENV: &str = prepared::ENV_PREPARE;

/// The environment variables a build-time check depends on: the generated code reads each with
/// `option_env!`, so cargo expands the attribute again when one changes (`cudacheck prepare`
/// runs; NVRTC, nvJitLink or the prepared directory is pointed elsewhere).
pub const TRACKED_ENV: [&str; 4] = [
    PREPARE_ENV,
    prepared::ENV_DIR,
    nvrtc::ENV_VAR,
    nvrtc::NVJITLINK_ENV_VAR,
];

/// The compiled kernel's resources for `arch`, or `None` when neither the compiler (NVRTC for
/// CUDA source, nvJitLink for PTX) nor prepared data is at hand. Errors (a source that does
/// not compile, stale prepared data) go to `errors`.
pub fn compiled_resources(
    m: &Model,
    arch: &Spanned<Arch>,
    errors: &mut Errors,
) -> Option<Compiled> {
    let arch = arch.value;
    let (input, tokens) = Input::of(m)?;
    let kernel = m.cuda_name();
    let written = written_options(m);
    let arch_name = arch.sm_name();
    let request = Request {
        source: input.name(),
        kernel: &kernel,
        arch: &arch_name,
        options: &written,
    };
    let dir = prepared::dir_for(&manifest_dir());
    let log = |outcome: &str| build_log(&kernel, &arch_name, outcome);
    let built = match input.build(m, arch, &kernel) {
        Ok(b) => b,
        Err(Failure::NoCompiler) => {
            let found = from_prepared(&dir, &request, &input, m, arch, &tokens, errors);
            log(if found.is_some() { "prepared" } else { "none" });
            return found;
        }
        Err(Failure::Failed(why)) => {
            log("failed");
            errors.spanned(&tokens, why);
            return None;
        }
    };
    log(if built.compiled { "compiled" } else { "cache" });
    if std::env::var_os(PREPARE_ENV).is_some_and(|v| !v.is_empty()) {
        match input.fingerprint(m, arch) {
            Ok(fingerprint) => {
                let entry = PreparedKernel::new(
                    &request,
                    fingerprint,
                    built.compiler.clone(),
                    built.resources.clone(),
                );
                if let Err(why) = prepared::write(&dir, &request, &entry) {
                    errors.spanned(&tokens, format!("`cudacheck prepare`: {why}"));
                }
            }
            Err(why) => errors.spanned(
                &tokens,
                format!(
                    "`cudacheck prepare` cannot fingerprint `{}`: {why}",
                    input.name()
                ),
            ),
        }
    }
    Some(Compiled {
        origin: format!(
            "`{kernel}` as {} {} it for {arch_name}",
            built.compiler,
            if matches!(input, Input::Ptx { .. }) {
                "assembles"
            } else {
                "compiles"
            }
        ),
        resources: built.resources,
        prepared_file: None,
    })
}

/// What the kernel is built from, exactly as the generated code hands it to the runtime.
enum Input {
    /// CUDA C++ (same name, no directory: the file's directory is an include directory).
    Cuda(CudaSource),
    /// A PTX module.
    Ptx { name: String, text: String },
}

/// A kernel built for one architecture.
struct Built {
    resources: KernelResources,
    /// "NVRTC 13.0" or "nvJitLink 13.0".
    compiler: String,
    /// Whether the compiler ran (else the module cache answered).
    compiled: bool,
}

enum Failure {
    /// NVRTC (or nvJitLink, for PTX) cannot be found: never a build error.
    NoCompiler,
    /// The source does not build, in words for the user.
    Failed(String),
}

impl Input {
    /// The input and the literal to point errors at; `None` when the file cannot be read (its
    /// error was reported by the source checks).
    fn of(m: &Model) -> Option<(Input, proc_macro2::TokenStream)> {
        use quote::ToTokens;
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        Some(match m.source.as_ref()? {
            SourceSpec::File { lit, path } => (
                Input::Cuda(CudaSource::from_str(lit.value(), read(path)?)),
                lit.to_token_stream(),
            ),
            SourceSpec::Inline { lit } => {
                let label = format!("<inline source of `{}`>", m.sig.ident);
                (
                    Input::Cuda(CudaSource::from_str(label, lit.value())),
                    lit.to_token_stream(),
                )
            }
            SourceSpec::PtxFile { lit, path } => (
                Input::Ptx {
                    name: lit.value(),
                    text: read(path)?,
                },
                lit.to_token_stream(),
            ),
            SourceSpec::PtxInline { lit } => (
                Input::Ptx {
                    name: format!("<inline PTX of `{}`>", m.sig.ident),
                    text: lit.value(),
                },
                lit.to_token_stream(),
            ),
        })
    }

    fn name(&self) -> &str {
        match self {
            Input::Cuda(s) => &s.name,
            Input::Ptx { name, .. } => name,
        }
    }

    /// What decides whether a prepared record still describes the input: for CUDA source, its
    /// text and the user's headers it includes; for PTX, its text.
    fn fingerprint(&self, m: &Model, arch: Arch) -> Result<String, String> {
        match self {
            Input::Cuda(source) => source_fingerprint(source, &options(m, arch)),
            Input::Ptx { text, .. } => Ok(to_hex(&cache::code_digest(&[text]))),
        }
    }

    fn build(&self, m: &Model, arch: Arch, kernel: &str) -> Result<Built, Failure> {
        match self {
            Input::Cuda(source) => build_cuda(source, &options(m, arch), kernel),
            Input::Ptx { name, text } => build_ptx(name, text, arch, kernel),
        }
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// NVRTC, through the module cache, as the runtime's plain build compiles it.
fn build_cuda(source: &CudaSource, opts: &CompileOptions, kernel: &str) -> Result<Built, Failure> {
    let Ok(nvrtc) = nvrtc::nvrtc() else {
        return Err(Failure::NoCompiler);
    };
    let compiler = format!("NVRTC {}.{}", nvrtc.version.0, nvrtc.version.1);
    let before = cache::stats();
    let out = match cudacheck_nvrtc::compile(source, opts) {
        Ok(out) => out,
        Err(CompileError::NvrtcNotFound(_)) => return Err(Failure::NoCompiler),
        Err(e) => {
            return Err(Failure::Failed(format!(
                "`{kernel}` does not compile for {} ({compiler}):\n{e}",
                opts.arch.sm_name()
            )))
        }
    };
    let compiled = cache::stats().nvrtc_compiles > before.nvrtc_compiles;
    let symbol = out
        .lowered_names
        .iter()
        .find(|(expr, _)| *expr == kernel)
        .map_or_else(|| kernel.to_string(), |(_, lowered)| lowered.clone());
    let resources = read_cubin(&out.cubin)
        .map_err(|e| Failure::Failed(format!("{compiler}'s CUBIN cannot be read: {e}")))?
        .kernel(&symbol)
        .cloned()
        .ok_or_else(|| Failure::Failed(format!("{compiler}'s CUBIN has no kernel `{symbol}`")))?;
    Ok(Built {
        resources,
        compiler,
        compiled,
    })
}

/// ptxas through nvJitLink, as the runtime assembles a PTX module.
fn build_ptx(name: &str, text: &str, arch: Arch, kernel: &str) -> Result<Built, Failure> {
    let Ok(jl) = nvrtc::jitlink() else {
        return Err(Failure::NoCompiler);
    };
    let compiler = format!("nvJitLink {}.{}", jl.version.0, jl.version.1);
    // The signature checks report a kernel the module lacks.
    let entries = ptx_entries(text).map_err(|e| Failure::Failed(format!("`{name}`: {e}")))?;
    let Some(entry) = find_entry(&entries, kernel) else {
        return Err(Failure::NoCompiler);
    };
    let out = match nvrtc::assemble_ptx(text, arch, name) {
        Ok(out) => out,
        Err(AssembleError::NotFound(_)) => return Err(Failure::NoCompiler),
        Err(e) => return Err(Failure::Failed(e.to_string())),
    };
    let mut resources = read_cubin(&out.cubin)
        .map_err(|e| Failure::Failed(format!("{compiler}'s CUBIN cannot be read: {e}")))?
        .kernel(&entry.symbol)
        .cloned()
        .ok_or_else(|| {
            Failure::Failed(format!(
                "{compiler}'s CUBIN has no kernel `{}`",
                entry.symbol
            ))
        })?;
    if let Some(b) = ptxas_static_shared(&out.info_log, &entry.symbol) {
        resources.static_shared_bytes = b;
    }
    Ok(Built {
        resources,
        compiler,
        compiled: true,
    })
}

/// Resources `cudacheck prepare` recorded, when they still describe the source.
fn from_prepared(
    dir: &Path,
    request: &Request<'_>,
    input: &Input,
    m: &Model,
    arch: Arch,
    tokens: &proc_macro2::TokenStream,
    errors: &mut Errors,
) -> Option<Compiled> {
    // A source whose headers cannot be listed has no fingerprint; nothing prepared can be
    // trusted for it, and nothing is reported (the build has no NVRTC to do better).
    let fingerprint = input.fingerprint(m, arch).ok()?;
    match prepared::lookup(dir, request, &fingerprint) {
        Lookup::Fresh(entry) => Some(Compiled {
            origin: format!(
                "`{}` as {} compiled it for {} (prepared by `cudacheck prepare`; the compiler \
                 is not available to this build)",
                entry.kernel, entry.compiler, entry.arch
            ),
            resources: entry.resources,
            prepared_file: Some(dir.join(request.file_name())),
        }),
        Lookup::Missing => None,
        Lookup::Stale { file } => {
            errors.spanned(
                tokens,
                format!(
                    "the prepared resources of `{}` for {} are stale: `{}` or a header it \
                     includes changed since `cudacheck prepare` wrote `{}`, and NVRTC is not \
                     available to this build to compile it.\n  help: run `cudacheck prepare` \
                     on a machine with NVRTC and commit the `{}` directory",
                    request.kernel,
                    request.arch,
                    request.source,
                    file.file_name().unwrap_or_default().to_string_lossy(),
                    prepared::DIR_NAME,
                ),
            );
            None
        }
        Lookup::Unreadable { file, why } => {
            errors.spanned(
                tokens,
                format!(
                    "the prepared file `{}` cannot be read ({why}).\n  help: run `cudacheck \
                     prepare` again, or delete the file",
                    file.file_name().unwrap_or_default().to_string_lossy()
                ),
            );
            None
        }
    }
}

/// The compile options the runtime's `Kernel` will use for the launch's plain build.
fn options(m: &Model, arch: Arch) -> CompileOptions {
    let mut opts = CompileOptions::new(arch);
    if let Some(SourceSpec::File { path, .. }) = &m.source {
        if let Some(dir) = path.parent() {
            opts.include_dirs.push(dir.to_path_buf());
        }
    }
    opts.include_dirs
        .extend(m.includes.iter().map(|(_, p)| p.clone()));
    opts.defines = m
        .defines
        .iter()
        .map(|d| (d.name.clone(), d.value.clone()))
        .collect();
    opts.max_registers = m.max_registers.as_ref().map(|r| r.value as u32);
    opts.name_expressions = vec![m.cuda_name()];
    opts
}

/// The options as the attribute writes them, for a prepared file's name: the same on every
/// machine (no absolute paths).
fn written_options(m: &Model) -> Vec<String> {
    let mut out: Vec<String> = m
        .includes
        .iter()
        .map(|(lit, _)| format!("include {}", lit.value()))
        .collect();
    out.extend(m.defines.iter().map(|d| match &d.value {
        Some(v) => format!("define {}={v}", d.name),
        None => format!("define {}", d.name),
    }));
    if let Some(r) = &m.max_registers {
        out.push(format!("max_registers {}", r.value));
    }
    out
}

/// `CUDACHECK_BUILD_LOG`: one line per kernel and architecture, `kernel arch outcome`.
fn build_log(kernel: &str, arch: &str, outcome: &str) {
    let Some(path) = std::env::var_os("CUDACHECK_BUILD_LOG").filter(|p| !p.is_empty()) else {
        return;
    };
    let line = format!("{kernel}\t{arch}\t{outcome}\n");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
