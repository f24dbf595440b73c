//! Text helpers of the host-code transform: identifiers, literals and comments, template
//! arguments, and the kernel expression before a `<<<`.

use crate::text::{self as pp, CommentKind, Kind};
pub(super) use crate::text::{identifiers, is_identifier};

/// Whether `{` and `}` balance outside string and character literals and comments, never
/// closing more than was opened.
pub(super) fn braces_balance(s: &str) -> bool {
    let mut depth = 0i64;
    let mut lexer = pp::Lexer::new(s);
    while let Some((kind, span)) = lexer.next_span() {
        if kind != Kind::Punct {
            continue;
        }
        match &s[span] {
            "{" | "<%" => depth += 1,
            "}" | "%>" => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// `text` with every `/* ... */` comment's bytes made spaces (line breaks kept): same length,
/// same byte offsets.
pub(super) fn blank_block_comments(text: &str) -> String {
    let comments = pp::comments(text);
    pp::blank(
        text,
        comments
            .into_iter()
            .filter(|(_, k)| *k == CommentKind::Block)
            .map(|(r, _)| r),
    )
}

/// The kernel expression just before the `<<<` at `at`: an optionally qualified name with
/// optional template arguments (`ns::k<T, (N > 2)>`).
pub(super) fn callee_before(s: &str, at: usize) -> Option<&str> {
    let b = s.as_bytes();
    let mut i = at;
    let skip_ws = |i: &mut usize| {
        while *i > 0 && b[*i - 1].is_ascii_whitespace() {
            *i -= 1;
        }
    };
    skip_ws(&mut i);
    let end = i;
    loop {
        skip_ws(&mut i);
        if i > 0 && b[i - 1] == b'>' {
            // Angle brackets inside parentheses (`(N > 2)`) are comparisons, not nesting.
            let (mut angles, mut parens) = (0i32, 0i32);
            while i > 0 {
                i -= 1;
                match b[i] {
                    b')' => parens += 1,
                    b'(' => parens -= 1,
                    b'>' if parens == 0 => angles += 1,
                    b'<' if parens == 0 => angles -= 1,
                    _ => {}
                }
                if angles == 0 {
                    break;
                }
            }
            if angles != 0 {
                return None;
            }
            skip_ws(&mut i);
        }
        let id_end = i;
        while i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            i -= 1;
        }
        if i == id_end {
            return None;
        }
        let before = i;
        skip_ws(&mut i);
        if i >= 2 && &s[i - 2..i] == "::" {
            i -= 2;
            continue;
        }
        i = before;
        break;
    }
    Some(s[i..end].trim())
}

/// `<a, b<c, d>, (e > f)>` -> `a`, `b<c, d>`, `(e > f)`.
pub(super) fn split_template_args(s: &str) -> Vec<String> {
    let inner = s
        .trim()
        .strip_prefix('<')
        .and_then(|x| x.strip_suffix('>'))
        .unwrap_or(s);
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in inner.chars() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_owned());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_owned());
    }
    out
}

/// Replaces the identifiers `params[i]` by `args[i]` (parenthesized when not a single word),
/// outside literals and comments, the rest kept as written.
pub(super) fn substitute(s: &str, params: &[String], args: &[String]) -> String {
    if args.is_empty() {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut lexer = pp::Lexer::new(s);
    while let Some((kind, span)) = lexer.next_span() {
        let Some(a) = params
            .iter()
            .position(|p| kind == Kind::Ident && *p == s[span.clone()])
            .and_then(|i| args.get(i))
        else {
            continue;
        };
        out.push_str(&s[copied..span.start]);
        if is_identifier(a) || a.parse::<i64>().is_ok() || a.contains('<') {
            out.push_str(a);
        } else {
            out.push('(');
            out.push_str(a);
            out.push(')');
        }
        copied = span.end;
    }
    out.push_str(&s[copied..]);
    out
}

pub(super) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` with its `//` comments made spaces, for text that is put on one line.
pub(super) fn strip_line_comments(s: &str) -> String {
    let comments = pp::comments(s);
    pp::blank(
        s,
        comments
            .into_iter()
            .filter(|(_, k)| *k == CommentKind::Line)
            .map(|(r, _)| r),
    )
}
