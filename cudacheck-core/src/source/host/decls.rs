//! Namespace-scope declarations other than functions that only host code may need: classes,
//! variables, and members marked `__host__` alone. Whether device code names them is decided
//! with the functions' (see `reach.rs`).

use std::collections::HashSet;
use std::ops::Range;

use tree_sitter::Node;

use super::items::*;
use super::text::*;
use super::SetAsideKind;
use crate::source::parse::location;
use crate::source::Location;

/// A namespace-scope class or struct, a namespace-scope variable, or a `__host__`-only
/// function: what device code may not need, found by name.
pub(super) struct HostDecl {
    pub(super) name: String,
    /// Every name it declares (a variable declaration may declare several: `int a, *b;`).
    pub(super) names: Vec<String>,
    pub(super) location: Location,
    /// The definition, with its `template<...>`.
    pub(super) outer: Range<usize>,
    /// What it is, as a set-aside decision names it.
    pub(super) kind: SetAsideKind,
}

/// The file's classes and structs that are set aside when device code does not name them (in
/// namespaces and conditionals at any depth): those with nothing in them for the device (no
/// member is `__device__`, `__global__`, `__host__`, `__forceinline__` or an all-caps macro
/// that may stand for one), no member defined outside them for the device (`defined_outside`
/// names those classes), a name, and no parse error. Such a class is host code under nvcc (an
/// exception class built on `std::ostringstream`, a timer on `gettimeofday`, a cuBLAS
/// wrapper); NVRTC's `-default-device` would compile its members for the device.
pub(super) fn host_classes(
    text: &str,
    root: Node,
    defined_outside: &HashSet<&str>,
    plain: &HashSet<String>,
) -> Vec<HostDecl> {
    let mut out = Vec::new();
    namespace_scope(root, |child| match child.kind() {
        "class_specifier" | "struct_specifier" => {
            out.extend(host_class(text, child, child, defined_outside, plain));
        }
        "template_declaration" => {
            let mut c = child.walk();
            let inner = child
                .named_children(&mut c)
                .find(|x| matches!(x.kind(), "class_specifier" | "struct_specifier"));
            if let Some(inner) = inner {
                out.extend(host_class(text, child, inner, defined_outside, plain));
            }
        }
        _ => (),
    });
    out
}

/// The scopes namespace-scope declarations sit in below `child`: namespaces, `extern "C"`
/// blocks, conditionals.
/// Calls `visit` on every node at namespace scope below `root`: inside namespaces, `extern
/// "C" { }` blocks and conditionals, at any depth.
pub(super) fn namespace_scope<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>)) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let mut cursor = n.walk();
        for child in n.named_children(&mut cursor) {
            visit(child);
            push_scopes(child, &mut stack);
        }
    }
}

fn push_scopes<'t>(child: Node<'t>, stack: &mut Vec<Node<'t>>) {
    match child.kind() {
        "namespace_definition" => stack.extend(child.child_by_field_name("body")),
        "linkage_specification" => stack.extend(
            child
                .child_by_field_name("body")
                .filter(|b| b.kind() == "declaration_list"),
        ),
        "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif" | "preproc_elifdef" => {
            stack.push(child)
        }
        _ => {}
    }
}

fn host_class(
    text: &str,
    outer: Node,
    class: Node,
    defined_outside: &HashSet<&str>,
    plain: &HashSet<String>,
) -> Option<HostDecl> {
    let mut name_node = class.child_by_field_name("name")?;
    let body = class.child_by_field_name("body")?;
    // A specialization (`template <> class Comparator<int> {...}`) goes with its template.
    if name_node.kind() == "template_type" {
        name_node = name_node.child_by_field_name("name")?;
    }
    if outer.has_error() || name_node.kind() != "type_identifier" {
        return None;
    }
    let name = &text[name_node.byte_range()];
    let whole = &text[outer.byte_range()];
    let annotated = identifiers(whole).any(|w| {
        matches!(
            w,
            "__device__" | "__global__" | "__host__" | "__forceinline__"
        )
    }) || member_specifiers(text, body).any(|w| may_be_annotation(w, plain));
    if annotated || !balanced_conditionals(whole) {
        return None;
    }
    // A member defined outside the class for the device (`__device__ float Vec::norm()`)
    // would lose its class; those defined for the host go with it ([`member_definitions`]).
    if defined_outside.contains(name) {
        return None;
    }
    Some(HostDecl {
        name: name.to_owned(),
        names: vec![name.to_owned()],
        location: location(text, name_node),
        outer: outer.byte_range(),
        kind: SetAsideKind::HostClass,
    })
}

