//! Setting a file's host code aside before NVRTC compiles it, the way nvcc's device pass does.
//!
//! A `.cu` file written for nvcc mixes device code with host code: launchers
//! (`kernel<<<grid, block>>>(...)`), helpers they call, prototypes, and in a whole program
//! `main`, host globals of a library's types (`cublasHandle_t handle;`), host classes (a timer,
//! an exception class) and `typedef`s. nvcc compiles each function for the side(s) its
//! annotation names and drops host code from the device compile; NVRTC rejects every host
//! function ("host functions are not allowed in JIT mode"), and with `-default-device` would
//! compile them, and host globals, for the device. [`set_aside_host_code_unit`] therefore
//! classifies every namespace-scope function, class, type alias and variable of the file and
//! of the project's headers it includes first ([`HostDecision`]), and only then emits: what
//! device code does not use is replaced by spaces, newlines and preprocessor directives kept,
//! so every remaining character keeps its line and column and NVRTC's diagnostics still point
//! at the user's text.
//!
//! What device code uses is decided as nvcc's device pass sees the translation unit after
//! preprocessing (`reach.rs`): device code is what an annotation makes device code, and what
//! no rule can prove host code (types, templates, `__constant__` data); the names it uses,
//! directly or through the macros it invokes (a macro counts where it is invoked, not where
//! it is defined), reach functions, classes, aliases and variables, and what those name, until
//! nothing changes, through every file of the unit at once. The rest is set aside.
//!
//! nvcc also instantiates the kernel templates those launchers launch (`mul_mat_q<Q4_0, 8,
//! false><<<...>>>` makes that specialization a kernel of the file), or whose address host code
//! takes (`cudaLaunchCooperativeKernel((void*)k<T>, ...)`). Blanking the launcher would lose
//! them, so each such specialization whose template arguments are known outside the launcher
//! (literals, the file's macros, or the launcher's own template parameters bound by an explicit
//! call such as `launch<8>(...)` or an explicit instantiation) is referenced from a
//! `__device__` function appended after the last line, where it cannot move a user's line; the
//! names those references use (`k<ft>` with `typedef double ft;`) count as device code's.
//!
//! Conservative where a wrong decision would break a file that worked: a function is set aside
//! only when device code does not name it (or it does what only host code can, which nvcc
//! would reject in device code too), its declaration carries no all-caps word that might stand
//! for `__device__` (`HOST_DEVICE`) unless the unit's own `#define`s show it does not, its
//! extent is certain (no parse error in its signature, no conditional crossing its edge).
//! Macro bodies are never touched (tree-sitter sees them unexpanded); a macro invoked from
//! device code makes every name in its body used.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

mod decls;
mod expand;
mod items;
mod launches;
mod reach;
mod text;

/// The source text of the host-code transform, for caches keyed on everything that changes
/// what NVRTC is given (`cudacheck::cache`): a changed transform must not be answered with
/// results the old one produced. The text layer it reads CUDA through is
/// [`crate::text::SOURCES`].
#[doc(hidden)]
pub const TRANSFORM_SOURCES: &[&str] = crate::sources::TRANSFORM;

use decls::{member_definitions, HostDecl};
use expand::*;
use items::*;
pub use launches::Launcher;
use launches::*;
use reach::{reach, Facts, Parsed, Reached};
use text::*;

use super::{Location, SourceError};

/// What [`set_aside_host_code`] did to a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCode {
    /// The text to compile: host-only functions blanked (same lines and columns), then the
    /// launched-kernel references, after the last line.
    pub text: String,
    /// Every namespace-scope function that is not device code, and what was decided for it.
    pub functions: Vec<HostFunction>,
    /// The kernel specializations referenced after the last line (`mul_mat_q<Q4_0, 8, false>`).
    pub launched: Vec<String>,
    /// The launcher templates whose shadows this file appends, for the files that call them
    /// ([`Unit::launchers`]).
    pub launchers: Vec<Launcher>,
    /// Launches inside set-aside code whose kernel could not be named outside it (template
    /// arguments that depend on local variables or on unbound template parameters).
    pub unresolved_launches: Vec<UnresolvedLaunch>,
    /// The first line of the appended references (one past the user's last line); `None` when
    /// nothing was appended.
    pub appended_from_line: Option<u32>,
}

impl HostCode {
    /// Whether the text to compile differs from the file.
    pub fn changed(&self) -> bool {
        self.appended_from_line.is_some()
            || self
                .functions
                .iter()
                .any(|f| matches!(f.decision, HostDecision::SetAside(_)))
    }

