//! Per-context state, created lazily for any cudarc context the user already has: the device's
//! limits (queried once), the ring of recent launches, and the context's health.
//!
//! No wrapper types are forced on users: state is found by the context's `CUcontext` handle.
//! A handle can be reused by the driver after its context is destroyed, so each entry also
//! keeps a `Weak` to the `CudaContext` it was made for; while any `CudaContext` of that handle
//! lives, the handle cannot have been reused, and an entry whose `Weak` is dead is rebuilt.
//!
//! # Poisoned contexts and [`recover`]
//!
//! Some device faults (an out-of-bounds access, a failed `assert`, ...; see
//! [`codes::CODES`](crate::driver::codes::CODES)'s `poisons`) are *sticky*: the context can no
//! longer run anything, and every later call returns the same error. cudacheck marks the context
//! poisoned at the first one and answers every later call with [`Error::ContextPoisoned`], naming
//! the first fault and the launch that raised it. [`recover`] attempts a reset; NVIDIA's driver
//! usually keeps such faults for the life of the process (see [`recover`]).

use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use cudacheck_core::limits::ArchLimits;
use cudacheck_core::validate::LaunchConfig;
use cudarc::driver::sys::CUstream;
use cudarc::driver::{CudaContext, CudaStream};

use crate::driver::{self, DeviceInfo, DriverError};
use crate::error::{Error, PeerAccessError};
use crate::peer;
use crate::ring::{KernelName, LaunchRecord, LaunchRing};

/// What cudacheck knows about one context.
#[derive(Debug)]
pub(crate) struct ContextState {
    key: usize,
    ctx: Weak<CudaContext>,
    pub(crate) device: DeviceInfo,
    pub(crate) limits: ArchLimits,
    poisoned: AtomicBool,
    poison: Mutex<Option<Poison>>,
    ring: LaunchRing,
    /// Set by [`recover`]: the context was reset, every module loaded in it is dead.
    reset: AtomicBool,
    /// The device memory bounds-checked launches pass their fault record in.
    pub(crate) scratch: Mutex<Scratch>,
    /// The shadow of global memory for init-checked launches: the context's tracked buffers
    /// (`alloc_uninit`).
    pub(crate) init_shadow: crate::shadow::ContextShadow,
}

/// A per-context block of device memory eager bounds-checked launches write their fault
/// record to (the lengths travel as kernel parameters). Never freed while its context lives
/// (it is 128 bytes), and freed with the context by the driver: holding a plain address keeps
/// no context alive.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) ptr: u64,
    pub(crate) bytes: usize,
}

#[derive(Debug, Clone)]
struct Poison {
    /// The device whose context saw the fault first (another one when the driver reported
    /// that fault here too: see `fault`).
    fault_device: usize,
    first_fault: DriverError,
    launch: Option<Box<LaunchRecord>>,
    suspects: Vec<LaunchRecord>,
}

/// A poisoned mutex only means another thread panicked while recording a launch; the data
/// (a ring, a poison record) is still consistent, so keep using it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

static REGISTRY: Mutex<Vec<Arc<ContextState>>> = Mutex::new(Vec::new());

fn key_of(ctx: &CudaContext) -> usize {
    ctx.cu_ctx() as usize
}

/// The state of `ctx`, created on first use (one round of `cuDeviceGetAttribute` queries).
///
/// # Errors
///
/// The driver's, when the device cannot be queried.
pub(crate) fn state_of(ctx: &Arc<CudaContext>) -> Result<Arc<ContextState>, Error> {
    let key = key_of(ctx);
    let mut reg = lock(&REGISTRY);
    reg.retain(|s| s.is_alive());
    if let Some(s) = reg.iter().find(|s| s.key == key) {
        return Ok(Arc::clone(s));
    }
    ctx.bind_to_thread()
        .map_err(|e| DriverError::from_cudarc("cuCtxSetCurrent", e))?;
    let device = driver::device_info(ctx.cu_device(), ctx.ordinal())?;
    let limits =
        driver::limits_from_attributes(device.arch, device.ordinal, &device.name, &device.attrs);
    let state = Arc::new(ContextState {
        key,
        ctx: Arc::downgrade(ctx),
        device,
        limits,
        poisoned: AtomicBool::new(false),
        poison: Mutex::new(None),
        ring: LaunchRing::default(),
        reset: AtomicBool::new(false),
        scratch: Mutex::new(Scratch::default()),
        init_shadow: crate::shadow::ContextShadow::new(),
    });
    reg.push(Arc::clone(&state));
    Ok(state)
}

