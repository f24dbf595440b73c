//! The file's function-like macros: which are host code (they launch kernels or define host
//! functions), their full expansion, and their namespace-scope invocations that define host
//! functions.

use std::cell::{Cell, OnceCell};
use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::items::{looks_like_macro, throws_or_streams};
use super::launches::*;
use super::text::*;
use crate::source::macros::{call_args, leaves};
use crate::source::parse::{location, new_parser};
use crate::source::Location;
use crate::text::{directives, DirectiveKind, Macro, Macros};

/// A namespace-scope invocation of a macro whose expansion is host launchers only.
pub(super) struct HostMacroUse {
    pub(super) name: String,
    pub(super) location: Location,
    /// The invocation, from the macro's name to its `)` (and a `;` right after it).
    pub(super) range: std::ops::Range<usize>,
    pub(super) namespace: Vec<String>,
    /// Template kernels the expansion launches.
    pub(super) kernels: Vec<String>,
}

pub(super) fn macro_host_functions(
    text: &str,
    root: Node,
    macros: &FileMacros,
) -> Vec<HostMacroUse> {
    let mut l = Vec::new();
    leaves(root, &mut l, true);
    let mut out = Vec::new();
    let mut j = 0;
    while j + 1 < l.len() {
        let word = &text[l[j].byte_range()];
        if !macros.is_host_name(word) || &text[l[j + 1].byte_range()] != "(" {
            j += 1;
            continue;
        }
        let Some((close, args)) = call_args(text, &l, j + 1) else {
            j += 1;
            continue;
        };
        let expanded = macros.expand(word, &args).unwrap_or_default();
        if !only_host_definitions(&expanded) {
            j = close + 1;
            continue;
        }
        let mut end = l[close].end_byte();
        if l.get(close + 1)
            .is_some_and(|n| &text[n.byte_range()] == ";")
        {
            end = l[close + 1].end_byte();
        }
        // Kernels whose arguments name the expansion's own locals (`constexpr int TILE_M`)
        // cannot be named outside it.
        let locals = expansion_locals(&expanded);
        let kernels = expanded
            .match_indices("<<<")
            .filter_map(|(at, _)| callee_before(&expanded, at))
            .filter(|k| k.contains('<') && !identifiers(k).any(|w| locals.contains(w)))
            .map(collapse)
            .collect();
        out.push(HostMacroUse {
            name: word.to_owned(),
            location: location(text, l[j]),
            range: l[j].start_byte()..end,
            namespace: enclosing_namespaces(text, l[j]),
            kernels,
        });
        j = close + 1;
    }
    out
}

/// Whether an expansion defines functions, none of them device code.
pub(super) fn only_host_definitions(expanded: &str) -> bool {
    if identifiers(expanded).any(|w| matches!(w, "__device__" | "__global__")) {
        return false;
    }
    let Ok(mut parser) = new_parser() else {
        return false;
    };
    let Some(tree) = parser.parse(expanded, None) else {
        return false;
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let items: Vec<Node> = root.named_children(&mut cursor).collect();
    !items.is_empty()
        && items.iter().all(|n| match n.kind() {
            "function_definition" | "comment" => true,
            "linkage_specification" => n
                .child_by_field_name("body")
                .is_some_and(|b| b.kind() == "function_definition"),
            _ => false,
        })
}

/// The parameters and local variables of the functions an expansion defines.
pub(super) fn expansion_locals(expanded: &str) -> HashSet<String> {
    let Ok(mut parser) = new_parser() else {
        return HashSet::new();
    };
    let Some(tree) = parser.parse(expanded, None) else {
        return HashSet::new();
    };
    local_names(expanded, tree.root_node())
}

pub(super) fn enclosing_namespaces(text: &str, n: Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = n.parent();
    while let Some(p) = cur {
        if p.kind() == "namespace_definition" {
            out.push(
                p.child_by_field_name("name")
                    .map(|x| text[x.byte_range()].to_owned())
                    .unwrap_or_default(),
            );
        }
        cur = p.parent();
    }
    out.reverse();
    out
}

/// The file's function-like macros; which of them are host code is decided the first time a
/// name is asked about, so a unit that includes a large header set pays for the macros it uses,
/// not for every macro the headers define.
pub(super) struct FileMacros {
    pub(super) defs: HashMap<String, MacroDef>,
    /// The same macros, for the text layer to expand.
    expander: Macros,
    /// Tokens the classifying expansions may still produce, for the whole file: past it, a
    /// macro not yet classified is taken for device code (kept), so no header set makes the
    /// work grow without end (a set-aside macro is an optimization; keeping one is safe).
    work: Cell<usize>,
}

/// Tokens all classifying expansions of one file may produce together.
const CLASSIFY_WORK: usize = 1 << 22;

pub(super) struct MacroDef {
    pub(super) params: Vec<String>,
    pub(super) body: String,
    /// Whether it is host code, once asked (see [`FileMacros`]).
    host: OnceCell<Option<HostMacro>>,
    /// `#define NAME body`, expanded wherever the name appears (no arguments).
    pub(super) object: bool,
}

/// Why a macro is host code.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum HostMacro {
    /// Its expansion launches kernels (`<<<`) and defines no device code.
    Launches,
    /// Its expansion defines host functions only.
    DefinesHostFunctions,
    /// Its expansion throws or uses iostreams, which device code cannot
    /// (`FLASHINFER_ERROR(msg)`: `throw flashinfer::Error(...)`).
    HostOnly,
}