/// The words before each member function's declarator in a class body: where an annotation,
/// or an all-caps macro standing for one (`HOST_DEVICE`), would be. Words in bodies and
/// initializers (`CUFFT_C2C`, `CLOCK_MONOTONIC`) are expressions, not annotations.
fn member_specifiers<'t>(text: &'t str, body: Node) -> impl Iterator<Item = &'t str> {
    let mut cursor = body.walk();
    let mut words = Vec::new();
    for member in body.named_children(&mut cursor) {
        if !matches!(
            member.kind(),
            "function_definition" | "declaration" | "field_declaration" | "template_declaration"
        ) {
            continue;
        }
        let func = if member.kind() == "template_declaration" {
            let mut c = member.walk();
            let inner = member
                .named_children(&mut c)
                .find(|n| !matches!(n.kind(), "template_parameter_list"));
            inner
        } else {
            Some(member)
        };
        let Some(func) = func else { continue };
        // A data member (`CRITICAL_SECTION cs;`, `HANDLE event;`) takes no annotation: an
        // all-caps type name in front of it stands for a type, not for `__device__`.
        if func.kind() != "function_definition" && function_declarator(func).is_none() {
            continue;
        }
        let end = function_declarator(func)
            .or_else(|| func.child_by_field_name("declarator"))
            .map_or(func.end_byte(), |d| d.start_byte());
        words.extend(identifiers(&text[member.start_byte()..end]));
    }
    words.into_iter()
}

/// The namespace-scope definitions of static data members outside their class (`int
/// Counter::count = 0;`), each named by its class (`names`: the class), so that it is set
/// aside with the class when device code names neither; member functions defined outside
/// their class are `Item`s with their class. The classes with a member defined outside them
/// with a device annotation (or an all-caps word that may stand for one) come back in the
/// second list, by class name: such a class stays.
pub(super) fn member_definitions<'t>(
    text: &'t str,
    root: Node,
    plain: &HashSet<String>,
) -> (Vec<HostDecl>, HashSet<&'t str>) {
    let mut out = Vec::new();
    let mut device = HashSet::new();
    namespace_scope(root, |child| {
        let inner = match child.kind() {
            "function_definition" | "declaration" => Some(child),
            "template_declaration" => {
                let mut c = child.walk();
                let inner = child
                    .named_children(&mut c)
                    .find(|x| matches!(x.kind(), "function_definition" | "declaration"));
                inner
            }
            _ => None,
        };
        let Some(inner) = inner else { return };
        let declarator = function_declarator(inner)
            .and_then(|d| d.child_by_field_name("declarator"))
            .or_else(|| {
                let mut c = inner.walk();
                let first = inner.children_by_field_name("declarator", &mut c).next();
                first.and_then(|d| declared_name(d)).map(|(n, _)| n)
            });
        let Some(qualified) = declarator.filter(|d| d.kind() == "qualified_identifier") else {
            return;
        };
        let Some(class) = innermost_scope(text, qualified) else {
            return;
        };
        let prefix = &text[child.start_byte()..qualified.start_byte()];
        let annotated = identifiers(prefix).any(|w| {
            matches!(
                w,
                "__device__" | "__global__" | "__host__" | "__forceinline__"
            ) || may_be_annotation(w, plain)
        });
        if annotated {
            device.insert(class);
        } else if inner.kind() == "declaration" && !child.has_error() {
            // Member functions defined outside the class are `Item`s, set aside with
            // their class; static data members (`int Counter::count = 0;`) go with it here.
            out.push(HostDecl {
                name: text[qualified.byte_range()].to_owned(),
                names: vec![class.to_owned()],
                location: location(text, qualified),
                outer: child.byte_range(),
                kind: SetAsideKind::HostClass,
            });
        }
    });
    (out, device)
}

/// The file's explicit instantiations of function and class templates (`template void
/// reduce<int>(int, int*);`, `template class Estimator<float>;`), each named by its template
/// (`names`): one of a host template is set aside with the template (see `reach`).
pub(super) fn instantiations(text: &str, root: Node) -> Vec<HostDecl> {
    let mut out = Vec::new();
    namespace_scope(root, |child| {
        if child.kind() != "template_instantiation" {
            return;
        }
        let function = function_declarator(child)
            .and_then(|d| d.child_by_field_name("declarator"))
            .filter(|d| d.kind() == "template_function")
            .and_then(|d| d.child_by_field_name("name"))
            .filter(|n| n.kind() == "identifier");
        // `template class PiEstimator<float>;`
        let class = child
            .child_by_field_name("type")
            .filter(|t| matches!(t.kind(), "class_specifier" | "struct_specifier"))
            .and_then(|t| t.child_by_field_name("name"))
            .filter(|n| n.kind() == "template_type")
            .and_then(|n| n.child_by_field_name("name"));
        let (name, kind) = match (function, class) {
            (Some(f), _) => (f, SetAsideKind::HostOnly),
            (None, Some(c)) => (c, SetAsideKind::HostClass),
            (None, None) => return,
        };
        // The grammar reads `template class X<float>;` with a missing declarator: an error
        // that leaves the statement's extent certain.
        if kind == SetAsideKind::HostClass || !child.has_error() {
            let written = &text[child.byte_range()];
            out.push(HostDecl {
                name: collapse(written.split(['(', ';']).next().unwrap_or(written)),
                names: vec![text[name.byte_range()].to_owned()],
                location: location(text, name),
                outer: child.byte_range(),
                kind,
            });
        }
    });
    out
}

