//! [`Launch`]: one checked kernel launch, built up and then [`run`](Launch::run).
//!
//! Plain and bounds-checked launches take one path (`Launch::launch_with`), parameterized by
//! a plan (`plan.rs`): the plan picks the build, appends its hidden parameters before the
//! launch and performs the post-launch step after it. The plain plan adds nothing, so the
//! release hot path is the path itself, and it allocates nothing: arguments go into a
//! fixed-capacity inline array, the validation of a configuration is memoized per kernel and
//! context without a lock, the context is made current only when it is not, and the ring of
//! recent launches is written in place without a lock.

mod checked;
mod plan;

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::validate::LaunchConfig;
use cudacheck_core::Dim3;
use cudarc::driver::{CudaEvent, CudaStream, SyncOnDrop};

use crate::args::{ArgSlot, KernelArg, KernelArgMut, SlotKind, MAX_ARGS};
use crate::build::PrepareError;
use crate::context::bind;
use crate::driver::{self, Capture, DriverError, RawConfig};
use crate::error::{Error, LaunchError, LaunchErrorKind, PeerSupport};
use crate::instrument::param_names;
use crate::kernel::Kernel;
use crate::policy::{after_launch, instrumented, sync_wanted};
use checked::Checked;
use plan::{LaunchPlan, Plain, Step, HIDDEN_MAX};

/// A grid, a block and dynamic shared memory, as one value: what macro-generated wrappers take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    pub grid: Dim3,
    /// `None` when the kernel's block is fixed at compile time.
    pub block: Option<Dim3>,
    pub shared_bytes: u32,
}

impl<G: Into<Dim3>, B: Into<Dim3>> From<(G, B)> for LaunchDims {
    fn from((g, b): (G, B)) -> Self {
        LaunchDims {
            grid: g.into(),
            block: Some(b.into()),
            shared_bytes: 0,
        }
    }
}

impl<G: Into<Dim3>, B: Into<Dim3>> From<(G, B, u32)> for LaunchDims {
    fn from((g, b, s): (G, B, u32)) -> Self {
        LaunchDims {
            grid: g.into(),
            block: Some(b.into()),
            shared_bytes: s,
        }
    }
}

impl From<Grid> for LaunchDims {
    fn from(g: Grid) -> Self {
        LaunchDims {
            grid: g.0,
            block: None,
            shared_bytes: 0,
        }
    }
}

/// A grid alone, for kernels whose block is fixed at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid(pub Dim3);

impl From<u32> for Grid {
    fn from(x: u32) -> Self {
        Grid(Dim3::x(x))
    }
}

impl From<(u32, u32, u32)> for Grid {
    fn from(d: (u32, u32, u32)) -> Self {
        Grid(d.into())
    }
}

impl From<Dim3> for Grid {
    fn from(d: Dim3) -> Self {
        Grid(d)
    }
}

/// One launch of a [`Kernel`] on a stream. Build it with [`Kernel::launch`], then `.grid()`,
/// `.block()`, `.arg()`..., and finish with [`run`](Launch::run).
///
/// Like [`std::process::Command`], the builder methods take and return `&mut Launch`: a
/// launch carries its arguments inline (no heap allocation) and is about a kilobyte, which a
/// by-value builder would copy at every step. A chain on the temporary works as it reads:
///
/// ```no_run
/// # fn f(k: &cudacheck::Kernel, s: &std::sync::Arc<cudacheck::cudarc::driver::CudaStream>,
/// #      y: &mut cudacheck::cudarc::driver::CudaSlice<f32>) -> Result<(), cudacheck::Error> {
/// // SAFETY: the kernel writes y[i] for i < 256 only.
/// unsafe { k.launch(s).grid(1).block(256).arg_mut(y).arg(&256i32).run() }
/// # }
/// ```
///
/// A launch built step by step is a variable (`let mut l = k.launch(s); l.grid(1); ...;
/// l.run()`); it borrows its arguments until it is dropped, so a loop of launches borrowing
/// one buffer mutably builds each in a statement of its own.
#[must_use = "a Launch does nothing until .run()"]
pub struct Launch<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) cfg: LaunchConfig,
    grid_set: bool,
    block_set: bool,
    /// [`Launch::sync`]: `None` leaves it to the kernel, the environment, the profile.
    sync: Option<bool>,
    profile_debug: bool,
    /// [`Launch::instrument`]: `None` leaves it to the kernel, the environment, the profile.
    instrument: Option<bool>,
    /// [`Launch::races`]: `None` leaves it to the kernel and the environment.
    races: Option<bool>,
    /// [`Launch::init`]: `None` leaves it to the kernel and the environment.
    init: Option<bool>,
    /// [`Launch::kernel_events`].
    pub(crate) events: Option<(&'a CudaEvent, &'a CudaEvent)>,
    pub(crate) shared_opt_in: Option<bool>,
    failed_requirement: Option<&'static str>,
    pub(crate) nargs: usize,
    /// The first `min(nargs, MAX_ARGS)` are initialized (see [`slots`](Self::slots)); the
    /// rest are never written, so that starting a launch costs no 768-byte fill.
    args: [MaybeUninit<ArgSlot>; MAX_ARGS],
    /// cudarc's stream-ordering records for buffer arguments, kept only when the context
    /// orders several streams (see `args::keep`); dropped after the launch is queued, which is
    /// when cudarc wants them recorded. Few slots keep the launch small; past them, see
    /// `guard_overflow`.
    /// The first `nguards` are initialized, and dropped by [`run`](Launch::run).
    guards: [MaybeUninit<SyncOnDrop<'a>>; GUARDS],
    nguards: usize,
    /// More buffers needed ordering than `guards` holds (the extra guards recorded before the
    /// launch), or a buffer of a peer context has no guard (see `SlotKind::PeerBuffer`): the
    /// launch synchronizes instead, which orders everything after it.
    guard_overflow: bool,
}

