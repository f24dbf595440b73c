//! Setting a file's host code aside before NVRTC compiles it, the way nvcc's device pass does.
//!
//! A `.cu` file written for nvcc mixes device code with host code: launchers
//! (`kernel<<<grid, block>>>(...)`), helpers they call, prototypes. nvcc compiles each function
//! for the side(s) its annotation names and drops host functions from the device compile; NVRTC
//! rejects every host function, definition or declaration ("host functions are not allowed in
//! JIT mode"). [`set_aside_host_code`] therefore classifies every namespace-scope function of
//! the file first ([`HostDecision`]), and only then emits: host functions that device code never
//! calls are replaced by spaces, newlines kept, so every remaining character keeps its line and
//! column and NVRTC's diagnostics still point at the user's text.
//!
//! nvcc also instantiates the kernel templates those launchers launch (`mul_mat_q<Q4_0, 8,
//! false><<<...>>>` makes that specialization a kernel of the file). Blanking the launcher would
//! lose them, so each launched specialization whose template arguments are known outside the
//! launcher (literals, the file's macros, or the launcher's own template parameters bound by an
//! explicit call such as `launch<8>(...)`) is referenced from a `__device__` function appended
//! after the last line, where it cannot move a user's line.
//!
//! Conservative by construction, because a wrongly blanked device function breaks a file that
//! worked: a function is set aside only when nothing outside host code names it, its
//! declaration carries no macro that might stand for `__device__` (`HOST_DEVICE`), its text
//! parses without error, and any preprocessor lines in it are balanced conditionals. Macro
//! bodies are never touched (tree-sitter sees them unexpanded), and any name a macro body
//! mentions counts as used by device code.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

mod expand;
mod items;
mod launches;
mod text;

/// The source text of the host-code transform, for caches keyed on everything that changes
/// what NVRTC is given (`cudacheck::cache`): a changed transform must not be answered with
/// results the old one produced.
#[doc(hidden)]
pub const TRANSFORM_SOURCES: &[&str] = &[
    include_str!("mod.rs"),
    include_str!("expand.rs"),
    include_str!("items.rs"),
    include_str!("launches.rs"),
    include_str!("text.rs"),
    include_str!("../macros.rs"),
];

use expand::*;
use items::*;
pub use launches::Launcher;
use launches::*;
use text::*;

