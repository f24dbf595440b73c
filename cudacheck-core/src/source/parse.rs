//! Walking tree-sitter-cuda's syntax tree into the model: the scopes kernels can sit in
//! (`extern "C"`, namespaces, templates, `#if` branches), C declarators into [`CudaType`]s, and
//! the syntax errors the parser recovered from.

use std::collections::HashMap;

use tree_sitter::{Node, Parser, Tree};

use super::kernel::{self, KernelDecl};
use super::macros;
use super::structs;
use super::types::{CudaType, Scalar};
use super::{Location, SourceError, SourceModel, SyntaxIssue};

/// What the walk needs everywhere: the text, and the object-like macros that stand for
/// `__global__` (`#define KERNEL extern "C" __global__`), which the parser cannot see through.
pub(super) struct Cx<'t> {
    pub src: &'t str,
    /// Object-like macro name -> whether its body also says `extern "C"`.
    pub prefix_macros: HashMap<String, bool>,
}

impl<'t> Cx<'t> {
    pub fn text(&self, n: Node) -> &'t str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    pub fn loc(&self, n: Node) -> Location {
        location(self.src, n)
    }
}

/// The 1-based line and character column of `n`. tree-sitter counts columns in bytes; people
/// and rustc count characters.
pub(super) fn location(src: &str, n: Node) -> Location {
    let p = n.start_position();
    let start = n.start_byte();
    let line_start = start.saturating_sub(p.column);
    let column = src
        .get(line_start..start)
        .map_or(p.column, |s| s.chars().count());
    Location {
        line: u32::try_from(p.row + 1).unwrap_or(u32::MAX),
        column: u32::try_from(column + 1).unwrap_or(u32::MAX),
        byte_range: n.byte_range(),
    }
}

/// The location of the bytes `range` of `src`.
pub(super) fn location_of(src: &str, range: std::ops::Range<usize>) -> Location {
    let before = src.get(..range.start).unwrap_or("");
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    Location {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
        byte_range: range,
    }
}

/// Lexical scope of an item: the namespaces around it and whether it has C linkage.
#[derive(Clone, Default)]
pub(super) struct Scope {
    pub namespace: Vec<String>,
    pub extern_c: bool,
    /// Where the `extern "C"` of a single-declaration linkage specification starts, so the
    /// kernel's signature text includes it.
    pub prefix_start: Option<usize>,
}

pub(super) fn new_parser() -> Result<Parser, SourceError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .map_err(|source| SourceError::GrammarUnavailable { source })?;
    Ok(parser)
}

pub(super) fn parse(text: &str, file_name: &str) -> Result<SourceModel, SourceError> {
    let mut parser = new_parser()?;
    let failed = || SourceError::ParseFailed {
        file_name: file_name.to_owned(),
    };
    // A conditional inside a function body is read in one version only (its first branch):
    // the grammar reads every branch as code, and two versions of one loop header or of an
    // opening `if (...) {` make it lose the rest of the function (a kernel's parameter names
    // with it). Blanking keeps every byte offset, so the tree still indexes `text`.
    let one_version = crate::text::directive::first_branch_within_code(text);
    let seen = one_version.as_deref().unwrap_or(text);
    let mut tree = parser.parse(seen, None).ok_or_else(failed)?;
    // The grammar does not know `__align__(N)` and misreads declarations around it
    // (`extern __shared__ __align__(16) unsigned char smem[];` becomes a type named
    // `__align__`). Blanking those attributes keeps every byte offset, so the tree of the
    // blanked text still indexes the original text.
    if let Some(blanked) = macros::blank_align_attributes(&tree, seen) {
        tree = parser.parse(&blanked, None).ok_or_else(failed)?;
    }
    let root = tree.root_node();
    let mut model = SourceModel {
        file_name: file_name.to_owned(),
        ..SourceModel::default()
    };
    // Definitions come from the text layer's directives, not the tree: in the whole file, an
    // invocation without a semicolon before a `#define` (`UNARY_OP(__half, usqrt_f16,
    // hsqrt(x))`) can make the parser's recovery swallow it.
    model.kernel_macros = macros::collect_definitions(text);
    let cx = Cx {
        src: text,
        prefix_macros: model
            .kernel_macros
            .iter()
            .filter(|m| !m.function_like)
            .map(|m| (m.name.clone(), m.extern_c))
            .collect(),
    };
    model.includes = crate::text::includes(text)
        .included()
        .map(|h| h.name.clone())
        .collect();
    let mut walk = Walk::default();
    walk.items(&cx, root, &Scope::default(), &mut model);
    for (name, args) in walk.instantiations {
        if let Some(k) = model.kernels.iter_mut().find(|k| k.name == name) {
            k.explicit_instantiations.push(args);
        }
    }
    macros::collect_invocations(&cx, root, &mut model.kernel_macros);
    model.errors = collect_errors(&cx, &tree, &model.kernel_macros);
    Ok(model)
}

