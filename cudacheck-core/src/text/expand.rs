//! Macro definitions and their expansion: argument collection (nested brackets), parameter
//! substitution, `#` stringizing, `##` pasting, `__VA_ARGS__`, and rescanning with the rule
//! that a macro is not expanded again inside its own expansion (each token carries the set of
//! macros it came out of, as in Prosser's algorithm).
//!
//! Expansion is best effort and bounded: an invocation whose `)` never comes is left as
//! written, and after [`MAX_EXPANSIONS`] expansions or [`MAX_TOKENS`] tokens the rest is left
//! as it stands. Nothing here panics on any input.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use super::lex::{lex, tokens, Kind, Lexer, Token};

/// How many macro invocations one expansion replaces at most.
pub const MAX_EXPANSIONS: usize = 4096;
/// How many tokens an expansion holds at most before expanding stops.
pub const MAX_TOKENS: usize = 1 << 18;
/// How many tokens one expansion may produce in all, counting every substitution and argument
/// pre-expansion along the way (each weighted by the macros it came out of, whose names it
/// carries): the bound on the work, where [`MAX_EXPANSIONS`] bounds invocations only. Macros
/// whose arguments are expanded again at each use can otherwise make a few thousand
/// invocations cost minutes (a toolkit header set read as a project's own).
pub const MAX_WORK: usize = 1 << 22;

/// One `#define`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Macro {
    pub name: String,
    /// The parameters of a function-like macro (`...` for the variadic part, or `name...` for
    /// GNU's named one); `None` for an object-like macro.
    pub params: Option<Vec<String>>,
    /// The replacement list.
    pub body: Vec<Token>,
    /// The replacement list as written (continuations and comments included).
    pub body_text: String,
}

impl Macro {
    /// An object-like macro.
    pub fn object(name: &str, body: &str) -> Self {
        Macro {
            name: name.to_owned(),
            params: None,
            body: tokens(body),
            body_text: body.to_owned(),
        }
    }

    /// A function-like macro.
    pub fn function(name: &str, params: &[String], body: &str) -> Self {
        Macro {
            params: Some(params.to_vec()),
            ..Macro::object(name, body)
        }
    }

    /// The macro of a `#define`'s text after the word `define` (`F(x) x + 1`); `None` when it
    /// has no name or its parameter list does not close on the line. Function-like only when
    /// `(` follows the name with no space.
    pub fn parse(def: &str) -> Option<Macro> {
        let def = def.trim_start();
        let end = def
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(def.len());
        let name = &def[..end];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let after = &def[end..];
        match after.strip_prefix('(') {
            Some(p) => {
                let close = p.find(')')?;
                let params: Vec<String> = p[..close]
                    .split(',')
                    .map(|x| x.trim().to_owned())
                    .filter(|x| !x.is_empty())
                    .collect();
                Some(Macro::function(name, &params, p[close + 1..].trim()))
            }
            None => Some(Macro::object(name, after.trim())),
        }
    }

    /// Whether it takes arguments.
    pub fn is_function_like(&self) -> bool {
        self.params.is_some()
    }

    /// Whether its last parameter takes the rest of the arguments.
    pub fn is_variadic(&self) -> bool {
        self.params
            .as_ref()
            .and_then(|p| p.last())
            .is_some_and(|p| p.ends_with("..."))
    }

    /// Which parameter the identifier `word` of the body names.
    fn param_index(&self, word: &str) -> Option<usize> {
        let params = self.params.as_ref()?;
        params.iter().position(|p| {
            p == word
                || (p == "..." && word == "__VA_ARGS__")
                || p.strip_suffix("...")
                    .is_some_and(|n| !n.is_empty() && n == word)
        })
    }
}

/// A set of macro definitions, looked up by name.
#[derive(Clone, Debug, Default)]
pub struct Macros {
    defs: HashMap<String, Macro>,
}

impl Macros {
    /// No macros.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every `#define` of `src`, in every branch (a later one of a name wins), `#undef`s
    /// ignored: the best guess of what a text may define, without evaluating conditions.
    pub fn defined_in(src: &str) -> Self {
        let mut m = Macros::new();
        m.add_defines(src);
        m
    }

    /// Adds every `#define` of `src` (see [`Macros::defined_in`]).
    pub fn add_defines(&mut self, src: &str) {
        for d in super::directive::directives(src) {
            if let super::directive::DirectiveKind::Define(Some(m)) = d.kind {
                self.define(m);
            }
        }
    }

    /// Defines `m`, replacing a macro of its name.
    pub fn define(&mut self, m: Macro) {
        self.defs.insert(m.name.clone(), m);
    }

