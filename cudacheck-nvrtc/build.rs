//! The files of `src/nvrtc/` (the code between a compile request and NVRTC), listed from the
//! directory for the module cache's key (`src/cache/key.rs`): a file added there is covered
//! without anyone remembering to list it.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = manifest.join("src/nvrtc");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    paths.sort();
    let mut out = String::from("// Written by build.rs: every `.rs` file of src/nvrtc, sorted.\n");
    writeln!(out, "const NVRTC_FILES: &[&str] = &[").unwrap();
    for p in &paths {
        writeln!(out, "    include_str!({:?}),", p.display().to_string()).unwrap();
    }
    writeln!(out, "];").unwrap();
    let dest =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("nvrtc_files.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
}
