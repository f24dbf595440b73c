//! The kernels set-aside host code launches, and how to name them for NVRTC: template
//! arguments as written, bound by explicit calls of the launcher, or deduced from the launch's
//! argument types.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::expand::*;
use super::items::*;
use super::text::*;
use super::{HostDecision, Item, SetAsideKind, UnresolvedLaunch};
use crate::source::macros::{call_args, leaves};
use crate::source::parse::location;
use crate::source::Location;

pub(super) fn has_kernel_call(n: Node) -> bool {
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

/// The launches inside set-aside functions, and what binds their launchers' template
/// parameters.
pub(super) struct Launches<'a, 't> {
    pub(super) items: &'a [Item<'t>],
    /// Per set-aside item: (the launched kernel, where, the `if constexpr` conditions it sits
    /// under, innermost last, negated for an `else` branch).
    pub(super) sites: Vec<(usize, String, Location, Vec<String>)>,
    pub(super) locals: HashMap<usize, HashSet<String>>,
    /// Per set-aside item: its `constexpr` locals and their values, in declaration order
    /// (`constexpr int BR = 8;`), which a launch's template arguments may name.
    pub(super) constants: HashMap<usize, Vec<(String, String)>>,
    /// Explicit calls `f<args>(...)` to set-aside function templates: (callee item, the item
    /// the call sits in, if any, template arguments).
    pub(super) calls: Vec<(usize, Option<usize>, Vec<String>)>,
}

