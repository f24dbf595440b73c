//! NVRTC tier, run by hand: the corpus comparison. A change to the PTX rewrites that must not
//! change what they write (a port onto a new model) is checked by it: this test records every
//! rewrite's output on every PTX it can get offline, and compares a later run with a recorded
//! one. Record and compare from checkouts at the same path: NVRTC's PTX names the source's
//! path (`.file`, `__FILE__` strings of asserts, the hashed names of internal symbols).
//!
//! The corpus: every `.ptx` file of the repository (outside `target/`), the PTX NVRTC makes for
//! `sm_90` of every `.cu` file under `kernels/`, `bench/kernels/` and `tests/cuda/`, and the
//! `.ptx` files named by `CUDACHECK_REWRITE_CORPUS_EXTRA` (`:`-separated; third-party PTX,
//! which stays outside the repository). For each, the bounds rewrite under three option sets
//! (the default; block `[256, 1, 1]` with host checks; allocation bases), the race rewrite
//! (of the plain PTX, and of the bounds rewrite with host checks, as a race-checked build
//! makes it) and the init rewrite (of the bounds rewrite with host checks, and of its race
//! rewrite, as init-checked builds make them), each written as the rewritten PTX followed by
//! its kernel table.
//!
//! - `CUDACHECK_REWRITE_CORPUS_OUT=DIR`: write the outputs there (one file per input and
//!   rewrite).
//! - `CUDACHECK_REWRITE_CORPUS_BASELINE=DIR`: also compare them with a recorded `DIR`, and fail
//!   naming every file that differs, is new or is missing.
//!
//! ```text
//! eval "$(scripts/setup-cuda.sh)"
//! CUDACHECK_REWRITE_CORPUS_OUT=/tmp/ir-baseline \
//!   cargo test -p cudacheck-tests --test nvrtc_rewrite_corpus -- --ignored --nocapture
//! CUDACHECK_REWRITE_CORPUS_OUT=/tmp/ir-now CUDACHECK_REWRITE_CORPUS_BASELINE=/tmp/ir-baseline \
//!   cargo test -p cudacheck-tests --test nvrtc_rewrite_corpus -- --ignored --nocapture
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck_core::init::{init_ptx_with, InitOptions};
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
use cudacheck_core::race::{race_ptx, RaceOptions};
use cudacheck_core::Arch;
use cudacheck_tests::{nvrtc_or_skip, repo_root};

/// Files under `dir` whose name ends with `ext`, sorted, skipping build outputs.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for e in entries {
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if e.is_dir() {
            if !matches!(name, "target" | ".git" | ".cuda") && !e.is_symlink() {
                files(&e, ext, out);
            }
        } else if name.ends_with(ext) {
            out.push(e);
        }
    }
}

/// A file name for an input: its path with `/` as `__`.
fn key(path: &Path) -> String {
    let root = repo_root();
    let rel = path.strip_prefix(&root).unwrap_or(path);
    rel.to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "__")
}