/// Only the kernels of a piece of text (a macro expansion), with the file's prefix macros.
pub(super) fn kernels_in(text: &str, prefix_macros: &HashMap<String, bool>) -> Vec<KernelDecl> {
    let Ok(mut parser) = new_parser() else {
        return Vec::new();
    };
    let Some(tree) = parser.parse(text, None) else {
        return Vec::new();
    };
    let cx = Cx {
        src: text,
        prefix_macros: prefix_macros.clone(),
    };
    let mut model = SourceModel::default();
    Walk::default().items(&cx, tree.root_node(), &Scope::default(), &mut model);
    model.kernels
}

#[derive(Default)]
struct Walk {
    /// `template __global__ void k<float>(...);`: kernel name and template arguments.
    instantiations: Vec<(String, String)>,
}

impl Walk {
    fn items(&mut self, cx: &Cx, parent: Node, scope: &Scope, model: &mut SourceModel) {
        let mut cursor = parent.walk();
        for child in parent.named_children(&mut cursor) {
            self.item(cx, child, scope, model);
        }
    }

    fn item(&mut self, cx: &Cx, node: Node, scope: &Scope, model: &mut SourceModel) {
        match node.kind() {
            "function_definition" | "declaration" => {
                if let Some(k) = kernel::from_node(cx, node, None, scope) {
                    add_kernel(&mut model.kernels, k);
                } else if node.kind() == "declaration" {
                    if let Some(ty) = node.child_by_field_name("type") {
                        structs::from_specifier(cx, ty, &[], &mut model.structs);
                    }
                    model.shared_globals.extend(kernel::shared_decls(cx, node));
                }
            }
            "template_declaration" => {
                let mut cursor = node.walk();
                for inner in node.named_children(&mut cursor) {
                    if matches!(inner.kind(), "function_definition" | "declaration") {
                        if let Some(k) = kernel::from_node(cx, inner, Some(node), scope) {
                            add_kernel(&mut model.kernels, k);
                        }
                    }
                }
            }
            "template_instantiation" => {
                if let Some((name, args)) = kernel::instantiation(cx, node) {
                    self.instantiations.push((name, args));
                }
            }
            "linkage_specification" => {
                let mut inner = scope.clone();
                inner.prefix_start = None;
                inner.extern_c = node
                    .child_by_field_name("value")
                    .is_some_and(|v| cx.text(v) == "\"C\"");
                if let Some(body) = node.child_by_field_name("body") {
                    if body.kind() == "declaration_list" {
                        self.items(cx, body, &inner, model);
                    } else {
                        inner.prefix_start = Some(node.start_byte());
                        self.item(cx, body, &inner, model);
                    }
                }
            }
            "namespace_definition" => {
                let mut inner = scope.clone();
                inner.prefix_start = None;
                match node.child_by_field_name("name") {
                    // `namespace a::b { ... }` (C++17).
                    Some(n) if n.kind() == "nested_namespace_specifier" => {
                        let mut cursor = n.walk();
                        inner.namespace.extend(
                            n.named_children(&mut cursor)
                                .map(|part| cx.text(part).to_owned()),
                        );
                    }
                    Some(n) => inner.namespace.push(cx.text(n).to_owned()),
                    // An anonymous namespace: kept as an empty segment, since it changes the
                    // symbol (internal linkage) even though it has no name.
                    None => inner.namespace.push(String::new()),
                }
                if let Some(body) = node.child_by_field_name("body") {
                    self.items(cx, body, &inner, model);
                }
            }
            // Every preprocessor branch is read: the model does not know which one is taken.
            // Error nodes are searched too, since recovery can wrap good definitions in them.
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" | "ERROR" => self.items(cx, node, scope, model),
            "struct_specifier" | "class_specifier" => {
                structs::from_specifier(cx, node, &[], &mut model.structs);
            }
            "type_definition" => {
                if let Some(ty) = node.child_by_field_name("type") {
                    let mut cursor = node.walk();
                    let aliases: Vec<String> = node
                        .children_by_field_name("declarator", &mut cursor)
                        .filter(|d| d.kind() == "type_identifier")
                        .map(|d| cx.text(d).to_owned())
                        .collect();
                    structs::from_specifier(cx, ty, &aliases, &mut model.structs);
                }
            }
            _ => {}
        }
    }
}

