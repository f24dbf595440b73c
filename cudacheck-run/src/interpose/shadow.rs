//! The shadow of the program's device memory for `--init` (reads of memory nothing wrote):
//! one bit per byte, laid out as `cudacheck_core::init::shadow` says, kept per context. A
//! granule's shadow is made (zeroed) when the first device allocation in it is made and freed
//! with the last when that is freed synchronously (one freed in stream order keeps it for the
//! next allocation: kernels before the free may still read it); an allocation's bits are
//! cleared when it is made and when it is freed.
//! Copies, memsets and launches the checker cannot see into set bits; checked kernels set
//! their own on the device.
//!
//! Every change is made on the stream of the call that causes it, after that call: a kernel
//! ordered after a copy (same stream, or an event the program recorded after it) finds the
//! copy's bits set. Whole shadow bytes are memsets; a range's unaligned ends take one launch
//! of a one-thread kernel that or-s (or and-s) the bits into their word.
//!
//! A launch whose kernel can reach no allocation with unwritten bytes runs a build without
//! global checks ([`needs_global`]): a global check there could never fail and a mark never
//! set a new bit, so it would cost the launch and find nothing. Each allocation knows whether
//! every bit of it is set: from the host's writes (a copy or memset of all of it, a zeroed
//! allocation, a launch the checker could not see into) and, for memory kernels wrote, from a
//! scan of its shadow on the device ([`Context::scan`]) made before a launch that would
//! otherwise need the global checks, after a write that may have filled it, at most at the
//! 1st, 2nd, 4th, 8th... such write (each scan waits for the stream).
//!
//! Only memory the device alone writes has a shadow: `cuMemAlloc`, pitched and stream-ordered
//! allocations. Managed, host-mapped and registered host memory (the CPU writes it without a
//! call the interposer sees) and virtual-memory mappings have none, so they count as written.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_uint, c_void, CString};
use std::sync::{Mutex, OnceLock};

use cudacheck_core::init::shadow::{
    dir_index, granule_of, marks, table_index, DIR_ENTRIES, GRANULE_BYTES, SHADOW_BYTES,
    TABLE_ENTRIES,
};

use super::ffi::{call, CUcontext, CUfunction, CUmodule, CUstream, CUDA_SUCCESS};
use super::state::state;

/// `CU_STREAM_PER_THREAD`: the per-thread default stream as a handle any entry point takes.
const PER_THREAD: usize = 2;

/// The one-thread kernel that updates one shadow word: `w = (w & keep) | set`.
const BITS_PTX: &str = "\
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

/// Scans one granule's shadow bits `[lo, hi)` (byte offsets into the granule, `hi > lo`) and
/// stores 0 at `flag` when any bit is clear: every thread a 32-bit word, grid-stride.
const FULL_PTX: &str = "\
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

/// A shadowed allocation.
#[derive(Clone, Copy, Debug)]
struct Alloc {
    bytes: u64,
    /// Every bit is known set (only a free clears bits): reading it can find nothing, and a
    /// launch the checker cannot see into need not set them again.
    full: bool,
    /// Writes that may have filled it since it was made (a kernel's, a copy of part of it).
    writes: u32,
    /// The count of writes at which its shadow is scanned next (1, 2, 4, ...).
    next_scan: u32,
}

impl Alloc {
    fn new(bytes: u64) -> Alloc {
        Alloc {
            bytes,
            full: false,
            writes: 0,
            next_scan: 1,
        }
    }

    fn holds(&self, base: u64, p: u64) -> bool {
        p >= base && p < base.saturating_add(self.bytes)
    }
}

/// One context's shadow.
#[derive(Default)]
struct Context {
    /// The directory's device address (0 until made).
    dir: u64,
    /// Directory index to its table's device address.
    tables: HashMap<u64, u64>,
    /// Granule to its shadow's device address and the shadowed allocations in it.
    granules: HashMap<u64, (u64, u32)>,
    /// Shadowed allocations by first byte.
    allocs: BTreeMap<u64, Alloc>,
    bits: Option<(usize, usize)>,
    full_kernel: Option<(usize, usize)>,
    /// 4 bytes of device memory the scan kernel clears when a bit is not set.
    flag: u64,
}

fn contexts() -> &'static Mutex<HashMap<usize, Context>> {
    static C: OnceLock<Mutex<HashMap<usize, Context>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

fn on() -> bool {
    state().opts.init
}

fn current() -> Option<CUcontext> {
    state().current_context()
}

