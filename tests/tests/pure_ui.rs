//! Pure tier: the `#[checked_kernel]` diagnostics, with trybuild. Every file under
//! `ui/<category>/` but `pass/` holds one mistake and its reviewed `.stderr`; `ui/pass/` must
//! compile and run (without a GPU: the pass cases only type-check their launches).
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p cudacheck-tests --test
//! pure_ui`, then read every changed `.stderr`: the caret must sit under the offending token.

/// The categories of compile-fail cases, one directory each under `ui/`.
const COMPILE_FAIL: &[&str] = &[
    "attr",
    "item",
    "source",
    "template",
    "signature",
    "layout",
    "limits",
    "ptx",
];

#[test]
fn ui() {
    // trybuild builds each case in a crate under `target/tests/`, so CARGO_MANIFEST_DIR there is
    // not this crate's; the macro resolves `file = "ui/cuda/..."` against this instead.
    std::env::set_var(
        "CUDACHECK_MANIFEST_DIR_OVERRIDE",
        env!("CARGO_MANIFEST_DIR"),
    );
    // The pure tier: no NVRTC, so an `arch` checks against the architecture's table and what
    // the source tells (`nvrtc_ui` covers the compiled kernel), and nothing prepared is read.
    std::env::set_var("CUDACHECK_NVRTC", "none");
    std::env::set_var(
        "CUDACHECK_PREPARED_DIR",
        concat!(env!("CARGO_MANIFEST_DIR"), "/ui/no-prepared-files"),
    );
    let t = trybuild::TestCases::new();
    for category in COMPILE_FAIL {
        t.compile_fail(format!("ui/{category}/*.rs"));
    }
    t.pass("ui/pass/*.rs");
}

/// Every category directory is listed above, so no case is silently skipped.
#[test]
fn every_category_runs() {
    let ui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
    let mut found: Vec<String> = std::fs::read_dir(&ui)
        .expect("tests/ui exists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "pass" && n != "cuda")
        .collect();
    found.sort();
    let mut listed: Vec<String> = COMPILE_FAIL.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed);
}