/// A definition replaces an earlier declaration of the same kernel, and a declaration after
/// the definition adds nothing.
fn add_kernel(kernels: &mut Vec<KernelDecl>, k: KernelDecl) {
    let same = |o: &KernelDecl| {
        o.name == k.name
            && o.namespace == k.namespace
            && o.params
                .iter()
                .map(|p| &p.ty)
                .eq(k.params.iter().map(|p| &p.ty))
    };
    match kernels.iter().position(same) {
        Some(i) if k.is_definition && !kernels[i].is_definition => kernels[i] = k,
        Some(_) => {}
        None => kernels.push(k),
    }
}

/// Whether a declaration node (a parameter, field or variable) carries `const`, `__restrict__`.
pub(super) fn has_qualifier(cx: &Cx, node: Node, qualifier: &str) -> bool {
    let mut cursor = node.walk();
    let found = node
        .children(&mut cursor)
        .any(|c| c.kind() == "type_qualifier" && cx.text(c).trim() == qualifier);
    found
}

/// The type a `type` field names, before any declarator applies.
pub(super) fn base_type(cx: &Cx, ty: Node) -> CudaType {
    let text = collapse_ws(cx.text(ty));
    match ty.kind() {
        "primitive_type" if text == "void" => CudaType::Void,
        "primitive_type" | "type_identifier" | "qualified_identifier" => {
            match Scalar::from_name(&text) {
                Some(s) => CudaType::Scalar(s),
                None if ty.kind() == "primitive_type" => CudaType::Unknown(text),
                None => CudaType::Named(text),
            }
        }
        "sized_type_specifier" => {
            let words: Vec<&str> = text.split_whitespace().collect();
            Scalar::from_words(&words).map_or(CudaType::Unknown(text), CudaType::Scalar)
        }
        "struct_specifier" | "class_specifier" | "union_specifier" | "enum_specifier" => {
            match ty.child_by_field_name("name") {
                Some(n) => CudaType::Named(collapse_ws(cx.text(n))),
                None => CudaType::Unknown(text),
            }
        }
        "template_type" => CudaType::Named(text),
        _ => CudaType::Unknown(text),
    }
}

/// A declared entity: its full type, its name node, and whether the entity itself is `const`.
pub(super) struct Declared<'t> {
    pub ty: CudaType,
    pub name: Option<Node<'t>>,
    pub is_const: bool,
}

