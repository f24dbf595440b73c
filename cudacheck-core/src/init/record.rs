//! The init record: what an init-checked kernel writes when it reads memory nothing wrote. It
//! sits after the race record ([`INIT_RECORD_OFFSET`]) in the same block of device memory as
//! the bounds fault record, so an init-checked build takes no hidden parameter of its own.
//!
//! Layout (little-endian, [`INIT_RECORD_BYTES`]): `faulted` u32 (first wins, `atomicCAS`),
//! `count` u32 (every unwritten read of the launch), `site` u32, `bytes` u32 (of the access),
//! `address` u64 (the device address read; for shared memory, the shared-window address),
//! `missing` u32 (bit `k` set when byte `k` of the access was never written), `space` u32 (0
//! global, 1 shared), `thread` 3 x u32 at byte 32, `block` 3 x u32 at byte 44. The offsets are written twice, here and in `emit.rs`'s cold blocks; the
//! round-trip test and the GPU tests pin them together.

pub use crate::site::{INIT_RECORD_BYTES, INIT_RECORD_OFFSET};

/// The first read of unwritten memory in a launch, as the device wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitRecord {
    /// 1 when a read was recorded.
    pub faulted: u32,
    /// How many reads of unwritten memory the launch made in all (checks that found one).
    pub count: u32,
    /// The site id: an index into the kernel's [`InitSite`](super::InitSite) table.
    pub site: u32,
    /// Bytes the access read.
    pub bytes: u32,
    /// The device address it read.
    pub address: u64,
    /// Bit `k`: byte `k` of the access was never written.
    pub missing: u32,
    /// 1 for shared memory (then [`address`](Self::address) is in the block's shared window),
    /// 0 for global.
    pub space: u32,
    /// `threadIdx` of the reading thread.
    pub thread: [u32; 3],
    /// `blockIdx` of the reading thread.
    pub block: [u32; 3],
}

impl InitRecord {
    /// The first byte of the access that was never written (its offset from
    /// [`address`](Self::address)).
    pub fn first_missing(&self) -> u32 {
        self.missing
            .trailing_zeros()
            .min(self.bytes.saturating_sub(1))
    }

    /// The record as the device lays it out (for tests and fakes of the device).
    pub fn to_bytes(&self) -> [u8; INIT_RECORD_BYTES] {
        let mut b = [0u8; INIT_RECORD_BYTES];
        let mut put = |k: usize, v: &[u8]| b[k..k + v.len()].copy_from_slice(v);
        put(0, &self.faulted.to_le_bytes());
        put(4, &self.count.to_le_bytes());
        put(8, &self.site.to_le_bytes());
        put(12, &self.bytes.to_le_bytes());
        put(16, &self.address.to_le_bytes());
        put(24, &self.missing.to_le_bytes());
        put(28, &self.space.to_le_bytes());
        for (k, v) in self.thread.iter().enumerate() {
            put(32 + 4 * k, &v.to_le_bytes());
        }
        for (k, v) in self.block.iter().enumerate() {
            put(44 + 4 * k, &v.to_le_bytes());
        }
        b
    }
}

/// Reads an init record from the bytes at [`INIT_RECORD_OFFSET`]; `None` when they are too few
/// or nothing was recorded.
pub fn decode_init(bytes: &[u8]) -> Option<InitRecord> {
    let b = bytes.get(..INIT_RECORD_BYTES)?;
    let u32_at = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[16..24]);
    let r = InitRecord {
        faulted: u32_at(0),
        count: u32_at(4),
        site: u32_at(8),
        bytes: u32_at(12),
        address: u64::from_le_bytes(w),
        missing: u32_at(24),
        space: u32_at(28),
        thread: [u32_at(32), u32_at(36), u32_at(40)],
        block: [u32_at(44), u32_at(48), u32_at(52)],
    };
    (r.faulted != 0).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = InitRecord {
            faulted: 1,
            count: 9,
            site: 3,
            bytes: 16,
            address: 0x7f00_0000_1230,
            missing: 0xFF00,
            space: 1,
            thread: [5, 1, 0],
            block: [7, 2, 1],
        };
        assert_eq!(decode_init(&r.to_bytes()), Some(r));
        assert_eq!(r.first_missing(), 8);
        assert_eq!(decode_init(&[0u8; INIT_RECORD_BYTES]), None);
        assert_eq!(decode_init(&[1u8; 8]), None);
    }

    #[test]
    fn the_record_follows_the_race_record() {
        assert_eq!(INIT_RECORD_OFFSET, 256);
    }
}