    /// Removes the macro `name`.
    pub fn undef(&mut self, name: &str) {
        self.defs.remove(name);
    }

    /// The macro `name`.
    pub fn get(&self, name: &str) -> Option<&Macro> {
        self.defs.get(name)
    }

    /// Every macro, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Macro> {
        self.defs.values()
    }

    /// `tokens` with every macro invocation expanded, and the expansions rescanned.
    pub fn expand(&self, tokens: Vec<Token>) -> Vec<Token> {
        let mut e = Expander::new(self, MAX_WORK);
        let input = tokens.into_iter().map(Ht::new).collect();
        e.expand(input).into_iter().map(|t| t.tok).collect()
    }

    /// `src` with every macro invocation expanded, written back with the source's spacing
    /// (see [`render`]).
    pub fn expand_text(&self, src: &str) -> String {
        render(&self.expand(tokens(src)))
    }

    /// The expansion of the function-like macro `name` invoked with `args` (each an
    /// argument's text), rescanned; `None` when `name` is no function-like macro.
    pub fn invoke(&self, name: &str, args: &[String]) -> Option<Vec<Token>> {
        self.invoke_in(name, args, &mut Expander::new(self, MAX_WORK))
    }

    /// [`Macros::invoke`] with at most `max_work` tokens produced (see [`MAX_WORK`]), and the
    /// work it took; `None` also when a limit cut the expansion short, so that a caller
    /// deciding something from the expansion never decides it on a partial one.
    pub fn invoke_counted(
        &self,
        name: &str,
        args: &[String],
        max_work: usize,
    ) -> Option<(Vec<Token>, usize)> {
        let mut e = Expander::new(self, max_work.min(MAX_WORK));
        let out = self.invoke_in(name, args, &mut e)?;
        (!e.truncated).then(|| (out, max_work.min(MAX_WORK) - e.work))
    }

    fn invoke_in(&self, name: &str, args: &[String], e: &mut Expander<'_>) -> Option<Vec<Token>> {
        let m = self.get(name).filter(|m| m.is_function_like())?;
        let args: Vec<Vec<Ht>> = args
            .iter()
            .map(|a| tokens(a).into_iter().map(Ht::new).collect())
            .collect();
        let hide = Rc::new(vec![name.to_owned()]);
        let origin = Token {
            kind: Kind::Ident,
            text: name.to_owned(),
            span: 0..0,
            space_before: false,
            line_start: false,
        };
        let body = e.subst(m, &args, &hide, &origin);
        Some(e.expand(body).into_iter().map(|t| t.tok).collect())
    }

    /// [`Macros::invoke`] written back as text.
    pub fn invoke_text(&self, name: &str, args: &[String]) -> Option<String> {
        self.invoke(name, args).map(|t| render(&t))
    }
}

/// Tokens written back as text: a space where the source had white space before a token, and
/// where two words would otherwise run together.
pub fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Token> = None;
    for t in tokens {
        if let Some(p) = prev {
            let words = |k: Kind| matches!(k, Kind::Ident | Kind::Number);
            if t.space_before || (words(p.kind) && words(t.kind)) {
                out.push(' ');
            }
        }
        out.push_str(&t.text);
        prev = Some(t);
    }
    out
}

/// The arguments of the invocation whose `(` is at byte `open` of `src`, each trimmed, and the
/// byte after its `)`; `None` when no `(` is there or it never closes. Commas split at the top
/// level only: inside parentheses, and also inside brackets and braces (a lambda or braced
/// initializer passed to a macro is meant whole; the preprocessor proper would split it and
/// complain).
pub fn call_args(src: &str, open: usize) -> Option<(Vec<String>, usize)> {
    let rest = src.get(open..)?;
    let mut lexer = Lexer::new(rest);
    if !lexer.next()?.is("(") {
        return None;
    }
    let mut depth = 1usize;
    let mut args = Vec::new();
    let mut arg: Option<std::ops::Range<usize>> = None;
    for t in lexer {
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    if arg.is_some() || !args.is_empty() {
                        args.push(arg.map_or("", |r| &rest[r]).to_owned());
                    }
                    return Some((args, open + t.span.end));
                }
            }
            "," if depth == 1 => {
                args.push(arg.take().map_or("", |r| &rest[r]).to_owned());
                continue;
            }
            _ => {}
        }
        match &mut arg {
            Some(r) => r.end = t.span.end,
            None => arg = Some(t.span.clone()),
        }
    }
    None
}

