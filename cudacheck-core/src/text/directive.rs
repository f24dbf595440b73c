//! Preprocessor directives: the logical lines that start with `#` (comments blanked, lines
//! joined at backslash-newline), what each one is, and the structure of the conditionals.

use std::ops::Range;

use super::expand::Macro;
use super::include::{header_name, HeaderName};
use super::lex::{blank, tokens, Kind, Lexer};

/// One directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// The 1-based line of its `#`.
    pub line: usize,
    /// Its bytes in the text: whole lines, from the line of the `#` to the end of the last line
    /// a trailing `\` continues it onto (its line break included).
    pub span: Range<usize>,
    /// The directive's name (`define`, `include`, `if`; empty for a null directive `#`).
    pub name: String,
    /// What follows the name, continuations joined and comments blanked, trimmed.
    pub rest: String,
    pub kind: DirectiveKind,
}

/// What a directive does, as far as this layer reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirectiveKind {
    /// `#define`: the macro, or `None` when the definition cannot be read (no name, an
    /// unclosed parameter list).
    Define(Option<Macro>),
    /// `#undef NAME`.
    Undef(String),
    /// `#include`, `#include_next` or `#import`: the header it names, or `None` for a computed
    /// include (`#include MACRO`).
    Include(Option<HeaderName>),
    /// `#if` with its condition.
    If(String),
    /// `#ifdef NAME`.
    Ifdef(String),
    /// `#ifndef NAME`.
    Ifndef(String),
    /// `#elif` with its condition (`#elifdef`/`#elifndef` too, the condition then the name).
    Elif(String),
    Else,
    Endif,
    /// Anything else (`#pragma`, `#error`, `#line`, a null directive).
    Other,
}

/// The directives of `src`, in order. A `#` inside a comment or after other tokens on its line
/// starts none.
pub fn directives(src: &str) -> Vec<Directive> {
    read_directives(src, false)
}

/// The directives of `src` and the lines inside multi-line string literals that read as
/// directives (JIT source in a raw string): for listing what a text may include where one
/// header too many costs a needless recompile and one too few a stale module.
pub fn directives_and_literal_lines(src: &str) -> Vec<Directive> {
    read_directives(src, true)
}

fn read_directives(src: &str, in_literals: bool) -> Vec<Directive> {
    // One pass finds the comments and the literals that span lines (raw strings): a line
    // inside one (the `#include` lines of JIT source in `R"(...)"`) is no directive.
    let mut lexer = Lexer::new(src);
    let mut multi_line: Vec<Range<usize>> = Vec::new();
    while let Some((kind, span)) = lexer.next_span() {
        if !in_literals && kind == Kind::Str && src[span.clone()].contains('\n') {
            multi_line.push(span);
        }
    }
    let blanked = blank(src, lexer.comments.into_iter().map(|(r, _)| r));
    let mut out = Vec::new();
    let mut at = 0;
    let mut line_no = 0;
    let mut lines = blanked.split_inclusive('\n');
    while let Some(line) = lines.next() {
        line_no += 1;
        let start = at;
        at += line.len();
        if !line.trim_start().starts_with('#')
            || multi_line.iter().any(|r| r.start < start && start < r.end)
        {
            continue;
        }
        let first = line_no;
        let mut logical = String::new();
        let mut cur = line;
        loop {
            let body = cur.trim_end_matches(['\n', '\r']);
            match body.strip_suffix('\\') {
                Some(head) => {
                    logical.push_str(head);
                    logical.push(' ');
                    match lines.next() {
                        Some(next) => {
                            line_no += 1;
                            at += next.len();
                            cur = next;
                        }
                        None => break,
                    }
                }
                None => {
                    logical.push_str(body);
                    break;
                }
            }
        }
        out.push(read_directive(&logical, first, start..at));
    }
    out
}

