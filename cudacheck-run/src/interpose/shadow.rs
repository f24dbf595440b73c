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
//! set a new bit. Each allocation knows whether all of it is written: from a copy or memset of
//! all of it, a launch the checker could not see into, and, for memory kernels write, from a
//! scan of its shadow on the device (`ShadowMap::needs_global`).
//!
//! Only memory the device alone writes has a shadow: `cuMemAlloc`, pitched and stream-ordered
//! allocations. Managed, host-mapped and registered host memory (the CPU writes it without a
//! call the interposer sees) and virtual-memory mappings have none, so they count as written.

use std::collections::HashMap;
use std::ffi::{c_uint, c_void, CString};
use std::sync::{Mutex, OnceLock};

use cudacheck_core::init::host::{
    ScanSpan, ShadowDevice, ShadowMap, Untracked, BITS_KERNEL, BITS_PTX, FULL_KERNEL, FULL_PTX,
};

use super::ffi::{call, CUcontext, CUfunction, CUmodule, CUstream, CUDA_SUCCESS};
use super::state::state;

/// `CU_STREAM_PER_THREAD`: the per-thread default stream as a handle any entry point takes.
const PER_THREAD: usize = 2;

/// One context's shadow: the bookkeeping (`cudacheck_core::init::host`, shared with the
/// library) and the one-thread kernel its device work uses.
struct Context {
    map: ShadowMap,
    kernels: Kernels,
}

/// The interposer's own kernels and the scan's flag, made on first use in the context.
#[derive(Default)]
struct Kernels {
    /// (module, function) of `BITS_PTX` and of `FULL_PTX`.
    bits: Option<(usize, usize)>,
    full: Option<(usize, usize)>,
    /// 4 bytes of device memory the scan clears when a bit is not set.
    flag: u64,
}

impl Default for Context {
    fn default() -> Self {
        // Every allocation of the process is seen: memory outside the ones known is unwritten.
        Context {
            map: ShadowMap::new(Untracked::Unwritten),
            kernels: Kernels::default(),
        }
    }
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

/// The driver calls of the shadow's device work, in the current context.
struct Driver<'a> {
    k: &'a mut Kernels,
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

impl Driver<'_> {
    fn bits_kernel(&mut self) -> Option<CUfunction> {
        if self.k.bits.is_none() {
            self.k.bits = Some(our_kernel(BITS_PTX, BITS_KERNEL)?);
        }
        self.k.bits.map(|(_, f)| f as CUfunction)
    }

    fn full_kernel(&mut self) -> Option<CUfunction> {
        if self.k.full.is_none() {
            self.k.full = Some(our_kernel(FULL_PTX, FULL_KERNEL)?);
        }
        self.k.full.map(|(_, f)| f as CUfunction)
    }
}

