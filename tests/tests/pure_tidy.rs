//! Pure tier: the workspace's own source, read as text. An instruction is decoded once, in
//! `cudacheck-core/src/ir/` (its typed operation, `Instr::op`); code elsewhere that tests an
//! opcode or a modifier by its spelling (`i.op() == "add"`, `i.has("wide")`,
//! `i.parts().any(..)`, `i.opcode.starts_with("cp.async")`) decodes it a second time, and the
//! two decoders drift. This test finds those forms outside `ir/`.
//!
//! The files not yet ported are listed in [`NOT_YET_PORTED`] with the number of such uses
//! each holds; the number may only go down (a port lowers it here, a new use fails), and a
//! file at zero leaves the list. Copying an opcode's text into a report or into the rewritten
//! PTX (`i.opcode.clone()`, `format!("{}", i.opcode)`) is no decoding and is not counted.

use std::path::{Path, PathBuf};

use cudacheck_tests::repo_root;

/// Files that still decode opcode text, with how many uses each holds.
const NOT_YET_PORTED: &[(&str, usize)] = &[
    // The reference interpreter the allocation-bases tests run the rewrite's output on: it
    // reads PTX on its own, so that it checks the rewrite without trusting the model.
    ("cudacheck-core/tests/instrument_alloc.rs", 2),
];

/// Where the text of an opcode may be decoded: the typed model.
const DECODER: &str = "cudacheck-core/src/ir/";

/// The forms counted, each a method of `Instr` that reads the opcode's text, or a test on
/// the text itself.
const FORMS: &[&str] = &[
    ".op()",
    ".has(\"",
    ".parts().",
    "opcode ==",
    "opcode !=",
    "opcode.as_str() ==",
    "opcode.starts_with(",
    "opcode.ends_with(",
    "opcode.contains(",
    "opcode.split(",
    "opcode.strip_prefix(",
    "opcode.strip_suffix(",
    "opcode.trim_end_matches(",
    "opcode.trim_start_matches(",
];

/// Every `.rs` file under `dir`, skipping build outputs and the toolkit link.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | ".git" | ".cuda") && !path.is_symlink() {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The uses of [`FORMS`] in `text`, outside comments: `(line, form)`.
fn uses(text: &str) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        for form in FORMS {
            out.extend(line.matches(form).map(|_| (n + 1, *form)));
        }
    }
    out
}

/// `(file, uses)` for every file outside the decoder that has any, sorted by path.
fn workspace_uses() -> Vec<(String, Vec<(usize, &'static str)>)> {
    let root = repo_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let this = Path::new(file!()).file_name().expect("a file name");
    files
        .iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            if rel.starts_with(DECODER) || p.file_name() == Some(this) {
                return None;
            }
            let text = std::fs::read_to_string(p).ok()?;
            let found = uses(&text);
            (!found.is_empty()).then_some((rel, found))
        })
        .collect()
}

#[test]
fn opcode_text_is_decoded_only_in_the_typed_model() {
    let mut problems = Vec::new();
    let found = workspace_uses();
    for (file, lines) in &found {
        let allowed = NOT_YET_PORTED
            .iter()
            .find(|(f, _)| f == file)
            .map_or(0, |&(_, n)| n);
        if lines.len() > allowed {
            let at: Vec<String> = lines.iter().map(|(n, f)| format!("{n}: `{f}`")).collect();
            problems.push(format!(
                "{file}: {} uses of the opcode's text (allowed {allowed}): {}. Read the \
                 typed operation (`Instr::op`, `cudacheck_core::ir::Op`); what it lacks is \
                 added to `ir/op.rs`, decoded once.",
                lines.len(),
                at.join(", ")
            ));
        }
    }
    for &(file, allowed) in NOT_YET_PORTED {
        let n = found
            .iter()
            .find(|(f, _)| f == file)
            .map_or(0, |(_, l)| l.len());
        if n < allowed {
            problems.push(format!(
                "{file}: {n} uses of the opcode's text, the list allows {allowed}: lower its \
                 count in NOT_YET_PORTED (remove the entry at 0), so that no new use slips in"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The scan itself: each form is found, comments are not read, a copy of the text is not
/// counted.
#[test]
fn the_scan_finds_each_form() {
    let text = "\
        if i.op() == \"add\" && !i.has(\"cc\") {}\n\
        // i.op() in a comment\n\
        let t = i.parts().last();\n\
        if i.opcode.starts_with(\"cp.async\") || i.opcode == \"ret\" {}\n\
        let s = i.opcode.clone();\n\
        let (a, b) = len.parts();\n";
    let found = uses(text);
    assert_eq!(
        found,
        [
            (1, ".op()"),
            (1, ".has(\""),
            (3, ".parts()."),
            (4, "opcode =="),
            (4, "opcode.starts_with("),
        ]
    );
    // The decoder's own files are where the text is read.
    let all = workspace_uses();
    assert!(all.iter().all(|(f, _)| !f.starts_with(DECODER)));
    assert!(
        all.iter().any(|(f, _)| f == NOT_YET_PORTED[0].0),
        "the scan reads the workspace: {all:?}"
    );
}