/// The directive of one logical line (starting with `#`).
fn read_directive(logical: &str, line: usize, span: Range<usize>) -> Directive {
    let after_hash = logical.trim_start().get(1..).unwrap_or("").trim_start();
    let name_end = after_hash
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(after_hash.len());
    let name = &after_hash[..name_end];
    let rest = after_hash[name_end..].trim();
    let first_word = || {
        tokens(rest)
            .into_iter()
            .find(|t| t.kind == Kind::Ident)
            .map(|t| t.text)
            .unwrap_or_default()
    };
    let kind = match name {
        "define" => DirectiveKind::Define(Macro::parse(&after_hash[name_end..])),
        "undef" => DirectiveKind::Undef(first_word()),
        "include" | "include_next" | "import" => DirectiveKind::Include(header_name(rest)),
        "if" => DirectiveKind::If(rest.to_owned()),
        "ifdef" => DirectiveKind::Ifdef(first_word()),
        "ifndef" => DirectiveKind::Ifndef(first_word()),
        "elif" | "elifdef" | "elifndef" => DirectiveKind::Elif(rest.to_owned()),
        "else" => DirectiveKind::Else,
        "endif" => DirectiveKind::Endif,
        _ => DirectiveKind::Other,
    };
    Directive {
        line,
        span,
        name: name.to_owned(),
        rest: rest.to_owned(),
        kind,
    }
}

/// The byte ranges of `src`'s directives (see [`Directive::span`]).
pub fn directive_ranges(src: &str) -> Vec<Range<usize>> {
    directives(src).into_iter().map(|d| d.span).collect()
}

/// The headers the `__has_include` / `__has_include_next` tests of a directive's text name.
pub fn has_includes(rest: &str) -> Vec<HeaderName> {
    let mut out = Vec::new();
    let mut s = rest;
    while let Some(i) = s.find("__has_include") {
        s = &s[i + "__has_include".len()..];
        let operand = s.trim_start_matches("_next").trim_start();
        if let Some(h) = operand.strip_prefix('(').and_then(header_name) {
            out.push(h);
        }
    }
    out
}

/// One `#if`/`#ifdef`/`#ifndef` group: the indices (into the directives) of its opening
/// directive, of each `#elif`/`#else`, and of its `#endif` (`None` when the text ends first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conditional {
    pub branches: Vec<usize>,
    pub end: Option<usize>,
    /// How many groups enclose it.
    pub depth: usize,
}

/// The conditional groups of `dirs`, in the order they open. An `#elif`, `#else` or `#endif`
/// with no open group is passed over.
pub fn conditionals(dirs: &[Directive]) -> Vec<Conditional> {
    let mut out: Vec<Conditional> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        match d.kind {
            DirectiveKind::If(_) | DirectiveKind::Ifdef(_) | DirectiveKind::Ifndef(_) => {
                open.push(out.len());
                out.push(Conditional {
                    branches: vec![i],
                    end: None,
                    depth: open.len() - 1,
                });
            }
            DirectiveKind::Elif(_) | DirectiveKind::Else => {
                if let Some(&g) = open.last() {
                    out[g].branches.push(i);
                }
            }
            DirectiveKind::Endif => {
                if let Some(g) = open.pop() {
                    out[g].end = Some(i);
                }
            }
            _ => {}
        }
    }
    out
}

