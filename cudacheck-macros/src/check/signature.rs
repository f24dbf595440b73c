//! The Rust declaration against the CUDA kernel's parameters: count, order, type, mutability,
//! and the layout of structs passed by value.

use cudacheck_core::source::{vector_layout, CudaType, KernelDecl, ParamDecl, Scalar, SourceModel};
use syn::Type;

use super::{Checked, LayoutAssert, Loaded};
use crate::model::{type_text, Errors, Model, Param};
use crate::typemap::{accepted_buffers, scalar_matches, Buffer, RustTy};

const ACCEPTED: &str = "a kernel parameter is a device buffer (`&CudaSlice<T>`, `&CudaView<T>`, \
                        `&mut CudaSlice<T>`, `&mut CudaViewMut<T>`), a scalar (`i32`, `f32`, \
                        `half::f16`, ...) or a `#[repr(C)]` struct passed by value";

// Some Rust types can never be a kernel argument, whatever the CUDA side says: host memory,
// raw pointers, buffers moved into the launch, or a read-only view asked to be written. These
// are reported even when the CUDA declaration is not visible (macro-generated kernels).
pub fn check_rust_types(m: &Model, errors: &mut Errors) {
    for p in &m.params {
        if let Some(msg) = rust_type_problem(p) {
            errors.spanned(&p.ty, msg);
        }
    }
}

fn rust_type_problem(p: &Param) -> Option<String> {
    let found = type_text(&p.ty);
    match &p.kind {
        RustTy::Unsupported => {
            let hint = match &*p.ty {
                Type::Reference(r) if matches!(&*r.elem, Type::Slice(_)) || is_vec(&r.elem) => {
                    "\n  help: host memory cannot be passed to a kernel: copy it to the device \
                     (`stream.clone_htod(..)`) and pass the `CudaSlice`"
                }
                Type::Ptr(_) => {
                    "\n  help: raw pointers carry no length and no device, so nothing can be \
                     checked: pass the `CudaSlice` or a view of it"
                }
                _ => "",
            };
            Some(format!(
                "unsupported kernel parameter type `{found}`: {ACCEPTED}{hint}"
            ))
        }
        RustTy::BufferByValue => Some(format!(
            "`{found}` is taken by value, which would move the buffer into the launch: take a \
             reference, `&{found}` (or `&mut {found}` when the kernel writes to it)"
        )),
        RustTy::Pointer {
            mutable: true,
            buffer: Buffer::View,
            ..
        } => Some(format!(
            "`{found}`: a `CudaView` is read-only, so the kernel cannot write through it; use \
             `&mut CudaViewMut<..>` (from `slice.slice_mut(..)`) or `&mut CudaSlice<..>`"
        )),
        RustTy::Pointer {
            mutable: false,
            buffer: Buffer::ViewMut,
            ..
        } => Some(format!(
            "`{found}`: a shared reference to a `CudaViewMut` cannot be written through; take \
             `&mut CudaViewMut<..>` for a `T*` parameter, or pass a `&CudaView<..>` for a \
             `const T*` parameter"
        )),
        _ => None,
    }
}

