//! The race record: what a race-checked kernel writes when two threads of a block touch one
//! shared word with no barrier between them, or a barrier is misused. It sits right after the
//! bounds fault record ([`RACE_RECORD_OFFSET`]) in the same block of device memory, so a
//! race-checked build takes no hidden parameter of its own.
//!
//! Layout (little-endian, 128 bytes): `faulted` u32 (first wins, `atomicCAS`), `count` u32,
//! `kind` u32 ([`RaceEventKind`]), `offset` u32 (byte offset of the raced word from the start
//! of its array, or its shared-window address when the array is unknown; the mask or the
//! threads that arrived for barrier events), `current` u64 and
//! `other` u64 (two [`AccessWord`]s), `block` 3 x u32, then at byte 64 `disabled` u32 (the
//! launch gave too little shared memory for the shadow, so nothing was checked). The offsets
//! are written twice, here and in `emit.rs`'s `call_report`; the round-trip test and the GPU
//! tests pin them together.

use std::fmt;

pub use crate::site::{RACE_RECORD_BYTES, RACE_RECORD_OFFSET};

/// What a race record reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RaceEventKind {
    /// Two threads accessed one shared word, at least one writing, with no barrier between.
    Race,
    /// Threads of one block met at different `__syncthreads()` (or a barrier only some reach).
    DivergentBarrier,
    /// `__syncwarp(mask)` (`bar.warp.sync`) whose mask leaves out the calling lane.
    WarpMask,
    /// A block barrier that only part of the block reached: the others had exited. `offset`
    /// holds how many threads arrived; `other`, when non-zero, the exit (site and thread) of
    /// one that left.
    ExitedBarrier,
}

impl RaceEventKind {
    /// The number the device code stores in [`RaceRecord::kind`].
    pub const fn code(self) -> u32 {
        match self {
            RaceEventKind::Race => 1,
            RaceEventKind::DivergentBarrier => 2,
            RaceEventKind::WarpMask => 3,
            RaceEventKind::ExitedBarrier => 4,
        }
    }

    /// The event a stored code stands for, if any.
    pub const fn from_code(c: u32) -> Option<Self> {
        Some(match c {
            1 => RaceEventKind::Race,
            2 => RaceEventKind::DivergentBarrier,
            3 => RaceEventKind::WarpMask,
            4 => RaceEventKind::ExitedBarrier,
            _ => return None,
        })
    }
}

/// How one recorded access touched the word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Read,
    Write,
    Atomic,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Atomic => "atomic",
        })
    }
}

/// One access as the shadow memory keeps it, packed into 64 bits:
///
/// | bits   | field                                                       |
/// |--------|-------------------------------------------------------------|
/// | 0-9    | the thread's linear index in its block                      |
/// | 10-23  | the site (per kernel)                                        |
/// | 24-27  | which bytes of the 4-byte word                              |
/// | 28-37  | warp epoch: warp synchronizations since the last barrier    |
/// | 38-61  | block epoch: block barriers passed, plus one                |
/// | 62-63  | kind: 1 read, 2 write, 3 atomic                             |
///
/// A barrier event uses the same thread and site fields (site = the barrier's site).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AccessWord(pub u64);

/// Bit layout of [`AccessWord`], shared with the emitter.
pub(crate) mod bits {
    pub const TID_MASK: u64 = 0x3FF;
    pub const WARP_MASK: u64 = 0x3E0;
    pub const SITE_SHIFT: u32 = 10;
    pub const SITE_MAX: u32 = (1 << 14) - 1;
    pub const BYTES_SHIFT: u32 = 24;
    pub const BYTES_MASK: u64 = 0xF << BYTES_SHIFT;
    pub const WEPOCH_SHIFT: u32 = 28;
    pub const WEPOCH_MASK: u64 = 0x3FF << WEPOCH_SHIFT;
    pub const BEPOCH_SHIFT: u32 = 38;
    pub const BEPOCH_MASK: u64 = 0xFF_FFFF << BEPOCH_SHIFT;
    pub const KIND_SHIFT: u32 = 62;
}