/// Applies a C declarator to a base type. C declarators read inside out: the outermost
/// declarator node is the operator nearest the base type, so each level wraps the type built
/// so far (`int *a[4]` is an array of four pointers; `float t[32][33]` an array of 32 rows).
pub(super) fn apply_declarator<'t>(
    cx: &Cx,
    base: CudaType,
    base_const: bool,
    declarator: Option<Node<'t>>,
) -> Declared<'t> {
    let (mut ty, mut is_const, mut next) = (base, base_const, declarator);
    while let Some(d) = next {
        match d.kind() {
            "identifier" | "field_identifier" | "type_identifier" => {
                return Declared {
                    ty,
                    name: Some(d),
                    is_const,
                };
            }
            "pointer_declarator" | "abstract_pointer_declarator" => {
                let const_pointer = has_qualifier(cx, d, "const");
                ty = CudaType::Pointer {
                    pointee: Box::new(ty),
                    pointee_const: is_const,
                    restrict: has_qualifier(cx, d, "__restrict__")
                        || has_qualifier(cx, d, "__restrict")
                        || has_qualifier(cx, d, "restrict"),
                    const_pointer,
                };
                is_const = const_pointer;
                next = d.child_by_field_name("declarator");
            }
            "reference_declarator" | "abstract_reference_declarator" => {
                let rvalue = cx.text(d).trim_start().starts_with("&&");
                ty = CudaType::Reference {
                    referent: Box::new(ty),
                    referent_const: is_const,
                    rvalue,
                };
                is_const = false;
                next = d.named_child(0);
            }
            "array_declarator" | "abstract_array_declarator" => {
                ty = CudaType::Array {
                    elem: Box::new(ty),
                    len: d
                        .child_by_field_name("size")
                        .map(|s| collapse_ws(cx.text(s))),
                };
                next = d.child_by_field_name("declarator");
            }
            "parenthesized_declarator"
            | "abstract_parenthesized_declarator"
            | "attributed_declarator"
            | "init_declarator" => {
                next = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0));
            }
            // Function pointers and anything rarer: kept as written, name still found.
            _ => {
                return Declared {
                    ty: CudaType::Unknown(format!("{ty} {}", collapse_ws(cx.text(d)))),
                    name: find_identifier(d),
                    is_const,
                };
            }
        }
    }
    Declared {
        ty,
        name: None,
        is_const,
    }
}

fn find_identifier(n: Node) -> Option<Node> {
    if n.kind() == "identifier" {
        return Some(n);
    }
    let mut cursor = n.walk();
    let children: Vec<Node> = n.named_children(&mut cursor).collect();
    children.into_iter().find_map(find_identifier)
}

/// Text with every run of whitespace (newlines and line continuations included) made one space.
pub(super) fn collapse_ws(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '\\')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn collect_errors(cx: &Cx, tree: &Tree, kernel_macros: &[macros::MacroKernel]) -> Vec<SyntaxIssue> {
    let macros: Vec<&str> = kernel_macros.iter().map(|m| m.name.as_str()).collect();
    let mut out = Vec::new();
    // An explicit stack of (node, enclosing function): deep trees must not overflow the stack.
    let mut stack: Vec<(Node, Option<&str>)> = vec![(tree.root_node(), None)];
    while let Some((n, func)) = stack.pop() {
        if !n.has_error() && !n.is_missing() {
            continue;
        }
        let func = if n.kind() == "function_definition" {
            n.child_by_field_name("declarator")
                .and_then(|d| d.child_by_field_name("declarator"))
                .map(|d| cx.text(d))
                .or(func)
        } else {
            func
        };
        if n.is_error() || n.is_missing() {
            out.push(SyntaxIssue {
                location: cx.loc(n),
                message: error_message(cx, n, &macros),
                in_function: func.map(str::to_owned),
            });
        }
        if n.is_missing() {
            continue;
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        // Inside an error, report missing tokens but not nested errors a second time.
        let inside_error = n.is_error();
        for c in children.into_iter().rev() {
            if !(inside_error && c.is_error()) {
                stack.push((c, func));
            }
        }
    }
    out
}

fn error_message(cx: &Cx, n: Node, macros: &[&str]) -> String {
    if n.is_missing() {
        return format!("missing `{}`", n.kind());
    }
    let snippet: String = collapse_ws(cx.text(n)).chars().take(40).collect();
    let first = cx
        .text(n)
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next();
    let before = n.prev_sibling().map(|p| cx.text(p).trim());
    if let Some(m) = first.filter(|w| macros.contains(w)) {
        format!(
            "unexpected `{snippet}`; this looks like a use of macro `{m}`, which the parser \
             does not expand"
        )
    } else if let Some(m) = before.filter(|w| macros.contains(w)) {
        format!("unexpected `{snippet}` after macro `{m}`, which the parser does not expand")
    } else {
        format!("unexpected `{snippet}`")
    }
}
