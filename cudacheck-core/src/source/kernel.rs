//! One kernel as the source declares it: name, scope, template parameters, parameters,
//! `__launch_bounds__` and `__shared__` arrays.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::parse::{apply_declarator, base_type, collapse_ws, has_qualifier, Cx, Scope};
use super::types::{parse_int_literal, CudaType};
use super::Location;

/// A `__global__` function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelDecl {
    /// The plain name, as `cuModuleGetFunction` takes it for an `extern "C"` kernel.
    pub name: String,
    /// Whether it has C linkage (unmangled symbol): inside `extern "C"` or declared with it.
    pub extern_c: bool,
    /// Enclosing namespaces, outermost first; an anonymous namespace is an empty string.
    pub namespace: Vec<String>,
    /// Whether this is a definition (has a body) rather than only a declaration.
    pub is_definition: bool,
    /// `template<...>` parameters; empty for a non-template kernel.
    pub template_params: Vec<TemplateParam>,
    pub params: Vec<ParamDecl>,
    pub launch_bounds: Option<LaunchBoundsDecl>,
    /// Where the kernel's name is.
    pub location: Location,
    /// The whole definition or declaration, `template<...>` included.
    pub definition_range: Range<usize>,
    /// The body `{ ... }`, for a definition.
    pub body_range: Option<Range<usize>>,
    /// The signature as written, whitespace collapsed to single spaces, for notes.
    pub declaration_text: String,
    /// `__shared__` variables declared in the body, in source order.
    pub shared_arrays: Vec<SharedArray>,
    /// Template arguments of explicit instantiations in the file
    /// (`template __global__ void scale<float>(...);` gives `"float"`).
    pub explicit_instantiations: Vec<String>,
    /// The object-like macro that stands for `__global__` in its declaration, if one does
    /// (`#define KERNEL extern "C" __global__`).
    pub prefix_macro: Option<String>,
}

impl KernelDecl {
    /// `ns::inner::name`; an anonymous namespace reads `(anonymous namespace)`.
    pub fn qualified_name(&self) -> String {
        let mut parts: Vec<&str> = self
            .namespace
            .iter()
            .map(|n| {
                if n.is_empty() {
                    "(anonymous namespace)"
                } else {
                    n
                }
            })
            .collect();
        parts.push(&self.name);
        parts.join("::")
    }

    /// Whether it is a template.
    pub fn is_template(&self) -> bool {
        !self.template_params.is_empty()
    }

    /// The parameter named `name`.
    pub fn param(&self, name: &str) -> Option<&ParamDecl> {
        self.params.iter().find(|p| p.name.as_deref() == Some(name))
    }
}

/// One parameter of a kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamDecl {
    /// `None` for an unnamed parameter (`float*`).
    pub name: Option<String>,
    pub ty: CudaType,
    /// Whether the parameter itself is `const` (`const int n`, `float* const p`); it does not
    /// change what is passed.
    pub is_const: bool,
    /// Where the parameter's declaration starts.
    pub location: Location,
    /// The declaration as written, whitespace collapsed.
    pub text: String,
}

/// A `template<...>` parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateParam {
    pub name: String,
    pub kind: TemplateParamKind,
    /// `typename... Ts` or `int... Ns`.
    pub variadic: bool,
    /// The default argument as written.
    pub default: Option<String>,
}

/// What a template parameter stands for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TemplateParamKind {
    /// `typename T` / `class T`.
    Type,
    /// `int N`: a value, with its type's C spelling.
    Value(String),
    /// `template<class> class C`.
    Template,
}

/// `__launch_bounds__(max_threads, min_blocks, max_blocks_per_cluster)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchBoundsDecl {
    /// The first argument as written (a literal, a macro or a template parameter).
    pub max_threads: String,
    pub min_blocks: Option<String>,
    /// The third argument (sm_90 and later).
    pub max_blocks_per_cluster: Option<String>,
    /// `max_threads` when it is an integer literal.
    pub max_threads_value: Option<u32>,
    /// `min_blocks` when it is an integer literal.
    pub min_blocks_value: Option<u32>,
}

/// A `__shared__` variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedArray {
    pub name: String,
    /// The element type (the variable's type for a scalar).
    pub elem: CudaType,
    /// Each dimension's extent as written, outermost first (`tile[32][33]` gives `32`, `33`);
    /// `None` for `[]`; empty for a scalar.
    pub dims: Vec<Option<String>>,
    /// `extern __shared__`: dynamic shared memory, sized at launch.
    pub is_extern: bool,
    pub location: Location,
}