impl Kernel {
    /// Starts a launch of this kernel on `stream`.
    #[inline(always)]
    pub fn launch<'a>(&'a self, stream: &'a Arc<CudaStream>) -> Launch<'a> {
        Launch::new(self, stream)
    }
}

impl Launch<'_> {
    /// Drops the ordering guards: cudarc records each buffer's event on the stream, which is
    /// what it wants once the kernel is queued.
    ///
    /// `Launch` has no `Drop`: one would make the borrow checker ask every argument to outlive
    /// the launch's drop at the end of its statement, and `.arg(&(n as i32))`, a temporary
    /// made after the launch, does not. So [`run`](Launch::run) releases the guards, and a
    /// launch dropped without running forgets them, which is harmless: nothing was queued for
    /// the events to order. A launch run again has no guards left, so it synchronizes instead
    /// (as one with more buffers than guards does), which orders everything after it.
    #[inline(always)]
    fn release_guards(&mut self) {
        let n = std::mem::take(&mut self.nguards);
        if n > 0 {
            self.guard_overflow = true;
        }
        for g in &mut self.guards[..n] {
            // SAFETY: `push_guard` initialized the first `nguards` guards, and `nguards` is
            // zeroed before they are dropped, so each is dropped once.
            unsafe { g.assume_init_drop() };
        }
    }
}

/// Ordering guards a launch keeps inline (multi-stream contexts only).
const GUARDS: usize = 8;

impl<'a> Launch<'a> {
    #[inline(always)]
    pub(crate) fn new(kernel: &'a Kernel, stream: &'a Arc<CudaStream>) -> Self {
        Launch {
            kernel,
            stream,
            cfg: LaunchConfig::new(Dim3::x(0), Dim3::x(0)),
            grid_set: false,
            block_set: false,
            sync: None,
            profile_debug: cfg!(debug_assertions),
            instrument: None,
            races: None,
            init: None,
            events: None,
            shared_opt_in: None,
            failed_requirement: None,
            nargs: 0,
            args: [MaybeUninit::uninit(); MAX_ARGS],
            guards: [const { MaybeUninit::uninit() }; GUARDS],
            nguards: 0,
            guard_overflow: false,
        }
    }

    #[inline(always)]
    pub fn grid(&mut self, g: impl Into<Dim3>) -> &mut Self {
        self.cfg.grid = g.into();
        self.grid_set = true;
        self
    }

    #[inline(always)]
    pub fn block(&mut self, b: impl Into<Dim3>) -> &mut Self {
        self.cfg.block = b.into();
        self.block_set = true;
        self
    }

    /// Dynamic (`extern __shared__`) shared memory per block, in bytes.
    #[inline(always)]
    pub fn shared_bytes(&mut self, bytes: u32) -> &mut Self {
        self.cfg.dynamic_shared_bytes = bytes;
        self
    }

