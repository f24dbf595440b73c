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

use cudacheck_core::cubin::read_cubin;
use cudacheck_core::{Arch, KernelResources};
use cudacheck_nvrtc::cache::{self, source_fingerprint};
use cudacheck_nvrtc::nvrtc::{self, CompileError, CompileOptions, CudaSource};
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

/// The environment variable the generated code reads with `option_env!`, so that cargo expands
/// the attribute again when `cudacheck prepare` sets it.
pub const PREPARE_ENV: &str = prepared::ENV_PREPARE;

/// The compiled kernel's resources for `arch`, or `None` when the source is PTX or neither
/// NVRTC nor prepared data is at hand. Errors (a source that does not compile, stale prepared
/// data) go to `errors`.
pub fn compiled_resources(
    m: &Model,
    arch: &Spanned<Arch>,
    errors: &mut Errors,
) -> Option<Compiled> {
    let arch = arch.value;
    let (source, tokens) = cuda_source(m)?;
    let opts = options(m, &source, arch);
    let kernel = m.cuda_name();
    let written = written_options(m);
    let arch_name = arch.sm_name();
    let request = Request {
        source: &source.name,
        kernel: &kernel,
        arch: &arch_name,
        options: &written,
    };
    let dir = prepared::dir_for(&manifest_dir());
    let log = |outcome: &str| build_log(&kernel, &arch_name, outcome);
    let nvrtc = match nvrtc::nvrtc() {
        Ok(n) => n,
        Err(_) => {
            let found = from_prepared(&dir, &request, &source, &opts, &tokens, errors);
            log(if found.is_some() { "prepared" } else { "none" });
            return found;
        }
    };
    let before = cache::stats();
    let out = match nvrtc::compile(&source, &opts) {
        Ok(out) => out,
        Err(CompileError::NvrtcNotFound(_)) => {
            log("none");
            return None;
        }
        Err(e) => {
            log("failed");
            errors.spanned(
                &tokens,
                format!(
                    "`{kernel}` does not compile for {arch_name} (NVRTC {}.{}):\n{e}",
                    nvrtc.version.0, nvrtc.version.1
                ),
            );
            return None;
        }
    };
    let after = cache::stats();
    log(if after.nvrtc_compiles > before.nvrtc_compiles {
        "compiled"
    } else {
        "cache"
    });
    let symbol = out
        .lowered_names
        .iter()
        .find(|(expr, _)| *expr == kernel)
        .map_or_else(|| kernel.clone(), |(_, lowered)| lowered.clone());
    let resources = match read_cubin(&out.cubin) {
        Ok(info) => info.kernel(&symbol).cloned(),
        Err(e) => {
            errors.spanned(
                &tokens,
                format!("NVRTC's CUBIN for `{kernel}` on {arch_name} cannot be read: {e}"),
            );
            return None;
        }
    }?;
    let version = format!("{}.{}", nvrtc.version.0, nvrtc.version.1);
    if std::env::var_os(PREPARE_ENV).is_some_and(|v| !v.is_empty()) {
        match source_fingerprint(&source, &opts) {
            Ok(fingerprint) => {
                let entry =
                    PreparedKernel::new(&request, fingerprint, version.clone(), resources.clone());
                if let Err(why) = prepared::write(&dir, &request, &entry) {
                    errors.spanned(&tokens, format!("`cudacheck prepare`: {why}"));
                }
            }
            Err(why) => errors.spanned(
                &tokens,
                format!(
                    "`cudacheck prepare` cannot fingerprint `{}`: {why}",
                    source.name
                ),
            ),
        }
    }
    Some(Compiled {
        resources,
        origin: format!("`{kernel}` as NVRTC {version} compiles it for {arch_name}"),
        prepared_file: None,
    })
}

/// Resources `cudacheck prepare` recorded, when they still describe the source.
fn from_prepared(
    dir: &Path,
    request: &Request<'_>,
    source: &CudaSource,
    opts: &CompileOptions,
    tokens: &proc_macro2::TokenStream,
    errors: &mut Errors,
) -> Option<Compiled> {
    // A source whose headers cannot be listed has no fingerprint; nothing prepared can be
    // trusted for it, and nothing is reported (the build has no NVRTC to do better).
    let fingerprint = source_fingerprint(source, opts).ok()?;
    match prepared::lookup(dir, request, &fingerprint) {
        Lookup::Fresh(entry) => Some(Compiled {
            origin: format!(
                "`{}` as NVRTC {} compiled it for {} (prepared by `cudacheck prepare`; NVRTC is \
                 not available to this build)",
                entry.kernel, entry.nvrtc, entry.arch
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

/// The source exactly as the generated code hands it to the runtime (same name, no directory:
/// the file's directory is an include directory), and the literal to point errors at.
fn cuda_source(m: &Model) -> Option<(CudaSource, proc_macro2::TokenStream)> {
    use quote::ToTokens;
    match m.source.as_ref()? {
        SourceSpec::File { lit, path } => {
            let text = std::fs::read_to_string(path).ok()?;
            Some((
                CudaSource::from_str(lit.value(), text),
                lit.to_token_stream(),
            ))
        }
        SourceSpec::Inline { lit } => {
            let label = format!("<inline source of `{}`>", m.sig.ident);
            Some((
                CudaSource::from_str(label, lit.value()),
                lit.to_token_stream(),
            ))
        }
        SourceSpec::PtxFile { .. } | SourceSpec::PtxInline { .. } => None,
    }
}

/// The compile options the runtime's `Kernel` will use for the launch's plain build.
fn options(m: &Model, _source: &CudaSource, arch: Arch) -> CompileOptions {
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
