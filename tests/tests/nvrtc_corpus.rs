//! NVRTC tier, driven by the environment: a third-party kernel library, checked out anywhere
//! outside this repository (no third-party code lives here), compiles unchanged, and for every
//! kernel the resources cudacheck reads from the CUBIN equal NVRTC's own `-Xptxas -v` report of
//! the same compile, as `nvrtc_resources` checks for `kernels/`.
//!
//! - `CUDACHECK_CORPUS`: `.cu` files or directories (searched recursively), `:`-separated;
//!   unset, the test prints why it skipped.
//! - `CUDACHECK_CORPUS_FLAGS`: `-DNAME[=VALUE]` and `-IDIR` words, as the project's build.rs
//!   passes them to nvcc.
//! - `CUDACHECK_CORPUS_EXCLUDE`: `,`-separated substrings of paths to leave out (files that
//!   need sources outside the checkout, such as CUTLASS).
//! - `CUDACHECK_CORPUS_ARCH`: default `sm_90`.
//!
//! `scripts/corpus.sh` runs it for the projects recorded in `results/corpus.md`.

use std::path::{Path, PathBuf};

use cudacheck::nvrtc::{compile, has_device_code, CompileOptions, CudaSource, Severity};
use cudacheck_core::cubin::{parse_ptxas_info, read_cubin};
use cudacheck_core::Arch;
use cudacheck_tests::matrix::warnings_from_our_headers;
use cudacheck_tests::nvrtc_or_skip;

fn cu_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("readable entry").path())
            .collect();
        entries.sort();
        for e in entries {
            cu_files(&e, out);
        }
    } else if path.extension().is_some_and(|e| e == "cu") {
        out.push(path.to_path_buf());
    }
}

/// What one file gave: its kernel count and how many warnings NVRTC gave, or why it failed.
/// A warning from cudacheck's own headers fails the file (none, on any NVRTC).
fn check_file(path: &Path, opts: &CompileOptions) -> Result<(usize, usize), String> {
    let source = CudaSource::from_file(path).map_err(|e| e.to_string())?;
    let compiled = compile(&source, opts).map_err(|e| e.to_string())?;
    let ours = warnings_from_our_headers(&compiled.warnings);
    if let Some(first) = ours.first() {
        return Err(format!(
            "{} warning(s) from cudacheck's headers, the first: {}:{}: {}",
            ours.len(),
            first.file,
            first.line.unwrap_or(0),
            first.message
        ));
    }
    let warnings = compiled
        .warnings
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let cubin = read_cubin(&compiled.cubin).map_err(|e| e.to_string())?;
    let ptxas = parse_ptxas_info(&compiled.log).map_err(|e| e.to_string())?;
    if cubin.kernels.is_empty() && !has_device_code(&source, &opts.include_dirs) {
        // Host code only (graph capture helpers): nothing for the device, rightly no kernels.
        return Ok((0, warnings));
    }
    if cubin.kernels.is_empty() {
        return Err("no kernels".into());
    }
    for k in &cubin.kernels {
        let p = ptxas
            .iter()
            .find(|p| p.name == k.symbol)
            .ok_or_else(|| format!("ptxas reported nothing for {}", k.symbol))?;
        let pairs = [
            ("registers", k.registers, p.registers),
            (
                "static shared",
                k.static_shared_bytes,
                p.static_shared_bytes,
            ),
            ("stack frame", k.local_bytes, p.stack_frame_bytes),
        ];
        for (what, cubin_value, ptxas_value) in pairs {
            if cubin_value != ptxas_value {
                return Err(format!(
                    "{what} of `{}`: CUBIN {cubin_value}, ptxas {ptxas_value}",
                    k.symbol
                ));
            }
        }
    }
    Ok((cubin.kernels.len(), warnings))
}

#[test]
fn nvrtc_corpus_compiles_unchanged_with_ptxas_resources() {
    let Some(corpus) = std::env::var_os("CUDACHECK_CORPUS") else {
        println!("skipped (NVRTC tier): CUDACHECK_CORPUS is not set (see scripts/corpus.sh)");
        return;
    };
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = std::env::var("CUDACHECK_CORPUS_ARCH")
        .unwrap_or_else(|_| "sm_90".into())
        .parse()
        .expect("CUDACHECK_CORPUS_ARCH is an architecture");
    let mut opts = CompileOptions {
        ptxas_verbose: true,
        ..CompileOptions::new(arch)
    };
    for word in std::env::var("CUDACHECK_CORPUS_FLAGS")
        .unwrap_or_default()
        .split_whitespace()
    {
        if let Some(d) = word.strip_prefix("-D") {
            opts.defines.push(match d.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (d.to_string(), None),
            });
        } else if let Some(dir) = word.strip_prefix("-I") {
            opts.include_dirs.push(PathBuf::from(dir));
        } else {
            panic!("CUDACHECK_CORPUS_FLAGS takes -D and -I words, not `{word}`");
        }
    }
    let exclude: Vec<String> = std::env::var("CUDACHECK_CORPUS_EXCLUDE")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut files = Vec::new();
    for p in std::env::split_paths(&corpus) {
        cu_files(&p, &mut files);
    }
    files.retain(|f| {
        !exclude
            .iter()
            .any(|x| f.to_string_lossy().contains(x.as_str()))
    });
    assert!(!files.is_empty(), "CUDACHECK_CORPUS names no .cu files");

    let (mut kernels, mut host_only, mut warnings, mut failures) = (0, 0, 0, Vec::new());
    for f in &files {
        match check_file(f, &opts) {
            Ok((0, w)) => {
                println!(
                    "host  {} (host code only: nothing for the device; {w} warnings)",
                    f.display()
                );
                host_only += 1;
                warnings += w;
            }
            Ok((n, w)) => {
                println!("ok    {} ({n} kernels, {w} warnings)", f.display());
                kernels += n;
                warnings += w;
            }
            Err(e) => {
                let first = e.lines().take(6).collect::<Vec<_>>().join("\n      ");
                println!("FAIL  {}\n      {first}", f.display());
                failures.push(f.display().to_string());
            }
        }
    }
    let nvrtc = cudacheck::nvrtc::nvrtc().expect("loaded above");
    println!(
        "corpus: {} of {} files pass ({host_only} of them host code only), {kernels} kernels \
         with CUBIN resources equal to ptxas's, {warnings} warnings (none from cudacheck's \
         headers), NVRTC {}.{}",
        files.len() - failures.len(),
        files.len(),
        nvrtc.version.0,
        nvrtc.version.1
    );
    assert!(failures.is_empty(), "files that fail: {failures:#?}");
}