impl ContextState {
    /// Whether this state still describes a live context (not reset, its handle not reusable).
    pub(crate) fn is_alive(&self) -> bool {
        !self.reset.load(Ordering::Acquire) && self.ctx.strong_count() > 0
    }

    /// Whether this is the state of `ctx` and still alive: the hot path's check, two loads.
    #[inline]
    pub(crate) fn is_state_of(&self, ctx: &CudaContext) -> bool {
        self.key == key_of(ctx) && self.is_alive()
    }

    /// `Err(ContextPoisoned)` once a sticky fault was seen in this context.
    #[inline]
    pub(crate) fn check_health(&self) -> Result<(), Error> {
        if !self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(self.poisoned_error())
    }

    #[cold]
    fn poisoned_error(&self) -> Error {
        let p = lock(&self.poison).clone();
        match p {
            Some(p) => Error::ContextPoisoned {
                device: self.device.ordinal,
                fault_device: p.fault_device,
                first_fault: p.first_fault,
                launch: p.launch,
                suspects: p.suspects,
            },
            // The flag is set after the record is written; this arm cannot be reached, but a
            // generic answer beats a panic.
            None => Error::ContextPoisoned {
                device: self.device.ordinal,
                fault_device: self.device.ordinal,
                first_fault: DriverError::new("(unknown)", 999),
                launch: None,
                suspects: Vec::new(),
            },
        }
    }

    /// Records a launch in the ring (lock-free); returns its sequence number.
    #[inline]
    pub(crate) fn record(
        &self,
        kernel: &'static KernelName,
        config: &LaunchConfig,
        site: &'static Location<'static>,
        stream: CUstream,
    ) -> u64 {
        self.ring.record(kernel, config, site, stream as u64)
    }

    /// Whether every launch the ring remembers was queued on `stream`.
    #[cold]
    pub(crate) fn only_stream(&self, stream: CUstream) -> bool {
        self.ring
            .snapshot()
            .iter()
            .all(|r| r.stream == stream as u64)
    }

    /// Turns a driver error seen at `site`, in a call on `stream`, into the error to return,
    /// marking the context poisoned when the error is sticky. `culprit` is the launch known to
    /// have caused it (a synchronizing check right after that launch), if any; otherwise the
    /// suspects are this context's recent launches (of every stream of it, since a sticky
    /// fault of any of them surfaces on all; never another context's).
    ///
    /// NVIDIA's driver reports a sticky fault to every context of the process, not only to
    /// the one whose kernel faulted (measured with two H200s, driver 580: after an illegal
    /// address on device 1, device 0's next synchronize returns it too). So a sticky fault
    /// seen here after another context was poisoned is that context's fault: this context
    /// takes over its record ([`Error::ContextPoisoned`] naming the device that faulted, its
    /// culprit and suspects), and neither this context's launches nor the launch at hand are
    /// named for it.
    #[cold]
    pub(crate) fn fault(
        &self,
        fault: DriverError,
        site: &'static Location<'static>,
        culprit: Option<LaunchRecord>,
        stream: CUstream,
    ) -> Error {
        if fault.poisons() {
            if let Some(earlier) = self.poisoned_elsewhere() {
                let mut p = lock(&self.poison);
                if p.is_none() {
                    *p = Some(earlier);
                    self.poisoned.store(true, Ordering::Release);
                }
                drop(p);
                return self.poisoned_error();
            }
        }
        let suspects = if culprit.is_some() {
            Vec::new()
        } else {
            self.ring.snapshot()
        };
        if fault.poisons() {
            let mut p = lock(&self.poison);
            if p.is_none() {
                *p = Some(Poison {
                    fault_device: self.device.ordinal,
                    first_fault: fault.clone(),
                    launch: culprit.clone().map(Box::new),
                    suspects: suspects.clone(),
                });
                self.poisoned.store(true, Ordering::Release);
            }
        }
        match culprit {
            Some(l) => Error::Fault {
                kernel: l.kernel,
                site: l.site,
                config: l.config,
                fault,
            },
            None if fault.poisons() => Error::AsyncFault {
                device: self.device.ordinal,
                fault,
                detected_at: site,
                stream: stream as u64,
                suspects,
            },
            None => Error::Driver(fault),
        }
    }

    /// The poison record of another live context that is poisoned, if any.
    #[cold]
    fn poisoned_elsewhere(&self) -> Option<Poison> {
        let other = lock(&REGISTRY)
            .iter()
            .find(|s| s.key != self.key && s.is_alive() && s.poisoned.load(Ordering::Acquire))
            .map(Arc::clone)?;
        let p = lock(&other.poison).clone();
        p
    }

