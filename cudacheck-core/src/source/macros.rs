//! Kernels the preprocessor makes: `#define` macros whose body holds `__global__`, the
//! invocations of those macros in the file, and a best-effort expansion of each invocation to
//! learn the kernel names it generates.
//!
//! tree-sitter does not run the preprocessor: a macro's body is one opaque token
//! (`preproc_arg`). The small tokenizer here only reads those bodies; everything else comes from
//! the syntax tree.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Tree};

use super::parse::{kernels_in, location, Cx};
use super::Location;

/// A `#define` whose body contains `__global__`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacroKernel {
    pub name: String,
    /// The macro's parameters (`...` for a variadic one); empty for an object-like macro.
    pub params: Vec<String>,
    /// `#define M(x) ...` rather than `#define M ...`. Function-like macros generate kernels;
    /// object-like ones usually stand for `__global__` in front of a definition
    /// (`#define KERNEL extern "C" __global__`), and those kernels are found as ordinary ones.
    pub function_like: bool,
    /// Whether the body says `extern "C"`.
    pub extern_c: bool,
    /// The body as written (line continuations included).
    pub body: String,
    pub location: Location,
    /// The invocations of a function-like macro found outside functions in this file.
    pub invocations: Vec<MacroInvocation>,
}

/// One use of a kernel-generating macro, such as `DEFINE_KERNEL(float)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacroInvocation {
    /// The arguments as written.
    pub args: Vec<String>,
    /// Where the macro's name is.
    pub location: Location,
    /// The kernels the expansion defines (`add_float` for `DEFINE_KERNEL(float)` when the body
    /// is `__global__ void add_##T(T* a)`). Empty when the expansion could not be read, for
    /// example because it relies on other macros.
    pub generated_kernels: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    /// `#` (stringize) and `##` (paste).
    Hash,
    Paste,
    Other(&'a str),
}

impl<'a> Tok<'a> {
    fn text(self) -> &'a str {
        match self {
            Tok::Ident(s) | Tok::Other(s) => s,
            Tok::Hash => "#",
            Tok::Paste => "##",
        }
    }
}

/// Splits a macro body into preprocessing tokens, dropping comments and line continuations.
fn pp_tokens(s: &str) -> Vec<Tok<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() || c == b'\\' {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i = (i + 2).min(b.len());
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            let word = &s[start..i];
            out.push(if c.is_ascii_digit() {
                Tok::Other(word)
            } else {
                Tok::Ident(word)
            });
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push(Tok::Other(s.get(start..i).unwrap_or("")));
        } else if b[i..].starts_with(b"##") {
            i += 2;
            out.push(Tok::Paste);
        } else if c == b'#' {
            i += 1;
            out.push(Tok::Hash);
        } else {
            // One punctuation byte; multi-byte UTF-8 never reaches here (>= 0x80 is ident).
            i += 1;
            out.push(Tok::Other(&s[start..i]));
        }
    }
    out
}

/// The `#define`s anywhere in the file whose body mentions `__global__`, directly or through
/// an object-like macro that does (`#define KERNEL extern "C" __global__` used in
/// `#define UNARY(T, NAME) KERNEL void NAME(...)`).
/// `text` with every byte outside preprocessor directives (a line starting with `#`, and its
/// `\`-continued lines) blanked to a space, newlines kept: every directive stays at its byte
/// offset, line and column, so a tree of this text indexes the original.
pub(super) fn directives_only(text: &str) -> String {
    let mut out = vec![b' '; text.len()];
    for (k, b) in text.bytes().enumerate() {
        if b == b'\n' {
            out[k] = b'\n';
        }
    }
    for r in directive_ranges(text) {
        out[r.clone()].copy_from_slice(&text.as_bytes()[r]);
    }
    // Whole lines were kept or blanked to ASCII: the result is UTF-8 where `text` was.
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// The byte ranges of `text`'s preprocessor directives: a line starting with `#` and the
/// lines its trailing `\` continues it onto.
pub(super) fn directive_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    let mut in_directive = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let continued = in_directive;
        if !in_directive {
            in_directive = body.trim_start().starts_with('#');
        }
        if in_directive {
            match out.last_mut() {
                Some(r) if continued => r.end = at + line.len(),
                _ => out.push(at..at + line.len()),
            }
        }
        in_directive = in_directive && body.ends_with('\\');
        at += line.len();
    }
    out
}