impl<'a, 't> Launches<'a, 't> {
    pub(super) fn new(
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
        let mut constants = HashMap::new();
        let mut types_of: HashMap<usize, HashMap<String, String>> = HashMap::new();
        let template_kernels = template_kernels(text, root);
        // What a launch's argument may name besides the launcher's own parameters and locals:
        // the file's namespace-scope variables (`float* dbias_buffer;`).
        let globals = file_scope_types(text, root);
        let with_globals = |func: Node| {
            let mut types = globals.clone();
            types.extend(declared_types(text, func));
            types
        };
        for &i in &set_aside {
            let Some(body) = items[i].body else { continue };
            locals.insert(i, local_names(text, items[i].func));
            constants.insert(i, constexpr_locals(text, body));
            types_of.insert(i, with_globals(items[i].func));
            let mut stack = vec![body];
            while let Some(n) = stack.pop() {
                // A kernel specialization host code names without `<<<`: its address passed to
                // `cudaLaunchCooperativeKernel((void*)k<T>, ...)`,
                // `cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k<T>, ...)` or
                // `cudaFuncSetAttribute`. nvcc compiles every specialization host code names.
                let launch_callee = n.parent().is_some_and(|p| {
                    p.kind() == "call_expression"
                        && has_direct_kernel_call(p)
                        && p.child_by_field_name("function").map(|f| f.id()) == Some(n.id())
                });
                if n.kind() == "template_function" && !launch_callee {
                    let named = n.child_by_field_name("name").is_some_and(|name| {
                        template_kernels.contains_key(&text[name.byte_range()])
                    });
                    if named {
                        let conds = constexpr_conditions(text, n, body);
                        sites.push((i, text[n.byte_range()].to_owned(), location(text, n), conds));
                    }
                }
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
                                    .map(|a| argument_types(text, a, &types_of[&i]))?;
                                t.deduce(&callee, &types)
                            });
                        let kernel = deduced.unwrap_or(callee);
                        let conds = constexpr_conditions(text, n, body);
                        sites.push((i, kernel, location(text, f), conds));
                    }
                }
                let mut cursor = n.walk();
                let children: Vec<Node> = n.children(&mut cursor).collect();
                stack.extend(children.into_iter().rev());
            }
            // Launches inside statement macros (`LAUNCH(float, 4);` whose expansion, through
            // any depth of macros, holds `<<<`).
            for (leaf, expanded) in macro_invocations(text, body, macros, |w| macros.launches(w)) {
                for (at, _) in expanded.match_indices("<<<") {
                    if let Some(k) = callee_before(&expanded, at) {
                        let conds = constexpr_conditions(text, leaf, body);
                        sites.push((i, k.to_owned(), location(text, leaf), conds));
                    }
                }
            }
        }
        sites.sort_by_key(|(i, _, loc, _)| (*i, loc.byte_range.start));
        let mut calls = Vec::new();
        for (n, name, args) in explicit_template_calls(text, root) {
            let callee = set_aside
                .iter()
                .copied()
                .find(|&i| items[i].class.is_none() && items[i].name.as_str() == name);
            if let Some(callee) = callee {
                let within = items.iter().position(|it| {
                    it.outer.start <= n.start_byte() && n.end_byte() <= it.outer.end
                });
                calls.push((callee, within, args));
            }
        }
        // An explicit instantiation of a class template (`template class Estimator<float>;`)
        // instantiates its members defined outside it, and what they launch, as a call would.
        for (class, args) in class_instantiations(text, root) {
            for &i in &set_aside {
                if items[i].class.as_deref() == Some(class) && !items[i].template_params.is_empty()
                {
                    calls.push((i, None, args.clone()));
                }
            }
        }
        // Calls that deduce a launcher template's arguments (`launch(input, ...)` with `input`
        // a `const __half*` for `template <typename T> int launch(const T* input, ...)`), from
        // the caller's declared argument types, as the call does.
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            let mut cursor = n.walk();
            let children: Vec<Node> = n.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
            if n.kind() != "call_expression" {
                continue;
            }
            let Some(f) = n
                .child_by_field_name("function")
                .filter(|f| matches!(f.kind(), "identifier" | "qualified_identifier"))
            else {
                continue;
            };
            let written = &text[f.byte_range()];
            let short = written.rsplit("::").next().unwrap_or(written).trim();
            let Some(callee) = set_aside.iter().copied().find(|&i| {
                items[i].class.is_none()
                    && items[i].name == short
                    && !items[i].template_params.is_empty()
            }) else {
                continue;
            };
            let within = items
                .iter()
                .position(|it| it.outer.start <= n.start_byte() && n.end_byte() <= it.outer.end);
            let (Some(w), Some(args)) = (within, n.child_by_field_name("arguments")) else {
                continue;
            };
            let func = items[callee].func;
            let decl = function_declarator(func);
            let tdecl = func.parent().filter(|p| p.kind() == "template_declaration");
            let (Some(decl), Some(tdecl)) = (decl, tdecl) else {
                continue;
            };
            let types = argument_types(text, args, &with_globals(items[w].func));
            let deduced = template_signature(text, tdecl, decl).deduce(short, &types);
            if let Some(d) = deduced {
                let targs = split_template_args(&d[short.len()..]);
                calls.push((callee, within, targs));
            }
        }
        Launches {
            items,
            sites,
            locals,
            constants,
            calls,
        }
    }

    /// The concrete kernel specializations, deduplicated in source order, and the launches that
    /// stay unresolved.
    pub(super) fn resolve(&self) -> (Vec<(Vec<String>, String)>, Vec<UnresolvedLaunch>) {
        let mut launched: Vec<(Vec<String>, String)> = Vec::new();
        let mut unresolved = Vec::new();
        for (i, site, loc, _) in &self.sites {
            if !site.contains('<') {
                // A plain kernel is compiled whether or not anything launches it.
                continue;
            }
            let item = &self.items[*i];
            let locals = &self.locals[i];
            let mut missing: Vec<String> = Vec::new();
            let site = &self.with_constants(*i, site);
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
    pub(super) fn bindings(&self, i: usize, depth: u32) -> Vec<Vec<String>> {
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

impl Launches<'_, '_> {
    /// `s` with item `i`'s `constexpr` locals replaced by their values, latest first, so that
    /// one defined through another resolves too.
    fn with_constants(&self, i: usize, s: &str) -> String {
        let mut out = s.to_owned();
        if let Some(constants) = self.constants.get(&i) {
            for (name, value) in constants.iter().rev() {
                out = substitute(
                    &out,
                    std::slice::from_ref(name),
                    std::slice::from_ref(value),
                );
            }
        }
        out
    }

    /// For each launcher template (of a header, which other files of the translation unit
    /// call), a one-line class template standing for its launches: the launcher's template
    /// parameter list, and a `__device__` member that names each kernel specialization it
    /// launches in terms of those parameters, under the `if constexpr` branches it sits in. A
    /// reference to `__cudacheck_launches_NAME<args>::refs` where the launcher is called then
    /// instantiates exactly what `NAME<args>(...)` launches, as nvcc's instantiation of the
    /// launcher does. Only launches whose template arguments name nothing of the launcher's
    /// body (no locals) are in it.
    pub(super) fn shadows(&self) -> Vec<Shadow> {
        let mut out = Vec::new();
        for (i, item) in self.items.iter().enumerate() {
            let Some(clause) = &item.template_clause else {
                continue;
            };
            // A member's launches are its class instantiations' (not a shadow's).
            if !plain_namespace(&item.namespace) || item.class.is_some() {
                continue;
            }
            let locals = self.locals.get(&i);
            let mut body = String::new();
            let mut dependent = false;
            for (_, site, _, conds) in self
                .sites
                .iter()
                .filter(|(s, k, _, _)| *s == i && k.contains('<'))
            {
                let site = &self.with_constants(i, site);
                let conds: Vec<String> = conds.iter().map(|c| self.with_constants(i, c)).collect();
                let words: Vec<&str> = identifiers(site).collect();
                let local = |w: &str| locals.is_some_and(|l| l.contains(w));
                if words.iter().any(|w| local(w))
                    || conds.iter().flat_map(|c| identifiers(c)).any(local)
                {
                    continue;
                }
                dependent |= words
                    .iter()
                    .any(|w| item.template_params.iter().any(|p| p == w));
                for c in &conds {
                    body.push_str(&format!("if constexpr ({c}) {{ "));
                }
                body.push_str(&format!("(void)&{}; ", collapse(site)));
                for _ in &conds {
                    body.push_str("} ");
                }
            }
            if !dependent {
                continue;
            }
            out.push(Shadow {
                namespace: item.namespace.clone(),
                name: item.name.clone(),
                line: format!(
                    "template {clause} struct {}{} {{ static __device__ void refs() {{ {body}}} }};",
                    SHADOW_PREFIX, item.name
                ),
            });
        }
        out
    }

    /// Explicit calls `NAME<args>(...)`, in the set-aside functions, of launcher templates that
    /// other files of the translation unit define (`launchers`), written out directly or by
    /// the file's macros: each as (the calling function's namespace, the reference to the
    /// launcher's shadow). Template arguments bound by the caller's own callers are
    /// substituted; calls whose arguments still name the caller's locals or unbound template
    /// parameters are left out.
    pub(super) fn foreign_calls(
        &self,
        text: &str,
        launchers: &[Launcher],
        macros: &FileMacros,
    ) -> Vec<(Vec<String>, String)> {
        let mut out: Vec<(Vec<String>, String)> = Vec::new();
        if launchers.is_empty() {
            return out;
        }
        let own: HashSet<&str> = self
            .items
            .iter()
            .filter(|it| it.class.is_none())
            .map(|it| it.name.as_str())
            .collect();
        let find = |name: &str| {
            let short = name.rsplit("::").next().unwrap_or(name).trim();
            launchers
                .iter()
                .find(|l| l.name == short && !own.contains(short))
        };
        for (i, item) in self.items.iter().enumerate() {
            let Some(body) = item.body else { continue };
            if !self.locals.contains_key(&i) {
                // Not set aside.
                continue;
            }
            let mut found: Vec<(&Launcher, Vec<String>)> = explicit_template_calls(text, body)
                .into_iter()
                .filter_map(|(_, name, args)| Some((find(name)?, args)))
                .collect();
            for (_, expanded) in macro_invocations(text, body, macros, |_| true) {
                for (name, targs) in template_calls(&expanded) {
                    if let Some(l) = find(name) {
                        found.push((l, targs));
                    }
                }
            }
            let locals = &self.locals[&i];
            for (launcher, args) in found {
                for binding in self.bindings(i, 0) {
                    let concrete: Vec<String> = args
                        .iter()
                        .map(|a| collapse(&substitute(a, &item.template_params, &binding)))
                        .collect();
                    let unbound = concrete
                        .iter()
                        .flat_map(|a| identifiers(a))
                        .any(|w| locals.contains(w) || item.template_params.iter().any(|p| p == w));
                    if unbound {
                        continue;
                    }
                    let path: String = launcher
                        .namespace
                        .iter()
                        .map(|n| format!("::{n}"))
                        .collect();
                    let entry = (
                        item.namespace.clone(),
                        format!(
                            "{path}::{SHADOW_PREFIX}{}<{}>::refs",
                            launcher.name,
                            concrete.join(", ")
                        ),
                    );
                    if !out.contains(&entry) {
                        out.push(entry);
                    }
                }
            }
        }
        out
    }
}

/// Every call `NAME<args>(...)` under `root`, as tree-sitter reads it: (the call, `NAME` as
/// written, the template arguments).
fn explicit_template_calls<'t, 's>(
    text: &'s str,
    root: Node<'t>,
) -> Vec<(Node<'t>, &'s str, Vec<String>)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        // A call, or an explicit instantiation (`template void reduce<int>(int, int*);`),
        // which instantiates the template as a call would.
        let function = match n.kind() {
            "call_expression" => n.child_by_field_name("function"),
            "template_instantiation" => {
                function_declarator(n).and_then(|d| d.child_by_field_name("declarator"))
            }
            _ => None,
        };
        if function.is_some() {
            let tf = function.filter(|f| f.kind() == "template_function");
            let name = tf.and_then(|f| f.child_by_field_name("name"));
            let args = tf.and_then(|f| f.child_by_field_name("arguments"));
            if let (Some(name), Some(args)) = (name, args) {
                out.push((
                    n,
                    &text[name.byte_range()],
                    split_template_args(&text[args.byte_range()]),
                ));
            }
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// Every explicit instantiation of a class template under `root` (`template class
/// Estimator<float>;`): the class's name and the template arguments.
fn class_instantiations<'s>(text: &'s str, root: Node) -> Vec<(&'s str, Vec<String>)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.kind() == "template_instantiation" {
            let ty = n
                .child_by_field_name("type")
                .filter(|t| matches!(t.kind(), "class_specifier" | "struct_specifier"))
                .and_then(|t| t.child_by_field_name("name"))
                .filter(|t| t.kind() == "template_type");
            let name = ty.and_then(|t| t.child_by_field_name("name"));
            let args = ty.and_then(|t| t.child_by_field_name("arguments"));
            if let (Some(name), Some(args)) = (name, args) {
                out.push((
                    &text[name.byte_range()],
                    split_template_args(&text[args.byte_range()]),
                ));
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

/// The `constexpr` locals of a function body and their initializers, in declaration order.
pub(super) fn constexpr_locals(text: &str, body: Node) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut cursor = n.walk();
        let children: Vec<Node> = n.named_children(&mut cursor).collect();
        if n.kind() == "declaration" {
            let mut c = n.walk();
            let is_constexpr = n
                .children(&mut c)
                .any(|x| &text[x.byte_range()] == "constexpr");
            if is_constexpr {
                let mut c = n.walk();
                for d in n.children_by_field_name("declarator", &mut c) {
                    let name = d.child_by_field_name("declarator");
                    let value = d.child_by_field_name("value");
                    if let (Some(name), Some(value)) = (name, value) {
                        if name.kind() == "identifier" {
                            let v = collapse(&strip_line_comments(&text[value.byte_range()]));
                            let v = v.trim_start_matches('=').trim().to_owned();
                            out.push((text[name.byte_range()].to_owned(), v));
                        }
                    }
                }
            }
            continue;
        }
        stack.extend(children.into_iter().rev());
    }
    out
}

/// The invocations `NAME(args)` under `body` of the function-like macros `wanted` names (not
/// their `#define`s), each with its leaf and its expansion through every depth of macros.
fn macro_invocations<'t>(
    text: &str,
    body: Node<'t>,
    macros: &FileMacros,
    wanted: impl Fn(&str) -> bool,
) -> Vec<(Node<'t>, String)> {
    let mut l = Vec::new();
    leaves(body, &mut l, false);
    let mut out = Vec::new();
    for j in 0..l.len().saturating_sub(1) {
        let word = &text[l[j].byte_range()];
        if !is_identifier(word)
            || !wanted(word)
            || &text[l[j + 1].byte_range()] != "("
            || is_definition(l[j])
        {
            continue;
        }
        let Some((_, args)) = call_args(text, &l, j + 1) else {
            continue;
        };
        if let Some(expanded) = macros.expand(word, &args) {
            out.push((l[j], expanded));
        }
    }
    out
}

/// Whether `leaf` is the name of a `#define` (inside a function: the launcher's own macro),
/// not an invocation.
fn is_definition(leaf: Node) -> bool {
    leaf.parent()
        .is_some_and(|p| matches!(p.kind(), "preproc_function_def" | "preproc_def"))
}

/// The name prefix of a launcher's shadow class template (see [`Launches::shadows`]).
pub(super) const SHADOW_PREFIX: &str = "__cudacheck_launches_";

/// A launcher template's shadow: where it goes and its one line.
pub(super) struct Shadow {
    pub(super) namespace: Vec<String>,
    pub(super) name: String,
    pub(super) line: String,
}

/// Whether a namespace path can be spelled from outside (no anonymous namespace).
pub(super) fn plain_namespace(ns: &[String]) -> bool {
    ns.iter().all(|n| is_identifier(n))
}

/// `NAME<args>(` calls in expanded macro text: (NAME as written, its template arguments).
pub(super) fn template_calls(s: &str) -> Vec<(&str, Vec<String>)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphabetic() || b[i] == b'_')
            || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = &s[start..i];
        let mut j = i;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= b.len() || b[j] != b'<' {
            continue;
        }
        // The matching `>`, counting nested angle brackets and parentheses.
        let mut depth = 0i32;
        let mut k = j;
        let mut close = None;
        while k < b.len() {
            match b[k] {
                b'<' | b'(' | b'[' => depth += 1,
                b'>' | b')' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                b';' | b'{' | b'}' => break,
                _ => {}
            }
            k += 1;
        }
        let Some(close) = close.filter(|&c| b[c] == b'>') else {
            continue;
        };
        let mut m = close + 1;
        while m < b.len() && b[m].is_ascii_whitespace() {
            m += 1;
        }
        if m < b.len() && b[m] == b'(' {
            out.push((name, split_template_args(&s[j..=close])));
            i = close + 1;
        }
    }
    out
}

