//! Stage 3: the model checked against the CUDA source and the hardware limits.
//!
//! Each rule is one small `check_*` function with its reason above it; every rule runs, and
//! every failure is collected, so that one build shows every mistake. What the expansion needs
//! from the source (the C spelling of each parameter, the layout assertions for structs passed
//! by value) is returned in [`Checked`].

mod compiled;
mod config;
mod ptx;
mod signature;

use std::path::Path;

use cudacheck_core::source::{parse_source, KernelDecl, SourceModel};
use syn::Type;

use crate::model::{Errors, Model, SourceSpec};

/// What the expansion needs from the checks.
#[derive(Default)]
pub struct Checked {
    /// For each Rust parameter, the C spelling of the CUDA type it stands for (the pointee's
    /// for a pointer), used in runtime messages; `None` for a macro-generated kernel.
    pub c_types: Vec<Option<String>>,
    /// `size_of`/`align_of` assertions for Rust types standing for CUDA structs.
    pub layouts: Vec<LayoutAssert>,
    /// The kernel was compiled (or its prepared resources looked up) at build time: the
    /// expansion reads `CUDACHECK_PREPARE` so `cudacheck prepare` expands it again.
    pub compiles_at_build: bool,
    /// The prepared files whose resources were used, which the expansion depends on.
    pub prepared_files: Vec<std::path::PathBuf>,
}

pub use compiled::TRACKED_ENV;

/// "The Rust type `ty` must have the CUDA type's size and alignment."
pub struct LayoutAssert {
    pub ty: Type,
    pub size: u32,
    pub align: u32,
    /// The message the assertion fails with.
    pub message: String,
}

/// The CUDA source text plus its model, and how to name the file in notes.
pub struct Loaded {
    pub model: SourceModel,
    /// `kernels/saxpy.cu` as the user wrote it, or `<inline source>`.
    pub label: String,
}

/// Runs every check. The model must already be built (its shape errors are in `errors`).
pub fn check(m: &Model, errors: &mut Errors) -> Checked {
    check_item_shape(m, errors);
    signature::check_rust_types(m, errors);
    if m.source.as_ref().is_some_and(|s| s.is_ptx()) {
        if m.params_complete && !has_type_generics(m) {
            ptx::check_ptx_signature(m, errors);
        }
        let compiled = compile_each_arch(m, errors);
        config::check_config(m, None, &compiled, errors);
        return Checked {
            compiles_at_build: !m.archs.is_empty(),
            prepared_files: prepared_files(&compiled),
            ..Checked::default()
        };
    }
    let loaded = load(m, errors);
    let mut checked = Checked::default();
    let mut kernel = None;
    let mut exists = false;
    if let Some(loaded) = &loaded {
        match find_kernel(m, loaded, errors) {
            Found::Kernel(k, template_args) => {
                // A generic or pattern parameter was reported already; comparing such a list
                // with the CUDA one would only repeat that error in other words.
                if m.params_complete && !has_type_generics(m) {
                    signature::check_signature(m, loaded, k, &template_args, &mut checked, errors);
                }
                kernel = Some((k, &loaded.model));
                exists = true;
            }
            Found::MacroGenerated => exists = true,
            Found::Missing => {}
        }
    }
    // Only a kernel the source has (or may generate) is worth compiling: a missing one was
    // reported, and NVRTC would only say it again.
    let compiled = if exists {
        compile_each_arch(m, errors)
    } else {
        Vec::new()
    };
    checked.compiles_at_build = exists && !m.archs.is_empty();
    checked.prepared_files = prepared_files(&compiled);
    config::check_config(m, kernel, &compiled, errors);
    checked
}

/// The kernel built for each named architecture (`None` where neither a compiler nor a
/// prepared record is at hand), in `m.archs`' order.
fn compile_each_arch(m: &Model, errors: &mut Errors) -> Vec<Option<compiled::Compiled>> {
    m.archs
        .iter()
        .map(|arch| compiled::compiled_resources(m, arch, errors))
        .collect()
}