/// `src` with every conditional group that stands inside code kept to its first branch: a
/// group opened inside braces, parentheses or brackets (two versions of a loop header, of a
/// statement in a function body), or one whose branches open or close them unevenly, has its
/// other branches and its directive lines made spaces (line breaks kept: the same length,
/// offsets and line numbers). A parser that reads every branch as code would otherwise read
/// `for (i = 0; i <= n; i < n; ++i)` and lose the rest of the function. Groups between
/// declarations, balanced in every branch, are kept whole (each branch's kernels are found).
/// `None` when no group needs it.
pub fn first_branch_within_code(src: &str) -> Option<String> {
    let dirs = directives(src);
    let groups: Vec<Conditional> = conditionals(&dirs)
        .into_iter()
        .filter(|g| g.branches.len() > 1 && g.end.is_some())
        .collect();
    if groups.is_empty() {
        return None;
    }
    // Each branch's text: from the end of its directive to the start of the next one's.
    let branch_ranges = |g: &Conditional| -> Vec<Range<usize>> {
        let ends = g.branches.iter().skip(1).copied().chain(g.end);
        g.branches
            .iter()
            .zip(ends)
            .map(|(&b, e)| dirs[b].span.end..dirs[e].span.start)
            .collect()
    };
    // Each token's step in nesting (none inside a directive line), found by position.
    let toks = tokens(src);
    let starts: Vec<usize> = toks.iter().map(|t| t.span.start).collect();
    let index = |at: usize| starts.partition_point(|&s| s < at);
    let mut d = 0;
    let steps: Vec<i64> = toks
        .iter()
        .map(|t| {
            while dirs.get(d).is_some_and(|x| x.span.end <= t.span.start) {
                d += 1;
            }
            match t.kind {
                _ if dirs.get(d).is_some_and(|x| x.span.contains(&t.span.start)) => 0,
                Kind::Punct if matches!(t.text.as_str(), "{" | "(" | "[") => 1,
                Kind::Punct if matches!(t.text.as_str(), "}" | ")" | "]") => -1,
                _ => 0,
            }
        })
        .collect();
    let delta = |r: &Range<usize>| -> i64 { steps[index(r.start)..index(r.end)].iter().sum() };
    // The depth at each group's opening, counting each group's first branch only (the one the
    // parser will see for the groups that are cut, and as good as any for balanced ones).
    let mut counted = steps.clone();
    for g in &groups {
        for r in branch_ranges(g).into_iter().skip(1) {
            counted[index(r.start)..index(r.end)].fill(0);
        }
    }
    let mut depth = Vec::with_capacity(counted.len() + 1);
    depth.push(0i64);
    for s in &counted {
        depth.push(depth.last().copied().unwrap_or(0) + s);
    }
    let depth_at = |at: usize| depth[index(at)];
    let mut cut: Vec<Range<usize>> = Vec::new();
    for g in &groups {
        let branches = branch_ranges(g);
        let opens_inside = depth_at(dirs[g.branches[0]].span.start) > 0;
        let uneven = branches.iter().any(|r| delta(r) != 0);
        if !(opens_inside || uneven) {
            continue;
        }
        cut.extend(branches.into_iter().skip(1));
        cut.extend(
            g.branches
                .iter()
                .chain(g.end.iter())
                .map(|&d| dirs[d].span.clone()),
        );
    }
    (!cut.is_empty()).then(|| blank(src, cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_inside_code_keep_their_first_branch() {
        let src = "__global__ void k(float* a, int n)\n{\n    for (int i = 0;\n#ifdef P\n         i <= n;\n#else\n         i < n;\n#endif\n         ++i) a[i] = 0;\n#if A\n    if (n) {\n#else\n    if (!n) {\n#endif\n    }\n}\n";
        let out = first_branch_within_code(src).expect("two groups inside a body");
        assert_eq!(out.len(), src.len());
        assert_eq!(out.lines().count(), src.lines().count());
        assert!(out.contains("i <= n;") && !out.contains("i < n;"), "{out}");
        assert!(
            out.contains("if (n) {") && !out.contains("if (!n)"),
            "{out}"
        );
        assert!(!out.contains('#'), "{out}");
        // Between declarations, balanced: both versions of the kernel stay.
        let top =
            "#if A\n__global__ void k(int a) {}\n#else\n__global__ void k(long a) {}\n#endif\n";
        assert_eq!(first_branch_within_code(top), None);
        // A signature split over branches is uneven, even at the top level.
        let sig =
            "#ifdef P\n__global__ void k(int a) {\n#else\n__global__ void k(long a) {\n#endif\n}\n";
        let out = first_branch_within_code(sig).expect("uneven branches");
        assert!(out.contains("int a") && !out.contains("long a"), "{out}");
        // Nothing to do without an #else.
        assert_eq!(
            first_branch_within_code("void f() {\n#ifdef P\n x();\n#endif\n}\n"),
            None
        );
    }

    #[test]
    fn defines_of_every_form() {
        let d = directives(
            "#define A 1\n# define F(x, y) x + \\\n  y\n#define V(fmt, ...) f(fmt, __VA_ARGS__)\n#define G (x)\n#undef A\n",
        );
        let m = |i: usize| match &d[i].kind {
            DirectiveKind::Define(Some(m)) => m.clone(),
            k => panic!("{k:?}"),
        };
        assert_eq!(m(0).params, None);
        assert_eq!(m(1).params, Some(vec!["x".to_owned(), "y".to_owned()]));
        assert_eq!(d[1].line, 2);
        assert_eq!(d[1].span, 12..39);
        assert!(m(2).is_variadic());
        // A space before `(` makes it object-like.
        assert_eq!(m(3).params, None);
        assert_eq!(d[3].line, 5);
        assert_eq!(d[4].kind, DirectiveKind::Undef("A".to_owned()));
        // No name, or an unclosed parameter list: unreadable, not a panic.
        assert_eq!(directives("#define\n")[0].kind, DirectiveKind::Define(None));
        assert_eq!(
            directives("#define F(a, b\n")[0].kind,
            DirectiveKind::Define(None)
        );
    }

    #[test]
    fn includes_quoted_angled_computed_and_has_include() {
        let d = directives(
            "#include \"a.h\"\n  #  include <b/c.h> // x\n#include_next <d.h>\n#include MACRO\n/* #include \"no.h\" */\n#if __has_include(<e.h>) && __has_include_next(\"f.h\")\n#endif\n",
        );
        let inc = |i: usize| match &d[i].kind {
            DirectiveKind::Include(h) => h.clone(),
            k => panic!("{k:?}"),
        };
        assert_eq!(inc(0), Some(HeaderName::quoted("a.h")));
        assert_eq!(inc(1), Some(HeaderName::angled("b/c.h")));
        assert_eq!(inc(2), Some(HeaderName::angled("d.h")));
        assert_eq!(inc(3), None);
        assert_eq!(d.len(), 6, "a directive in a comment is none");
        let jit = directives("auto s = R\"(\n#include <jit.h>\n)\";\n#include <real.h>\n");
        assert_eq!(jit.len(), 1, "a line inside a raw string is no directive");
        assert_eq!(jit[0].line, 4);
        let all = directives_and_literal_lines("auto s = R\"(\n#include <jit.h>\n)\";\n");
        assert_eq!(all.len(), 1);
        assert_eq!(
            has_includes(&d[4].rest),
            [HeaderName::angled("e.h"), HeaderName::quoted("f.h")]
        );
    }

    #[test]
    fn conditional_structure() {
        let d = directives(
            "#if A\n#ifdef B\n#else\n#endif\n#elif C\n#ifndef D\n#endif\n#else\n#endif\n#endif\n#if E\n",
        );
        let c = conditionals(&d);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].branches, [0, 4, 7]);
        assert_eq!(c[0].end, Some(8));
        assert_eq!(
            (c[1].branches.clone(), c[1].end, c[1].depth),
            (vec![1, 2], Some(3), 1)
        );
        assert_eq!(c[2].branches, [5]);
        // A stray `#endif` is passed over; an unclosed `#if` has no end.
        assert_eq!(c[3].end, None);
        assert_eq!(d[0].kind, DirectiveKind::If("A".to_owned()));
        assert_eq!(d[1].kind, DirectiveKind::Ifdef("B".to_owned()));
    }

    #[test]
    fn ranges_cover_continued_lines() {
        let src = "int x;\n#define M \\\n  1\nint y;\n";
        assert_eq!(directive_ranges(src), vec![(7..23)]);
    }
}