use super::macros::leaves;
use super::parse::location;
use super::parse::new_parser;
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
    /// A class whose members throw or use iostreams (an exception or logging class), which
    /// device code does not name.
    HostClass,
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
    /// Its text holds a `#define`, `#include` or unbalanced conditional, which blanking would
    /// remove for the rest of the file.
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
    let mut parser = new_parser()?;
    let failed = || SourceError::ParseFailed {
        file_name: String::new(),
    };
    // The grammar ends a macro body at a block comment inside it (`/* zero it */ \`), and the
    // rest of the body then reads as top-level code; blanking comments first (every byte
    // offset kept) avoids that. The tree indexes the original text.
    let uncommented = blank_block_comments(text);
    let mut tree = parser.parse(&uncommented, None).ok_or_else(failed)?;
    // As in `parse`: `__align__(N)` confuses the grammar; the blanked copy keeps every offset.
    if let Some(blanked) = super::macros::blank_align_attributes(&tree, &uncommented) {
        tree = parser.parse(&blanked, None).ok_or_else(failed)?;
    }
    let root = tree.root_node();

    // 1. The namespace-scope functions without a device annotation, and the macros that
    //    are host code (their expansion launches kernels or defines host functions only).
    let mut items = Vec::new();
    collect_items(text, root, &[], &mut items);
    let classes = host_classes(text, root);
    let mut header_trees = Vec::new();
    for h in headers {
        let uncommented = blank_block_comments(h);
        if let Some(t) = parser.parse(&uncommented, None) {
            header_trees.push((uncommented, t));
        }
    }
    let header_roots: Vec<(&str, Node)> = header_trees
        .iter()
        .map(|(t, tree)| (t.as_str(), tree.root_node()))
        .collect();
    let macros = FileMacros::with_headers(text, root, &header_roots);

    // 2. Which of them device code reaches: every identifier outside candidate functions counts
    //    as a use from device code (conservatively: a host global's initializer counts too),
    //    then the identifiers inside each function found used, until nothing changes.
    let mut all_leaves = Vec::new();
    leaves(root, &mut all_leaves, false);
    let mut used: HashSet<&str> = used_elsewhere.iter().map(String::as_str).collect();
    let mut inside: Vec<HashSet<&str>> = vec![HashSet::new(); items.len()];
    let mut class_inside: Vec<HashSet<&str>> = vec![HashSet::new(); classes.len()];
    for leaf in &all_leaves {
        let leaf_text = text.get(leaf.byte_range()).unwrap_or("");
        let within =
            |r: &std::ops::Range<usize>| r.start <= leaf.start_byte() && leaf.end_byte() <= r.end;
        let owner = items.iter().position(|it: &Item| within(&it.outer));
        let class = classes.iter().position(|c| within(&c.outer));
        let set = match (owner, class) {
            (Some(i), _) => &mut inside[i],
            (None, Some(c)) => &mut class_inside[c],
            (None, None) => &mut used,
        };
        match leaf.kind() {
            "comment" | "string_content" | "raw_string_content" | "escape_sequence" => {}
            // A macro body is one opaque token: every identifier in it may expand into device
            // code, unless the macro is host code itself.
            "preproc_arg" if !macros.is_host(text, leaf.parent()) => {
                set.extend(identifiers(leaf_text))
            }
            _ if is_identifier(leaf_text) => {
                set.insert(leaf_text);
            }
            _ => {}
        }
    }
    // A function whose body does what only host code can (launch a kernel, call the runtime
    // API, lock a std::mutex) is host code whoever names it: if device code really called it,
    // nvcc would reject the file as well. Such a name in a macro body (a host helper macro in a
    // header) does not keep it.
    let mut host_evidence: Vec<bool> = items
        .iter()
        .map(|it| {
            it.body.is_some_and(|b| {
                let body = &text[b.byte_range()];
                // Directly, or through a macro whose expansion launches (`LAUNCH(64);`).
                does_host_only_things(body) || identifiers(body).any(|w| macros.launches(w))
            })
        })
        .collect();
    // And a function that calls such host code is host code too, for the same reason: device
    // code calling it would call host code (`launch_case(...)` calling the launcher template
    // `instantiate<8>(...)`). Only through names no annotated function of the file shares: a
    // `__device__` overload would make the call possibly device code.
    let annotated = annotated_function_names(text, root, &items);
    loop {
        let host_names: HashSet<&str> = items
            .iter()
            .zip(&host_evidence)
            .filter(|(it, &e)| e && !annotated.contains(it.name.as_str()))
            .map(|(it, _)| it.name.as_str())
            .collect();
        let mut grew = false;
        for (i, it) in items.iter().enumerate() {
            if !host_evidence[i]
                && it.body.is_some()
                && inside[i]
                    .iter()
                    .any(|w| *w != it.name && host_names.contains(w))
            {
                host_evidence[i] = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    let mut reached = vec![false; items.len()];
    let mut class_reached = vec![false; classes.len()];
    loop {
        let mut grew = false;
        for (i, it) in items.iter().enumerate() {
            if !reached[i] && !host_evidence[i] && used.contains(it.name.as_str()) {
                reached[i] = true;
                used.extend(inside[i].iter().copied());
                grew = true;
            }
        }
        // A host class device code names stays, and so does what it names.
        for (c, class) in classes.iter().enumerate() {
            if !class_reached[c] && used.contains(class.name.as_str()) {
                class_reached[c] = true;
                used.extend(class_inside[c].iter().copied());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    let host_members: Vec<HostClass> = explicit_host_functions(text, root)
        .into_iter()
        .filter(|m| !items.iter().any(|it| it.outer == m.outer))
        .collect();
    let set_aside_classes: Vec<&HostClass> = classes
        .iter()
        .zip(&class_reached)
        .filter(|(_, &r)| !r)
        .map(|(c, _)| c)
        .collect();

    // 3. Classify.
    let decisions: Vec<HostDecision> = items
        .iter()
        .zip(&reached)
        .map(|(it, &reached)| classify(text, it, reached, &macros))
        .collect();
    let generated = macro_host_functions(text, root, &macros);

    // 4. Emit: blank what was set aside, then reference what it launched.
    let mut out = blank(
        text,
        items
            .iter()
            .zip(&decisions)
            .filter_map(|(it, d)| {
                matches!(d, HostDecision::SetAside(_)).then_some(it.outer.clone())
            })
            .chain(generated.iter().map(|g| g.range.clone()))
            .chain(set_aside_classes.iter().map(|c| c.outer.clone()))
            .chain(host_members.iter().map(|m| m.outer.clone())),
    );
    let launches = Launches::new(text, root, &items, &decisions, &macros);
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
        .chain(launches.foreign_calls(text, launchers, &macros))
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
        .chain(set_aside_classes.iter().map(|c| HostFunction {
            name: c.name.clone(),
            location: c.location.clone(),
            decision: HostDecision::SetAside(SetAsideKind::HostClass),
        }))
        .chain(host_members.iter().map(|m| HostFunction {
            name: m.name.clone(),
            location: m.location.clone(),
            decision: HostDecision::SetAside(SetAsideKind::ExplicitHost),
        }))
        .collect();
    Ok(HostCode {
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
    })
}

/// A namespace-scope class or struct that only host code can use (or, from
/// [`explicit_host_functions`], a `__host__`-only function): its members throw or use
/// iostreams (`class Error : public std::exception { std::string m; Error(...) { std::ostringstream
/// oss; ... } }`), nothing in it is annotated for the device, and no member of it is defined
/// outside it. Set aside when device code does not name it.
struct HostClass {
    name: String,
    location: Location,
    /// The definition, with its `template<...>`.
    outer: std::ops::Range<usize>,
}

/// The file's host classes (see [`HostClass`]), in namespaces and conditionals at any depth.
fn host_classes(text: &str, root: Node) -> Vec<HostClass> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let mut cursor = n.walk();
        for child in n.named_children(&mut cursor) {
            match child.kind() {
                "class_specifier" | "struct_specifier" => {
                    out.extend(host_class(text, child, child));
                }
                "template_declaration" => {
                    let mut c = child.walk();
                    let inner = child
                        .named_children(&mut c)
                        .find(|x| matches!(x.kind(), "class_specifier" | "struct_specifier"));
                    if let Some(inner) = inner {
                        out.extend(host_class(text, child, inner));
                    }
                }
                "namespace_definition" => stack.extend(child.child_by_field_name("body")),
                "linkage_specification" => stack.extend(
                    child
                        .child_by_field_name("body")
                        .filter(|b| b.kind() == "declaration_list"),
                ),
                "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
                | "preproc_elifdef" => stack.push(child),
                _ => {}
            }
        }
    }
    out
}

fn host_class(text: &str, outer: Node, class: Node) -> Option<HostClass> {
    let name_node = class.child_by_field_name("name")?;
    let body = class.child_by_field_name("body")?;
    if outer.has_error() || name_node.kind() != "type_identifier" {
        return None;
    }
    let name = &text[name_node.byte_range()];
    let whole = &text[outer.byte_range()];
    let annotated = identifiers(whole).any(|w| {
        matches!(
            w,
            "__device__" | "__global__" | "__host__" | "__forceinline__"
        ) || looks_like_macro(w)
    });
    if annotated || !throws_or_streams(&text[body.byte_range()]) || !balanced_preprocessor(whole) {
        return None;
    }
    // A member defined outside the class (`Error::Error(...) {...}`) would lose its class.
    let qualified = format!("{name}::");
    let outside = text[..outer.start_byte()].contains(&qualified)
        || text[outer.end_byte()..].contains(&qualified);
    if outside {
        return None;
    }
    Some(HostClass {
        name: name.to_owned(),
        location: location(text, name_node),
        outer: outer.byte_range(),
    })
}

/// Every function marked `__host__` without `__device__` (and not `constexpr`, which device
/// code may call under nvcc's `--expt-relaxed-constexpr`): class members
/// (`__host__ uint_fastdiv(uint32_t d)`), out-of-class member definitions, templates of
/// them. nvcc's device pass leaves them out; device code calling one fails there too.
fn explicit_host_functions(text: &str, root: Node) -> Vec<HostClass> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if matches!(
            n.kind(),
            "function_definition" | "declaration" | "field_declaration"
        ) {
            let outer = n
                .parent()
                .filter(|p| p.kind() == "template_declaration")
                .unwrap_or(n);
            let mut c = n.walk();
            let declarator = n
                .children_by_field_name("declarator", &mut c)
                .find(|d| d.kind() == "function_declarator");
            if let Some(d) = declarator {
                let prefix = &text[outer.start_byte()..d.start_byte()];
                let words: Vec<&str> = identifiers(prefix).collect();
                let host_only = words.contains(&"__host__")
                    && !words
                        .iter()
                        .any(|w| matches!(*w, "__device__" | "__global__" | "constexpr"));
                let name = d.child_by_field_name("declarator");
                if let (true, Some(name), false) = (host_only, name, outer.has_error()) {
                    out.push(HostClass {
                        name: text[name.byte_range()].to_owned(),
                        location: location(text, name),
                        outer: outer.byte_range(),
                    });
                }
            }
            // A function body holds no member declarations.
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
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
}

fn classify(text: &str, it: &Item, reached: bool, macros: &FileMacros) -> HostDecision {
    if reached {
        return HostDecision::Kept(KeptReason::CalledFromDevice);
    }
    if !extent_is_certain(text, it) {
        return HostDecision::Kept(KeptReason::SyntaxError);
    }
    if !balanced_preprocessor(&text[it.outer.clone()]) {
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

/// The names of the file's function definitions and declarations that are not among `items`,
/// that is, that an annotation makes device code (`__device__`, `__global__`, `__host__
/// __device__`), at any depth.
fn annotated_function_names<'t>(text: &'t str, root: Node, items: &[Item]) -> HashSet<&'t str> {
    let item_funcs: HashSet<usize> = items.iter().map(|it| it.func.id()).collect();
    let mut out = HashSet::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if matches!(n.kind(), "function_definition" | "declaration")
            && !item_funcs.contains(&n.id())
        {
            let mut c = n.walk();
            for d in n.children_by_field_name("declarator", &mut c) {
                if d.kind() == "function_declarator" {
                    if let Some(name) = d.child_by_field_name("declarator") {
                        let name = &text[name.byte_range()];
                        out.insert(name.rsplit("::").next().unwrap_or(name).trim());
                    }
                }
            }
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    out
}

/// `text` with every character in `ranges` but line breaks made a space: one space per
/// character, so columns (counted in characters) after a blanked span on its last line stay.
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
        out.extend(text[r.clone()].chars().map(|c| match c {
            '\n' | '\r' => c,
            _ => ' ',
        }));
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
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
    fn preprocessor_lines_balance() {
        assert!(balanced_preprocessor("{\n#if A\nx;\n#else\ny;\n#endif\n}"));
        assert!(!balanced_preprocessor("{\n#define X 1\n}"));
        assert!(!balanced_preprocessor("{\n#endif\n#if A\n}"));
    }
}