    /// The text without the appended launch references (blanking kept).
    pub fn text_without_launched(&self) -> &str {
        match self.appended_from_line {
            Some(line) => {
                let mut end = 0;
                for (i, l) in self.text.split_inclusive('\n').enumerate() {
                    if i + 1 >= line as usize {
                        break;
                    }
                    end += l.len();
                }
                &self.text[..end]
            }
            None => &self.text,
        }
    }

    /// The text with the appended lines `lines` (1-based) emptied: for dropping the launch
    /// references NVRTC could not compile while keeping the others.
    pub fn text_without_lines(&self, lines: &HashSet<u32>) -> String {
        let first = self.appended_from_line.unwrap_or(u32::MAX);
        self.text
            .split_inclusive('\n')
            .enumerate()
            .map(|(i, l)| {
                let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
                if n >= first && lines.contains(&n) {
                    "\n"
                } else {
                    l
                }
            })
            .collect()
    }

    /// The functions kept although they are not annotated for the device, because device code
    /// calls them (`constexpr` helpers, which nvcc's `--expt-relaxed-constexpr` lets device
    /// code call).
    pub fn device_helpers(&self) -> impl Iterator<Item = &HostFunction> {
        self.functions
            .iter()
            .filter(|f| f.decision == HostDecision::Kept(KeptReason::CalledFromDevice))
    }
}

/// A namespace-scope function with no `__device__` or `__global__`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFunction {
    pub name: String,
    /// Where its name is.
    pub location: Location,
    pub decision: HostDecision,
}

/// What happens to a host function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum HostDecision {
    /// Blanked before compiling.
    SetAside(SetAsideKind),
    /// Left in the text for NVRTC, and why.
    Kept(KeptReason),
}

/// Which kind of host code was set aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SetAsideKind {
    /// A definition that launches kernels with `<<<...>>>`, directly or through a macro.
    Launcher,
    /// Any other definition device code does not call.
    HostOnly,
    /// A declaration without a body.
    Declaration,
    /// A namespace-scope invocation of a macro that expands to host functions only
    /// (`LAUNCHER(q4_0, f16, half)`); the invocation is blanked, the macro is not.
    MacroHostFunctions,
    /// A class with nothing in it for the device (an exception or logging class, a timer, a
    /// library handle's wrapper), which device code does not name.
    HostClass,
    /// A type alias (`typedef struct { ... } Config;`, `using Handle = cublasHandle_t;`) device
    /// code does not name.
    HostType,
    /// A namespace-scope variable with no memory space (`cublasHandle_t handle;`), which
    /// device code does not name: host data, which nvcc's device pass leaves out.
    HostVariable,
    /// A function marked `__host__` alone (a member or an out-of-class definition), which
    /// nvcc's device pass leaves out and NVRTC rejects.
    ExplicitHost,
}

/// Why an unannotated function stays in the text NVRTC compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum KeptReason {
    /// Device code (or a macro body) names it: nvcc would compile it for the device too when it
    /// is `constexpr`, so it keeps a device meaning.
    CalledFromDevice,
    /// Its text holds a conditional that opens or closes outside it (`#if` in one function,
    /// `#endif` in the next), so its extent is in doubt. (Other directives stay where they
    /// are when a function is blanked.)
    Preprocessor,
    /// The parser recovered from an error inside it, so its extent is not certain.
    SyntaxError,
}

/// A launch whose kernel specialization could not be named outside its launcher.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnresolvedLaunch {
    /// The kernel as the launch names it (`k<T, BLOCK>`).
    pub kernel: String,
    pub location: Location,
    /// The names it depends on that only the launcher knows.
    pub depends_on: Vec<String>,
}

impl fmt::Display for SetAsideKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SetAsideKind::Launcher => "host launcher",
            SetAsideKind::HostOnly => "host function",
            SetAsideKind::Declaration => "host function declaration",
            SetAsideKind::MacroHostFunctions => "macro invocation defining host functions",
            SetAsideKind::HostClass => "host class",
            SetAsideKind::HostType => "host type",
            SetAsideKind::HostVariable => "host variable",
            SetAsideKind::ExplicitHost => "`__host__` function",
        })
    }
}

