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
//! Only memory the device alone writes has a shadow: `cuMemAlloc`, pitched and stream-ordered
//! allocations. Managed, host-mapped and registered host memory (the CPU writes it without a
//! call the interposer sees) and virtual-memory mappings have none, so they count as written.

use std::collections::HashMap;
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

/// One context's shadow.
#[derive(Default)]
struct Context {
    /// The directory's device address (0 until made).
    dir: u64,
    /// Directory index to its table's device address.
    tables: HashMap<u64, u64>,
    /// Granule to its shadow's device address and the shadowed allocations in it.
    granules: HashMap<u64, (u64, u32)>,
    /// Shadowed allocations: first byte to length, and whether every bit is known set (so a
    /// launch the checker cannot see into need not set them again: only a free clears bits).
    allocs: HashMap<u64, (u64, bool)>,
    bits: Option<(usize, usize)>,
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
            let text = CString::new(BITS_PTX).ok()?;
            let mut m: CUmodule = std::ptr::null_mut();
            // SAFETY: a NUL-terminated PTX text; our own module.
            if unsafe { call!(cuModuleLoadData(&mut m, text.as_ptr().cast::<c_void>())) }
                != CUDA_SUCCESS
            {
                return None;
            }
            let mut f: CUfunction = std::ptr::null_mut();
            let name = CString::new("__cci_bits").ok()?;
            // SAFETY: the module just loaded; a NUL-terminated name.
            if unsafe { call!(cuModuleGetFunction(&mut f, m, name.as_ptr())) } != CUDA_SUCCESS {
                return None;
            }
            self.bits = Some((m as usize, f as usize));
        }
        self.bits.map(|(_, f)| f as CUfunction)
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
    c.allocs.insert(base, (bytes, false));
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
        let Some((bytes, _)) = c.allocs.remove(&base) else {
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
        with_current(|c| c.update(addr, len, true, stream));
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
            .filter(|(_, &(_, full))| !full)
            .map(|(&b, &(n, _))| (b, n))
            .collect();
        for (b, n) in allocs {
            if holds(b, n) {
                c.update(b, n, true, stream);
                c.allocs.insert(b, (n, true));
            }
        }
    });
}