    fn mark_reset(&self) {
        self.reset.store(true, Ordering::Release);
    }
}

/// Checks the stream's context for faults without waiting (`cuStreamQuery`): a fault raised
/// by an earlier launch surfaces here, naming the launches that may have caused it.
///
/// # Errors
///
/// [`Error::ContextPoisoned`] if an earlier fault poisoned the context; [`Error::AsyncFault`]
/// for a fault first seen now; [`Error::Driver`] for other driver errors.
#[track_caller]
pub fn check(stream: &Arc<CudaStream>) -> Result<(), Error> {
    let site = Location::caller();
    let state = state_of(stream.context())?;
    state.check_health()?;
    bind(stream.context())?;
    match driver::stream_query(stream.cu_stream()) {
        Ok(_) => Ok(()),
        Err(e) => Err(state.fault(e, site, None, stream.cu_stream())),
    }
}

/// Waits for all work on `stream` and checks it like [`check`].
///
/// # Errors
///
/// As [`check`].
#[track_caller]
pub fn synchronize(stream: &Arc<CudaStream>) -> Result<(), Error> {
    let site = Location::caller();
    let state = state_of(stream.context())?;
    state.check_health()?;
    bind(stream.context())?;
    driver::stream_synchronize(stream.cu_stream())
        .map_err(|e| state.fault(e, site, None, stream.cu_stream()))
}

/// Whether cudacheck has seen a sticky fault in the stream's context.
pub fn is_poisoned(stream: &Arc<CudaStream>) -> bool {
    let key = key_of(stream.context());
    lock(&REGISTRY)
        .iter()
        .any(|s| s.key == key && s.is_alive() && s.poisoned.load(Ordering::Acquire))
}

/// The limits of the stream's device as cudacheck validates launches against them.
///
/// # Errors
///
/// The driver's, when the device cannot be queried.
pub fn device_limits(stream: &Arc<CudaStream>) -> Result<ArchLimits, Error> {
    Ok(state_of(stream.context())?.limits.clone())
}

/// Makes `ctx` current on this thread (a `cuCtxGetCurrent` when it already is).
#[inline]
pub(crate) fn bind(ctx: &CudaContext) -> Result<(), DriverError> {
    driver::make_current(ctx.cu_ctx())
}

/// Tries to reset the stream's context after a sticky fault, and returns a fresh stream (the
/// new context's default stream) on the same device when the driver allows it.
///
/// For a primary context (what `CudaContext::new` gives) this calls
/// [`cuDevicePrimaryCtxReset`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PRIMARY__CTX.html)
/// and retains the primary context again; for another context it returns the device's primary
/// context (not reset; drop the old context yourself). cudacheck forgets the old context's state: kernels are loaded again on
/// their next launch (compiled code is cached, so this costs a module load, not a compile).
///
/// # Whether it can work
///
/// NVIDIA documents the sticky errors (`CUDA_ERROR_ILLEGAL_ADDRESS`, `CUDA_ERROR_ASSERT`,
/// `CUDA_ERROR_LAUNCH_FAILED`, ...) as leaving *the process* in an inconsistent state: "to
/// continue using CUDA, the process must be terminated and relaunched". On the drivers tested
/// (580.x, CUDA 13, H100) that is what happens: after the reset, even a brand-new context
/// reports the same fault, and this function returns [`Error::Unrecoverable`]. A program that
/// must survive device faults should run the risky work in a child process. The reset is still
/// attempted because it is the documented way out for a context whose error is not
/// process-wide, and it costs nothing once the process is lost.
///
/// # Everything of the old context is invalid
///
/// The reset frees every buffer, stream, event and module of the old context. **Drop the old
/// buffers and streams before calling `recover`** (in a poisoned context their frees fail
/// harmlessly): one dropped afterwards would free its old address, which a new allocation may
/// have reused. Do not use anything of the old context afterwards. Other libraries sharing the
/// primary context in this process lose their state too.
///
/// # Errors
///
/// [`Error::Unrecoverable`] when the driver still refuses the device after the reset;
/// [`Error::DriverNotFound`]; or the driver's error if the reset itself fails.
pub fn recover(stream: &Arc<CudaStream>) -> Result<Arc<CudaStream>, Error> {
    driver::ensure_loaded()?;
    let ctx = stream.context();
    let key = key_of(ctx);
    {
        let mut reg = lock(&REGISTRY);
        for s in reg.iter().filter(|s| s.key == key) {
            s.mark_reset();
        }
        reg.retain(|s| s.key != key);
    }
    // The reset drops the context's peer mappings too.
    peer::forget(ctx);
    let ordinal = ctx.ordinal();
    let fresh = if ctx.is_primary() {
        // SAFETY: the old context's state is marked reset, so cudacheck neither uses nor
        // unloads its modules again; the user's old handles are covered by this function's
        // documented contract.
        unsafe { driver::primary_ctx_reset(ctx.cu_device()) }?;
        CudaContext::new(ordinal)
    } else {
        // cudarc's `new_non_primary` exists only for some of the CUDA versions the application
        // may pick (not 13.2 and later), so a non-primary context is replaced by the device's
        // primary context, which any driver offers.
        CudaContext::new(ordinal)
    };
    let fresh = fresh.map_err(|e| {
        let still = DriverError::from_cudarc("cuDevicePrimaryCtxRetain", e);
        if still.poisons() {
            Error::Unrecoverable {
                device: ordinal,
                still,
            }
        } else {
            Error::Driver(still)
        }
    })?;
    Ok(fresh.default_stream())
}

