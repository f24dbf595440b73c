//! The host's half of the global shadow ([`super::shadow`]): the directory, the tables and the
//! granules' shadows that exist, the allocations in them, and what each host-side event (an
//! allocation, a write, a free) changes in device memory. `cudacheck run --init` and the
//! library's tracked buffers (`cudacheck::alloc_uninit`) each keep one [`ShadowMap`] per
//! context and do its device work through their own driver calls ([`ShadowDevice`]), so the
//! two cannot disagree about the layout a checked kernel reads.
//!
//! The two differ in one thing, [`Untracked`]: the interposer sees every allocation, so the
//! bytes of a shadowed granule outside any allocation it knows are unwritten (a freed buffer's
//! memory starts unwritten when it is reused); the library sees only the buffers made through
//! it, so every other byte of a granule counts as written, from the granule's shadow being made
//! (filled with ones) and again once a tracked buffer is freed (its bits set).
//!
//! Memory cost ([`ShadowMap::device_bytes`]): the directory ([`DIR_ENTRIES`] pointers, 2 MiB),
//! 4 KiB of table per GiB of address space holding a tracked allocation, and
//! [`SHADOW_BYTES`] (256 KiB, 1/8) per 2 MiB granule holding one; a granule's shadow is freed
//! with the last tracked allocation in it when the caller allows it.

use std::collections::{BTreeMap, HashMap};

use super::shadow::{
    dir_index, granule_of, marks, table_index, DIR_ENTRIES, GRANULE_BYTES, SHADOW_BYTES,
    TABLE_ENTRIES,
};

/// The one-thread kernel ([`BITS_KERNEL`]) that updates one shadow word: `w = (w & keep) | set`,
/// for the unaligned ends of a marked range (whole shadow bytes are memsets). Parameters: the
/// word's address (`.u64`), `set` and `keep` (`.u32`).
pub const BITS_PTX: &str = "\
.version 6.4
.target sm_52
.address_size 64
.visible .entry __cci_bits(.param .u64 p0, .param .u32 p1, .param .u32 p2)
{
	.reg .b64 %rd<3>;
	.reg .b32 %r<3>;
	ld.param.u64 %rd1, [p0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u32 %r1, [p1];
	ld.param.u32 %r2, [p2];
	red.global.and.b32 [%rd2], %r2;
	red.global.or.b32 [%rd2], %r1;
	ret;
}
";

/// The entry point of [`BITS_PTX`].
pub const BITS_KERNEL: &str = "__cci_bits";

/// The kernel ([`FULL_KERNEL`]) that scans one granule's shadow bits `[lo, hi)` (byte offsets
/// into the granule, `hi > lo`) and stores 0 at `flag` when any of them is clear; every thread
/// a 32-bit word, grid-stride. Parameters (`.u64` each): the granule's shadow, `lo`, `hi`, the
/// flag's address.
pub const FULL_PTX: &str = "\
.version 6.4
.target sm_52
.address_size 64
.visible .entry __cci_full(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3)
{
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<14>;
	ld.param.u64 %rd1, [p0];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u64 %rd2, [p1];
	ld.param.u64 %rd3, [p2];
	ld.param.u64 %rd4, [p3];
	cvta.to.global.u64 %rd4, %rd4;
	shr.u64 %rd5, %rd2, 5;
	add.s64 %rd6, %rd3, -1;
	shr.u64 %rd6, %rd6, 5;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mul.wide.u32 %rd7, %r1, %r2;
	cvt.u64.u32 %rd8, %r3;
	add.s64 %rd7, %rd7, %rd8;
	add.s64 %rd7, %rd7, %rd5;
	mov.u32 %r4, %nctaid.x;
	mul.wide.u32 %rd9, %r4, %r2;
	mov.u32 %r7, 1;
	mov.u32 %r11, 0;
$L:
	setp.gt.u64 %p1, %rd7, %rd6;
	@%p1 bra $done;
	shl.b64 %rd10, %rd7, 5;
	max.u64 %rd11, %rd2, %rd10;
	add.s64 %rd12, %rd10, 32;
	min.u64 %rd12, %rd3, %rd12;
	sub.s64 %rd11, %rd11, %rd10;
	cvt.u32.u64 %r5, %rd11;
	sub.s64 %rd12, %rd12, %rd10;
	cvt.u32.u64 %r6, %rd12;
	shl.b32 %r8, %r7, %r6;
	add.s32 %r8, %r8, -1;
	shl.b32 %r9, %r7, %r5;
	add.s32 %r9, %r9, -1;
	not.b32 %r9, %r9;
	and.b32 %r8, %r8, %r9;
	shl.b64 %rd13, %rd7, 2;
	add.s64 %rd13, %rd1, %rd13;
	ld.global.u32 %r10, [%rd13];
	and.b32 %r10, %r10, %r8;
	setp.ne.u32 %p2, %r10, %r8;
	@%p2 st.global.u32 [%rd4], %r11;
	add.s64 %rd7, %rd7, %rd9;
	bra.uni $L;
$done:
	ret;
}
";

/// The entry point of [`FULL_PTX`].
pub const FULL_KERNEL: &str = "__cci_full";

/// One span of a granule's shadow a scan reads: the shadow's address and the byte offsets
/// `[lo, hi)` into the granule whose bits must all be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanSpan {
    pub shadow: u64,
    pub lo: u64,
    pub hi: u64,
}