/// The token ranges of each argument of the call whose `(` is `toks[0]`, and the index of its
/// `)`. `M()` has one empty argument.
fn arg_ranges<T>(
    toks: &[T],
    text: impl Fn(&T) -> &str,
) -> Option<(Vec<std::ops::Range<usize>>, usize)> {
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut start = 1;
    for (i, t) in toks.iter().enumerate() {
        match text(t) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    out.push(start..i);
                    return Some((out, i));
                }
            }
            "," if depth == 1 => {
                out.push(start..i);
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// A token and the macros it came out of.
#[derive(Clone, Debug)]
struct Ht {
    tok: Token,
    hide: Rc<Vec<String>>,
}

impl Ht {
    fn new(tok: Token) -> Self {
        Ht {
            tok,
            hide: Rc::new(Vec::new()),
        }
    }
}

struct Expander<'m> {
    macros: &'m Macros,
    /// Invocations left ([`MAX_EXPANSIONS`]).
    budget: usize,
    /// Tokens left to produce ([`MAX_WORK`]).
    work: usize,
    /// Whether a limit left an invocation unexpanded.
    truncated: bool,
}

impl<'m> Expander<'m> {
    fn new(macros: &'m Macros, work: usize) -> Self {
        Expander {
            macros,
            budget: MAX_EXPANSIONS,
            work,
            truncated: false,
        }
    }

    fn within_limits(&mut self, held: usize) -> bool {
        let ok = self.budget > 0 && self.work > 0 && held < MAX_TOKENS;
        self.truncated |= !ok;
        ok
    }

    fn expand(&mut self, input: Vec<Ht>) -> Vec<Ht> {
        let mut ts: VecDeque<Ht> = input.into();
        let mut out: Vec<Ht> = Vec::new();
        while let Some(t) = ts.pop_front() {
            let m = (t.tok.kind == Kind::Ident && !t.hide.contains(&t.tok.text))
                .then(|| self.macros.get(&t.tok.text))
                .flatten();
            let held = out.len() + ts.len();
            let Some(m) = m.filter(|_| self.within_limits(held)) else {
                out.push(t);
                continue;
            };
            let mut hide = (*t.hide).clone();
            hide.push(m.name.clone());
            let hide = Rc::new(hide);
            let body = if m.is_function_like() {
                if !ts.front().is_some_and(|n| n.tok.is("(")) {
                    out.push(t);
                    continue;
                }
                let Some((ranges, close)) = arg_ranges(ts.make_contiguous(), |h| &h.tok.text)
                else {
                    // An unterminated invocation is left as written.
                    out.push(t);
                    continue;
                };
                let call: Vec<Ht> = ts.drain(..=close).collect();
                let args: Vec<Vec<Ht>> = ranges.into_iter().map(|r| call[r].to_vec()).collect();
                self.subst(m, &args, &hide, &t.tok)
            } else {
                self.subst(m, &[], &hide, &t.tok)
            };
            self.budget -= 1;
            for b in body.into_iter().rev() {
                ts.push_front(b);
            }
        }
        out
    }

    /// `m`'s body with `args` in place of its parameters, each token hidden from `hide`.
    fn subst(
        &mut self,
        m: &Macro,
        args: &[Vec<Ht>],
        hide: &Rc<Vec<String>>,
        origin: &Token,
    ) -> Vec<Ht> {
        let args = self.fit_args(m, args);
        let body = &m.body;
        let param = |t: &Token| {
            (m.is_function_like() && t.kind == Kind::Ident)
                .then(|| m.param_index(&t.text))
                .flatten()
        };
        let mut out: Vec<Ht> = Vec::new();
        // Whether the last thing put out was an empty argument (a placemarker for `##`).
        let mut placemarker = false;
        let mut i = 0;
        while i < body.len() {
            let t = &body[i];
            let next_is_paste = body.get(i + 1).is_some_and(|n| n.is("##"));
            if m.is_function_like() && (t.is("#") || t.is("%:")) {
                if let Some(p) = body.get(i + 1).and_then(param) {
                    out.push(Ht::new(Token {
                        kind: Kind::Str,
                        text: stringize(&args[p]),
                        span: t.span.clone(),
                        space_before: t.space_before,
                        line_start: false,
                    }));
                    placemarker = false;
                    i += 2;
                    continue;
                }
            }
            if t.is("##") && i > 0 && i + 1 < body.len() {
                let rhs: Vec<Ht> = match param(&body[i + 1]) {
                    Some(p) => args[p].clone(),
                    None => vec![Ht::new(body[i + 1].clone())],
                };
                let mut rhs = rhs.into_iter();
                match (placemarker, out.last_mut(), rhs.next()) {
                    (false, Some(last), Some(first)) => paste(&mut last.tok, &first.tok),
                    (_, _, Some(first)) => out.push(first),
                    (_, _, None) => {}
                }
                let before = out.len();
                out.extend(rhs);
                placemarker = out.len() == before && placemarker;
                i += 2;
                continue;
            }
            match param(t) {
                Some(p) => {
                    let mut a = if next_is_paste {
                        args[p].clone()
                    } else {
                        self.expand(args[p].clone())
                    };
                    if let Some(f) = a.first_mut() {
                        f.tok.space_before = t.space_before;
                    }
                    placemarker = a.is_empty();
                    out.extend(a);
                }
                None => {
                    out.push(Ht::new(t.clone()));
                    placemarker = false;
                }
            }
            i += 1;
        }
        let cost = out.len().saturating_mul(hide.len() + 1);
        self.work = self.work.saturating_sub(cost);
        for (k, h) in out.iter_mut().enumerate() {
            let mut set = (*h.hide).clone();
            set.extend(hide.iter().filter(|n| !h.hide.contains(n)).cloned());
            h.hide = Rc::new(set);
            h.tok.span = origin.span.clone();
            h.tok.line_start = false;
            if k == 0 {
                h.tok.space_before = origin.space_before;
            }
        }
        out
    }

