//! The source files whose text keys the caches of what they produce (a bounds- or race-checked
//! build, NVRTC's output for a transformed source): a build stored by one version of that code
//! must not answer for another. The lists are read from the directories here, so a file added
//! to one of them is covered without anyone remembering to list it; `src/sources.rs` gives them
//! their names and says which list covers what.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// (list, directories under `src/` whose every `.rs` file it holds, at any depth, single files
/// it adds).
const LISTS: &[(&str, &[&str], &[&str])] = &[
    ("INSTRUMENT", &["instrument", "site"], &[]),
    ("RACE", &["race"], &[]),
    ("INIT", &["init"], &[]),
    ("IR", &["ir"], &[]),
    ("TEXT", &["text"], &[]),
    ("TRANSFORM", &["source/host"], &["source/macros.rs"]),
];

/// Files that only test the code beside them: they change no output.
fn is_test_only(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
}

/// Every `.rs` file under `dir`, its subdirectories' too (a module split into a directory,
/// `instrument/guard/`), but for test-only ones.
fn rust_files(dir: &Path, paths: &mut Vec<PathBuf>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, paths);
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test_only(&path) {
            paths.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let src = manifest.join("src");
    let mut out = String::from("// Written by build.rs: the files of each list, sorted.\n");
    for (name, dirs, files) in LISTS {
        let mut paths = Vec::new();
        for dir in *dirs {
            rust_files(&src.join(dir), &mut paths);
        }
        paths.extend(files.iter().map(|f| src.join(f)));
        paths.sort();
        writeln!(out, "pub const {name}: &[&str] = &[").unwrap();
        for p in &paths {
            writeln!(out, "    include_str!({:?}),", p.display().to_string()).unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("sources.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
}
