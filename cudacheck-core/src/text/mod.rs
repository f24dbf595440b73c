//! The one CUDA text layer: everything that reads CUDA source as preprocessor text.
//!
//! - [`lex`]: preprocessing tokens (comments skipped with their spans kept, line continuations
//!   read as white space);
//! - [`directive`]: the directives, `#define`s, includes and the structure of conditionals;
//! - [`expand`]: macro definitions and their expansion (`#`, `##`, `__VA_ARGS__`, rescanning);
//! - [`include`]: include resolution in NVRTC's search order, through an injectable
//!   [`FileReader`].
//!
//! The layer is pure: it neither compiles nor touches the file system except through a
//! [`FileReader`] ([`Disk`] is the one that does). It is best effort and never panics:
//! unreadable definitions, unterminated invocations and missing headers come back as `None`
//! or are left as written.
//!
//! ```
//! use cudacheck_core::text::Macros;
//!
//! let m = Macros::defined_in("#define K(T) __global__ void add_##T(T* a) {}\n");
//! assert_eq!(m.expand_text("K(float)"), "__global__ void add_float(float* a) {}");
//! ```

pub mod directive;
pub mod expand;
pub mod include;
pub mod lex;

pub use directive::{
    conditionals, directive_ranges, directives, Conditional, Directive, DirectiveKind,
};
pub use expand::{call_args, render, Macro, Macros};
pub use include::{
    include_closure, include_on_line, includes, Disk, FileReader, HeaderName, IncludeRef, Included,
    Includes, SearchPath,
};
pub use lex::{
    blank, blank_comments, comments, identifiers, is_identifier, lex, tokens, CommentKind, Kind,
    Lexed, Lexer, Token,
};