impl FileMacros {
    /// The file's macros and its headers' (`headers`: their texts), the file's own winning
    /// where both define a name.
    pub(super) fn with_headers(text: &str, headers: &[&str]) -> Self {
        let mut defs = HashMap::new();
        for t in headers {
            collect_defs(t, &mut defs);
        }
        collect_defs(text, &mut defs);
        Self::classified(defs)
    }

    fn classified(defs: HashMap<String, MacroDef>) -> Self {
        let mut expander = Macros::new();
        for (name, d) in &defs {
            expander.define(if d.object {
                Macro::object(name, &d.body)
            } else {
                Macro::function(name, &d.params, &d.body)
            });
        }
        FileMacros {
            defs,
            expander,
            work: Cell::new(CLASSIFY_WORK),
        }
    }

    /// Why the macro `name` is host code, if it is; decided on its expansion with the
    /// parameters' own names as arguments, the first time it is asked.
    fn host(&self, name: &str) -> Option<HostMacro> {
        let d = self.defs.get(name).filter(|d| !d.object)?;
        *d.host.get_or_init(|| {
            let left = self.work.get();
            let (full, used) = self.expander.invoke_counted(name, &d.params, left)?;
            self.work.set(left.saturating_sub(used));
            let full = crate::text::render(&full);
            let device = identifiers(&full).any(|w| matches!(w, "__device__" | "__global__"));
            if device {
                None
            } else if full.contains("<<<") {
                Some(HostMacro::Launches)
            } else if only_host_definitions(&full) {
                Some(HostMacro::DefinesHostFunctions)
            } else if throws_or_streams(&full) {
                Some(HostMacro::HostOnly)
            } else {
                None
            }
        })
    }

    /// Whether the macro `name` launches kernels.
    pub(super) fn launches(&self, name: &str) -> bool {
        self.host(name) == Some(HostMacro::Launches)
    }

    pub(super) fn is_host_name(&self, name: &str) -> bool {
        self.host(name).is_some()
    }

    /// Whether `def` (the `preproc_function_def` a macro body sits in) is host code.
    pub(super) fn is_host(&self, text: &str, def: Option<Node>) -> bool {
        def.filter(|d| d.kind() == "preproc_function_def")
            .and_then(|d| d.child_by_field_name("name"))
            .is_some_and(|n| self.is_host_name(&text[n.byte_range()]))
    }

    /// `name(args)` expanded, and every macro invocation in the expansion expanded in turn.
    pub(super) fn expand(&self, name: &str, args: &[String]) -> Option<String> {
        self.expander.invoke_text(name, args)
    }
}

/// The function-like macros `text` defines, and the object-like ones that carry an execution
/// space, into `defs`; where `text` defines a name twice (in two branches), the first wins.
fn collect_defs(text: &str, defs: &mut HashMap<String, MacroDef>) {
    for d in directives(text).into_iter().rev() {
        let DirectiveKind::Define(Some(m)) = d.kind else {
            continue;
        };
        let object = m.params.is_none();
        // Object-like macros that carry an execution space (`#define KERNEL extern "C"
        // __global__`): a function-like macro whose body says `KERNEL void NAME(...)`
        // defines device code, not host code.
        if object && !identifiers(&m.body_text).any(|w| matches!(w, "__device__" | "__global__")) {
            continue;
        }
        defs.insert(
            m.name.clone(),
            MacroDef {
                params: m.params.unwrap_or_default(),
                body: m.body_text,
                host: OnceCell::new(),
                object,
            },
        );
    }
}

