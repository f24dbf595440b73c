//! A tolerant reader of the PTX that NVRTC writes: enough structure to instrument it, and
//! nothing that would make an instruction it does not know an error.
//!
//! Every PTX ISA release adds instructions; a full grammar that rejected one of them would make
//! bounds checking fail for the whole module. So the reader models only what the instrumenter
//! needs (functions and their parameters, variable declarations with their sizes, register
//! declarations, labels, `.loc` line information, and each instruction as guard, opcode and
//! operand texts) and keeps every statement's byte span, so the writer copies everything it
//! does not change verbatim.

use std::collections::BTreeMap;
use std::ops::Range;

use thiserror::Error;

use super::op::{Op, Ty};

/// Why a text could not be read as PTX.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PtxError {
    #[error("PTX line {line}: {what} is not closed before the end of the module")]
    Unterminated { line: u32, what: &'static str },
    #[error("PTX line {line}: cannot read the function header `{text}`")]
    BadHeader { line: u32, text: String },
}

/// An address space of the PTX memory model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Space {
    Generic,
    Global,
    Shared,
    /// `.shared::cluster`: may name another block's shared memory.
    SharedCluster,
    Local,
    Const,
    Param,
}

impl Space {
    /// The state space a dotted opcode part names, if any.
    pub(super) fn from_part(part: &str) -> Option<Space> {
        Some(match part {
            "global" => Space::Global,
            "shared" | "shared::cta" => Space::Shared,
            "shared::cluster" => Space::SharedCluster,
            "local" => Space::Local,
            "const" => Space::Const,
            "param" | "param::entry" | "param::func" => Space::Param,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Generic => "generic",
            Space::Global => "global",
            Space::Shared => "shared",
            Space::SharedCluster => "shared::cluster",
            Space::Local => "local",
            Space::Const => "const",
            Space::Param => "param",
        }
    }
}

/// A variable declaration: `.shared .align 4 .b8 tile[1024];`, `.extern .shared .b8 smem[];`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    pub space: Space,
    /// Bytes, or `None` for an unsized (`[]`) array: the launch's dynamic shared memory.
    pub bytes: Option<u64>,
}

/// A `.loc file line column` directive, with its `inlined_at` call site when present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub column: u32,
    pub inlined_at: Option<(u32, u32, u32)>,
}

/// One instruction: `@!%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd7+16];`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    pub guard: Option<Guard>,
    /// The dotted opcode, as written (`ld.global.nc.v4.f32`).
    pub opcode: String,
    /// The operand texts, split at top-level commas and trimmed.
    pub operands: Vec<String>,
    /// What the opcode says, decoded once: what the analyses read ([`Op`]). The texts above
    /// are what the writer copies.
    pub op: Op,
    /// The opcode says `.sync` or `.aligned`: the threads of a warp (or block) execute it
    /// together (`bar.sync`, `shfl.sync`, `mma.sync.aligned`, `setmaxnreg.sync.aligned`).
    pub aligned: bool,
}

/// An instruction's guard: `@%p1` (runs where `%p1` holds) or `@!%p1` (where it does not).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    pub negated: bool,
    /// The predicate register.
    pub pred: String,
}

impl Guard {
    /// The opposite guard: `@!%p1` for `@%p1`.
    pub fn negate(&self) -> Guard {
        Guard {
            negated: !self.negated,
            pred: self.pred.clone(),
        }
    }

    /// The guard as a predicate operand (`%p1`, `!%p1`), for `and.pred` or `setp.*.and`.
    pub fn operand(&self) -> String {
        format!("{}{}", if self.negated { "!" } else { "" }, self.pred)
    }
}

/// `@%p1`, `@!%p1`: as PTX writes it before an instruction.
impl std::fmt::Display for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "@{}", self.operand())
    }
}

/// A guard as PTX writes it before an instruction (`@%p1 `, `@!%p2 `), or nothing.
pub fn guard_text(g: &Option<Guard>) -> String {
    g.as_ref().map_or_else(String::new, |g| format!("{g} "))
}

