//! The one CUDA text layer: everything that reads CUDA source as preprocessor text.
//!
//! - [`lex`](mod@lex): preprocessing tokens (comments skipped with their spans kept, line
//!   continuations read as white space);
//! - [`directive`]: the directives, `#define`s, includes and the structure of conditionals;
//! - [`expand`]: macro definitions and their expansion (`#`, `##`, `__VA_ARGS__`, rescanning);
//! - [`include`](mod@include): include resolution in NVRTC's search order, through an
//!   injectable [`FileReader`].
//!
//! The layer is pure: it neither compiles nor touches the file system except through a
//! [`FileReader`] ([`Disk`] is the one that does). It is best effort and never panics:
//! unreadable definitions, unterminated invocations and missing headers come back as `None`
//! or are left as written.
//!
//! Where it differs from a C preprocessor: a macro call's arguments are also grouped by `[]`
//! and `{}`, not only `()` (as the code it replaced did, for lambdas and initializer lists in
//! arguments); `__VA_OPT__` is not supported; conditionals are read for their structure, and
//! only the callers that need it (the host splitter's platform tests) evaluate them.
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
    all_includes, include_closure, include_on_line, includes, Disk, FileReader, HeaderName,
    IncludeRef, Included, Includes, SearchPath,
};
pub use lex::{
    blank, blank_comments, comments, identifiers, is_identifier, lex, tokens, CommentKind, Kind,
    Lexed, Lexer, Token,
};

/// The sources of the text layer, for caches keyed on the code that decides what they hold
/// (the host-code transform, the include scan of a cache key).
#[doc(hidden)]
pub const SOURCES: &[&str] = crate::sources::TEXT;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Texts made of the fragments most likely to trip a reader (unclosed literals, comments
    /// and calls, pastes at the edges, continuations, multi-byte characters), from a fixed
    /// seed: every entry point must answer without panicking.
    #[test]
    fn no_input_panics_any_entry_point() {
        const PIECES: &[&str] = &[
            "#define F(a, ...) a ## __VA_ARGS__ #a\n",
            "#define G(x) F(x, G(x))\n",
            "#define H ## x\n",
            "#define I(a) # ## a\n",
            "#define\n",
            "#define J(\n",
            "F(",
            "G(1)",
            "H",
            "I(é)",
            "(",
            ")",
            ",",
            "\"",
            "'",
            "R\"d(",
            ")d\"",
            "/*",
            "*/",
            "//",
            "\\\n",
            "\\",
            "#include ",
            "<",
            ">",
            "__has_include(",
            "#if 1\n",
            "#endif\n",
            "é",
            "u8'",
            "1e+",
            "\n",
            " ",
            "#",
            "##",
            "%:%:",
            "...",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..24 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                s.push_str(PIECES[(seed % PIECES.len() as u64) as usize]);
            }
            let m = Macros::defined_in(&s);
            let _ = m.expand_text(&s);
            let _ = m.invoke_text("F", &[s.clone(), String::new()]);
            let _ = call_args(&s, s.find('(').unwrap_or(0));
            let _ = conditionals(&directives(&s));
            let _ = blank_comments(&s);
            let _ = includes(&s);
            let _ = include_closure(
                &s,
                Some(Path::new("/")),
                &SearchPath::default(),
                &Disk,
                &|_| false,
                1,
            );
        }
    }
}
