//! The table a race-checked build reports through ([`crate::race`] makes it): its checked
//! places, what it covers, and the shadow its launches need.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::SourceLoc;

/// One race-checked place: a shared access or a barrier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceSite {
    /// Unique within its kernel; what [`AccessWord::site`](crate::race::AccessWord::site) holds.
    pub id: u32,
    pub kind: RaceSiteKind,
    /// Where it is, from the PTX's line information.
    pub loc: Option<SourceLoc>,
    /// The call site it was inlined into, when it was.
    pub inlined_at: Option<SourceLoc>,
    /// The `__shared__` array accessed, when the address leads back to one.
    pub array: Option<String>,
    /// Bytes accessed (0 for barriers).
    pub bytes: u32,
    /// For an access: why it has no check, when it is proven unable to race.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proven: Option<RaceProof>,
}

/// Why a shared access needs no race check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RaceProof {
    /// Nothing in its barrier intervals can conflict with it: no write or atomic of its array
    /// for a read, no plain access for an atomic.
    NoConflict,
    /// Other accesses of its array in its barrier intervals can conflict, but none of another
    /// thread of the block can touch its bytes there: the element indices, affine in the
    /// thread index within the guards' range, differ for every two threads (for the launch's
    /// block shape, which the build is made for).
    ThreadPrivate,
}

impl fmt::Display for RaceProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RaceProof::NoConflict => "nothing in its barrier interval conflicts",
            RaceProof::ThreadPrivate => "proven thread-private in its interval",
        })
    }
}

/// What a [`RaceSite`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RaceSiteKind {
    Read,
    Write,
    Atomic,
    /// A block barrier (`__syncthreads()`).
    Barrier,
    /// `__syncwarp(mask)`.
    WarpSync,
    /// A kernel's `ret` or `exit` (of a kernel with barriers): where threads that left a
    /// block before a barrier went.
    Exit,
}

impl fmt::Display for RaceSiteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RaceSiteKind::Read => "read",
            RaceSiteKind::Write => "write",
            RaceSiteKind::Atomic => "atomic",
            RaceSiteKind::Barrier => "barrier",
            RaceSiteKind::WarpSync => "__syncwarp",
            RaceSiteKind::Exit => "exit",
        })
    }
}

/// A shared access left without a race check, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceUnchecked {
    /// Where the access is.
    pub loc: Option<SourceLoc>,
    /// Its opcode (`ldmatrix.sync.aligned.m8n8.x4.shared.b16`).
    pub instruction: String,
    /// Why it has no race check.
    pub reason: String,
}

/// What a kernel's race check covers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceCoverage {
    /// Shared accesses with a shadow check.
    pub checked: u32,
    /// Of `checked`, those that cannot race and have no check: nothing in their barrier
    /// intervals can conflict with them, or nothing of another thread there can touch their
    /// bytes (`intervals.rs`; each site says which, [`RaceSite::proven`]).
    #[serde(default)]
    pub proven: u32,
    /// Of `proven`, those proven thread-private ([`RaceProof::ThreadPrivate`]).
    #[serde(default)]
    pub thread_private: u32,
    /// Block barriers with a divergence check.
    pub barriers: u32,
    /// `__syncwarp` calls with a mask check.
    pub warp_syncs: u32,
    pub unchecked: Vec<RaceUnchecked>,
    /// Why the whole kernel is left unchanged, when it is.
    pub not_checked: Option<String>,
}

impl RaceCoverage {
    /// Every shared access and barrier of the kernel is checked.
    pub fn is_complete(&self) -> bool {
        self.unchecked.is_empty() && self.not_checked.is_none()
    }
}

/// One race-checked kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceKernel {
    /// The PTX symbol.
    pub symbol: String,
    /// Readable name (`reduce<float>`).
    pub name: String,
    /// Every race-checked access and barrier.
    pub sites: Vec<RaceSite>,
    /// What is checked and what is not.
    pub coverage: RaceCoverage,
    /// The kernel has a shadow: its launches need [`RaceKernel::shadow_bytes`] more dynamic
    /// shared memory.
    pub shadow: bool,
    /// 64-bit records per shadow word: 3, or 1 when the kernel checks no read (no reader
    /// records).
    #[serde(default = "all_records")]
    pub shadow_records: u32,
    /// Whether the shadow covers the dynamic shared memory too: not where no checked access
    /// can touch it (every access of its arrays is proven unable to race), and then its size
    /// follows the static arrays alone.
    #[serde(default = "covers_dynamic")]
    pub shadow_dynamic: bool,
}

const fn all_records() -> u32 {
    3
}

const fn covers_dynamic() -> bool {
    true
}

impl RaceKernel {
    /// Bytes of shadow a launch of this kernel needs after `dynamic_shared_bytes` of its own
    /// ([`shadow_bytes_with`] of its records per word).
    pub fn shadow_bytes(&self, static_shared_bytes: u32, dynamic_shared_bytes: u32) -> u32 {
        shadow_bytes_with(
            self.shadow_records,
            static_shared_bytes,
            if self.shadow_dynamic {
                dynamic_shared_bytes
            } else {
                0
            },
        )
    }

    /// The site with this id.
    pub fn site(&self, id: u32) -> Option<&RaceSite> {
        self.sites.iter().find(|s| s.id == id)
    }
}

/// Bytes of shadow a launch needs after `dynamic_shared_bytes` of its own, for a kernel with
/// `static_shared_bytes` of `__shared__` arrays and all three records per word (the most any
/// kernel needs; [`RaceKernel::shadow_bytes`] gives a kernel's own).
pub const fn shadow_bytes(static_shared_bytes: u32, dynamic_shared_bytes: u32) -> u32 {
    shadow_bytes_with(3, static_shared_bytes, dynamic_shared_bytes)
}

/// Bytes of shadow with `records` 8-byte records per 4-byte word: alignment, two barrier
/// slots and an exit slot, and the records (`8 * records` times the block's shared memory,
/// plus a margin for the alignment of the arrays, which the kernel measures itself and checks
/// against what it got).
pub const fn shadow_bytes_with(
    records: u32,
    static_shared_bytes: u32,
    dynamic_shared_bytes: u32,
) -> u32 {
    let words = (static_shared_bytes as u64 + dynamic_shared_bytes as u64 + 256).div_ceil(4);
    let bytes = 16 + 48 + 8 * records as u64 * words;
    if bytes > u32::MAX as u64 {
        u32::MAX
    } else {
        bytes as u32
    }
}
