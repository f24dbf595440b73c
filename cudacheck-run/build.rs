//! Tells crates that depend on this one where its sources are (`DEP_CUDACHECK_RUN_ROOT`):
//! `cudacheck-cli`'s build script builds the interposer from them, wherever cargo unpacked
//! them (this workspace, or the registry for `cargo install cudacheck-cli`).
fn main() {
    println!(
        "cargo:root={}",
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")
    );
    println!("cargo:rerun-if-changed=build.rs");
}
