//! Text helpers of the host-code transform: identifiers, literals and comments, template
//! arguments, and the kernel expression before a `<<<`.

pub(super) fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The identifiers in a piece of text (a macro body, a template argument).
pub(super) fn identifiers(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| is_identifier(w))
}

/// Whether `{` and `}` balance outside string and character literals and line comments
/// (block comments are already blanked), never closing more than was opened.
pub(super) fn braces_balance(s: &str) -> bool {
    let b = s.as_bytes();
    let (mut depth, mut i) = (0i64, 0);
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    depth == 0
}

/// The index of the closing quote of the literal opening at `i` (or the end).
pub(super) fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    j.min(b.len())
}

/// `text` with every `/* ... */` comment's bytes made spaces (line breaks kept), outside string
/// and character literals and line comments: same length, same byte offsets.
pub(super) fn blank_block_comments(text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(&b, i),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                for c in &mut b[i..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Whole comments were replaced, byte for byte, by ASCII: still UTF-8.
    String::from_utf8(b).unwrap_or_else(|_| text.to_owned())
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

/// Replaces whole identifiers `params[i]` by `args[i]` (parenthesized when not a single word).
pub(super) fn substitute(s: &str, params: &[String], args: &[String]) -> String {
    if args.is_empty() {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match params
            .iter()
            .position(|p| p == word)
            .and_then(|i| args.get(i))
        {
            Some(a) if is_identifier(a) || a.parse::<i64>().is_ok() => out.push_str(a),
            Some(a) if a.contains('<') => out.push_str(a),
            Some(a) => {
                out.push('(');
                out.push_str(a);
                out.push(')');
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

pub(super) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` without its `//` comments (to the end of each line), for text that is put on one line.
pub(super) fn strip_line_comments(s: &str) -> String {
    s.lines()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}
