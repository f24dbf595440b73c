//! The fault record: the one block of device memory an instrumented kernel writes when an access
//! goes out of bounds or an assertion fails.
//!
//! The layout is written down twice: here, and as the byte offsets the recording functions of
//! the instrumented PTX store to (`emit.rs`, `__cc_fault` and `__cc_assertfail`); the round-trip
//! test below and the GPU tests pin the two together.

use std::fmt;

/// Bytes of the fault message (an assertion's condition text), NUL-terminated when shorter.
pub const MSG_BYTES: usize = 64;

/// What went wrong at the recorded site; the `kind` field of [`FaultRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// An out-of-bounds read: the kernel got 0 instead of the element.
    Read,
    /// An out-of-bounds write: it was skipped.
    Write,
    /// An out-of-bounds read-modify-write: neither read nor written.
    ReadWrite,
    /// An out-of-bounds atomic: skipped (on global memory it ran on a scratch word of the
    /// module instead of the buffer), its result 0.
    Atomic,
    /// A failed `assert(cond)`: recorded, and the thread ended without a trap.
    Assert,
    /// An out-of-bounds row address of a warp-collective read (`ldmatrix`), which cannot be
    /// skipped for one lane: that lane's row was read from the start of its array instead.
    CollectiveRead,
}

impl FaultKind {
    /// The number the device code stores.
    pub const fn code(self) -> u32 {
        match self {
            FaultKind::Read => 1,
            FaultKind::Write => 2,
            FaultKind::ReadWrite => 3,
            FaultKind::Atomic => 4,
            FaultKind::Assert => 5,
            FaultKind::CollectiveRead => 6,
        }
    }

    /// The kind a stored code stands for, if any.
    pub const fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => FaultKind::Read,
            2 => FaultKind::Write,
            3 => FaultKind::ReadWrite,
            4 => FaultKind::Atomic,
            5 => FaultKind::Assert,
            6 => FaultKind::CollectiveRead,
            _ => return None,
        })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::Read | FaultKind::CollectiveRead => "out-of-bounds read",
            FaultKind::Write => "out-of-bounds write",
            FaultKind::ReadWrite => "out-of-bounds read-modify-write",
            FaultKind::Atomic => "out-of-bounds atomic",
            FaultKind::Assert => "assertion failed",
        })
    }
}

/// The first fault of a launch, as the device wrote it (128 bytes, little-endian, no padding).
///
/// `faulted` is the first-wins flag: the first faulting thread sets it with `atomicCAS` and only
/// that thread fills the other fields, so they all describe the same fault. `count` counts every
/// fault of the launch, including those that lost the race.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    /// 1 when a fault was recorded, else 0.
    pub faulted: u32,
    /// How many faults the launch had in all.
    pub count: u32,
    /// The site id: an index into the module's [`Site`](super::Site) table.
    pub site: u32,
    /// A [`FaultKind`] code.
    pub kind: u32,
    /// The offending byte offset from the buffer's start (negative before it).
    pub offset: i64,
    /// The buffer's length in bytes, as the launch passed it.
    pub len: u64,
    /// `blockIdx` of the faulting thread.
    pub block: [u32; 3],
    /// `threadIdx` of the faulting thread.
    pub thread: [u32; 3],
    /// The line `assert` reported (0 for access faults).
    pub assert_line: u32,
    /// Bytes the faulting access touched (4 for a `float`, 16 for a `float4`).
    pub bytes: u32,
    /// An assertion's message, NUL-terminated if shorter than 64 bytes; for an access fault,
    /// the first 8 bytes are the buffer's base address ([`FaultRecord::base`]).
    pub msg: [u8; MSG_BYTES],
}

pub use crate::site::RECORD_BYTES;

// The layout has no padding: every field is at its natural alignment, and the block's layout
// (`crate::site`) gives the record its size.
const _: () = assert!(std::mem::size_of::<FaultRecord>() == RECORD_BYTES);

impl FaultRecord {
    /// A record with nothing recorded: what the runtime uploads before a launch.
    pub const fn empty() -> Self {
        Self {
            faulted: 0,
            count: 0,
            site: 0,
            kind: 0,
            offset: 0,
            len: 0,
            block: [0; 3],
            thread: [0; 3],
            assert_line: 0,
            bytes: 0,
            msg: [0; MSG_BYTES],
        }
    }

