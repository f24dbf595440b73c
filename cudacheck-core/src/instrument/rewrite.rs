//! The rewriter: finds kernels in the tree-sitter tree, then re-emits each kernel body with
//! checked accesses in place of raw ones.
//!
//! A kernel body is re-emitted recursively (each node's text is the source between its children
//! plus its children's re-emitted text), which is the same as applying byte-range edits back to
//! front but lets edits nest (`p[q[i]]`). At file level the edits (hidden parameters, rewritten
//! bodies) never overlap and are applied back to front.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use tree_sitter::{Node, Parser};

use super::coverage::{Coverage, Site, SiteKind, SkipReason, SkippedAccess};
use super::prelude::prelude;
use super::{
    InstrumentError, InstrumentOptions, Instrumented, InstrumentedKernel, HIDDEN_PARAMS,
};

/// Nesting beyond which a subtree is copied unchanged: bounds the recursion on hostile input.
const MAX_DEPTH: usize = 160;
/// Nodes a helper walk visits at most, for the same reason.
const MAX_WALK: usize = 20_000;

/// The text appended to every kernel's parameter list.
const HIDDEN_TEXT: &str = "const unsigned long long* __restrict__ __cc_len, __cc_record* __cc_rec";

/// Functions whose pointer argument must be a global address (a miss lands in the global sink).
const GLOBAL_LOADS: &[&str] = &["__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"];

pub(super) fn run(
    text: &str,
    file_name: &str,
    opts: &InstrumentOptions,
) -> Result<Instrumented, InstrumentError> {
    if let Some(offset) = text.find('\0') {
        let line = text[..offset].matches('\n').count() as u32 + 1;
        return Err(InstrumentError::NulByte {
            file_name: file_name.to_string(),
            offset,
            line,
        });
    }
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .map_err(|e| InstrumentError::Grammar {
            reason: e.to_string(),
        })?;
    let tree = parser
        .parse(text, None)
        .ok_or_else(|| InstrumentError::ParseFailed {
            file_name: file_name.to_string(),
        })?;
    let file = scan_file(text, tree.root_node());

    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut kernels = Vec::new();
    let mut next_site = 0u32;
    for def in &file.kernel_defs {
        let Some(fd) = function_declarator(*def) else {
            continue;
        };
        let Some(body) = def.child_by_field_name("body") else {
            continue;
        };
        if fd.has_error() {
            continue;
        }
        let Some(param_edit) = hidden_param_edit(text, fd) else {
            continue;
        };
        let params = params_of(text, fd);
        let mut cx = KernelCx::new(text, file_name, opts, &file, &params, &mut next_site);
        cx.collect_reassigned(body);
        let mut new_body = cx.emit(body, 0);
        if cx.used_slot && new_body.starts_with('{') {
            new_body.insert_str(1, " __cc_slot_t __cc_slot;");
        }
        let KernelCx {
            sites, coverage, ..
        } = cx;
        edits.push(param_edit);
        edits.push((body.byte_range(), new_body));
        kernels.push(InstrumentedKernel {
            name: kernel_name(text, fd),
            line: def.start_position().row as u32 + 1,
            num_params: params.len() as u32,
            pointer_params: params
                .iter()
                .filter(|p| p.depth > 0)
                .filter_map(|p| p.name.clone().map(|n| (p.ordinal, n)))
                .collect(),
            hidden_params: HIDDEN_PARAMS.to_vec(),
            sites,
            coverage,
        });
    }
    for decl in &file.kernel_decls {
        if let Some(fd) = function_declarator(*decl) {
            if let Some(edit) = hidden_param_edit(text, fd) {
                edits.push(edit);
            }
        }
    }

    let body = apply_edits(text, edits);
    let mut source = prelude();
    source.push_str(&format!("#line 1 \"{}\"\n", c_escape(file_name)));
    source.push_str(&body);
    Ok(Instrumented {
        file_name: file_name.to_string(),
        source,
        kernels,
    })
}

/// Applies non-overlapping edits back to front; an edit overlapping one already applied is
/// dropped rather than corrupting the text.
fn apply_edits(text: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
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
struct FileScan<'t> {
    kernel_defs: Vec<Node<'t>>,
    /// Declarations and explicit instantiations of kernels: they need the hidden parameters too,
    /// or they would no longer match the definition.
    kernel_decls: Vec<Node<'t>>,
    /// File-scope arrays (`__constant__ float c[16]`, `extern __shared__ float s[]`).
    globals: Vec<(String, Binding)>,
    /// Macros whose body indexes something (`#define AT(i) in[i]`): uses cannot be checked.
    index_macros: HashMap<String, bool>,
}