/// A tracked allocation, as the map knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Alloc {
    len: u64,
    /// Every bit is known set (only a free clears bits): reading it can find nothing, and
    /// marking all of it again changes nothing.
    full: bool,
    /// Writes that may have filled it since it was made (a kernel's, a copy of part of it).
    writes: u32,
    /// The count of writes at which its shadow is scanned next (1, 2, 4, ...).
    next_scan: u32,
}

impl Alloc {
    fn new(len: u64) -> Alloc {
        Alloc {
            len,
            full: false,
            writes: 0,
            next_scan: 1,
        }
    }
}

/// What the bytes of a shadowed granule that no tracked allocation holds count as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untracked {
    /// Unwritten: the owner sees every allocation (`cudacheck run --init`), so such bytes are
    /// not allocated, or were freed and start unwritten when reused.
    Unwritten,
    /// Written: the owner sees only some allocations (the library's tracked buffers); a
    /// granule's shadow is made full of ones and a freed allocation's bits are set, so no
    /// byte the owner did not see allocated can be reported.
    Written,
}

impl Untracked {
    /// The byte a fresh shadow is filled with, and whether a free sets (rather than clears)
    /// the allocation's bits.
    fn fill(self) -> u8 {
        match self {
            Untracked::Unwritten => 0,
            Untracked::Written => 0xFF,
        }
    }
}

/// The device work a [`ShadowMap`] asks for, done with the owner's driver calls in the
/// owner's current context.
pub trait ShadowDevice {
    /// A stream handle work is ordered on.
    type Stream: Copy;
    /// `bytes` of device memory, every byte `value`, before this returns (a kernel of any
    /// stream may read it once a table points at it); `None` when the driver refuses.
    fn alloc_filled(&mut self, bytes: u64, value: u8) -> Option<u64>;
    /// Writes the pointer `value` at device address `at`, before this returns.
    fn put(&mut self, at: u64, value: u64);
    /// Sets `len` bytes at `at` to `value`, on `stream`.
    fn fill(&mut self, at: u64, len: u64, value: u8, stream: Self::Stream);
    /// `w = (w & keep) | set` of the 32-bit word at `at`, on `stream`.
    fn word(&mut self, at: u64, set: u32, keep: u32, stream: Self::Stream);
    /// Frees a granule's shadow that no table points at any more. Called only when
    /// [`ShadowMap::freed`] was told that no kernel may still read it.
    fn release(&mut self, at: u64);
    /// Whether every bit of every span is set, read on `stream` after the work before it there
    /// ([`FULL_PTX`]); waits for it. `false` when it cannot be asked (the default: an owner
    /// without a scan never learns from the device that an allocation is full).
    fn all_set(&mut self, spans: &[ScanSpan], stream: Self::Stream) -> bool {
        let _ = (spans, stream);
        false
    }
}

/// One context's shadow, as the host knows it. See the module docs.
#[derive(Debug)]
pub struct ShadowMap {
    untracked: Untracked,
    /// The directory's device address (0 until made, or when it could not be).
    dir: u64,
    /// Directory index to its table's device address.
    tables: HashMap<u64, u64>,
    /// Granule to its shadow's device address and the tracked allocations in it.
    granules: HashMap<u64, (u64, u32)>,
    /// Tracked allocations by first byte.
    allocs: BTreeMap<u64, Alloc>,
}

