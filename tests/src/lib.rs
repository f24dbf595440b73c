//! Shared helpers for the integration tests.
//!
//! The GPU tier starts each test with [`gpu_or_skip`]: without a driver or a device it prints
//! a line starting `skipped (GPU tier): ` and the test passes, unless `CUDACHECK_REQUIRE_GPU=1`
//! (set where a GPU is expected), where the missing GPU is a failure.

use std::path::PathBuf;
use std::sync::Arc;

use cudacheck::cudarc::driver::CudaStream;
use cudacheck::nvrtc::CudaSource;

#[cfg(doctest)]
pub mod docs;
pub mod host_checks;
pub mod matrix;
pub mod ptx;

/// The kind of a refused launch, or a panic naming what came instead.
///
/// # Panics
///
/// When `e` is not `Error::Launch`.
pub fn launch_kind(e: &cudacheck::Error) -> &cudacheck::LaunchErrorKind {
    match e {
        cudacheck::Error::Launch(l) => &l.kind,
        other => panic!("expected a launch error, got: {}", chain(other)),
    }
}

/// The prefix every GPU-tier skip line starts with.
pub const GPU_SKIP_PREFIX: &str = "skipped (GPU tier): ";

/// A stream on device 0, or `None` (after printing why) when there is no driver or no device.
///
/// The driver is looked for with `libloading` before any cudarc call (cudarc panics when
/// `libcuda.so.1` is missing); see `cudacheck::device_count`.
///
/// # Panics
///
/// When `CUDACHECK_REQUIRE_GPU=1` and no GPU is usable.
pub fn gpu_or_skip() -> Option<Arc<CudaStream>> {
    let reason = match cudacheck::device_count() {
        Err(e) => e.to_string(),
        Ok(0) => "no CUDA device: the driver reports 0 devices".to_string(),
        Ok(_) => match cudacheck::default_stream(0) {
            Ok(s) => return Some(s),
            Err(e) => format!("device 0 is not usable: {e}"),
        },
    };
    if std::env::var("CUDACHECK_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("CUDACHECK_REQUIRE_GPU=1 but no GPU is usable: {reason}");
    }
    println!("{GPU_SKIP_PREFIX}{reason}");
    None
}

/// A stream on each of devices `0..n` (each device's primary context's default stream), or
/// `None` (after printing why) when fewer than `n` devices are usable.
///
/// Multi-device tests run on the two-GPU machine; elsewhere they skip, unless
/// `CUDACHECK_REQUIRE_GPUS` is set to `n` or more, where too few devices is a failure.
///
/// # Panics
///
/// When `CUDACHECK_REQUIRE_GPUS` asks for at least `n` devices and fewer are usable.
pub fn gpus_or_skip(n: usize) -> Option<Vec<Arc<CudaStream>>> {
    let reason = match cudacheck::device_count() {
        Err(e) => e.to_string(),
        Ok(have) if have < n => {
            format!("this test needs {n} CUDA devices; the driver reports {have}")
        }
        Ok(_) => match (0..n).map(cudacheck::default_stream).collect() {
            Ok(streams) => return Some(streams),
            Err(e) => format!("a device is not usable: {e}"),
        },
    };
    let required = std::env::var("CUDACHECK_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if required >= n {
        panic!("CUDACHECK_REQUIRE_GPUS={required} but {reason}");
    }
    println!("{GPU_SKIP_PREFIX}{reason}");
    None
}