fn prepared_files(compiled: &[Option<compiled::Compiled>]) -> Vec<std::path::PathBuf> {
    compiled
        .iter()
        .flatten()
        .filter_map(|c| c.prepared_file.clone())
        .collect()
}

// The item must be a plain signature: the body is the CUDA kernel, the return value is the
// launch's `Result`, and the wrapper's own generics would have no meaning on the device.
fn check_item_shape(m: &Model, errors: &mut Errors) {
    if let Some(body) = m.body {
        errors.at(
            body,
            "a checked kernel has no Rust body: the body is the CUDA kernel. End the \
             declaration with `;`",
        );
    }
    if let syn::ReturnType::Type(_, ty) = &m.sig.output {
        errors.spanned(
            ty,
            "a kernel returns nothing: remove the return type (the generated function returns \
             `Result<(), cudacheck::Error>`)",
        );
    }
    if let Some(t) = &m.sig.asyncness {
        errors.spanned(t, "a kernel launch is not `async`: remove `async`");
    }
    if let Some(t) = &m.sig.constness {
        errors.spanned(t, "a kernel launch cannot be `const`: remove `const`");
    }
    if let Some(abi) = &m.sig.abi {
        errors.spanned(
            abi,
            "remove the ABI: the kernel's linkage is the CUDA source's business",
        );
    }
    if let Some(v) = &m.sig.variadic {
        errors.spanned(v, "a kernel cannot be variadic");
    }
    for g in &m.sig.generics.params {
        if !matches!(g, syn::GenericParam::Lifetime(_)) {
            errors.spanned(
                g,
                "a checked kernel cannot be generic over types or constants: name one \
                 instantiation with `name = \"kernel<float>\"` and declare one Rust function \
                 per instantiation",
            );
        }
    }
}

fn has_type_generics(m: &Model) -> bool {
    m.sig
        .generics
        .params
        .iter()
        .any(|g| !matches!(g, syn::GenericParam::Lifetime(_)))
}