pub(super) fn collect_definitions(src: &str, root: Node) -> Vec<MacroKernel> {
    let mut defs = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if matches!(n.kind(), "preproc_def" | "preproc_function_def") {
            defs.push(n);
            continue;
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    let mut words = vec!["__global__".to_string()];
    let mut out: Vec<MacroKernel> = Vec::new();
    let mut taken = vec![false; defs.len()];
    // Each round adds the macros that mention a word found in the one before.
    loop {
        let before = out.len();
        for (k, &n) in defs.iter().enumerate() {
            if taken[k] {
                continue;
            }
            if let Some(m) = definition(src, n, &words) {
                if !m.function_like {
                    words.push(m.name.clone());
                }
                taken[k] = true;
                out.push(m);
            }
        }
        if out.len() == before {
            break;
        }
    }
    out.sort_by_key(|m| m.location.byte_range.start);
    out
}

fn definition(src: &str, n: Node, kernel_words: &[String]) -> Option<MacroKernel> {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let body = text(n.child_by_field_name("value")?);
    let toks = pp_tokens(body);
    if !kernel_words
        .iter()
        .any(|w| toks.contains(&Tok::Ident(w.as_str())))
    {
        return None;
    }
    let extern_c = toks
        .windows(2)
        .any(|w| w == [Tok::Ident("extern"), Tok::Other("\"C\"")]);
    let params_node = n.child_by_field_name("parameters");
    let params = params_node
        .map(|p| {
            let mut cursor = p.walk();
            let names: Vec<String> = p
                .children(&mut cursor)
                .filter(|c| c.kind() == "identifier" || c.kind() == "...")
                .map(|c| text(c).to_owned())
                .collect();
            names
        })
        .unwrap_or_default();
    let name = n.child_by_field_name("name")?;
    Some(MacroKernel {
        name: text(name).to_owned(),
        params,
        function_like: params_node.is_some(),
        extern_c,
        body: body.to_owned(),
        location: location(src, name),
        invocations: Vec::new(),
    })
}

/// The leaves of the tree outside function bodies and `#define`s, where a top-level macro
/// invocation can be. Zero-width leaves the parser invented (`MISSING`) are left out.
pub(super) fn leaves<'t>(root: Node<'t>, out: &mut Vec<Node<'t>>, skip_bodies: bool) {
    // An explicit stack: deeply nested expressions must not overflow the call stack.
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_missing() || n.kind() == "comment" {
            continue;
        }
        if n.child_count() == 0 {
            out.push(n);
            continue;
        }
        if skip_bodies && matches!(n.kind(), "preproc_def" | "preproc_function_def") {
            continue;
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        for (i, c) in children.into_iter().enumerate().rev() {
            let is_body = n.field_name_for_child(i as u32) == Some("body");
            if !(skip_bodies && is_body && n.kind() == "function_definition") {
                stack.push(c);
            }
        }
    }
}

/// Index of the `)` closing the `(` at `open`, and the leaf ranges of each argument between.
pub(super) fn call_args(src: &str, l: &[Node], open: usize) -> Option<(usize, Vec<String>)> {
    let text = |n: &Node| src.get(n.byte_range()).unwrap_or("");
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut arg_start: Option<usize> = None;
    for (j, leaf) in l.iter().enumerate().skip(open) {
        let t = text(leaf);
        let finish = |args: &mut Vec<String>, start: Option<usize>| {
            let s = start.map_or("", |s| {
                src.get(l[s].start_byte()..l[j - 1].end_byte())
                    .unwrap_or("")
            });
            args.push(s.trim().to_owned());
        };
        match t {
            "(" | "[" | "{" => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    if arg_start.is_some() || !args.is_empty() {
                        finish(&mut args, arg_start);
                    }
                    return Some((j, args));
                }
            }
            "," if depth == 1 => {
                finish(&mut args, arg_start);
                arg_start = None;
                continue;
            }
            _ => {}
        }
        arg_start.get_or_insert(j);
    }
    None
}

