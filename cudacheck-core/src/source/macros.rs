//! Kernels the preprocessor makes: `#define` macros whose body holds `__global__`, the
//! invocations of those macros in the file, and a best-effort expansion of each invocation to
//! learn the kernel names it generates.
//!
//! tree-sitter does not run the preprocessor: a macro's body is one opaque token
//! (`preproc_arg`). Bodies are read and invocations expanded by the text layer
//! ([`crate::text`]); everything else comes from the syntax tree.

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Tree};

use super::parse::{kernels_in, location_of, Cx};
use super::Location;
use crate::text::{self, Kind, Macro, Macros};

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

/// The `#define`s anywhere in the file whose body mentions `__global__`, directly or through
/// an object-like macro that does (`#define KERNEL extern "C" __global__` used in
/// `#define UNARY(T, NAME) KERNEL void NAME(...)`), read by the text layer.
pub(super) fn collect_definitions(src: &str) -> Vec<MacroKernel> {
    let defs: Vec<MacroKernel> = text::directives(src)
        .into_iter()
        .filter_map(|d| definition(src, d))
        .collect();
    let mut words = vec!["__global__".to_string()];
    let mut out: Vec<MacroKernel> = Vec::new();
    let mut taken = vec![false; defs.len()];
    // Each round adds the macros that mention a word found in the one before.
    loop {
        let before = out.len();
        for (k, m) in defs.iter().enumerate() {
            if taken[k] || !mentions(&m.body, &words) {
                continue;
            }
            if !m.function_like {
                words.push(m.name.clone());
            }
            taken[k] = true;
            out.push(m.clone());
        }
        if out.len() == before {
            break;
        }
    }
    out.sort_by_key(|m| m.location.byte_range.start);
    out
}

/// Whether `body` names one of `words`.
fn mentions(body: &str, words: &[String]) -> bool {
    text::tokens(body)
        .iter()
        .any(|t| t.kind == Kind::Ident && words.contains(&t.text))
}

/// The macro a directive defines, with its body as written (from after the name or the
/// parameter list to the end of the directive, continuations included).
fn definition(src: &str, d: text::Directive) -> Option<MacroKernel> {
    let text::DirectiveKind::Define(Some(m)) = d.kind else {
        return None;
    };
    let written = src.get(d.span.clone())?;
    let after_define = written.find("define")? + "define".len();
    let name_at = d.span.start + after_define + written[after_define..].find(m.name.as_str())?;
    let name_end = name_at + m.name.len();
    let body_start = match m.params {
        Some(_) => name_end + src.get(name_end..d.span.end)?.find(')')? + 1,
        None => name_end,
    };
    // As the grammar's `preproc_arg`: from the first character that is not white space or a
    // line continuation.
    let rest = src.get(body_start..d.span.end)?;
    let rest = rest.strip_suffix('\n').unwrap_or(rest);
    let mut body = rest.strip_suffix('\r').unwrap_or(rest).trim_start();
    while let Some(rest) = body
        .strip_prefix('\\')
        .filter(|r| r.starts_with(['\n', '\r']))
    {
        body = rest.trim_start();
    }
    if body.trim().is_empty() {
        return None;
    }
    let extern_c = m
        .body
        .windows(2)
        .any(|w| w[0].is("extern") && w[1].kind == Kind::Str && w[1].text == "\"C\"");
    Some(MacroKernel {
        function_like: m.params.is_some(),
        params: m.params.unwrap_or_default(),
        extern_c,
        body: body.to_owned(),
        location: location_of(src, name_at..name_end),
        name: m.name,
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

/// Index of the leaf `)` closing the leaf `(` at `open`, and the text of each argument between
/// (read by [`text::call_args`]).
pub(super) fn call_args(src: &str, l: &[Node], open: usize) -> Option<(usize, Vec<String>)> {
    let (args, end) = text::call_args(src, l.get(open)?.start_byte())?;
    let close = open + l[open..].iter().position(|n| n.end_byte() == end)?;
    Some((close, args))
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
    let directives = text::directive_ranges(cx.src);
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
                let expanded = expand(&m.name, &m.body, &m.params, &args);
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
        expand(&self.name, &self.body, &self.params, &invocation.args)
    }
}

/// The function-like macro `name(params) body` invoked with `args`, by the text layer alone:
/// other macros are not known here and stay as written.
pub(super) fn expand(name: &str, body: &str, params: &[String], args: &[String]) -> String {
    let mut m = Macros::new();
    m.define(Macro::function(name, params, body));
    m.invoke_text(name, args).unwrap_or_default()
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
        let p = |s: &str| vec![s.to_owned()];
        let e = expand(
            "K",
            "__global__ void add_##T(T* a) { a[0] = 1; }",
            &p("T"),
            &p("float"),
        );
        assert_eq!(e, "__global__ void add_float(float* a) { a[0] = 1; }");
        let e = expand("K", "name##_k #name", &p("name"), &p("foo"));
        assert_eq!(e, "foo_k \"foo\"");
    }
}