impl Instr {
    /// The opcode's dotted parts: `["ld", "global", "nc", "v4", "f32"]`.
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        self.opcode.split('.')
    }

    /// The first part: `ld`, `st`, `atom`, `mov`, ...
    pub fn op(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// The state space the opcode names (`Generic` when it names none).
    pub fn space(&self) -> Space {
        self.parts()
            .skip(1)
            .find_map(Space::from_part)
            .unwrap_or(Space::Generic)
    }

    /// A block barrier's opcode in its non-aligned form: `bar.red.popc.u32` and
    /// `barrier.cta.red.aligned.popc.u32` as `barrier.red.popc.u32`, `bar.sync` as
    /// `barrier.sync` (lanes of one warp may then arrive at it separately).
    pub fn non_aligned_barrier(&self) -> String {
        let rest: Vec<&str> = self
            .parts()
            .skip(1)
            .filter(|p| !matches!(*p, "aligned" | "cta"))
            .collect();
        format!("barrier.{}", rest.join("."))
    }

    /// Whether the opcode has the part `p` (`has(".nc")` is written `has("nc")`).
    pub fn has(&self, p: &str) -> bool {
        self.parts().skip(1).any(|x| x == p)
    }
}

/// What a statement of a function body is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StmtKind {
    Instr(Instr),
    Label(String),
    Loc(Loc),
    /// `.reg`, `.local`, `.shared`, `.param`, `.pragma` and other directives.
    Directive(String),
    /// `{` opening a nested scope (call sequences).
    Open,
    /// `}` closing one.
    Close,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stmt {
    pub span: Range<usize>,
    pub kind: StmtKind,
}

/// A parameter of an `.entry` or `.func`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    /// The declaration as written (`.param .u64 .ptr .global .align 4 k_param_0`).
    pub decl: String,
}

/// A function definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Byte offset of the definition's first token (`.visible .entry ...`).
    pub start: usize,
    pub name: String,
    /// `.entry` (a kernel) rather than `.func`.
    pub entry: bool,
    pub params: Vec<Param>,
    /// Byte offset of the `)` closing the parameter list.
    pub params_close: usize,
    /// Byte offset just after the body's `{`.
    pub body_open: usize,
    /// Byte offset of the body's closing `}`.
    pub body_close: usize,
    pub stmts: Vec<Stmt>,
    /// Register declarations: name or `%prefix<` range stem -> type (`b64`, `f32`, `pred`).
    pub regs: BTreeMap<String, String>,
    /// Variables declared inside the body (demoted `__shared__`, the local depot).
    pub vars: Vec<Var>,
}

impl Function {
    /// Where code that runs before the body goes (a checker's prologue): before the first
    /// statement that is no declaration, and after the last declaration of a shared array in
    /// the body, which such a prologue may name (another checker's prologue may come first).
    pub fn prologue_at(&self) -> usize {
        let first = self
            .stmts
            .iter()
            .find(|s| !matches!(s.kind, StmtKind::Directive(_)))
            .map_or(self.body_close, |s| s.span.start);
        let last_shared = self
            .stmts
            .iter()
            .filter(|s| matches!(&s.kind, StmtKind::Directive(d) if d.contains(".shared")))
            .map(|s| s.span.end)
            .max()
            .unwrap_or(0);
        first.max(last_shared)
    }

    /// Statement `k`, when it is an instruction.
    pub fn instr(&self, k: usize) -> Option<&Instr> {
        match &self.stmts.get(k)?.kind {
            StmtKind::Instr(i) => Some(i),
            _ => None,
        }
    }

    /// The function's instructions, in order.
    pub fn instrs(&self) -> impl Iterator<Item = &Instr> {
        self.stmts.iter().filter_map(|s| match &s.kind {
            StmtKind::Instr(i) => Some(i),
            _ => None,
        })
    }

