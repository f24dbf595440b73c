//! The CUDA source model: the kernels a `.cu` file defines, their parameters and types, the
//! structs they take by value, their `__shared__` arrays, and the macros that generate kernels,
//! read with a real parser ([tree-sitter-cuda](https://github.com/tree-sitter-grammars/tree-sitter-cuda)).
//!
//! The macro, the runtime and the CLI all read CUDA through this one model, so they cannot
//! disagree about what a kernel's signature is.
//!
//! ```
//! use cudacheck_core::source::{parse_source, CudaType, Scalar};
//!
//! let model = parse_source(
//!     r#"extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {}"#,
//!     "saxpy.cu",
//! )?;
//! let saxpy = model.kernel("saxpy").expect("saxpy is defined");
//! assert!(saxpy.extern_c);
//! assert_eq!(saxpy.params[0].ty, CudaType::Scalar(Scalar::Float));
//! assert_eq!(saxpy.params[1].ty.to_string(), "const float*");
//! assert_eq!(model.suggest("saxpi"), Some("saxpy"));
//! # Ok::<(), cudacheck_core::source::SourceError>(())
//! ```
//!
//! The parser does not run the preprocessor: kernels in every `#if`/`#else` branch are found
//! (a conditional inside a function body or an expression is read in its first branch only),
//! `#include`d files are only listed, and kernels that macros generate are reported as
//! [`MacroKernel`]s with a best-effort expansion of the invocations in this file.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod host;
mod kernel;
mod macros;
mod parse;
mod structs;
mod types;

pub use host::{
    set_aside_host_code, set_aside_host_code_for, set_aside_host_code_in, set_aside_host_code_unit,
    set_aside_host_code_with, HostCode, HostDecision, HostFunction, KeptReason, Launcher,
    SetAsideKind, Unit, UnitHostCode, UnresolvedLaunch, TRANSFORM_SOURCES,
};
pub use kernel::{
    KernelDecl, LaunchBoundsDecl, ParamDecl, SharedArray, TemplateParam, TemplateParamKind,
};
pub use macros::{MacroInvocation, MacroKernel};
pub use structs::StructDecl;
pub use types::{parse_int_literal, vector_layout, CudaType, Scalar};

/// Where something is in a source file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Location {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, counted in characters (not bytes) the way editors and rustc count them.
    pub column: u32,
    /// Byte range in the file's text.
    pub byte_range: Range<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A syntax error tree-sitter recovered from. It is recorded, not fatal: one broken function
/// must not hide the other kernels of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyntaxIssue {
    pub location: Location,
    /// What is wrong, for a person: ``unexpected `= ;` `` or ``missing `)` ``.
    pub message: String,
    /// The function the error is in, when it is inside one.
    pub in_function: Option<String>,
}

impl fmt::Display for SyntaxIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)?;
        if let Some(func) = &self.in_function {
            write!(f, " (in `{func}`)")?;
        }
        Ok(())
    }
}

/// Why a file could not be read into a [`SourceModel`] at all.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The text holds a NUL byte, which no CUDA source does: the file is binary or corrupt.
    #[error(
        "{file_name}:{line}: the file contains a NUL byte (at byte {byte_offset}); \
         it is not CUDA source text. Pass the `.cu` file, not a compiled object."
    )]
    NulByte {
        file_name: String,
        byte_offset: usize,
        line: u32,
    },
    /// The tree-sitter-cuda grammar could not be loaded: its ABI does not match the tree-sitter
    /// library cudacheck was built with.
    #[error(
        "the CUDA grammar (tree-sitter-cuda) cannot be loaded by this tree-sitter: {source}. \
         Rebuild cudacheck with matching tree-sitter and tree-sitter-cuda versions."
    )]
    GrammarUnavailable {
        #[source]
        source: tree_sitter::LanguageError,
    },
    /// The parser gave up without producing any tree.
    #[error("{file_name}: the CUDA parser produced no syntax tree; the file could not be read")]
    ParseFailed { file_name: String },
}

