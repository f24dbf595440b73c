//! The access forms: `a[i]` chains, `*(p + i)`, `p->f`, `&a[i]` given to atomics, and calls
//! (assertions, buffers passed to functions, index macros).

use tree_sitter::Node;

use super::super::coverage::{SiteKind, SkipReason};
use super::super::scan::Binding;
use super::super::syntax::{
    c_escape, callee_name, enclosing_call_name, is_cast_call, loop_counter_below, operator_text,
    single_index, squash, strip_parens, subscript_chain, truncate, value_context,
};
use super::{kind_arg, KernelCx, Use, GLOBAL_LOADS};

impl<'t> KernelCx<'_, 't> {
    // ---- accesses ----

    /// `a[i]`, `a[i][j]`: a chain of subscripts on a tracked buffer.
    pub(super) fn subscript(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
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
                self.pointer_subscript(node, name, ordinal, None, &indices, depth)
            }
            Binding::Alias { ordinal, base } => {
                self.pointer_subscript(node, name, ordinal, Some(base), &indices, depth)
            }
            Binding::Array {
                dims,
                local,
                shared,
            } => {
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
                    // A negated extent tells the prelude the index is proven in range.
                    let sign = if loop_counter_below(self.src, *i, d) {
                        "-"
                    } else {
                        ""
                    };
                    args.push_str(&format!(", ({idx}), {sign}({d})"));
                }
                let zeros = "[0]".repeat(dims.len());
                let site = self.new_site(node, &name, use_.kind);
                self.coverage.instrumented += 1;
                self.used_slot = true;
                let space = if shared {
                    " | __CC_SHARED"
                } else if local {
                    " | __CC_LOCAL"
                } else {
                    ""
                };
                Some(format!(
                    "{}_md(&({name}){zeros}, __cc_rec, {site}u, {}{space}, __cc_slot{args})",
                    self.accessor(node, use_),
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
                let len = format!(
                    "__CC_DYN_BYTES(__cc_len[{}]) / sizeof(({name})[0])",
                    self.num_params
                );
                let h = hoisted_arg(self.hoist(&name, indices[0], None, &len));
                Some(format!(
                    "{}{h}(&({name})[0], __cc_rec, {site}u, {} | __CC_SHARED, __cc_slot, ({idx}), {len})",
                    self.accessor(node, use_),
                    kind_arg(use_),
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

    /// `ptr[index]` (one subscript) for a pointer parameter, or an alias of one at offset `base`: checked, with
    /// its check hoisted out of the enclosing loop where that is sound.
    fn pointer_subscript(
        &mut self,
        node: Node<'t>,
        name: String,
        ordinal: u32,
        base: Option<String>,
        indices: &[Node<'t>],
        depth: usize,
    ) -> Option<String> {
        let [index] = *indices else {
            self.skip(node, SkipReason::NestedPointer);
            return None;
        };
        if self.reassigned.contains(&name) {
            self.skip(node, SkipReason::PointerReassigned { name });
            return None;
        }
        let use_ = self.use_of(node);
        let idx = self.emit(index, depth + 1);
        let len = format!("__cc_len[{ordinal}]");
        let h = self.hoist(&name, index, base.as_deref(), &len);
        let access = PtrAccess {
            ptr: &name,
            ordinal,
            base: base.as_deref(),
            idx: &idx,
        };
        Some(self.checked_pointer(node, access, use_, h))
    }

    /// The checked form of `ptr[idx]` for a parameter or an alias of one; `hoisted` names the
    /// loop its check was hoisted to.
    pub(super) fn checked_pointer(
        &mut self,
        node: Node<'t>,
        a: PtrAccess<'_>,
        use_: Use,
        hoisted: Option<u32>,
    ) -> String {
        let PtrAccess {
            ptr,
            ordinal,
            base,
            idx,
        } = a;
        let site = self.new_site(node, ptr, use_.kind);
        self.coverage.instrumented += 1;
        self.used_slot = true;
        let kind = kind_arg(use_);
        let f = self.accessor(node, use_);
        let h = hoisted_arg(hoisted);
        match base {
            None => format!(
                "{f}{h}({ptr}, __cc_rec, {site}u, {kind}, __cc_slot, ({idx}), __cc_len[{ordinal}])"
            ),
            Some(b) => format!(
                "{f}_off{h}({ptr}, __cc_rec, {site}u, {kind}, __cc_slot, {b}, ({idx}), __cc_len[{ordinal}])"
            ),
        }
    }

    /// `__cc_rd` (by value) for reads used only as values, `__cc_at` (by reference) otherwise.
    fn accessor(&self, node: Node<'t>, use_: Use) -> &'static str {
        if use_.kind == SiteKind::Read && !use_.global && value_context(self.src, node) {
            "__cc_rd"
        } else {
            "__cc_at"
        }
    }

    /// A pointer parameter or alias that may be checked, with its ordinal and base offset.
    pub(super) fn tracked_pointer(&self, n: Node<'_>) -> Option<(String, u32, Option<String>)> {
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
    pub(super) fn pointer_expression(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
        let arg = node.child_by_field_name("argument")?;
        match operator_text(self.src, node) {
            "*" => {
                let target = self.pointer_plus_offset(arg, depth)?;
                let use_ = self.use_of(node);
                Some(self.checked_pointer(node, PtrAccess::of(&target), use_, None))
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
    pub(super) fn pointer_plus_offset(
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
    pub(super) fn arrow(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
        if operator_text(self.src, node) != "->" {
            return None;
        }
        let arg = node.child_by_field_name("argument")?;
        let (ptr, ordinal, base) = self.tracked_pointer(arg)?;
        let use_ = self.use_of(node);
        let checked = self.checked_pointer(
            node,
            PtrAccess {
                ptr: &ptr,
                ordinal,
                base: base.as_deref(),
                idx: "0",
            },
            use_,
            None,
        );
        self.overrides.insert(arg.id(), format!("(&{checked})"));
        Some(self.emit_children(node, depth))
    }

    /// Assertions, pointers passed to functions, and index macros.
    pub(super) fn call(&mut self, node: Node<'t>, depth: usize) -> Option<String> {
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
                    if let Some(target) = self.pointer_plus_offset(first, depth) {
                        let use_ = Use {
                            kind: SiteKind::Atomic,
                            global: true,
                        };
                        let checked =
                            self.checked_pointer(first, PtrAccess::of(&target), use_, None);
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
    pub(super) fn is_buffer(&self, name: &str) -> bool {
        matches!(
            self.lookup(name),
            Some(Binding::Param { depth: 1.., .. })
                | Some(Binding::Alias { .. })
                | Some(Binding::Array { .. })
                | Some(Binding::ExternShared)
        )
    }
}

/// A pointer-parameter access: the parameter (or alias) name, its ordinal, the alias's offset
/// from the parameter, and the re-emitted index.
pub(super) struct PtrAccess<'s> {
    ptr: &'s str,
    ordinal: u32,
    base: Option<&'s str>,
    idx: &'s str,
}

impl<'s> PtrAccess<'s> {
    /// From `pointer_plus_offset`'s (name, ordinal, base, index).
    fn of(t: &'s (String, u32, Option<String>, String)) -> Self {
        PtrAccess {
            ptr: &t.0,
            ordinal: t.1,
            base: t.2.as_deref(),
            idx: &t.3,
        }
    }
}

/// The template argument list of an access whose check was hoisted to loop `h`.
fn hoisted_arg(h: Option<u32>) -> String {
    h.map(|h| format!("<__cc_h{h}>")).unwrap_or_default()
}