// A file that cannot be read or parsed leaves nothing to check the signature against.
fn load(m: &Model, errors: &mut Errors) -> Option<Loaded> {
    let (text, label, tokens) = match m.source.as_ref()? {
        SourceSpec::Inline { lit } => (lit.value(), "<inline source>".to_string(), lit),
        SourceSpec::PtxFile { .. } | SourceSpec::PtxInline { .. } => return None,
        SourceSpec::File { lit, path } => match read(path) {
            Ok(t) => (t, lit.value(), lit),
            Err(why) => {
                errors.spanned(
                    lit,
                    format!(
                        "cannot read CUDA source `{}`: {why}\n  note: relative paths start at \
                         the directory of the crate's Cargo.toml (CARGO_MANIFEST_DIR)",
                        lit.value()
                    ),
                );
                return None;
            }
        },
    };
    match parse_source(&text, &label) {
        Ok(model) => Some(Loaded { model, label }),
        Err(e) => {
            errors.spanned(tokens, e);
            None
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        _ => e.to_string(),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the file is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

enum Found<'a> {
    Kernel(&'a KernelDecl, Vec<String>),
    MacroGenerated,
    Missing,
}

/// `scale<float, 4>` -> (`scale`, [`float`, `4`]); a name without `<` has no arguments.
pub fn split_template_name(name: &str) -> (String, Option<Vec<String>>) {
    let Some(open) = name.find('<') else {
        return (name.trim().to_string(), None);
    };
    let base = name[..open].trim().to_string();
    let inner = name[open + 1..].trim_end();
    let inner = inner.strip_suffix('>').unwrap_or(inner);
    let mut args = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(inner[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        args.push(inner[start..].trim().to_string());
    }
    (base, Some(args))
}

// The kernel must exist, or a macro in the file may generate it (then the runtime checks the
// declaration against the compiled kernel at first load). A name that is neither is a typo or
// the wrong file: list what the file has, with the closest name first.
fn find_kernel<'a>(m: &Model, loaded: &'a Loaded, errors: &mut Errors) -> Found<'a> {
    let name = m.cuda_name();
    let (base, args) = split_template_name(&name);
    if let Some(k) = loaded.model.kernel(&base) {
        return match check_template_args(m, loaded, k, &base, args, errors) {
            Some(args) => Found::Kernel(k, args),
            None => Found::Missing,
        };
    }
    if loaded.model.generated_by_macro(&base).is_some() || loaded.model.generates_kernels_by_macro()
    {
        return Found::MacroGenerated;
    }
    check_kernel_missing(m, loaded, &base, errors);
    Found::Missing
}

fn check_kernel_missing(m: &Model, loaded: &Loaded, base: &str, errors: &mut Errors) {
    let names: Vec<String> = loaded
        .model
        .kernels
        .iter()
        .map(|k| format!("`{}`", k.qualified_name()))
        .collect();
    let mut msg = format!("no kernel `{base}` in `{}`", loaded.label);
    if let Some(s) = loaded.model.suggest(base) {
        msg.push_str(&format!("; did you mean `{s}`?"));
    }
    if names.is_empty() {
        msg.push_str("\n  note: the file defines no `__global__` function");
    } else {
        msg.push_str(&format!(
            "\n  note: the file defines {}: {}",
            if names.len() == 1 {
                "one kernel"
            } else {
                "these kernels"
            },
            names.join(", ")
        ));
    }
    if m.name.is_none() {
        msg.push_str(
            "\n  help: when the CUDA name differs from the Rust name, give it with \
             `name = \"...\"`",
        );
    }
    errors.spanned(m.name_tokens(), msg);
}

// A template kernel is only a kernel once instantiated: the name must say with what, with as
// many arguments as the template takes (NVRTC otherwise fails at runtime with a message about
// name expressions); a non-template kernel takes none.
fn check_template_args(
    m: &Model,
    loaded: &Loaded,
    k: &KernelDecl,
    base: &str,
    args: Option<Vec<String>>,
    errors: &mut Errors,
) -> Option<Vec<String>> {
    let params = &k.template_params;
    let note = format!(
        "\n  note: {}:{}: `{}`",
        loaded.label, k.location.line, k.declaration_text
    );
    let instantiations = if k.explicit_instantiations.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = k
            .explicit_instantiations
            .iter()
            .map(|i| format!("`{base}<{i}>`"))
            .collect();
        format!("\n  note: the file instantiates {}", list.join(", "))
    };
    let required = params
        .iter()
        .filter(|p| p.default.is_none() && !p.variadic)
        .count();
    let max = if params.iter().any(|p| p.variadic) {
        usize::MAX
    } else {
        params.len()
    };
    match args {
        None if params.is_empty() => Some(Vec::new()),
        None if required == 0 => Some(Vec::new()),
        None => {
            let example = params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            errors.spanned(
                m.name_tokens(),
                format!(
                    "`{base}` is a template kernel: name an instantiation, such as \
                     `name = \"{base}<float>\"` (template parameters: {example}){instantiations}{note}"
                ),
            );
            None
        }
        Some(_) if params.is_empty() => {
            errors.spanned(
                m.name_tokens(),
                format!(
                    "`{base}` is not a template kernel: remove the template arguments and \
                     write `name = \"{base}\"`{note}"
                ),
            );
            None
        }
        Some(args) if args.len() < required || args.len() > max => {
            let list = params
                .iter()
                .map(|p| format!("`{}`", p.name))
                .collect::<Vec<_>>()
                .join(", ");
            errors.spanned(
                m.name_tokens(),
                format!(
                    "`{base}` takes {} template argument{} ({list}), but the name gives {}{instantiations}{note}",
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            );
            None
        }
        Some(args) => Some(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_template_names() {
        assert_eq!(split_template_name("saxpy"), ("saxpy".into(), None));
        assert_eq!(
            split_template_name("ns::scale<float, Pair<int, int>, 4>"),
            (
                "ns::scale".into(),
                Some(vec!["float".into(), "Pair<int, int>".into(), "4".into()])
            )
        );
        assert_eq!(split_template_name("f<>"), ("f".into(), Some(vec![])));
    }
}