/// The repository's root (the workspace directory).
///
/// `CUDACHECK_REPO` wins when set: test binaries carried to the GPU machine run from another
/// directory than the one they were built in (scripts/gpu-run.sh sets it).
pub fn repo_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CUDACHECK_REPO") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// The user documentation: the README, then every page of `docs/`, sorted.
///
/// # Panics
///
/// When `docs/` cannot be read (a broken checkout, not a test outcome).
pub fn doc_pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap_or_else(|e| panic!("docs/: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// `kernels/<file>` of the repository, as a source.
///
/// # Panics
///
/// When the file cannot be read (a broken checkout, not a test outcome).
pub fn kernel_source(file: &str) -> CudaSource {
    let path = repo_root().join("kernels").join(file);
    CudaSource::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Every `kernels/*.cu` file name, sorted.
pub fn kernel_files() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo_root().join("kernels"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".cu"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every `.cu` file of `kernels/` and of the benchmark set (`bench/kernels/`), as paths from the
/// repository's root, sorted.
pub fn corpus_files() -> Vec<String> {
    let mut v: Vec<String> = kernel_files()
        .iter()
        .map(|f| format!("kernels/{f}"))
        .collect();
    if let Ok(rd) = std::fs::read_dir(repo_root().join("bench/kernels")) {
        v.extend(
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".cu"))
                .map(|n| format!("bench/kernels/{n}")),
        );
    }
    v.sort();
    v
}

/// Runs the current test binary again in a child process with only `test` selected and
/// `vars` set, and returns its exit success and combined output. Used by tests whose subject
/// (a poisoned context, a once-per-process setting) must not leak into other tests.
///
/// # Panics
///
/// When the test binary cannot be started.
pub fn run_in_child(test: &str, vars: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let mut cmd = std::process::Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run the test binary: {e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The variable a child process started by [`child_passes`] runs with.
pub const GPU_CHILD_VAR: &str = "CUDACHECK_GPU_CHILD";

/// Whether this process is a child started by [`child_passes`]: a `child_` test does its
/// work only then, and returns at once in a normal run.
pub fn is_gpu_child() -> bool {
    std::env::var(GPU_CHILD_VAR).as_deref() == Ok("1")
}

/// Runs `test` of this test binary in a child process with [`GPU_CHILD_VAR`] set, prints its
/// output (its measurements belong in the GPU run's log) and asserts that it ran and passed.
/// For tests whose subject (a sticky fault, a device-wide setting) outlives them.
///
/// # Panics
///
/// When the child did not run `test` or it failed.
pub fn child_passes(test: &str) {
    let (ok, out) = run_in_child(test, &[(GPU_CHILD_VAR, "1")]);
    println!("{out}");
    assert!(out.contains("1 passed"), "child {test} did not run:\n{out}");
    assert!(ok, "child {test} failed:\n{out}");
}

/// An error and all its sources, one per line: what a person reads in a report.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str("\n  caused by: ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// Whether NVRTC is available; when it is not, prints a line starting `skipped (NVRTC tier): `
/// and returns `false`, unless `CUDACHECK_REQUIRE_NVRTC=1` (as `scripts/test.sh` and CI set),
/// where a missing NVRTC is a failure.
///
/// # Panics
///
/// When `CUDACHECK_REQUIRE_NVRTC=1` and NVRTC cannot be loaded.
pub fn nvrtc_or_skip() -> bool {
    match cudacheck::nvrtc::nvrtc() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("CUDACHECK_REQUIRE_NVRTC").as_deref() == Ok("1") {
                panic!("CUDACHECK_REQUIRE_NVRTC=1 but NVRTC was not found:\n{e}");
            }
            // Name the explicit setting when there is one: it is what the user got wrong.
            let explicit = e
                .searched
                .iter()
                .find(|a| a.step == cudacheck::nvrtc::SearchStep::EnvVar && a.why_not != "not set");
            let reason = match explicit {
                Some(a) => format!("{}: {}", a.place, a.why_not),
                None => format!(
                    "NVRTC not found in {} places; run scripts/setup-cuda.sh or set CUDACHECK_NVRTC",
                    e.searched.len()
                ),
            };
            println!("skipped (NVRTC tier): {reason}");
            false
        }
    }
}

/// `src` compiled to PTX for `arch` by NVRTC, bounds-instrumented (with host checks),
/// race-instrumented for launches with `dynamic` bytes of dynamic shared memory, and assembled
/// by nvJitLink (so ptxas accepts the rewrite). Panics naming the file on any failure.
pub fn race_build(
    src: &CudaSource,
    arch: cudacheck_core::Arch,
    dynamic: u32,
) -> cudacheck_core::race::RacePtx {
    race_build_with(
        src,
        arch,
        cudacheck_core::instrument::InstrumentOptions::new().host_checks(true),
        cudacheck_core::race::RaceOptions::new(dynamic),
    )
}

/// [`race_build`] as a launch of one shape builds it: the bounds rewrite and the race rewrite
/// both made for `block` and `dynamic` bytes of dynamic shared memory (the race rewrite then
/// proves accesses thread-private for that block). Panics naming the file on any failure.
pub fn race_build_for(
    src: &CudaSource,
    arch: cudacheck_core::Arch,
    block: [u32; 3],
    dynamic: u32,
) -> cudacheck_core::race::RacePtx {
    race_build_with(
        src,
        arch,
        cudacheck_core::instrument::InstrumentOptions::new()
            .block(block)
            .dynamic_shared_bytes(dynamic)
            .host_checks(true),
        cudacheck_core::race::RaceOptions::new(dynamic).block(block),
    )
}

fn race_build_with(
    src: &CudaSource,
    arch: cudacheck_core::Arch,
    bounds: cudacheck_core::instrument::InstrumentOptions,
    races: cudacheck_core::race::RaceOptions,
) -> cudacheck_core::race::RacePtx {
    use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions};
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let out = compile(src, &opts).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    let ptx = out.ptx.expect("asked for PTX");
    let inst = cudacheck_core::instrument::instrument_ptx_with(&ptx, &bounds)
        .unwrap_or_else(|e| panic!("{}: {e}", src.name));
    let r = cudacheck_core::race::race_ptx(&inst.ptx, &races)
        .unwrap_or_else(|e| panic!("{}: {e}", src.name));
    assemble_ptx(&r.ptx, arch, &src.name)
        .unwrap_or_else(|e| panic!("{} ({}): {e}", src.name, arch.sm_name()));
    r
}

/// One kernel of a race test file (`tests/cuda/races/`): its name, its lines (0-based, from
/// its signature to the next kernel's) and its `// launch:` line's block and dynamic shared
/// bytes (the line directly above the signature).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceLaunch {
    pub name: String,
    pub lines: std::ops::Range<usize>,
    pub block: u32,
    pub shared: u32,
}

/// Every kernel of a race test file with its launch line ([`RaceLaunch`]).
pub fn race_launches(src: &CudaSource) -> Vec<RaceLaunch> {
    let lines: Vec<&str> = src.text.lines().collect();
    let mut out: Vec<RaceLaunch> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("extern \"C\" __global__ void ") {
            let name = rest.split('(').next().unwrap().trim().to_string();
            let field = |f: &str| -> u32 {
                lines[k - 1]
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{f}=")))
                    .unwrap_or_else(|| panic!("{name}: no `{f}=` on the launch line"))
                    .parse()
                    .unwrap()
            };
            if let Some(last) = out.last_mut() {
                last.lines.end = k;
            }
            out.push(RaceLaunch {
                lines: k..lines.len(),
                block: field("block"),
                shared: field("shared"),
                name,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_found() {
        let files = kernel_files();
        assert!(files.contains(&"saxpy.cu".to_string()), "{files:?}");
        assert!(kernel_source("saxpy.cu").text.contains("saxpy"));
    }
}