    /// Blocks per thread block cluster (sm_90 and later).
    #[inline(always)]
    pub fn cluster(&mut self, c: impl Into<Dim3>) -> &mut Self {
        self.cfg.cluster = Some(c.into());
        self
    }

    /// Grid, optional block and shared memory in one value (what macro wrappers take).
    #[inline(always)]
    pub fn dims(&mut self, d: impl Into<LaunchDims>) -> &mut Self {
        let d = d.into();
        self.grid(d.grid).shared_bytes(d.shared_bytes);
        if let Some(b) = d.block {
            self.block(b);
        }
        self
    }

    /// The whole configuration at once.
    #[inline(always)]
    pub fn config(&mut self, cfg: LaunchConfig) -> &mut Self {
        self.cfg = cfg;
        self.grid_set = true;
        self.block_set = true;
        self
    }

    /// Synchronize after this launch and check for faults (`true`), or return at once
    /// (`false`), whatever the kernel's [`sync`](crate::KernelBuilder::sync), `CUDACHECK_SYNC`
    /// and the build profile say (see [the switches](crate#switches)). A launch into a stream
    /// being captured never synchronizes (see [`capture`](crate::capture)); a bounds-checked
    /// one always does otherwise.
    #[inline(always)]
    pub fn sync(&mut self, on: bool) -> &mut Self {
        self.sync = Some(on);
        self
    }

    /// Bounds-check this launch (`true`) or not (`false`), whatever the kernel's
    /// [`instrument`](crate::KernelBuilder::instrument), `CUDACHECK_INSTRUMENT` and the build
    /// profile say (see [the switches](crate#switches)).
    ///
    /// A bounds-checked launch runs the kernel's instrumented build, always synchronizes (the
    /// fault record must be read; under stream capture the record is read by
    /// [`capture::Checks`](crate::capture::Checks) instead), and returns
    /// [`Error::OutOfBounds`] or [`Error::DeviceAssert`] for the first bad access or failed
    /// `assert`; the context stays usable. A kernel the instrumenter does not rewrite (see
    /// [`Kernel::coverage`]) launches unchecked.
    #[inline(always)]
    pub fn instrument(&mut self, on: bool) -> &mut Self {
        self.instrument = Some(on);
        self
    }

    /// Race-check this launch (`true`) or not (`false`), whatever the kernel's
    /// [`races`](crate::KernelBuilder::races) and `CUDACHECK_RACES` say (see
    /// [the switches](crate#switches)): shared-memory races and misused barriers are reported
    /// as [`Error::SharedRace`] and [`Error::BarrierMisuse`] (see [`cudacheck_core::race`] for
    /// what is checked); the launch is bounds-checked too (unless this launch says
    /// `instrument(false)`, and then it is not race-checked either), synchronizes, and gets
    /// extra dynamic shared memory for the checker's shadow.
    #[inline(always)]
    pub fn races(&mut self, on: bool) -> &mut Self {
        self.races = Some(on);
        self
    }

    /// Check this launch for reads of memory nothing wrote (`true`) or not (`false`), whatever
    /// the kernel's [`init`](crate::KernelBuilder::init) and `CUDACHECK_INIT` say (see
    /// [the switches](crate#switches)): the first such read is reported as
    /// [`Error::Uninitialized`] (the read itself goes ahead). The launch is bounds-checked too
    /// (unless this launch says `instrument(false)`, and then it is not init-checked either),
    /// synchronizes, and gets extra dynamic shared memory for the shadow of the block's
    /// `__shared__` memory, which counts as unwritten when the block starts.
    ///
    /// Global memory is checked in the buffers [`alloc_uninit`](crate::alloc_uninit) made
    /// ([`TrackedSlice`](crate::TrackedSlice)), which start unwritten; the kernel's stores mark
    /// what they write there. All other global memory counts as written: the library does not
    /// see every write to a buffer (cudarc's copies and memsets, kernels launched elsewhere),
    /// and reports nothing rather than a read of memory it did not see written. A launch that
    /// is not init-checked counts every tracked buffer it is given as written. See
    /// docs/limits.md; `cudacheck run --init` follows every allocation, copy and kernel of the
    /// process.
    #[inline(always)]
    pub fn init(&mut self, on: bool) -> &mut Self {
        self.init = Some(on);
        self
    }

