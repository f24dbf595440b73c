//! `cudacheck prepare`: the examples crate's checked-in `.cudacheck/` is what a prepare writes
//! (its `--check`), which runs `cargo check` of that crate with NVRTC.

use std::path::Path;
use std::process::Command;

#[test]
fn nvrtc_prepare_check_finds_the_examples_up_to_date_and_a_changed_record() {
    if !cudacheck_tests::nvrtc_or_skip() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_cudacheck"))
            .args(["prepare", "--check", "--", "-p", "cudacheck-examples"])
            .current_dir(root)
            .env_remove("CUDACHECK_PREPARED_DIR")
            .output()
            .unwrap()
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("prepared resources are up to date (2 kernel build(s))"),
        "{stdout}"
    );
    // A record that no longer matches what the build compiles is found. (A copy of the
    // directory is changed, so the checked-in files stay as they are.)
    let dir = root.join("examples/.cudacheck");
    let scratch = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, scratch.path().join(p.file_name().unwrap())).unwrap();
    }
    let victim = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("saxpy"))
        .expect("a record of saxpy");
    let text = std::fs::read_to_string(&victim).unwrap();
    std::fs::write(&victim, text.replace("\"registers\": ", "\"registers\": 1")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
        .args(["prepare", "--check", "--compare-with"])
        .arg(scratch.path())
        .args(["--", "-p", "cudacheck-examples"])
        .current_dir(root)
        .env_remove("CUDACHECK_PREPARED_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("stale: ") && stdout.contains("saxpy"),
        "{stdout}"
    );
}
