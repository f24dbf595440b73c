//! The file-level scan: which functions are kernels, their parameters, file-scope arrays and
//! indexing macros, and the edits that append the hidden parameters.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use tree_sitter::Node;

use super::syntax::text_of;

/// The text appended to every kernel's parameter list.
pub(super) const HIDDEN_TEXT: &str =
    "const unsigned long long* __restrict__ __cc_len, __cc_record* __cc_rec";
/// Nodes a walk visits at most: bounds the work on hostile input.
pub(super) const MAX_WALK: usize = 20_000;

/// Applies non-overlapping edits back to front; an edit overlapping one already applied is
/// dropped rather than corrupting the text.
pub(super) fn apply_edits(text: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by(|a, b| b.0.start.cmp(&a.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut out = text.to_string();
    let mut floor = usize::MAX;
    for (range, with) in edits {
        if range.end > floor || range.start > range.end || range.end > out.len() {
            continue;
        }
        if !out.is_char_boundary(range.start) || !out.is_char_boundary(range.end) {
            continue;
        }
        out.replace_range(range.clone(), &with);
        floor = range.start;
    }
    out
}

/// What the file-level scan found.
pub(super) struct FileScan<'t> {
    pub(super) kernel_defs: Vec<Node<'t>>,
    /// Declarations and explicit instantiations of kernels: they need the hidden parameters too,
    /// or they would no longer match the definition.
    pub(super) kernel_decls: Vec<Node<'t>>,
    /// File-scope arrays (`__constant__ float c[16]`, `extern __shared__ float s[]`).
    pub(super) globals: Vec<(String, Binding)>,
    /// Macros whose body indexes something (`#define AT(i) in[i]`): uses cannot be checked.
    pub(super) index_macros: HashMap<String, bool>,
    /// Object-like macros whose body is an integer constant expression (`#define TILE 16`,
    /// `#define N (TILE * 4)`): names a loop bound or step may use without changing.
    pub(super) const_macros: HashSet<String>,
}

pub(super) fn scan_file<'t>(src: &str, root: Node<'t>) -> FileScan<'t> {
    let mut scan = FileScan {
        kernel_defs: Vec::new(),
        kernel_decls: Vec::new(),
        globals: Vec::new(),
        index_macros: HashMap::new(),
        const_macros: HashSet::new(),
    };
    let mut stack = vec![root];
    let mut visited = 0usize;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > MAX_WALK * 10 {
            break;
        }
        match node.kind() {
            "function_definition" if has_global(node) => scan.kernel_defs.push(node),
            "declaration" | "template_instantiation" => {
                if has_global(node) {
                    scan.kernel_decls.push(node);
                } else if node.kind() == "declaration" {
                    for (name, b) in declared_arrays(src, node, true) {
                        scan.globals.push((name, b));
                    }
                }
            }
            "preproc_def" | "preproc_function_def" => {
                let name = node.child_by_field_name("name").map(|n| text_of(src, n));
                let body = node.child_by_field_name("value").map(|n| text_of(src, n));
                if let (Some(name), Some(body)) = (name, body) {
                    if node.kind() == "preproc_def" && is_constant_body(body, &scan.const_macros) {
                        scan.const_macros.insert(name.to_string());
                    }
                    if body.contains('[') {
                        scan.index_macros
                            .insert(name.to_string(), node.kind() == "preproc_function_def");
                    }
                }
            }
            "translation_unit"
            | "linkage_specification"
            | "declaration_list"
            | "namespace_definition"
            | "template_declaration"
            | "preproc_if"
            | "preproc_ifdef"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                // Reversed so the stack pops them in source order.
                stack.extend(children.into_iter().rev());
            }
            _ => {}
        }
    }
    scan.kernel_defs.sort_by_key(|n| n.start_byte());
    scan
}

/// Whether a macro body is an integer constant expression: number literals, operators,
/// parentheses and macros already known to be constant.
fn is_constant_body(body: &str, known: &HashSet<String>) -> bool {
    let body = body.trim();
    let operators_only = body.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || c == '_'
            || c.is_ascii_whitespace()
            || "()+-*/%<>&|^~".contains(c)
    });
    let words_known = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .all(|w| w.as_bytes()[0].is_ascii_digit() || known.contains(w));
    !body.is_empty() && operators_only && words_known
}

pub(super) fn has_global(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).any(|c| c.kind() == "__global__");
    found
}

/// The `function_declarator` under a definition's or declaration's declarator chain.
pub(super) fn function_declarator(node: Node<'_>) -> Option<Node<'_>> {
    let mut cur = node.child_by_field_name("declarator")?;
    for _ in 0..16 {
        if cur.kind() == "function_declarator" {
            return Some(cur);
        }
        cur = cur.child_by_field_name("declarator")?;
    }
    None
}

pub(super) fn kernel_name(src: &str, fd: Node<'_>) -> String {
    let mut cur = fd.child_by_field_name("declarator");
    for _ in 0..16 {
        let Some(n) = cur else { break };
        match n.kind() {
            "template_function" | "qualified_identifier" => cur = n.child_by_field_name("name"),
            _ => return text_of(src, n).to_string(),
        }
    }
    String::new()
}

/// The edit that appends the hidden parameters before the parameter list's `)`.
pub(super) fn hidden_param_edit(src: &str, fd: Node<'_>) -> Option<(Range<usize>, String)> {
    let list = fd.child_by_field_name("parameters")?;
    let end = list.end_byte();
    if end == 0 || src.as_bytes().get(end - 1) != Some(&b')') {
        return None;
    }
    let mut cursor = list.walk();
    let params: Vec<Node<'_>> = list
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    match params.as_slice() {
        [] => Some((end - 1..end - 1, HIDDEN_TEXT.to_string())),
        [only] if text_of(src, *only).trim() == "void" => {
            Some((only.byte_range(), HIDDEN_TEXT.to_string()))
        }
        _ => Some((end - 1..end - 1, format!(", {HIDDEN_TEXT}"))),
    }
}

/// One kernel parameter as the rewriter sees it.
pub(super) struct ParamInfo {
    pub(super) ordinal: u32,
    pub(super) name: Option<String>,
    /// Levels of pointer (`float*` 1, `float**` 2; `float a[]` counts as a pointer).
    pub(super) depth: u32,
}

pub(super) fn params_of(src: &str, fd: Node<'_>) -> Vec<ParamInfo> {
    let Some(list) = fd.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    let nodes: Vec<Node<'_>> = list
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    if let [only] = nodes.as_slice() {
        if text_of(src, *only).trim() == "void" {
            return Vec::new();
        }
    }
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (name, depth, _) = declarator_shape(src, n.child_by_field_name("declarator"));
            ParamInfo {
                ordinal: i as u32,
                name,
                depth,
            }
        })
        .collect()
}