    /// Records `start` on the stream just before the kernel is queued and `end` just after, so
    /// that `start.elapsed_ms(&end)` times the kernel alone: without a bounds-checked launch's
    /// upload, synchronization and readback. Both events must belong to the stream's context
    /// and be created with timing enabled.
    #[inline(always)]
    pub fn kernel_events(&mut self, start: &'a CudaEvent, end: &'a CudaEvent) -> &mut Self {
        self.events = Some((start, end));
        self
    }

    /// The build profile to fall back on when no `sync` and no `CUDACHECK_SYNC` is given
    /// (and, likewise, no `instrument` and no `CUDACHECK_INSTRUMENT`): macro-generated
    /// code passes `cfg!(debug_assertions)` of the user's crate.
    #[inline(always)]
    pub fn profile_default(&mut self, debug: bool) -> &mut Self {
        self.profile_debug = debug;
        self
    }

    /// Whether this launch may opt the kernel in to more than 48 KiB of shared memory.
    #[inline(always)]
    pub fn shared_opt_in(&mut self, allow: bool) -> &mut Self {
        self.shared_opt_in = Some(allow);
        self
    }

    /// A `requires(...)` clause: when `holds` is false the launch returns
    /// [`Error::RequirementFailed`] naming `clause`, without launching.
    #[inline(always)]
    pub fn require(&mut self, holds: bool, clause: &'static str) -> &mut Self {
        if !holds && self.failed_requirement.is_none() {
            self.failed_requirement = Some(clause);
        }
        self
    }

    /// Pushes an argument the kernel reads: `&CudaSlice<T>`, `&CudaView<T>`, or a scalar.
    #[inline(always)]
    pub fn arg<T: KernelArg + ?Sized>(&mut self, arg: &'a T) -> &mut Self {
        let (slot, guard) = arg.slot(self.stream);
        self.push(slot, guard);
        self
    }

    /// Pushes a buffer the kernel writes: `&mut CudaSlice<T>`, `&mut CudaViewMut<T>`.
    #[inline(always)]
    pub fn arg_mut<T: KernelArgMut + ?Sized>(&mut self, arg: &'a mut T) -> &mut Self {
        let (slot, guard) = arg.slot_mut(self.stream);
        self.push(slot, guard);
        self
    }

    #[inline(always)]
    fn push(&mut self, slot: ArgSlot, guard: Option<SyncOnDrop<'a>>) {
        if self.nargs < MAX_ARGS {
            self.args[self.nargs] = MaybeUninit::new(slot);
        }
        if let Some(g) = guard {
            self.push_guard(g);
        }
        if let SlotKind::PeerBuffer { .. } = slot.kind {
            self.guard_overflow = true;
        }
        // Counted even past capacity, so that the error can say how many were given.
        self.nargs += 1;
    }

    /// Out of line and by reference: kept in the builder's flow, the branch makes the
    /// compiler copy the whole launch (a kilobyte) at every `arg` of every launch.
    #[cold]
    #[inline(never)]
    fn push_guard(&mut self, g: SyncOnDrop<'a>) {
        if self.nguards < GUARDS {
            self.guards[self.nguards] = MaybeUninit::new(g);
            self.nguards += 1;
        } else {
            drop(g);
            self.guard_overflow = true;
        }
    }

    /// The arguments pushed (at most [`MAX_ARGS`]).
    #[inline(always)]
    fn slots(&self) -> &[ArgSlot] {
        let n = self.nargs.min(MAX_ARGS);
        // SAFETY: `push` initializes `args[k]` before counting it, for every k < MAX_ARGS, and
        // nothing un-initializes them; `MaybeUninit<ArgSlot>` has `ArgSlot`'s layout.
        unsafe { std::slice::from_raw_parts(self.args.as_ptr().cast::<ArgSlot>(), n) }
    }

    pub(crate) fn refuse(&self, site: &'static Location<'static>, kind: LaunchErrorKind) -> Error {
        refusal(self.kernel, site, &self.cfg, kind)
    }