/// The last name of a qualified name (`cerr` in `std::cerr`), when it is a plain identifier.
fn last_name(mut q: Node) -> Option<Node> {
    loop {
        let name = q.child_by_field_name("name")?;
        match name.kind() {
            "qualified_identifier" => q = name,
            "identifier" | "type_identifier" => return Some(name),
            _ => return None,
        }
    }
}

/// The class a qualified name's last part is a member of: `B` in `a::B::f`, `Exception` in
/// `Exception<S>::throw_it`.
pub(super) fn innermost_scope<'t>(text: &'t str, mut q: Node) -> Option<&'t str> {
    loop {
        let name = q.child_by_field_name("name")?;
        if name.kind() == "qualified_identifier" {
            q = name;
            continue;
        }
        let scope = q.child_by_field_name("scope")?;
        let scope = match scope.kind() {
            "template_type" => scope.child_by_field_name("name")?,
            _ => scope,
        };
        let s = &text[scope.byte_range()];
        return is_identifier(s).then_some(s);
    }
}

/// The file's type aliases (`typedef struct { ... ncclComm_t comm; } Config;`, `typedef
/// cublasLtMatmulDesc_t Desc;`, `using Handle = cublasHandle_t;`), using-declarations
/// (`using std::cerr;`), set aside when device code names none of the names they define: a whole program's host types often hold a host
/// library's handles, which NVRTC does not know. Left alone: enumerations (device code uses
/// their enumerators without naming the type), aliases with a device annotation inside, and
/// those the parser recovered from.
pub(super) fn host_types(text: &str, root: Node) -> Vec<HostDecl> {
    let mut out = Vec::new();
    namespace_scope(root, |child| {
        match child.kind() {
            "type_definition" | "alias_declaration" => {
                out.extend(host_type(text, child, child));
            }
            // `using std::cerr;`: a name brought in. (A `using namespace` directive names
            // no entity of its own: it stays.)
            "using_declaration"
                if !text[child.byte_range()]
                    .trim_start_matches("using")
                    .trim_start()
                    .starts_with("namespace") =>
            {
                let last = u32::try_from(child.named_child_count())
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|i| child.named_child(i));
                let name = last
                    .filter(|n| n.kind() == "qualified_identifier")
                    .and_then(|q| last_name(q));
                if let (Some(name), false) = (name, child.has_error()) {
                    let name_text = text[name.byte_range()].to_owned();
                    out.push(HostDecl {
                        name: name_text.clone(),
                        names: vec![name_text],
                        location: location(text, name),
                        outer: child.byte_range(),
                        kind: SetAsideKind::HostType,
                    });
                }
            }
            _ => (),
        }
    });
    out
}

fn host_type(text: &str, outer: Node, alias: Node) -> Option<HostDecl> {
    let whole = &text[outer.byte_range()];
    let annotated = identifiers(whole).any(|w| {
        matches!(
            w,
            "__device__" | "__global__" | "__host__" | "__forceinline__"
        )
    });
    if outer.has_error() || annotated || !balanced_conditionals(whole) {
        return None;
    }
    let ty = alias.child_by_field_name("type")?;
    if ty.kind() == "enum_specifier" {
        return None;
    }
    let mut name_nodes = Vec::new();
    if alias.kind() == "alias_declaration" {
        name_nodes.push(alias.child_by_field_name("name")?);
    } else {
        let mut cursor = alias.walk();
        for d in alias.children_by_field_name("declarator", &mut cursor) {
            name_nodes.push(declared_name(d)?.0);
        }
        // `typedef struct Foo { ... } Foo_t;` defines `Foo` too.
        name_nodes.extend(ty.child_by_field_name("name"));
    }
    let first = *name_nodes.first()?;
    let names: Vec<String> = name_nodes
        .iter()
        .map(|n| text[n.byte_range()].to_owned())
        .collect();
    if names.iter().any(|n| !is_identifier(n)) {
        return None;
    }
    Some(HostDecl {
        name: names.join(", "),
        names,
        location: location(text, first),
        outer: outer.byte_range(),
        kind: SetAsideKind::HostType,
    })
}

