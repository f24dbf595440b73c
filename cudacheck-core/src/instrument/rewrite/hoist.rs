//! Checks hoisted out of loops (loop versioning).
//!
//! An access in a `for` loop whose index is a monotone function of the loop's counter, or does
//! not change in the loop at all, is in range on every iteration when it is in range at the
//! counter's first and last values: two checks before the loop instead of one per iteration
//! (per unrolled copy, in an unrolled loop, where the branches also keep the loads from issuing
//! together). A loop with such accesses is emitted twice:
//!
//! ```text
//! { const bool __cc_v3 = <every hoisted access in range at both ends>;
//!   if (__cc_v3) { constexpr bool __cc_h3 = true;  for (...) { ... __cc_rd<__cc_h3>(...) ... }
//! #line L "file"
//!   } else { constexpr bool __cc_h3 = false; for (...) { ... } } }
//! ```
//!
//! The hoisted accesses take `__cc_h3` as their template argument; `true` drops their check. The
//! second copy is the loop as it was instrumented before, so a launch with a fault reports it
//! exactly as without versioning. `#line` keeps the second copy's line numbers (diagnostics,
//! `__LINE__` in assertions) those of the user's file.
//!
//! Soundness, case by case (a check is only hoisted when every condition holds):
//! - The counter is declared in the loop's initializer with an integer type of at least 32 bits,
//!   compared with `<`/`<=` against a bound, stepped by `++` or `+= step` (the run-time
//!   condition requires `step > 0`), and never assigned in the body. So every iteration sees a
//!   value in `[first, last]`, where `first` is the initial value and `last` the bound (minus one
//!   for `<`); the condition also requires `first <= last`.
//! - Every other name in the index, the bounds and the step is a by-value parameter, a local
//!   scalar (not a reference, not `__shared__`, not `static` or `volatile`) declared outside the
//!   loop and never assigned, incremented or address-taken inside it, a built-in
//!   (`threadIdx.x`, ...) or a macro whose body is an integer constant.
//! - The index uses the counter at most once, through `+`, `-`, unary minus, `*` by an invariant
//!   and `<<`: a monotone function, so its extremes are at `first` and `last`. The check
//!   evaluates it in 64-bit arithmetic and requires it in `0..min(len, 2^31)`; the loop computes
//!   it in its own types, which agrees modulo 2^32 for these operators, hence exactly in that
//!   range.
//! - The loop has no barrier or warp-collective and calls nothing that might have one (only
//!   math built-ins, atomics and loads are allowed): the two copies may be taken by different
//!   threads of one block. It declares no `__shared__` or `static` variable (it would exist
//!   twice), and has no `goto`, labels, inline assembly or lambdas.
//!
//! A loop that contains a versioned loop is not versioned itself (code size stays at most
//! twice the original); its hoisted accesses keep their checks (`__cc_hN` becomes `false`).

use std::collections::HashSet;

use tree_sitter::Node;

use super::super::line_state;
use super::super::scan::{declarator_shape, qualifiers, Binding, MAX_WALK};
use super::super::syntax::{
    c_escape, callee_name, descendants, operator_text, squash, strip_parens, VALUE_ARG_CALLS,
};
use super::{KernelCx, GLOBAL_LOADS};

/// Integer types a loop counter may have (32 bits or more: a narrower counter could wrap back
/// below its first value).
const COUNTER_TYPES: &[&str] = &[
    "int",
    "signed",
    "signed int",
    "unsigned",
    "unsigned int",
    "long",
    "long int",
    "unsigned long",
    "long long",
    "long long int",
    "unsigned long long",
    "size_t",
    "ptrdiff_t",
    "int32_t",
    "uint32_t",
    "int64_t",
    "uint64_t",
];

/// Built-in variables that do not change during a launch.
const BUILTIN_DIMS: &[&str] = &["threadIdx", "blockIdx", "blockDim", "gridDim"];

/// Calls a versioned loop may contain besides the math built-ins: none of them synchronizes.
const SAFE_CALLS: &[&str] = &[
    "atomicAdd",
    "atomicSub",
    "atomicExch",
    "atomicMin",
    "atomicMax",
    "atomicInc",
    "atomicDec",
    "atomicCAS",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
    "assert",
    "CUDACHECK_ASSERT",
    "printf",
    "static_cast",
    "reinterpret_cast",
    "const_cast",
];