    /// Validates against the device and the kernel (memoized per kernel, context and
    /// configuration), launches, and, when the [`sync`](Self::sync) switch says so, waits and
    /// checks for faults. Errors carry the Rust launch site.
    ///
    /// # Errors
    ///
    /// [`Error::RequirementFailed`], [`Error::Launch`] (configuration, arguments, or the
    /// driver's refusal; the context stays healthy), [`Error::Fault`] (a fault seen by the
    /// synchronizing check), [`Error::AsyncFault`] (an earlier launch's fault surfacing now),
    /// [`Error::ContextPoisoned`], and the compile/load errors of [`Kernel::load`] on the first
    /// launch in a context. A bounds-checked launch (see [`Launch::instrument`]) also returns
    /// [`Error::OutOfBounds`] and [`Error::DeviceAssert`], and, into a stream being captured
    /// without a [`capture::Checks`](crate::capture::Checks),
    /// [`LaunchErrorKind::CapturedWithoutChecks`].
    ///
    /// # Safety
    ///
    /// The kernel's memory accesses must stay inside the buffers passed (cudacheck checks the
    /// configuration, the argument count and sizes, and the buffers' contexts, not the indices
    /// the kernel computes), exactly as cudarc's launch asks. Pointer parameters must be passed
    /// buffers of the element type the kernel expects.
    #[track_caller]
    #[inline(always)]
    pub unsafe fn run(&mut self) -> Result<(), Error> {
        let site = Location::caller();
        // SAFETY: this function's contract, forwarded.
        let result = unsafe { self.run_at(site) };
        // After the launch is queued (or refused): cudarc's ordering guards record now.
        self.release_guards();
        result
    }

    /// [`run`](Self::run) by reference, so that the launch is not copied once more.
    ///
    /// # Safety
    ///
    /// As [`run`](Self::run).
    unsafe fn run_at(&mut self, site: &'static Location<'static>) -> Result<(), Error> {
        if let Some(clause) = self.failed_requirement {
            return Err(Error::RequirementFailed {
                kernel: self.kernel.name().to_string(),
                clause,
                site,
            });
        }
        if !self.grid_set || !self.block_set {
            let part = if self.grid_set { "block" } else { "grid" };
            return Err(self.refuse(site, LaunchErrorKind::MissingDims { part }));
        }
        if self.nargs > MAX_ARGS {
            return Err(self.refuse(
                site,
                LaunchErrorKind::TooManyArgs {
                    given: self.nargs,
                    max: MAX_ARGS,
                },
            ));
        }
        // One test keeps bounds checking and kernel timing off the plain path.
        if self.events.is_none() && !self.instrumented() {
            // SAFETY: this function's contract, forwarded.
            return unsafe { self.launch_with(site, Plain) };
        }
        // SAFETY: this function's contract, forwarded.
        unsafe { self.run_slow(site) }
    }

    /// Whether this launch is bounds-checked (see [the switches](crate#switches)).
    #[inline]
    fn instrumented(&self) -> bool {
        // Race and init checking ask for bounds checking, unless the launch or the kernel
        // turned bounds checking off by name.
        let races = self.races.unwrap_or_else(|| self.kernel.races_default())
            || self.init.unwrap_or_else(|| self.kernel.init_default());
        let kernel = match self.kernel.instrument_default() {
            None if races => Some(true),
            k => k,
        };
        instrumented(
            self.instrument
                .or((self.races == Some(true) || self.init == Some(true)).then_some(true)),
            kernel,
            self.profile_debug,
        )
    }

    /// Whether this launch is init-checked (see [`Launch::init`]): asked for, and
    /// bounds-checked.
    #[inline]
    fn init_checked(&self) -> bool {
        self.init.unwrap_or_else(|| self.kernel.init_default()) && self.instrumented()
    }

    /// Whether this launch is race-checked (see [`Launch::races`]): asked for, and
    /// bounds-checked.
    #[inline]
    fn race_checked(&self) -> bool {
        self.races.unwrap_or_else(|| self.kernel.races_default()) && self.instrumented()
    }

    /// A bounds-checked launch, or a timed plain one. Every kernel NVRTC compiles has a
    /// bounds-checked build; a build that cannot be made is an error (`Error::Instrument`),
    /// never a silent plain launch.
    ///
    /// # Safety
    ///
    /// As [`run`](Self::run).
    #[cold]
    unsafe fn run_slow(&mut self, site: &'static Location<'static>) -> Result<(), Error> {
        if self.instrumented() {
            let (races, init) = (self.race_checked(), self.init_checked());
            // SAFETY: this function's contract, forwarded.
            return unsafe { self.launch_with(site, Checked::new(races, init)) };
        }
        // SAFETY: this function's contract, forwarded.
        unsafe { self.launch_with(site, Plain) }
    }