/// The all-caps macros the unit's files define (`texts`) as something that is not a device
/// annotation: every `#define` of the name, in every branch of every file, expands to no
/// `__device__`, `__host__`, `__global__`, `__forceinline__` or `__noinline__`, and names no
/// other all-caps macro that is not itself plain (`#define FGAPI`, `#define EXPORT
/// __attribute__((visibility("default")))`). A macro only a library's header defines
/// (`CUTLASS_DEVICE`) is not known here, and stays a possible annotation, except the
/// toolkit's calling conventions ([`TOOLKIT_CALLING_CONVENTIONS`]). A `#define` in a
/// branch that nvcc's Linux device pass never takes (`#ifdef _WIN32`, see [`Branches`]) is no
/// definition of it: `#define CUT_THREADPROC unsigned WINAPI` for Windows does not make the
/// POSIX `void *` a possible annotation.
pub(super) fn plain_macros(texts: &[&str]) -> HashSet<String> {
    let mut bodies: HashMap<String, Vec<String>> = HashMap::new();
    for text in texts {
        let mut branches = Branches::default();
        for d in directives(text) {
            if branches.directive(&d.name, &d.rest) || !branches.taken() {
                continue;
            }
            let DirectiveKind::Define(Some(m)) = &d.kind else {
                continue;
            };
            // The parameter list counts with the body: `identifiers` of both.
            let body = d.rest.get(m.name.len()..).unwrap_or("");
            if looks_like_macro(&m.name) {
                bodies
                    .entry(m.name.clone())
                    .or_default()
                    .push(body.to_owned());
            }
        }
    }
    // Plain until shown otherwise, then whatever names a macro that is not plain is not.
    let mut plain: HashSet<String> = bodies
        .iter()
        .filter(|(_, defs)| {
            defs.iter().all(|b| {
                !identifiers(b).any(|w| {
                    matches!(
                        w,
                        "__device__"
                            | "__host__"
                            | "__global__"
                            | "__forceinline__"
                            | "__noinline__"
                    )
                })
            })
        })
        .map(|(n, _)| n.clone())
        .collect();
    plain.extend(
        TOOLKIT_CALLING_CONVENTIONS
            .iter()
            .filter(|n| !bodies.contains_key(**n))
            .map(|n| n.to_string()),
    );
    loop {
        let next: HashSet<String> = plain
            .iter()
            .filter(|name| {
                bodies.get(*name).map_or(true, |defs| {
                    defs.iter().all(|b| {
                        identifiers(b)
                            .all(|w| !looks_like_macro(w) || w == *name || plain.contains(w))
                    })
                })
            })
            .cloned()
            .collect();
        if next.len() == plain.len() {
            return plain;
        }
        plain = next;
    }
}

/// The calling-convention macros of CUDA's own headers (`void CUDART_CB callback(...)`, a
/// stream callback): `__stdcall` on Windows, empty (or a visibility attribute) on Linux, never a
/// device annotation. They are defined in the toolkit's headers, which are not the unit's files.
const TOOLKIT_CALLING_CONVENTIONS: &[&str] = &[
    "CUDART_CB",
    "CUDARTAPI",
    "CUDAAPI",
    "CUBLASAPI",
    "CUBLASWINAPI",
    "CUFFTAPI",
    "CURANDAPI",
    "CUSPARSEAPI",
];

/// Macros of other platforms, never defined in nvcc's device pass on Linux (the only platform
/// cudacheck runs on: NVRTC's own environment, and nvcc's, define `__linux__`).
const OTHER_PLATFORMS: &[&str] = &[
    "_WIN32",
    "_WIN64",
    "WIN32",
    "WIN64",
    "_MSC_VER",
    "__MINGW32__",
    "__MINGW64__",
    "__CYGWIN__",
    "__APPLE__",
    "__MACH__",
    "__QNX__",
];