/// A `for` loop being emitted, with the checks hoisted to it so far.
pub(super) struct LoopFrame<'t> {
    id: u32,
    node: Node<'t>,
    counter: Option<Counter>,
    /// Run-time conditions, one per hoisted access: the access is in range at both ends.
    conds: Vec<String>,
    /// A loop inside this one was versioned.
    has_versioned: bool,
    /// Variables declared outside the loop that it assigns (scalars and local arrays).
    live_out: Vec<String>,
}

/// The loop's counter and the C expressions (64-bit) of its first and last values and step.
struct Counter {
    name: String,
    first: String,
    last: String,
    step: Option<String>,
}

impl<'t> KernelCx<'_, 't> {
    /// Emits a `for` loop, versioned when checks were hoisted to it.
    pub(super) fn for_statement(&mut self, node: Node<'t>, depth: usize) -> String {
        let frame = self.loop_frame(node);
        let framed = frame.is_some();
        if let Some(f) = frame {
            self.loops.push(f);
        }
        self.scopes.push(Vec::new());
        let text = self.emit_children(node, depth);
        self.scopes.pop();
        let Some(frame) = framed.then(|| self.loops.pop()).flatten() else {
            return text;
        };
        let marker = format!("<__cc_h{}>", frame.id);
        let versioned = !frame.conds.is_empty() && !frame.has_versioned;
        if let Some(outer) = self.loops.last_mut() {
            outer.has_versioned |= versioned || frame.has_versioned;
        }
        if !versioned {
            return text.replace(&marker, "<false>");
        }
        self.coverage.hoisted += frame.conds.len() as u32;
        let mut cond: Vec<String> = Vec::new();
        if let Some(c) = &frame.counter {
            cond.push(format!("{} <= {}", c.first, c.last));
            if let Some(s) = &c.step {
                cond.push(format!("{s} > 0"));
            }
        }
        cond.extend(frame.conds);
        let pragma = match self.unroll_pragma(node) {
            Some((pragma_id, arg)) => {
                self.taken_pragmas.insert(pragma_id);
                format!("_Pragma(\"{}\") ", c_escape(&arg))
            }
            None => String::new(),
        };
        let id = frame.id;
        // The loop's line as the preprocessor numbers it: the user's own `#line` directives
        // before it count.
        let (line, file) = line_state(self.src.get(..node.start_byte()).unwrap_or(""));
        let file = file.map_or_else(|| c_escape(self.file_name), str::to_string);
        // Results must stay bit-identical to the plain build's, so nothing the two copies have
        // in common may move out of them (a multiply left inside with its add moved after the
        // copies is no longer fused into one FMA): the empty `asm volatile` markers differ
        // between the copies and clobber memory (no common instruction or store is hoisted or
        // sunk past them), and `__cc_opaque` hides the values the copies leave behind.
        let keep: String = frame
            .live_out
            .iter()
            .map(|v| format!("__cc_opaque({v}); "))
            .collect();
        let mark = |what: &str| {
            format!("asm volatile(\"// cudacheck loop {id}: {what}\" ::: \"memory\"); ")
        };
        format!(
            "{{ const bool __cc_v{id} = {}; if (__cc_v{id}) {{ constexpr bool __cc_h{id} = true; {}{pragma}{text}\n#line {line} \"{file}\"\n{keep}{}}} else {{ constexpr bool __cc_h{id} = false; {}{pragma}{text} {keep}{}}} }}",
            cond.join(" && "),
            mark("proven"),
            mark("proven end"),
            mark("checked"),
            mark("checked end"),
        )
    }

    /// The checks of an access `ptr[index]` (`ptr` an alias at offset `base` when given) hoisted
    /// to the innermost enclosing loop where that is sound, and that loop's id.
    pub(super) fn hoist(
        &mut self,
        ptr: &str,
        index: Node<'_>,
        base: Option<&str>,
        len: &str,
    ) -> Option<u32> {
        let index = strip_parens(index);
        let frame = self.loops.last()?;
        if declares(self.src, frame.node, ptr) {
            return None;
        }
        let counter = frame.counter.as_ref().map(|c| c.name.as_str());
        let uses = counter.map_or(0, |c| count_name(self.src, index, c));
        let at = |x: &str| match base {
            Some(b) => format!("__cc_in(({b}) + {x}, {len})"),
            None => format!("__cc_in({x}, {len})"),
        };
        let cond = match (uses, counter, &frame.counter) {
            (0, _, _) if self.invariant_expr(frame.node, index, None) => {
                at(&self.wide(index, None, ""))
            }
            (1, Some(c), Some(fc))
                if self.invariant_expr(frame.node, index, Some(c))
                    && monotone_in(self.src, index, c) =>
            {
                let first = at(&self.wide(index, Some(c), &fc.first));
                let last = at(&self.wide(index, Some(c), &fc.last));
                format!("{first} && {last}")
            }
            _ => return None,
        };
        let frame = self.loops.last_mut()?;
        frame.conds.push(cond);
        Some(frame.id)
    }

    /// The frame for a loop that may be versioned (the counter is optional: without one, only
    /// indices that do not change in the loop are hoisted).
    fn loop_frame(&mut self, node: Node<'t>) -> Option<LoopFrame<'t>> {
        if node.has_error() || !self.versionable(node) {
            return None;
        }
        let counter = self.counter(node);
        let live_out = self.live_out(node);
        let id = self.next_loop;
        self.next_loop += 1;
        Some(LoopFrame {
            id,
            node,
            counter,
            conds: Vec::new(),
            has_versioned: false,
            live_out,
        })
    }

    /// `for (T v = first; v < bound; ++v | v++ | v += step)` with `v` not assigned in the body.
    fn counter(&self, node: Node<'t>) -> Option<Counter> {
        let init = node.child_by_field_name("initializer")?;
        if init.kind() != "declaration" {
            return None;
        }
        let ty = squash(self.text(init.child_by_field_name("type")?));
        if !COUNTER_TYPES.contains(&ty.as_str()) || init.named_child_count() != 2 {
            return None;
        }
        let d = init.child_by_field_name("declarator")?;
        if d.kind() != "init_declarator" {
            return None;
        }
        let name_node = d.child_by_field_name("declarator")?;
        if name_node.kind() != "identifier" {
            return None;
        }
        let name = self.text(name_node).to_string();
        let value = d.child_by_field_name("value")?;
        if !self.invariant_expr(node, value, None) {
            return None;
        }
        let cond = node.child_by_field_name("condition")?;
        if cond.kind() != "binary_expression" {
            return None;
        }
        let (l, r) = (
            strip_parens(cond.child_by_field_name("left")?),
            strip_parens(cond.child_by_field_name("right")?),
        );
        let is_counter = |n: Node<'_>| n.kind() == "identifier" && self.text(n) == name;
        let (bound, inclusive) = match operator_text(self.src, cond) {
            "<" if is_counter(l) => (r, false),
            "<=" if is_counter(l) => (r, true),
            ">" if is_counter(r) => (l, false),
            ">=" if is_counter(r) => (l, true),
            _ => return None,
        };
        if !self.invariant_expr(node, bound, None) {
            return None;
        }
        let update = strip_parens(node.child_by_field_name("update")?);
        let step = match update.kind() {
            "update_expression"
                if operator_text(self.src, update) == "++"
                    && update
                        .child_by_field_name("argument")
                        .is_some_and(is_counter) =>
            {
                None
            }
            "assignment_expression"
                if operator_text(self.src, update) == "+="
                    && update.child_by_field_name("left").is_some_and(is_counter) =>
            {
                let s = update.child_by_field_name("right")?;
                if !self.invariant_expr(node, s, None) {
                    return None;
                }
                Some(format!("((long long)({}))", self.text(s)))
            }
            _ => return None,
        };
        let body = node.child_by_field_name("body")?;
        if super::super::syntax::assigns(self.src, body, &name) {
            return None;
        }
        let bound = self.text(bound);
        let last = if inclusive {
            format!("((long long)({bound}))")
        } else {
            format!("((long long)({bound}) - 1)")
        };
        Some(Counter {
            first: format!("((long long)({ty})({}))", self.text(value)),
            last,
            step,
            name,
        })
    }

    /// Names of the thread's own variables (scalars, local arrays) declared outside `lp` and
    /// assigned in it: the values the loop leaves behind.
    fn live_out(&self, lp: Node<'_>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in descendants(lp, MAX_WALK) {
            let target = match n.kind() {
                "assignment_expression" => n.child_by_field_name("left"),
                "update_expression" => n.child_by_field_name("argument"),
                _ => None,
            };
            if let Some(name) = target.and_then(|t| self.assigned_variable(t)) {
                if !out.contains(&name) && !declares(self.src, lp, &name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// The variable an assignment target belongs to (`x`, `a[i][j]`, `s.f`), when it is one
    /// of the thread's own: a local scalar or array, or a by-value parameter.
    fn assigned_variable(&self, target: Node<'_>) -> Option<String> {
        let mut t = strip_parens(target);
        for _ in 0..32 {
            match t.kind() {
                "subscript_expression" => t = strip_parens(t.child_by_field_name("argument")?),
                "field_expression" if operator_text(self.src, t) == "." => {
                    t = strip_parens(t.child_by_field_name("argument")?)
                }
                _ => break,
            }
        }
        if t.kind() != "identifier" {
            return None;
        }
        let name = self.text(t);
        match self.lookup(name)? {
            Binding::Local | Binding::Param { depth: 0, .. } => Some(name.to_string()),
            Binding::Array { local: true, .. } => Some(name.to_string()),
            _ => None,
        }
    }

    /// Whether both copies of the loop may run side by side in one block: nothing in it
    /// synchronizes or exists once per block.
    fn versionable(&self, node: Node<'_>) -> bool {
        let mut walk = descendants(node, MAX_WALK);
        for n in &mut walk {
            match n.kind() {
                "call_expression" => {
                    let Some(f) = n.child_by_field_name("function") else {
                        return false;
                    };
                    let name = callee_name(self.src, f);
                    let known = SAFE_CALLS.contains(&name)
                        || GLOBAL_LOADS.contains(&name)
                        || (VALUE_ARG_CALLS.contains(&name) && !name.starts_with("__shfl"));
                    if !known {
                        return false;
                    }
                }
                "declaration" => {
                    let (shared, _) = qualifiers(self.src, n);
                    let text = self.text(n);
                    if shared || text.contains("static") || text.contains("__shared__") {
                        return false;
                    }
                }
                "gnu_asm_expression" | "asm_statement" | "goto_statement" | "labeled_statement"
                | "lambda_expression" | "preproc_call" => return false,
                _ => {}
            }
        }
        !walk.truncated
    }

    /// Whether `e` has the same value on every iteration of `lp` (ignoring `counter`, which the
    /// caller handles): literals, built-ins, constant macros and names nothing in the loop
    /// changes, combined by arithmetic.
    fn invariant_expr(&self, lp: Node<'_>, e: Node<'_>, counter: Option<&str>) -> bool {
        let mut stack = vec![e];
        let mut visited = 0usize;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > 256 {
                return false;
            }
            match n.kind() {
                "number_literal" | "sizeof_expression" => continue,
                "identifier" => {
                    let name = self.text(n);
                    if Some(name) != counter && !self.invariant_name(lp, name) {
                        return false;
                    }
                    continue;
                }
                "field_expression" => {
                    if builtin_dim(self.src, n).is_none() {
                        return false;
                    }
                    continue;
                }
                "parenthesized_expression" => {}
                "binary_expression" => {
                    let op = operator_text(self.src, n);
                    if !["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"].contains(&op) {
                        return false;
                    }
                }
                "unary_expression" => {
                    if !["-", "+", "~"].contains(&operator_text(self.src, n)) {
                        return false;
                    }
                }
                _ => return false,
            }
            let mut cursor = n.walk();
            stack.extend(n.named_children(&mut cursor));
        }
        true
    }

    fn invariant_name(&self, lp: Node<'_>, name: &str) -> bool {
        if name == "warpSize" {
            return true;
        }
        if self.const_macros.contains(name) {
            return true;
        }
        let stable = match self.lookup(name) {
            Some(Binding::Param { depth: 0, .. }) => true,
            Some(Binding::Local) => !self.unstable.contains(name),
            _ => false,
        };
        stable
            && !super::super::syntax::assigns(self.src, lp, name)
            && !declares(self.src, lp, name)
    }

    /// `e` as 64-bit C: every name and built-in widened to `long long`, `counter` replaced by
    /// `value`.
    fn wide(&self, e: Node<'_>, counter: Option<&str>, value: &str) -> String {
        match e.kind() {
            "identifier" if Some(self.text(e)) == counter => format!("({value})"),
            "identifier" | "field_expression" | "sizeof_expression" => {
                format!("((long long)({}))", self.text(e))
            }
            "number_literal" => self.text(e).to_string(),
            _ => {
                let mut out = String::new();
                let mut at = e.start_byte();
                let mut cursor = e.walk();
                let children: Vec<Node<'_>> = e.children(&mut cursor).collect();
                for c in children {
                    out.push_str(self.src.get(at..c.start_byte()).unwrap_or(""));
                    out.push_str(&self.wide(c, counter, value));
                    at = c.end_byte();
                }
                out.push_str(self.src.get(at..e.end_byte()).unwrap_or(""));
                out
            }
        }
    }

    /// The `#pragma unroll` just before `node` (comments aside): its node id and argument.
    fn unroll_pragma(&self, node: Node<'_>) -> Option<(usize, String)> {
        let mut prev = node.prev_named_sibling();
        while let Some(p) = prev {
            if p.kind() != "comment" {
                break;
            }
            prev = p.prev_named_sibling();
        }
        let p = prev?;
        if p.kind() != "preproc_call"
            || self.text(p.child_by_field_name("directive")?).trim() != "#pragma"
        {
            return None;
        }
        let arg = self
            .text(p.child_by_field_name("argument")?)
            .trim()
            .to_string();
        (arg.starts_with("unroll") || arg.starts_with("nounroll")).then_some((p.id(), arg))
    }
}

/// `threadIdx.x` and the like: the built-in's name.
fn builtin_dim<'s>(src: &'s str, n: Node<'_>) -> Option<&'s str> {
    if operator_text(src, n) != "." {
        return None;
    }
    let arg = n.child_by_field_name("argument")?;
    let field = n.child_by_field_name("field")?;
    let name = src.get(arg.byte_range())?;
    let f = src.get(field.byte_range())?;
    (arg.kind() == "identifier" && BUILTIN_DIMS.contains(&name) && ["x", "y", "z"].contains(&f))
        .then_some(name)
}

/// How many times the identifier `name` occurs in `e`.
fn count_name(src: &str, e: Node<'_>, name: &str) -> usize {
    descendants(e, MAX_WALK)
        .filter(|n| n.kind() == "identifier" && src.get(n.byte_range()) == Some(name))
        .count()
}

/// Whether `e` is monotone in `counter` (which occurs once): every operation between the
/// counter and the root is `+`, `-`, unary `-`/`+`, `*` by a counter-free operand, or `<<` with
/// the counter on the left.
fn monotone_in(src: &str, e: Node<'_>, counter: &str) -> bool {
    let Some(leaf) = find_name(src, e, counter) else {
        return false;
    };
    let mut cur = leaf;
    while cur.id() != e.id() {
        let Some(parent) = cur.parent() else {
            return false;
        };
        let ok = match parent.kind() {
            "parenthesized_expression" => true,
            "unary_expression" => ["-", "+"].contains(&operator_text(src, parent)),
            "binary_expression" => match operator_text(src, parent) {
                "+" | "-" | "*" => true,
                "<<" => parent.child_by_field_name("left").map(|l| l.id()) == Some(cur.id()),
                _ => false,
            },
            _ => false,
        };
        if !ok {
            return false;
        }
        cur = parent;
    }
    true
}

fn find_name<'t>(src: &str, e: Node<'t>, name: &str) -> Option<Node<'t>> {
    descendants(e, MAX_WALK)
        .find(|n| n.kind() == "identifier" && src.get(n.byte_range()) == Some(name))
}