/// Finds invocations of the function-like kernel macros outside functions and expands them.
pub(super) fn collect_invocations(cx: &Cx, root: Node, macros: &mut [MacroKernel]) {
    if !macros.iter().any(|m| m.function_like) {
        return;
    }
    let mut l = Vec::new();
    leaves(root, &mut l, true);
    // Directives the parser did not read as such (after an invocation without a semicolon)
    // hold no invocations either.
    let directives = directive_ranges(cx.src);
    l.retain(|n| !directives.iter().any(|r| r.contains(&n.start_byte())));
    let text = |n: &Node| cx.src.get(n.byte_range()).unwrap_or("");
    let mut i = 0;
    while i + 1 < l.len() {
        let name = text(&l[i]);
        let m = macros
            .iter_mut()
            .find(|m| m.function_like && m.name == name);
        match (m, text(&l[i + 1])) {
            (Some(m), "(") => {
                let Some((close, args)) = call_args(cx.src, &l, i + 1) else {
                    i += 1;
                    continue;
                };
                let expanded = expand(&m.body, &m.params, &args);
                let generated_kernels = kernels_in(&expanded, &cx.prefix_macros)
                    .into_iter()
                    .map(|k| k.name)
                    .collect();
                m.invocations.push(MacroInvocation {
                    args,
                    location: cx.loc(l[i]),
                    generated_kernels,
                });
                i = close + 1;
            }
            _ => i += 1,
        }
    }
}

impl MacroKernel {
    /// The text one invocation expands to (arguments substituted, `#` and `##` applied; other
    /// macros inside are left as written), for reading the kernels it defines.
    pub fn expansion(&self, invocation: &MacroInvocation) -> String {
        expand(&self.body, &self.params, &invocation.args)
    }
}

/// Substitutes `args` for `params` in `body`, with `#x` stringizing and `a ## b` pasting. The
/// arguments are not themselves macro-expanded (nothing else is known about other macros).
pub(super) fn expand(body: &str, params: &[String], args: &[String]) -> String {
    let lookup: HashMap<&str, String> = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p == "..." {
                ("__VA_ARGS__", args.get(i..).unwrap_or(&[]).join(", "))
            } else {
                (p.as_str(), args.get(i).cloned().unwrap_or_default())
            }
        })
        .collect();
    let toks = pp_tokens(body);
    let mut pieces: Vec<String> = Vec::new();
    let mut paste = false;
    let mut i = 0;
    while i < toks.len() {
        let piece = match (toks[i], toks.get(i + 1)) {
            (Tok::Paste, _) => {
                paste = true;
                i += 1;
                continue;
            }
            (Tok::Hash, Some(Tok::Ident(p))) if lookup.contains_key(p) => {
                i += 1;
                format!("{:?}", lookup[p])
            }
            (Tok::Ident(p), _) => lookup.get(p).cloned().unwrap_or_else(|| p.to_owned()),
            (t, _) => t.text().to_owned(),
        };
        match pieces.last_mut() {
            Some(last) if paste => last.push_str(&piece),
            _ => pieces.push(piece),
        }
        paste = false;
        i += 1;
    }
    pieces.join(" ")
}

/// The text with every `__align__(N)` / `__builtin_align__(N)` replaced by spaces (newlines
/// kept), or `None` when there is none. Byte offsets and line numbers are unchanged.
pub(super) fn blank_align_attributes(tree: &Tree, src: &str) -> Option<String> {
    let mut l = Vec::new();
    leaves(tree.root_node(), &mut l, false);
    let text = |n: &Node| src.get(n.byte_range()).unwrap_or("");
    let mut bytes = src.as_bytes().to_vec();
    let mut changed = false;
    for i in 0..l.len().saturating_sub(1) {
        if !matches!(text(&l[i]), "__align__" | "__builtin_align__") || text(&l[i + 1]) != "(" {
            continue;
        }
        let Some((close, _)) = call_args(src, &l, i + 1) else {
            continue;
        };
        for b in &mut bytes[l[i].start_byte()..l[close].end_byte()] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        changed = true;
    }
    // Whole tokens were blanked, so the bytes are still UTF-8.
    changed.then(|| String::from_utf8(bytes).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_pastes_and_substitutes() {
        let e = expand(
            "__global__ void add_##T(T* a) { a[0] = 1; }",
            &["T".to_owned()],
            &["float".to_owned()],
        );
        assert_eq!(
            e,
            "__global__ void add_float ( float * a ) { a [ 0 ] = 1 ; }"
        );
        let e = expand("name##_k #name", &["name".to_owned()], &["foo".to_owned()]);
        assert_eq!(e, "foo_k \"foo\"");
    }

    #[test]
    fn tokens_skip_comments_and_continuations() {
        let t = pp_tokens("a /* x */ b \\\n // c\n \"s\\\"\" ## #");
        assert_eq!(
            t,
            vec![
                Tok::Ident("a"),
                Tok::Ident("b"),
                Tok::Other("\"s\\\"\""),
                Tok::Paste,
                Tok::Hash
            ]
        );
    }
}