    /// The record's [`FaultKind`], if the stored code is one.
    pub fn fault_kind(&self) -> Option<FaultKind> {
        FaultKind::from_code(self.kind)
    }

    /// For an access fault at a site with several possible buffers, the base address of the
    /// one the pointer held.
    pub fn base(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.msg[..8]);
        u64::from_le_bytes(b)
    }

    /// The assertion message, up to its first NUL, with invalid UTF-8 replaced.
    pub fn message(&self) -> String {
        let end = self.msg.iter().position(|&b| b == 0).unwrap_or(MSG_BYTES);
        String::from_utf8_lossy(&self.msg[..end]).into_owned()
    }

    /// The record as the device lays it out, for uploading.
    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        let mut w = Writer {
            buf: &mut out,
            at: 0,
        };
        w.u32(self.faulted);
        w.u32(self.count);
        w.u32(self.site);
        w.u32(self.kind);
        w.bytes(&self.offset.to_le_bytes());
        w.bytes(&self.len.to_le_bytes());
        for v in self.block.iter().chain(self.thread.iter()) {
            w.u32(*v);
        }
        w.u32(self.assert_line);
        w.u32(self.bytes);
        w.bytes(&self.msg);
        out
    }
}

impl Default for FaultRecord {
    fn default() -> Self {
        Self::empty()
    }
}

struct Writer<'a> {
    buf: &'a mut [u8; RECORD_BYTES],
    at: usize,
}

impl Writer<'_> {
    fn bytes(&mut self, b: &[u8]) {
        // Only called with the fixed field sizes above, which sum to RECORD_BYTES.
        if let Some(dst) = self.buf.get_mut(self.at..self.at + b.len()) {
            dst.copy_from_slice(b);
        }
        self.at += b.len();
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
}

/// Reads a [`FaultRecord`] from the bytes copied back from the device.
///
/// Returns `None` when `bytes` is shorter than [`RECORD_BYTES`]; longer input is read from its
/// start. The fields are decoded as stored; check [`FaultRecord::faulted`] to see whether
/// anything happened.
pub fn decode(bytes: &[u8]) -> Option<FaultRecord> {
    let b = bytes.get(..RECORD_BYTES)?;
    let word =
        |i: usize| -> Option<u32> { Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?)) };
    let faulted = word(0)?;
    let count = word(4)?;
    let site = word(8)?;
    let kind = word(12)?;
    let offset = i64::from_le_bytes(b.get(16..24)?.try_into().ok()?);
    let len = u64::from_le_bytes(b.get(24..32)?.try_into().ok()?);
    let block = [word(32)?, word(36)?, word(40)?];
    let thread = [word(44)?, word(48)?, word(52)?];
    let assert_line = word(56)?;
    let bytes = word(60)?;
    let msg: [u8; MSG_BYTES] = b.get(64..64 + MSG_BYTES)?.try_into().ok()?;
    Some(FaultRecord {
        faulted,
        count,
        site,
        kind,
        offset,
        len,
        block,
        thread,
        assert_line,
        bytes,
        msg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_bytes() {
        let mut r = FaultRecord::empty();
        r.faulted = 1;
        r.count = 7;
        r.site = 3;
        r.kind = FaultKind::Write.code();
        r.offset = -2;
        r.len = 1 << 40;
        r.block = [1, 2, 3];
        r.thread = [4, 5, 6];
        r.msg[..5].copy_from_slice(b"i < n");
        let bytes = r.to_bytes();
        assert_eq!(&bytes[16..24], &(-2i64).to_le_bytes());
        assert_eq!(decode(&bytes), Some(r));
        assert_eq!(r.message(), "i < n");
        assert_eq!(r.fault_kind(), Some(FaultKind::Write));
    }

    #[test]
    fn every_kind_round_trips_through_its_code() {
        use FaultKind::*;
        let all = [Read, Write, ReadWrite, Atomic, Assert, CollectiveRead];
        for k in all {
            assert_eq!(FaultKind::from_code(k.code()), Some(k), "{k:?}");
        }
        let codes: std::collections::BTreeSet<u32> = all.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), all.len(), "codes are distinct");
        assert_eq!(FaultKind::from_code(0), None);
        assert_eq!(FaultKind::from_code(7), None);
    }

    #[test]
    fn short_input_is_none() {
        assert_eq!(decode(&[0u8; RECORD_BYTES - 1]), None);
    }
}
