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

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::macros::{call_args, expand, leaves};
use super::parse::{location, new_parser};
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
    set_aside_host_code_in(text, &HashSet::new())
}

/// [`set_aside_host_code`] for a file that is part of a larger translation unit (a header):
/// `used_elsewhere` holds the identifiers the other files of the unit mention, and a function
/// named there counts as used by device code, as one named in this file would.
///
/// # Errors
/// As [`set_aside_host_code`].
pub fn set_aside_host_code_in(
    text: &str,
    used_elsewhere: &HashSet<String>,
) -> Result<HostCode, SourceError> {
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
    let macros = FileMacros::new(text, root);

    // 2. Which of them device code reaches: every identifier outside candidate functions counts
    //    as a use from device code (conservatively: a host global's initializer counts too),
    //    then the identifiers inside each function found used, until nothing changes.
    let mut all_leaves = Vec::new();
    leaves(root, &mut all_leaves, false);
    let mut used: HashSet<&str> = used_elsewhere.iter().map(String::as_str).collect();
    let mut inside: Vec<HashSet<&str>> = vec![HashSet::new(); items.len()];
    for leaf in &all_leaves {
        let leaf_text = text.get(leaf.byte_range()).unwrap_or("");
        let owner = items.iter().position(|it: &Item| {
            it.outer.start <= leaf.start_byte() && leaf.end_byte() <= it.outer.end
        });
        let set = match owner {
            Some(i) => &mut inside[i],
            None => &mut used,
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
    let host_evidence: Vec<bool> = items
        .iter()
        .map(|it| {
            it.body
                .is_some_and(|b| does_host_only_things(&text[b.byte_range()]))
        })
        .collect();
    let mut reached = vec![false; items.len()];
    loop {
        let mut grew = false;
        for (i, it) in items.iter().enumerate() {
            if !reached[i] && !host_evidence[i] && used.contains(it.name.as_str()) {
                reached[i] = true;
                used.extend(inside[i].iter().copied());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }

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
            .chain(generated.iter().map(|g| g.range.clone())),
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
    let appended_from_line = (!launched.is_empty()).then(|| {
        let mut lines = text.matches('\n').count() + 1;
        if !out.ends_with('\n') {
            out.push('\n');
            lines += 1;
        }
        let line = u32::try_from(lines).unwrap_or(u32::MAX);
        out.push_str(&launch_references(&launched));
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
        .collect();
    Ok(HostCode {
        text: out,
        functions,
        launched: launched.into_iter().map(|(_, k)| k).collect(),
        unresolved_launches,
        appended_from_line,
    })
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

/// Walks the scopes a function can sit in at namespace scope.
fn collect_items<'t>(text: &str, parent: Node<'t>, namespace: &[String], out: &mut Vec<Item<'t>>) {
    let mut cursor = parent.walk();
    let children: Vec<Node<'t>> = parent.named_children(&mut cursor).collect();
    for node in children {
        match node.kind() {
            "function_definition" | "declaration" => {
                if let Some(it) = item(text, node, node, None, namespace) {
                    out.push(it);
                }
            }
            "template_declaration" => {
                let mut c = node.walk();
                let inner = node
                    .named_children(&mut c)
                    .find(|n| matches!(n.kind(), "function_definition" | "declaration"));
                if let Some(inner) = inner {
                    if let Some(it) = item(text, node, inner, Some(node), namespace) {
                        out.push(it);
                    }
                }
            }
            "linkage_specification" => match node.child_by_field_name("body") {
                Some(b) if b.kind() == "declaration_list" => collect_items(text, b, namespace, out),
                Some(b) if matches!(b.kind(), "function_definition" | "declaration") => {
                    if let Some(it) = item(text, node, b, None, namespace) {
                        out.push(it);
                    }
                }
                _ => {}
            },
            "namespace_definition" => {
                let mut inner = namespace.to_vec();
                match node.child_by_field_name("name") {
                    Some(n) => inner.extend(
                        text[n.byte_range()]
                            .split("::")
                            .map(|p| p.trim().to_owned()),
                    ),
                    None => inner.push(String::new()),
                }
                if let Some(body) = node.child_by_field_name("body") {
                    collect_items(text, body, &inner, out);
                }
            }
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" => collect_items(text, node, namespace, out),
            _ => {}
        }
    }
}

/// The function `func` declares or defines, when no annotation makes it device code.
fn item<'t>(
    text: &str,
    outer: Node<'t>,
    func: Node<'t>,
    template: Option<Node<'t>>,
    namespace: &[String],
) -> Option<Item<'t>> {
    let mut cursor = func.walk();
    let declarator = func
        .children_by_field_name("declarator", &mut cursor)
        .find(|d| d.kind() == "function_declarator")?;
    let name_node = declarator.child_by_field_name("declarator")?;
    let name = match name_node.kind() {
        "identifier" => &text[name_node.byte_range()],
        "template_function" => &text[name_node.child_by_field_name("name")?.byte_range()],
        // Operators, destructors and out-of-class member definitions stay as they are.
        _ => return None,
    };
    // Everything before the declarator: the specifiers and the return type.
    let prefix = &text[outer.start_byte()..declarator.start_byte()];
    let template_params = template
        .and_then(|t| t.child_by_field_name("parameters"))
        .map(|p| template_param_names(text, p))
        .unwrap_or_default();
    if annotated_before(text, outer.start_byte()) {
        return None;
    }
    for word in identifiers(prefix) {
        if matches!(word, "__device__" | "__global__") {
            return None;
        }
        // An all-caps word may be a macro standing for `__device__` (`HOST_DEVICE`,
        // `DEVICE_INLINE`): not provably host code, so left alone.
        if looks_like_macro(word) && !template_params.iter().any(|p| p == word) {
            return None;
        }
    }
    Some(Item {
        name: name.to_owned(),
        location: location(text, name_node),
        outer: outer.byte_range(),
        func,
        body: func.child_by_field_name("body"),
        namespace: namespace.to_vec(),
        template_params,
    })
}

/// Whether a function body does something only host code can: launch with `<<<`, call the
/// CUDA runtime or driver API (`cudaMalloc(`, `cuLaunchKernel(`), or use the C++ library's
/// host-only synchronization and I/O.
fn does_host_only_things(body: &str) -> bool {
    if body.contains("<<<") {
        return true;
    }
    let words: Vec<&str> = identifiers(body).collect();
    words.iter().any(|w| {
        let api = w
            .strip_prefix("cuda")
            .or_else(|| w.strip_prefix("cu"))
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()));
        api || matches!(
            *w,
            "mutex" | "lock_guard" | "unique_lock" | "cout" | "cerr" | "fprintf" | "stderr"
        )
    })
}

/// Whether the words just before `start` annotate the function for the device. Error recovery
/// can leave a function's `__global__` in the node before it (after a macro invocation with no
/// `;`, such as `DEFINE(float)` on the line above), so the function itself looks unannotated.
fn annotated_before(text: &str, start: usize) -> bool {
    let b = text.as_bytes();
    let mut i = start;
    loop {
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        if i > 0 && b[i - 1] == b')' {
            // `__launch_bounds__(256)`
            let mut depth = 0;
            while i > 0 {
                i -= 1;
                match b[i] {
                    b')' => depth += 1,
                    b'(' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
            while i > 0 && b[i - 1].is_ascii_whitespace() {
                i -= 1;
            }
            return text[..i].ends_with("__launch_bounds__");
        }
        let end = i;
        while i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            i -= 1;
        }
        match &text[i..end] {
            "__global__" | "__device__" => return true,
            "static" | "inline" | "__forceinline__" | "__noinline__" | "__host__" | "extern"
            | "constexpr" => {}
            _ => return false,
        }
    }
}

fn template_param_names(text: &str, list: Node) -> Vec<String> {
    let mut cursor = list.walk();
    let params: Vec<Node> = list.named_children(&mut cursor).collect();
    params
        .into_iter()
        .filter_map(|p| {
            if let Some(n) = p.child_by_field_name("name") {
                return Some(text[n.byte_range()].to_owned());
            }
            if let Some(d) = p.child_by_field_name("declarator") {
                return identifiers(&text[d.byte_range()]).last().map(str::to_owned);
            }
            let mut c = p.walk();
            let found = p
                .named_children(&mut c)
                .filter(|n| matches!(n.kind(), "type_identifier" | "identifier"))
                .last()
                .map(|n| text[n.byte_range()].to_owned());
            found
        })
        .collect()
}

fn looks_like_macro(word: &str) -> bool {
    word.len() >= 2
        && word.bytes().any(|b| b.is_ascii_uppercase())
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The identifiers in a piece of text (a macro body, a template argument).
fn identifiers(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| is_identifier(w))
}

/// Blanking removes preprocessor lines with the function; that is harmless only for
/// conditionals that open and close inside it.
fn balanced_preprocessor(s: &str) -> bool {
    let mut depth = 0i32;
    for line in s.lines() {
        let Some(d) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let word = d
            .trim_start()
            .split(|c: char| !c.is_ascii_alphabetic())
            .next();
        match word {
            Some("if" | "ifdef" | "ifndef") => depth += 1,
            Some("endif") => depth -= 1,
            Some(
                "else" | "elif" | "elifdef" | "elifndef" | "pragma" | "line" | "error" | "warning",
            ) => {}
            _ => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// Whether the function's extent is known. The parser recovers from what it cannot read
/// (a macro invocation with a type as its argument, `LAUNCH(float, 4);`); inside a body that
/// leaves the function's own extent intact when the body still runs from its `{` to a matching
/// `}`. An error in the signature leaves the extent in doubt.
fn extent_is_certain(text: &str, it: &Item) -> bool {
    if !it.func.has_error() {
        return true;
    }
    let Some(body) = it.body else {
        return false;
    };
    let mut cursor = it.func.walk();
    let signature_ok = it
        .func
        .children(&mut cursor)
        .filter(|c| c.id() != body.id())
        .all(|c| !c.has_error() && !c.is_error());
    let b = blank_block_comments(&text[body.byte_range()]);
    signature_ok && b.starts_with('{') && b.ends_with('}') && braces_balance(&b)
}

/// Whether `{` and `}` balance outside string and character literals and line comments
/// (block comments are already blanked), never closing more than was opened.
fn braces_balance(s: &str) -> bool {
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
fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    j.min(b.len())
}

/// `text` with every `/* ... */` comment's bytes made spaces (line breaks kept), outside string
/// and character literals and line comments: same length, same byte offsets.
fn blank_block_comments(text: &str) -> String {
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

fn has_kernel_call(n: Node) -> bool {
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        if n.kind() == "kernel_call_syntax" {
            return true;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    false
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

/// The launches inside set-aside functions, and what binds their launchers' template
/// parameters.
struct Launches<'a, 't> {
    items: &'a [Item<'t>],
    /// Per set-aside item: (the launched kernel, where).
    sites: Vec<(usize, String, Location)>,
    locals: HashMap<usize, HashSet<String>>,
    /// Explicit calls `f<args>(...)` to set-aside function templates: (callee item, the item
    /// the call sits in, if any, template arguments).
    calls: Vec<(usize, Option<usize>, Vec<String>)>,
}

impl<'a, 't> Launches<'a, 't> {
    fn new(
        text: &'a str,
        root: Node<'t>,
        items: &'a [Item<'t>],
        decisions: &[HostDecision],
        macros: &FileMacros,
    ) -> Self {
        let set_aside: Vec<usize> = (0..items.len())
            .filter(|&i| {
                decisions[i] == HostDecision::SetAside(SetAsideKind::Launcher)
                    || decisions[i] == HostDecision::SetAside(SetAsideKind::HostOnly)
            })
            .collect();
        let mut sites = Vec::new();
        let mut locals = HashMap::new();
        let mut types_of: HashMap<usize, HashMap<String, String>> = HashMap::new();
        let template_kernels = template_kernels(text, root);
        for &i in &set_aside {
            let Some(body) = items[i].body else { continue };
            locals.insert(i, local_names(text, items[i].func));
            types_of.insert(i, declared_types(text, items[i].func));
            let mut stack = vec![body];
            while let Some(n) = stack.pop() {
                if n.kind() == "call_expression" && has_direct_kernel_call(n) {
                    if let Some(f) = n.child_by_field_name("function") {
                        let callee = text[f.byte_range()].to_owned();
                        // A template kernel whose arguments the launch deduces: named through
                        // a function pointer of the argument types (`void (*)(float*, int)`).
                        let name = callee.split('<').next().unwrap_or("").trim();
                        let name = name.rsplit("::").next().unwrap_or(name).trim();
                        let deduced = template_kernels
                            .get(name)
                            .filter(|_| !callee.contains('<'))
                            .and_then(|t| {
                                let types = n
                                    .child_by_field_name("arguments")
                                    .and_then(|a| argument_types(text, a, &types_of[&i]))?;
                                t.deduce(&callee, &types)
                            });
                        let kernel = deduced.unwrap_or(callee);
                        sites.push((i, kernel, location(text, f)));
                    }
                }
                let mut cursor = n.walk();
                let children: Vec<Node> = n.children(&mut cursor).collect();
                stack.extend(children.into_iter().rev());
            }
            // Launches inside statement macros (`LAUNCH(float, 4);` whose expansion, through
            // any depth of macros, holds `<<<`).
            let mut l = Vec::new();
            leaves(body, &mut l, false);
            for j in 0..l.len().saturating_sub(1) {
                let word = &text[l[j].byte_range()];
                if !macros.launches(word) || &text[l[j + 1].byte_range()] != "(" {
                    continue;
                }
                let Some((_, args)) = call_args(text, &l, j + 1) else {
                    continue;
                };
                let Some(expanded) = macros.expand(word, &args) else {
                    continue;
                };
                for (at, _) in expanded.match_indices("<<<") {
                    if let Some(k) = callee_before(&expanded, at) {
                        sites.push((i, k.to_owned(), location(text, l[j])));
                    }
                }
            }
        }
        sites.sort_by_key(|(i, _, loc)| (*i, loc.byte_range.start));
        let mut calls = Vec::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if n.kind() == "call_expression" {
                if let Some(tf) = n
                    .child_by_field_name("function")
                    .filter(|f| f.kind() == "template_function")
                {
                    let name = tf
                        .child_by_field_name("name")
                        .map(|x| &text[x.byte_range()]);
                    let callee = set_aside
                        .iter()
                        .copied()
                        .find(|&i| Some(items[i].name.as_str()) == name);
                    if let (Some(callee), Some(args)) =
                        (callee, tf.child_by_field_name("arguments"))
                    {
                        let within = items.iter().position(|it| {
                            it.outer.start <= n.start_byte() && n.end_byte() <= it.outer.end
                        });
                        calls.push((
                            callee,
                            within,
                            split_template_args(&text[args.byte_range()]),
                        ));
                    }
                }
            }
            let mut cursor = n.walk();
            let children: Vec<Node> = n.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
        Launches {
            items,
            sites,
            locals,
            calls,
        }
    }

    /// The concrete kernel specializations, deduplicated in source order, and the launches that
    /// stay unresolved.
    fn resolve(&self) -> (Vec<(Vec<String>, String)>, Vec<UnresolvedLaunch>) {
        let mut launched: Vec<(Vec<String>, String)> = Vec::new();
        let mut unresolved = Vec::new();
        for (i, site, loc) in &self.sites {
            if !site.contains('<') {
                // A plain kernel is compiled whether or not anything launches it.
                continue;
            }
            let item = &self.items[*i];
            let locals = &self.locals[i];
            let mut missing: Vec<String> = Vec::new();
            for binding in self.bindings(*i, 0) {
                let k = substitute(site, &item.template_params, &binding);
                let deps: Vec<String> = identifiers(&k)
                    .filter(|w| locals.contains(*w) || item.template_params.iter().any(|p| p == w))
                    .map(str::to_owned)
                    .collect();
                if deps.is_empty() {
                    let entry = (item.namespace.clone(), collapse(&k));
                    if !launched.contains(&entry) {
                        launched.push(entry);
                    }
                } else {
                    missing.extend(deps);
                }
            }
            if !missing.is_empty() {
                missing.sort();
                missing.dedup();
                unresolved.push(UnresolvedLaunch {
                    kernel: collapse(site),
                    location: loc.clone(),
                    depends_on: missing,
                });
            }
        }
        (launched, unresolved)
    }

    /// The template arguments item `i` is known to be called with; one empty binding for a
    /// function that is not a template, or whose callers are not known (its parameters then
    /// stay unbound and the launch unresolved).
    fn bindings(&self, i: usize, depth: u32) -> Vec<Vec<String>> {
        const MAX_DEPTH: u32 = 4;
        const MAX_BINDINGS: usize = 256;
        let item = &self.items[i];
        if item.template_params.is_empty() || depth > MAX_DEPTH {
            return vec![Vec::new()];
        }
        let mut out: Vec<Vec<String>> = Vec::new();
        for (callee, within, args) in &self.calls {
            if *callee != i {
                continue;
            }
            let outer: Vec<Vec<String>> = match within {
                Some(w) if *w != i && !self.items[*w].template_params.is_empty() => {
                    self.bindings(*w, depth + 1)
                }
                _ => vec![Vec::new()],
            };
            for b in outer {
                let concrete: Vec<String> = args
                    .iter()
                    .map(|a| match within {
                        Some(w) => substitute(a, &self.items[*w].template_params, &b),
                        None => a.clone(),
                    })
                    .collect();
                if !out.contains(&concrete) && out.len() < MAX_BINDINGS {
                    out.push(concrete);
                }
            }
        }
        if out.is_empty() {
            out.push(Vec::new());
        }
        out
    }
}

/// A namespace-scope invocation of a macro whose expansion is host launchers only.
struct HostMacroUse {
    name: String,
    location: Location,
    /// The invocation, from the macro's name to its `)` (and a `;` right after it).
    range: std::ops::Range<usize>,
    namespace: Vec<String>,
    /// Template kernels the expansion launches.
    kernels: Vec<String>,
}

fn macro_host_functions(text: &str, root: Node, macros: &FileMacros) -> Vec<HostMacroUse> {
    if macros.defs.values().all(|d| d.host.is_none()) {
        return Vec::new();
    }
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
fn only_host_definitions(expanded: &str) -> bool {
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
fn expansion_locals(expanded: &str) -> HashSet<String> {
    let Ok(mut parser) = new_parser() else {
        return HashSet::new();
    };
    let Some(tree) = parser.parse(expanded, None) else {
        return HashSet::new();
    };
    local_names(expanded, tree.root_node())
}

fn enclosing_namespaces(text: &str, n: Node) -> Vec<String> {
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

/// A `__global__` function template: its template parameters (name, has a default) and its
/// function parameters' types as written.
struct KernelTemplate {
    template_params: Vec<(String, bool)>,
    param_types: Vec<String>,
}

impl KernelTemplate {
    /// `k<float>` for a launch of `k` with arguments of `arg_types`, deducing each template
    /// parameter from the first function parameter that mentions it, the way a call does after
    /// dropping qualifiers (`const T* __restrict__` against `float*` gives `T = float`).
    fn deduce(&self, kernel: &str, arg_types: &[String]) -> Option<String> {
        let plain = |t: &str| -> String {
            t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '*' || c == ':'))
                .filter(|w| !matches!(*w, "" | "const" | "volatile" | "__restrict__" | "restrict"))
                .collect::<Vec<_>>()
                .join(" ")
                .replace(" *", "*")
        };
        let mut args: Vec<String> = Vec::new();
        for (name, has_default) in &self.template_params {
            let found = self.param_types.iter().zip(arg_types).find_map(|(p, a)| {
                let (p, a) = (plain(p), plain(a));
                let at = p.split(' ').position(|w| w.trim_end_matches('*') == name)?;
                let words: Vec<&str> = p.split(' ').collect();
                let pre = words[..at].join(" ");
                let post = &words[at][name.len()..];
                let rest = a.strip_prefix(pre.as_str())?.trim_start();
                let bound = rest.strip_suffix(post)?.trim();
                (!bound.is_empty() && !bound.ends_with('*') || post.is_empty())
                    .then(|| bound.to_owned())
                    .filter(|b| !b.is_empty())
            });
            match found {
                Some(b) => args.push(b),
                None if *has_default => break,
                None => return None,
            }
        }
        Some(format!("{kernel}<{}>", args.join(", ")))
    }
}

/// The file's `__global__` function templates, by name.
fn template_kernels(text: &str, root: Node) -> HashMap<String, KernelTemplate> {
    let mut out = HashMap::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.kind() == "template_declaration" {
            let mut c = n.walk();
            let inner = n
                .named_children(&mut c)
                .find(|x| matches!(x.kind(), "function_definition" | "declaration"));
            if let Some(f) = inner {
                let mut c = f.walk();
                let decl = f
                    .children_by_field_name("declarator", &mut c)
                    .find(|d| d.kind() == "function_declarator");
                let name = decl.and_then(|d| d.child_by_field_name("declarator"));
                if let (Some(decl), Some(name)) = (decl, name) {
                    let prefix = &text[f.start_byte()..name.start_byte()];
                    if identifiers(prefix).any(|w| w == "__global__") {
                        let template_params = n
                            .child_by_field_name("parameters")
                            .map(|p| {
                                let names = template_param_names(text, p);
                                let mut c = p.walk();
                                let defaults: Vec<bool> = p
                                    .named_children(&mut c)
                                    .map(|x| x.kind().starts_with("optional"))
                                    .collect();
                                names.into_iter().zip(defaults).collect()
                            })
                            .unwrap_or_default();
                        let param_types = decl
                            .child_by_field_name("parameters")
                            .map(|p| {
                                let mut c = p.walk();
                                let v: Vec<String> = p
                                    .named_children(&mut c)
                                    .filter(|x| x.kind().ends_with("parameter_declaration"))
                                    .map(|x| {
                                        let ty = x
                                            .child_by_field_name("type")
                                            .map_or("", |t| &text[t.byte_range()]);
                                        let stars =
                                            x.child_by_field_name("declarator").map_or(0, |d| {
                                                text[d.byte_range()].matches('*').count()
                                            });
                                        format!("{ty}{}", "*".repeat(stars))
                                    })
                                    .collect();
                                v
                            })
                            .unwrap_or_default();
                        out.insert(
                            text[name.byte_range()].to_owned(),
                            KernelTemplate {
                                template_params,
                                param_types,
                            },
                        );
                    }
                }
            }
            continue;
        }
        if matches!(n.kind(), "function_definition" | "preproc_function_def") {
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

/// The declared type of each parameter and local variable of a function, as written, with its
/// pointer levels (`const float *x` gives `const float*`); `auto` is left out.
fn declared_types(text: &str, func: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        if matches!(
            n.kind(),
            "parameter_declaration" | "optional_parameter_declaration" | "declaration"
        ) {
            if let Some(ty) = n.child_by_field_name("type") {
                let base = collapse(&text[ty.byte_range()]);
                let mut c = n.walk();
                let is_const = n
                    .children(&mut c)
                    .any(|q| q.kind() == "type_qualifier" && &text[q.byte_range()] == "const");
                let mut c = n.walk();
                let decls: Vec<Node> = n.children_by_field_name("declarator", &mut c).collect();
                for d in decls {
                    let mut stars = String::new();
                    let mut d = d;
                    loop {
                        match d.kind() {
                            "pointer_declarator" | "array_declarator" => stars.push('*'),
                            "init_declarator" | "reference_declarator" => {}
                            _ => break,
                        }
                        match d
                            .child_by_field_name("declarator")
                            .or_else(|| d.named_child(0))
                        {
                            Some(inner) => d = inner,
                            None => break,
                        }
                    }
                    if d.kind() == "identifier" && base != "auto" {
                        let konst = if is_const { "const " } else { "" };
                        out.insert(
                            text[d.byte_range()].to_owned(),
                            format!("{konst}{base}{stars}"),
                        );
                    }
                }
            }
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

/// The type of each argument of a launch, when every one is plain to read: a variable of the
/// launcher, a cast, or a literal. `None` otherwise.
fn argument_types(
    text: &str,
    args: Node,
    declared: &HashMap<String, String>,
) -> Option<Vec<String>> {
    let mut cursor = args.walk();
    let list: Vec<Node> = args.named_children(&mut cursor).collect();
    list.into_iter()
        .filter(|a| a.kind() != "comment")
        .map(|a| match a.kind() {
            "identifier" => declared.get(&text[a.byte_range()]).cloned(),
            "cast_expression" => a
                .child_by_field_name("type")
                .map(|t| collapse(&text[t.byte_range()])),
            "call_expression" => {
                let f = a.child_by_field_name("function")?;
                let cast = f.child_by_field_name("name").map(|n| &text[n.byte_range()]);
                if f.kind() == "template_function"
                    && matches!(
                        cast,
                        Some("static_cast" | "reinterpret_cast" | "const_cast")
                    )
                {
                    let t = &text[f.child_by_field_name("arguments")?.byte_range()];
                    Some(collapse(t.trim().strip_prefix('<')?.strip_suffix('>')?))
                } else {
                    None
                }
            }
            "number_literal" => {
                let n = &text[a.byte_range()];
                Some(
                    if n.contains('.') || (n.contains(['e', 'E']) && !n.starts_with("0x")) {
                        if n.ends_with(['f', 'F']) {
                            "float"
                        } else {
                            "double"
                        }
                    } else {
                        "int"
                    }
                    .to_owned(),
                )
            }
            "true" | "false" => Some("bool".to_owned()),
            _ => None,
        })
        .collect()
}

/// Whether this call is itself the `<<<...>>>` launch (not one nested in its arguments).
fn has_direct_kernel_call(n: Node) -> bool {
    let mut cursor = n.walk();
    let found = n
        .children(&mut cursor)
        .any(|c| c.kind() == "kernel_call_syntax");
    found
}

/// The file's function-like macros, with the host code among them marked.
struct FileMacros {
    defs: HashMap<String, MacroDef>,
}

struct MacroDef {
    params: Vec<String>,
    body: String,
    host: Option<HostMacro>,
}

/// Why a macro is host code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HostMacro {
    /// Its expansion launches kernels (`<<<`) and defines no device code.
    Launches,
    /// Its expansion defines host functions only.
    DefinesHostFunctions,
}

impl FileMacros {
    /// How deep macros that invoke macros are expanded.
    const DEPTH: u32 = 8;

    fn new(text: &str, root: Node) -> Self {
        let mut defs = HashMap::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if n.kind() == "preproc_function_def" {
                let body = n
                    .child_by_field_name("value")
                    .map(|v| &text[v.byte_range()]);
                let name = n.child_by_field_name("name").map(|v| &text[v.byte_range()]);
                if let (Some(body), Some(name)) = (body, name) {
                    let params = n
                        .child_by_field_name("parameters")
                        .map(|p| {
                            let mut c = p.walk();
                            let names: Vec<String> = p
                                .children(&mut c)
                                .filter(|c| c.kind() == "identifier" || c.kind() == "...")
                                .map(|c| text[c.byte_range()].to_owned())
                                .collect();
                            names
                        })
                        .unwrap_or_default();
                    defs.insert(
                        name.to_owned(),
                        MacroDef {
                            params,
                            body: body.to_owned(),
                            host: None,
                        },
                    );
                }
                continue;
            }
            let mut cursor = n.walk();
            stack.extend(n.named_children(&mut cursor));
        }
        let mut macros = FileMacros { defs };
        // Classified on the expansion with the parameters' own names as arguments.
        let names: Vec<String> = macros.defs.keys().cloned().collect();
        for name in names {
            let params = macros.defs[&name].params.clone();
            let Some(full) = macros.expand(&name, &params) else {
                continue;
            };
            let device = identifiers(&full).any(|w| matches!(w, "__device__" | "__global__"));
            let host = if device {
                None
            } else if full.contains("<<<") {
                Some(HostMacro::Launches)
            } else if only_host_definitions(&full) {
                Some(HostMacro::DefinesHostFunctions)
            } else {
                None
            };
            if let Some(d) = macros.defs.get_mut(&name) {
                d.host = host;
            }
        }
        macros
    }

    /// Whether the macro `name` launches kernels.
    fn launches(&self, name: &str) -> bool {
        self.defs
            .get(name)
            .is_some_and(|d| d.host == Some(HostMacro::Launches))
    }

    fn is_host_name(&self, name: &str) -> bool {
        self.defs.get(name).is_some_and(|d| d.host.is_some())
    }

    /// Whether `def` (the `preproc_function_def` a macro body sits in) is host code.
    fn is_host(&self, text: &str, def: Option<Node>) -> bool {
        def.filter(|d| d.kind() == "preproc_function_def")
            .and_then(|d| d.child_by_field_name("name"))
            .is_some_and(|n| self.is_host_name(&text[n.byte_range()]))
    }

    /// `name(args)` expanded, and every macro invocation in the expansion expanded in turn.
    fn expand(&self, name: &str, args: &[String]) -> Option<String> {
        let def = self.defs.get(name)?;
        let once = expand(&def.body, &def.params, args);
        Some(normalize_chevrons(&self.expand_text(&once, Self::DEPTH)))
    }

    fn expand_text(&self, s: &str, depth: u32) -> String {
        if depth == 0 {
            return s.to_owned();
        }
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        let b = s.as_bytes();
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_alphabetic() || c == b'_' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &s[start..i];
                if let Some(def) = self.defs.get(word) {
                    let mut j = i;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if let Some((args, end)) = split_call_args(s, j) {
                        let e = expand(&def.body, &def.params, &args);
                        out.push_str(&self.expand_text(&e, depth - 1));
                        out.push(' ');
                        i = end;
                        continue;
                    }
                }
                out.push_str(word);
                continue;
            }
            let ch = s[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
        out
    }
}

/// The expander joins single-character tokens with spaces: `< < <`.
fn normalize_chevrons(s: &str) -> String {
    s.replace("< < <", "<<<")
        .replace("> > >", ">>>")
        .replace(": :", "::")
}

/// The arguments of the call whose `(` is at `open`, and the index after its `)`.
fn split_call_args(s: &str, open: usize) -> Option<(Vec<String>, usize)> {
    let b = s.as_bytes();
    if b.get(open) != Some(&b'(') {
        return None;
    }
    let (mut depth, mut i, mut start) = (0i32, open, open + 1);
    let mut args = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    let last = s[start..i].trim();
                    if !last.is_empty() || !args.is_empty() {
                        args.push(last.to_owned());
                    }
                    return Some((args, i + 1));
                }
            }
            b',' if depth == 1 => {
                args.push(s[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The names a function declares for itself: parameters and local variables.
fn local_names(text: &str, func: Node) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "parameter_declaration" | "optional_parameter_declaration" | "declaration" => {
                let mut c = n.walk();
                let decls: Vec<Node> = n.children_by_field_name("declarator", &mut c).collect();
                for d in decls {
                    let mut d = d;
                    // The name is the innermost declarator.
                    while let Some(inner) = d.child_by_field_name("declarator") {
                        d = inner;
                    }
                    if d.kind() == "identifier" {
                        out.insert(text[d.byte_range()].to_owned());
                    }
                }
            }
            _ => {}
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

/// The kernel expression just before the `<<<` at `at`: an optionally qualified name with
/// optional template arguments (`ns::k<T, (N > 2)>`).
fn callee_before(s: &str, at: usize) -> Option<&str> {
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
            let mut depth = 0i32;
            while i > 0 {
                i -= 1;
                match b[i] {
                    b'>' | b')' => depth += 1,
                    b'<' | b'(' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
            if depth != 0 {
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
fn split_template_args(s: &str) -> Vec<String> {
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
fn substitute(s: &str, params: &[String], args: &[String]) -> String {
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

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One `__device__` function per namespace that names each launched specialization, which is
/// what makes NVRTC instantiate (and emit) it, as nvcc does for a launch.
fn launch_references(launched: &[(Vec<String>, String)]) -> String {
    let mut out = String::from(
        "// cudacheck: kernels launched by the host code set aside above, named so that NVRTC \
         instantiates them as nvcc does.\n",
    );
    for (n, (namespace, kernel)) in launched.iter().enumerate() {
        for ns in namespace {
            out.push_str(&format!("namespace {ns} {{ "));
        }
        out.push_str(&format!(
            "static __device__ void __cudacheck_launched_{n}() {{ (void)&{kernel}; }}"
        ));
        for _ in namespace {
            out.push_str(" }");
        }
        out.push('\n');
    }
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