/// One of the interposer's own kernels, loaded in the current context: (module, function).
fn our_kernel(ptx: &str, name: &str) -> Option<(usize, usize)> {
    let text = CString::new(ptx).ok()?;
    let mut m: CUmodule = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PTX text; our own module.
    if unsafe { call!(cuModuleLoadData(&mut m, text.as_ptr().cast::<c_void>())) } != CUDA_SUCCESS {
        return None;
    }
    let mut f: CUfunction = std::ptr::null_mut();
    let name = CString::new(name).ok()?;
    // SAFETY: the module just loaded; a NUL-terminated name.
    if unsafe { call!(cuModuleGetFunction(&mut f, m, name.as_ptr())) } != CUDA_SUCCESS {
        return None;
    }
    Some((m as usize, f as usize))
}

/// Device memory of `bytes`, zeroed; 0 when the driver refuses.
fn zeroed(bytes: u64) -> u64 {
    let mut p = 0u64;
    // SAFETY: a valid out-pointer; the interposer's own allocation.
    if unsafe { call!(cuMemAlloc_v2(&mut p, bytes as usize)) } != CUDA_SUCCESS {
        return 0;
    }
    // SAFETY: the allocation just made, `bytes` long.
    if unsafe { call!(cuMemsetD8_v2(p, 0, bytes as usize)) } != CUDA_SUCCESS {
        return 0;
    }
    p
}

/// Writes a pointer into a table slot (synchronously: the tables change only here).
fn put(at: u64, value: u64) {
    let v = value.to_le_bytes();
    // SAFETY: `at` is 8 bytes of one of our tables; `v` 8 bytes of host memory.
    unsafe { call!(cuMemcpyHtoD_v2(at, v.as_ptr().cast::<c_void>(), 8)) };
}

impl Context {
    fn directory(&mut self) -> u64 {
        if self.dir == 0 {
            self.dir = zeroed(DIR_ENTRIES * 8);
            // Loaded now, outside any stream capture (a module load inside one may end it).
            let _ = self.bits_kernel();
            let _ = self.full_kernel();
        }
        self.dir
    }

    /// The shadow of `granule`, made when `make`.
    fn granule(&mut self, granule: u64, make: bool) -> Option<u64> {
        if let Some(&(s, _)) = self.granules.get(&granule) {
            return Some(s);
        }
        if !make {
            return None;
        }
        let dir = self.directory();
        if dir == 0 {
            return None;
        }
        let d = dir_index(granule);
        let table = match self.tables.get(&d) {
            Some(&t) => t,
            None => {
                let t = zeroed(TABLE_ENTRIES * 8);
                if t == 0 {
                    return None;
                }
                put(dir + d * 8, t);
                self.tables.insert(d, t);
                t
            }
        };
        let s = zeroed(SHADOW_BYTES);
        if s == 0 {
            return None;
        }
        put(table + table_index(granule) * 8, s);
        self.granules.insert(granule, (s, 0));
        Some(s)
    }

    fn bits_kernel(&mut self) -> Option<CUfunction> {
        if self.bits.is_none() {
            self.bits = Some(our_kernel(BITS_PTX, "__cci_bits")?);
        }
        self.bits.map(|(_, f)| f as CUfunction)
    }

    fn full_kernel(&mut self) -> Option<CUfunction> {
        if self.full_kernel.is_none() {
            self.full_kernel = Some(our_kernel(FULL_PTX, "__cci_full")?);
        }
        self.full_kernel.map(|(_, f)| f as CUfunction)
    }