impl ShadowDevice for Driver<'_> {
    type Stream = CUstream;

    /// Device memory of `bytes`, every byte `value`; `None` when the driver refuses.
    fn alloc_filled(&mut self, bytes: u64, value: u8) -> Option<u64> {
        let mut p = 0u64;
        // SAFETY: a valid out-pointer; the interposer's own allocation.
        if unsafe { call!(cuMemAlloc_v2(&mut p, bytes as usize)) } != CUDA_SUCCESS {
            return None;
        }
        // SAFETY: the allocation just made, `bytes` long.
        if unsafe { call!(cuMemsetD8_v2(p, value, bytes as usize)) } != CUDA_SUCCESS {
            return None;
        }
        Some(p)
    }

    /// Writes a pointer into a table slot (synchronously: the tables change only here).
    fn put(&mut self, at: u64, value: u64) {
        let v = value.to_le_bytes();
        // SAFETY: `at` is 8 bytes of one of our tables; `v` 8 bytes of host memory.
        unsafe { call!(cuMemcpyHtoD_v2(at, v.as_ptr().cast::<c_void>(), 8)) };
    }

    fn fill(&mut self, at: u64, len: u64, value: u8, stream: CUstream) {
        // SAFETY: a range of a granule's shadow, ordered on the caller's stream.
        unsafe { call!(cuMemsetD8Async(at, value, len as usize, stream)) };
    }

    fn word(&mut self, at: u64, set: u32, keep: u32, stream: CUstream) {
        let Some(f) = self.bits_kernel() else { return };
        let (mut w, mut or, mut keep) = (at, set, keep);
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

    fn release(&mut self, at: u64) {
        // SAFETY: our shadow allocation, no longer in any table; the `put` before it waited
        // for the work before it.
        unsafe { call!(cuMemFree_v2(at)) };
    }

    fn all_set(&mut self, spans: &[ScanSpan], stream: CUstream) -> bool {
        let Some(f) = self.full_kernel() else {
            return false;
        };
        if self.k.flag == 0 {
            self.k.flag = self.alloc_filled(4, 0).unwrap_or(0);
            if self.k.flag == 0 {
                return false;
            }
        }
        // SAFETY: our 4-byte flag, set on the stream before the scans.
        if unsafe { call!(cuMemsetD32Async(self.k.flag, 1, 1, stream)) } != CUDA_SUCCESS {
            return false;
        }
        for s in spans {
            let words = (s.hi - 1) / 32 - s.lo / 32 + 1;
            let blocks = words.div_ceil(256).min(1024) as c_uint;
            let (mut sh, mut lo, mut hi, mut flag) = (s.shadow, s.lo, s.hi, self.k.flag);
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
        let mut v = 0u32;
        // SAFETY: 4 bytes of host memory; the copy is ordered after the scans, and the stream
        // is waited for before `v` is read.
        unsafe {
            call!(cuMemcpyDtoHAsync_v2(
                (&mut v as *mut u32).cast::<c_void>(),
                self.k.flag,
                4,
                stream
            )) == CUDA_SUCCESS
                && call!(cuStreamSynchronize(stream)) == CUDA_SUCCESS
                && v == 1
        }
    }
}

impl Context {
    /// The map and the driver calls it makes.
    fn parts(&mut self) -> (&mut ShadowMap, Driver<'_>) {
        (
            &mut self.map,
            Driver {
                k: &mut self.kernels,
            },
        )
    }

    fn directory(&mut self) -> u64 {
        let (map, mut dev) = self.parts();
        let made = map.directory_made() != 0;
        let dir = map.directory(&mut dev);
        if !made && dir != 0 {
            // Loaded now, outside any stream capture (a module load inside one may end it).
            let _ = dev.bits_kernel();
            let _ = dev.full_kernel();
        }
        dir
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
    if !capturing {
        c.directory();
    }
    let (map, mut dev) = c.parts();
    let clear_on = (!capturing).then(|| stream.unwrap_or(std::ptr::null_mut()));
    map.allocated(&mut dev, base, bytes, !capturing, clear_on);
    if !capturing && stream.is_none() {
        // SAFETY: the legacy default stream of the current context.
        unsafe { call!(cuStreamSynchronize(std::ptr::null_mut())) };
    }
}

/// A device allocation is being freed: its bits are cleared (memory reused for another
/// allocation starts unwritten) and a granule no allocation holds any more loses its shadow.
pub fn freed(base: u64, stream: CUstream) {
    // A granule's shadow goes with its last allocation when the program frees it
    // synchronously (`cuMemFree` waits for the kernels that may still read it); one freed
    // in stream order stays for the next allocation, as it would be during a capture,
    // where nothing may wait.
    let release =
        stream.is_null() && state().captures.load(std::sync::atomic::Ordering::Relaxed) == 0;
    with_current(|c| {
        let (map, mut dev) = c.parts();
        map.freed(&mut dev, base, stream, || release);
    });
}

/// `[addr, addr + len)` was written by a call the checker saw (a copy, a memset) or may have
/// been by a kernel it could not check; ordered on `stream`.
pub fn written(addr: u64, len: u64, stream: CUstream) {
    with_current(|c| {
        let (map, mut dev) = c.parts();
        map.written(&mut dev, addr, len, stream);
    });
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
        let (map, mut dev) = c.parts();
        map.all_written(&mut dev, stream, holds);
    });
}

/// Whether a launch on `stream` needs the build that init-checks global memory: some
/// allocation it can reach (those `words`, its arguments' 8-byte words, point into; every one
/// when `None`) may hold unwritten bytes (`ShadowMap::needs_global`, which may scan). `false`
/// when `--init` is off or the context has no shadow.
pub fn needs_global(words: Option<&[u64]>, stream: CUstream) -> bool {
    if !on() {
        return false;
    }
    static ALWAYS: OnceLock<bool> = OnceLock::new();
    let always = *ALWAYS.get_or_init(|| {
        std::env::var(crate::protocol::ENV_INIT_LOOKUPS).as_deref() == Ok("always")
    });
    if always {
        return true;
    }
    let Some(ctx) = current() else { return true };
    let mut all = contexts().lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = all.get_mut(&(ctx as usize)) else {
        // No allocation was made in it: nothing has a shadow.
        return false;
    };
    let (map, mut dev) = c.parts();
    map.needs_global(&mut dev, words, stream)
}

/// A launch of the build that init-checks global memory ran (see
/// `ShadowMap::launched_global`).
pub fn launched_global(words: Option<&[u64]>) {
    with_current(|c| c.map.launched_global(words));
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for (ptx, name) in [(BITS_PTX, BITS_KERNEL), (FULL_PTX, FULL_KERNEL)] {
            let a = cudacheck::nvrtc::assemble_ptx(ptx, arch, name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!a.cubin.is_empty(), "{name}");
        }
    }
}