/// Everything cudacheck knows about one CUDA source file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceModel {
    pub file_name: String,
    /// `__global__` functions, definitions and declarations, in source order. A kernel declared
    /// and later defined appears once, as its definition.
    pub kernels: Vec<KernelDecl>,
    /// Macros whose body defines a kernel (or prefixes one with `__global__`).
    pub kernel_macros: Vec<MacroKernel>,
    /// Structs with a body, by their tag and by their typedef name.
    pub structs: Vec<StructDecl>,
    /// `__shared__` variables declared outside any function.
    pub shared_globals: Vec<SharedArray>,
    /// `#include` paths, without their `""` or `<>`, as the text layer reads them
    /// ([`crate::text::includes`]: every branch, outside comments).
    pub includes: Vec<String>,
    /// Syntax errors the parser recovered from.
    pub errors: Vec<SyntaxIssue>,
}

impl SourceModel {
    /// The kernel named `name`: its plain name (`saxpy`) or its qualified name (`ns::saxpy`).
    /// With overloads or the same name in several namespaces, the first in source order.
    pub fn kernel(&self, name: &str) -> Option<&KernelDecl> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .or_else(|| self.kernels.iter().find(|k| k.qualified_name() == name))
    }

    /// The names of all kernels, in source order (overloads appear once per declaration).
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.kernels.iter().map(|k| k.name.as_str())
    }

    /// The kernel name closest to `name`, for "did you mean" hints: the names of kernels and of
    /// kernels that macro invocations in this file generate, within an edit distance of a third
    /// of the name (at least 1), or equal but for case. `None` when `name` exists or nothing is
    /// close enough.
    pub fn suggest(&self, name: &str) -> Option<&str> {
        let generated = self
            .kernel_macros
            .iter()
            .flat_map(|m| &m.invocations)
            .flat_map(|i| &i.generated_kernels)
            .map(String::as_str);
        let candidates: Vec<&str> = self.kernel_names().chain(generated).collect();
        if candidates.contains(&name) {
            return None;
        }
        let limit = (name.chars().count() / 3).max(1);
        candidates
            .into_iter()
            .map(|c| {
                let d = if c.eq_ignore_ascii_case(name) {
                    0
                } else {
                    strsim::levenshtein(c, name)
                };
                (d, c)
            })
            .filter(|(d, _)| *d <= limit)
            .min_by_key(|(d, _)| *d)
            .map(|(_, c)| c)
    }

    /// The macro and invocation that generate a kernel named `name`, when expanding an
    /// invocation in this file produced that name.
    pub fn generated_by_macro(&self, name: &str) -> Option<(&MacroKernel, &MacroInvocation)> {
        self.kernel_macros.iter().find_map(|m| {
            m.invocations
                .iter()
                .find(|i| i.generated_kernels.iter().any(|g| g == name))
                .map(|i| (m, i))
        })
    }

    /// Whether some kernels of this file may be generated by macros, so a name not found among
    /// [`kernels`](Self::kernels) is not necessarily a mistake.
    pub fn generates_kernels_by_macro(&self) -> bool {
        self.kernel_macros.iter().any(|m| m.function_like)
    }

    /// The struct named `name` (tag or typedef name).
    pub fn struct_named(&self, name: &str) -> Option<&StructDecl> {
        let name = name.trim_start_matches("struct ").trim();
        self.structs.iter().find(|s| s.name == name)
    }
}

/// Reads a CUDA source file into a [`SourceModel`].
///
/// `file_name` is only used in the model and in messages. Syntax errors do not fail the parse:
/// they are collected in [`SourceModel::errors`] and the rest of the file is still read.
///
/// # Errors
///
/// [`SourceError::NulByte`] if `text` holds a NUL byte; [`SourceError::GrammarUnavailable`] if
/// the grammar cannot be loaded; [`SourceError::ParseFailed`] if the parser produced no tree.
pub fn parse_source(text: &str, file_name: &str) -> Result<SourceModel, SourceError> {
    if let Some(byte_offset) = text.find('\0') {
        let line = 1 + text[..byte_offset].matches('\n').count();
        return Err(SourceError::NulByte {
            file_name: file_name.to_owned(),
            byte_offset,
            line: u32::try_from(line).unwrap_or(u32::MAX),
        });
    }
    parse::parse(text, file_name)
}