fn scan_file<'t>(src: &str, root: Node<'t>) -> FileScan<'t> {
    let mut scan = FileScan {
        kernel_defs: Vec::new(),
        kernel_decls: Vec::new(),
        globals: Vec::new(),
        index_macros: HashMap::new(),
    };
    let mut stack = vec![root];
    let mut visited = 0usize;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > MAX_WALK * 10 {
            break;
        }
        match node.kind() {
            "function_definition" => {
                if has_global(node) {
                    scan.kernel_defs.push(node);
                }
            }
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
                    if body.contains('[') {
                        scan.index_macros
                            .insert(name.to_string(), node.kind() == "preproc_function_def");
                    }
                }
            }
            "translation_unit" | "linkage_specification" | "declaration_list"
            | "namespace_definition" | "template_declaration" | "preproc_if" | "preproc_ifdef"
            | "preproc_else" | "preproc_elif" | "preproc_elifdef" => {
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

fn has_global(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).any(|c| c.kind() == "__global__");
    found
}

/// The `function_declarator` under a definition's or declaration's declarator chain.
fn function_declarator(node: Node<'_>) -> Option<Node<'_>> {
    let mut cur = node.child_by_field_name("declarator")?;
    for _ in 0..16 {
        if cur.kind() == "function_declarator" {
            return Some(cur);
        }
        cur = cur.child_by_field_name("declarator")?;
    }
    None
}

fn kernel_name(src: &str, fd: Node<'_>) -> String {
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
fn hidden_param_edit(src: &str, fd: Node<'_>) -> Option<(Range<usize>, String)> {
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
struct ParamInfo {
    ordinal: u32,
    name: Option<String>,
    /// Levels of pointer (`float*` 1, `float**` 2; `float a[]` counts as a pointer).
    depth: u32,
}

fn params_of(src: &str, fd: Node<'_>) -> Vec<ParamInfo> {
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
fn declarator_shape(src: &str, d: Option<Node<'_>>) -> (Option<String>, u32, Vec<Option<String>>) {
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
            "array_declarator" => {
                dims.push(n.child_by_field_name("size").map(|s| text_of(src, s).to_string()))
            }
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
fn named_declarator_child(n: Node<'_>) -> Option<Node<'_>> {
    if let Some(d) = n.child_by_field_name("declarator") {
        return Some(d);
    }
    let mut cursor = n.walk();
    let found = n
        .named_children(&mut cursor)
        .find(|c| !matches!(c.kind(), "type_qualifier" | "ms_pointer_modifier" | "comment"));
    found
}

/// Arrays declared by a declaration: fixed-size ones become [`Binding::Array`], `extern
/// __shared__ T s[]` becomes [`Binding::ExternShared`].
fn declared_arrays(src: &str, decl: Node<'_>, file_scope: bool) -> Vec<(String, Binding)> {
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
        } else if dims.iter().all(Option::is_some) {
            let dims: Vec<String> = dims.into_iter().flatten().collect();
            out.push((
                name,
                Binding::Array {
                    dims,
                    local: !file_scope && !is_shared,
                },
            ));
        }
    }
    out
}

/// Whether a declaration carries `__shared__`, and whether it is `extern`.
fn qualifiers(src: &str, decl: Node<'_>) -> (bool, bool) {
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
enum Binding {
    /// A kernel parameter; `depth` > 0 for pointers.
    Param { ordinal: u32, depth: u32 },
    /// `T* name = root + offset`: `base` is the C expression of the total offset from the
    /// parameter with `ordinal`.
    Alias { ordinal: u32, base: String },
    /// A fixed-size array (shared, file scope or local) with its dimension expressions.
    Array { dims: Vec<String>, local: bool },
    /// `extern __shared__ T s[]`: checked against the launch's dynamic shared bytes.
    ExternShared,
    /// A local pointer whose target is unknown (`cast` when it came from a cast of a buffer).
    LocalPointer { cast: bool },
    /// Any other local: shadows outer names.
    Local,
}

/// How a checked access uses its element, and whether a miss must land in global memory.
#[derive(Clone, Copy, Debug)]
struct Use {
    kind: SiteKind,
    global: bool,
}

struct KernelCx<'a, 't> {
    src: &'a str,
    file_name: &'a str,
    opts: &'a InstrumentOptions,
    index_macros: &'a HashMap<String, bool>,
    num_params: u32,
    scopes: Vec<Vec<(String, Binding)>>,
    reassigned: HashSet<String>,
    /// Re-emitted text to use for a node instead of re-emitting it.
    overrides: HashMap<usize, String>,
    /// Nodes to re-emit without treating them as accesses (`&p[n]` given away, partial indexes).
    plain: HashSet<usize>,
    /// A use imposed by the context (`&p[i]` passed to `atomicAdd`).
    forced: HashMap<usize, Use>,
    next_site: &'a mut u32,
    sites: Vec<Site>,
    coverage: Coverage,
    used_slot: bool,
    _tree: std::marker::PhantomData<Node<'t>>,
}

impl<'a, 't> KernelCx<'a, 't> {
    fn new(
        src: &'a str,
        file_name: &'a str,
        opts: &'a InstrumentOptions,
        file: &'a FileScan<'t>,
        params: &[ParamInfo],
        next_site: &'a mut u32,
    ) -> Self {
        let param_scope = params
            .iter()
            .filter_map(|p| {
                p.name.clone().map(|n| {
                    (
                        n,
                        Binding::Param {
                            ordinal: p.ordinal,
                            depth: p.depth,
                        },
                    )
                })
            })
            .collect();
        Self {
            src,
            file_name,
            opts,
            index_macros: &file.index_macros,
            num_params: params.len() as u32,
            scopes: vec![file.globals.clone(), param_scope],
            reassigned: HashSet::new(),
            overrides: HashMap::new(),
            plain: HashSet::new(),
            forced: HashMap::new(),
            next_site,
            sites: Vec::new(),
            coverage: Coverage::default(),
            used_slot: false,
            _tree: std::marker::PhantomData,
        }
    }

    fn text(&self, n: Node<'_>) -> &'a str {
        text_of(self.src, n)
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, b)| b))
    }

    fn bind(&mut self, name: String, b: Binding) {
        if let Some(top) = self.scopes.last_mut() {
            top.push((name, b));
        }
    }

    /// Names assigned to, incremented or whose address is taken anywhere in the body: a pointer
    /// among them may not point where its length says, so its accesses are not checked.
    fn collect_reassigned(&mut self, body: Node<'t>) {
        let mut stack = vec![body];
        let mut visited = 0usize;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > MAX_WALK * 10 {
                break;
            }
            let target = match n.kind() {
                "assignment_expression" => n.child_by_field_name("left"),
                "update_expression" => n.child_by_field_name("argument"),
                "pointer_expression" if operator_text(self.src, n) == "&" => {
                    n.child_by_field_name("argument")
                }
                _ => None,
            };
            if let Some(t) = target.map(strip_parens) {
                if t.kind() == "identifier" {
                    self.reassigned.insert(self.text(t).to_string());
                }
            }
            let mut cursor = n.walk();
            stack.extend(n.children(&mut cursor));
        }
    }

    /// The node's text with its accesses checked, with as many newlines as the original so the
    /// lines after it keep their numbers (a rewrite that drops the source between `p +` and
    /// `i` in `*(p +\n i)` puts the newline back at its end).
    fn emit(&mut self, node: Node<'t>, depth: usize) -> String {
        let mut t = self.emit_node(node, depth);
        let want = self.text(node).matches('\n').count();
        let have = t.matches('\n').count();
        for _ in have..want {
            t.push('\n');
        }
        t
    }

    fn emit_node(&mut self, node: Node<'t>, depth: usize) -> String {
        if let Some(t) = self.overrides.remove(&node.id()) {
            return t;
        }
        if depth > MAX_DEPTH {
            self.skip_if_tracked(node, SkipReason::TooDeep);
            return self.text(node).to_string();
        }
        // A statement the parser only half understood is copied as written: a rewrite around
        // the broken part would not compile any better than the original.
        let broken_statement = node.has_error()
            && matches!(
                node.kind(),
                "expression_statement" | "declaration" | "return_statement"
            );
        if node.is_error() || node.is_missing() || broken_statement {
            self.skip_if_tracked(node, SkipReason::SyntaxError);
            return self.text(node).to_string();
        }
        if self.plain.contains(&node.id()) {
            return self.emit_children(node, depth);
        }
        let special = match node.kind() {
            "subscript_expression" => self.subscript(node, depth),
            "pointer_expression" => self.pointer_expression(node, depth),
            "field_expression" => self.arrow(node, depth),
            "call_expression" => self.call(node, depth),
            "declaration" => Some(self.declaration(node, depth)),
            "compound_statement" | "for_statement" | "for_range_loop" => {
                self.scopes.push(Vec::new());
                let t = self.emit_children(node, depth);
                self.scopes.pop();
                Some(t)
            }
            "gnu_asm_expression" | "asm_statement" => {
                self.skip_if_tracked(node, SkipReason::InlineAsm);
                Some(self.text(node).to_string())
            }
            "lambda_expression" => {
                let name = "a lambda".to_string();
                self.skip_if_tracked(node, SkipReason::PassedToFunction { function: name });
                Some(self.text(node).to_string())
            }
            "identifier" => {
                let name = self.text(node);
                if self.index_macros.get(name) == Some(&false) {
                    let macro_name = name.to_string();
                    self.skip(node, SkipReason::MacroBody { macro_name });
                }
                None
            }
            _ => None,
        };
        match special {
            Some(t) => t,
            None => self.emit_children(node, depth),
        }
    }

    fn emit_children(&mut self, node: Node<'t>, depth: usize) -> String {
        let mut out = String::new();
        let mut at = node.start_byte();
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
        for c in children {
            if c.start_byte() < at {
                continue;
            }
            out.push_str(slice(self.src, at, c.start_byte()));
            let t = self.emit(c, depth + 1);
            out.push_str(&t);
            at = c.end_byte();
        }
        out.push_str(slice(self.src, at, node.end_byte()));
        out
    }

    // ---- accesses ----

    /// `a[i]`, `a[i][j]`: a chain of subscripts on a tracked buffer.
    fn subscript(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
        let (base, chain) = subscript_chain(node)?;
        if base.kind() == "cast_expression" || is_cast_call(self.src, base) {
            self.skip_if_tracked_as(node, base, SkipReason::PointerCast);
            return None;
        }
        if base.kind() != "identifier" {
            return None;
        }
        let name = self.text(base).to_string();
        let binding = self.lookup(&name)?.clone();
        let indices: Vec<Node<'t>> = chain.iter().filter_map(|s| single_index(*s)).collect();
        if indices.len() != chain.len() {
            return None;
        }
        match binding {
            Binding::Param { ordinal, depth: pd } if pd > 0 => {
                if chain.len() > 1 {
                    self.skip(node, SkipReason::NestedPointer);
                    return None;
                }
                if self.reassigned.contains(&name) {
                    self.skip(node, SkipReason::PointerReassigned { name });
                    return None;
                }
                let use_ = self.use_of(node);
                let idx = self.emit(indices[0], depth + 1);
                Some(self.checked_pointer(node, &name, ordinal, None, &idx, use_))
            }
            Binding::Alias { ordinal, base: off } => {
                if chain.len() > 1 {
                    self.skip(node, SkipReason::NestedPointer);
                    return None;
                }
                if self.reassigned.contains(&name) {
                    self.skip(node, SkipReason::PointerReassigned { name });
                    return None;
                }
                let use_ = self.use_of(node);
                let idx = self.emit(indices[0], depth + 1);
                Some(self.checked_pointer(node, &name, ordinal, Some(&off), &idx, use_))
            }
            Binding::Array { dims, local } => {
                if local && !self.opts.check_local_arrays {
                    return None;
                }
                if chain.len() < dims.len() {
                    self.skip(
                        node,
                        SkipReason::PartialIndex {
                            dims: dims.len(),
                            indexed: chain.len(),
                        },
                    );
                    for s in &chain {
                        self.plain.insert(s.id());
                    }
                    return None;
                }
                if chain.len() > dims.len() {
                    self.skip(node, SkipReason::NestedPointer);
                    return None;
                }
                let use_ = self.use_of(node);
                let mut args = String::new();
                for (i, d) in indices.iter().zip(&dims) {
                    let idx = self.emit(*i, depth + 1);
                    args.push_str(&format!(", ({idx}), ({d})"));
                }
                let zeros = "[0]".repeat(dims.len());
                let site = self.new_site(node, &name, use_.kind);
                self.coverage.instrumented += 1;
                self.used_slot = true;
                Some(format!(
                    "__cc_at_md(&({name}){zeros}, __cc_rec, {site}u, {}, __cc_slot{args})",
                    kind_arg(use_)
                ))
            }
            Binding::ExternShared => {
                if chain.len() > 1 {
                    self.skip(node, SkipReason::NestedPointer);
                    return None;
                }
                let use_ = self.use_of(node);
                let idx = self.emit(indices[0], depth + 1);
                let site = self.new_site(node, &name, use_.kind);
                self.coverage.instrumented += 1;
                self.used_slot = true;
                Some(format!(
                    "__cc_at(&({name})[0], __cc_rec, {site}u, {}, __cc_slot, ({idx}), __cc_len[{}] / sizeof(({name})[0]))",
                    kind_arg(use_),
                    self.num_params
                ))
            }
            Binding::LocalPointer { cast } => {
                let reason = if cast {
                    SkipReason::PointerCast
                } else {
                    SkipReason::UnknownAlias { name }
                };
                self.skip(node, reason);
                for s in &chain {
                    self.plain.insert(s.id());
                }
                None
            }
            Binding::Param { .. } | Binding::Local => None,
        }
    }

    /// The checked form of `ptr[idx]` for a parameter or an alias of one.
    fn checked_pointer(
        &mut self,
        node: Node<'t>,
        ptr: &str,
        ordinal: u32,
        base: Option<&str>,
        idx: &str,
        use_: Use,
    ) -> String {
        let site = self.new_site(node, ptr, use_.kind);
        self.coverage.instrumented += 1;
        self.used_slot = true;
        let kind = kind_arg(use_);
        match base {
            None => format!(
                "__cc_at({ptr}, __cc_rec, {site}u, {kind}, __cc_slot, ({idx}), __cc_len[{ordinal}])"
            ),
            Some(b) => format!(
                "__cc_at_off({ptr}, __cc_rec, {site}u, {kind}, __cc_slot, {b}, ({idx}), __cc_len[{ordinal}])"
            ),
        }
    }

    /// A pointer parameter or alias that may be checked, with its ordinal and base offset.
    fn tracked_pointer(&self, n: Node<'_>) -> Option<(String, u32, Option<String>)> {
        let n = strip_parens(n);
        if n.kind() != "identifier" {
            return None;
        }
        let name = self.text(n).to_string();
        if self.reassigned.contains(&name) {
            return None;
        }
        match self.lookup(&name)? {
            Binding::Param { ordinal, depth } if *depth > 0 => Some((name, *ordinal, None)),
            Binding::Alias { ordinal, base } => Some((name, *ordinal, Some(base.clone()))),
            _ => None,
        }
    }

    /// `*p`, `*(p + i)`, and `&a[i]` handed to an atomic or a global load.
    fn pointer_expression(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
        let arg = node.child_by_field_name("argument")?;
        match operator_text(self.src, node) {
            "*" => {
                let (ptr, ordinal, base, idx) = self.pointer_plus_offset(arg, depth)?;
                let use_ = self.use_of(node);
                Some(self.checked_pointer(node, &ptr, ordinal, base.as_deref(), &idx, use_))
            }
            "&" => {
                let inner = strip_parens(arg);
                if inner.kind() != "subscript_expression" {
                    return None;
                }
                let (base, chain) = subscript_chain(inner)?;
                let tracked = base.kind() == "identifier"
                    && matches!(
                        self.lookup(self.text(base)),
                        Some(
                            Binding::Param { .. }
                                | Binding::Alias { .. }
                                | Binding::Array { .. }
                                | Binding::ExternShared
                        )
                    );
                if !tracked {
                    return None;
                }
                match enclosing_call_name(self.src, node) {
                    Some(f) if f.starts_with("atomic") => {
                        self.forced.insert(
                            inner.id(),
                            Use {
                                kind: SiteKind::Atomic,
                                global: true,
                            },
                        );
                    }
                    Some(f) if GLOBAL_LOADS.contains(&f) => {
                        self.forced.insert(
                            inner.id(),
                            Use {
                                kind: SiteKind::Read,
                                global: true,
                            },
                        );
                    }
                    _ => {
                        // `&p[n]` may legally point one past the end: taking the address is not
                        // an access, and where it is used is out of sight.
                        self.skip(node, SkipReason::AddressEscapes);
                        for s in &chain {
                            self.plain.insert(s.id());
                        }
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// `p`, `p + i`, `i + p`, `p - i` for a tracked pointer: its name, ordinal, base and the
    /// re-emitted index expression.
    fn pointer_plus_offset(
        &mut self,
        arg: Node<'t>,
        depth: usize,
    ) -> Option<(String, u32, Option<String>, String)> {
        let e = strip_parens(arg);
        if let Some((p, o, b)) = self.tracked_pointer(e) {
            return Some((p, o, b, "0".to_string()));
        }
        if e.kind() != "binary_expression" {
            return None;
        }
        let op = operator_text(self.src, e);
        let left = e.child_by_field_name("left")?;
        let right = e.child_by_field_name("right")?;
        if op != "+" && op != "-" {
            return None;
        }
        if let Some((p, o, b)) = self.tracked_pointer(left) {
            let idx = self.emit(right, depth + 1);
            if op == "-" {
                return Some((p, o, b, format!("-({idx})")));
            }
            return Some((p, o, b, idx));
        }
        if op == "+" {
            if let Some((p, o, b)) = self.tracked_pointer(right) {
                let idx = self.emit(left, depth + 1);
                return Some((p, o, b, idx));
            }
        }
        None
    }

    /// `p->field` on a tracked pointer: element 0.
    fn arrow(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
        if operator_text(self.src, node) != "->" {
            return None;
        }
        let arg = node.child_by_field_name("argument")?;
        let (ptr, ordinal, base) = self.tracked_pointer(arg)?;
        let use_ = self.use_of(node);
        let checked = self.checked_pointer(node, &ptr, ordinal, base.as_deref(), "0", use_);
        self.overrides.insert(arg.id(), format!("(&{checked})"));
        Some(self.emit_children(node, depth))
    }

    /// Assertions, pointers passed to functions, and index macros.
    fn call(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
        let function = node.child_by_field_name("function")?;
        let fname = callee_name(self.src, function).to_string();
        let args_node = node.child_by_field_name("arguments")?;
        let mut cursor = args_node.walk();
        let args: Vec<Node<'t>> = args_node
            .named_children(&mut cursor)
            .filter(|n| n.kind() != "comment")
            .collect();

        if fname == "assert" && self.opts.rewrite_asserts && args.len() == 1 {
            let cond_text = squash(self.text(args[0]));
            let mut msg = cond_text.clone();
            let line = node.start_position().row + 1;
            if self.opts.file_name_in_records {
                msg = format!("{}:{line}: {cond_text}", self.file_name);
            }
            let site = self.new_site(node, &cond_text, SiteKind::Assert);
            let cond = self.emit(args[0], depth + 1);
            let msg = c_escape(truncate(&msg, 63));
            return Some(format!(
                "__cc_assert(({cond}), {site}u, \"{msg}\", __LINE__, __cc_rec)"
            ));
        }
        if fname == "CUDACHECK_ASSERT" && args.len() == 2 {
            let cond_text = squash(self.text(args[0]));
            let site = self.new_site(node, &cond_text, SiteKind::Assert);
            let cond = self.emit(args[0], depth + 1);
            let msg = self.emit(args[1], depth + 1);
            return Some(format!(
                "__cc_assert(({cond}), {site}u, ({msg}), __LINE__, __cc_rec)"
            ));
        }
        if self.index_macros.get(&fname) == Some(&true) {
            self.skip(node, SkipReason::MacroBody { macro_name: fname });
            return None;
        }
        if fname.starts_with("atomic") {
            // `atomicAdd(p + i, v)`: the address argument is an access like `&p[i]`.
            if let Some(first) = args.first().copied() {
                if strip_parens(first).kind() != "pointer_expression" {
                    if let Some((ptr, ordinal, base, idx)) = self.pointer_plus_offset(first, depth)
                    {
                        let use_ = Use {
                            kind: SiteKind::Atomic,
                            global: true,
                        };
                        let checked =
                            self.checked_pointer(first, &ptr, ordinal, base.as_deref(), &idx, use_);
                        self.overrides.insert(first.id(), format!("&{checked}"));
                    }
                }
            }
            return None;
        }
        if GLOBAL_LOADS.contains(&fname.as_str()) || is_cast_call(self.src, node) {
            return None;
        }
        for a in &args {
            let e = strip_parens(*a);
            let mentioned = match e.kind() {
                "identifier" => Some(e),
                "binary_expression" => e
                    .child_by_field_name("left")
                    .filter(|l| strip_parens(*l).kind() == "identifier")
                    .or_else(|| e.child_by_field_name("right"))
                    .map(strip_parens),
                _ => None,
            };
            if let Some(id) = mentioned.filter(|n| n.kind() == "identifier") {
                if self.is_buffer(self.text(id)) {
                    let function = fname.clone();
                    self.skip(*a, SkipReason::PassedToFunction { function });
                }
            }
        }
        None
    }

    /// Whether `name` is a buffer whose accesses the instrumenter checks.
    fn is_buffer(&self, name: &str) -> bool {
        matches!(
            self.lookup(name),
            Some(Binding::Param { depth: 1.., .. })
                | Some(Binding::Alias { .. })
                | Some(Binding::Array { .. })
                | Some(Binding::ExternShared)
        )
    }

    // ---- declarations ----

    /// Binds the declared names; `T* q = p + off` (a statement in a block) becomes an alias,
    /// with `long long __cc_base_q = (long long)(off);` emitted just before it on the same line.
    fn declaration(&mut self, node: Node<'t>, depth: usize) -> String {
        let in_block = node
            .parent()
            .is_some_and(|p| p.kind() == "compound_statement");
        let mut prefix = String::new();
        let mut binds: Vec<(String, Binding)> = Vec::new();
        let mut cursor = node.walk();
        let declarators: Vec<Node<'t>> = node
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for d in declarators {
            let (name, pdepth, dims) = declarator_shape(self.src, Some(d));
            let Some(name) = name else { continue };
            let value = if d.kind() == "init_declarator" {
                d.child_by_field_name("value")
            } else {
                None
            };
            if let (Some(v), true, 1, true) = (value, in_block, pdepth, dims.is_empty()) {
                if !self.reassigned.contains(&name) {
                    if let Some((parent, ordinal, parent_base, off)) =
                        self.pointer_offset_init(v, depth)
                    {
                        let var = format!("__cc_base_{name}");
                        prefix.push_str(&format!("long long {var} = (long long)({off}); "));
                        self.overrides.insert(v.id(), format!("{parent} + {var}"));
                        let base = match parent_base {
                            Some(pb) => format!("{pb} + {var}"),
                            None => var,
                        };
                        binds.push((name, Binding::Alias { ordinal, base }));
                        continue;
                    }
                }
            }
            let b = if pdepth > 0 {
                let cast = value.is_some_and(|v| {
                    let v = strip_parens(v);
                    (v.kind() == "cast_expression" || is_cast_call(self.src, v))
                        && self.mentions_buffer(v).is_some()
                });
                Binding::LocalPointer { cast }
            } else if !dims.is_empty() {
                match declared_arrays(self.src, node, false)
                    .into_iter()
                    .find(|(n, _)| *n == name)
                {
                    Some((_, b)) => b,
                    None => Binding::Local,
                }
            } else {
                Binding::Local
            };
            binds.push((name, b));
        }
        let body = self.emit_children(node, depth);
        for (n, b) in binds {
            self.bind(n, b);
        }
        prefix + &body
    }

    /// `p`, `p + off`, `off + p`, `p - off`, `&p[off]` for a tracked pointer `p`: the parent's
    /// name, ordinal and base, and the re-emitted offset of this step.
    fn pointer_offset_init(
        &mut self,
        v: Node<'t>,
        depth: usize,
    ) -> Option<(String, u32, Option<String>, String)> {
        let e = strip_parens(v);
        if e.kind() == "pointer_expression" && operator_text(self.src, e) == "&" {
            let inner = strip_parens(e.child_by_field_name("argument")?);
            if inner.kind() != "subscript_expression" {
                return None;
            }
            let arg = inner.child_by_field_name("argument")?;
            let (p, o, b) = self.tracked_pointer(arg)?;
            let idx = single_index(inner)?;
            let off = self.emit(idx, depth + 1);
            return Some((p, o, b, off));
        }
        self.pointer_plus_offset(e, depth)
    }

    // ---- bookkeeping ----

    fn use_of(&self, node: Node<'t>) -> Use {
        if let Some(u) = self.forced.get(&node.id()) {
            return *u;
        }
        Use {
            kind: access_kind(self.src, node),
            global: false,
        }
    }

    fn new_site(&mut self, node: Node<'_>, buffer: &str, kind: SiteKind) -> u32 {
        let id = *self.next_site;
        *self.next_site += 1;
        let p = node.start_position();
        self.sites.push(Site {
            id,
            line: p.row as u32 + 1,
            column: p.column as u32 + 1,
            buffer: buffer.to_string(),
            kind,
        });
        id
    }

    fn skip(&mut self, node: Node<'_>, reason: SkipReason) {
        let p = node.start_position();
        let (line, column) = (p.row as u32 + 1, p.column as u32 + 1);
        if self
            .coverage
            .skipped
            .iter()
            .any(|s| s.line == line && s.column == column && s.reason == reason)
        {
            return;
        }
        let text = truncate(self.text(node).lines().next().unwrap_or(""), 80).to_string();
        self.coverage.skipped.push(SkippedAccess {
            line,
            column,
            text,
            reason,
        });
    }

    fn skip_if_tracked(&mut self, node: Node<'_>, reason: SkipReason) {
        if self.mentions_buffer(node).is_some() {
            self.skip(node, reason);
        }
    }

    fn skip_if_tracked_as(&mut self, at: Node<'_>, within: Node<'_>, reason: SkipReason) {
        if self.mentions_buffer(within).is_some() {
            self.skip(at, reason);
        }
    }

    /// The first identifier under `node` naming a checked buffer.
    fn mentions_buffer(&self, node: Node<'_>) -> Option<String> {
        let mut stack = vec![node];
        let mut visited = 0usize;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > MAX_WALK {
                return None;
            }
            if n.kind() == "identifier" && self.is_buffer(self.text(n)) {
                return Some(self.text(n).to_string());
            }
            let mut cursor = n.walk();
            stack.extend(n.children(&mut cursor));
        }
        None
    }
}

/// The C expression for a site's kind argument.
fn kind_arg(u: Use) -> String {
    if u.global {
        format!("{} | __CC_GLOBAL", u.kind.cuda_constant())
    } else {
        u.kind.cuda_constant().to_string()
    }
}

/// Read, write or read-modify-write, from where the access sits: the left side of `=` is a
/// write, of a compound assignment or `++`/`--` a read-modify-write; member access (`p[i].x`)
/// and parentheses pass the question up.
fn access_kind(src: &str, node: Node<'_>) -> SiteKind {
    let mut cur = node;
    for _ in 0..64 {
        let Some(parent) = cur.parent() else { break };
        match parent.kind() {
            "parenthesized_expression" => cur = parent,
            "field_expression"
                if operator_text(src, parent) == "."
                    && parent.child_by_field_name("argument") == Some(cur) =>
            {
                cur = parent
            }
            "assignment_expression" if parent.child_by_field_name("left") == Some(cur) => {
                return if operator_text(src, parent) == "=" {
                    SiteKind::Write
                } else {
                    SiteKind::ReadWrite
                };
            }
            // `p[i].arr[j] = v` writes into the element too.
            "subscript_expression"
                if cur.kind() == "field_expression"
                    && parent.child_by_field_name("argument") == Some(cur) =>
            {
                cur = parent
            }
            "update_expression" => return SiteKind::ReadWrite,
            _ => break,
        }
    }
    SiteKind::Read
}

/// For `a[i][j]`: the base `a` (parentheses stripped) and the subscripts from the base outward
/// (`a[i]`, then `a[i][j]`).
fn subscript_chain(node: Node<'_>) -> Option<(Node<'_>, Vec<Node<'_>>)> {
    let mut chain = vec![node];
    let mut cur = node;
    for _ in 0..16 {
        let arg = strip_parens(cur.child_by_field_name("argument")?);
        if arg.kind() == "subscript_expression" {
            chain.push(arg);
            cur = arg;
        } else {
            chain.reverse();
            return Some((arg, chain));
        }
    }
    None
}

/// The one index expression of a subscript (`p[i]`), if it has exactly one.
fn single_index(sub: Node<'_>) -> Option<Node<'_>> {
    let list = sub.child_by_field_name("indices")?;
    let mut cursor = list.walk();
    let idx: Vec<Node<'_>> = list
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    match idx.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

fn strip_parens(mut n: Node<'_>) -> Node<'_> {
    for _ in 0..64 {
        if n.kind() != "parenthesized_expression" {
            break;
        }
        let mut cursor = n.walk();
        let inner = n.named_children(&mut cursor).find(|c| c.kind() != "comment");
        match inner {
            Some(i) => n = i,
            None => break,
        }
    }
    n
}

/// `reinterpret_cast<T*>(p)` and friends.
fn is_cast_call(src: &str, n: Node<'_>) -> bool {
    n.kind() == "call_expression"
        && n.child_by_field_name("function").is_some_and(|f| {
            matches!(
                callee_name(src, f),
                "reinterpret_cast" | "static_cast" | "const_cast" | "dynamic_cast"
            )
        })
}

fn callee_name<'s>(src: &'s str, f: Node<'_>) -> &'s str {
    match f.kind() {
        "template_function" => f
            .child_by_field_name("name")
            .map_or("", |n| text_of(src, n)),
        "field_expression" => f
            .child_by_field_name("field")
            .map_or("", |n| text_of(src, n)),
        _ => text_of(src, f),
    }
}

/// The name of the function a `&x` argument is passed to, if it is one.
fn enclosing_call_name<'s>(src: &'s str, node: Node<'_>) -> Option<&'s str> {
    let mut cur = node.parent()?;
    while cur.kind() == "parenthesized_expression" {
        cur = cur.parent()?;
    }
    if cur.kind() != "argument_list" {
        return None;
    }
    let call = cur.parent()?;
    if call.kind() != "call_expression" {
        return None;
    }
    Some(callee_name(src, call.child_by_field_name("function")?))
}

fn operator_text<'s>(src: &'s str, n: Node<'_>) -> &'s str {
    n.child_by_field_name("operator")
        .map_or("", |o| text_of(src, o))
}

fn text_of<'s>(src: &'s str, n: Node<'_>) -> &'s str {
    slice(src, n.start_byte(), n.end_byte())
}

/// `src[a..b]`, or "" where that is not a valid range of `src` (never panics).
fn slice(src: &str, a: usize, b: usize) -> &str {
    src.get(a..b).unwrap_or("")
}

/// One line, runs of white space collapsed: an assertion's condition as a message.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` bytes of `s`, cut on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` as the contents of a C string literal.
fn c_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '?' => out.push_str("\\?"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
