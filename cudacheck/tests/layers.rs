//! The runtime's layers hold: `lib.rs` lists its modules bottom up, and no module names one
//! listed after it (`crate::x::...`, or an item `lib.rs` re-exports from `x`). Comments and doc
//! links are not uses. A module that must reach up has to move, or the list has to change,
//! with ARCHITECTURE.md's table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `lib.rs`'s `mod x;` / `pub mod x;` declarations, in order, with the file a `#[path]`
/// attribute gives one.
fn layer_order(lib: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = None;
    for l in lib.lines().map(str::trim) {
        if let Some(p) = l.strip_prefix("#[path = \"") {
            path = p
                .split('"')
                .next()
                .map(|p| p.trim_end_matches(".rs").to_string());
            continue;
        }
        let decl = l
            .strip_prefix("pub mod ")
            .or_else(|| l.strip_prefix("mod "));
        if let Some((name, _)) = decl.and_then(|d| d.split_once(';')) {
            out.push(path.take().unwrap_or_else(|| name.trim().to_string()));
        }
    }
    out
}

/// The items `lib.rs` re-exports at the crate root, by the module they come from.
fn root_items(lib: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let text: String = lib
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    for stmt in text.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.rsplit("::").next().unwrap_or("").trim();
            let name = name.split(" as ").last().unwrap_or(name).trim();
            if !name.is_empty() {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// The `.rs` files of module `name`: `name.rs`, or everything under `name/`.
fn files_of(name: &str) -> Vec<PathBuf> {
    let file = src().join(format!("{name}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut out = Vec::new();
    let mut stack = vec![src().join(name)];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// Every `crate::<name>` a file's code (not its comments) writes.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            // `$crate::` in macros names the crate root's items, as `crate::` does.
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((i + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn no_module_uses_one_listed_after_it() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let order = layer_order(&lib);
    assert!(order.len() > 10, "lib.rs lists its modules: {order:?}");
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let items = root_items(&lib);
    let mut wrong = Vec::new();
    for (i, module) in order.iter().enumerate() {
        for file in files_of(module) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, name) in crate_paths(&text) {
                let target = match rank.get(name.as_str()) {
                    Some(_) => name.clone(),
                    None => match items.get(&name) {
                        Some(m) => m.clone(),
                        None => continue,
                    },
                };
                if let Some(&r) = rank.get(target.as_str()) {
                    if r > i {
                        wrong.push(format!(
                            "{}:{line}: `{module}` uses `{target}` (`crate::{name}`), listed \
                             after it",
                            file.strip_prefix(src()).unwrap().display()
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "upward uses:\n{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_an_upward_use() {
    // The parts of the check above, on a made-up module: a use is found outside comments,
    // root items map to their module.
    let lib = "mod low;\nmod high;\npub use high::{High, Other as Renamed};\n";
    assert_eq!(layer_order(lib), ["low", "high"]);
    let items = root_items(lib);
    assert_eq!(items.get("High").map(String::as_str), Some("high"));
    assert_eq!(items.get("Renamed").map(String::as_str), Some("high"));
    let text =
        "// crate::high::x in a comment\nuse crate::high::f; // crate::low\nlet e = crate::High;\n";
    assert_eq!(
        crate_paths(text),
        [(2, "high".to_string()), (3, "High".to_string())]
    );
}
