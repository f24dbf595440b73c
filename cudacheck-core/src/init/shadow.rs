//! The shadow of global memory: one bit per byte, set once the byte was written, and the byte
//! ranges of it that a host-side write (a copy, a memset, a zeroed allocation) must set.
//!
//! Device memory is shadowed in granules of [`GRANULE_BYTES`] (2 MiB, aligned): a granule that
//! holds any allocation the checker knows gets [`SHADOW_BYTES`] (256 KiB, 1/8 of it) of shadow,
//! bit `o % 8` of byte `o / 8` for the byte at offset `o` (so the 32-bit shadow word
//! `o / 32` holds the 32 bytes from `o & !31`, bit `o % 32` for `o`, little-endian). A checked
//! kernel finds a granule's shadow through a two-level table: the directory, indexed by bits
//! 30..48 of the address ([`DIR_ENTRIES`] pointers, 2 MiB, one per context), points at a table
//! of [`TABLE_ENTRIES`] granule pointers per GiB in use (4 KiB each). A null pointer at either
//! level means "memory the checker does not know", which counts as written: no report can come
//! from memory whose history was never seen.
//!
//! Memory cost: 1/8 of each granule that holds a known allocation (one bit per byte), plus the
//! directory and 4 KiB per GiB of address space in use; the shadow of a granule is freed with
//! the last allocation in it.

use std::ops::Range;

/// Bits of the address below the granule.
pub const GRANULE_SHIFT: u32 = 21;
/// Bytes of device memory one shadow block covers.
pub const GRANULE_BYTES: u64 = 1 << GRANULE_SHIFT;
/// Bytes of shadow per granule: one bit per byte.
pub const SHADOW_BYTES: u64 = GRANULE_BYTES / 8;
/// Bits of the address below one directory entry (1 GiB).
pub const DIR_SHIFT: u32 = 30;
/// Directory entries: addresses below 2^48 (every device address a process has).
pub const DIR_ENTRIES: u64 = 1 << (48 - DIR_SHIFT);
/// Granule pointers per directory entry.
pub const TABLE_ENTRIES: u64 = 1 << (DIR_SHIFT - GRANULE_SHIFT);

/// The granule holding `addr` (its first address).
pub const fn granule_of(addr: u64) -> u64 {
    addr & !(GRANULE_BYTES - 1)
}

/// The directory index of `addr`.
pub const fn dir_index(addr: u64) -> u64 {
    (addr >> DIR_SHIFT) & (DIR_ENTRIES - 1)
}

/// The index of `addr`'s granule in its directory entry's table.
pub const fn table_index(addr: u64) -> u64 {
    (addr >> GRANULE_SHIFT) & (TABLE_ENTRIES - 1)
}

/// The bits of one shadow byte that the data bytes `[first, end)` set, clipped to the shadow
/// byte holding `first`.
fn byte_mask(first: u64, end: u64) -> u8 {
    let lo = (first % 8) as u32;
    let hi = (end - (first & !7)).min(8) as u32;
    (((1u32 << hi) - 1) & !((1u32 << lo) - 1)) as u8
}

/// What marking a byte range of one granule as written changes in its shadow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowMark {
    /// The granule (its first address).
    pub granule: u64,
    /// Shadow bytes (offsets into the granule's shadow) every bit of which is set: a memset
    /// of `0xFF`.
    pub full: Range<u64>,
    /// Shadow bytes only some bits of which are set (a range's unaligned ends): `(offset,
    /// bits)`, or-ed into what is there. At most two.
    pub partial: Vec<(u64, u8)>,
}

/// The shadow changes that mark `[addr, addr + len)` written, one per granule it touches.
pub fn marks(addr: u64, len: u64) -> Vec<ShadowMark> {
    let mut out = Vec::new();
    let end = addr.saturating_add(len);
    let mut at = addr;
    while at < end {
        let g = granule_of(at);
        let stop = end.min(g.saturating_add(GRANULE_BYTES));
        let (lo, hi) = (at - g, stop - g);
        let mut m = ShadowMark {
            granule: g,
            full: 0..0,
            partial: Vec::new(),
        };
        // Whole shadow bytes: data bytes [round_up(lo, 8), round_down(hi, 8)).
        let (full_lo, full_hi) = (lo.div_ceil(8), hi / 8);
        if full_lo < full_hi {
            m.full = full_lo..full_hi;
            if lo % 8 != 0 {
                m.partial.push((lo / 8, byte_mask(lo, hi)));
            }
            if hi % 8 != 0 {
                m.partial.push((hi / 8, byte_mask(hi & !7, hi)));
            }
        } else {
            // Within one or two shadow bytes.
            let mut b = lo;
            while b < hi {
                let next = ((b & !7) + 8).min(hi);
                m.partial.push((b / 8, byte_mask(b, next)));
                b = next;
            }
        }
        out.push(m);
        at = stop;
    }
    out
}