impl ShadowMap {
    /// An empty map: no directory yet.
    pub fn new(untracked: Untracked) -> Self {
        ShadowMap {
            untracked,
            dir: 0,
            tables: HashMap::new(),
            granules: HashMap::new(),
            allocs: BTreeMap::new(),
        }
    }

    /// The directory's address (what the module variable [`super::DIR_SYMBOL`] must hold),
    /// made (zeroed) on first use; 0 when the driver refused it.
    pub fn directory(&mut self, dev: &mut impl ShadowDevice) -> u64 {
        if self.dir == 0 {
            self.dir = dev.alloc_filled(DIR_ENTRIES * 8, 0).unwrap_or(0);
        }
        self.dir
    }

    /// The directory's address if it was made (0 otherwise), without making it.
    pub fn directory_made(&self) -> u64 {
        self.dir
    }

    /// The shadow of `granule`, made when `make` (and the directory and its table with it).
    fn granule(&mut self, dev: &mut impl ShadowDevice, granule: u64, make: bool) -> Option<u64> {
        if let Some(&(s, _)) = self.granules.get(&granule) {
            return Some(s);
        }
        if !make {
            return None;
        }
        let dir = self.directory(dev);
        if dir == 0 {
            return None;
        }
        let d = dir_index(granule);
        let table = match self.tables.get(&d) {
            Some(&t) => t,
            None => {
                let t = dev.alloc_filled(TABLE_ENTRIES * 8, 0)?;
                dev.put(dir + d * 8, t);
                self.tables.insert(d, t);
                t
            }
        };
        let s = dev.alloc_filled(SHADOW_BYTES, self.untracked.fill())?;
        dev.put(table + table_index(granule) * 8, s);
        self.granules.insert(granule, (s, 0));
        Some(s)
    }

    /// Sets (`set`) or clears the bits of `[addr, addr + len)` on `stream`, where its granules
    /// have a shadow.
    pub fn update<D: ShadowDevice>(
        &mut self,
        dev: &mut D,
        addr: u64,
        len: u64,
        set: bool,
        stream: D::Stream,
    ) {
        for m in marks(addr, len) {
            let Some(shadow) = self.granule(dev, m.granule, false) else {
                continue;
            };
            if !m.full.is_empty() {
                let v = if set { 0xFF } else { 0 };
                dev.fill(shadow + m.full.start, m.full.end - m.full.start, v, stream);
            }
            for (byte, bits) in m.partial {
                let shifted = u32::from(bits) << (8 * (byte % 4));
                let (or, keep) = if set {
                    (shifted, u32::MAX)
                } else {
                    (0, !shifted)
                };
                dev.word(shadow + (byte & !3), or, keep, stream);
            }
        }
    }

    /// An allocation of `[base, base + len)` was made: its granules get a shadow (when `make`;
    /// a granule without one counts as written) and its bits are cleared on `stream` (`None`:
    /// leave them, as during a stream capture, where the bits were cleared when the memory
    /// was last freed).
    pub fn allocated<D: ShadowDevice>(
        &mut self,
        dev: &mut D,
        base: u64,
        len: u64,
        make: bool,
        stream: Option<D::Stream>,
    ) {
        if len == 0 {
            return;
        }
        let mut g = granule_of(base);
        while g < base.saturating_add(len) {
            if self.granule(dev, g, make).is_some() {
                if let Some(e) = self.granules.get_mut(&g) {
                    e.1 += 1;
                }
            }
            g += GRANULE_BYTES;
        }
        self.allocs.insert(base, Alloc::new(len));
        if let Some(stream) = stream {
            self.update(dev, base, len, false, stream);
        }
    }

