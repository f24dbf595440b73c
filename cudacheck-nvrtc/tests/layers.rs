//! The compiler layer's layers hold. The table is the declaration order of modules: `lib.rs`
//! lists the crate's modules bottom up, and `nvrtc/mod.rs` lists `nvrtc`'s files bottom up in
//! `nvrtc`'s place (its `mod.rs`, which only declares and re-exports, on top of them). No file
//! may name a module listed after its own, by `crate::` path, by `super::` path or by a
//! relative `use`; `use` groups (`crate::nvrtc::{a::X, b::Y}`) count item by item, and a path
//! through a module's re-exports (`crate::nvrtc::Item`) counts as a use of that module. Comments,
//! doc links and strings are not uses. A module that must reach up has to move, or the order
//! has to change, with ARCHITECTURE.md's table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

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

/// Rust source with comments, strings and character literals blanked (newlines kept, so line
/// numbers stay).
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // r"..." and r#"..."#: ends at the quote followed by as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            while j < c.len() {
                if c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                blank(&mut out, c[j]);
                j += 1;
            }
            i = j;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                }
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && next == Some('\\') {
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Other(char),
}

/// The tokens of stripped code, each with its line.
fn tokens(code: &str) -> Vec<(usize, Tok)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let c: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < c.len() {
            let ch = c[i];
            if ch.is_alphanumeric() || ch == '_' {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push((n + 1, Tok::Ident(c[start..i].iter().collect())));
                continue;
            }
            let tok = match ch {
                ':' if c.get(i + 1) == Some(&':') => {
                    i += 1;
                    Tok::Colons
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                c if c.is_whitespace() => {
                    i += 1;
                    continue;
                }
                c => Tok::Other(c),
            };
            out.push((n + 1, tok));
            i += 1;
        }
    }
    out
}

/// The paths a use tree starting at `toks[*at]` names, each as its segments, after `prefix`.
fn use_tree(toks: &[(usize, Tok)], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(*at).map(|t| &t.1) {
            Some(Tok::Ident(s)) if s != "as" => {
                if s != "self" {
                    path.push(s.clone());
                }
                *at += 1;
            }
            Some(Tok::Open) => {
                *at += 1;
                loop {
                    match toks.get(*at).map(|t| &t.1) {
                        Some(Tok::Close) => {
                            *at += 1;
                            return;
                        }
                        Some(Tok::Comma) => *at += 1,
                        None => return,
                        _ => use_tree(toks, at, &path, out),
                    }
                }
            }
            _ => break,
        }
        if toks.get(*at).map(|t| &t.1) == Some(&Tok::Colons) {
            *at += 1;
        } else {
            break;
        }
    }
    // `x as y`: the name is what was used.
    if matches!(toks.get(*at).map(|t| &t.1), Some(Tok::Ident(s)) if s == "as") {
        *at += 2;
    }
    out.push(path);
}

/// Every module path (absolute, as segments) a file's code names, with its line: `crate::`,
/// `super::` and `self::` paths, and relative `use` paths (taken from the module the code is
/// in, `module`, plus any inline `mod x { ... }` around it).
fn named_paths(text: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let toks = tokens(&strip(text));
    let mut out = Vec::new();
    // Inline modules: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        let (line, tok) = &toks[i];
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        match tok {
            Tok::Open => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Tok::Other(';') => pending_mod = None,
            Tok::Ident(s) if s == "mod" => {
                if let Some((_, Tok::Ident(name))) = toks.get(i + 1) {
                    pending_mod = Some(name.clone());
                }
            }
            Tok::Ident(s)
                if (s == "crate" || s == "super" || s == "self")
                    && toks.get(i + 1).map(|t| &t.1) == Some(&Tok::Colons) =>
            {
                // The base, then the rest as a use tree (a plain path is a tree of one).
                let mut base = if s == "crate" {
                    Vec::new()
                } else {
                    here.clone()
                };
                let mut j = i;
                loop {
                    match toks.get(j).map(|t| &t.1) {
                        Some(Tok::Ident(s)) if s == "super" => {
                            base.pop();
                        }
                        Some(Tok::Ident(s)) if s == "crate" || s == "self" => {}
                        _ => break,
                    }
                    if toks.get(j + 1).map(|t| &t.1) != Some(&Tok::Colons) {
                        break;
                    }
                    j += 2;
                }
                let mut found = Vec::new();
                use_tree(&toks, &mut j, &base, &mut found);
                out.extend(found.into_iter().map(|p| (*line, p)));
                i = j;
                continue;
            }
            Tok::Ident(s) if s == "use" => {
                if let Some((_, Tok::Ident(first))) = toks.get(i + 1) {
                    if !["crate", "super", "self", "std", "core", "alloc"].contains(&first.as_str())
                    {
                        let mut j = i + 1;
                        let mut found = Vec::new();
                        use_tree(&toks, &mut j, &here, &mut found);
                        out.extend(found.into_iter().map(|p| (*line, p)));
                        i = j;
                        continue;
                    }
                }
            }
            _ => {}
        }
        i += 1;
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

/// Every `.rs` file under `dir`, relative to `src()`.
fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(src()).map(Path::to_path_buf).unwrap_or(p));
        }
    }
}

/// A file's module path from its place under `src/` (`nvrtc/ffi.rs` is `nvrtc::ffi`).
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
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
    rs_files(&src(), &mut all);
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
