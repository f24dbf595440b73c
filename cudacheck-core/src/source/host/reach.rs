//! Which host code device code reaches, over a whole translation unit (the file and the
//! project's headers it includes), as nvcc's device pass sees it after preprocessing: device
//! code is what is annotated for the device and what no rule can prove host code (types,
//! templates, `typedef`s); it names functions, classes and variables, directly or through the
//! macros it invokes, and what those name, until nothing changes. Everything else that is
//! unannotated (`main`, launchers, host helpers, host classes and variables) is host code
//! device code does not use.

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, Tree};

use super::decls::*;
use super::expand::FileMacros;
use super::items::*;
use super::launches::local_names;
use super::text::*;
use super::{Item, SetAsideKind};
use crate::source::macros::leaves;
use crate::source::parse::new_parser;
use crate::source::SourceError;

/// One file of the unit, parsed.
pub(super) struct Parsed<'a> {
    pub(super) text: &'a str,
    /// Parsed from the text with block comments blanked (offsets equal).
    pub(super) tree: Tree,
}

impl<'a> Parsed<'a> {
    /// # Errors
    /// As `set_aside_host_code`.
    pub(super) fn new(text: &'a str) -> Result<Self, SourceError> {
        let mut parser = new_parser()?;
        let failed = || SourceError::ParseFailed {
            file_name: String::new(),
        };
        // The grammar ends a macro body at a block comment inside it (`/* zero it */ \`), and
        // the rest of the body then reads as top-level code; blanking comments first (every
        // byte offset kept) avoids that. The tree indexes the original text.
        let uncommented = blank_block_comments(text);
        let mut tree = parser.parse(&uncommented, None).ok_or_else(failed)?;
        // As in `parse`: `__align__(N)` confuses the grammar; the blanked copy keeps every
        // offset.
        if let Some(blanked) = crate::source::macros::blank_align_attributes(&tree, &uncommented) {
            tree = parser.parse(&blanked, None).ok_or_else(failed)?;
        }
        Ok(Parsed { text, tree })
    }

    pub(super) fn root(&self) -> Node<'_> {
        self.tree.root_node()
    }
}

/// What one file holds that device code may or may not reach, and what each of those names.
pub(super) struct Facts<'t> {
    /// Namespace-scope functions without a device annotation.
    pub(super) items: Vec<Item<'t>>,
    /// Classes with nothing in them for the device, their members defined outside them, and
    /// type aliases.
    pub(super) classes: Vec<HostDecl>,
    /// Variables with no memory space.
    pub(super) variables: Vec<HostDecl>,
    /// Explicit instantiations of function and class templates.
    pub(super) instantiations: Vec<HostDecl>,
    /// The names of the classes among `classes` (not their parts or the type aliases).
    host_class_names: HashSet<&'t str>,
    /// Members and functions marked `__host__` alone: set aside whoever names them.
    pub(super) host_members: Vec<HostDecl>,
    /// The identifiers inside each item, class and variable.
    inside: Vec<HashSet<&'t str>>,
    class_inside: Vec<HashSet<&'t str>>,
    variable_inside: Vec<HashSet<&'t str>>,
    instantiation_inside: Vec<HashSet<&'t str>>,
    /// The identifiers in the body of each namespace-scope `#define`, by the macro's name:
    /// used once something that is used invokes the macro.
    macro_bodies: HashMap<&'t str, HashSet<&'t str>>,
    /// Identifiers outside every candidate: device code and what cannot be set aside.
    seeds: HashSet<&'t str>,
    /// Items whose own body does what only host code can.
    host_evidence: Vec<bool>,
    /// Names of functions an annotation makes device code.
    annotated: HashSet<&'t str>,
}