    /// The arguments as the parameters take them: the variadic parameter takes the rest
    /// (joined by their commas), a missing argument is empty, `M()` of no parameters has none.
    fn fit_args(&self, m: &Macro, args: &[Vec<Ht>]) -> Vec<Vec<Ht>> {
        let n = m.params.as_ref().map_or(0, Vec::len);
        let mut out: Vec<Vec<Ht>> = args.iter().take(n).cloned().collect();
        if m.is_variadic() && args.len() > n {
            if let Some(last) = out.last_mut() {
                for a in &args[n..] {
                    last.push(Ht::new(Token {
                        kind: Kind::Punct,
                        text: ",".to_owned(),
                        span: 0..0,
                        space_before: false,
                        line_start: false,
                    }));
                    let mut a = a.clone();
                    if let Some(f) = a.first_mut() {
                        f.tok.space_before = true;
                    }
                    last.extend(a);
                }
            }
        }
        out.resize(n, Vec::new());
        out
    }
}

/// `a ## b`: the two texts joined, as one token when they lex as one.
fn paste(a: &mut Token, b: &Token) {
    a.text.push_str(&b.text);
    let l = lex(&a.text);
    a.kind = match l.tokens.as_slice() {
        [one] if l.comments.is_empty() => one.kind,
        // Not one token: invalid in the preprocessor; kept as the joined text.
        _ => Kind::Other,
    };
}

