//! The table an init-checked build reports through ([`crate::init`] makes it): its checked
//! reads and what it covers.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::SourceLoc;

/// One init-checked read (or atomic).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitSite {
    /// Unique within its module; what [`InitRecord::site`](crate::init::InitRecord::site) holds.
    pub id: u32,
    pub kind: InitSiteKind,
    /// Where it is, from the PTX's line information.
    pub loc: Option<SourceLoc>,
    /// The call site it was inlined into, when it was.
    pub inlined_at: Option<SourceLoc>,
    /// Bytes read.
    pub bytes: u32,
}

/// What an [`InitSite`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitSiteKind {
    Read,
    /// An atomic or reduction, which reads the old value.
    Atomic,
}

impl fmt::Display for InitSiteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InitSiteKind::Read => "read",
            InitSiteKind::Atomic => "atomic",
        })
    }
}

/// A global access left without an init check, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitUnchecked {
    pub loc: Option<SourceLoc>,
    pub instruction: String,
    pub reason: String,
}

/// What a kernel's init check covers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitCoverage {
    /// Reads (and atomics) whose bytes are tested.
    pub checked: u32,
    /// Writes (and atomics) that set their bytes' bits.
    pub marked: u32,
    pub unchecked: Vec<InitUnchecked>,
    /// Why the whole kernel is left unchanged, when it is: the host then counts what it may
    /// have written as written.
    pub not_checked: Option<String>,
    /// Why its shared memory is not checked, when it has some and it is not (its global
    /// memory may still be).
    #[serde(default)]
    pub shared_not_checked: Option<String>,
}

/// One init-checked kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitKernel {
    /// The PTX symbol.
    pub symbol: String,
    /// Readable name.
    pub name: String,
    pub sites: Vec<InitSite>,
    pub coverage: InitCoverage,
    /// Its shared memory is checked: its launches need
    /// [`shared_shadow_bytes`](crate::init::shared_shadow_bytes) more dynamic shared memory
    /// (without them it checks no shared memory).
    #[serde(default)]
    pub shared_shadow: bool,
}

impl InitKernel {
    /// The site with this id.
    pub fn site(&self, id: u32) -> Option<&InitSite> {
        self.sites.iter().find(|s| s.id == id)
    }
}
