//! Preprocessing tokens: identifiers, pp-numbers, string and character literals (prefixes and
//! raw strings included), punctuators. Comments are skipped, their byte spans kept; a
//! backslash-newline between tokens is white space. The lexer never fails: a byte it cannot
//! place is a one-byte [`Kind::Other`] token, an unterminated literal runs to the line's end.

use std::ops::Range;

/// What a preprocessing token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or keyword (`__global__`, `float`).
    Ident,
    /// A pp-number (`1`, `0x1fu`, `1.5e-3f`, `1'000`).
    Number,
    /// A string literal, with its prefix (`"a"`, `u8"a"`, `R"(a)"`).
    Str,
    /// A character literal, with its prefix (`'a'`, `L'a'`).
    Char,
    /// A punctuator (`(`, `::`, `##`, `<<=`).
    Punct,
    /// A byte no other kind takes (`@`, `` ` ``, a lone `\`).
    Other,
}

/// One preprocessing token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    /// The token's text as written (for tokens a macro expansion made, the text it made).
    pub text: String,
    /// Where it stands in the lexed text; for a token an expansion made, the span of the
    /// token it came from.
    pub span: Range<usize>,
    /// Whether white space (or a comment) stands before it: kept so an expansion can be
    /// written back with the spacing of the source.
    pub space_before: bool,
    /// Whether it is the first token of its line.
    pub line_start: bool,
}

impl Token {
    /// Whether this is the identifier or punctuator `s`.
    pub fn is(&self, s: &str) -> bool {
        self.text == s && matches!(self.kind, Kind::Ident | Kind::Punct)
    }
}

/// A comment's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommentKind {
    /// `// ...` to the end of the line.
    Line,
    /// `/* ... */`.
    Block,
}

/// A lexed text: its tokens and where its comments were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub comments: Vec<(Range<usize>, CommentKind)>,
}

/// Punctuators, longest first, so the first that matches is the longest.
const PUNCTUATORS: &[&str] = &[
    "%:%:", "...", "<<=", ">>=", "->*", "<=>", "##", "::", "->", "++", "--", "<<", ">>", "<=",
    ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "<:", ":>",
    "<%", "%>", "%:",
];

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The tokens and comments of `src`.
pub fn lex(src: &str) -> Lexed {
    let mut l = Lexer::new(src);
    let tokens = l.by_ref().collect();
    Lexed {
        tokens,
        comments: l.comments,
    }
}

/// The tokens of a text one at a time, for readers that stop early (the arguments of one
/// invocation in a long file). The comments passed so far are in [`Lexer::comments`].
pub struct Lexer<'a> {
    src: &'a str,
    i: usize,
    space: bool,
    line_start: bool,
    /// The comments passed so far.
    pub comments: Vec<(Range<usize>, CommentKind)>,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src` (the start of a line).
    pub fn new(src: &'a str) -> Self {
        Lexer {
            src,
            i: 0,
            space: false,
            line_start: true,
            comments: Vec::new(),
        }
    }
}

impl Lexer<'_> {
    /// The next token's kind and span, with no text copied: for readers that only look at
    /// kinds and positions (comments, braces) in long texts.
    pub fn next_span(&mut self) -> Option<(Kind, Range<usize>)> {
        self.next_raw().map(|(k, r, _, _)| (k, r))
    }

    /// The next token's kind, span, and whether space and a line start stand before it.
    fn next_raw(&mut self) -> Option<(Kind, Range<usize>, bool, bool)> {
        let src = self.src;
        let b = src.as_bytes();
        let mut i = self.i;
        while i < b.len() {
            let c = b[i];
            let start = i;
            if c == b'\n' {
                i += 1;
                self.space = true;
                self.line_start = true;
                continue;
            }
            if c.is_ascii_whitespace() {
                i += 1;
                self.space = true;
                continue;
            }
            if c == b'\\' && continuation_len(b, i) > 0 {
                i += continuation_len(b, i);
                self.space = true;
                continue;
            }
            if b[i..].starts_with(b"//") {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                self.comments.push((start..i, CommentKind::Line));
                self.space = true;
                continue;
            }
            if b[i..].starts_with(b"/*") {
                i = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                self.comments.push((start..i, CommentKind::Block));
                self.space = true;
                continue;
            }
            let kind = if let Some(end) = literal_end(src, i) {
                i = end;
                if b[start..end].contains(&b'"') {
                    Kind::Str
                } else {
                    Kind::Char
                }
            } else if is_ident_start(c) {
                while i < b.len() && is_ident_continue(b[i]) {
                    i += 1;
                }
                Kind::Ident
            } else if c.is_ascii_digit()
                || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
            {
                i = number_end(b, i);
                Kind::Number
            } else if let Some(p) = PUNCTUATORS
                .iter()
                .find(|p| b[i..].starts_with(p.as_bytes()))
            {
                i += p.len();
                Kind::Punct
            } else if b"{}[]()#;:?.~!+-*/%^&|=<>,".contains(&c) {
                i += 1;
                Kind::Punct
            } else {
                // One byte: ASCII here, since every byte of a multi-byte character starts or
                // continues an identifier.
                i += 1;
                Kind::Other
            };
            let out = (kind, start..i, self.space, self.line_start);
            self.i = i;
            self.space = false;
            self.line_start = false;
            return Some(out);
        }
        self.i = i;
        None
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let (kind, span, space_before, line_start) = self.next_raw()?;
        Some(Token {
            kind,
            text: self.src.get(span.clone()).unwrap_or("").to_owned(),
            span,
            space_before,
            line_start,
        })
    }
}

/// The comments of `src`, with no tokens built.
pub fn comments(src: &str) -> Vec<(Range<usize>, CommentKind)> {
    let mut l = Lexer::new(src);
    while l.next_span().is_some() {}
    l.comments
}

/// The tokens of `src`, comments skipped.
pub fn tokens(src: &str) -> Vec<Token> {
    lex(src).tokens
}

/// The length of the backslash-newline at `i` (`\` then optional `\r`, then `\n`), or 0.
fn continuation_len(b: &[u8], i: usize) -> usize {
    match (b.get(i), b.get(i + 1), b.get(i + 2)) {
        (Some(b'\\'), Some(b'\n'), _) => 2,
        (Some(b'\\'), Some(b'\r'), Some(b'\n')) => 3,
        _ => 0,
    }
}

/// The end of the pp-number starting at `i`.
fn number_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b'+' | b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P') {
            i += 1;
        } else if c == b'\'' && b.get(i + 1).is_some_and(|d| d.is_ascii_alphanumeric()) {
            i += 2;
        } else if is_ident_continue(c) || c == b'.' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// The end of the string or character literal (with its encoding prefix, raw or not) that
/// starts at `i`, or `None` when none starts there. An unterminated one ends at its line's end
/// (a raw string at the text's end).
fn literal_end(src: &str, i: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut j = i;
    for p in ["u8", "u", "U", "L"] {
        if b[i..].starts_with(p.as_bytes()) {
            j = i + p.len();
            break;
        }
    }
    let raw = b.get(j) == Some(&b'R') && b.get(j + 1) == Some(&b'"');
    if raw {
        // R"delim( ... )delim"
        let open = j + 2;
        let paren = src[open..].find('(')? + open;
        let delim = &src[open..paren];
        if delim.len() > 16 || delim.contains(|c: char| c.is_whitespace() || c == ')') {
            return None;
        }
        let close = format!("){delim}\"");
        return Some(
            src[paren..]
                .find(&close)
                .map_or(b.len(), |e| paren + e + close.len()),
        );
    }
    let q = *b.get(j)?;
    if q != b'"' && q != b'\'' {
        return None;
    }
    // `u8'` is a literal but `u8` followed by a quote inside an identifier (`xu8"`) is not:
    // the caller only asks at a token's start.
    let mut k = j + 1;
    while k < b.len() && b[k] != q && b[k] != b'\n' {
        k += if b[k] == b'\\' { 2 } else { 1 };
    }
    Some(if k < b.len() && b[k] == q {
        k + 1
    } else {
        k.min(b.len())
    })
}