    /// Whether every shadow bit of the allocation at `base` is set, asked of the device on
    /// `stream` (after the work before it there); waits for the stream. `false` when it
    /// cannot be asked.
    fn scan(&mut self, base: u64, bytes: u64, stream: CUstream) -> bool {
        let Some(f) = self.full_kernel() else {
            return false;
        };
        if self.flag == 0 {
            self.flag = zeroed(4);
            if self.flag == 0 {
                return false;
            }
        }
        // SAFETY: our 4-byte flag, set on the stream before the scans.
        if unsafe { call!(cuMemsetD32Async(self.flag, 1, 1, stream)) } != CUDA_SUCCESS {
            return false;
        }
        let end = base.saturating_add(bytes);
        let mut g = granule_of(base);
        while g < end {
            // A granule without a shadow counts as written.
            if let Some(&(shadow, _)) = self.granules.get(&g) {
                let mut lo = base.max(g) - g;
                let mut hi = end.min(g.saturating_add(GRANULE_BYTES)) - g;
                let words = (hi - 1) / 32 - lo / 32 + 1;
                let blocks = words.div_ceil(256).min(1024) as c_uint;
                let (mut sh, mut flag) = (shadow, self.flag);
                let mut args: [*mut c_void; 4] = [
                    (&mut sh as *mut u64).cast(),
                    (&mut lo as *mut u64).cast(),
                    (&mut hi as *mut u64).cast(),
                    (&mut flag as *mut u64).cast(),
                ];
                // SAFETY: our scan kernel and its four parameters, alive for the call.
                let r = unsafe {
                    call!(cuLaunchKernel(
                        f,
                        blocks,
                        1,
                        1,
                        256,
                        1,
                        1,
                        0 as c_uint,
                        stream,
                        args.as_mut_ptr(),
                        std::ptr::null_mut()
                    ))
                };
                if r != CUDA_SUCCESS {
                    return false;
                }
            }
            g = g.saturating_add(GRANULE_BYTES);
        }
        let mut v = 0u32;
        // SAFETY: 4 bytes of host memory; the copy is ordered after the scans, and the stream
        // is waited for before `v` is read.
        unsafe {
            if call!(cuMemcpyDtoHAsync_v2(
                (&mut v as *mut u32).cast::<c_void>(),
                self.flag,
                4,
                stream
            )) != CUDA_SUCCESS
                || call!(cuStreamSynchronize(stream)) != CUDA_SUCCESS
            {
                return false;
            }
        }
        v == 1
    }

    /// The allocation holding `p`, by its first byte.
    fn alloc_of(&self, p: u64) -> Option<u64> {
        self.allocs
            .range(..=p)
            .next_back()
            .filter(|(&b, a)| a.holds(b, p))
            .map(|(&b, _)| b)
    }

