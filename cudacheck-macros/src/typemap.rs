//! The Rust side of a kernel parameter, and how it corresponds to a CUDA parameter type.
//!
//! The Rust types a kernel declaration may use are deliberately few: the cudarc buffers that
//! carry a device pointer (`&CudaSlice<T>`, `&CudaView<T>` for `const T*`; `&mut CudaSlice<T>`,
//! `&mut CudaViewMut<T>` for `T*`), the scalar types with an exact CUDA counterpart, and
//! `#[repr(C)]` structs passed by value. Types are recognised by the last path segment so that
//! `CudaSlice<f32>`, `cudarc::driver::CudaSlice<f32>` and `cudacheck::cudarc::driver::CudaSlice<f32>`
//! are all the same type; the compiler then checks that the name resolves to the real type,
//! because the wrapper passes the value to the runtime's typed `Launch::arg`.

use cudacheck_core::source::{CudaType, Scalar};
use syn::{GenericArgument, PathArguments, Type};

/// A Rust scalar type with an exact CUDA counterpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RustScalar {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Isize,
    Usize,
    F32,
    F64,
    F16,
    Bf16,
}

impl RustScalar {
    /// The spelling [`Scalar::rust_equivalent`] uses for the same type, so the two compare.
    pub fn name(self) -> &'static str {
        match self {
            RustScalar::Bool => "bool",
            RustScalar::I8 => "i8",
            RustScalar::I16 => "i16",
            RustScalar::I32 => "i32",
            RustScalar::I64 => "i64",
            RustScalar::U8 => "u8",
            RustScalar::U16 => "u16",
            RustScalar::U32 => "u32",
            RustScalar::U64 => "u64",
            RustScalar::Isize => "isize",
            RustScalar::Usize => "usize",
            RustScalar::F32 => "f32",
            RustScalar::F64 => "f64",
            RustScalar::F16 => "half::f16",
            RustScalar::Bf16 => "half::bf16",
        }
    }

    /// `f16` and `half::f16` are both accepted; only the last segment decides. A one-segment
    /// `f16` is Rust's own unstable primitive on nightly, which has the same layout as
    /// `half::f16`, so accepting it is sound either way.
    fn from_type(ty: &Type) -> Option<RustScalar> {
        let Type::Path(p) = ty else { return None };
        if p.qself.is_some() {
            return None;
        }
        let last = p.path.segments.last()?;
        if !last.arguments.is_none() {
            return None;
        }
        Some(match last.ident.to_string().as_str() {
            "bool" => RustScalar::Bool,
            "i8" => RustScalar::I8,
            "i16" => RustScalar::I16,
            "i32" => RustScalar::I32,
            "i64" => RustScalar::I64,
            "u8" => RustScalar::U8,
            "u16" => RustScalar::U16,
            "u32" => RustScalar::U32,
            "u64" => RustScalar::U64,
            "isize" => RustScalar::Isize,
            "usize" => RustScalar::Usize,
            "f32" => RustScalar::F32,
            "f64" => RustScalar::F64,
            "f16" => RustScalar::F16,
            "bf16" => RustScalar::Bf16,
            _ => return None,
        })
    }
}

/// Which cudarc buffer type carries a device pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    Slice,
    View,
    ViewMut,
}

/// What a Rust parameter type is, as far as the kernel signature is concerned.
#[derive(Clone, Debug)]
pub enum RustTy {
    /// `&CudaSlice<T>` and friends: a device pointer.
    Pointer {
        mutable: bool,
        buffer: Buffer,
        elem: Box<Type>,
        elem_scalar: Option<RustScalar>,
    },
    /// A buffer taken by value (`CudaSlice<f32>`): the kernel would get the buffer's ownership.
    BufferByValue,
    /// A scalar by value.
    Scalar(RustScalar),
    /// Any other path type by value: a `#[repr(C)]` struct, checked by size and alignment.
    Struct,
    /// A reference to something that is not a cudarc buffer, a raw pointer, a slice, ...
    Unsupported,
}

