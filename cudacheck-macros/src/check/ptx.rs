//! The Rust signature against a PTX kernel's parameter list (`ptx_file = ..`, `ptx = ..`).
//!
//! PTX keeps less than CUDA source: each parameter's size and alignment, and (from how the
//! kernel uses it, `cudacheck_core::ptx_entry`) whether it is a global pointer. So the rules
//! are: the same number of parameters; each Rust parameter as many bytes as the PTX's; a
//! buffer where the kernel dereferences a pointer, and a value where it uses the parameter
//! only as a number. Element types and `const` are not in PTX and cannot be checked.

use cudacheck_core::{find_entry, ptx_entries, ParamUse, PtxEntry};

use super::read;
use crate::model::{Errors, Model, SourceSpec};
use crate::typemap::{RustScalar, RustTy};

/// Bytes the Rust parameter takes in the kernel's parameter buffer, when the macro can tell.
fn rust_bytes(kind: &RustTy) -> Option<u32> {
    match kind {
        RustTy::Pointer { .. } => Some(8),
        RustTy::Scalar(s) => Some(match s {
            RustScalar::Bool | RustScalar::I8 | RustScalar::U8 => 1,
            RustScalar::I16 | RustScalar::U16 | RustScalar::F16 | RustScalar::Bf16 => 2,
            RustScalar::I32 | RustScalar::U32 | RustScalar::F32 => 4,
            RustScalar::I64
            | RustScalar::U64
            | RustScalar::F64
            | RustScalar::Isize
            | RustScalar::Usize => 8,
        }),
        _ => None,
    }
}

/// The PTX text and a label for messages, or why there is none (reported).
fn load(m: &Model, errors: &mut Errors) -> Option<(String, String)> {
    match m.source.as_ref()? {
        SourceSpec::PtxInline { lit } => Some((lit.value(), "<inline PTX>".to_string())),
        SourceSpec::PtxFile { lit, path } => match read(path) {
            Ok(t) => Some((t, lit.value())),
            Err(why) => {
                errors.spanned(
                    lit,
                    format!(
                        "cannot read PTX `{}`: {why}\n  note: relative paths start at the \
                         directory of the crate's Cargo.toml (CARGO_MANIFEST_DIR); for a PTX \
                         file a build script writes, use `source`-less `Kernel::from_ptx` at run \
                         time, or point `ptx_file` at where the build script puts it",
                        lit.value()
                    ),
                );
                None
            }
        },
        _ => None,
    }
}

// A kernel shipped as PTX is launched through its parameter list: a Rust signature that
// disagrees with it in count, size or pointer-ness passes garbage to the kernel.
pub fn check_ptx_signature(m: &Model, errors: &mut Errors) {
    let Some((text, label)) = load(m, errors) else {
        return;
    };
    let source_tokens = match m.source.as_ref() {
        Some(SourceSpec::PtxFile { lit, .. } | SourceSpec::PtxInline { lit }) => lit.clone(),
        _ => return,
    };
    let entries = match ptx_entries(&text) {
        Ok(e) => e,
        Err(e) => {
            errors.spanned(
                &source_tokens,
                format!("`{label}` is not PTX cudacheck can read: {e}"),
            );
            return;
        }
    };
    let name = m.cuda_name();
    let Some(entry) = find_entry(&entries, &name) else {
        let list: Vec<String> = entries.iter().map(|e| format!("`{}`", e.name)).collect();
        errors.spanned(
            m.name_tokens(),
            format!(
                "`{label}` has no kernel `{name}`; its kernels: {}. Name one with \
                 `name = \"...\"` (its symbol, or its C++ name such as `scale<float>`)",
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join(", ")
                }
            ),
        );
        return;
    };
    check_count(m, entry, &label, errors);
    for (i, (p, slot)) in m.params.iter().zip(&entry.params).enumerate() {
        let what = slot
            .name
            .as_ref()
            .map_or(format!("argument {i}"), |n| format!("parameter `{n}`"));
        if let Some(bytes) = rust_bytes(&p.kind) {
            if bytes != slot.size {
                errors.spanned(
                    &p.ty,
                    format!(
                        "parameter {i} (`{}`) takes {bytes} bytes in Rust, but the PTX kernel's \
                         {what} is {} bytes (`{label}`)",
                        p.ident, slot.size
                    ),
                );
                continue;
            }
        }
        match (&p.kind, slot.used_as) {
            (RustTy::Scalar(_), ParamUse::Pointer) => errors.spanned(
                &p.ty,
                format!(
                    "parameter {i} (`{}`) is a value in Rust, but the PTX kernel uses its {what} \
                     as a pointer to global memory: pass a buffer (`&CudaSlice<T>`, or \
                     `&mut CudaSlice<T>` for one it writes)",
                    p.ident
                ),
            ),
            (RustTy::Pointer { .. }, ParamUse::Value) => errors.spanned(
                &p.ty,
                format!(
                    "parameter {i} (`{}`) is a buffer in Rust, but the PTX kernel uses its {what} \
                     only as a number, never as an address: pass a value of {} bytes",
                    p.ident, slot.size
                ),
            ),
            _ => {}
        }
    }
}

// The launch passes exactly one value per PTX parameter.
fn check_count(m: &Model, entry: &PtxEntry, label: &str, errors: &mut Errors) {
    if m.params.len() != entry.params.len() {
        errors.spanned(
            &m.sig.inputs,
            format!(
                "the Rust declaration has {} parameters, but the PTX kernel `{}` in `{label}` \
                 has {} ({})",
                m.params.len(),
                entry.name,
                entry.params.len(),
                entry
                    .params
                    .iter()
                    .map(|p| format!("{} bytes", p.size))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}
