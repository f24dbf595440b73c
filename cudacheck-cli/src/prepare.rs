//! `cudacheck prepare`: `cargo check` with `CUDACHECK_PREPARE` set, so every `#[checked_kernel]`
//! with an `arch` compiles its kernel and records the resources in its crate's `.cudacheck/`;
//! then the entries no kernel wrote any more are removed. `--check` writes into a scratch
//! directory instead and compares (CI: the checked-in files must be what a prepare would write).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::SystemTime;

use cudacheck::prepared::{DIR_NAME, ENV_DIR, ENV_PREPARE};

use crate::args::PrepareArgs;

pub fn run(args: &PrepareArgs) -> ExitCode {
    match prepare(args) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("error: {why}");
            ExitCode::from(2)
        }
    }
}

fn prepare(args: &PrepareArgs) -> Result<ExitCode, String> {
    if let Err(e) = cudacheck::nvrtc::nvrtc() {
        return Err(format!(
            "`cudacheck prepare` compiles the kernels and needs NVRTC: {e}"
        ));
    }
    let packages = package_dirs(&args.cargo_args)?;
    let scratch =
        tempfile::tempdir().map_err(|e| format!("cannot make a scratch directory: {e}"))?;
    let started = SystemTime::now();
    // A value of the run's own: the expansions read it with `option_env!`, so cargo expands
    // every checked kernel again, even one it expanded with an earlier prepare.
    let run_id = format!(
        "{}-{}",
        std::process::id(),
        started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .arg("check")
        .arg("--all-targets")
        .args(&args.cargo_args)
        .env(ENV_PREPARE, &run_id);
    if args.check {
        cargo.env(ENV_DIR, scratch.path());
    } else {
        cargo.env_remove(ENV_DIR);
    }
    let status = cargo
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`cargo check` failed ({status}); nothing was removed. Fix the build first"
        ));
    }
    if args.check {
        let kept = match &args.compare_with {
            Some(dir) => vec![dir.clone()],
            None => packages.iter().map(|p| p.join(DIR_NAME)).collect(),
        };
        return Ok(compare(scratch.path(), &kept));
    }
    let mut written = 0;
    for dir in packages.iter().map(|p| p.join(DIR_NAME)) {
        for (name, path) in entries(&dir) {
            let fresh = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= started);
            if fresh {
                written += 1;
            } else {
                std::fs::remove_file(&path)
                    .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
                println!("removed {} (no kernel uses it any more)", name);
            }
        }
    }
    let dirs: Vec<String> = packages
        .iter()
        .map(|p| p.join(DIR_NAME))
        .filter(|d| d.is_dir())
        .map(|d| d.display().to_string())
        .collect();
    println!(
        "prepared {written} kernel build(s); commit {}",
        if dirs.is_empty() {
            "nothing (no `#[checked_kernel]` names an `arch`)".to_string()
        } else {
            dirs.join(", ")
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The scratch directory's entries against the checked-in ones in `dirs`.
fn compare(scratch: &Path, dirs: &[PathBuf]) -> ExitCode {
    let made = entries(scratch);
    let mut kept: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in dirs {
        kept.extend(entries(dir));
    }
    let mut differ = 0;
    for (name, path) in &made {
        match kept.get(name) {
            None => {
                differ += 1;
                println!("missing: {name} (a kernel's resources are not checked in)");
            }
            Some(old) if std::fs::read(old).ok() != std::fs::read(path).ok() => {
                differ += 1;
                println!("stale: {}", old.display());
            }
            Some(_) => {}
        }
    }
    for (name, path) in &kept {
        if !made.contains_key(name) {
            differ += 1;
            println!("unused: {} (no kernel writes it)", path.display());
        }
    }
    if differ == 0 {
        println!(
            "prepared resources are up to date ({} kernel build(s))",
            made.len()
        );
        ExitCode::SUCCESS
    } else {
        println!("{differ} prepared file(s) differ: run `cudacheck prepare` and commit the result");
        ExitCode::from(1)
    }
}

/// The `.json` entries of a prepared directory, by file name.
fn entries(dir: &Path) -> BTreeMap<String, PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    read.filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| Some((p.file_name()?.to_string_lossy().into_owned(), p)))
        .collect()
}

/// The directories of the workspace's packages (`cargo metadata --no-deps`), with the
/// `--manifest-path` the user passed, if any.
fn package_dirs(cargo_args: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["metadata", "--no-deps", "--format-version", "1"]);
    let mut it = cargo_args.iter();
    while let Some(a) = it.next() {
        if a == "--manifest-path" {
            if let Some(p) = it.next() {
                cmd.args(["--manifest-path", p]);
            }
        } else if let Some(p) = a.strip_prefix("--manifest-path=") {
            cmd.args(["--manifest-path", p]);
        }
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cargo metadata's output is not JSON: {e}"))?;
    let dirs = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["manifest_path"].as_str())
        .filter_map(|m| Path::new(m).parent().map(Path::to_path_buf))
        .collect();
    Ok(dirs)
}