impl<'t> Facts<'t> {
    /// `device_members`: the classes of the unit with a member defined outside them for the
    /// device (see `member_definitions`), which stay; `plain`: the unit's all-caps macros that
    /// stand for no annotation (see `plain_macros`).
    pub(super) fn new(
        text: &'t str,
        root: Node<'t>,
        macros: &FileMacros,
        device_members: &HashSet<&str>,
        plain: &HashSet<String>,
    ) -> Self {
        let mut items = Vec::new();
        collect_items(text, root, &[], plain, &mut items);
        let (members, _) = member_definitions(text, root, plain);
        let mut classes = host_classes(text, root, device_members, plain);
        let host_class_names: HashSet<&str> = classes
            .iter()
            .map(|c| &text[c.location.byte_range.clone()])
            .collect();
        classes.extend(host_types(text, root));
        classes.extend(members);
        let instantiations = instantiations(text, root);
        let macro_names: HashSet<&str> = macros.defs.keys().map(String::as_str).collect();
        let variables = host_variables(text, root, &macro_names, plain);
        let host_members: Vec<HostDecl> = explicit_host_functions(text, root)
            .into_iter()
            .filter(|m| !items.iter().any(|it| it.outer == m.outer))
            .collect();

        let mut all_leaves = Vec::new();
        leaves(root, &mut all_leaves, false);
        let mut seeds: HashSet<&str> = HashSet::new();
        let mut inside: Vec<HashSet<&str>> = vec![HashSet::new(); items.len()];
        let mut class_inside: Vec<HashSet<&str>> = vec![HashSet::new(); classes.len()];
        let mut variable_inside: Vec<HashSet<&str>> = vec![HashSet::new(); variables.len()];
        let mut instantiation_inside: Vec<HashSet<&str>> =
            vec![HashSet::new(); instantiations.len()];
        let mut macro_bodies: HashMap<&str, HashSet<&str>> = HashMap::new();
        let mut locals: HashMap<usize, HashSet<String>> = HashMap::new();
        for leaf in &all_leaves {
            if !names_a_use(text, *leaf) {
                continue;
            }
            let leaf_text = text.get(leaf.byte_range()).unwrap_or("");
            let within = |r: &std::ops::Range<usize>| {
                r.start <= leaf.start_byte() && leaf.end_byte() <= r.end
            };
            let owner = items.iter().position(|it: &Item| within(&it.outer));
            let class = classes.iter().position(|c| within(&c.outer));
            let variable = variables.iter().position(|v| within(&v.outer));
            let instantiation = instantiations.iter().position(|v| within(&v.outer));
            // A macro's body counts once the macro is invoked, wherever it is defined: blanking
            // keeps every `#define`, even one inside `main`.
            let definition = leaf
                .parent()
                .filter(|p| matches!(p.kind(), "preproc_def" | "preproc_function_def"))
                .and_then(|p| p.child_by_field_name("name"))
                .filter(|_| leaf.kind() == "preproc_arg");
            let set = match (definition, owner, class, variable, instantiation) {
                (Some(name), ..) => macro_bodies.entry(&text[name.byte_range()]).or_default(),
                (None, Some(i), ..) => &mut inside[i],
                (None, None, Some(c), ..) => &mut class_inside[c],
                (None, None, None, Some(v), _) => &mut variable_inside[v],
                (None, None, None, None, Some(x)) => &mut instantiation_inside[x],
                (None, None, None, None, None) => &mut seeds,
            };
            match leaf.kind() {
                "comment" | "string_content" | "raw_string_content" | "escape_sequence" => {}
                // A macro body is one opaque token: every identifier in it may expand into
                // device code, unless the macro is host code itself.
                "preproc_arg" if !macros.is_host(text, leaf.parent()) => {
                    set.extend(identifiers(leaf_text))
                }
                // A function's own parameter or local (`unsigned int* vector` in cuRAND's
                // device code) hides any namespace-scope name it shares: not a use of one.
                _ if is_identifier(leaf_text) => {
                    let local = enclosing_function(*leaf).is_some_and(|f| {
                        locals
                            .entry(f.id())
                            .or_insert_with(|| local_names(text, f))
                            .contains(leaf_text)
                    });
                    if !local {
                        set.insert(leaf_text);
                    }
                }
                _ => {}
            }
        }
        // A function whose body does what only host code can (launch a kernel, call the
        // runtime API, lock a std::mutex) is host code whoever names it: if device code really
        // called it, nvcc would reject the file as well. Such a name in a macro body (a host
        // helper macro in a header) does not keep it.
        let host_evidence: Vec<bool> = items
            .iter()
            .map(|it| {
                it.body.is_some_and(|b| {
                    let body = &text[b.byte_range()];
                    // Directly, or through a macro whose expansion launches (`LAUNCH(64);`).
                    does_host_only_things(body) || identifiers(body).any(|w| macros.launches(w))
                })
            })
            .collect();
        let annotated = annotated_function_names(text, root, &items);
        Facts {
            items,
            classes,
            variables,
            host_members,
            inside,
            class_inside,
            variable_inside,
            instantiations,
            instantiation_inside,
            host_class_names,
            macro_bodies,
            seeds,
            host_evidence,
            annotated,
        }
    }
}

/// The function definition a node lies in, innermost.
fn enclosing_function(node: Node) -> Option<Node> {
    let mut n = node.parent();
    while let Some(p) = n {
        if p.kind() == "function_definition" {
            return Some(p);
        }
        n = p.parent();
    }
    None
}

/// Whether a leaf can be a use: not the name a `#define` defines or an `#undef` undefines,
/// nor a macro's parameter.
fn names_a_use(text: &str, leaf: Node) -> bool {
    let Some(parent) = leaf.parent() else {
        return true;
    };
    match parent.kind() {
        "preproc_params" => false,
        "preproc_def" | "preproc_function_def" => {
            parent.child_by_field_name("name").map(|n| n.id()) != Some(leaf.id())
        }
        "preproc_call" => parent
            .child_by_field_name("directive")
            .map_or(true, |d| text[d.byte_range()].trim() != "#undef"),
        _ => true,
    }
}