/// The `if constexpr` conditions `node` sits under inside `body`, outermost first: `(c)` in
/// the `then` branch, `(!(c))` in the `else` branch.
pub(super) fn constexpr_conditions(text: &str, node: Node, body: Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut child = node;
    while let Some(parent) = child.parent() {
        if parent.id() == body.id() {
            break;
        }
        if parent.kind() == "if_statement" {
            let mut c = parent.walk();
            let is_constexpr = parent
                .children(&mut c)
                .any(|x| &text[x.byte_range()] == "constexpr");
            let cond = parent
                .child_by_field_name("condition")
                .map(|c| collapse(&strip_line_comments(&text[c.byte_range()])));
            if let (true, Some(cond)) = (is_constexpr, cond) {
                let cond = cond
                    .strip_prefix('(')
                    .and_then(|c| c.strip_suffix(')'))
                    .unwrap_or(&cond)
                    .to_owned();
                if parent
                    .child_by_field_name("consequence")
                    .is_some_and(|c| c.id() == child.id())
                {
                    out.push(cond);
                } else if parent
                    .child_by_field_name("alternative")
                    .is_some_and(|c| c.id() == child.id())
                {
                    out.push(format!("!({cond})"));
                }
            }
        }
        child = parent;
    }
    out.reverse();
    out
}