/// Classifies the file's host functions and blanks those device code does not need; see the
/// module documentation for the rules.
///
/// # Errors
/// [`SourceError::GrammarUnavailable`] or [`SourceError::ParseFailed`] when the file cannot be
/// parsed at all (a NUL byte counts as unparsable).
pub fn set_aside_host_code(text: &str) -> Result<HostCode, SourceError> {
    set_aside_host_code_with(text, &HashSet::new(), &[])
}

/// [`set_aside_host_code`] for a header of a larger translation unit: `used_elsewhere` holds
/// the identifiers the other files of the unit mention, and a function named there counts as
/// used by device code, as one named in this file would. Its launcher templates get shadows
/// (see [`Unit::header`]).
///
/// # Errors
/// As [`set_aside_host_code`].
pub fn set_aside_host_code_in(
    text: &str,
    used_elsewhere: &HashSet<String>,
) -> Result<HostCode, SourceError> {
    set_aside_host_code_for(
        text,
        &Unit {
            used_elsewhere,
            headers: &[],
            launchers: &[],
            header: true,
        },
    )
}

/// [`set_aside_host_code_in`], knowing the function-like macros the file's headers define
/// (`headers`: their texts): an invocation in the file of a header's macro that expands to
/// host functions only (`DEFINE_LAUNCHER(q4_0, ...)`) is set aside like one of the file's own.
///
/// # Errors
/// As [`set_aside_host_code`].
pub fn set_aside_host_code_with(
    text: &str,
    used_elsewhere: &HashSet<String>,
    headers: &[&str],
) -> Result<HostCode, SourceError> {
    set_aside_host_code_for(
        text,
        &Unit {
            used_elsewhere,
            headers,
            launchers: &[],
            header: false,
        },
    )
}

/// What the other files of a translation unit tell [`set_aside_host_code_for`] about a file.
#[derive(Clone, Copy, Debug)]
pub struct Unit<'a> {
    /// The identifiers the other files mention (see [`set_aside_host_code_in`]).
    pub used_elsewhere: &'a HashSet<String>,
    /// The texts of the file's headers, for their macros (see [`set_aside_host_code_with`]).
    pub headers: &'a [&'a str],
    /// The launcher templates the headers' host code defines and shadows
    /// ([`HostCode::launchers`]): an explicit call of one in this file's host code
    /// (`marlin_matmul<half, 4>(...)`, written out or through a macro) instantiates what it
    /// launches.
    pub launchers: &'a [Launcher],
    /// The file is a header of the unit: its launcher templates get shadows
    /// ([`HostCode::launchers`]) for the files including it to reference.
    pub header: bool,
}

/// [`set_aside_host_code_with`], knowing the launcher templates of the file's headers too.
///
/// # Errors
/// As [`set_aside_host_code`].
pub fn set_aside_host_code_for(text: &str, unit: &Unit) -> Result<HostCode, SourceError> {
    let Unit {
        used_elsewhere,
        headers,
        launchers,
        header,
    } = *unit;
    let parsed = Parsed::new(text)?;
    let macros = FileMacros::with_headers(text, headers);
    let plain = plain_macros(
        &std::iter::once(text)
            .chain(headers.iter().copied())
            .collect::<Vec<_>>(),
    );
    let (_, device_members) = member_definitions(text, parsed.root(), &plain);
    let facts = Facts::new(text, parsed.root(), &macros, &device_members, &plain);
    let mut hosts = settle(&[&facts], used_elsewhere, |reached| {
        vec![emit(
            &parsed,
            &facts,
            &reached[0],
            &macros,
            launchers,
            header,
        )]
    });
    Ok(hosts.remove(0))
}

