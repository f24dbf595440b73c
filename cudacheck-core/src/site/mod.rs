//! What the three rewrites (`instrument`, `race`, `init`) and their reports share, below all
//! three so that none of them names another: where a place is in the user's source
//! ([`SourceLoc`], from the PTX's `.loc` lines), the readable names of kernels and arrays
//! ([`demangle`], [`demangle_var`]), the function a `call` names ([`callee`]), why an access is
//! left unchecked ([`SkipReason`]) and a report's line for it ([`unchecked_line`]), the layout
//! of the block of device memory the three records share (`record.rs`), and the tables a race-
//! or init-checked build reports through (`race_table.rs`, `init_table.rs`), which the
//! bounds-checked build's own table ([`crate::instrument::InstrumentedKernel`]) carries.
//!
//! Its files are hashed into every checked build's cache key with `instrument/`'s
//! (`crate::sources::INSTRUMENT`).

mod init_table;
mod names;
mod race_table;
mod reason;
mod record;

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use crate::ir::read::Module;

pub use init_table::{InitCoverage, InitKernel, InitSite, InitSiteKind, InitUnchecked};
pub use names::{callee, demangle, demangle_var};
pub use race_table::{
    shadow_bytes, shadow_bytes_with, RaceCoverage, RaceKernel, RaceProof, RaceSite, RaceSiteKind,
    RaceUnchecked,
};
pub use reason::SkipReason;
pub use record::{
    INIT_RECORD_BYTES, INIT_RECORD_OFFSET, RACE_RECORD_BYTES, RACE_RECORD_OFFSET, RECORD_BYTES,
};

/// A place in a source file, from the PTX's `.loc` line information.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceLoc {
    /// The file as NVRTC named it (the program name for the main file, the include path for
    /// headers).
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based; 0 when the compiler gives none.
    pub column: u32,
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if self.column > 0 {
            write!(f, ":{}", self.column)?;
        }
        Ok(())
    }
}

/// The place `.loc` file `file`, `line`, `column` of module `m` names.
pub(crate) fn source_loc(m: &Module, file: u32, line: u32, column: u32) -> SourceLoc {
    SourceLoc {
        file: m.files.get(&file).cloned().unwrap_or_default(),
        line,
        column,
    }
}

/// One line of a report's unchecked list: `    file:line:col: `instr`: reason`.
pub fn unchecked_line(
    out: &mut String,
    loc: Option<&SourceLoc>,
    instruction: &str,
    reason: &dyn std::fmt::Display,
) {
    let at = loc.map_or_else(|| "(no line information)".to_string(), |l| l.to_string());
    let _ = writeln!(out, "    {at}: `{instruction}`: {reason}");
}