/// Whether a declaration inside `node` declares `name`.
fn declares(src: &str, node: Node<'_>, name: &str) -> bool {
    let mut walk = descendants(node, MAX_WALK);
    for n in &mut walk {
        if n.kind() == "declaration" {
            let mut cursor = n.walk();
            let found = n
                .children_by_field_name("declarator", &mut cursor)
                .any(|d| declarator_shape(src, Some(d)).0.as_deref() == Some(name));
            if found {
                return true;
            }
        }
    }
    walk.truncated
}

/// Names of the kernel body's locals whose value may change without an assignment in sight:
/// references, `__shared__`, `static` and `volatile` variables.
pub(super) fn unstable_locals(src: &str, body: Node<'_>) -> HashSet<String> {
    let mut out = HashSet::new();
    for n in descendants(body, MAX_WALK * 10) {
        if n.kind() == "declaration" {
            let text = src.get(n.byte_range()).unwrap_or("");
            let (shared, _) = qualifiers(src, n);
            let qualified = shared
                || text.contains("__shared__")
                || text.contains("static")
                || text.contains("volatile");
            let mut cursor = n.walk();
            for d in n.children_by_field_name("declarator", &mut cursor) {
                let reference = src.get(d.byte_range()).unwrap_or("").contains('&');
                if qualified || reference {
                    if let Some(name) = declarator_shape(src, Some(d)).0 {
                        out.insert(name);
                    }
                }
            }
        }
    }
    out
}
