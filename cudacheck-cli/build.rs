//! Builds the interposer `cudacheck run` preloads (the `cudacheck-run` crate as a shared object
//! with its `interpose` feature) and hands its path to the binary, which carries it inside
//! (`include_bytes!`): `cargo install` of this crate then gives a working `cudacheck run` with
//! no other install step.
//!
//! `CUDACHECK_PRELOAD_SO=/path/to/libcudacheck_run.so` uses a shared object built beforehand
//! instead (the repository's scripts build it once for every binary that needs it).
//!
//! Cargo cannot build a dependency as a shared object, so this script runs cargo on
//! `cudacheck-run`'s sources, wherever the outer build found them (`DEP_CUDACHECK_RUN_ROOT`):
//! - in this repository (a workspace member): there, with the workspace's lockfile;
//! - unpacked from a package (`cargo install cudacheck-cli`, the local registry that
//!   `cargo publish --dry-run` verifies against, a vendor directory): such sources are not to be
//!   written to and belong to no workspace, and the registry their `cudacheck*` dependencies came
//!   from may be one the inner cargo does not know (publish's). So a copy in `OUT_DIR`, a
//!   workspace of its own, built `--offline` (the outer build downloaded every crate it needs),
//!   with the `cudacheck*` crates unpacked beside it patched in: the interposer is built from
//!   the very sources the CLI is.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CUDACHECK_PRELOAD_SO");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = if let Some(p) = std::env::var_os("CUDACHECK_PRELOAD_SO") {
        let p = PathBuf::from(p);
        println!("cargo:rerun-if-changed={}", p.display());
        p
    } else if std::env::var_os("DOCS_RS").is_some() {
        // docs.rs documents libraries only and builds offline; an empty stand-in keeps a
        // `cargo doc` there from running cargo again.
        let p = out.join("libcudacheck_run.so");
        fs::write(&p, b"").expect("OUT_DIR is writable");
        p
    } else {
        build_preload(&out)
    };
    println!("cargo:rustc-env=CUDACHECK_PRELOAD_SO_PATH={}", so.display());
}

fn build_preload(out: &Path) -> PathBuf {
    let run_root = std::env::var_os("DEP_CUDACHECK_RUN_ROOT")
        .map(PathBuf::from)
        .expect("cudacheck-run (a dependency) gives its root");
    let siblings = siblings(&run_root);
    // The interposer's sources and those of the crates it is built from: a change to any of
    // them builds it again (cargo then decides what is fresh).
    for dir in std::iter::once(&run_root).chain(siblings.iter().map(|(_, d)| d)) {
        for p in ["src", "Cargo.toml", "build.rs"] {
            let p = dir.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }

    // `cargo package` keeps the manifest as written beside the one it normalized.
    let packaged = run_root.join("Cargo.toml.orig").is_file();
    let manifest = if packaged {
        let copy = out.join("cudacheck-run");
        copy_package(&run_root, &copy, &siblings);
        copy.join("Cargo.toml")
    } else {
        run_root.join("Cargo.toml")
    };

    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
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
    .arg(&manifest)
    .arg("--target-dir")
    .arg(&target_dir)
    // Named even when it is the host: a `build.target` of the user's configuration would
    // otherwise decide where the shared object lands.
    .args(["--target", &target])
    // The outer build's own target directory is locked by it.
    .env_remove("CARGO_TARGET_DIR");
    if packaged {
        cmd.arg("--offline");
    }
    if release {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build the interposer: {e}"));
    assert!(
        status.success(),
        "building the interposer (cudacheck-run as a shared object, from {}) failed; see above",
        manifest.display()
    );
    let so = target_dir
        .join(&target)
        .join(if release { "release" } else { "debug" })
        .join("libcudacheck_run.so");
    assert!(
        so.is_file(),
        "the interposer was not built at {}",
        so.display()
    );
    so
}

/// The `cudacheck*` crates `cudacheck-run` is built from (its dependencies, theirs, and so on),
/// each with the directory holding its sources: beside `cudacheck-run`'s, named as it is
/// (`cudacheck-core` in the repository, `cudacheck-core-0.1.0` in a registry). A crate found
/// nowhere is left out; the inner build then looks for it as for any other dependency.
fn siblings(run_root: &Path) -> Vec<(String, PathBuf)> {
    let (Some(parent), Some(suffix)) = (
        run_root.parent(),
        run_root
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("cudacheck-run")),
    ) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut todo = ours(&run_root.join("Cargo.toml"));
    while let Some(name) = todo.pop() {
        if found.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let dir = parent.join(format!("{name}{suffix}"));
        if dir.join("Cargo.toml").is_file() {
            todo.extend(ours(&dir.join("Cargo.toml")));
            found.push((name, dir));
        }
    }
    found
}

/// The `cudacheck*` crates among a manifest's dependencies, in either form they take: as the
/// repository writes them (`cudacheck-core.workspace = true` under `[dependencies]`) and as
/// `cargo package` does (a `[dependencies.cudacheck-core]` table).
fn ours(manifest: &Path) -> Vec<String> {
    let text = fs::read_to_string(manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()));
    let mut section = String::new();
    let mut names = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            section = header.trim_end_matches(']').trim().to_string();
            if let Some(name) = section.strip_prefix("dependencies.") {
                names.push(name.trim_matches('"').to_string());
            }
        } else if section == "dependencies" {
            let key = line.split(['.', '=', ' ']).next().unwrap_or("");
            names.push(key.trim_matches('"').to_string());
        }
    }
    names.retain(|n| n.starts_with("cudacheck"));
    names
}

/// `cudacheck-run`'s package copied to `to`, its manifest made the root of a workspace of its
/// own (the copy may lie inside another one's directory) that takes the `cudacheck*` crates
/// from where they were found.
fn copy_package(from: &Path, to: &Path, siblings: &[(String, PathBuf)]) {
    if to.exists() {
        fs::remove_dir_all(to).unwrap_or_else(|e| panic!("cannot clear {}: {e}", to.display()));
    }
    copy_dir(from, to);
    let manifest = to.join("Cargo.toml");
    let mut text = without_dev_dependencies(&fs::read_to_string(&manifest).expect("copied"));
    text.push_str("\n[workspace]\n\n[patch.crates-io]\n");
    for (name, dir) in siblings {
        text.push_str(&format!("{name} = {{ path = {} }}\n", toml_string(dir)));
    }
    fs::write(&manifest, text)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", manifest.display()));
}

/// The manifest less its `[dev-dependencies.*]` tables (cargo's normalized form): offline,
/// the inner build could resolve only crates the outer build downloaded, and it needs none of
/// those.
fn without_dev_dependencies(manifest: &str) -> String {
    let mut keep = true;
    let mut text = String::new();
    for line in manifest.lines() {
        if let Some(header) = line.trim().strip_prefix('[') {
            keep = !header.starts_with("dev-dependencies");
        }
        if keep {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("cannot create {}: {e}", to.display()));
    for entry in
        fs::read_dir(from).unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()))
    {
        let entry = entry.expect("a directory entry");
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        // A lockfile of the package would pin what the outer build may not have downloaded;
        // the inner build resolves offline against what it has.
        if entry.file_name() == "Cargo.lock" || entry.file_name() == "target" {
            continue;
        }
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            fs::copy(&src, &dst).unwrap_or_else(|e| panic!("cannot copy {}: {e}", src.display()));
        }
    }
}

/// A TOML basic string holding the path.
fn toml_string(p: &Path) -> String {
    let s = p.to_str().expect("a registry path is UTF-8");
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