    /// The one launch path: build, health, validation, arguments, the plan's `before` (hidden
    /// parameters), the launch, the ring, the plan's `after` (the post-launch step).
    ///
    /// # Safety
    ///
    /// As [`run`](Self::run).
    #[inline(always)]
    unsafe fn launch_with<'k, P: LaunchPlan<'k>>(
        &mut self,
        site: &'static Location<'static>,
        mut plan: P,
    ) -> Result<(), Error>
    where
        'a: 'k,
    {
        let kernel: &'k Kernel = self.kernel;
        let ctx = self.stream.context();
        let loaded = plan.build(kernel, ctx, &self.cfg, self.slots())?;
        let state = &loaded.state;
        state.check_health()?;

        let opt_in = self
            .shared_opt_in
            .unwrap_or_else(|| kernel.default_shared_opt_in());
        // Waiting is what capture forbids, so only a launch that would wait asks.
        let sync = P::ALWAYS_SYNC
            || self.guard_overflow
            || sync_wanted(self.sync, kernel.default_sync(), self.profile_debug);
        // A plain launch that does not wait makes no driver call but the launch itself, and
        // that call says when the stream's context is not current (see `launch_bound`): it
        // binds only then. Every other launch makes further calls, and binds first.
        let lazy_bind = !P::ALWAYS_SYNC && !sync && self.events.is_none();
        if !lazy_bind {
            bind(ctx)?;
        }
        match loaded.prepare(ctx, &self.cfg, opt_in) {
            Ok(()) => {}
            Err(PrepareError::Invalid(violations)) => {
                return Err(self.refuse(site, LaunchErrorKind::InvalidConfig { violations }))
            }
            Err(PrepareError::Driver(error)) => {
                return Err(self.refuse(site, LaunchErrorKind::Driver { error }))
            }
            Err(PrepareError::TooOld(missing)) => {
                return Err(self.refuse(site, LaunchErrorKind::DriverTooOld(missing)))
            }
        }
        let params = &loaded.resources.params;
        let user = P::user_params(params.len()).min(params.len());
        let hidden_n = params.len() - user;
        if loaded.compiled.params_known {
            self.check_args(&params[..user], site)?;
        } else {
            self.check_buffers(site)?;
        }
        let n = self.nargs;

        let capture = if sync {
            driver::capture_status(self.stream.cu_stream())
                .map_err(|error| self.refuse(site, LaunchErrorKind::Driver { error }))?
        } else {
            Capture::None
        };
        let step = Step {
            kernel,
            stream: self.stream,
            loaded,
            args: self.slots(),
            cfg: &self.cfg,
            site,
            capture,
        };
        let hidden = plan.before(&step)?;

        // The parameter array points into `self.args` and `hidden`, which stay put until the
        // launch is queued. Uninitialized but for the entries the launch uses: zeroing all of
        // it was a 520-byte `memset` per launch.
        debug_assert!(step.args.len() == n && hidden_n <= HIDDEN_MAX);
        let mut ptrs = [const { MaybeUninit::<*mut c_void>::uninit() }; MAX_ARGS + HIDDEN_MAX];
        for (p, slot) in ptrs.iter_mut().zip(step.args) {
            p.write(slot.param_ptr());
        }
        for (p, h) in ptrs[n..].iter_mut().zip(&hidden[..hidden_n]) {
            p.write(h as *const u64 as *mut c_void);
        }
        // SAFETY: `step.args` has `n` entries (`nargs`, at most MAX_ARGS: more were refused
        // above) and `hidden_n <= HIDDEN_MAX`, so both loops wrote every entry of the first
        // `n + hidden_n`, and `MaybeUninit<T>` has `T`'s layout.
        let params = unsafe {
            std::slice::from_raw_parts_mut(ptrs.as_mut_ptr().cast::<*mut c_void>(), n + hidden_n)
        };
        let raw = RawConfig {
            grid: self.cfg.grid,
            block: self.cfg.block,
            shared_bytes: plan.shared_bytes(self.cfg.dynamic_shared_bytes),
            cluster: self.cfg.cluster,
        };
        if let Some((start, _)) = self.events {
            record_event(start, self.stream)?;
        }

        // SAFETY: the function belongs to a module loaded in this stream's context (the
        // loaded entry is this context's), which `bind` made current; there is one pointer per
        // parameter (count checked), each to a live value of the parameter's size (the user's
        // sizes checked against the CUBIN, or for a function the application loaded on a
        // driver that cannot list its parameters, the caller's promise as with a raw cudarc
        // launch, which `Kernel::from_function` documents; the hidden ones are the plan's 8-byte device
        // addresses, which it keeps valid until the kernel is done); the memory promise is
        // this function's `# Safety`.
        let launched =
            unsafe { launch_bound(ctx, &loaded.function, &raw, self.stream.cu_stream(), params) };
        if let Err(error) = launched {
            if error.poisons() {
                // An earlier launch faulted; the driver reports it at this one.
                return Err(state.fault(error, site, None, self.stream.cu_stream()));
            }
            return Err(self.refuse(site, LaunchErrorKind::Driver { error }));
        }
        if let Some((_, end)) = self.events {
            record_event(end, self.stream)?;
        }
        if state.init_shadow.any() && !loaded.marks_init() {
            self.count_written(state);
        }
        // A captured kernel did not run: the ring names launches that did.
        let seq = match capture {
            Capture::None => {
                Some(state.record(kernel.ring_name(), &self.cfg, site, self.stream.cu_stream()))
            }
            _ => None,
        };
        plan.after(&step, after_launch(sync, capture != Capture::None), seq)
    }