/// Reaches what device code uses (`reach`) and emits each file (`emit_all`); then, when the
/// references appended after a file's last line (the launched specializations, `k<ft>`) name
/// a type, class or variable that was set aside (`typedef double ft;` which only `main`
/// named), reaches again with those names used: the references are device code too.
fn settle(
    facts: &[&Facts],
    used_elsewhere: &HashSet<String>,
    emit_all: impl Fn(&[Reached]) -> Vec<HostCode>,
) -> Vec<HostCode> {
    let mut used = used_elsewhere.clone();
    let mut hosts;
    let mut round = 0;
    loop {
        hosts = emit_all(&reach(facts, &used));
        round += 1;
        let set_aside: HashSet<&str> = hosts
            .iter()
            .flat_map(|h| &h.functions)
            .filter(|f| {
                matches!(
                    f.decision,
                    HostDecision::SetAside(
                        SetAsideKind::HostClass
                            | SetAsideKind::HostType
                            | SetAsideKind::HostVariable
                    )
                )
            })
            .flat_map(|f| f.name.split(", "))
            .collect();
        let named: Vec<String> = hosts
            .iter()
            .filter_map(|h| {
                let first = h.appended_from_line? as usize;
                Some(
                    h.text
                        .split_inclusive('\n')
                        .skip(first - 1)
                        .collect::<String>(),
                )
            })
            .flat_map(|appended| {
                identifiers(&appended)
                    .filter(|w| set_aside.contains(w))
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|w| !used.contains(w))
            .collect();
        if named.is_empty() || round >= 4 {
            return hosts;
        }
        used.extend(named);
    }
}

/// What [`set_aside_host_code_unit`] did to each file of a translation unit.
#[derive(Debug)]
pub struct UnitHostCode {
    /// The file compiled.
    pub main: Result<HostCode, SourceError>,
    /// Its headers, in the order given.
    pub headers: Vec<Result<HostCode, SourceError>>,
}

/// Sets the host code of a whole translation unit aside at once: `main` and the project's
/// own headers it includes (`headers`: their texts), as nvcc's device pass sees them after
/// preprocessing. What device code uses is followed through every file (a kernel of the file
/// naming a header's helper, a header's device function naming the file's macro), so a
/// header's host helpers that only the file's host code calls (`setup_main()`,
/// `make_random_float(...)`, a `cublasCheck` macro's function) are set aside with it. The
/// headers' launcher templates get shadows that the file's calls reference
/// ([`Unit::launchers`]). A file the parser cannot read keeps its text, and its error.
pub fn set_aside_host_code_unit(main: &str, headers: &[&str]) -> UnitHostCode {
    let mut errors: Vec<Option<SourceError>> = Vec::new();
    let files: Vec<Option<Parsed>> = headers
        .iter()
        .chain(std::iter::once(&main))
        .map(|t| match Parsed::new(t) {
            Ok(p) => {
                errors.push(None);
                Some(p)
            }
            Err(e) => {
                errors.push(Some(e));
                None
            }
        })
        .collect();
    let parsed: Vec<&Parsed> = files.iter().flatten().collect();
    // Each file knows every macro of the unit, its own winning where two define a name.
    let macros: Vec<FileMacros> = parsed
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let others: Vec<&str> = parsed
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| o.text)
                .collect();
            FileMacros::with_headers(p.text, &others)
        })
        .collect();
    let plain = plain_macros(&parsed.iter().map(|p| p.text).collect::<Vec<_>>());
    let device_members: HashSet<&str> = parsed
        .iter()
        .flat_map(|p| member_definitions(p.text, p.root(), &plain).1)
        .collect();
    let facts: Vec<Facts> = parsed
        .iter()
        .zip(&macros)
        .map(|(p, m)| Facts::new(p.text, p.root(), m, &device_members, &plain))
        .collect();
    let main_parsed = errors.last().is_some_and(Option::is_none);
    let hosts = settle(
        &facts.iter().collect::<Vec<_>>(),
        &HashSet::new(),
        |reached| {
            let mut launchers = Vec::new();
            let mut out = Vec::new();
            let files = parsed.iter().zip(&facts).zip(reached).zip(&macros);
            for (k, (((p, f), r), m)) in files.enumerate() {
                let is_main = main_parsed && k + 1 == parsed.len();
                let host = emit(p, f, r, m, &launchers, !is_main);
                if !is_main {
                    launchers.extend(host.launchers.iter().cloned());
                }
                out.push(host);
            }
            out
        },
    );
    let mut hosts = hosts.into_iter();
    let mut out: Vec<Result<HostCode, SourceError>> = errors
        .into_iter()
        .map(|e| match e {
            Some(e) => Err(e),
            None => hosts.next().ok_or(SourceError::ParseFailed {
                file_name: String::new(),
            }),
        })
        .collect();
    let main = out.pop().unwrap_or(Err(SourceError::ParseFailed {
        file_name: String::new(),
    }));
    UnitHostCode { main, headers: out }
}

