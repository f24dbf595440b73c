//! Structs a kernel may take by value, and their C layout, so a `#[repr(C)]` Rust struct
//! passed in their place can be size-checked.

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::parse::{apply_declarator, base_type, has_qualifier, Cx};
use super::types::CudaType;
use super::{Location, SourceModel};

/// A `struct X { ... }` (or `typedef struct { ... } X`) with a body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StructDecl {
    pub name: String,
    /// Non-static data members in declaration order. A bit-field or a base class appears as
    /// an [`CudaType::Unknown`] entry so that no layout is claimed for it.
    pub fields: Vec<(String, CudaType)>,
    pub location: Location,
}

/// How deep struct members may nest before the layout gives up; guards against a struct that
/// (through typedef confusion in the model) contains itself.
const MAX_NESTING: u32 = 16;

impl StructDecl {
    /// Size and alignment in bytes under the C layout rules nvcc applies (each field at the
    /// next multiple of its alignment, the size rounded up to the largest alignment), or `None`
    /// when a field's layout is unknown: a template parameter, a bit-field, a type defined in
    /// another file, an array with a non-literal length. An explicit `__align__`/`alignas` on
    /// the struct is not modelled.
    pub fn size_align(&self, model: &SourceModel) -> Option<(u32, u32)> {
        self.layout(model, 0)
    }

    fn layout(&self, model: &SourceModel, depth: u32) -> Option<(u32, u32)> {
        if depth > MAX_NESTING {
            return None;
        }
        let named = |n: &str| model.struct_named(n)?.layout(model, depth + 1);
        let (mut offset, mut align) = (0u32, 1u32);
        for (_, ty) in &self.fields {
            let (s, a) = ty.layout(&named)?;
            offset = offset.checked_next_multiple_of(a)?.checked_add(s)?;
            align = align.max(a);
        }
        // An empty struct has size 1 in C++.
        Some((offset.max(1).checked_next_multiple_of(align)?, align))
    }
}

/// Records the struct a type specifier defines, if it has a body, under its tag and under each
/// typedef name in `aliases`.
pub(super) fn from_specifier(cx: &Cx, spec: Node, aliases: &[String], out: &mut Vec<StructDecl>) {
    if !matches!(spec.kind(), "struct_specifier" | "class_specifier") {
        return;
    }
    let Some(body) = spec.child_by_field_name("body") else {
        return;
    };
    let mut fields = Vec::new();
    let mut cursor = spec.walk();
    if spec
        .named_children(&mut cursor)
        .any(|c| c.kind() == "base_class_clause")
    {
        fields.push((
            "(base class)".to_owned(),
            CudaType::Unknown("base class".to_owned()),
        ));
    }
    let mut cursor = body.walk();
    for f in body.named_children(&mut cursor) {
        if f.kind() != "field_declaration" {
            continue;
        }
        let mut c = f.walk();
        let is_static = f
            .children(&mut c)
            .any(|s| s.kind() == "storage_class_specifier" && cx.text(s) == "static");
        let Some(ty) = f.child_by_field_name("type") else {
            continue;
        };
        if is_static {
            continue;
        }
        let base = base_type(cx, ty);
        let base_const = has_qualifier(cx, f, "const");
        let mut c = f.walk();
        let has_bitfield = f.children(&mut c).any(|s| s.kind() == "bitfield_clause");
        let mut c = f.walk();
        let declarators: Vec<Node> = f.children_by_field_name("declarator", &mut c).collect();
        for d in declarators {
            let declared = apply_declarator(cx, base.clone(), base_const, Some(d));
            let Some(name) = declared.name else { continue };
            let ty = if has_bitfield {
                CudaType::Unknown(format!("bit-field of {}", declared.ty))
            } else {
                declared.ty
            };
            fields.push((cx.text(name).to_owned(), ty));
        }
    }
    let location = cx.loc(spec);
    let tag = spec
        .child_by_field_name("name")
        .map(|n| cx.text(n).to_owned());
    for name in tag.into_iter().chain(aliases.iter().cloned()) {
        if out.iter().any(|s| s.name == name) {
            continue;
        }
        out.push(StructDecl {
            name,
            fields: fields.clone(),
            location: location.clone(),
        });
    }
}