/// `src` with the comments in `spans` made spaces byte for byte (line breaks kept): the same
/// length, offsets and line numbers.
pub fn blank(src: &str, spans: impl IntoIterator<Item = Range<usize>>) -> String {
    let mut b = src.as_bytes().to_vec();
    for r in spans {
        for c in b.get_mut(r).into_iter().flatten() {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    // Whole comments (ASCII delimiters, UTF-8 within) became ASCII spaces: still UTF-8.
    String::from_utf8(b).unwrap_or_else(|_| src.to_owned())
}

/// `src` with every comment made spaces (see [`blank`]).
pub fn blank_comments(src: &str) -> String {
    blank(src, comments(src).into_iter().map(|(r, _)| r))
}

/// Whether `s` is one identifier (ASCII).
pub fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The identifiers in a piece of text (a macro body, a template argument), by word
/// boundaries alone: literals are not told apart.
pub fn identifiers(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| is_identifier(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokens(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_numbers_and_punctuators() {
        assert_eq!(
            texts("a::b<<=1.5e-3f ->x ... x##y"),
            ["a", "::", "b", "<<=", "1.5e-3f", "->", "x", "...", "x", "##", "y"]
        );
        assert_eq!(texts("1'000u .5"), ["1'000u", ".5"]);
        let t = tokens("x 1 \"s\" 'c' + @");
        let kinds: Vec<Kind> = t.iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Ident,
                Kind::Number,
                Kind::Str,
                Kind::Char,
                Kind::Punct,
                Kind::Other
            ]
        );
    }

    #[test]
    fn literals_with_prefixes_escapes_and_raw_strings() {
        assert_eq!(
            texts(r#"u8"a\"b" L'x' R"d(a ) " b)d" z"#),
            [r#"u8"a\"b""#, "L'x'", r#"R"d(a ) " b)d""#, "z"]
        );
        // An unterminated literal ends at the line's end.
        assert_eq!(texts("\"abc\nx"), ["\"abc", "x"]);
    }

    #[test]
    fn comments_are_skipped_with_their_spans_and_continuations_are_space() {
        let src = "a /* x */ b \\\n // c\n d";
        let l = lex(src);
        let t: Vec<&str> = l.tokens.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(t, ["a", "b", "d"]);
        assert_eq!(l.comments[0], (2..9, CommentKind::Block));
        assert_eq!(l.comments[1].1, CommentKind::Line);
        assert!(l.tokens[1].space_before && !l.tokens[1].line_start);
        assert!(l.tokens[2].line_start);
        assert_eq!(blank_comments("a/*\n*/b"), "a  \n  b");
        // An unterminated block comment runs to the end, no panic.
        assert_eq!(texts("a /* b"), ["a"]);
    }
}