/// Which conditional branches of a file nvcc's Linux device pass takes, as far as a condition
/// made only of `defined` tests of [`OTHER_PLATFORMS`] decides it; every other condition may
/// go either way, and both of its branches count as taken.
#[derive(Default)]
struct Branches {
    /// Per open conditional: whether the branch now open is taken (`None`: unknown), and
    /// whether an earlier branch of it was certainly taken.
    stack: Vec<(Option<bool>, bool)>,
}

impl Branches {
    /// Follows a directive (its name and the text after it); whether it was a conditional one.
    fn directive(&mut self, word: &str, rest: &str) -> bool {
        match word {
            "if" => self.stack.push((platform_condition(rest), false)),
            "ifdef" => self
                .stack
                .push((platform_condition(&format!("defined {rest}")), false)),
            "ifndef" => self.stack.push((
                platform_condition(&format!("defined {rest}")).map(|v| !v),
                false,
            )),
            "elif" | "else" => {
                if let Some((open, earlier)) = self.stack.last_mut() {
                    *earlier |= *open == Some(true);
                    *open = if *earlier {
                        Some(false)
                    } else if word == "else" {
                        open.map(|v| !v)
                    } else {
                        platform_condition(rest)
                    };
                }
            }
            "endif" => {
                self.stack.pop();
            }
            _ => return false,
        }
        true
    }

    /// Whether the current line may be compiled: no open branch is certainly not taken.
    fn taken(&self) -> bool {
        self.stack.iter().all(|(open, _)| *open != Some(false))
    }
}

/// The value of a condition made only of `defined X`/`defined(X)` tests of
/// [`OTHER_PLATFORMS`], `!`, `||`, `&&` and parentheses, on Linux; `None` for any other.
fn platform_condition(cond: &str) -> Option<bool> {
    let cond = cond.split("//").next().unwrap_or(cond);
    let mut expr = String::new();
    let mut words = identifiers(cond).peekable();
    // Every identifier must be `defined` or another platform's macro.
    for w in identifiers(cond) {
        if w != "defined" && !OTHER_PLATFORMS.contains(&w) {
            return None;
        }
    }
    // With every tested macro undefined, `defined X` is false: what is left is boolean
    // algebra over `!`, `&&`, `||` and parentheses.
    let mut rest = cond.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("defined") {
            let r = r.trim_start();
            let (r, paren) = match r.strip_prefix('(') {
                Some(r) => (r, true),
                None => (r, false),
            };
            let name = words.find(|w| *w != "defined")?;
            let r = r.trim_start().strip_prefix(name)?.trim_start();
            rest = if paren { r.strip_prefix(')')? } else { r };
            expr.push('0');
        } else if let Some(r) = rest.strip_prefix("&&") {
            expr.push('&');
            rest = r;
        } else if let Some(r) = rest.strip_prefix("||") {
            expr.push('|');
            rest = r;
        } else if let Some(c @ ('!' | '(' | ')')) = rest.chars().next() {
            expr.push(c);
            rest = &rest[1..];
        } else {
            return None;
        }
        rest = rest.trim_start();
    }
    let mut p = BoolParser {
        s: expr.as_bytes(),
        i: 0,
    };
    let v = p.or()?;
    (p.i == p.s.len()).then_some(v)
}

/// A recursive-descent reader of `0`, `!`, `&`, `|` and parentheses.
struct BoolParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl BoolParser<'_> {
    fn or(&mut self) -> Option<bool> {
        let mut v = self.and()?;
        while self.s.get(self.i) == Some(&b'|') {
            self.i += 1;
            v |= self.and()?;
        }
        Some(v)
    }

    fn and(&mut self) -> Option<bool> {
        let mut v = self.not()?;
        while self.s.get(self.i) == Some(&b'&') {
            self.i += 1;
            v &= self.not()?;
        }
        Some(v)
    }

    fn not(&mut self) -> Option<bool> {
        match self.s.get(self.i)? {
            b'!' => {
                self.i += 1;
                self.not().map(|v| !v)
            }
            b'(' => {
                self.i += 1;
                let v = self.or()?;
                (self.s.get(self.i) == Some(&b')')).then_some(())?;
                self.i += 1;
                Some(v)
            }
            b'0' => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }
}