    /// The allocations a launch can reach: those its argument words point into, or all when
    /// the kernel may reach memory its arguments do not point into (`words` `None`).
    fn reached(&self, words: Option<&[u64]>) -> Vec<u64> {
        match words {
            Some(w) => {
                let mut v: Vec<u64> = w.iter().filter_map(|&p| self.alloc_of(p)).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            None => self.allocs.keys().copied().collect(),
        }
    }

    /// A host write of `[addr, addr + len)` (set bits): an allocation it covers is full; one it
    /// covers in part may be.
    fn note_write(&mut self, addr: u64, len: u64) {
        let end = addr.saturating_add(len);
        let first = self.alloc_of(addr).unwrap_or(addr);
        for (&b, a) in self.allocs.range_mut(first..end) {
            if addr <= b && end >= b.saturating_add(a.bytes) {
                a.full = true;
            } else {
                a.writes = a.writes.saturating_add(1);
            }
        }
    }

    /// Sets (`set`) or clears the bits of `[addr, addr + len)` on `stream`, where granules
    /// have a shadow.
    fn update(&mut self, addr: u64, len: u64, set: bool, stream: CUstream) {
        for m in marks(addr, len) {
            let Some(shadow) = self.granule(m.granule, false) else {
                continue;
            };
            if !m.full.is_empty() {
                let v = if set { 0xFF } else { 0 };
                // SAFETY: a range of this granule's shadow, ordered on the caller's stream.
                unsafe {
                    call!(cuMemsetD8Async(
                        shadow + m.full.start,
                        v,
                        (m.full.end - m.full.start) as usize,
                        stream
                    ))
                };
            }
            for (byte, bits) in m.partial {
                let Some(f) = self.bits_kernel() else { return };
                let word = shadow + (byte & !3);
                let shifted = u32::from(bits) << (8 * (byte % 4));
                let (mut or, mut keep) = if set {
                    (shifted, u32::MAX)
                } else {
                    (0, !shifted)
                };
                let mut w = word;
                let mut args: [*mut c_void; 3] = [
                    (&mut w as *mut u64).cast(),
                    (&mut or as *mut u32).cast(),
                    (&mut keep as *mut u32).cast(),
                ];
                // SAFETY: our one-thread kernel and its three parameters, alive for the call.
                unsafe {
                    call!(cuLaunchKernel(
                        f,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        0 as c_uint,
                        stream,
                        args.as_mut_ptr(),
                        std::ptr::null_mut()
                    ))
                };
            }
        }
    }
}

/// The stream a call's work went to: a null stream of a per-thread entry point is the
/// thread's own.
pub fn stream_of(stream: CUstream, per_thread: bool) -> CUstream {
    if stream.is_null() && per_thread {
        PER_THREAD as CUstream
    } else {
        stream
    }
}

/// The directory address checked builds of the current context read (0: init checking off
/// or the directory could not be made).
pub fn directory() -> u64 {
    if !on() {
        return 0;
    }
    let Some(ctx) = current() else { return 0 };
    let mut c = contexts().lock().unwrap_or_else(|p| p.into_inner());
    c.entry(ctx as usize).or_default().directory()
}

/// A device allocation was made: its granules get a shadow and its bits are cleared, on
/// `stream` for a stream-ordered allocation, else before this returns (a kernel the program
/// launches next on any stream must not find the clearing still to come).
pub fn allocated(base: u64, bytes: u64, stream: Option<CUstream>) {
    if !on() || bytes == 0 {
        return;
    }
    // During a stream capture no shadow is made and nothing waits (a synchronous allocation
    // or wait could end the capture): a granule without one counts as written, and the bits
    // of one that has one were cleared when its memory was freed.
    let capturing = state().captures.load(std::sync::atomic::Ordering::Relaxed) > 0;
    let Some(ctx) = current() else { return };
    let mut all = contexts().lock().unwrap_or_else(|p| p.into_inner());
    let c = all.entry(ctx as usize).or_default();
    let mut g = granule_of(base);
    while g < base.saturating_add(bytes) {
        // A granule whose shadow could not be made has none: its memory counts as written.
        if c.granule(g, !capturing).is_some() {
            if let Some(e) = c.granules.get_mut(&g) {
                e.1 += 1;
            }
        }
        g += GRANULE_BYTES;
    }
    c.allocs.insert(base, Alloc::new(bytes));
    if capturing {
        return;
    }
    c.update(base, bytes, false, stream.unwrap_or(std::ptr::null_mut()));
    if stream.is_none() {
        // SAFETY: the legacy default stream of the current context.
        unsafe { call!(cuStreamSynchronize(std::ptr::null_mut())) };
    }
}

/// A device allocation is being freed: its bits are cleared (memory reused for another
/// allocation starts unwritten) and a granule no allocation holds any more loses its shadow.
pub fn freed(base: u64, stream: CUstream) {
    with_current(|c| c.free(base, stream));
}

impl Context {
    /// See [`freed`].
    fn free(&mut self, base: u64, stream: CUstream) {
        let c = self;
        let Some(Alloc { bytes, .. }) = c.allocs.remove(&base) else {
            return;
        };
        c.update(base, bytes, false, stream);
        // A granule's shadow goes with its last allocation when the program frees it
        // synchronously (`cuMemFree` waits for the kernels that may still read it); one freed
        // in stream order stays for the next allocation, as it would be during a capture,
        // where nothing may wait.
        let release =
            stream.is_null() && state().captures.load(std::sync::atomic::Ordering::Relaxed) == 0;
        let mut g = granule_of(base);
        while g < base.saturating_add(bytes) {
            if let Some(e) = c.granules.get_mut(&g) {
                e.1 = e.1.saturating_sub(1);
                if e.1 == 0 && release {
                    let shadow = e.0;
                    c.granules.remove(&g);
                    if let Some(&t) = c.tables.get(&dir_index(g)) {
                        put(t + table_index(g) * 8, 0);
                    }
                    // SAFETY: our shadow allocation, no longer in any table; the `put` above
                    // waited for the work before it.
                    unsafe { call!(cuMemFree_v2(shadow)) };
                }
            }
            g += GRANULE_BYTES;
        }
    }
}

/// `[addr, addr + len)` was written by a call the checker saw (a copy, a memset) or may have
/// been by a kernel it could not check; ordered on `stream`.
pub fn written(addr: u64, len: u64, stream: CUstream) {
    if len > 0 {
        with_current(|c| {
            c.update(addr, len, true, stream);
            c.note_write(addr, len);
        });
    }
}

/// `f` on the current context's shadow, when `--init` is on and the context has one.
fn with_current(f: impl FnOnce(&mut Context)) {
    if !on() {
        return;
    }
    let Some(ctx) = current() else { return };
    let mut all = contexts().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = all.get_mut(&(ctx as usize)) {
        f(c);
    }
}

/// Every shadowed allocation of the current context `holds` says was reachable is written:
/// a launch the checker could not rewrite may have written any of them.
pub fn all_written(stream: CUstream, holds: impl Fn(u64, u64) -> bool) {
    with_current(|c| {
        let allocs: Vec<(u64, u64)> = c
            .allocs
            .iter()
            .filter(|(_, a)| !a.full)
            .map(|(&b, a)| (b, a.bytes))
            .collect();
        for (b, n) in allocs {
            if holds(b, n) {
                c.update(b, n, true, stream);
                if let Some(a) = c.allocs.get_mut(&b) {
                    a.full = true;
                }
            }
        }
    });
}

/// Whether a launch on `stream` needs the build that checks global memory: some allocation it
/// can reach (those `words`, its argument's 8-byte words, point into; every one when `words`
/// is `None`) may hold unwritten bytes. An allocation not known full whose writes reached its
/// next scan count is scanned first (see the module docs). `false` when `--init` is off.
pub fn needs_global(words: Option<&[u64]>, stream: CUstream) -> bool {
    if !on() {
        return false;
    }
    let Some(ctx) = current() else { return true };
    let mut all = contexts().lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = all.get_mut(&(ctx as usize)) else {
        // No allocation was made in it since `--init` was on: nothing has a shadow.
        return false;
    };
    for b in c.reached(words) {
        let Some(a) = c.allocs.get(&b).copied() else { continue };
        if a.full {
            continue;
        }
        if a.writes < a.next_scan {
            return true;
        }
        let full = c.scan(b, a.bytes, stream);
        if let Some(a) = c.allocs.get_mut(&b) {
            a.full = full;
            a.next_scan = a.writes.saturating_mul(2).max(a.next_scan.saturating_mul(2));
        }
        if !full {
            return true;
        }
    }
    false
}

/// A launch of the build that checks global memory ran: each allocation it can reach that is
/// not known full may have been written (counted towards its next scan).
pub fn launched_global(words: Option<&[u64]>) {
    with_current(|c| {
        for b in c.reached(words) {
            if let Some(a) = c.allocs.get_mut(&b) {
                if !a.full {
                    a.writes = a.writes.saturating_add(1);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(allocs: &[(u64, u64)]) -> Context {
        let mut c = Context::default();
        for &(b, n) in allocs {
            c.allocs.insert(b, Alloc::new(n));
        }
        c
    }

    #[test]
    fn a_write_of_a_whole_allocation_fills_it_and_a_part_counts_towards_a_scan() {
        let mut c = context(&[(0x1000, 0x100), (0x1100, 0x80), (0x2000, 0x40)]);
        // All of the first, the start of the second.
        c.note_write(0x1000, 0x110);
        assert!(c.allocs[&0x1000].full);
        assert!(!c.allocs[&0x1100].full);
        assert_eq!(c.allocs[&0x1100].writes, 1);
        // Inside the third, from its middle: not full, one write.
        c.note_write(0x2010, 0x10);
        assert_eq!((c.allocs[&0x2000].full, c.allocs[&0x2000].writes), (false, 1));
        // Memory no allocation holds changes nothing.
        c.note_write(0x3000, 0x100);
        assert_eq!(c.allocs.values().filter(|a| a.full).count(), 1);
    }

    #[test]
    fn a_launch_reaches_what_its_words_point_into_or_everything() {
        let c = context(&[(0x1000, 0x100), (0x2000, 0x40), (0x3000, 0x10)]);
        assert_eq!(c.alloc_of(0x10ff), Some(0x1000));
        assert_eq!(c.alloc_of(0x1100), None);
        assert_eq!(c.alloc_of(0xfff), None);
        // Two pointers into the first, one into the third, an integer that points nowhere.
        assert_eq!(
            c.reached(Some(&[0x1000, 0x1080, 0x3008, 7])),
            vec![0x1000, 0x3000]
        );
        assert_eq!(c.reached(None), vec![0x1000, 0x2000, 0x3000]);
    }

    /// The interposer's own kernels assemble (the NVRTC tier: nvJitLink's `ptxas`).
    #[test]
    fn nvrtc_the_shadow_kernels_assemble() {
        if let Err(e) = cudacheck::nvrtc::jitlink() {
            assert!(
                std::env::var("CUDACHECK_REQUIRE_NVRTC").as_deref() != Ok("1"),
                "CUDACHECK_REQUIRE_NVRTC=1 but nvJitLink was not found:\n{e}"
            );
            println!("skipped (NVRTC tier): nvJitLink not found ({e})");
            return;
        }
        let arch = "sm_90".parse().unwrap();
        for (ptx, name) in [(BITS_PTX, "__cci_bits"), (FULL_PTX, "__cci_full")] {
            let a = cudacheck::nvrtc::assemble_ptx(ptx, arch, name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!a.cubin.is_empty(), "{name}");
        }
    }
}