    /// The tracked allocation starting at `base` is being freed: its bits become what
    /// [`Untracked`] says on `stream`, and a granule no tracked allocation holds any more
    /// loses its shadow when `may_release` says so (asked at most once, and only then: the
    /// owner may have to wait for every kernel that could still read the shadow). Returns
    /// whether `base` was tracked.
    pub fn freed<D: ShadowDevice>(
        &mut self,
        dev: &mut D,
        base: u64,
        stream: D::Stream,
        may_release: impl FnOnce() -> bool,
    ) -> bool {
        let Some(Alloc { len, .. }) = self.allocs.remove(&base) else {
            return false;
        };
        let set = self.untracked == Untracked::Written;
        self.update(dev, base, len, set, stream);
        let mut may_release = Some(may_release);
        let mut release = false;
        let mut g = granule_of(base);
        while g < base.saturating_add(len) {
            if let Some(e) = self.granules.get_mut(&g) {
                e.1 = e.1.saturating_sub(1);
                if e.1 == 0 {
                    if let Some(ask) = may_release.take() {
                        release = ask();
                    }
                }
                if e.1 == 0 && release {
                    let shadow = e.0;
                    self.granules.remove(&g);
                    if let Some(&t) = self.tables.get(&dir_index(g)) {
                        dev.put(t + table_index(g) * 8, 0);
                    }
                    dev.release(shadow);
                }
            }
            g += GRANULE_BYTES;
        }
        true
    }

    /// `[addr, addr + len)` was written; ordered on `stream`.
    pub fn written<D: ShadowDevice>(
        &mut self,
        dev: &mut D,
        addr: u64,
        len: u64,
        stream: D::Stream,
    ) {
        if len > 0 {
            self.update(dev, addr, len, true, stream);
            self.note_write(addr, len);
        }
    }

    /// A write of `[addr, addr + len)` that set its bits: an allocation it covers is full, one
    /// it covers in part may be (a write towards its next scan).
    fn note_write(&mut self, addr: u64, len: u64) {
        let end = addr.saturating_add(len);
        let first = self.holding(addr).map_or(addr, |(b, _)| b);
        for (&b, a) in self.allocs.range_mut(first..end) {
            if addr <= b && end >= b.saturating_add(a.len) {
                a.full = true;
            } else {
                a.writes = a.writes.saturating_add(1);
            }
        }
    }