fn is_vec(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

/// Whether [`check_rust_types`] already rejected this parameter (no second error for it).
fn rejected(p: &Param) -> bool {
    rust_type_problem(p).is_some()
}

// The declaration must match the kernel parameter for parameter: the launch passes exactly
// these bytes in this order, and a wrong type or count is silent memory corruption on the GPU.
pub fn check_signature(
    m: &Model,
    loaded: &Loaded,
    k: &KernelDecl,
    template_args: &[String],
    checked: &mut Checked,
    errors: &mut Errors,
) {
    let subs = substitutions(k, template_args);
    let types: Vec<CudaType> = k.params.iter().map(|p| substitute(&p.ty, &subs)).collect();
    check_param_count(m, loaded, k, &types, errors);
    for (i, rust) in m.params.iter().enumerate() {
        let Some((decl, cuda)) = k.params.get(i).zip(types.get(i)) else {
            checked.c_types.push(None);
            continue;
        };
        checked.c_types.push(Some(c_spelling(cuda)));
        if rejected(rust) {
            continue;
        }
        let note = format!(
            "\n  note: {}:{}: `{}`",
            loaded.label, decl.location.line, decl.text
        );
        match check_param_type(rust, cuda, &loaded.model) {
            Ok(Some(layout)) => checked.layouts.push(LayoutAssert {
                message: format!(
                    "`{}` must have the layout of the CUDA type `{}` ({} bytes, aligned to {}) that \
                     the kernel parameter `{}` has; make it `#[repr(C)]` with the same fields in \
                     the same order ({}:{})",
                    type_text(&layout.0),
                    layout.3,
                    layout.1,
                    layout.2,
                    decl.text,
                    loaded.label,
                    decl.location.line
                ),
                ty: layout.0,
                size: layout.1,
                align: layout.2,
            }),
            Ok(None) => {}
            Err(msg) => {
                let order = order_hint(rust, decl, k, i);
                errors.spanned(&rust.ty, format!("{msg}{note}{order}"));
            }
        }
    }
}

// A count mismatch points at what is extra (each extra Rust parameter) or at the parameter
// list when some are missing, and names the missing ones as the CUDA source spells them.
fn check_param_count(
    m: &Model,
    loaded: &Loaded,
    k: &KernelDecl,
    types: &[CudaType],
    errors: &mut Errors,
) {
    let (rust, cuda) = (m.params.len(), k.params.len());
    let note = format!(
        "\n  note: {}:{}: `{}`",
        loaded.label, k.location.line, k.declaration_text
    );
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if rust < cuda {
        let missing: Vec<String> = k.params[rust..]
            .iter()
            .zip(&types[rust..])
            .map(|(p, t)| {
                let name = p.name.as_deref().unwrap_or("_");
                match crate::typemap::expected_rust(t) {
                    Some(r) => format!("`{name}: {r}` (CUDA `{}`)", p.text),
                    None => format!("`{}`", p.text),
                }
            })
            .collect();
        errors.at(
            m.sig.paren_token.span.join(),
            format!(
                "the CUDA kernel `{}` takes {cuda} parameter{}, this declaration has {rust}: \
                 missing {}{note}",
                k.name,
                plural(cuda),
                missing.join(", ")
            ),
        );
    } else if rust > cuda {
        for extra in &m.params[cuda..] {
            errors.spanned(
                &extra.ident,
                format!(
                    "parameter `{}` has no counterpart: the CUDA kernel `{}` takes {cuda} \
                     parameter{}, this declaration has {rust}{note}",
                    extra.ident,
                    k.name,
                    plural(cuda)
                ),
            );
        }
    }
}

/// `Ok(Some((ty, size, align, c_name)))` when the Rust type must be layout-checked against a
/// CUDA struct or vector type; `Err(message)` on a mismatch.
fn check_param_type(
    rust: &Param,
    cuda: &CudaType,
    model: &SourceModel,
) -> Result<Option<(Type, u32, u32, String)>, String> {
    let found = type_text(&rust.ty);
    let mismatch = |expected: String, why: &str| {
        Err(format!(
            "mismatched kernel parameter type: expected {expected}, found `{found}`{why}"
        ))
    };
    match (cuda, &rust.kind) {
        (CudaType::Scalar(s), RustTy::Scalar(r)) if scalar_matches(*r, s) => Ok(None),
        (CudaType::Scalar(s), _) => mismatch(
            format!("`{}`", s.rust_equivalent()),
            &scalar_reason(s, &rust.kind),
        ),
        (
            CudaType::Pointer {
                pointee,
                pointee_const,
                ..
            },
            kind,
        ) => check_pointer(pointee, *pointee_const, kind, model, &found),
        (CudaType::Array { elem, .. }, kind) => {
            // An array parameter decays to a pointer to its element, as in C.
            check_pointer(elem, false, kind, model, &found)
        }
        (CudaType::Named(n), RustTy::Struct) => match layout_of(n, model) {
            Some((size, align)) => Ok(Some(((*rust.ty).clone(), size, align, n.clone()))),
            // A type from an included header: the runtime still checks the size against the
            // compiled kernel's parameter table.
            None => Ok(None),
        },
        (CudaType::Named(n), _) => mismatch(
            format!("a `#[repr(C)]` Rust struct laid out like `{n}`"),
            "\n  note: the kernel takes a struct by value",
        ),
        (CudaType::Reference { .. }, _) => Err(format!(
            "the CUDA parameter is a C++ reference, which a kernel cannot take (the host's \
             address means nothing on the device): change the kernel to take `{}` by value \
             or by pointer",
            c_spelling(cuda)
        )),
        // `auto`, function pointers, `long double`, `void`: nothing to compare with; the
        // runtime checks the size against the compiled kernel.
        _ => Ok(None),
    }
}

fn check_pointer(
    pointee: &CudaType,
    pointee_const: bool,
    kind: &RustTy,
    model: &SourceModel,
    found: &str,
) -> Result<Option<(Type, u32, u32, String)>, String> {
    let elem_name = match pointee {
        CudaType::Scalar(s) => s.rust_equivalent().to_string(),
        CudaType::Named(n) => format!("/* #[repr(C)] like `{n}` */ T"),
        _ => "T".to_string(),
    };
    let expected = accepted_buffers(pointee_const, &elem_name);
    let RustTy::Pointer {
        mutable,
        elem,
        elem_scalar,
        ..
    } = kind
    else {
        return Err(format!(
            "mismatched kernel parameter type: expected {expected}, found `{found}`\n  note: \
             the kernel takes a pointer{}",
            if pointee_const {
                " it only reads through"
            } else {
                " it writes through"
            }
        ));
    };
    if *mutable && pointee_const {
        return Err(format!(
            "mismatched mutability: expected {expected}, found `{found}`\n  note: the kernel \
             only reads through this `const` pointer; take a shared reference"
        ));
    }
    if !*mutable && !pointee_const {
        return Err(format!(
            "mismatched mutability: expected {expected}, found `{found}`\n  note: the pointer \
             is not `const`, so the kernel may write through it: take `&mut` (or make the \
             CUDA parameter `const` if the kernel only reads)"
        ));
    }
    match (pointee, elem_scalar) {
        (CudaType::Scalar(s), Some(r)) if scalar_matches(*r, s) => Ok(None),
        (CudaType::Scalar(s), _) => Err(format!(
            "mismatched element type: expected {expected}, found `{found}`\n  note: the \
             kernel's pointer is to `{}`, which is `{}` in Rust",
            s.c_name(),
            s.rust_equivalent()
        )),
        (CudaType::Named(n), None) => {
            Ok(layout_of(n, model).map(|(size, align)| ((**elem).clone(), size, align, n.clone())))
        }
        (CudaType::Named(n), Some(_)) => Err(format!(
            "mismatched element type: expected a buffer of a `#[repr(C)]` Rust type laid out \
             like `{n}`, found `{found}`"
        )),
        (CudaType::Pointer { .. }, _) => Err(format!(
            "the kernel takes a pointer to pointers (`{}*`), which cudacheck cannot check: \
             pass the inner buffers' device addresses in a `CudaSlice<u64>` and make the \
             kernel parameter `unsigned long long*`",
            c_spelling(pointee)
        )),
        // `void*` takes a buffer of anything; unknown pointees cannot be compared.
        _ => Ok(None),
    }
}

fn scalar_reason(s: &Scalar, kind: &RustTy) -> String {
    match kind {
        RustTy::Pointer { .. } => format!(
            "\n  note: the kernel takes `{}` by value, not a buffer",
            s.c_name()
        ),
        RustTy::Scalar(r) => format!(
            "\n  note: CUDA `{}` is {} bytes; `{}` has no implicit conversion at a kernel launch",
            s.c_name(),
            s.size_bytes(),
            r.name()
        ),
        _ => String::new(),
    }
}

/// Size and alignment of a named CUDA type: a struct in the file, or a builtin vector type.
fn layout_of(name: &str, model: &SourceModel) -> Option<(u32, u32)> {
    model
        .struct_named(name)
        .and_then(|s| s.size_align(model))
        .or_else(|| vector_layout(name))
}

// When the types disagree and the Rust name is another CUDA parameter's name, the likelier
// mistake is the order, and saying so saves a trip to the .cu file.
fn order_hint(rust: &Param, decl: &ParamDecl, k: &KernelDecl, index: usize) -> String {
    let rust_name = rust.ident.to_string();
    if decl.name.as_deref() == Some(rust_name.as_str()) {
        return String::new();
    }
    match k
        .params
        .iter()
        .position(|p| p.name.as_deref() == Some(rust_name.as_str()))
    {
        Some(j) if j != index => format!(
            "\n  help: the CUDA kernel has `{rust_name}` at position {} and `{}` here: are the \
             parameters in the wrong order?",
            j + 1,
            decl.name.as_deref().unwrap_or("_")
        ),
        _ => String::new(),
    }
}

/// Template type parameters bound to the types the kernel name gives.
fn substitutions(k: &KernelDecl, args: &[String]) -> Vec<(String, CudaType)> {
    k.template_params
        .iter()
        .zip(args)
        .map(|(p, a)| (p.name.clone(), type_from_text(a)))
        .collect()
}

/// A type written in a template argument (`float`, `unsigned int`, `__half`, `const float*`).
fn type_from_text(text: &str) -> CudaType {
    let text = text.trim();
    if let Some(inner) = text.strip_suffix('*') {
        let inner = inner.trim();
        let (pointee_const, inner) = match inner.strip_prefix("const ") {
            Some(rest) => (true, rest),
            None => (false, inner),
        };
        return CudaType::Pointer {
            pointee: Box::new(type_from_text(inner)),
            pointee_const,
            restrict: false,
            const_pointer: false,
        };
    }
    let words: Vec<&str> = text.split_whitespace().filter(|w| *w != "const").collect();
    let scalar = match words.as_slice() {
        [one] => Scalar::from_name(one),
        many => Scalar::from_words(many),
    };
    match scalar {
        Some(s) => CudaType::Scalar(s),
        None if text == "void" => CudaType::Void,
        None => CudaType::Named(words.join(" ")),
    }
}

fn substitute(ty: &CudaType, subs: &[(String, CudaType)]) -> CudaType {
    match ty {
        CudaType::Named(n) => subs
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| ty.clone()),
        CudaType::Pointer {
            pointee,
            pointee_const,
            restrict,
            const_pointer,
        } => CudaType::Pointer {
            pointee: Box::new(substitute(pointee, subs)),
            pointee_const: *pointee_const,
            restrict: *restrict,
            const_pointer: *const_pointer,
        },
        CudaType::Array { elem, len } => CudaType::Array {
            elem: Box::new(substitute(elem, subs)),
            len: len.clone(),
        },
        other => other.clone(),
    }
}

/// The C spelling the runtime's messages use: the pointee for a pointer, the type otherwise.
fn c_spelling(ty: &CudaType) -> String {
    match ty {
        CudaType::Pointer { pointee, .. } => pointee.to_string(),
        CudaType::Array { elem, .. } => elem.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_arguments_become_types() {
        assert_eq!(
            type_from_text("unsigned int"),
            CudaType::Scalar(Scalar::UnsignedInt)
        );
        assert_eq!(type_from_text("__half"), CudaType::Scalar(Scalar::Half));
        assert_eq!(type_from_text("float4"), CudaType::Named("float4".into()));
        assert_eq!(type_from_text("const float*").to_string(), "const float*");
    }

    #[test]
    fn substitution_reaches_through_pointers() {
        let t = CudaType::Pointer {
            pointee: Box::new(CudaType::Named("T".into())),
            pointee_const: true,
            restrict: true,
            const_pointer: false,
        };
        let subs = [("T".to_string(), CudaType::Scalar(Scalar::Half))];
        assert_eq!(
            substitute(&t, &subs).to_string(),
            "const __half* __restrict__"
        );
    }
}