/// `#x`: the argument's tokens as a string literal, `"` and `\` escaped inside literals.
fn stringize(arg: &[Ht]) -> String {
    let mut s = String::from("\"");
    for (i, h) in arg.iter().enumerate() {
        if i > 0 && h.tok.space_before {
            s.push(' ');
        }
        if matches!(h.tok.kind, Kind::Str | Kind::Char) {
            for c in h.tok.text.chars() {
                if c == '"' || c == '\\' {
                    s.push('\\');
                }
                s.push(c);
            }
        } else {
            s.push_str(&h.tok.text);
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    fn defs(src: &str) -> Macros {
        Macros::defined_in(src)
    }

    /// Macros whose expansion doubles at each level: `L20(x)` would be 2^20 copies of `x`,
    /// each level expanding its argument twice.
    fn doubling(levels: usize) -> Macros {
        let mut text = String::from("#define L0(x) x x\n");
        for k in 1..=levels {
            let _ = writeln!(text, "#define L{k}(x) L{}(x) L{}(x)", k - 1, k - 1);
        }
        defs(&text)
    }

    #[test]
    fn an_expansion_that_would_not_end_is_cut_short_and_says_so() {
        let m = doubling(40);
        let out = m.invoke("L40", &["y".to_string()]).unwrap();
        assert!(
            out.len() <= MAX_TOKENS + 2 * MAX_EXPANSIONS + 2,
            "{}",
            out.len()
        );
        // A caller deciding something from the expansion gets none rather than a partial one.
        assert_eq!(m.invoke_counted("L40", &["y".to_string()], MAX_WORK), None);
        let (small, used) = m
            .invoke_counted("L3", &["y".to_string()], MAX_WORK)
            .unwrap();
        assert_eq!(small.len(), 16);
        assert!(used > 0 && used < 1000, "{used}");
        // The work allowed is the caller's: a smaller allowance cuts sooner.
        assert_eq!(m.invoke_counted("L3", &["y".to_string()], 10), None);
    }

    #[test]
    fn object_and_function_like_with_nested_parens() {
        let m = defs("#define N 4\n#define ADD(a, b) ((a) + (b))\n");
        assert_eq!(
            m.expand_text("x = ADD(f(1, 2), N);"),
            "x = ((f(1, 2)) + (4));"
        );
        // A function-like macro's name without `(` is left alone.
        assert_eq!(m.expand_text("int ADD;"), "int ADD;");
        assert_eq!(
            m.invoke_text("ADD", &["[1, 2]".to_owned(), "{3, 4}".to_owned()]),
            Some("(([1, 2]) + ({3, 4}))".to_owned())
        );
        assert_eq!(m.invoke_text("N", &[]), None);
    }

    #[test]
    fn stringizing_and_pasting() {
        let m = defs("#define K(T) __global__ void add_##T(T* a) { g(#T, #a); }\n#define S(x) #x\n#define CAT(a, b) a ## b\n");
        assert_eq!(
            m.expand_text("K(float)"),
            "__global__ void add_float(float* a) { g(\"float\", #a); }"
        );
        assert_eq!(m.expand_text("S(\"q\\n\" 'c')"), "\"\\\"q\\\\n\\\" 'c'\"");
        assert_eq!(
            m.expand_text("CAT(x, 1) CAT(, y) CAT(z, ) CAT(<, <=)"),
            "x1 y z <<="
        );
        let t = m.expand(tokens("CAT(x, 1)"));
        assert_eq!((t.len(), t[0].kind), (1, Kind::Ident));
    }

    #[test]
    fn pasted_operands_are_not_expanded_first() {
        let m = defs("#define N 4\n#define CAT(a, b) a ## b\n#define ID(a) a\n#define N4 done\n");
        assert_eq!(m.expand_text("CAT(N, 4) ID(N)"), "done 4");
    }

    #[test]
    fn variadic_arguments() {
        let m = defs("#define LOG(fmt, ...) printf(fmt, __VA_ARGS__)\n#define G(args...) f(args)\n#define E(...) [__VA_ARGS__]\n");
        assert_eq!(
            m.expand_text("LOG(\"%d %d\", a, (b, c))"),
            "printf(\"%d %d\", a, (b, c))"
        );
        assert_eq!(m.expand_text("G(1, 2)"), "f(1, 2)");
        assert_eq!(m.expand_text("E()"), "[]");
    }

    #[test]
    fn rescanning_expands_nested_macros() {
        let m = defs("#define KERNEL extern \"C\" __global__\n#define OP_OUT(T, NAME) KERNEL void NAME(T* x) {}\n#define OP(T, NAME) OP_OUT(T, NAME)\n");
        assert_eq!(
            m.expand_text("OP(float, add_f32)"),
            "extern \"C\" __global__ void add_f32(float* x) {}"
        );
    }

    #[test]
    fn recursive_macros_stop() {
        let m = defs("#define A B + 1\n#define B A * 2\n#define f(x) x + f(x)\n#define g f\n");
        assert_eq!(m.expand_text("A"), "A * 2 + 1");
        assert_eq!(m.expand_text("f(1)"), "1 + f(1)");
        assert_eq!(m.expand_text("g(g)(2)"), "f + f(f)(2)");
    }

    #[test]
    fn bounded_on_exponential_growth() {
        let mut src = String::from("#define M0 x\n");
        for i in 1..40 {
            src.push_str(&format!("#define M{i} M{p} M{p}\n", p = i - 1));
        }
        let out = defs(&src).expand(tokens("M39"));
        assert!(out.len() <= MAX_TOKENS + MAX_EXPANSIONS * 2 + 2);
    }

    #[test]
    fn an_unterminated_call_is_left_as_written() {
        let m = defs("#define F(a) [a]\n");
        assert_eq!(m.expand_text("F(1, (2)"), "F(1, (2)");
        assert_eq!(call_args("F(1, (2)", 1), None);
        assert_eq!(
            call_args("F (a, b<c, d>, {e, f}) + 1", 2),
            Some((
                vec![
                    "a".to_owned(),
                    "b<c".to_owned(),
                    "d>".to_owned(),
                    "{e, f}".to_owned()
                ],
                22
            ))
        );
        assert_eq!(call_args("F()", 1), Some((vec![], 3)));
        assert_eq!(
            call_args("F(\")\", x)", 1),
            Some((vec!["\")\"".to_owned(), "x".to_owned()], 9))
        );
    }
}