impl RustTy {
    pub fn classify(ty: &Type) -> RustTy {
        match ty {
            Type::Reference(r) => match buffer_of(&r.elem) {
                Some((buffer, elem)) => RustTy::Pointer {
                    mutable: r.mutability.is_some(),
                    buffer,
                    elem_scalar: RustScalar::from_type(&elem),
                    elem: Box::new(elem),
                },
                None => RustTy::Unsupported,
            },
            Type::Paren(p) => RustTy::classify(&p.elem),
            Type::Group(g) => RustTy::classify(&g.elem),
            Type::Path(_) => {
                if let Some(s) = RustScalar::from_type(ty) {
                    RustTy::Scalar(s)
                } else if buffer_of(ty).is_some() {
                    RustTy::BufferByValue
                } else {
                    RustTy::Struct
                }
            }
            _ => RustTy::Unsupported,
        }
    }
}

/// `CudaSlice<T>` (any path ending so) -> its buffer kind and `T`.
fn buffer_of(ty: &Type) -> Option<(Buffer, Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    let buffer = match last.ident.to_string().as_str() {
        // `cudacheck::TrackedSlice` (a buffer whose unwritten memory init checking follows)
        // is passed as a `CudaSlice` is.
        "CudaSlice" | "TrackedSlice" => Buffer::Slice,
        "CudaView" => Buffer::View,
        "CudaViewMut" => Buffer::ViewMut,
        _ => return None,
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let elem = args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })?;
    Some((buffer, elem))
}

/// The Rust type a CUDA parameter type takes, as text for messages (`&CudaSlice<f32>`), or
/// `None` when no Rust type can be named (an unknown CUDA type).
pub fn expected_rust(ty: &CudaType) -> Option<String> {
    match ty {
        CudaType::Scalar(s) => Some(s.rust_equivalent().to_string()),
        CudaType::Pointer {
            pointee,
            pointee_const,
            ..
        } => {
            let elem = match pointee.as_ref() {
                CudaType::Scalar(s) => s.rust_equivalent().to_string(),
                CudaType::Named(n) => n.clone(),
                _ => "T".to_string(),
            };
            Some(if *pointee_const {
                format!("&CudaSlice<{elem}>")
            } else {
                format!("&mut CudaSlice<{elem}>")
            })
        }
        CudaType::Named(n) => Some(n.clone()),
        _ => None,
    }
}

/// The alternative buffer types for a pointer, for the "expected" part of messages.
pub fn accepted_buffers(pointee_const: bool, elem: &str) -> String {
    if pointee_const {
        format!("`&CudaSlice<{elem}>` or `&CudaView<{elem}>`")
    } else {
        format!("`&mut CudaSlice<{elem}>` or `&mut CudaViewMut<{elem}>`")
    }
}

/// Whether a Rust scalar is exactly the CUDA scalar.
pub fn scalar_matches(rust: RustScalar, cuda: &Scalar) -> bool {
    rust.name() == cuda.rust_equivalent()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(s: &str) -> RustTy {
        RustTy::classify(&syn::parse_str::<Type>(s).unwrap())
    }

    #[test]
    fn recognises_buffers_by_their_last_segment() {
        match classify("&mut cudarc::driver::CudaSlice<f32>") {
            RustTy::Pointer {
                mutable: true,
                buffer: Buffer::Slice,
                elem_scalar: Some(RustScalar::F32),
                ..
            } => {}
            other => panic!("{other:?}"),
        }
        match classify("&CudaView<'_, half::bf16>") {
            RustTy::Pointer {
                mutable: false,
                buffer: Buffer::View,
                elem_scalar: Some(RustScalar::Bf16),
                ..
            } => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scalars_structs_and_the_rest() {
        assert!(matches!(classify("i32"), RustTy::Scalar(RustScalar::I32)));
        assert!(matches!(
            classify("half::f16"),
            RustTy::Scalar(RustScalar::F16)
        ));
        assert!(matches!(classify("Particle"), RustTy::Struct));
        assert!(matches!(classify("CudaSlice<f32>"), RustTy::BufferByValue));
        assert!(matches!(classify("&[f32]"), RustTy::Unsupported));
        assert!(matches!(classify("*const f32"), RustTy::Unsupported));
    }
}