/// Classifies a parsed file's host code from what device code reaches, blanks what was set
/// aside, and references what it launched after the last line.
fn emit(
    parsed: &Parsed,
    facts: &Facts,
    reached: &Reached,
    macros: &FileMacros,
    launchers: &[Launcher],
    header: bool,
) -> HostCode {
    let text = parsed.text;
    let root = parsed.root();
    let items = &facts.items;
    let decisions: Vec<HostDecision> = items
        .iter()
        .zip(&reached.items)
        .map(|(it, &reached)| classify(text, it, reached, macros))
        .collect();
    let unreached = |decls: &'_ [HostDecl], reached: &'_ [bool]| -> Vec<usize> {
        (0..decls.len()).filter(|&i| !reached[i]).collect()
    };
    let classes = unreached(&facts.classes, &reached.classes);
    let variables = unreached(&facts.variables, &reached.variables);
    let instantiations = unreached(&facts.instantiations, &reached.instantiations);
    let generated = macro_host_functions(text, root, macros);

    // Blank what was set aside, then reference what it launched.
    let mut out = blank(
        text,
        items
            .iter()
            .zip(&decisions)
            .filter_map(|(it, d)| {
                matches!(d, HostDecision::SetAside(_)).then_some(it.outer.clone())
            })
            .chain(generated.iter().map(|g| g.range.clone()))
            .chain(classes.iter().map(|&c| facts.classes[c].outer.clone()))
            .chain(variables.iter().map(|&v| facts.variables[v].outer.clone()))
            .chain(
                instantiations
                    .iter()
                    .map(|&x| facts.instantiations[x].outer.clone()),
            )
            .chain(facts.host_members.iter().map(|m| m.outer.clone())),
    );
    let launches = Launches::new(text, root, items, &decisions, macros);
    let (mut launched, unresolved_launches) = launches.resolve();
    for g in &generated {
        for k in &g.kernels {
            let entry = (g.namespace.clone(), k.clone());
            if !launched.contains(&entry) {
                launched.push(entry);
            }
        }
    }
    // Launcher templates another file of the unit calls: their shadows, for that file to
    // reference; and this file's calls of its headers' launcher templates.
    let shadows = if header {
        launches.shadows()
    } else {
        Vec::new()
    };
    let references: Vec<(Vec<String>, String)> = launched
        .iter()
        .cloned()
        .chain(launches.foreign_calls(text, launchers, macros))
        .collect();
    let appended_from_line = (!references.is_empty() || !shadows.is_empty()).then(|| {
        let mut lines = text.matches('\n').count() + 1;
        if !out.ends_with('\n') {
            out.push('\n');
            lines += 1;
        }
        let line = u32::try_from(lines).unwrap_or(u32::MAX);
        out.push_str(&launch_references(&references, &shadows, &file_tag(text)));
        line
    });
    let set_aside = |d: &HostDecl| HostFunction {
        name: d.name.clone(),
        location: d.location.clone(),
        decision: HostDecision::SetAside(d.kind),
    };
    let functions = items
        .iter()
        .zip(decisions)
        .map(|(it, decision)| HostFunction {
            name: it.name.clone(),
            location: it.location.clone(),
            decision,
        })
        .chain(generated.into_iter().map(|g| HostFunction {
            name: g.name,
            location: g.location,
            decision: HostDecision::SetAside(SetAsideKind::MacroHostFunctions),
        }))
        .chain(classes.iter().map(|&c| set_aside(&facts.classes[c])))
        .chain(variables.iter().map(|&v| set_aside(&facts.variables[v])))
        .chain(
            instantiations
                .iter()
                .map(|&x| set_aside(&facts.instantiations[x])),
        )
        .chain(facts.host_members.iter().map(set_aside))
        .collect();
    HostCode {
        text: out,
        functions,
        launchers: shadows
            .into_iter()
            .map(|s| Launcher {
                namespace: s.namespace,
                name: s.name,
            })
            .collect(),
        launched: launched.into_iter().map(|(_, k)| k).collect(),
        unresolved_launches,
        appended_from_line,
    }
}

/// A short tag of `text` (FNV-1a), naming the functions the file appends apart from those of
/// the other files of a translation unit.
fn file_tag(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:08x}", h as u32)
}

/// One namespace-scope function (definition or declaration) that no annotation makes device
/// code.
struct Item<'t> {
    name: String,
    location: Location,
    /// What blanking removes: the function with its `template<...>` and a one-declaration
    /// `extern "C"` around it.
    outer: std::ops::Range<usize>,
    func: Node<'t>,
    body: Option<Node<'t>>,
    namespace: Vec<String>,
    template_params: Vec<String>,
    /// The template parameter list as written (`<typename T, int N = 4>`), comments dropped
    /// and whitespace collapsed.
    template_clause: Option<String>,
    /// For a member function defined outside its class (`Estimator<Real>::run`), the class:
    /// the function is device code's when the class is.
    class: Option<String>,
}