    /// The tracked allocations a launch can reach (their first bytes): those `words` (the
    /// launch's arguments, 8 bytes at a time) point into, or every one (`None`: the kernel may
    /// reach memory its arguments do not point into).
    fn reached(&self, words: Option<&[u64]>) -> Vec<u64> {
        match words {
            Some(w) => {
                let mut v: Vec<u64> = w
                    .iter()
                    .filter_map(|&p| self.holding(p).map(|(b, _)| b))
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            None => self.allocs.keys().copied().collect(),
        }
    }

    /// Whether a launch needs global memory init-checked: some tracked allocation it can reach
    /// (one `words`, the launch's arguments 8 bytes at a time, point into; every one when
    /// `None`) may hold unwritten bytes. One not known full whose writes reached its next scan
    /// count is scanned on the device first (on `stream`, waiting for it); the next scan of one
    /// found short waits for twice its writes, so a buffer that stays short costs a scan at its
    /// 1st, 2nd, 4th, 8th... write.
    pub fn needs_global<D: ShadowDevice>(
        &mut self,
        dev: &mut D,
        words: Option<&[u64]>,
        stream: D::Stream,
    ) -> bool {
        for b in self.reached(words) {
            let Some(a) = self.allocs.get(&b).copied() else {
                continue;
            };
            if a.full {
                continue;
            }
            if a.writes < a.next_scan {
                return true;
            }
            let spans = self.spans(b, a.len);
            let full = dev.all_set(&spans, stream);
            if let Some(a) = self.allocs.get_mut(&b) {
                a.full = full;
                a.next_scan = a
                    .writes
                    .saturating_mul(2)
                    .max(a.next_scan.saturating_mul(2));
            }
            if !full {
                return true;
            }
        }
        false
    }

    /// A launch that init-checks global memory (so marks what it writes) ran: each tracked
    /// allocation it can reach that is not known full may have been written.
    pub fn launched_global(&mut self, words: Option<&[u64]>) {
        for b in self.reached(words) {
            if let Some(a) = self.allocs.get_mut(&b) {
                if !a.full {
                    a.writes = a.writes.saturating_add(1);
                }
            }
        }
    }

    /// The shadow spans of `[base, base + len)`, one per granule that has a shadow (a granule
    /// without one counts as written).
    fn spans(&self, base: u64, len: u64) -> Vec<ScanSpan> {
        let end = base.saturating_add(len);
        let mut out = Vec::new();
        let mut g = granule_of(base);
        while g < end {
            if let Some(&(shadow, _)) = self.granules.get(&g) {
                out.push(ScanSpan {
                    shadow,
                    lo: base.max(g) - g,
                    hi: end.min(g.saturating_add(GRANULE_BYTES)) - g,
                });
            }
            g = g.saturating_add(GRANULE_BYTES);
        }
        out
    }

    /// The tracked allocation holding `addr`: its first byte and length.
    pub fn holding(&self, addr: u64) -> Option<(u64, u64)> {
        let (&base, a) = self.allocs.range(..=addr).next_back()?;
        (addr < base.saturating_add(a.len)).then_some((base, a.len))
    }

    /// Every tracked allocation `holds(base, len)` picks counts as written from now on (a
    /// launch that cannot mark what it writes may have written it); one already marked whole
    /// costs nothing.
    pub fn all_written<D: ShadowDevice>(
        &mut self,
        dev: &mut D,
        stream: D::Stream,
        holds: impl Fn(u64, u64) -> bool,
    ) {
        let picked: Vec<(u64, u64)> = self
            .allocs
            .iter()
            .filter(|(_, a)| !a.full)
            .map(|(&b, a)| (b, a.len))
            .filter(|&(b, n)| holds(b, n))
            .collect();
        for (b, n) in picked {
            self.update(dev, b, n, true, stream);
            if let Some(a) = self.allocs.get_mut(&b) {
                a.full = true;
            }
        }
    }

    /// Whether any allocation is tracked.
    pub fn is_empty(&self) -> bool {
        self.allocs.is_empty()
    }

    /// Bytes of device memory the shadow holds now: the directory, the tables and the
    /// granules' shadows.
    pub fn device_bytes(&self) -> u64 {
        let dir = if self.dir == 0 { 0 } else { DIR_ENTRIES * 8 };
        dir + self.tables.len() as u64 * TABLE_ENTRIES * 8
            + self.granules.len() as u64 * SHADOW_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device memory as a map of bytes, allocated from a bump pointer; every call is done at
    /// once (one stream).
    #[derive(Default)]
    pub(super) struct Model {
        pub(super) mem: HashMap<u64, u8>,
        pub(super) next: u64,
        pub(super) live: HashMap<u64, u64>,
        pub(super) released: Vec<u64>,
        pub(super) scans: u32,
    }

    impl Model {
        fn u64_at(&self, at: u64) -> u64 {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                *x = self.mem.get(&(at + k as u64)).copied().unwrap_or(0);
            }
            u64::from_le_bytes(b)
        }

        /// What a checked kernel finds for the byte at `addr`: written unless a directory,
        /// table and shadow say it is not (the device's lookup, `emit.rs`).
        fn written(&self, dir: u64, addr: u64) -> bool {
            if dir == 0 {
                return true;
            }
            let table = self.u64_at(dir + dir_index(addr) * 8);
            if table == 0 {
                return true;
            }
            let shadow = self.u64_at(table + table_index(addr) * 8);
            if shadow == 0 {
                return true;
            }
            let o = addr - granule_of(addr);
            let byte = self.mem.get(&(shadow + o / 8)).copied().unwrap_or(0);
            byte & (1 << (o % 8)) != 0
        }
    }

    impl ShadowDevice for Model {
        type Stream = ();
        fn alloc_filled(&mut self, bytes: u64, value: u8) -> Option<u64> {
            self.next += 1 << 40;
            let at = self.next;
            if value != 0 {
                for k in 0..bytes {
                    self.mem.insert(at + k, value);
                }
            }
            self.live.insert(at, bytes);
            Some(at)
        }
        fn put(&mut self, at: u64, value: u64) {
            for (k, b) in value.to_le_bytes().into_iter().enumerate() {
                self.mem.insert(at + k as u64, b);
            }
        }
        fn fill(&mut self, at: u64, len: u64, value: u8, _: ()) {
            for k in 0..len {
                self.mem.insert(at + k, value);
            }
        }
        fn word(&mut self, at: u64, set: u32, keep: u32, _: ()) {
            let mut w = 0u32;
            for k in 0..4 {
                w |= u32::from(self.mem.get(&(at + k)).copied().unwrap_or(0)) << (8 * k);
            }
            w = (w & keep) | set;
            for (k, b) in w.to_le_bytes().into_iter().enumerate() {
                self.mem.insert(at + k as u64, b);
            }
        }
        fn release(&mut self, at: u64) {
            assert!(self.live.remove(&at).is_some(), "released twice");
            self.released.push(at);
        }
        fn all_set(&mut self, spans: &[ScanSpan], _: ()) -> bool {
            self.scans += 1;
            spans.iter().all(|s| {
                (s.lo..s.hi).all(|o| {
                    let byte = self.mem.get(&(s.shadow + o / 8)).copied().unwrap_or(0);
                    byte & (1 << (o % 8)) != 0
                })
            })
        }
    }

    const G: u64 = 5 * GRANULE_BYTES;

    #[test]
    fn a_tracked_buffer_starts_unwritten_and_its_neighbours_count_as_written() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Written));
        map.allocated(&mut dev, G + 4096, 100, true, Some(()));
        let dir = map.directory_made();
        assert!((G + 4096..G + 4196).all(|a| !dev.written(dir, a)));
        // Untracked memory of the same granule, before and after, and of another granule.
        for a in [
            G,
            G + 4095,
            G + 4196,
            G + GRANULE_BYTES - 1,
            G + GRANULE_BYTES,
        ] {
            assert!(dev.written(dir, a), "{a:#x}");
        }
    }

    #[test]
    fn writes_mark_exactly_their_bytes() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Written));
        map.allocated(&mut dev, G + 64, 400, true, Some(()));
        map.written(&mut dev, G + 64, 396, ());
        let dir = map.directory_made();
        assert!((G + 64..G + 460).all(|a| dev.written(dir, a)));
        assert!((G + 460..G + 464).all(|a| !dev.written(dir, a)));
    }

    #[test]
    fn a_freed_tracked_buffer_counts_as_written_and_its_last_granule_goes() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Written));
        map.allocated(&mut dev, G + 64, 100, true, Some(()));
        map.allocated(&mut dev, G + 8192, 100, true, Some(()));
        let dir = map.directory_made();
        assert_eq!(
            map.device_bytes(),
            DIR_ENTRIES * 8 + TABLE_ENTRIES * 8 + SHADOW_BYTES
        );
        assert!(map.freed(&mut dev, G + 64, (), || true));
        assert!(dev.written(dir, G + 64), "freed memory reused untracked");
        assert!(
            !dev.written(dir, G + 8192),
            "the other buffer keeps its state"
        );
        assert!(dev.released.is_empty());
        assert!(map.freed(&mut dev, G + 8192, (), || true));
        assert_eq!(dev.released.len(), 1);
        assert!(dev.written(dir, G + 8192));
        assert_eq!(map.device_bytes(), DIR_ENTRIES * 8 + TABLE_ENTRIES * 8);
        assert!(
            !map.freed(&mut dev, G + 8192, (), || true),
            "not tracked any more"
        );
    }

    #[test]
    fn the_interposer_s_freed_memory_starts_unwritten() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Unwritten));
        map.allocated(&mut dev, G, 256, true, Some(()));
        map.written(&mut dev, G, 256, ());
        map.allocated(&mut dev, G + 256, 256, true, Some(()));
        let dir = map.directory_made();
        assert!(!dev.written(dir, G + 1024), "outside every allocation");
        assert!(map.freed(&mut dev, G, (), || false));
        assert!(!dev.written(dir, G), "freed memory starts unwritten");
        assert!(dev.released.is_empty());
    }

    #[test]
    fn allocations_across_granules_shadow_each() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Written));
        map.allocated(&mut dev, G + GRANULE_BYTES - 8, 16, true, Some(()));
        let dir = map.directory_made();
        assert!(!dev.written(dir, G + GRANULE_BYTES - 8));
        assert!(!dev.written(dir, G + GRANULE_BYTES + 7));
        assert!(dev.written(dir, G + GRANULE_BYTES + 8));
        assert!(map.freed(&mut dev, G + GRANULE_BYTES - 8, (), || true));
        assert_eq!(dev.released.len(), 2);
    }

    #[test]
    fn holding_and_all_written_find_the_allocation() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Written));
        map.allocated(&mut dev, G + 64, 100, true, Some(()));
        map.allocated(&mut dev, G + 1024, 100, true, Some(()));
        assert_eq!(map.holding(G + 163), Some((G + 64, 100)));
        assert_eq!(map.holding(G + 164), None);
        assert_eq!(map.holding(G + 63), None);
        let pointer = G + 1030;
        map.all_written(&mut dev, (), |b, n| (b..b + n).contains(&pointer));
        let dir = map.directory_made();
        assert!((G + 1024..G + 1124).all(|a| dev.written(dir, a)));
        assert!(!dev.written(dir, G + 64));
    }

    #[test]
    fn without_a_shadow_nothing_is_unwritten() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Written));
        map.allocated(&mut dev, G, 100, false, None);
        assert_eq!(map.directory_made(), 0);
        assert!(dev.written(map.directory_made(), G));
    }
}