/// The byte ranges a 2D copy of `rows` rows of `width` bytes writes at `addr` with `pitch`
/// bytes between rows' starts: the padding between rows is left as it was.
pub fn pitched(addr: u64, width: u64, pitch: u64, rows: u64) -> Vec<Range<u64>> {
    if width == 0 {
        return Vec::new();
    }
    if pitch == width {
        return std::iter::once(addr..addr + width * rows).collect();
    }
    (0..rows)
        .map(|r| {
            let start = addr + r * pitch;
            start..start + width
        })
        .collect()
}

/// [`pitched`] for a 3D copy: `depth` slices `slice` bytes apart (`pitch * height` for a
/// packed array), each `rows` rows of `width` bytes `pitch` apart.
pub fn pitched3(
    addr: u64,
    width: u64,
    pitch: u64,
    rows: u64,
    slice: u64,
    depth: u64,
) -> Vec<Range<u64>> {
    (0..depth)
        .flat_map(|z| pitched(addr + z * slice, width, pitch, rows))
        .collect()
}

/// The bits of `bytes` bytes at `addr` in their 32-bit shadow word, as the device computes
/// them (an access of `n <= 32` bytes aligned to `n` lies in one word).
pub fn access_mask(addr: u64, bytes: u32) -> u32 {
    let ones = if bytes >= 32 {
        u32::MAX
    } else {
        (1u32 << bytes) - 1
    };
    ones << (addr % 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets the bits a list of marks says in a model of the shadow, keyed by data address.
    fn apply(marks: &[ShadowMark]) -> std::collections::BTreeSet<u64> {
        let mut set = std::collections::BTreeSet::new();
        for m in marks {
            for b in m.full.clone() {
                for bit in 0..8 {
                    set.insert(m.granule + b * 8 + bit);
                }
            }
            for &(b, bits) in &m.partial {
                for bit in 0..8 {
                    if bits & (1 << bit) != 0 {
                        assert!(set.insert(m.granule + b * 8 + bit), "bit set twice");
                    }
                }
            }
        }
        set
    }

    #[test]
    fn every_range_sets_exactly_its_bytes() {
        let g = 7 * GRANULE_BYTES;
        for start in [g, g + 1, g + 3, g + 7, g + 8, g + 13, g + GRANULE_BYTES - 5] {
            for len in [0u64, 1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100] {
                let set = apply(&marks(start, len));
                let want: std::collections::BTreeSet<u64> = (start..start + len).collect();
                assert_eq!(set, want, "start {start:#x} len {len}");
            }
        }
    }

    #[test]
    fn aligned_ranges_are_one_memset() {
        let m = marks(GRANULE_BYTES + 64, 4096);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].full, 8..8 + 512);
        assert!(m[0].partial.is_empty());
    }

    #[test]
    fn unaligned_edges_take_partial_bytes() {
        // Bytes 3..21 of a granule: bits 3..8 of byte 0, byte 1 whole, bits 0..5 of byte 2.
        let m = marks(GRANULE_BYTES + 3, 18);
        assert_eq!(m[0].full, 1..2);
        assert_eq!(m[0].partial, vec![(0, 0b1111_1000), (2, 0b0001_1111)]);
        // Inside one shadow byte.
        let m = marks(GRANULE_BYTES + 2, 3);
        assert_eq!(m[0].partial, vec![(0, 0b0001_1100)]);
    }

    #[test]
    fn ranges_across_granules_split() {
        let m = marks(3 * GRANULE_BYTES - 4, 12);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].granule, 2 * GRANULE_BYTES);
        assert_eq!(m[0].partial, vec![((GRANULE_BYTES - 4) / 8, 0xF0)]);
        assert_eq!(m[1].granule, 3 * GRANULE_BYTES);
        assert_eq!((m[1].full.clone(), m[1].partial.clone()), (0..1, vec![]));
    }

    #[test]
    fn pitch_padding_stays_unwritten() {
        let rows = pitched(1000, 12, 16, 3);
        assert_eq!(rows, vec![1000..1012, 1016..1028, 1032..1044]);
        assert_eq!(pitched(0, 16, 16, 4), vec![0..64]);
        assert!(pitched(0, 0, 16, 4).is_empty());
        let boxes = pitched3(0, 4, 8, 2, 32, 2);
        assert_eq!(boxes, vec![0..4, 8..12, 32..36, 40..44]);
    }

    #[test]
    fn table_indices_cover_the_address() {
        let a = 0x7f12_3456_789au64;
        assert_eq!(dir_index(a), a >> 30);
        assert_eq!((dir_index(a) << 30) + (table_index(a) << 21), granule_of(a));
        assert_eq!(access_mask(32 + 4, 4), 0xF0);
        assert_eq!(access_mask(16, 16), 0xFFFF_0000);
        assert_eq!(access_mask(0, 32), u32::MAX);
    }
}
