//! The module paths a Rust file's code names, read without a parser: what the layer tests
//! (`cudacheck-nvrtc/tests/layers.rs`, the workspace's `tests/tests/pure_layers.rs`) check
//! against their tables. Comments, doc links and strings are not uses; `use` groups count item
//! by item; relative `use` paths and `super::`/`self::` paths are taken from the module the
//! code is in, inline `mod x { ... }` included.

use std::path::{Path, PathBuf};

/// Rust source with comments, strings and character literals blanked (newlines kept, so line
/// numbers stay).
pub fn strip(text: &str) -> String {
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
pub fn named_paths(text: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
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

/// Every `.rs` file under `dir`, relative to `root`.
pub fn rs_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(root).map(Path::to_path_buf).unwrap_or(p));
        }
    }
}

/// A file's module path from its place under `src/` (`nvrtc/ffi.rs` is `nvrtc::ffi`).
pub fn module_of(file: &Path) -> Vec<String> {
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
