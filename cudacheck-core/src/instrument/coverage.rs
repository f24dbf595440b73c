//! What the instrumenter checked and what it could not: the site table the runtime maps faults
//! back through, and the list of accesses left unchecked with the reason why.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::analyze::{Opaque, Unchecked};
use super::record::FaultKind;
use crate::site::{SkipReason, SourceLoc};

/// How an instrumented access uses memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SiteKind {
    Read,
    Write,
    /// An atomic read-modify-write or reduction.
    Atomic,
    /// An `assert(cond)`, not an access.
    Assert,
}

impl SiteKind {
    /// The [`FaultKind`] a fault at this site is recorded as.
    pub const fn fault_kind(self) -> FaultKind {
        match self {
            SiteKind::Read => FaultKind::Read,
            SiteKind::Write => FaultKind::Write,
            SiteKind::Atomic => FaultKind::Atomic,
            SiteKind::Assert => FaultKind::Assert,
        }
    }
}

impl fmt::Display for SiteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SiteKind::Read => "read",
            SiteKind::Write => "write",
            SiteKind::Atomic => "atomic",
            SiteKind::Assert => "assertion",
        })
    }
}

/// The memory a checked access is checked against.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The buffer passed as the kernel's parameter with this ordinal.
    Param(u32),
    /// A `__shared__`, `__device__`, `__constant__` or local array, by name (the local
    /// "depot" stands for the thread's whole local frame).
    Var(String),
    /// One of several buffers, whichever the pointer held when the access ran (`in ? in :
    /// out`); the fault record carries the buffer's base address.
    OneOf(Vec<Target>),
    /// The buffer a pointer field of a by-value struct parameter points into (`g.nlist` of
    /// `struct Graph { int* nindex; int* nlist; int n; }`): the 8 bytes at `offset` of the
    /// parameter's value. Only builds with
    /// [`InstrumentOptions::alloc_bases`](super::InstrumentOptions::alloc_bases) check such
    /// accesses. PTX keeps no field names: a report says "parameter 0 at byte 8".
    Field(BufferSlot),
    /// Not an access: an assertion.
    Assert,
}

/// Where a build with [`InstrumentOptions::alloc_bases`](super::InstrumentOptions::alloc_bases)
/// takes one buffer's length and base from: the 8 bytes at `offset` of parameter `param`'s
/// value. A pointer parameter is `(k, 0)` (its value is the pointer); a pointer field of a
/// struct passed by value is `(k, field offset)`. The launch reads the pointer there, looks up
/// the allocation `[A, A + S)` holding it, and passes `S` and `A` in the slot's hidden
/// parameters (for a slot whose pointer is in no known allocation, see the option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BufferSlot {
    /// The parameter's ordinal.
    pub param: u32,
    /// Byte offset of the pointer inside the parameter's value.
    pub offset: u32,
}

impl fmt::Display for BufferSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "parameter {} at byte {}", self.param, self.offset)
    }
}

/// One checked place; a fault record's `site` is its `id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// Unique within one instrumented module.
    pub id: u32,
    /// Where the access is, when the PTX has line information.
    pub loc: Option<SourceLoc>,
    /// The call site it was inlined into, when it sits in an inlined device function (or a
    /// macro expanded there).
    pub inlined_at: Option<SourceLoc>,
    pub target: Target,
    pub kind: SiteKind,
    /// Bytes accessed (16 for a `float4`).
    pub bytes: u32,
}

impl From<Unchecked> for SkipReason {
    fn from(u: Unchecked) -> Self {
        match u {
            Unchecked::Opaque(o) => match o {
                Opaque::Loaded => SkipReason::LoadedPointer,
                Opaque::StructField => SkipReason::StructField,
                Opaque::FunctionParam => SkipReason::NotInlined {
                    function: String::new(),
                },
                Opaque::Returned => SkipReason::ReturnedPointer,
                Opaque::Computed => SkipReason::Computed,
                Opaque::Ambiguous => SkipReason::Ambiguous,
                Opaque::Absolute => SkipReason::Absolute,
                Opaque::MixedSpaces => SkipReason::MixedSpaces,
            },
            Unchecked::NotAnAddress => SkipReason::Computed,
            Unchecked::Collective { op } => SkipReason::Collective { op },
            Unchecked::Texture { op } => SkipReason::Texture { op },
            Unchecked::Cluster => SkipReason::Cluster,
            Unchecked::NotInlined { function } => SkipReason::NotInlined { function },
            Unchecked::UnknownSize { op } => SkipReason::UnknownSize { op },
            Unchecked::SpaceMismatch => SkipReason::SpaceMismatch,
        }
    }
}

/// An access the instrumenter left unchecked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncheckedAccess {
    pub loc: Option<SourceLoc>,
    pub inlined_at: Option<SourceLoc>,
    /// The PTX opcode (`ld.global.v4.f32`).
    pub instruction: String,
    pub reason: SkipReason,
}

/// How much of one kernel is checked. Every memory access of the compiled kernel (and of the
/// non-inlined device functions it calls) is counted exactly once: checked at run time, proven
/// in bounds, or listed unchecked with its reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Accesses checked at run time.
    pub checked: u32,
    /// Accesses in bounds whatever the launch (a constant offset into a fixed-size array), or
    /// for launches of the shape the module was instrumented for.
    pub proven: u32,
    /// Of the checked accesses, those covered by one range check of their group (see
    /// `instrument::group`): they run unchecked when it passes, each with its own check when
    /// it fails.
    pub grouped: u32,
    /// The range checks of those groups, one per group.
    pub group_checks: u32,
    /// Accesses whose check the launch makes on the host, once, instead of each thread on the
    /// device: the user's guard (`if (i < n)`) bounds the offset by the launch's arguments,
    /// grid and block, and the launch runs this build only when that bound is inside the
    /// buffer (a build checking the accesses whose bound is not on the device otherwise; see
    /// `instrument::guard`).
    #[serde(default)]
    pub host_checked: u32,
    /// Of the checked accesses, those inside a loop that each thread checks once before the
    /// loop over every iteration, then runs a copy of the loop without their checks (or the
    /// checked loop when that check fails; see `instrument::version`).
    #[serde(default)]
    pub hoisted: u32,
    /// The loops so versioned.
    #[serde(default)]
    pub versioned_loops: u32,
    /// Accesses left unchecked, with the reason.
    pub unchecked: Vec<UncheckedAccess>,
}

impl Coverage {
    /// Whether every access is checked or proven.
    pub fn is_complete(&self) -> bool {
        self.unchecked.is_empty()
    }
}
