//! NVRTC tier: `#[checked_kernel]` with an `arch` compiles the kernel at `cargo build` and
//! checks literal configurations against what only the compiled kernel knows (registers,
//! static shared memory). trybuild, like `pure_ui`; the cases live in `ui-nvrtc/`.
//!
//! Regenerate with `TRYBUILD=overwrite cargo test -p cudacheck-tests --test nvrtc_ui`, then
//! read every changed `.stderr`.

#[test]
fn nvrtc_ui() {
    if !cudacheck_tests::nvrtc_or_skip() {
        return;
    }
    std::env::set_var(
        "CUDACHECK_MANIFEST_DIR_OVERRIDE",
        env!("CARGO_MANIFEST_DIR"),
    );
    // Nothing prepared is read or written by these cases.
    std::env::set_var(
        "CUDACHECK_PREPARED_DIR",
        concat!(env!("CARGO_MANIFEST_DIR"), "/ui-nvrtc/no-prepared-files"),
    );
    std::env::remove_var("CUDACHECK_PREPARE");
    let t = trybuild::TestCases::new();
    t.compile_fail("ui-nvrtc/fail/*.rs");
    t.pass("ui-nvrtc/pass/*.rs");
}