/// Lets kernels launched in `from` use buffers of `to` (on another device), and records the
/// pair so that such launches pass cudacheck's check (and are bounds-checked against the
/// buffers' lengths as usual).
///
/// Asks [`cuDeviceCanAccessPeer`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PEER__ACCESS.html)
/// first, then enables both kinds of access a cudarc buffer may need: `cuCtxEnablePeerAccess`
/// for memory from `cuMemAlloc`, and, on devices with memory pools (where cudarc allocates with
/// `cuMemAllocAsync`), `cuMemPoolSetAccess` on `to`'s device pool, since pool allocations do
/// not follow context peer access (NVIDIA's programming guide, "Stream Ordered Memory
/// Allocator"). The pool grant is device-wide: every context of `from`'s device may then
/// access `to`'s pool allocations. Access is one way; call again with the two swapped for the
/// other direction. Enabling twice is not an error. Nothing needs doing for `from == to`.
///
/// A launch with such a buffer waits for its kernel before returning: cudarc orders a buffer's
/// uses with events of the buffer's own context, which cannot be recorded on another context's
/// stream, so waiting is what keeps later uses of the buffer on its own device ordered.
///
/// # Errors
///
/// [`Error::PeerAccess`] when the hardware does not allow it or the driver refuses;
/// [`Error::ContextPoisoned`] when either context is.
pub fn enable_peer_access(from: &Arc<CudaContext>, to: &Arc<CudaContext>) -> Result<(), Error> {
    driver::ensure_loaded()?;
    if from.cu_ctx() == to.cu_ctx() {
        return Ok(());
    }
    state_of(from)?.check_health()?;
    state_of(to)?.check_health()?;
    let refuse = |driver: Option<DriverError>| {
        Error::PeerAccess(Box::new(PeerAccessError {
            from: from.ordinal(),
            to: to.ordinal(),
            driver,
        }))
    };
    let can =
        driver::can_access_peer(from.cu_device(), to.cu_device()).map_err(|e| refuse(Some(e)))?;
    if !can {
        return Err(refuse(None));
    }
    bind(from)?;
    driver::enable_peer_access(to.cu_ctx()).map_err(|e| refuse(Some(e)))?;
    if from.cu_device() != to.cu_device() {
        driver::grant_pool_access(to.cu_device(), from.ordinal()).map_err(|e| refuse(Some(e)))?;
    }
    peer::remember(from, to);
    Ok(())
}

/// A stream on device `ordinal` (its primary context's default stream), checking first that a
/// driver and the device exist, so that a machine without a GPU gets an error, not a panic.
///
/// # Errors
///
/// [`Error::DriverNotFound`] without a driver; the driver's error when the device is missing.
pub fn default_stream(ordinal: usize) -> Result<Arc<CudaStream>, Error> {
    driver::ensure_loaded()?;
    let ctx = CudaContext::new(ordinal)
        .map_err(|e| DriverError::from_cudarc("cuDevicePrimaryCtxRetain", e))?;
    Ok(ctx.default_stream())
}

/// The number of CUDA devices, checking for a driver first.
///
/// # Errors
///
/// [`Error::DriverNotFound`] without a driver, else the driver's error from `cuInit`.
pub fn device_count() -> Result<usize, Error> {
    driver::ensure_loaded()?;
    let n =
        CudaContext::device_count().map_err(|e| DriverError::from_cudarc("cuDeviceGetCount", e))?;
    Ok(n.max(0) as usize)
}