fn classify(text: &str, it: &Item, reached: bool, macros: &FileMacros) -> HostDecision {
    if reached {
        return HostDecision::Kept(KeptReason::CalledFromDevice);
    }
    if !extent_is_certain(text, it) {
        return HostDecision::Kept(KeptReason::SyntaxError);
    }
    if !balanced_conditionals(&text[it.outer.clone()]) {
        return HostDecision::Kept(KeptReason::Preprocessor);
    }
    let Some(body) = it.body else {
        return HostDecision::SetAside(SetAsideKind::Declaration);
    };
    let body_text = &text[body.byte_range()];
    let launches = has_kernel_call(body)
        || body_text.contains("<<<")
        || identifiers(body_text).any(|w| macros.launches(w));
    HostDecision::SetAside(if launches {
        SetAsideKind::Launcher
    } else {
        SetAsideKind::HostOnly
    })
}

/// `text` with every character in `ranges` but line breaks made a space: one space per
/// character, so columns (counted in characters) after a blanked span on its last line stay.
/// Preprocessor directives inside a range (`#define BLOCK 256` in `main`, `#if`/`#endif`)
/// stay as they are, with their continuation lines: the preprocessor reads them whatever
/// nvcc's device pass then drops, and what follows may use them. `#pragma` lines go with the
/// code they annotate.
fn blank(text: &str, ranges: impl Iterator<Item = std::ops::Range<usize>>) -> String {
    let mut ranges: Vec<_> = ranges.collect();
    ranges.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in ranges {
        if r.start < at {
            continue;
        }
        out.push_str(&text[at..r.start]);
        let mut i = r.start;
        while i < r.end {
            let line_end = text[i..r.end].find('\n').map_or(r.end, |e| i + e + 1);
            let line_start = i == 0 || text.as_bytes()[i - 1] == b'\n';
            if line_start && is_kept_directive(&text[i..line_end]) {
                let mut end = line_end;
                while text[i..end].trim_end().ends_with('\\') && end < r.end {
                    end = text[end..r.end].find('\n').map_or(r.end, |e| end + e + 1);
                }
                out.push_str(&text[i..end]);
                i = end;
                continue;
            }
            out.extend(text[i..line_end].chars().map(|c| match c {
                '\n' | '\r' => c,
                _ => ' ',
            }));
            i = line_end;
        }
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether a line is a preprocessor directive that blanking keeps (see [`blank`]).
fn is_kept_directive(line: &str) -> bool {
    line.trim_start()
        .strip_prefix('#')
        .is_some_and(|d| !d.trim_start().starts_with("pragma"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callee_before_reads_qualified_template_ids() {
        let s = "  ns::k<float, (N > 2)> <<<g, b>>>(x);";
        assert_eq!(
            callee_before(s, s.find("<<<").unwrap()),
            Some("ns::k<float, (N > 2)>")
        );
        let s = "vllm :: kern < 1 , block_q8_0 > <<< g , b >>> ( x )";
        assert_eq!(
            callee_before(s, s.find("<<<").unwrap()),
            Some("vllm :: kern < 1 , block_q8_0 >")
        );
        let s = "plain<<<1, 1>>>()";
        assert_eq!(callee_before(s, s.find("<<<").unwrap()), Some("plain"));
    }

    #[test]
    fn template_arguments_split_at_top_level_commas() {
        assert_eq!(
            split_template_args("<8, f<a, b>, (c > d)>"),
            ["8", "f<a, b>", "(c > d)"]
        );
    }

    #[test]
    fn substitution_replaces_whole_words_only() {
        let p = vec!["N".to_owned(), "T".to_owned()];
        let a = vec!["8".to_owned(), "float".to_owned()];
        assert_eq!(substitute("k<T, N, NN>", &p, &a), "k<float, 8, NN>");
        assert_eq!(substitute("k<N>", &p, &["2 * 4".to_owned()]), "k<(2 * 4)>");
    }

    #[test]
    fn conditionals_balance() {
        assert!(balanced_conditionals("{\n#if A\nx;\n#else\ny;\n#endif\n}"));
        assert!(balanced_conditionals("{\n#define X 1\n}"));
        assert!(!balanced_conditionals("{\n#endif\n#if A\n}"));
        assert!(!balanced_conditionals("{\n#if A\n}"));
    }
}