/// Every PTX of the corpus, by name: `Err` where NVRTC refused a source (recorded too, so a
/// file that stops compiling is seen).
fn corpus() -> BTreeMap<String, Result<String, String>> {
    let root = repo_root();
    let mut out = BTreeMap::new();
    let mut ptx = Vec::new();
    files(&root, ".ptx", &mut ptx);
    for p in ptx {
        out.insert(key(&p), Ok(std::fs::read_to_string(&p).unwrap()));
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let mut cu = Vec::new();
    for dir in ["kernels", "bench/kernels", "tests/cuda"] {
        files(&root.join(dir), ".cu", &mut cu);
    }
    for p in cu {
        let got = CudaSource::from_file(&p)
            .map_err(|e| e.to_string())
            .and_then(|src| compile(&src, &opts).map_err(|e| e.to_string()))
            .map(|c| c.ptx.expect("asked for PTX"));
        out.insert(format!("{}.sm_90", key(&p)), got);
    }
    if let Some(extra) = std::env::var_os("CUDACHECK_REWRITE_CORPUS_EXTRA") {
        for p in std::env::split_paths(&extra) {
            let name = format!("extra__{}", p.file_name().unwrap().to_string_lossy());
            out.insert(name, Ok(std::fs::read_to_string(&p).unwrap()));
        }
    }
    out
}

/// Every rewrite of one PTX, by the suffix its output file takes.
fn rewrites(ptx: &str) -> Vec<(&'static str, String)> {
    let bounds = [
        ("bounds-default", InstrumentOptions::new()),
        (
            "bounds-block256-host",
            InstrumentOptions::new()
                .block([256, 1, 1])
                .host_checks(true),
        ),
        ("bounds-alloc", InstrumentOptions::new().alloc_bases(true)),
    ];
    let mut out = Vec::new();
    for (name, opts) in bounds {
        let text = match instrument_ptx_with(ptx, &opts) {
            Ok(r) => format!("{}\n// kernels\n{:#?}\n", r.ptx, r.kernels),
            Err(e) => format!("error: {e}\n"),
        };
        out.push((name, text));
    }
    let race = |ptx: &str| match race_ptx(ptx, &RaceOptions::new(0)) {
        Ok(r) => format!("{}\n// kernels\n{:#?}\n", r.ptx, r.kernels),
        Err(e) => format!("error: {e}\n"),
    };
    out.push(("race-plain", race(ptx)));
    let init = |ptx: &str| match init_ptx_with(ptx, &InitOptions::new(0)) {
        Ok(r) => format!("{}\n// kernels\n{:#?}\n", r.ptx, r.kernels),
        Err(e) => format!("error: {e}\n"),
    };
    let host = InstrumentOptions::new().host_checks(true);
    let (raced, inited, both) = match instrument_ptx_with(ptx, &host) {
        Ok(r) => {
            let both = match race_ptx(&r.ptx, &RaceOptions::new(0)) {
                Ok(raced) => init(&raced.ptx),
                Err(e) => format!("error: {e}\n"),
            };
            (race(&r.ptx), init(&r.ptx), both)
        }
        Err(e) => (
            format!("error: {e}\n"),
            format!("error: {e}\n"),
            format!("error: {e}\n"),
        ),
    };
    out.push(("race-bounds", raced));
    out.push(("init-bounds", inited));
    out.push(("init-race-bounds", both));
    out
}

#[test]
#[ignore = "by hand: records or compares every rewrite's output (issue 36)"]
fn nvrtc_rewrite_corpus_records_or_compares() {
    if !nvrtc_or_skip() {
        return;
    }
    let Some(dir) = std::env::var_os("CUDACHECK_REWRITE_CORPUS_OUT").map(PathBuf::from) else {
        eprintln!("skipped: CUDACHECK_REWRITE_CORPUS_OUT is not set");
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    let (mut inputs, mut kernels, mut outputs) = (0, 0, 0);
    for (name, ptx) in corpus() {
        inputs += 1;
        let ptx = match ptx {
            Ok(p) => p,
            Err(e) => {
                std::fs::write(dir.join(format!("{name}.nvrtc-error")), e).unwrap();
                outputs += 1;
                continue;
            }
        };
        kernels += ptx.matches(".entry ").count();
        for (suffix, text) in rewrites(&ptx) {
            std::fs::write(dir.join(format!("{name}.{suffix}")), text).unwrap();
            outputs += 1;
        }
    }
    eprintln!(
        "{inputs} inputs, {kernels} kernels, {outputs} outputs in {}",
        dir.display()
    );
    let Some(base) = std::env::var_os("CUDACHECK_REWRITE_CORPUS_BASELINE").map(PathBuf::from)
    else {
        return;
    };
    let listing = |d: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect()
    };
    let (now, then) = (listing(&dir), listing(&base));
    let mut differ = Vec::new();
    for (name, text) in &now {
        match then.get(name) {
            Some(t) if t == text => {}
            Some(_) => differ.push(format!("differs: {name}")),
            None => differ.push(format!("new: {name}")),
        }
    }
    for name in then.keys().filter(|n| !now.contains_key(*n)) {
        differ.push(format!("missing: {name}"));
    }
    assert!(
        differ.is_empty(),
        "{} of {} outputs differ from {}:\n{}",
        differ.len(),
        then.len(),
        base.display(),
        differ.join("\n")
    );
    eprintln!(
        "all {} outputs byte-identical to {}",
        now.len(),
        base.display()
    );
}