/// The kernel `node` (a `function_definition` or `declaration`) declares, if it is one.
pub(super) fn from_node(
    cx: &Cx,
    node: Node,
    template: Option<Node>,
    scope: &Scope,
) -> Option<KernelDecl> {
    let mut cursor = node.walk();
    let has_global = node.children(&mut cursor).any(|c| c.kind() == "__global__");
    let stray_global = stray_global_before(node);
    let prefix_macro = node
        .child_by_field_name("type")
        .filter(|t| t.kind() == "type_identifier")
        .map(|t| cx.text(t))
        .filter(|t| cx.prefix_macros.contains_key(*t));
    if !has_global && prefix_macro.is_none() && stray_global.is_none() {
        return None;
    }
    let mut cursor = node.walk();
    let func = node
        .children_by_field_name("declarator", &mut cursor)
        .find(|d| d.kind() == "function_declarator")?;
    let name_node = func.child_by_field_name("declarator")?;
    let mut namespace = scope.namespace.clone();
    let name = match name_node.kind() {
        "identifier" => cx.text(name_node).to_owned(),
        "template_function" => cx.text(name_node.child_by_field_name("name")?).to_owned(),
        // `void ns::k(...) {}`: defined outside its namespace.
        "qualified_identifier" => {
            let full = collapse_ws(cx.text(name_node));
            let mut parts: Vec<String> = full.split("::").map(|p| p.trim().to_owned()).collect();
            let last = parts.pop()?;
            namespace.extend(parts.into_iter().filter(|p| !p.is_empty()));
            last
        }
        _ => return None,
    };
    let body = node.child_by_field_name("body");
    let outer = template.unwrap_or(node);
    let sig_end = body.map_or(node.end_byte(), |b| b.start_byte());
    let sig_start = [
        Some(outer.start_byte()),
        scope.prefix_start,
        stray_global.map(|g| g.start_byte()),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(outer.start_byte());
    let declaration_text = cx
        .src
        .get(sig_start..sig_end)
        .map(|s| collapse_ws(s).trim_end_matches(';').trim_end().to_owned())
        .unwrap_or_default();
    Some(KernelDecl {
        name,
        extern_c: scope.extern_c || prefix_macro.is_some_and(|m| cx.prefix_macros[m]),
        namespace,
        is_definition: body.is_some(),
        template_params: template
            .and_then(|t| t.child_by_field_name("parameters"))
            .map(|p| template_params(cx, p))
            .unwrap_or_default(),
        params: func
            .child_by_field_name("parameters")
            .map(|p| params(cx, p))
            .unwrap_or_default(),
        launch_bounds: launch_bounds(cx, node),
        location: cx.loc(name_node),
        definition_range: sig_start..outer.end_byte(),
        body_range: body.map(|b| b.byte_range()),
        declaration_text,
        shared_arrays: body.map(|b| shared_in(cx, b)).unwrap_or_default(),
        explicit_instantiations: Vec::new(),
        prefix_macro: prefix_macro.map(str::to_owned),
    })
}

/// The `__global__` of a definition that error recovery attached to the node before it. This
/// happens after a macro invocation with no `;` (`DEFINE_KERNEL(float)` on the line before
/// `__global__ void k(...)`): the parser cannot know the invocation ended, and folds the
/// `__global__` into its error node.
fn stray_global_before(node: Node) -> Option<Node> {
    let prev = node.prev_sibling().filter(|p| p.is_error())?;
    let mut last = prev;
    while let Some(c) = last
        .child_count()
        .checked_sub(1)
        .and_then(|i| last.child(i))
    {
        last = c;
    }
    (last.kind() == "__global__").then_some(last)
}

fn params(cx: &Cx, list: Node) -> Vec<ParamDecl> {
    let mut cursor = list.walk();
    let mut out: Vec<ParamDecl> = list
        .named_children(&mut cursor)
        .filter(|p| p.kind() != "comment")
        .map(|p| {
            let declared = match p.child_by_field_name("type") {
                Some(ty) => apply_declarator(
                    cx,
                    base_type(cx, ty),
                    has_qualifier(cx, p, "const"),
                    p.child_by_field_name("declarator"),
                ),
                // `...` or something the grammar could not type.
                None => {
                    apply_declarator(cx, CudaType::Unknown(collapse_ws(cx.text(p))), false, None)
                }
            };
            ParamDecl {
                name: declared.name.map(|n| cx.text(n).to_owned()),
                ty: declared.ty,
                is_const: declared.is_const,
                location: cx.loc(p),
                text: collapse_ws(cx.text(p)),
            }
        })
        .collect();
    // `k(void)` takes no parameters.
    if let [only] = out.as_slice() {
        if only.ty == CudaType::Void && only.name.is_none() {
            out.clear();
        }
    }
    out
}

fn template_params(cx: &Cx, list: Node) -> Vec<TemplateParam> {
    let mut cursor = list.walk();
    let children: Vec<Node> = list.named_children(&mut cursor).collect();
    children
        .into_iter()
        .filter_map(|p| {
            let kind = p.kind();
            let variadic = kind.starts_with("variadic");
            let default = p
                .child_by_field_name("default_type")
                .or_else(|| p.child_by_field_name("default_value"))
                .map(|d| collapse_ws(cx.text(d)));
            let (name, kind) = match kind {
                "type_parameter_declaration"
                | "optional_type_parameter_declaration"
                | "variadic_type_parameter_declaration" => {
                    let name = p.child_by_field_name("name").or_else(|| {
                        let mut c = p.walk();
                        let found = p
                            .named_children(&mut c)
                            .find(|n| n.kind() == "type_identifier");
                        found
                    })?;
                    (cx.text(name).to_owned(), TemplateParamKind::Type)
                }
                "parameter_declaration"
                | "optional_parameter_declaration"
                | "variadic_parameter_declaration" => {
                    let d = apply_declarator(
                        cx,
                        base_type(cx, p.child_by_field_name("type")?),
                        has_qualifier(cx, p, "const"),
                        p.child_by_field_name("declarator"),
                    );
                    let name = d.name.map(|n| cx.text(n).to_owned()).unwrap_or_default();
                    (name, TemplateParamKind::Value(d.ty.to_string()))
                }
                "template_template_parameter_declaration" => {
                    let mut c = p.walk();
                    let inner = p.named_children(&mut c).last()?;
                    let name = inner.child_by_field_name("name").or_else(|| {
                        let mut c2 = inner.walk();
                        let found = inner
                            .named_children(&mut c2)
                            .find(|n| n.kind() == "type_identifier");
                        found
                    })?;
                    (cx.text(name).to_owned(), TemplateParamKind::Template)
                }
                _ => return None,
            };
            Some(TemplateParam {
                name,
                kind,
                variadic,
                default,
            })
        })
        .collect()
}

fn launch_bounds(cx: &Cx, node: Node) -> Option<LaunchBoundsDecl> {
    let mut cursor = node.walk();
    let lb = node
        .children(&mut cursor)
        .find(|c| c.kind() == "launch_bounds")?;
    let mut cursor = lb.walk();
    let args: Vec<String> = lb
        .named_children(&mut cursor)
        .filter(|a| a.kind() != "comment")
        .map(|a| collapse_ws(cx.text(a)))
        .collect();
    let value = |s: Option<&String>| {
        s.and_then(|s| parse_int_literal(s))
            .and_then(|v| u32::try_from(v).ok())
    };
    Some(LaunchBoundsDecl {
        max_threads_value: value(args.first()),
        min_blocks_value: value(args.get(1)),
        max_threads: args.first()?.clone(),
        min_blocks: args.get(1).cloned(),
        max_blocks_per_cluster: args.get(2).cloned(),
    })
}

/// `template __global__ void k<float>(...);` -> (`k`, `float`).
pub(super) fn instantiation(cx: &Cx, node: Node) -> Option<(String, String)> {
    let mut cursor = node.walk();
    if !node.children(&mut cursor).any(|c| c.kind() == "__global__") {
        return None;
    }
    let func = node.child_by_field_name("declarator")?;
    let tf = func.child_by_field_name("declarator")?;
    if tf.kind() != "template_function" {
        return None;
    }
    let name = cx.text(tf.child_by_field_name("name")?).to_owned();
    let args = cx.text(tf.child_by_field_name("arguments")?);
    let args = args.trim().trim_start_matches('<').trim_end_matches('>');
    Some((name, collapse_ws(args)))
}

/// The `__shared__` variables anywhere in a kernel body (nested blocks included).
fn shared_in(cx: &Cx, body: Node) -> Vec<SharedArray> {
    let mut out = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if n.kind() == "declaration" {
            out.extend(shared_decls(cx, n));
            continue;
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// The variables a `declaration` node declares, if it is `__shared__`.
pub(super) fn shared_decls(cx: &Cx, decl: Node) -> Vec<SharedArray> {
    if !has_qualifier(cx, decl, "__shared__") {
        return Vec::new();
    }
    let Some(ty) = decl.child_by_field_name("type") else {
        return Vec::new();
    };
    let mut cursor = decl.walk();
    let is_extern = decl
        .children(&mut cursor)
        .any(|c| c.kind() == "storage_class_specifier" && cx.text(c) == "extern");
    let base = base_type(cx, ty);
    let base_const = has_qualifier(cx, decl, "const");
    let mut cursor = decl.walk();
    let declarators: Vec<Node> = decl
        .children_by_field_name("declarator", &mut cursor)
        .collect();
    declarators
        .into_iter()
        .filter_map(|d| {
            let declared = apply_declarator(cx, base.clone(), base_const, Some(d));
            let name = declared.name?;
            let mut dims = Vec::new();
            let mut elem = declared.ty;
            while let CudaType::Array { elem: inner, len } = elem {
                dims.push(len);
                elem = *inner;
            }
            Some(SharedArray {
                name: cx.text(name).to_owned(),
                elem,
                dims,
                is_extern,
                location: cx.loc(name),
            })
        })
        .collect()
}
