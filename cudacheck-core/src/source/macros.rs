//! Kernels the preprocessor makes: `#define` macros whose body holds `__global__`, the
//! invocations of those macros in the file, and a best-effort expansion of each invocation to
//! learn the kernel names it generates.
//!
//! tree-sitter does not run the preprocessor: a macro's body is one opaque token
//! (`preproc_arg`). Bodies are read and invocations expanded by the text layer
//! ([`crate::text`]); everything else comes from the syntax tree.

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Tree};

use super::parse::{kernels_in, location, Cx};
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
    let toks = text::tokens(body);
    if !toks
        .iter()
        .any(|t| t.kind == Kind::Ident && kernel_words.contains(&t.text))
    {
        return None;
    }
    let extern_c = toks
        .windows(2)
        .any(|w| w[0].is("extern") && w[1].kind == Kind::Str && w[1].text == "\"C\"");
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