#[cfg(test)]
mod elision_tests {
    use super::tests::Model;
    use super::*;

    const G: u64 = 9 * GRANULE_BYTES;

    #[test]
    fn a_launch_reaching_only_written_memory_needs_no_global_checks() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Unwritten));
        // `a` filled by a kernel, `out` by a memset of all of it.
        map.allocated(&mut dev, G, 4000, true, Some(()));
        map.allocated(&mut dev, G + 8192, 4000, true, Some(()));
        map.written(&mut dev, G + 8192, 4000, ());
        let words = [G, G + 8192];
        // The filling launch: `a` has unwritten bytes.
        assert!(map.needs_global(&mut dev, Some(&words[..1]), ()));
        map.launched_global(Some(&words[..1]));
        map.written(&mut dev, G, 4000, ()); // what its stores set on the device
                                            // The reader: `a` is scanned once and found full; `out` was full from the memset.
        let before = dev.scans;
        assert!(!map.needs_global(&mut dev, Some(&words), ()));
        assert_eq!(
            dev.scans, before,
            "a write of all of `a` made it full without a scan"
        );
        assert!(!map.needs_global(&mut dev, Some(&words), ()));
    }

    #[test]
    fn a_buffer_a_kernel_filled_is_found_full_by_a_scan_and_one_left_short_is_rescanned_less_often()
    {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Unwritten));
        map.allocated(&mut dev, G, 4000, true, Some(()));
        // A kernel's stores, as the device marks them (not a host write of the map's).
        let mark = |dev: &mut Model, map: &ShadowMap, from: u64, to: u64| {
            let s = map.spans(G, 4000)[0].shadow;
            for o in from..to {
                let b = dev.mem.entry(s + o / 8).or_insert(0);
                *b |= 1 << (o % 8);
            }
        };
        let w = [G + 16];
        assert!(map.needs_global(&mut dev, Some(&w), ()));
        map.launched_global(Some(&w));
        mark(&mut dev, &map, 0, 3996); // short by one element
        let mut scans_at = vec![];
        for launch in 1..=9 {
            let before = dev.scans;
            assert!(map.needs_global(&mut dev, Some(&w), ()), "launch {launch}");
            if dev.scans > before {
                scans_at.push(launch);
            }
            map.launched_global(Some(&w));
        }
        assert_eq!(scans_at, vec![1, 2, 4, 8]);
        // Filled at last: the next scan finds it full, and no launch needs global checks.
        mark(&mut dev, &map, 3996, 4000);
        let mut launch = 10;
        while map.needs_global(&mut dev, Some(&w), ()) {
            map.launched_global(Some(&w));
            launch += 1;
            assert!(launch < 40);
        }
        assert!(!map.needs_global(&mut dev, Some(&w), ()));
        // A kernel that may reach memory its arguments do not point into needs every
        // allocation full: a new one is not.
        map.allocated(&mut dev, G + 8192, 64, true, Some(()));
        assert!(!map.needs_global(&mut dev, Some(&w), ()));
        assert!(map.needs_global(&mut dev, None, ()));
    }

    #[test]
    fn memory_no_allocation_holds_and_granules_without_a_shadow_need_nothing() {
        let (mut dev, mut map) = (Model::default(), ShadowMap::new(Untracked::Unwritten));
        assert!(!map.needs_global(&mut dev, Some(&[G, 7]), ()));
        assert!(!map.needs_global(&mut dev, None, ()));
        // An allocation made during a capture has no shadow: it counts as written, and a scan
        // of no span finds it full.
        map.allocated(&mut dev, G, 64, false, None);
        map.launched_global(Some(&[G]));
        assert!(!map.needs_global(&mut dev, Some(&[G]), ()));
    }
}
