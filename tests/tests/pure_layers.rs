//! Pure tier: `cudacheck-core`'s layers hold. [`LAYERS`] lists its modules bottom up, a row
//! at a time; a module may use the modules of the rows below its own and no other: not one of
//! a row above, and not a sibling of its own row (the bounds, race and init rewrites are
//! siblings over `ir` and `site`, so none of them names another). Uses are read as
//! `cudacheck-nvrtc/tests/layers.rs` reads them (`crate::`, `super::`, `self::` and relative
//! `use` paths, `use` groups item by item; comments, doc links and strings are not uses), and a
//! path through an item `lib.rs` re-exports (`crate::Arch`) counts as a use of the module it
//! comes from. Files named `tests.rs` are left out, as `cudacheck-core/build.rs` leaves them out
//! of the cache keys: tests may compose the layers (an init-checked build is made over a
//! race-checked one). A module that must reach across has to move, or the table has to change,
//! with ARCHITECTURE.md's module map.

#[path = "../../cudacheck-nvrtc/tests/common/use_paths.rs"]
mod use_paths;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use use_paths::{module_of, named_paths, rs_files};

/// `cudacheck-core`'s modules, bottom up, a row per layer.
const LAYERS: &[&[&str]] = &[
    // Leaves: names, extents, the lists of files that key the caches, image formats.
    &["sources", "arch", "dim", "image"],
    &["limits", "resources", "text"],
    // The validator, the CUBIN reader, the CUDA source model, the PTX model.
    &["validate", "cubin", "source", "ir"],
    // What the three rewrites and their reports share.
    &["site"],
    // The three rewrites.
    &["instrument", "race", "init"],
    // Kernels of a PTX module as a launch sees them.
    &["ptx_entry"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cudacheck-core/src")
        .canonicalize()
        .expect("cudacheck-core/src exists beside tests/")
}

/// The row of each module of the table.
fn rows(layers: &[&[&str]]) -> HashMap<String, usize> {
    layers
        .iter()
        .enumerate()
        .flat_map(|(r, row)| row.iter().map(move |m| (m.to_string(), r)))
        .collect()
}

/// `lib.rs`'s `mod x;` declarations (any visibility).
fn declared(lib: &str) -> Vec<String> {
    let code = use_paths::strip(lib);
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.split_once(';')?.0.trim().to_string())
        })
        .collect()
}

/// The items `lib.rs` re-exports at the crate root (`pub use arch::Arch;`), by name, with the
/// module each comes from.
fn root_items(lib: &str) -> HashMap<String, String> {
    named_paths(lib, &[])
        .into_iter()
        .filter(|(_, p)| p.len() > 1)
        .filter_map(|(_, p)| Some((p.last()?.clone(), p.first()?.clone())))
        .collect()
}

/// One file to check: its name, module path, and text.
struct File {
    name: String,
    module: Vec<String>,
    text: String,
}

/// Every use in `files` of a module of a row above the user's own, or of a sibling.
fn crossing_uses(
    layers: &[&[&str]],
    roots: &HashMap<String, String>,
    files: &[File],
) -> Vec<String> {
    let row = rows(layers);
    let mut wrong = Vec::new();
    for f in files {
        let Some(owner) = f.module.first() else {
            continue;
        };
        let Some(&own) = row.get(owner) else {
            wrong.push(format!(
                "{}: module `{owner}` is in no row of the table",
                f.name
            ));
            continue;
        };
        for (line, path) in named_paths(&f.text, &f.module) {
            let Some(first) = path.first() else {
                continue;
            };
            let target = if row.contains_key(first) {
                first.clone()
            } else if let Some(m) = roots.get(first).filter(|_| path.len() == 1) {
                m.clone()
            } else {
                continue;
            };
            if target == *owner {
                continue;
            }
            let r = row[&target];
            let how = if r > own {
                "a layer above it"
            } else if r == own {
                "a sibling"
            } else {
                continue;
            };
            wrong.push(format!(
                "{}:{line}: `{owner}` uses `{target}` (`{}`), {how}",
                f.name,
                path.join("::")
            ));
        }
    }
    wrong
}

#[test]
fn no_core_module_uses_a_sibling_or_one_above_it() {
    let root = src();
    let lib = std::fs::read_to_string(root.join("lib.rs")).expect("lib.rs");
    // The table and `lib.rs` name the same modules.
    let mut in_table: Vec<String> = LAYERS
        .iter()
        .flat_map(|r| r.iter())
        .map(|m| m.to_string())
        .collect();
    let mut in_lib = declared(&lib);
    in_table.sort();
    in_lib.sort();
    assert_eq!(
        in_table, in_lib,
        "LAYERS lists every module lib.rs declares, once"
    );

    let mut all = Vec::new();
    rs_files(&root, &root, &mut all);
    let files: Vec<File> = all
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|f| File {
            name: f.display().to_string(),
            module: module_of(f),
            text: std::fs::read_to_string(root.join(f)).expect("a source file"),
        })
        .filter(|f| !f.module.is_empty())
        .collect();
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    let wrong = crossing_uses(LAYERS, &root_items(&lib), &files);
    assert!(
        wrong.is_empty(),
        "uses across layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_sees_a_sibling_and_an_upward_use() {
    let layers: &[&[&str]] = &[&["low"], &["shared"], &["left", "right"], &["top"]];
    let lib = "mod low;\nmod shared;\nmod left;\nmod right;\nmod top;\npub use low::Low;\npub use top::{Top, Other};\n";
    assert_eq!(declared(lib), ["low", "shared", "left", "right", "top"]);
    let roots = root_items(lib);
    assert_eq!(roots.get("Top").map(String::as_str), Some("top"));
    assert_eq!(roots.get("Low").map(String::as_str), Some("low"));
    let file = |name: &str, text: &str| File {
        name: name.to_string(),
        module: module_of(Path::new(&format!("{name}.rs"))),
        text: text.to_string(),
    };
    let files = [
        // Downward and internal uses, and look-alikes that are not uses.
        file(
            "left/emit",
            "use super::record::X;\nuse crate::shared::{Loc, names::demangle};\nuse crate::low::f;\n\
             // crate::right::g\n/// [`g`](crate::right::g)\nconst S: &str = \"crate::top\";\n\
             fn h() -> crate::Low { todo!() }\n",
        ),
        // A sibling through `crate::`, through a group, and an upward use through a root item.
        file("left/mod", "use crate::right::RaceKernel;\n"),
        file("right/emit", "use crate::{left::SourceLoc, shared::Loc};\n"),
        file("shared", "fn f() -> crate::Top { todo!() }\n"),
        file("low", "pub(crate) use crate::shared::Loc as L;\n"),
    ];
    let wrong = crossing_uses(layers, &roots, &files);
    let found: Vec<&str> = wrong
        .iter()
        .map(|w| w.split(", ").last().unwrap_or_default())
        .collect();
    assert_eq!(
        wrong
            .iter()
            .map(|w| w.split(' ').next().unwrap_or_default())
            .collect::<Vec<_>>(),
        ["left/mod:1:", "right/emit:1:", "shared:1:", "low:1:"],
        "{wrong:#?}"
    );
    assert_eq!(
        found,
        [
            "a sibling",
            "a sibling",
            "a layer above it",
            "a layer above it"
        ],
        "{wrong:#?}"
    );
}
