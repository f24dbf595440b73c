//! The compiler layer's layers hold. The table is the declaration order of modules: `lib.rs`
//! lists the crate's modules bottom up, and `nvrtc/mod.rs` lists `nvrtc`'s files bottom up in
//! `nvrtc`'s place (its `mod.rs`, which only declares and re-exports, on top of them). No file
//! may name a module listed after its own, by `crate::` path, by `super::` path or by a
//! relative `use`; `use` groups (`crate::nvrtc::{a::X, b::Y}`) count item by item, and a path
//! through a module's re-exports (`crate::nvrtc::Item`) counts as a use of that module. Comments,
//! doc links and strings are not uses. A module that must reach up has to move, or the order
//! has to change, with ARCHITECTURE.md's table.

#[path = "common/use_paths.rs"]
mod use_paths;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use use_paths::{module_of, named_paths, rs_files, strip};

/// The modules whose `mod.rs` order is a table of layers too (the others are one layer each).
const LAYERED: &[&str] = &["nvrtc"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A file's `mod x;` / `pub mod x;` / `pub(crate) mod x;` declarations, in order.
fn mod_order(text: &str) -> Vec<String> {
    let code = strip(text);
    let mut out = Vec::new();
    for l in code.lines().map(str::trim) {
        let decl = ["pub mod ", "pub(crate) mod ", "mod "]
            .iter()
            .find_map(|p| l.strip_prefix(p));
        if let Some((name, _)) = decl.and_then(|d| d.split_once(';')) {
            out.push(name.trim().to_string());
        }
    }
    out
}

/// The layer table, bottom up, as module paths (`nvrtc::ffi`): `lib.rs`'s order, with each
/// `layered` module's own order in its place, followed by the module itself.
fn table(read: &dyn Fn(&str) -> String, layered: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for m in mod_order(&read("lib.rs")) {
        if layered.contains(&m.as_str()) {
            for child in mod_order(&read(&format!("{m}/mod.rs"))) {
                out.push(format!("{m}::{child}"));
            }
        }
        out.push(m);
    }
    out
}

/// The table module a path names: its longest prefix listed in the table.
fn resolve<'a>(rank: &HashMap<&'a str, usize>, path: &[String]) -> Option<&'a str> {
    (1..=path.len()).rev().find_map(|n| {
        let p = path[..n].join("::");
        rank.get_key_value(p.as_str()).map(|(k, _)| *k)
    })
}

/// The uses of a later module in `files`: (file name, the file's module path, the table
/// module it belongs to, its text).
fn upward_uses(table: &[String], files: &[(String, Vec<String>, String, String)]) -> Vec<String> {
    let rank: HashMap<&str, usize> = table
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut wrong = Vec::new();
    for (name, module, owner, text) in files {
        let own = rank[owner.as_str()];
        for (line, path) in named_paths(text, module) {
            let Some(target) = resolve(&rank, &path) else {
                continue;
            };
            if rank[target] > own {
                wrong.push(format!(
                    "{name}:{line}: `{owner}` uses `{target}` (`{}`), listed after it",
                    path.join("::")
                ));
            }
        }
    }
    wrong
}

#[test]
fn no_module_uses_one_listed_after_it() {
    let read =
        |f: &str| std::fs::read_to_string(src().join(f)).unwrap_or_else(|e| panic!("src/{f}: {e}"));
    let table = table(&read, LAYERED);
    assert!(
        table.len() > 12 && table.iter().any(|m| m == "nvrtc::ffi"),
        "lib.rs and nvrtc/mod.rs list their modules: {table:?}"
    );
    let rank: HashMap<&str, usize> = table
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut all = Vec::new();
    rs_files(&src(), &src(), &mut all);
    let mut files = Vec::new();
    for f in all {
        let module = module_of(&f);
        if module.is_empty() {
            continue; // lib.rs: the root declares and re-exports, above every layer.
        }
        let owner = resolve(&rank, &module)
            .unwrap_or_else(|| panic!("{} is in no layer of {table:?}", f.display()));
        let text = read(&f.to_string_lossy());
        files.push((f.display().to_string(), module, owner.to_string(), text));
    }
    let wrong = upward_uses(&table, &files);
    assert!(wrong.is_empty(), "upward uses:\n{}", wrong.join("\n"));
}

#[test]
fn the_table_is_the_declaration_order() {
    let files: HashMap<&str, &str> = [
        (
            "lib.rs",
            "mod low;\npub mod mid; // trailing\npub(crate) mod high;\n",
        ),
        (
            "mid/mod.rs",
            "//! mod not_a_module;\nmod a;\npub(crate) mod b;\npub use a::X;\n",
        ),
    ]
    .into();
    let table = table(&|f: &str| files[f].to_string(), &["mid"]);
    assert_eq!(table, ["low", "mid::a", "mid::b", "mid", "high"]);
}

#[test]
fn the_checker_sees_an_upward_use() {
    let table: Vec<String> = ["low", "mid::a", "mid::b", "mid", "high"]
        .map(String::from)
        .to_vec();
    let file = |module: &str, text: &str| {
        let path: Vec<String> = module.split("::").map(String::from).collect();
        let owner = if module.starts_with("mid::") {
            module.to_string()
        } else {
            path[0].clone()
        };
        (module.to_string(), path, owner, text.to_string())
    };
    let files = [
        // Downward uses, and look-alikes that are not uses.
        file(
            "high",
            "use crate::low::f;\nuse crate::mid::{a::X, b::Y};\n// crate::high\n",
        ),
        file(
            "low",
            "/// [`f`](crate::high::f)\nconst S: &str = \"crate::high::g\";\n\
             const R: &str = r#\"crate::mid::b\"#;\nconst C: char = '\"'; /* crate::high */\n\
             fn g<'a>(x: &'a str) {}\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::low::h;\n}\n",
        ),
        file("mid::b", "use super::a::X;\nfn f() { super::a::g() }\n"),
        // Upward: a later sibling through `super::`, a group item, a facade re-export, a
        // relative `use` in the facade's own module, and `crate::` from the bottom.
        file("mid::a", "use super::b::Y;\n"),
        file("mid::a", "use crate::mid::{a::Z, b::{Y, W}};\n"),
        file("mid::b", "fn f() { let _ = crate::mid::Item; }\n"),
        file("low", "pub(crate) use crate::high::g as h;\n"),
        file("mid", "pub use b::Y;\nuse high_crate::Q;\n"),
    ];
    let wrong = upward_uses(&table, &files);
    let found: Vec<(&str, &str)> = wrong
        .iter()
        .map(|w| {
            let (at, rest) = w.split_once(": `").unwrap_or_default();
            let target = rest.split("` uses `").nth(1).unwrap_or_default();
            (at, target.split('`').next().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        found,
        [
            ("mid::a:1", "mid::b"),
            ("mid::a:1", "mid::b"),
            ("mid::a:1", "mid::b"),
            ("mid::b:1", "mid"),
            ("low:1", "high"),
        ],
        "{wrong:#?}"
    );
}
