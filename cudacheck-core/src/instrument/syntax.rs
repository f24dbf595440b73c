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