impl AccessWord {
    /// The thread's linear index in its block (`x + y * bx + z * bx * by`).
    pub fn thread(self) -> u32 {
        (self.0 & bits::TID_MASK) as u32
    }
    /// The race site ([`RaceSite::id`](super::RaceSite::id)) of the access or barrier.
    pub fn site(self) -> u32 {
        ((self.0 >> bits::SITE_SHIFT) & u64::from(bits::SITE_MAX)) as u32
    }
    /// Bytes of the word the access touched, as a 4-bit mask.
    pub fn byte_mask(self) -> u32 {
        ((self.0 & bits::BYTES_MASK) >> bits::BYTES_SHIFT) as u32
    }
    /// Block barriers the thread had passed.
    pub fn barriers(self) -> u32 {
        (((self.0 & bits::BEPOCH_MASK) >> bits::BEPOCH_SHIFT) as u32).saturating_sub(1)
    }
    /// Read, write or atomic (`None` for a barrier event).
    pub fn kind(self) -> Option<AccessKind> {
        match self.0 >> bits::KIND_SHIFT {
            1 => Some(AccessKind::Read),
            2 => Some(AccessKind::Write),
            3 => Some(AccessKind::Atomic),
            _ => None,
        }
    }
}

/// The race record as the device wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaceRecord {
    /// 1 when something was recorded (the first report wins), else 0.
    pub faulted: u32,
    /// How many reports the launch made (every conflicting access counts).
    pub count: u32,
    /// A [`RaceEventKind`] code.
    pub kind: u32,
    /// Byte offset of the word in its array (or its shared address, see the module docs); for
    /// [`RaceEventKind::WarpMask`], the mask; for [`RaceEventKind::ExitedBarrier`], the
    /// threads that arrived.
    pub offset: u32,
    /// The access (or barrier) that found the conflict.
    pub current: AccessWord,
    /// The earlier access it conflicts with (or the other barrier).
    pub other: AccessWord,
    /// `blockIdx` of the block it happened in.
    pub block: [u32; 3],
    /// Non-zero when the launch's shared memory left no room for the shadow: nothing was
    /// race-checked.
    pub disabled: u32,
}

impl RaceRecord {
    /// The recorded event, if the code is one.
    pub fn event(&self) -> Option<RaceEventKind> {
        RaceEventKind::from_code(self.kind)
    }

    /// The record as the device lays it out.
    pub fn to_bytes(&self) -> [u8; RACE_RECORD_BYTES] {
        let mut b = [0u8; RACE_RECORD_BYTES];
        b[0..4].copy_from_slice(&self.faulted.to_le_bytes());
        b[4..8].copy_from_slice(&self.count.to_le_bytes());
        b[8..12].copy_from_slice(&self.kind.to_le_bytes());
        b[12..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.current.0.to_le_bytes());
        b[24..32].copy_from_slice(&self.other.0.to_le_bytes());
        for (k, v) in self.block.iter().enumerate() {
            b[32 + 4 * k..36 + 4 * k].copy_from_slice(&v.to_le_bytes());
        }
        b[64..68].copy_from_slice(&self.disabled.to_le_bytes());
        b
    }
}

/// Reads a [`RaceRecord`] from the bytes of the race record (`None` when too short).
pub fn decode_race(bytes: &[u8]) -> Option<RaceRecord> {
    let b = bytes.get(..RACE_RECORD_BYTES)?;
    let u32_at = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
    let u64_at = |k: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[k..k + 8]);
        u64::from_le_bytes(w)
    };
    Some(RaceRecord {
        faulted: u32_at(0),
        count: u32_at(4),
        kind: u32_at(8),
        offset: u32_at(12),
        current: AccessWord(u64_at(16)),
        other: AccessWord(u64_at(24)),
        block: [u32_at(32), u32_at(36), u32_at(40)],
        disabled: u32_at(64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = RaceRecord {
            faulted: 1,
            count: 7,
            kind: RaceEventKind::Race.code(),
            offset: 68,
            current: AccessWord((2 << 62) | (3 << 38) | (0xF << 24) | (5 << 10) | 33),
            other: AccessWord((1 << 62) | (3 << 38) | (0x1 << 24) | (9 << 10) | 1),
            block: [4, 5, 6],
            disabled: 0,
        };
        assert_eq!(decode_race(&r.to_bytes()), Some(r));
        assert_eq!(r.current.thread(), 33);
        assert_eq!(r.current.site(), 5);
        assert_eq!(r.current.kind(), Some(AccessKind::Write));
        assert_eq!(r.current.barriers(), 2);
        assert_eq!(r.other.kind(), Some(AccessKind::Read));
        assert_eq!(r.other.byte_mask(), 1);
        assert_eq!(r.event(), Some(RaceEventKind::Race));
        assert!(decode_race(&[0u8; 12]).is_none());
    }
}
