//! One context's shadow of global memory for init checking: the tracked buffers
//! ([`crate::TrackedSlice`]) start unwritten, every other byte counts as written
//! ([`Untracked::Written`]). The bookkeeping and the device layout are
//! `cudacheck_core::init::host` and `::shadow`, which `cudacheck run --init` uses too; this
//! module only does their device work with the driver calls of [`crate::driver`].
//!
//! Every call expects the context current on the calling thread. A driver call that fails
//! while marking would leave bits unset that should be set, and a later read would be reported
//! though it was written: the shadow then gives up (its directory is zeroed, so every byte
//! counts as written, and nothing is tracked any more).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use cudacheck_core::init::host::{ShadowDevice, ShadowMap, Untracked, BITS_KERNEL, BITS_PTX};
use cudacheck_core::init::shadow::DIR_ENTRIES;
use cudacheck_core::Dim3;
use cudarc::driver::sys::CUstream;

use crate::driver::{self, DriverError, Function, Module, RawConfig};

/// The shadow of one context's tracked buffers.
#[derive(Debug)]
pub(crate) struct ContextShadow {
    /// Whether any buffer is tracked: launches look at nothing else while none is.
    any: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    map: ShadowMap,
    /// The one-thread kernel that updates a shadow word ([`BITS_PTX`]), loaded with the
    /// directory.
    bits: Option<(Module, Function)>,
    /// A driver call failed: nothing is tracked any more (see the module docs).
    gave_up: bool,
}

/// The driver calls [`ShadowMap`] asks for; the first failure is kept.
struct Device<'a> {
    bits: &'a Option<(Module, Function)>,
    failed: Option<DriverError>,
}

impl Device<'_> {
    fn note(&mut self, r: Result<(), DriverError>) {
        if let (Err(e), None) = (r, &self.failed) {
            self.failed = Some(e);
        }
    }
}

impl ShadowDevice for Device<'_> {
    type Stream = CUstream;

    fn alloc_filled(&mut self, bytes: u64, value: u8) -> Option<u64> {
        let p = match driver::mem_alloc(bytes as usize) {
            Ok(p) => p,
            Err(e) => {
                self.note(Err(e));
                return None;
            }
        };
        // SAFETY: the allocation just made, `bytes` long, used by nothing yet; the null stream
        // and the wait after it order the fill before any kernel that finds it.
        let r = unsafe { driver::memset_d8_async(p, value, bytes as usize, std::ptr::null_mut()) }
            .and_then(|()| driver::stream_synchronize(std::ptr::null_mut()));
        match r {
            Ok(()) => Some(p),
            Err(e) => {
                self.note(Err(e));
                None
            }
        }
    }

    fn put(&mut self, at: u64, value: u64) {
        // SAFETY: `at` is 8 bytes of one of this shadow's tables or its directory, which
        // kernels only read.
        let r = unsafe { driver::memcpy_htod(at, &value.to_le_bytes()) };
        self.note(r);
    }

    fn fill(&mut self, at: u64, len: u64, value: u8, stream: CUstream) {
        // SAFETY: a range of a granule's shadow, ordered on the caller's stream.
        let r = unsafe { driver::memset_d8_async(at, value, len as usize, stream) };
        self.note(r);
    }

    fn word(&mut self, at: u64, set: u32, keep: u32, stream: CUstream) {
        let Some((_, f)) = self.bits else {
            self.note(Err(DriverError::new("cuModuleLoadData", 200)));
            return;
        };
        let (mut w, mut set, mut keep) = (at, set, keep);
        let mut params: [*mut std::ffi::c_void; 3] = [
            (&mut w as *mut u64).cast(),
            (&mut set as *mut u32).cast(),
            (&mut keep as *mut u32).cast(),
        ];
        let cfg = RawConfig {
            grid: Dim3::new(1, 1, 1),
            block: Dim3::new(1, 1, 1),
            shared_bytes: 0,
            cluster: None,
        };
        // SAFETY: `f` is `__cci_bits` of a module loaded in this (current) context; its three
        // parameters are an 8-byte address and two 4-byte words, each pointed at here and
        // alive for the call; it writes one word of a granule's shadow.
        let r = unsafe { driver::launch(f, &cfg, stream, &mut params) };
        self.note(r);
    }

    fn release(&mut self, at: u64) {
        // SAFETY: a granule's shadow no table points at any more; `ContextShadow::untrack`
        // waited for every kernel of the context before asking for its release.
        let r = unsafe { driver::mem_free(at) };
        self.note(r);
    }
}