    /// A launch whose kernel does not mark what it writes in the init shadow, while the
    /// context tracks buffers (`alloc_uninit`): every tracked buffer an argument points into
    /// (a buffer's address, an 8-byte scalar's value) counts as written, ordered after the
    /// kernel on its stream. A pointer the kernel loads from memory is not seen
    /// (`TrackedSlice::mark_written` says so).
    #[cold]
    #[inline(never)]
    fn count_written(&self, state: &crate::context::ContextState) {
        let mut words = [0u64; MAX_ARGS];
        for (w, slot) in words.iter_mut().zip(self.slots()) {
            *w = match slot.kind {
                SlotKind::Scalar if slot.size_or_len == 8 => {
                    let mut b = [0u8; 8];
                    // SAFETY: a scalar slot's word is the address of a live value of
                    // `size_or_len` (8) bytes, valid for the launch; read bytewise.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            slot.word as usize as *const u8,
                            b.as_mut_ptr(),
                            8,
                        )
                    };
                    u64::from_le_bytes(b)
                }
                SlotKind::Scalar => 0,
                _ => slot.word,
            };
        }
        // The context is current: `launch_bound` made the launch in it.
        state
            .init_shadow
            .launched_unmarked(&words[..self.nargs], self.stream.cu_stream());
    }

    /// Argument count and sizes against the CUBIN's parameter table, and buffers against the
    /// stream's context.
    #[inline]
    pub(crate) fn check_args(
        &self,
        params: &[cudacheck_core::ParamSlot],
        site: &'static Location<'static>,
    ) -> Result<(), Error> {
        if self.nargs != params.len() {
            return Err(self.refuse(
                site,
                LaunchErrorKind::ArgCount {
                    expected: params.len(),
                    given: self.nargs,
                    params: self.describe_params(params.len()),
                },
            ));
        }
        for (index, (slot, param)) in self.slots().iter().zip(params).enumerate() {
            if slot.param_size() != param.size {
                return Err(self.refuse(
                    site,
                    LaunchErrorKind::ArgSize {
                        index,
                        given_bytes: slot.param_size(),
                        given_type: (slot.ty)(),
                        expected_bytes: param.size,
                    },
                ));
            }
            if let SlotKind::ForeignBuffer { ordinal } = slot.kind {
                return Err(self.foreign_buffer(site, index, ordinal as usize));
            }
        }
        Ok(())
    }

    /// What [`check_args`](Self::check_args) can check without the kernel's parameter list
    /// (a function the application loaded, on a driver without `cuFuncGetParamInfo`): that
    /// every buffer is usable from the stream's context.
    #[cold]
    fn check_buffers(&self, site: &'static Location<'static>) -> Result<(), Error> {
        for (index, slot) in self.slots().iter().enumerate() {
            if let SlotKind::ForeignBuffer { ordinal } = slot.kind {
                return Err(self.foreign_buffer(site, index, ordinal as usize));
            }
        }
        Ok(())
    }

    /// Argument `index`, a buffer of device `buffer_device` that the stream's context has no
    /// access to: the refusal, naming the parameter and saying whether peer access could help.
    #[cold]
    fn foreign_buffer(
        &self,
        site: &'static Location<'static>,
        index: usize,
        buffer_device: usize,
    ) -> Error {
        let ctx = self.stream.context();
        let stream_device = ctx.ordinal();
        let same_device = buffer_device == stream_device;
        let peer = if same_device {
            PeerSupport::Unknown
        } else {
            match driver::device(buffer_device)
                .and_then(|b| driver::can_access_peer(ctx.cu_device(), b))
            {
                Ok(true) => PeerSupport::Possible,
                Ok(false) => PeerSupport::Unsupported,
                Err(_) => PeerSupport::Unknown,
            }
        };
        let param = match self.kernel.params() {
            Some(specs) => specs.get(index).map(|p| p.name.to_string()),
            None => param_names(self.kernel.source(), self.kernel.name())
                .into_iter()
                .nth(index)
                .filter(|n| !n.starts_with("argument ")),
        };
        self.refuse(
            site,
            LaunchErrorKind::ForeignBuffer {
                index,
                param,
                buffer_device,
                stream_device,
                same_device,
                peer,
            },
        )
    }

    /// The parameters for an error message: the Rust declaration when there is one, else the
    /// count.
    #[cold]
    fn describe_params(&self, n: usize) -> String {
        match self.kernel.params() {
            Some(p) => p
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            None => format!("{n} in the compiled kernel"),
        }
    }
}