/// A launcher template another file of the translation unit defines (a header's), whose
/// launches a shadow names (see `Launches::shadows`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Launcher {
    /// Its namespace path, outermost first.
    pub namespace: Vec<String>,
    pub name: String,
}

/// A `__global__` function template: its template parameters (name, has a default) and its
/// function parameters' types as written.
pub(super) struct KernelTemplate {
    pub(super) template_params: Vec<(String, bool)>,
    pub(super) param_types: Vec<String>,
}

impl KernelTemplate {
    /// `k<float>` for a launch of `k` with arguments of `arg_types`, deducing each template
    /// parameter from the first function parameter that mentions it, the way a call does after
    /// dropping qualifiers (`const T* __restrict__` against `float*` gives `T = float`).
    /// An argument whose type is not known (`None`) deduces nothing; a parameter only such
    /// arguments could bind leaves the launch undeduced.
    pub(super) fn deduce(&self, kernel: &str, arg_types: &[Option<String>]) -> Option<String> {
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
                let (p, a) = (plain(p), plain(a.as_deref()?));
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

/// A function template's signature: its template parameters (name, has a default) and its
/// function parameters' types as written. `n` is the `template_declaration`, `decl` the
/// function's `function_declarator`.
pub(super) fn template_signature(text: &str, n: Node, decl: Node) -> KernelTemplate {
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
                    let stars = x
                        .child_by_field_name("declarator")
                        .map_or(0, |d| text[d.byte_range()].matches('*').count());
                    format!("{ty}{}", "*".repeat(stars))
                })
                .collect();
            v
        })
        .unwrap_or_default();
    KernelTemplate {
        template_params,
        param_types,
    }
}