/// A declarator's name, pointer depth and array dimensions (outermost first; `None` for `[]`).
/// A reference or function declarator yields depth 0: such a name is not a checkable pointer.
pub(super) fn declarator_shape(
    src: &str,
    d: Option<Node<'_>>,
) -> (Option<String>, u32, Vec<Option<String>>) {
    let mut depth = 0u32;
    let mut dims = Vec::new();
    let mut cur = d;
    for _ in 0..32 {
        let Some(n) = cur else { break };
        match n.kind() {
            "identifier" | "field_identifier" => {
                dims.reverse();
                return (Some(text_of(src, n).to_string()), depth, dims);
            }
            "pointer_declarator" | "abstract_pointer_declarator" => depth += 1,
            "array_declarator" => dims.push(
                n.child_by_field_name("size")
                    .map(|s| text_of(src, s).to_string()),
            ),
            "reference_declarator" | "function_declarator" => {
                let (name, _, _) = declarator_shape(src, named_declarator_child(n));
                return (name, 0, Vec::new());
            }
            "init_declarator" | "parenthesized_declarator" | "attributed_declarator" => {}
            _ => break,
        }
        cur = named_declarator_child(n);
    }
    (None, depth, Vec::new())
}

/// The `declarator` field, or for nodes without one (reference and parenthesized declarators)
/// the first named child that is not a qualifier.
pub(super) fn named_declarator_child(n: Node<'_>) -> Option<Node<'_>> {
    if let Some(d) = n.child_by_field_name("declarator") {
        return Some(d);
    }
    let mut cursor = n.walk();
    let found = n.named_children(&mut cursor).find(|c| {
        !matches!(
            c.kind(),
            "type_qualifier" | "ms_pointer_modifier" | "comment"
        )
    });
    found
}

/// Arrays declared by a declaration: fixed-size ones become [`Binding::Array`], `extern
/// __shared__ T s[]` becomes [`Binding::ExternShared`].
pub(super) fn declared_arrays(
    src: &str,
    decl: Node<'_>,
    file_scope: bool,
) -> Vec<(String, Binding)> {
    let (is_shared, is_extern) = qualifiers(src, decl);
    let mut out = Vec::new();
    let mut cursor = decl.walk();
    let declarators: Vec<Node<'_>> = decl
        .children_by_field_name("declarator", &mut cursor)
        .collect();
    for d in declarators {
        let (name, depth, dims) = declarator_shape(src, Some(d));
        let Some(name) = name else { continue };
        if depth > 0 || dims.is_empty() {
            continue;
        }
        if is_shared && is_extern && dims.len() == 1 && dims[0].is_none() {
            out.push((name, Binding::ExternShared));
        } else if dims.iter().flatten().any(|d| d.contains('\n')) {
            // A size written over several lines (or a declaration the parser recovered from
            // badly) would add lines wherever the extent is repeated, moving every later
            // diagnostic and __LINE__: such an array is left unchecked. (Found by the fuzzer.)
            continue;
        } else if dims.iter().all(Option::is_some) {
            let dims: Vec<String> = dims.into_iter().flatten().collect();
            out.push((
                name,
                Binding::Array {
                    dims,
                    local: !file_scope && !is_shared,
                    shared: is_shared,
                },
            ));
        }
    }
    out
}

/// Whether a declaration carries `__shared__`, and whether it is `extern`.
pub(super) fn qualifiers(src: &str, decl: Node<'_>) -> (bool, bool) {
    let mut cursor = decl.walk();
    let mut shared = false;
    let mut ext = false;
    for c in decl.children(&mut cursor) {
        match c.kind() {
            "type_qualifier" if text_of(src, c) == "__shared__" => shared = true,
            "storage_class_specifier" if text_of(src, c) == "extern" => ext = true,
            _ => {}
        }
    }
    (shared, ext)
}

/// What a name in a kernel body refers to, as far as bounds checking cares.
#[derive(Clone, Debug)]
pub(super) enum Binding {
    /// A kernel parameter; `depth` > 0 for pointers.
    Param { ordinal: u32, depth: u32 },
    /// `T* name = root + offset`: `base` is the C expression of the total offset from the
    /// parameter with `ordinal`.
    Alias { ordinal: u32, base: String },
    /// A fixed-size array (shared, file scope or local) with its dimension expressions.
    Array {
        dims: Vec<String>,
        local: bool,
        shared: bool,
    },
    /// `extern __shared__ T s[]`: checked against the launch's dynamic shared bytes.
    ExternShared,
    /// A local pointer whose target is unknown (`cast` when it came from a cast of a buffer).
    LocalPointer { cast: bool },
    /// Any other local: shadows outer names.
    Local,
}