    /// The declared type of a register (`%rd12` -> `b64`), if it is declared.
    pub fn reg_type(&self, reg: &str) -> Option<&str> {
        if let Some(t) = self.regs.get(reg) {
            return Some(t);
        }
        let stem = reg.trim_end_matches(|c: char| c.is_ascii_digit());
        if stem.len() == reg.len() {
            return None;
        }
        self.regs.get(&format!("{stem}<")).map(String::as_str)
    }
}

/// A PTX module: its functions, module-scope variables and `.file` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    pub functions: Vec<Function>,
    pub vars: Vec<Var>,
    /// `.file N "name"`.
    pub files: BTreeMap<u32, String>,
    /// Byte offset just after the `.address_size` (or `.target`) directive: where module-scope
    /// definitions the instrumenter adds can go.
    pub header_end: usize,
}

impl Module {
    /// The variable named `name`, declared in `f` or at module scope.
    pub fn var<'a>(&'a self, f: &'a Function, name: &str) -> Option<&'a Var> {
        f.vars.iter().chain(&self.vars).find(|v| v.name == name)
    }
}

/// Reads a PTX module.
///
/// # Errors
/// [`PtxError`] when a comment, string, scope or function is not closed, or a function header
/// cannot be read. Instructions are never rejected: the reader does not know their meaning.
pub fn parse(text: &str) -> Result<Module, PtxError> {
    let mut r = Reader {
        s: text.as_bytes(),
        text,
        at: 0,
    };
    let mut module = Module {
        functions: Vec::new(),
        vars: Vec::new(),
        files: BTreeMap::new(),
        header_end: 0,
    };
    loop {
        r.skip_space_and_comments()?;
        if r.at >= r.s.len() {
            break;
        }
        let start = r.at;
        let word = r.peek_word();
        match word {
            ".version" | ".target" | ".address_size" | ".file" | ".loc" => {
                let end = r.line_end();
                let line = &text[start..end];
                if word == ".file" {
                    if let Some((n, name)) = parse_file(line) {
                        module.files.insert(n, name);
                    }
                }
                r.at = end;
                if word == ".address_size" || word == ".target" {
                    module.header_end = end;
                }
            }
            ".section" => {
                // Debug sections: `.section .debug_str { ... }`.
                r.skip_to_balanced_close()?;
            }
            _ => {
                let stmt_end = r.module_statement()?;
                let stmt = &text[start..stmt_end.end];
                if let Some(body_open) = stmt_end.body_open {
                    let f = read_function(text, start, body_open, &mut r)?;
                    module.functions.push(f);
                } else if let Some(v) = parse_var(stmt) {
                    module.vars.push(v);
                }
            }
        }
    }
    Ok(module)
}

struct StatementEnd {
    end: usize,
    /// Set when the statement is a function header followed by its body.
    body_open: Option<usize>,
}

struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn line_of(&self, at: usize) -> u32 {
        1 + self.s[..at.min(self.s.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u32
    }

    fn skip_space_and_comments(&mut self) -> Result<(), PtxError> {
        loop {
            while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
                self.at += 1;
            }
            if self.s[self.at..].starts_with(b"//") {
                self.at = self.line_end();
            } else if self.s[self.at..].starts_with(b"/*") {
                self.skip_block_comment()?;
            } else {
                return Ok(());
            }
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), PtxError> {
        let start = self.at;
        match self.text[self.at + 2..].find("*/") {
            Some(i) => {
                self.at += 2 + i + 2;
                Ok(())
            }
            None => Err(PtxError::Unterminated {
                line: self.line_of(start),
                what: "a /* comment",
            }),
        }
    }

    fn line_end(&self) -> usize {
        self.text[self.at..]
            .find('\n')
            .map_or(self.s.len(), |i| self.at + i)
    }

    fn peek_word(&self) -> &'a str {
        let text: &'a str = self.text;
        let rest = &text[self.at..];
        let n = rest
            .find(|c: char| c.is_ascii_whitespace() || c == ';' || c == '{')
            .unwrap_or(rest.len());
        &rest[..n]
    }

    fn skip_string(&mut self) -> Result<(), PtxError> {
        let start = self.at;
        self.at += 1;
        while self.at < self.s.len() {
            match self.s[self.at] {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => self.at += 1,
            }
        }
        Err(PtxError::Unterminated {
            line: self.line_of(start),
            what: "a string",
        })
    }

    /// From a `{`-containing directive, past its matching `}`.
    fn skip_to_balanced_close(&mut self) -> Result<(), PtxError> {
        let start = self.at;
        let mut depth = 0usize;
        while self.at < self.s.len() {
            match self.s[self.at] {
                b'"' => {
                    self.skip_string()?;
                    continue;
                }
                b'/' if self.s[self.at..].starts_with(b"//") => {
                    self.at = self.line_end();
                    continue;
                }
                b'/' if self.s[self.at..].starts_with(b"/*") => {
                    self.skip_block_comment()?;
                    continue;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.at += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        Err(PtxError::Unterminated {
            line: self.line_of(start),
            what: "a `{` block",
        })
    }

    /// A module-scope statement: up to `;` (outside braces and parentheses), or up to the `{`
    /// of a function body.
    fn module_statement(&mut self) -> Result<StatementEnd, PtxError> {
        let start = self.at;
        let (mut paren, mut brace) = (0usize, 0usize);
        let mut saw_eq = false;
        while self.at < self.s.len() {
            match self.s[self.at] {
                b'"' => {
                    self.skip_string()?;
                    continue;
                }
                b'/' if self.s[self.at..].starts_with(b"//") => {
                    self.at = self.line_end();
                    continue;
                }
                b'/' if self.s[self.at..].starts_with(b"/*") => {
                    self.skip_block_comment()?;
                    continue;
                }
                b'(' => paren += 1,
                b')' => paren = paren.saturating_sub(1),
                b'=' => saw_eq = true,
                b'{' if paren == 0
                    && brace == 0
                    && !saw_eq
                    && is_function_header(&self.text[start..self.at]) =>
                {
                    let body_open = self.at + 1;
                    return Ok(StatementEnd {
                        end: self.at,
                        body_open: Some(body_open),
                    });
                }
                b'{' => brace += 1,
                b'}' => brace = brace.saturating_sub(1),
                b';' if paren == 0 && brace == 0 => {
                    self.at += 1;
                    return Ok(StatementEnd {
                        end: self.at,
                        body_open: None,
                    });
                }
                _ => {}
            }
            self.at += 1;
        }
        // A trailing statement without `;` (only whitespace can follow in valid PTX).
        Ok(StatementEnd {
            end: self.at,
            body_open: None,
        })
    }
}

fn is_function_header(s: &str) -> bool {
    s.split(|c: char| c.is_ascii_whitespace() || c == '(')
        .any(|w| w == ".entry" || w == ".func")
}

fn parse_file(line: &str) -> Option<(u32, String)> {
    let rest = line.trim_start().strip_prefix(".file")?.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let n = rest[..digits].parse().ok()?;
    let q = rest[digits..].find('"')?;
    let after = &rest[digits + q + 1..];
    let end = after.find('"')?;
    Some((n, after[..end].replace("\\\\", "\\")))
}

/// `.shared .align 4 .b8 name[256];` and friends; `None` for anything else.
pub(crate) fn parse_var(stmt: &str) -> Option<Var> {
    let stmt = stmt.trim().trim_end_matches(';');
    let decl = stmt.split('=').next()?.trim();
    let mut space = None;
    let mut elem = 0u64;
    let mut vec = 1u64;
    let mut name_tok = None;
    for tok in decl.split_ascii_whitespace() {
        if let Some(p) = tok.strip_prefix('.') {
            match p {
                "shared" => space = Some(Space::Shared),
                "global" => space = Some(Space::Global),
                "const" => space = Some(Space::Const),
                "local" => space = Some(Space::Local),
                "v2" => vec = 2,
                "v4" => vec = 4,
                "v8" => vec = 8,
                _ => {
                    if let Some(b) = type_bytes(p) {
                        elem = b;
                    }
                }
            }
        } else {
            name_tok = Some(tok);
        }
    }
    let space = space?;
    let tok = name_tok?;
    let (name, dims) = match tok.find('[') {
        Some(i) => (&tok[..i], &tok[i..]),
        None => (tok, ""),
    };
    if name.is_empty() || elem == 0 {
        return None;
    }
    let mut bytes = Some(elem * vec);
    for d in dims.split('[').skip(1) {
        let d = d.trim_end_matches(']').trim();
        if d.is_empty() {
            bytes = None;
        } else {
            let n: u64 = d.parse().ok()?;
            bytes = bytes.map(|b| b.saturating_mul(n));
        }
    }
    Some(Var {
        name: name.to_string(),
        space,
        bytes,
    })
}

/// Bytes of a PTX fundamental type (`f32` -> 4, `b128` -> 16, `f16x2` -> 4).
pub fn type_bytes(t: &str) -> Option<u64> {
    Ty::from_part(t)?.bytes()
}

fn read_function(
    text: &str,
    start: usize,
    body_open: usize,
    r: &mut Reader<'_>,
) -> Result<Function, PtxError> {
    let header = &text[start..body_open - 1];
    let bad = || PtxError::BadHeader {
        line: r.line_of(start),
        text: header.lines().next().unwrap_or("").trim().to_string(),
    };
    let entry = header
        .split(|c: char| c.is_ascii_whitespace() || c == '(')
        .any(|w| w == ".entry");
    let kw = if entry { ".entry" } else { ".func" };
    let kw_at = header.find(kw).ok_or_else(bad)?;
    let mut rest_at = kw_at + kw.len();
    let rest = &header[rest_at..];
    let trimmed = rest.trim_start();
    rest_at += rest.len() - trimmed.len();
    // `.func (.param .b32 retval) name(...)`: skip the return parameter list.
    if trimmed.starts_with('(') {
        let close = matching_paren(header, rest_at).ok_or_else(bad)?;
        rest_at = close + 1;
    }
    let rest = &header[rest_at..];
    let name_start = rest_at + (rest.len() - rest.trim_start().len());
    let name_len = header[name_start..]
        .find(|c: char| c.is_ascii_whitespace() || c == '(')
        .unwrap_or(header.len() - name_start);
    let name = header[name_start..name_start + name_len].to_string();
    if name.is_empty() {
        return Err(bad());
    }
    let (params, params_close) = match header[name_start + name_len..].find('(') {
        Some(i) => {
            let open = name_start + name_len + i;
            let close = matching_paren(header, open).ok_or_else(bad)?;
            let params = split_top(&header[open + 1..close])
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(|decl| Param {
                    name: decl
                        .split_ascii_whitespace()
                        .last()
                        .unwrap_or("")
                        .split('[')
                        .next()
                        .unwrap_or("")
                        .to_string(),
                    decl,
                })
                .collect();
            (params, start + close)
        }
        None => (Vec::new(), start + header.len()),
    };
    r.at = body_open;
    let mut f = Function {
        start,
        name,
        entry,
        params,
        params_close,
        body_open,
        body_close: body_open,
        stmts: Vec::new(),
        regs: BTreeMap::new(),
        vars: Vec::new(),
    };
    read_body(text, r, &mut f)?;
    Ok(f)
}

/// Index of the `)` matching the `(` at `open`.
fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate().skip(open) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits at commas outside brackets, braces and parentheses; trims each part.
pub(crate) fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0usize);
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'[' | b'{' | b'(' => depth += 1,
            b']' | b'}' | b')' => depth -= 1,
            b',' if depth == 0 => {
                out.push(s[from..i].trim().to_string());
                from = i + 1;
            }
            _ => {}
        }
    }
    let last = s[from..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// The statements of `text`, a piece of a function's body (what the instrumenter writes into
/// one: its own code beside the user's), spans in `text`. `None` when a comment, string,
/// statement or `{ }` scope in it is not closed, or a `}` closes a scope it did not open.
pub(crate) fn statements(text: &str) -> Option<Vec<Stmt>> {
    // Read as a body that ends after the text.
    let closed = format!("{text}\n}}");
    let mut r = Reader {
        s: closed.as_bytes(),
        text: &closed,
        at: 0,
    };
    let mut f = Function {
        start: 0,
        name: String::new(),
        entry: false,
        params: Vec::new(),
        params_close: 0,
        body_open: 0,
        body_close: 0,
        stmts: Vec::new(),
        regs: BTreeMap::new(),
        vars: Vec::new(),
    };
    read_body(&closed, &mut r, &mut f).ok()?;
    (f.body_close == closed.len() - 1).then_some(f.stmts)
}

fn read_body(text: &str, r: &mut Reader<'_>, f: &mut Function) -> Result<(), PtxError> {
    let open_line = r.line_of(r.at);
    let mut depth = 0usize;
    loop {
        r.skip_space_and_comments()?;
        if r.at >= r.s.len() {
            return Err(PtxError::Unterminated {
                line: open_line,
                what: "the body of a function",
            });
        }
        let start = r.at;
        match r.s[r.at] {
            b'{' => {
                r.at += 1;
                depth += 1;
                f.stmts.push(Stmt {
                    span: start..r.at,
                    kind: StmtKind::Open,
                });
                continue;
            }
            b'}' => {
                r.at += 1;
                if depth == 0 {
                    f.body_close = start;
                    return Ok(());
                }
                depth -= 1;
                f.stmts.push(Stmt {
                    span: start..r.at,
                    kind: StmtKind::Close,
                });
                continue;
            }
            _ => {}
        }
        let word = r.peek_word();
        if word == ".loc" || word == ".file" {
            let end = r.line_end();
            let kind = match parse_loc(&text[start..end]) {
                Some(l) => StmtKind::Loc(l),
                None => StmtKind::Directive(text[start..end].to_string()),
            };
            r.at = end;
            f.stmts.push(Stmt {
                span: start..end,
                kind,
            });
            continue;
        }
        // A label: `name:` at the start of a statement. Not `::`, which is part of an opcode
        // (`ld.global.L1::no_allocate.f32`, `ld.global.L2::cache_hint.f32`): read as a label,
        // such an access would be neither checked nor listed.
        let ident = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_$%.".contains(c)))
            .unwrap_or(text.len() - start);
        let colon = &text[start + ident..];
        if ident > 0
            && colon.starts_with(':')
            && !colon.starts_with("::")
            && !text[start..].starts_with('.')
        {
            r.at = start + ident + 1;
            f.stmts.push(Stmt {
                span: start..r.at,
                kind: StmtKind::Label(text[start..start + ident].to_string()),
            });
            continue;
        }
        // Up to `;`, skipping strings.
        loop {
            if r.at >= r.s.len() {
                return Err(PtxError::Unterminated {
                    line: r.line_of(start),
                    what: "a statement (no `;`)",
                });
            }
            match r.s[r.at] {
                b'"' => r.skip_string()?,
                b';' => {
                    r.at += 1;
                    break;
                }
                _ => r.at += 1,
            }
        }
        let stmt = text[start..r.at].trim_end_matches(';').trim();
        let kind = if stmt.starts_with('.') {
            note_directive(stmt, f);
            StmtKind::Directive(stmt.to_string())
        } else {
            StmtKind::Instr(parse_instr(stmt))
        };
        f.stmts.push(Stmt {
            span: start..r.at,
            kind,
        });
    }
}

fn note_directive(stmt: &str, f: &mut Function) {
    if let Some(rest) = stmt.strip_prefix(".reg") {
        let mut ty = String::new();
        let mut names = String::new();
        for tok in rest.split_ascii_whitespace() {
            if names.is_empty() && tok.starts_with('.') {
                if let Some(t) = tok.strip_prefix('.') {
                    if type_bytes(t).is_some() || t == "pred" {
                        ty = t.to_string();
                    }
                }
            } else {
                names.push_str(tok);
            }
        }
        for n in names.split(',') {
            let n = n.trim();
            let key = match n.find('<') {
                Some(i) => format!("{}<", &n[..i]),
                None => n.to_string(),
            };
            if !key.is_empty() {
                f.regs.insert(key, ty.clone());
            }
        }
    } else if let Some(v) = parse_var(stmt) {
        f.vars.push(v);
    }
}

fn parse_loc(line: &str) -> Option<Loc> {
    let rest = line.trim_start().strip_prefix(".loc")?.trim_start();
    let mut parts = rest.split(',');
    let head = parts.next()?;
    let nums: Vec<u32> = head
        .split_ascii_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [file, line, column] = nums[..] else {
        return None;
    };
    let mut loc = Loc {
        file,
        line,
        column,
        inlined_at: None,
    };
    for p in parts {
        if let Some(at) = p.trim().strip_prefix("inlined_at") {
            let n: Vec<u32> = at
                .split_ascii_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if let [a, b, c] = n[..] {
                loc.inlined_at = Some((a, b, c));
            }
        }
    }
    Some(loc)
}

fn parse_instr(stmt: &str) -> Instr {
    let mut s = stmt;
    let mut guard = None;
    if let Some(rest) = s.strip_prefix('@') {
        let (neg, rest) = match rest.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let n = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        guard = Some(Guard {
            negated: neg,
            pred: rest[..n].to_string(),
        });
        s = rest[n..].trim_start();
    }
    let n = s.find(|c: char| c.is_ascii_whitespace()).unwrap_or(s.len());
    let opcode = s[..n].to_string();
    let operands = split_top(s[n..].trim());
    Instr {
        guard,
        op: Op::decode(&opcode, &operands),
        aligned: opcode
            .split('.')
            .skip(1)
            .any(|p| p == "sync" || p == "aligned"),
        opcode,
        operands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
//
// Generated by NVIDIA NVVM Compiler
.version 9.0
.target sm_90
.address_size 64

.extern .func __assertfail
(
	.param .b64 __assertfail_param_0
)
;
.global .align 1 .b8 $str[6] = {110, 32, 62, 32, 48};
.extern .shared .align 16 .b8 smem[];
.func  (.param .b32 func_retval0) _Z6helperPKfi(
	.param .b64 _Z6helperPKfi_param_0,
	.param .b32 _Z6helperPKfi_param_1
)
{
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [_Z6helperPKfi_param_0];
	ret;
}
.visible .entry k(
	.param .u64 k_param_0,
	.param .align 8 .b8 k_param_1[16]
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<8>;
	.reg .b64 	%rd<26>;
	.shared .align 4 .b8 _ZZ1kE4tile[256];
	.loc	1 12 5
	ld.param.u64 	%rd1, [k_param_0];
	.loc	2 15 5, function_name $L__info_string0, inlined_at 1 45 1
	@!%p1 bra 	$L__BB3_2;
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1+-16];
	{ // callseq 0, 0
	.param .b64 param0;
	call.uni 
	__assertfail, 
	(
	param0
	);
	} // callseq 0
$L__BB3_2:
	ret;
}
	.file	1 "/tmp/k.cu"
	.section	.debug_str
	{
$L__info_string0:
.b8 95,90,0
	}
"#;

    #[test]
    fn reads_functions_params_and_statements() {
        let m = parse(PTX).unwrap();
        assert_eq!(m.functions.len(), 2);
        let h = &m.functions[0];
        assert_eq!((h.name.as_str(), h.entry), ("_Z6helperPKfi", false));
        assert_eq!(h.params.len(), 2);
        let k = &m.functions[1];
        assert_eq!((k.name.as_str(), k.entry), ("k", true));
        assert_eq!(k.params[1].name, "k_param_1");
        assert_eq!(&PTX[k.params_close..k.params_close + 1], ")");
        assert_eq!(&PTX[k.body_close..k.body_close + 1], "}");
        assert_eq!(k.reg_type("%rd12"), Some("b64"));
        assert_eq!(k.reg_type("%p1"), Some("pred"));
        assert_eq!(k.vars[0].bytes, Some(256));
        assert_eq!(m.files.get(&1).map(String::as_str), Some("/tmp/k.cu"));
        assert!(m
            .vars
            .iter()
            .any(|v| v.name == "smem" && v.bytes.is_none() && v.space == Space::Shared));
        assert!(m
            .vars
            .iter()
            .any(|v| v.name == "$str" && v.bytes == Some(6)));
    }

    #[test]
    fn reads_guards_vectors_addresses_and_calls() {
        let m = parse(PTX).unwrap();
        let k = &m.functions[1];
        let instrs: Vec<&Instr> = k.instrs().collect();
        let bra = instrs.iter().find(|i| i.op() == "bra").unwrap();
        let guard = bra.guard.as_ref().unwrap();
        assert_eq!((guard.negated, guard.pred.as_str()), (true, "%p1"));
        assert_eq!(guard.to_string(), "@!%p1");
        assert_eq!(guard.negate().to_string(), "@%p1");
        let ld = instrs
            .iter()
            .find(|i| i.op() == "ld" && i.space() == Space::Global);
        let ld = ld.unwrap();
        assert_eq!(ld.operands[0], "{%f1, %f2, %f3, %f4}");
        let a = crate::ir::Address::parse(&ld.operands[1]).unwrap();
        assert_eq!((a.base, a.offset), ("%rd1", -16));
        let call = instrs.iter().find(|i| i.op() == "call").unwrap();
        assert_eq!(call.operands[0], "__assertfail");
        assert!(k.stmts.iter().any(|s| matches!(
            s.kind,
            StmtKind::Loc(Loc {
                file: 2,
                line: 15,
                inlined_at: Some((1, 45, 1)),
                ..
            })
        )));
    }

    #[test]
    fn opcodes_with_double_colons_are_instructions_not_labels() {
        let text = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n\tld.global.L1::no_allocate.f32 %f1, [%rd1];\n$L1:\n\tld.global.L2::cache_hint.v2.f32 {%f2, %f3}, [%rd1], %rd2;\n\tret;\n}\n";
        let m = parse(text).unwrap();
        let kinds: Vec<String> = m.functions[0]
            .stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Instr(i) => i.opcode.clone(),
                StmtKind::Label(l) => format!("{l}:"),
                k => format!("{k:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "ld.global.L1::no_allocate.f32",
                "$L1:",
                "ld.global.L2::cache_hint.v2.f32",
                "ret"
            ]
        );
    }

    #[test]
    fn unclosed_bodies_are_errors_not_panics() {
        let cut = &PTX[..PTX.find("$L__BB3_2:").unwrap()];
        assert!(matches!(parse(cut), Err(PtxError::Unterminated { .. })));
    }

    #[test]
    fn addresses_in_every_form() {
        let p = |s| crate::ir::Address::parse(s).unwrap();
        assert_eq!(p("[tile+16]").base, "tile");
        assert_eq!(p("[1024]").offset, 1024);
        assert_eq!(p("[%r3]").offset, 0);
        assert_eq!(p("[%rd2+0x10]").offset, 16);
        assert!(crate::ir::Address::parse("%rd2").is_none());
    }
}
