//! Pure tier: `cudacheck run` as a launcher, on commands that use no CUDA (the interposer's own
//! checks are `cudacheck-run`'s fake-driver tests and the GPU machine's `tests/run`). The
//! interposer the binary carries is written out and preloaded into the command, which must run
//! as it would without it: its output, its exit status, its children.

use std::process::Command;

fn run(args: &[&str], cache: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
        .arg("run")
        .args(args)
        // The interposer is written under the cache directory: a fresh one per test.
        .env("XDG_CACHE_HOME", cache)
        .env_remove("CUDACHECK_RUN_PRELOAD")
        .output()
        .expect("cudacheck runs");
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_command_runs_with_the_interposer_preloaded_and_keeps_its_output_and_status() {
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = run(
        &["--", "sh", "-c", "echo \"$LD_PRELOAD\"; echo out; exit 3"],
        cache.path(),
    );
    assert_eq!(code, 3, "{out}\n{err}");
    let mut lines = out.lines();
    let preload = lines.next().unwrap_or_default();
    assert!(
        preload.contains("cudacheck/run/libcudacheck_run-") && preload.ends_with(".so"),
        "{out}"
    );
    assert!(std::path::Path::new(preload).is_file(), "{preload}");
    assert_eq!(lines.next(), Some("out"));
    // The interposer loaded into `sh` and `echo` without a word: they use no CUDA.
    assert!(err.contains("no process of the command used CUDA"), "{err}");
    assert!(!err.contains("ERROR: ld.so"), "{err}");
}

#[test]
fn the_users_own_preloads_are_kept_after_ours() {
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
        .args(["run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""])
        .env("XDG_CACHE_HOME", cache.path())
        .env("LD_PRELOAD", "")
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !line.contains(':'),
        "an empty user list adds nothing: {line}"
    );
    assert!(line.ends_with(".so"), "{line}");
}

#[test]
fn options_reach_the_command_as_its_environment() {
    let cache = tempfile::tempdir().unwrap();
    let json = cache.path().join("f.jsonl");
    let (code, out, err) = run(
        &[
            "--races",
            "--no-bounds",
            "--stacks",
            "all",
            "--on-fault",
            "abort",
            "--error-exitcode",
            "9",
            "--json",
            json.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo $CUDACHECK_RUN_RACES $CUDACHECK_RUN_BOUNDS $CUDACHECK_RUN_STACKS \
             $CUDACHECK_RUN_ON_FAULT $CUDACHECK_RUN_ABORT_STATUS $CUDACHECK_RUN_JSON",
        ],
        cache.path(),
    );
    // Nothing was found: the command's own status, not --error-exitcode's.
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!("1 0 all abort 9 {}", json.display()),
        "{err}"
    );
    // The findings file starts empty for each run.
    assert_eq!(std::fs::read(&json).unwrap(), b"");
}

#[test]
fn a_command_that_cannot_start_is_named_with_status_127() {
    let cache = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&["--", "/nonexistent/program"], cache.path());
    assert_eq!(code, 127);
    assert!(
        err.contains("could not start `/nonexistent/program`"),
        "{err}"
    );
}

#[test]
fn a_command_killed_by_a_signal_exits_as_a_shell_reports_it() {
    let cache = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&["--", "sh", "-c", "kill -TERM $$"], cache.path());
    assert_eq!(code, 128 + 15, "{err}");
}