/// What device code reaches in one file.
pub(super) struct Reached {
    pub(super) items: Vec<bool>,
    pub(super) classes: Vec<bool>,
    pub(super) variables: Vec<bool>,
    pub(super) instantiations: Vec<bool>,
}

/// Follows device code's names through every file of the unit at once: a header's helper is
/// reached when the file including it names it in device code, and the file's helper when a
/// header's device code does. `used_elsewhere` holds names used by files not among `files`.
pub(super) fn reach(files: &[&Facts], used_elsewhere: &HashSet<String>) -> Vec<Reached> {
    let mut used: HashSet<&str> = used_elsewhere.iter().map(String::as_str).collect();
    for f in files {
        used.extend(f.seeds.iter().copied());
    }
    // A function that calls host code is host code too, for the same reason as one doing
    // host-only things: device code calling it would call host code (`launch_case(...)`
    // calling the launcher template `instantiate<8>(...)`). Only through names no annotated
    // function of the unit shares: a `__device__` overload would make the call possibly
    // device code.
    let annotated: HashSet<&str> = files
        .iter()
        .flat_map(|f| f.annotated.iter().copied())
        .collect();
    let mut evidence: Vec<Vec<bool>> = files.iter().map(|f| f.host_evidence.clone()).collect();
    loop {
        // (A member's name alone is not its: `run` of one class says nothing of another's.)
        let host_names: HashSet<&str> = files
            .iter()
            .zip(&evidence)
            .flat_map(|(f, e)| f.items.iter().zip(e))
            .filter(|(it, &e)| e && it.class.is_none() && !annotated.contains(it.name.as_str()))
            .map(|(it, _)| it.name.as_str())
            .collect();
        let mut grew = false;
        for (f, e) in files.iter().zip(evidence.iter_mut()) {
            for (i, it) in f.items.iter().enumerate() {
                if !e[i]
                    && it.body.is_some()
                    && f.inside[i]
                        .iter()
                        .any(|w| *w != it.name && host_names.contains(w))
                {
                    e[i] = true;
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut out: Vec<Reached> = files
        .iter()
        .map(|f| Reached {
            items: vec![false; f.items.len()],
            classes: vec![false; f.classes.len()],
            variables: vec![false; f.variables.len()],
            instantiations: vec![false; f.instantiations.len()],
        })
        .collect();
    // An explicit instantiation goes with its template when that is a function template or
    // class of the unit that no annotation makes device code; any other (a kernel's) is
    // device code.
    let host_templates: HashSet<&str> = files
        .iter()
        .flat_map(|f| &f.items)
        .filter(|it| {
            it.class.is_none()
                && it.template_clause.is_some()
                && !annotated.contains(it.name.as_str())
        })
        .map(|it| it.name.as_str())
        .chain(
            files
                .iter()
                .flat_map(|f| f.host_class_names.iter().copied()),
        )
        .collect();
    let mut expanded: HashSet<&str> = HashSet::new();
    loop {
        let mut grew = false;
        for ((f, r), e) in files.iter().zip(out.iter_mut()).zip(&evidence) {
            for (i, it) in f.items.iter().enumerate() {
                let name = it.class.as_deref().unwrap_or(&it.name);
                if !r.items[i] && !e[i] && used.contains(name) {
                    r.items[i] = true;
                    used.extend(f.inside[i].iter().copied());
                    grew = true;
                }
            }
            // A class or variable device code names stays, and so does what it names.
            for (c, class) in f.classes.iter().enumerate() {
                if !r.classes[c] && class.names.iter().any(|n| used.contains(n.as_str())) {
                    r.classes[c] = true;
                    used.extend(f.class_inside[c].iter().copied());
                    grew = true;
                }
            }
            for (v, var) in f.variables.iter().enumerate() {
                if !r.variables[v] && var.names.iter().any(|n| used.contains(n.as_str())) {
                    r.variables[v] = true;
                    used.extend(f.variable_inside[v].iter().copied());
                    grew = true;
                }
            }
            for (x, inst) in f.instantiations.iter().enumerate() {
                let template = inst.names[0].as_str();
                let function_reached = files.iter().zip(&evidence).any(|(g, e)| {
                    g.items.iter().zip(e).any(|(it, &e)| {
                        it.class.is_none() && it.name == template && !e && used.contains(template)
                    })
                });
                let class_used = inst.kind == SetAsideKind::HostClass && used.contains(template);
                let keep = !host_templates.contains(template) || function_reached || class_used;
                if !r.instantiations[x] && keep {
                    r.instantiations[x] = true;
                    used.extend(f.instantiation_inside[x].iter().copied());
                    grew = true;
                }
            }
            for (name, body) in &f.macro_bodies {
                if used.contains(name) && expanded.insert(name) {
                    used.extend(body.iter().copied());
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    out
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
            if let Some(name) =
                function_declarator(n).and_then(|d| d.child_by_field_name("declarator"))
            {
                let name = &text[name.byte_range()];
                out.insert(name.rsplit("::").next().unwrap_or(name).trim());
            }
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    out
}
