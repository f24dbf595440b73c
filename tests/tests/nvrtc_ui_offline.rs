//! `#[checked_kernel]` in a build with no NVRTC (`CUDACHECK_NVRTC=none`): the resources
//! `cudacheck prepare` recorded in `ui-offline/prepared/` are checked instead (for PTX too,
//! with no nvJitLink: `CUDACHECK_NVJITLINK=none`), a stale record is
//! an error that says how to refresh it, and a kernel with no record builds with the checks
//! the source and the architecture decide. trybuild; the cases live in `ui-offline/`.
//!
//! The records are what a prepare writes: regenerate them (after changing `ui/cuda/heavy.cu` or
//! `stale.cu`) with `CUDACHECK_UI_OFFLINE_PREPARE=1 cargo test -p cudacheck-tests --test
//! nvrtc_ui_offline`, which builds the cases with NVRTC into that directory and then fails on
//! purpose; run it again without the variable.

use std::path::Path;

const PREPARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ui-offline/prepared");

#[test]
fn nvrtc_ui_offline() {
    std::env::set_var(
        "CUDACHECK_MANIFEST_DIR_OVERRIDE",
        env!("CARGO_MANIFEST_DIR"),
    );
    if std::env::var_os("CUDACHECK_UI_OFFLINE_PREPARE").is_some() {
        std::env::set_var("CUDACHECK_PREPARED_DIR", PREPARED);
        std::env::set_var("CUDACHECK_PREPARE", "ui-offline");
        let t = trybuild::TestCases::new();
        // Not `nothing_prepared.rs`: its kernel must have no record.
        t.pass("ui-offline/fail/*.rs");
        t.pass("ui-offline/pass/prepared_*.rs");
        drop(t);
        panic!("records written to {PREPARED}; run the test again without the variable");
    }
    // The records as checked in, with `stale.cu`'s marked as taken from an older source.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-offline-prepared");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut marked = 0;
    for entry in std::fs::read_dir(PREPARED).expect("ui-offline/prepared exists") {
        let path = entry.unwrap().path();
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        if record["source"] == "ui/cuda/stale.cu" {
            record["fingerprint"] = serde_json::Value::String("0".repeat(64));
            marked += 1;
        }
        let out = dir.join(path.file_name().unwrap());
        std::fs::write(out, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    }
    assert_eq!(
        marked, 1,
        "ui-offline/prepared holds one record of stale.cu"
    );
    std::env::set_var("CUDACHECK_PREPARED_DIR", &dir);
    std::env::set_var("CUDACHECK_NVRTC", "none");
    std::env::set_var("CUDACHECK_NVJITLINK", "none");
    std::env::remove_var("CUDACHECK_PREPARE");
    let t = trybuild::TestCases::new();
    t.compile_fail("ui-offline/fail/*.rs");
    t.pass("ui-offline/pass/*.rs");
}
