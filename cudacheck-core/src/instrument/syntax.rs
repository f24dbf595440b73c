//! Small questions about tree-sitter nodes and C text that the rewriter asks everywhere.

use tree_sitter::Node;

use super::coverage::SiteKind;

/// Read, write or read-modify-write, from where the access sits: the left side of `=` is a
/// write, of a compound assignment or `++`/`--` a read-modify-write; member access (`p[i].x`)
/// and parentheses pass the question up.
pub(super) fn access_kind(src: &str, node: Node<'_>) -> SiteKind {
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
pub(super) fn subscript_chain(node: Node<'_>) -> Option<(Node<'_>, Vec<Node<'_>>)> {
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
pub(super) fn single_index(sub: Node<'_>) -> Option<Node<'_>> {
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

pub(super) fn strip_parens(mut n: Node<'_>) -> Node<'_> {
    for _ in 0..64 {
        if n.kind() != "parenthesized_expression" {
            break;
        }
        let mut cursor = n.walk();
        let inner = n
            .named_children(&mut cursor)
            .find(|c| c.kind() != "comment");
        match inner {
            Some(i) => n = i,
            None => break,
        }
    }
    n
}

/// `reinterpret_cast<T*>(p)` and friends.
pub(super) fn is_cast_call(src: &str, n: Node<'_>) -> bool {
    n.kind() == "call_expression"
        && n.child_by_field_name("function").is_some_and(|f| {
            matches!(
                callee_name(src, f),
                "reinterpret_cast" | "static_cast" | "const_cast" | "dynamic_cast"
            )
        })
}

pub(super) fn callee_name<'s>(src: &'s str, f: Node<'_>) -> &'s str {
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
pub(super) fn enclosing_call_name<'s>(src: &'s str, node: Node<'_>) -> Option<&'s str> {
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

pub(super) fn operator_text<'s>(src: &'s str, n: Node<'_>) -> &'s str {
    n.child_by_field_name("operator")
        .map_or("", |o| text_of(src, o))
}

pub(super) fn text_of<'s>(src: &'s str, n: Node<'_>) -> &'s str {
    slice(src, n.start_byte(), n.end_byte())
}

/// `src[a..b]`, or "" where that is not a valid range of `src` (never panics).
pub(super) fn slice(src: &str, a: usize, b: usize) -> &str {
    src.get(a..b).unwrap_or("")
}

/// One line, runs of white space collapsed: an assertion's condition as a message.
pub(super) fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` bytes of `s`, cut on a character boundary.
pub(super) fn truncate(s: &str, max: usize) -> &str {
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
pub(super) fn c_escape(s: &str) -> String {
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

/// Math and conversion builtins whose arguments are plain values: an element read passed to one
/// of them can use the by-value accessor. (A user's device function may take `T&`, so reads
/// passed to other calls keep the reference form.)
pub(super) const VALUE_ARG_CALLS: &[&str] = &[
    "abs",
    "fabs",
    "fabsf",
    "min",
    "max",
    "fminf",
    "fmaxf",
    "fmin",
    "fmax",
    "sqrtf",
    "sqrt",
    "rsqrtf",
    "rsqrt",
    "cbrtf",
    "expf",
    "exp",
    "__expf",
    "exp2f",
    "logf",
    "log",
    "__logf",
    "log2f",
    "powf",
    "pow",
    "__powf",
    "sinf",
    "cosf",
    "tanf",
    "__sinf",
    "__cosf",
    "tanhf",
    "tanh",
    "erff",
    "floorf",
    "ceilf",
    "roundf",
    "truncf",
    "fmaf",
    "fma",
    "__fmaf_rn",
    "__fdividef",
    "__saturatef",
    "copysignf",
    "__half2float",
    "__float2half",
    "__bfloat162float",
    "__float2bfloat16",
    "__int2float_rn",
    "__float2int_rn",
    "make_float2",
    "make_float3",
    "make_float4",
    "make_int2",
    "make_int4",
    "__shfl_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__shfl_xor_sync",
    "__popc",
    "__clz",
    "__ffs",
];

/// Whether the element read at `node` is only used as a value, so the checked access may return
/// it by value (a miss then gives zero without touching memory). Not when the element is bound to
/// a `T&`, has its address taken, or is passed to a function that might take a reference.
pub(super) fn value_context(src: &str, node: Node<'_>) -> bool {
    let mut cur = node;
    for _ in 0..64 {
        let Some(parent) = cur.parent() else {
            return true;
        };
        match parent.kind() {
            "parenthesized_expression" => cur = parent,
            "pointer_expression" => return operator_text(src, parent) != "&",
            "init_declarator" => {
                return parent
                    .child_by_field_name("declarator")
                    .map_or(true, |d| d.kind() != "reference_declarator")
            }
            "argument_list" => {
                let callee = parent
                    .parent()
                    .and_then(|call| call.child_by_field_name("function"))
                    .map(|f| src.get(f.byte_range()).unwrap_or(""));
                return callee.is_some_and(|c| VALUE_ARG_CALLS.contains(&c));
            }
            _ => return true,
        }
    }
    false
}

/// Whether `index` is a loop counter that provably stays in `0..extent` where it is used: it is
/// the variable of an enclosing `for (int v = <literal >= 0>; v < <extent>; ++v)` (also `v++`,
/// `v += <literal > 0>`) whose bound is spelled like the array's extent, and the loop body never
/// assigns it. The check of that dimension can then be left out: in a tiled kernel's inner loop
/// (`as[ty][k]` for `k < TILE`) it is what keeps the loop unrolled and the accesses in shared
/// memory instructions.
pub(super) fn loop_counter_below(src: &str, index: Node<'_>, extent: &str) -> bool {
    let index = strip_parens(index);
    if index.kind() != "identifier" {
        return false;
    }
    let var = src.get(index.byte_range()).unwrap_or("");
    let text = |n: Node<'_>| src.get(n.byte_range()).unwrap_or("");
    let mut cur = index;
    for _ in 0..256 {
        let Some(parent) = cur.parent() else {
            return false;
        };
        cur = parent;
        if cur.kind() != "for_statement" {
            continue;
        }
        let (Some(init), Some(cond), Some(update)) = (
            cur.child_by_field_name("initializer"),
            cur.child_by_field_name("condition"),
            cur.child_by_field_name("update"),
        ) else {
            continue;
        };
        let starts_non_negative = {
            let t = squash(text(init));
            let t = t.trim_end_matches(';').trim();
            let value = t
                .strip_prefix("int ")
                .or_else(|| t.strip_prefix("unsigned "))
                .unwrap_or(t)
                .strip_prefix(var)
                .and_then(|r| r.trim_start().strip_prefix('='))
                .map(str::trim);
            value.is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        };
        if !starts_non_negative {
            continue;
        }
        let bounded = cond.kind() == "binary_expression"
            && operator_text(src, cond) == "<"
            && cond.child_by_field_name("left").map(text) == Some(var)
            && cond
                .child_by_field_name("right")
                .is_some_and(|r| squash(text(r)) == squash(extent));
        let t = squash(text(update));
        let steps_up = t == format!("++{var}")
            || t == format!("{var}++")
            || t.strip_prefix(&format!("{var} += ")).is_some_and(|v| {
                !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && v != "0"
            });
        if !(bounded && steps_up) {
            continue;
        }
        let body = cur.child_by_field_name("body");
        return body.is_some_and(|b| !assigns(src, b, var));
    }
    false
}

/// Whether anything under `node` assigns to, increments or takes the address of `var`.
pub(super) fn assigns(src: &str, node: Node<'_>, var: &str) -> bool {
    let text = |n: Node<'_>| src.get(n.byte_range()).unwrap_or("");
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let target = match n.kind() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            "pointer_expression" if operator_text(src, n) == "&" => {
                n.child_by_field_name("argument")
            }
            _ => None,
        };
        if target.is_some_and(|t| text(strip_parens(t)) == var) {
            return true;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    false
}

/// The nodes under `root` (itself included), depth first, at most `limit` of them: walks over
/// hostile input stay bounded. `truncated` tells whether the walk stopped at the limit.
pub(super) struct Descendants<'t> {
    stack: Vec<Node<'t>>,
    left: usize,
    pub(super) truncated: bool,
}

pub(super) fn descendants(root: Node<'_>, limit: usize) -> Descendants<'_> {
    Descendants {
        stack: vec![root],
        left: limit,
        truncated: false,
    }
}

impl<'t> Iterator for Descendants<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        let n = self.stack.pop()?;
        if self.left == 0 {
            self.truncated = true;
            self.stack.clear();
            return None;
        }
        self.left -= 1;
        let mut cursor = n.walk();
        self.stack.extend(n.children(&mut cursor));
        Some(n)
    }
}
