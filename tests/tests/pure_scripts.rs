//! The checkers of the GPU scripts, run on made-up results here: `scripts/run-check.py`
//! (which judges `cudacheck run` on the programs of `tests/run` against `tests/run/expected.json`)
//! passes its self-test: the manifest loads, its markers are in the sources, every program's
//! cases are the manifest's, and each made-up wrong run is failed for its reason.

use std::path::Path;
use std::process::Command;

#[test]
fn the_run_mode_checker_passes_its_self_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(root.join("scripts/run-check.py"))
        .arg("--self-test")
        .output()
        .expect("python3 runs (the GPU scripts need it too)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("self-test: all passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("FAIL"), "{text}");
}
