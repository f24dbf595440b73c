//! The block of device memory a checked build writes its reports to, one record after
//! another: the bounds fault record (`crate::instrument`'s `FaultRecord`), the race record
//! (`crate::race`'s `RaceRecord`), then the init record (`crate::init`'s `InitRecord`). A
//! race- or init-checked build is a bounds-checked build rewritten once more, so the block's
//! address is the bounds build's hidden `__cc_rec` parameter and neither takes one of its own.
//! The layout is here, below the three rewrites, so that none names another for it.

/// The size of the bounds fault record in bytes, which the prelude's `static_assert` checks.
pub const RECORD_BYTES: usize = 128;
/// Where the race record starts in the fault block: after the bounds record.
pub const RACE_RECORD_OFFSET: usize = RECORD_BYTES;
/// Bytes of the race record.
pub const RACE_RECORD_BYTES: usize = 128;
/// Where the init record starts in the fault block: after the bounds and race records.
pub const INIT_RECORD_OFFSET: usize = RACE_RECORD_OFFSET + RACE_RECORD_BYTES;
/// Bytes of the init record.
pub const INIT_RECORD_BYTES: usize = 64;
