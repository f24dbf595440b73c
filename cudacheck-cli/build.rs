//! Builds the interposer `cudacheck run` preloads (the `cudacheck-run` crate as a shared object
//! with its `interpose` feature) and hands its path to the binary, which carries it inside
//! (`include_bytes!`): `cargo install` of this crate then gives a working `cudacheck run` with
//! no other install step.
//!
//! `CUDACHECK_PRELOAD_SO=/path/to/libcudacheck_run.so` uses a shared object built beforehand
//! instead (the repository's scripts build it once for every binary that needs it).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CUDACHECK_PRELOAD_SO");
    let so = match std::env::var_os("CUDACHECK_PRELOAD_SO") {
        Some(p) => {
            let p = PathBuf::from(p);
            println!("cargo:rerun-if-changed={}", p.display());
            p
        }
        None => build_preload(),
    };
    println!("cargo:rustc-env=CUDACHECK_PRELOAD_SO_PATH={}", so.display());
}

fn build_preload() -> PathBuf {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let run_root = std::env::var_os("DEP_CUDACHECK_RUN_ROOT")
        .map(PathBuf::from)
        .expect("cudacheck-run (a dependency) gives its root");
    // The interposer's sources and those of the crates it is built from: a change to any of
    // them builds it again (cargo then decides what is fresh).
    for dir in [
        "src",
        "Cargo.toml",
        "../cudacheck/src",
        "../cudacheck-core/src",
        "../cudacheck-nvrtc/src",
    ] {
        let p = run_root.join(dir);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target_dir = out.join("preload");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "rustc",
        "--lib",
        "--features",
        "interpose",
        "--crate-type",
        "cdylib",
    ])
    .arg("--manifest-path")
    .arg(run_root.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir)
    // The outer build's own target directory is locked by it.
    .env_remove("CARGO_TARGET_DIR");
    if release {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build the interposer: {e}"));
    assert!(
        status.success(),
        "building the interposer (cudacheck-run as a shared object) failed; see above"
    );
    let so = target_dir
        .join(if release { "release" } else { "debug" })
        .join("libcudacheck_run.so");
    assert!(
        so.is_file(),
        "the interposer was not built at {}",
        so.display()
    );
    so
}
