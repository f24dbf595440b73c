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
use super::scan::{
    apply_edits, declarator_shape, declared_arrays, function_declarator, hidden_param_edit,
    kernel_name, params_of, scan_file, Binding, FileScan, ParamInfo, MAX_WALK,
};
use super::syntax::{
    access_kind, c_escape, descendants, is_cast_call, operator_text, single_index, slice,
    strip_parens, text_of, truncate,
};

mod access;
mod hoist;
use super::{InstrumentError, InstrumentOptions, Instrumented, InstrumentedKernel, HIDDEN_PARAMS};

/// Nesting beyond which a subtree is copied unchanged: bounds the recursion on hostile input.
const MAX_DEPTH: usize = 160;

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
        cx.unstable = hoist::unstable_locals(text, body);
        let mut new_body = cx.emit(body, 0);
        if cx.used_slot && new_body.starts_with('{') {
            new_body.insert_str(1, " __cc_slot_t __cc_slot; __CC_ASSUME_BLOCK();");
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
    const_macros: &'a HashSet<String>,
    /// Locals that may change without an assignment in the body (references, `__shared__`).
    unstable: HashSet<String>,
    /// Enclosing `for` loops that checks may be hoisted to, innermost last.
    loops: Vec<hoist::LoopFrame<'t>>,
    next_loop: u32,
    /// `#pragma unroll` lines moved into a versioned loop's copies (emitted as `_Pragma`).
    taken_pragmas: HashSet<usize>,
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
            const_macros: &file.const_macros,
            unstable: HashSet::new(),
            loops: Vec::new(),
            next_loop: 0,
            taken_pragmas: HashSet::new(),
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
            "for_statement" => Some(self.for_statement(node, depth)),
            "compound_statement" | "for_range_loop" => {
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
        // (node id, text) per child, gaps as `usize::MAX`: a versioned loop may take the
        // `#pragma unroll` line emitted just before it, which is then blanked.
        let mut pieces: Vec<(usize, String)> = Vec::new();
        let mut at = node.start_byte();
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
        for c in children {
            if c.start_byte() < at {
                continue;
            }
            pieces.push((usize::MAX, slice(self.src, at, c.start_byte()).to_string()));
            let t = self.emit(c, depth + 1);
            pieces.push((c.id(), t));
            at = c.end_byte();
            if !self.taken_pragmas.is_empty() {
                for (id, text) in pieces.iter_mut() {
                    if self.taken_pragmas.remove(id) {
                        *text = "\n".repeat(text.matches('\n').count());
                    }
                }
            }
        }
        pieces.push((usize::MAX, slice(self.src, at, node.end_byte()).to_string()));
        pieces.into_iter().map(|(_, t)| t).collect()
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
        descendants(node, MAX_WALK)
            .find(|n| n.kind() == "identifier" && self.is_buffer(self.text(*n)))
            .map(|n| self.text(n).to_string())
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