/// A launch refused before or by the driver: the kernel, the site, the configuration, why.
#[cold]
pub(crate) fn refusal(
    kernel: &Kernel,
    site: &'static Location<'static>,
    cfg: &LaunchConfig,
    kind: LaunchErrorKind,
) -> Error {
    LaunchError {
        kernel: kernel.name().to_string(),
        site,
        config: *cfg,
        kind,
    }
    .into()
}

/// `cuLaunchKernel` in `ctx`, whether or not `ctx` is current on this thread.
///
/// A `cuCtxGetCurrent` before every launch costs tens of nanoseconds (H100, driver 580: the
/// driver rows of `results/bench_launch.md`), about a percent of the launch. The launch does
/// not need it: when the stream's context is not current, the driver refuses the launch and
/// runs nothing (`CUDA_ERROR_INVALID_CONTEXT` with no context current,
/// `CUDA_ERROR_INVALID_HANDLE` with another context current; measured on the H100, the
/// kernel's output untouched, and pinned by `gpu_runtime`'s
/// `gpu_launch_binds_the_context_when_another_is_current`). So the launch goes first, and
/// only on those two refusals is the context made current and the launch made again; any
/// other error, or the same one again, is the launch's own.
///
/// # Safety
///
/// As [`driver::launch`], except that `ctx` need not be current: `f` must belong to a module
/// loaded in `ctx` and `stream` to `ctx`.
#[inline(always)]
unsafe fn launch_bound(
    ctx: &cudarc::driver::CudaContext,
    f: &driver::Function,
    cfg: &RawConfig,
    stream: cudarc::driver::sys::CUstream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    match unsafe { driver::launch(f, cfg, stream, params) } {
        Err(e) if e.is_not_current() => bind_and_relaunch(ctx, f, cfg, stream, params),
        r => r,
    }
}

/// The second try of [`launch_bound`], with `ctx` made current.
#[cold]
#[inline(never)]
fn bind_and_relaunch(
    ctx: &cudarc::driver::CudaContext,
    f: &driver::Function,
    cfg: &RawConfig,
    stream: cudarc::driver::sys::CUstream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    bind(ctx)?;
    // SAFETY: `launch_bound`'s contract, which its caller keeps; `ctx` is now current.
    unsafe { driver::launch(f, cfg, stream, params) }
}

/// `cuEventRecord` of `event` on `stream`.
pub(crate) fn record_event(event: &CudaEvent, stream: &CudaStream) -> Result<(), Error> {
    event
        .record(stream)
        .map_err(|e| Error::Driver(DriverError::from_cudarc("cuEventRecord", e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_dims_from_tuples() {
        let d: LaunchDims = (4u32, 256u32).into();
        assert_eq!(d.grid, Dim3::x(4));
        assert_eq!(d.block, Some(Dim3::x(256)));
        let d: LaunchDims = ((2, 2, 1), (16, 16, 1), 1024u32).into();
        assert_eq!(d.block, Some(Dim3::new(16, 16, 1)));
        assert_eq!(d.shared_bytes, 1024);
        let d: LaunchDims = Grid::from(7).into();
        assert_eq!(d.block, None);
        assert_eq!(d.grid, Dim3::x(7));
    }
}