/// The file's `__global__` function templates, by name.
pub(super) fn template_kernels(text: &str, root: Node) -> HashMap<String, KernelTemplate> {
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
                        out.insert(
                            text[name.byte_range()].to_owned(),
                            template_signature(text, n, decl),
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
pub(super) fn declared_types(text: &str, func: Node) -> HashMap<String, String> {
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

/// The declared types of the file's namespace-scope variables (in namespaces, `extern "C"`
/// blocks and conditionals), by name; function bodies are not entered.
pub(super) fn file_scope_types(text: &str, root: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    super::decls::namespace_scope(root, |child| {
        // Not a function's declaration: its parameters are no variables of the file.
        if child.kind() == "declaration" && function_declarator(child).is_none() {
            out.extend(declared_types(text, child));
        }
    });
    out
}

/// The type of each argument of a launch where it is plain to read (a variable of the
/// launcher or of the file, a cast, a literal, a temporary of a named type), `None` where not.
pub(super) fn argument_types(
    text: &str,
    args: Node,
    declared: &HashMap<String, String>,
) -> Vec<Option<String>> {
    let mut cursor = args.walk();
    let list: Vec<Node> = args.named_children(&mut cursor).collect();
    list.into_iter()
        .filter(|a| a.kind() != "comment")
        .map(|a| match a.kind() {
            "identifier" => declared.get(&text[a.byte_range()]).cloned(),
            // A temporary of a named type: `std::bool_constant<true>{}`, `Params{...}`.
            "compound_literal_expression" => a
                .child_by_field_name("type")
                .map(|t| collapse(&text[t.byte_range()])),
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
pub(super) fn has_direct_kernel_call(n: Node) -> bool {
    let mut cursor = n.walk();
    let found = n
        .children(&mut cursor)
        .any(|c| c.kind() == "kernel_call_syntax");
    found
}

/// The names a function declares for itself: parameters and local variables.
pub(super) fn local_names(text: &str, func: Node) -> HashSet<String> {
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

/// One `__device__` function per namespace that names each launched specialization, which is
/// what makes NVRTC instantiate (and emit) it, as nvcc does for a launch.
///
/// `shadows` (see [`Launches::shadows`]) come first, one per line. `tag` tells this file's
/// functions from those other files of the translation unit append; the block is guarded by
/// it, so a header included twice appends once.
pub(super) fn launch_references(
    launched: &[(Vec<String>, String)],
    shadows: &[Shadow],
    tag: &str,
) -> String {
    let mut out = format!(
        "// cudacheck: kernels launched by the host code set aside above, named so that NVRTC \
         instantiates them as nvcc does.\n#ifndef __CUDACHECK_APPENDED_{tag}\n\
         #define __CUDACHECK_APPENDED_{tag}\n",
    );
    let in_namespace = |out: &mut String, namespace: &[String], line: &str| {
        for ns in namespace {
            out.push_str(&format!("namespace {ns} {{ "));
        }
        out.push_str(line);
        for _ in namespace {
            out.push_str(" }");
        }
        out.push('\n');
    };
    for s in shadows {
        in_namespace(&mut out, &s.namespace, &s.line);
    }
    for (n, (namespace, kernel)) in launched.iter().enumerate() {
        // Nothing calls these: `unused` keeps NVRTC's warning 177-D ("declared but never
        // referenced", every NVRTC from 12.4 to 13.5) off the user's file.
        let line = format!(
            "__attribute__((unused)) static __device__ void __cudacheck_launched_{tag}_{n}() \
             {{ (void)&{kernel}; }}"
        );
        in_namespace(&mut out, namespace, &line);
    }
    out.push_str("#endif\n");
    out
}
