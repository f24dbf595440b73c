//! What the instrumenter checked and what it could not: the site table the runtime maps faults
//! back through, and the list of accesses left unchecked with the reason why.

use std::fmt;

use super::record::FaultKind;

/// How an instrumented access uses its element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SiteKind {
    /// The element is only read.
    Read,
    /// The element is the left side of `=`.
    Write,
    /// The element is the left side of a compound assignment, or of `++`/`--`.
    ReadWrite,
    /// The element's address is passed to an `atomic*` function.
    Atomic,
    /// An `assert(cond)` / `CUDACHECK_ASSERT(cond, msg)`, not an access.
    Assert,
}

impl SiteKind {
    /// The [`FaultKind`] a fault at this site is recorded as.
    pub const fn fault_kind(self) -> FaultKind {
        match self {
            SiteKind::Read => FaultKind::Read,
            SiteKind::Write => FaultKind::Write,
            SiteKind::ReadWrite => FaultKind::ReadWrite,
            SiteKind::Atomic => FaultKind::Atomic,
            SiteKind::Assert => FaultKind::Assert,
        }
    }

    /// The prelude constant the generated call passes.
    pub(crate) const fn cuda_constant(self) -> &'static str {
        match self {
            SiteKind::Read => "__CC_READ",
            SiteKind::Write => "__CC_WRITE",
            SiteKind::ReadWrite => "__CC_READ_WRITE",
            SiteKind::Atomic => "__CC_ATOMIC",
            SiteKind::Assert => "__CC_ASSERT",
        }
    }
}

impl fmt::Display for SiteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SiteKind::Read => "read",
            SiteKind::Write => "write",
            SiteKind::ReadWrite => "read-modify-write",
            SiteKind::Atomic => "atomic",
            SiteKind::Assert => "assertion",
        })
    }
}

/// One checked place in the user's source; a fault record's `site` is its `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Unique within one instrumented file.
    pub id: u32,
    /// 1-based line in the user's file.
    pub line: u32,
    /// 1-based column (bytes) in the user's file.
    pub column: u32,
    /// The buffer accessed (`y`, `tile`), or the assertion's condition text.
    pub buffer: String,
    pub kind: SiteKind,
}

/// Why an access was left unchecked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkipReason {
    /// The buffer is reached through a cast (`((float4*)p)[i]`): the element size changes, so
    /// the length in elements is not known.
    PointerCast,
    /// Indexing a pointer that is not a parameter nor a tracked `T* q = p + off` alias.
    UnknownAlias { name: String },
    /// The pointer parameter or alias is reassigned in the kernel (`p += stride`), so its
    /// length no longer describes where it points.
    PointerReassigned { name: String },
    /// The buffer is used inside inline PTX (`asm(...)`).
    InlineAsm,
    /// The access is inside a macro's body, which the instrumenter cannot rewrite.
    MacroBody { macro_name: String },
    /// The buffer is passed to a function whose accesses are not followed.
    PassedToFunction { function: String },
    /// Only some dimensions of a multi-dimensional array are indexed (`tile[i]`).
    PartialIndex { dims: usize, indexed: usize },
    /// The element of a pointer-to-pointer (`p[i][j]`): the inner length is unknown.
    NestedPointer,
    /// The address of an element escapes (`&p[i]` given to a non-atomic function or stored).
    AddressEscapes,
    /// The parser did not understand this part of the source.
    SyntaxError,
    /// The expression nests deeper than the instrumenter follows.
    TooDeep,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::PointerCast => f.write_str(
                "the pointer is cast to another type before indexing, so its length in elements is unknown",
            ),
            SkipReason::UnknownAlias { name } => write!(
                f,
                "`{name}` is not a kernel parameter nor a pointer declared as `param + offset`, so its length is unknown"
            ),
            SkipReason::PointerReassigned { name } => write!(
                f,
                "`{name}` is reassigned in the kernel, so the launch's length no longer describes where it points"
            ),
            SkipReason::InlineAsm => f.write_str("the buffer is used inside inline assembly"),
            SkipReason::MacroBody { macro_name } => write!(
                f,
                "the access is inside the body of macro `{macro_name}`, which cannot be rewritten"
            ),
            SkipReason::PassedToFunction { function } => write!(
                f,
                "the buffer is passed to `{function}`, whose accesses are not checked"
            ),
            SkipReason::PartialIndex { dims, indexed } => write!(
                f,
                "the array has {dims} dimensions but only {indexed} are indexed here"
            ),
            SkipReason::NestedPointer => {
                f.write_str("the element is itself a pointer whose length is unknown")
            }
            SkipReason::AddressEscapes => f.write_str(
                "the element's address is taken and used elsewhere, where it is not checked",
            ),
            SkipReason::SyntaxError => f.write_str("the parser could not read this code"),
            SkipReason::TooDeep => f.write_str("the expression nests too deeply to follow"),
        }
    }
}

/// An access the instrumenter left unchecked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedAccess {
    /// 1-based line in the user's file.
    pub line: u32,
    /// 1-based column (bytes).
    pub column: u32,
    /// The source text of the access (first line only, at most 80 bytes).
    pub text: String,
    pub reason: SkipReason,
}

/// How much of one kernel is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Accesses rewritten to checked accesses (assertions not included).
    pub instrumented: u32,
    /// Of the checked accesses, those whose check runs once before their loop instead of on
    /// every iteration (the loop is proven to stay in range; otherwise a fully checked copy of
    /// the loop runs).
    pub hoisted: u32,
    /// Accesses left as written, with the reason.
    pub skipped: Vec<SkippedAccess>,
}

impl Coverage {
    /// Whether every access the instrumenter saw is checked.
    pub fn is_complete(&self) -> bool {
        self.skipped.is_empty()
    }
}