/// The file's namespace-scope variables with no memory space (`cublasHandle_t handle;`,
/// `static size_t workspace_size = 32 << 20;`, `extern cudaDeviceProp prop;`): host data under
/// nvcc, which its device pass leaves out; NVRTC's `-default-device` would make them device
/// variables, whose types (a library's handle) NVRTC may not know.
///
/// Left alone: variables marked `__device__`, `__constant__`, `__shared__` or `__managed__`
/// (kernels and the host's `cuModuleGetGlobal` reach them), or with an all-caps word the
/// unit defines as a macro or that names a memory space (`DEVICE_CONST`), which may stand for
/// one; declarations that define a type (`struct S {...} s;`), static members defined outside
/// their class (`int Foo::n = 0;`), and declarations the parser recovered from.
pub(super) fn host_variables(
    text: &str,
    root: Node,
    macros: &HashSet<&str>,
    plain: &HashSet<String>,
) -> Vec<HostDecl> {
    let mut out = Vec::new();
    namespace_scope(root, |child| {
        if child.kind() == "declaration" {
            out.extend(host_variable(text, child, child, macros, plain));
        } else if child.kind() == "linkage_specification" {
            // `extern "C" int flag;` (a block, `extern "C" { ... }`, is a scope)
            if let Some(b) = child
                .child_by_field_name("body")
                .filter(|b| b.kind() == "declaration")
            {
                out.extend(host_variable(text, child, b, macros, plain));
            }
        }
    });
    out
}

fn host_variable(
    text: &str,
    outer: Node,
    decl: Node,
    macros: &HashSet<&str>,
    plain: &HashSet<String>,
) -> Option<HostDecl> {
    if outer.has_error() {
        return None;
    }
    let ty = decl.child_by_field_name("type")?;
    if ty.child_by_field_name("body").is_some() {
        return None;
    }
    let mut cursor = decl.walk();
    let declarators: Vec<Node> = decl
        .children_by_field_name("declarator", &mut cursor)
        .collect();
    let first = declarators.first()?;
    let prefix = &text[outer.start_byte()..first.start_byte()];
    let memory_space = |w: &str| {
        ["DEVICE", "CONSTANT", "SHARED", "MANAGED"]
            .iter()
            .any(|m| w.contains(m))
    };
    let annotated = identifiers(prefix).any(|w| {
        matches!(
            w,
            "__device__" | "__constant__" | "__shared__" | "__managed__" | "__grid_constant__"
        ) || (may_be_annotation(w, plain) && (macros.contains(w) || memory_space(w)))
    });
    if annotated {
        return None;
    }
    let mut names = Vec::new();
    let mut location_of = None;
    for d in &declarators {
        // A function declaration is an `Item`, not a variable.
        let (name, is_function) = declared_name(*d)?;
        if is_function || name.kind() != "identifier" {
            return None;
        }
        location_of.get_or_insert(name);
        names.push(text[name.byte_range()].to_owned());
    }
    let name_node = location_of?;
    Some(HostDecl {
        name: names.join(", "),
        names,
        location: location(text, name_node),
        outer: outer.byte_range(),
        kind: SetAsideKind::HostVariable,
    })
}

/// The node naming what `declarator` declares, and whether it declares a function.
fn declared_name(declarator: Node) -> Option<(Node, bool)> {
    let mut d = declarator;
    let mut function = false;
    loop {
        match d.kind() {
            "function_declarator" => {
                function = true;
                d = d.child_by_field_name("declarator")?;
            }
            "init_declarator"
            | "pointer_declarator"
            | "reference_declarator"
            | "array_declarator"
            | "parenthesized_declarator" => {
                d = match d.child_by_field_name("declarator") {
                    Some(inner) => inner,
                    // `(x)` has its declarator as its only named child.
                    None => d.named_child(0)?,
                };
            }
            _ => return Some((d, function)),
        }
    }
}

/// Every function marked `__host__` without `__device__` (and not `constexpr`, which device
/// code may call under nvcc's `--expt-relaxed-constexpr`): class members
/// (`__host__ uint_fastdiv(uint32_t d)`), out-of-class member definitions, templates of
/// them. nvcc's device pass leaves them out; device code calling one fails there too.
pub(super) fn explicit_host_functions(text: &str, root: Node) -> Vec<HostDecl> {
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
            if let Some(d) = function_declarator(n) {
                let prefix = &text[outer.start_byte()..d.start_byte()];
                let words: Vec<&str> = identifiers(prefix).collect();
                let host_only = words.contains(&"__host__")
                    && !words
                        .iter()
                        .any(|w| matches!(*w, "__device__" | "__global__" | "constexpr"));
                let name = d.child_by_field_name("declarator");
                if let (true, Some(name), false) = (host_only, name, outer.has_error()) {
                    let name_text = text[name.byte_range()].to_owned();
                    out.push(HostDecl {
                        names: vec![name_text.clone()],
                        name: name_text,
                        location: location(text, name),
                        outer: outer.byte_range(),
                        kind: SetAsideKind::ExplicitHost,
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
