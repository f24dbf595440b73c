//! The file's function-like macros: which are host code (they launch kernels or define host
//! functions), their full expansion, and their namespace-scope invocations that define host
//! functions.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::items::throws_or_streams;
use super::launches::*;
use super::text::*;
use crate::source::macros::{call_args, expand, leaves};
use crate::source::parse::{location, new_parser};
use crate::source::Location;

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

/// The file's function-like macros, with the host code among them marked.
pub(super) struct FileMacros {
    pub(super) defs: HashMap<String, MacroDef>,
}

pub(super) struct MacroDef {
    pub(super) params: Vec<String>,
    pub(super) body: String,
    pub(super) host: Option<HostMacro>,
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
    /// How deep macros that invoke macros are expanded.
    pub(super) const DEPTH: u32 = 8;

    /// The file's macros and its headers' (`headers`: text and tree), the file's own winning
    /// where both define a name.
    pub(super) fn with_headers(text: &str, root: Node, headers: &[(&str, Node)]) -> Self {
        let mut defs = HashMap::new();
        for (t, r) in headers {
            collect_defs(t, *r, &mut defs);
        }
        collect_defs(text, root, &mut defs);
        Self::classified(defs)
    }

    fn classified(defs: HashMap<String, MacroDef>) -> Self {
        let mut macros = FileMacros { defs };
        // Classified on the expansion with the parameters' own names as arguments.
        let names: Vec<String> = macros
            .defs
            .iter()
            .filter(|(_, d)| !d.object)
            .map(|(n, _)| n.clone())
            .collect();
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
            } else if throws_or_streams(&full) {
                Some(HostMacro::HostOnly)
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
    pub(super) fn launches(&self, name: &str) -> bool {
        self.defs
            .get(name)
            .is_some_and(|d| d.host == Some(HostMacro::Launches))
    }

    pub(super) fn is_host_name(&self, name: &str) -> bool {
        self.defs.get(name).is_some_and(|d| d.host.is_some())
    }

    /// Whether `def` (the `preproc_function_def` a macro body sits in) is host code.
    pub(super) fn is_host(&self, text: &str, def: Option<Node>) -> bool {
        def.filter(|d| d.kind() == "preproc_function_def")
            .and_then(|d| d.child_by_field_name("name"))
            .is_some_and(|n| self.is_host_name(&text[n.byte_range()]))
    }

    /// `name(args)` expanded, and every macro invocation in the expansion expanded in turn.
    pub(super) fn expand(&self, name: &str, args: &[String]) -> Option<String> {
        let def = self.defs.get(name)?;
        let once = expand(&def.body, &def.params, args);
        Some(normalize_chevrons(&self.expand_text(&once, Self::DEPTH)))
    }

    pub(super) fn expand_text(&self, s: &str, depth: u32) -> String {
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
                if let Some(def) = self.defs.get(word).filter(|d| d.object) {
                    out.push_str(&self.expand_text(&def.body, depth - 1));
                    out.push(' ');
                    continue;
                }
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
pub(super) fn normalize_chevrons(s: &str) -> String {
    s.replace("< < <", "<<<")
        .replace("> > >", ">>>")
        .replace(": :", "::")
}

/// The arguments of the call whose `(` is at `open`, and the index after its `)`.
pub(super) fn split_call_args(s: &str, open: usize) -> Option<(Vec<String>, usize)> {
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

/// The function-like macros `root` (of `text`) defines, and the object-like ones that carry an
/// execution space, into `defs`.
fn collect_defs(text: &str, root: Node, defs: &mut HashMap<String, MacroDef>) {
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
                        object: false,
                    },
                );
            }
            continue;
        }
        // Object-like macros that carry an execution space (`#define KERNEL extern "C"
        // __global__`): a function-like macro whose body says `KERNEL void NAME(...)`
        // defines device code, not host code.
        if n.kind() == "preproc_def" {
            let body = n
                .child_by_field_name("value")
                .map(|v| &text[v.byte_range()]);
            let name = n.child_by_field_name("name").map(|v| &text[v.byte_range()]);
            if let (Some(body), Some(name)) = (body, name) {
                if identifiers(body).any(|w| matches!(w, "__device__" | "__global__")) {
                    defs.insert(
                        name.to_owned(),
                        MacroDef {
                            params: Vec::new(),
                            body: body.to_owned(),
                            host: None,
                            object: true,
                        },
                    );
                }
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
}