impl ContextShadow {
    pub(crate) fn new() -> Self {
        ContextShadow {
            any: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                map: ShadowMap::new(Untracked::Written),
                bits: None,
                gave_up: false,
            }),
        }
    }

    /// Whether any buffer of the context is tracked.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `f` with the map and its device; on a driver failure the shadow gives up.
    fn with<R>(&self, f: impl FnOnce(&mut ShadowMap, &mut Device<'_>) -> R) -> Option<R> {
        let mut inner = self.lock();
        if inner.gave_up {
            return None;
        }
        let Inner { map, bits, .. } = &mut *inner;
        let mut dev = Device { bits, failed: None };
        let r = f(map, &mut dev);
        if dev.failed.is_some() {
            inner.give_up();
            self.any.store(false, Ordering::Relaxed);
            return None;
        }
        Some(r)
    }

    /// The directory's address, for an init-checked module's `__cc_init_dir`; 0 (every byte
    /// written) while no buffer was ever tracked.
    pub(crate) fn directory(&self) -> u64 {
        let inner = self.lock();
        if inner.gave_up {
            0
        } else {
            inner.map.directory_made()
        }
    }

    /// `[base, base + len)` was allocated and starts unwritten, from `stream`'s point on.
    /// Returns whether it is tracked (false when the shadow could not be made or gave up: its
    /// memory then counts as written).
    pub(crate) fn track(&self, base: u64, len: u64, stream: CUstream) -> bool {
        {
            let mut inner = self.lock();
            if inner.gave_up {
                return false;
            }
            if inner.bits.is_none() {
                // Loaded with the directory, before the first mark needs it.
                let loaded = Module::load_ptx(BITS_PTX)
                    .and_then(|m| m.function(BITS_KERNEL).map(|f| (m, f)));
                match loaded {
                    Ok(b) => inner.bits = Some(b),
                    Err(_) => return false,
                }
            }
        }
        let tracked = self.with(|map, dev| {
            if map.directory(dev) == 0 {
                return false;
            }
            map.allocated(dev, base, len, true, Some(stream));
            true
        });
        if tracked == Some(true) {
            self.any.store(true, Ordering::Relaxed);
        }
        tracked == Some(true)
    }

    /// The tracked buffer at `base` is being freed on `stream`: its bytes count as written
    /// from then on (memory reused by a buffer the library does not track), and a granule
    /// no tracked buffer holds any more loses its shadow, after waiting for the context's
    /// kernels (which may still read it).
    pub(crate) fn untrack(&self, base: u64, stream: CUstream) {
        self.with(|map, dev| {
            map.freed(dev, base, stream, || driver::ctx_synchronize().is_ok());
        });
        if self.with(|map, _| map.is_empty()) == Some(true) {
            self.any.store(false, Ordering::Relaxed);
        }
    }

    /// `[addr, addr + len)` was written on `stream` (a copy, a memset, a kernel that cannot
    /// mark what it writes).
    pub(crate) fn written(&self, addr: u64, len: u64, stream: CUstream) {
        self.with(|map, dev| map.written(dev, addr, len, stream));
    }

    /// A launch on `stream` that does not mark what it writes was given `words` (buffer
    /// addresses and 8-byte scalars): every tracked buffer one of them points into counts as
    /// written from now on.
    pub(crate) fn launched_unmarked(&self, words: &[u64], stream: CUstream) {
        if !self.any() {
            return;
        }
        self.with(|map, dev| {
            map.all_written(dev, stream, |b, n| {
                words.iter().any(|&w| w >= b && w - b < n)
            })
        });
    }

    /// Bytes of device memory the shadow holds now.
    pub(crate) fn device_bytes(&self) -> u64 {
        self.lock().map.device_bytes()
    }
}

impl Drop for ContextShadow {
    fn drop(&mut self) {
        // A context's state goes once the context was reset or destroyed (the registry keeps
        // it while the context lives), and the module went with the context: unloading its
        // stale handle could hit a module of a newer context.
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some((m, _)) = &inner.bits {
            m.forget();
        }
    }
}

impl Inner {
    /// A driver call failed: zero the directory (every byte counts as written for every
    /// module that points at it) and track nothing more.
    fn give_up(&mut self) {
        self.gave_up = true;
        let dir = self.map.directory_made();
        if dir != 0 {
            // SAFETY: the directory, `DIR_ENTRIES` pointers of this context; kernels only read it.
            let _ = unsafe {
                driver::memset_d8_async(dir, 0, (DIR_ENTRIES * 8) as usize, std::ptr::null_mut())
            };
            let _ = driver::ctx_synchronize();
        }
    }
}
