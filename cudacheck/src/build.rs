//! A kernel's builds: the CUBINs compiled for it and the modules loaded from them, keyed by
//! [`Variant`] (the plain kernel, or its bounds-checked rewrite specialised for a launch
//! shape) in one cache: compiled once per variant and architecture, loaded once per variant
//! and context. Each loaded build memoizes the configurations it validated.
//!
//! This module knows nothing of sources or NVRTC: the kernel hands it a compile function.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use cudacheck_core::validate::{validate, LaunchConfig, ValidateOptions, Violation};
use cudacheck_core::{Arch, KernelResources};
use cudarc::driver::CudaContext;

use crate::context::{bind, state_of, ContextState};
use crate::driver::{self, DriverError, EntryPoint, FunctionAttributes, MissingEntryPoint};
use crate::error::Error;
use crate::instrument::Spec;
use crate::seqlock::{pack_config, SeqSlot, CONFIG_WORDS};

/// Which build of a kernel a launch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// The source as written.
    Plain,
    /// The bounds-checked rewrite, specialised for a launch shape (`None`: a block no GPU
    /// runs, which validation then refuses; see [`Spec::of`]).
    Checked { shape: Option<Spec> },
}

/// The CUBIN of one kernel for one architecture, with its resources.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) arch: Arch,
    pub(crate) cubin: Vec<u8>,
    pub(crate) symbol: String,
    pub(crate) resources: KernelResources,
    pub(crate) log: String,
    /// A bounds-checked build's site table (which access and line each fault record names).
    pub(crate) sites: Option<Arc<cudacheck_core::instrument::InstrumentedKernel>>,
    /// A bounds-checked build's instrumented PTX, which [`Loaded::load`] hands the driver's
    /// JIT when it can (see there); `cubin` is nvJitLink's assembly of it.
    pub(crate) ptx: Option<String>,
    /// Whether `resources.params` is the kernel's parameter list. False only for a function
    /// the application loaded, on a driver that cannot list its parameters: launches then skip
    /// the argument count and size checks.
    pub(crate) params_known: bool,
}

/// A build loaded in one context.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) state: Arc<ContextState>,
    /// The module the function is in: ours, or the application's.
    module: Owner,
    pub(crate) function: driver::Function,
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) attrs: FunctionAttributes,
    /// What launches are validated against: the CUBIN's resources with the driver's own numbers
    /// for registers and static shared memory (they agree; the driver's are authoritative for the
    /// code it loaded).
    pub(crate) resources: KernelResources,
    /// The kernel's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    opted_in: AtomicU32,
    memo: Memo,
    /// Serializes validation's side effects: the opt-in and the memo's writes.
    validate_lock: Mutex<()>,
    /// A checked build's last host-check verdict, by the launch values it was reached for
    /// (`launch::checked`): launches from one call site repeat their arguments, and a
    /// verdict costs up to tens of microseconds to evaluate.
    pub(crate) host_check_memo: Mutex<Option<HostCheckMemo>>,
    /// An init-checked build whose kernel marks what it writes: the device address of its
    /// module's `__cc_init_dir` (`cudacheck_core::init::DIR_SYMBOL`).
    init_dir: Option<u64>,
    /// The directory address last written there (0, as loaded: every byte counts as written,
    /// and the kernel's stores mark nothing).
    init_dir_value: AtomicU64,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // A destroyed or reset context took its modules with it; unloading the stale handle
        // could hit a module of a newer context. (A context kept alive by another
        // `CudaContext` of the same primary context only leaks the module.)
        if let (Owner::Ours(module), false) = (&self.module, self.state.is_alive()) {
            module.forget();
        }
    }
}

/// Who keeps a loaded build's module alive.
#[derive(Debug)]
enum Owner {
    /// cudacheck loaded it, and unloads it with the build.
    Ours(driver::Module),
    /// The application loaded it with cudarc: holding its `CudaFunction` keeps cudarc's module
    /// (and context) alive, and cudarc unloads it.
    Theirs(#[allow(dead_code)] cudarc::driver::CudaFunction),
}

/// Configurations a build remembers as validated.
const MEMO_SLOTS: usize = 4;

/// The last configurations that passed validation, compared word for word (no hashing, so no
/// collisions) without a lock: each is a [`SeqSlot`] of the packed configuration and opt-in.
#[derive(Debug, Default)]
struct Memo {
    slots: [SeqSlot<CONFIG_WORDS>; MEMO_SLOTS],
    /// Writes so far (under `validate_lock`): picks the slot and the stamp of the next one.
    writes: AtomicU64,
}

impl Memo {
    #[inline]
    fn words(cfg: &LaunchConfig, opt_in: bool) -> [u64; CONFIG_WORDS] {
        pack_config(cfg, u32::from(opt_in))
    }

    #[inline]
    fn contains(&self, words: &[u64; CONFIG_WORDS]) -> bool {
        self.slots.iter().any(|s| s.holds(words))
    }

    /// Caller holds the build's `validate_lock`: one writer at a time.
    fn insert(&self, words: [u64; CONFIG_WORDS]) {
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        self.slots[n as usize % MEMO_SLOTS].write(2 * (n + 1), words);
    }
}

impl Loaded {
    /// Validates `cfg` (memoized) and opts in to the dynamic shared memory it needs.
    #[inline]
    ///
    /// `ctx` is the context the build is loaded in; it is made current before the driver is
    /// asked anything (the launch path binds lazily, see `launch::launch_bound`).
    pub(crate) fn prepare(
        &self,
        ctx: &CudaContext,
        cfg: &LaunchConfig,
        opt_in: bool,
    ) -> Result<(), PrepareError> {
        let words = Memo::words(cfg, opt_in);
        if self.memo.contains(&words) {
            return Ok(());
        }
        self.validate_and_opt_in(ctx, cfg, opt_in, words)
    }

    #[cold]
    fn validate_and_opt_in(
        &self,
        ctx: &CudaContext,
        cfg: &LaunchConfig,
        opt_in: bool,
        words: [u64; CONFIG_WORDS],
    ) -> Result<(), PrepareError> {
        validate(
            &self.resources,
            cfg,
            &self.state.limits,
            &ValidateOptions {
                shared_opt_in: opt_in,
            },
        )
        .map_err(PrepareError::Invalid)?;
        if cfg.cluster.is_some() {
            // A driver without cuLaunchKernelEx cannot launch clusters (`driver::entry`).
            if let Some(missing) = driver::missing(EntryPoint::LaunchKernelEx) {
                return Err(PrepareError::TooOld(missing));
            }
        }
        // A launch may use at most MAX_DYNAMIC_SHARED_SIZE_BYTES of dynamic shared memory; the
        // default is what fits beside the static part in 48 KiB. Serialized so that two threads
        // never lower each other's setting.
        let _serial = self.validate_lock.lock().unwrap_or_else(|p| p.into_inner());
        if cfg.dynamic_shared_bytes > self.opted_in.load(Ordering::Relaxed) {
            bind(ctx).map_err(PrepareError::Driver)?;
            driver::set_max_dynamic_shared(&self.function, cfg.dynamic_shared_bytes)
                .map_err(PrepareError::Driver)?;
            self.opted_in
                .store(cfg.dynamic_shared_bytes, Ordering::Relaxed);
        }
        self.memo.insert(words);
        Ok(())
    }

    /// Loads `compiled` into `ctx` (whose state is `state`).
    pub(crate) fn load(
        ctx: &Arc<CudaContext>,
        state: Arc<ContextState>,
        compiled: Arc<Compiled>,
    ) -> Result<Loaded, Error> {
        bind(ctx)?;
        // A first launch may come inside a stream capture, where loading a module is otherwise
        // refused (and would invalidate the capture).
        let _relaxed = driver::RelaxedCapture::enter()?;
        // A bounds-checked build is loaded from its PTX through the driver's JIT where it can
        // be (`policy::checked_jit`), nvJitLink's CUBIN otherwise. The plain build is
        // NVRTC's CUBIN, which NVRTC assembles as a whole program; nvJitLink assembles PTX as
        // relocatable code and links it, and `ptxas` then allocates registers and schedules
        // differently: on sm_90 the benchmark set's `sgemm_tiled_4x4` gets 64 registers from
        // NVRTC and 48 from nvJitLink (48 from NVRTC too with `-rdc=true`), and its checked
        // build, without a single device check, ran 1.63x the plain one's time on the H100;
        // `stencil13_zqueue`'s checked build got 80 registers from nvJitLink and 56 from the
        // driver, 1.89x and 1.16x (results/instrument_cost.md, 2026-11-27). The driver
        // assembles a module loaded from PTX as a whole program, like NVRTC, and keeps the
        // result in its JIT cache. Where it cannot (a PTX newer than the driver) or the build
        // is for another architecture than the device's, the CUBIN is loaded.
        let jitted = compiled
            .ptx
            .as_deref()
            .filter(|_| compiled.arch == state.device.arch && crate::policy::checked_jit())
            .and_then(|ptx| driver::Module::load_ptx(ptx).ok());
        let module = match jitted {
            Some(m) => m,
            None => driver::Module::load_cubin(&compiled.cubin).map_err(|load| {
                explain_load_failure(
                    load,
                    driver::driver_version().ok(),
                    crate::nvrtc::loaded_nvrtc().map(|n| n.version),
                )
            })?,
        };
        let function = module.function(&compiled.symbol)?;
        let attrs = driver::function_attributes(&function)?;
        let marks = compiled
            .sites
            .as_ref()
            .and_then(|s| s.init.as_ref())
            .is_some_and(|k| k.coverage.not_checked.is_none());
        let init_dir = marks
            .then(|| module.global(cudacheck_core::init::DIR_SYMBOL).ok())
            .flatten()
            .filter(|&(_, bytes)| bytes == 8)
            .map(|(ptr, _)| ptr);
        let mut resources = compiled.resources.clone();
        resources.registers = attrs.num_regs;
        resources.static_shared_bytes = attrs.shared_size_bytes;
        resources.local_bytes = attrs.local_size_bytes;
        Ok(Loaded {
            state,
            module: Owner::Ours(module),
            function,
            compiled,
            opted_in: AtomicU32::new(attrs.max_dynamic_shared_size_bytes),
            attrs,
            resources,
            memo: Memo::default(),
            validate_lock: Mutex::new(()),
            host_check_memo: Mutex::new(None),
            init_dir,
            init_dir_value: AtomicU64::new(0),
        })
    }

    /// Points an init-checked build's `__cc_init_dir` at `dir`, its context's shadow
    /// directory, unless it already does (once per build: the directory lives as long as the
    /// context). The context must be current and no kernel of this build running: the copy
    /// is synchronous.
    pub(crate) fn point_init_dir(&self, dir: u64) -> Result<(), DriverError> {
        let Some(at) = self.init_dir else {
            return Ok(());
        };
        if dir == 0 || self.init_dir_value.load(Ordering::Acquire) == dir {
            return Ok(());
        }
        // SAFETY: the module variable is 8 bytes (checked at load) of this build's module in
        // the current context; kernels only read it.
        unsafe { driver::memcpy_htod(at, &dir.to_le_bytes()) }?;
        self.init_dir_value.store(dir, Ordering::Release);
        Ok(())
    }

    /// Whether this build's kernel marks the global memory it writes in its context's shadow
    /// (an init-checked build pointed at the directory): a launch of any other build may
    /// write tracked buffers behind the shadow's back.
    #[inline]
    pub(crate) fn marks_init(&self) -> bool {
        self.init_dir_value.load(Ordering::Acquire) != 0
    }
}

/// A failed module load, named for what it most likely is: a CUBIN of a newer CUDA than the
/// driver's (a driver loads CUBINs of its own major version or older).
fn explain_load_failure(
    load: DriverError,
    driver: Option<driver::CudaVersion>,
    nvrtc: Option<(i32, i32)>,
) -> Error {
    match (driver, nvrtc) {
        (Some(driver), Some(nvrtc)) if nvrtc.0 > driver.major() => Error::CompilerNewerThanDriver {
            nvrtc,
            driver,
            load,
        },
        _ => Error::Driver(load),
    }
}

impl Loaded {
    /// A build of a function the application loaded itself: `compiled` holds what the driver
    /// reports of it (no CUBIN).
    pub(crate) fn adopt(
        state: Arc<ContextState>,
        function: cudarc::driver::CudaFunction,
        handle: driver::Function,
        attrs: FunctionAttributes,
        compiled: Arc<Compiled>,
    ) -> Loaded {
        Loaded {
            state,
            module: Owner::Theirs(function),
            function: handle,
            opted_in: AtomicU32::new(attrs.max_dynamic_shared_size_bytes),
            attrs,
            resources: compiled.resources.clone(),
            compiled,
            memo: Memo::default(),
            validate_lock: Mutex::new(()),
            host_check_memo: Mutex::new(None),
            init_dir: None,
            init_dir_value: AtomicU64::new(0),
        }
    }
}

pub(crate) enum PrepareError {
    Invalid(Vec<Violation>),
    Driver(DriverError),
    TooOld(MissingEntryPoint),
}

/// Every build of one kernel. Entries are never removed while the kernel lives, so a
/// reference to one stays valid for the kernel's lifetime (see `last_plain`); entries of dead
/// contexts are few (one per context and variant ever used) and inert.
#[derive(Debug, Default)]
pub(crate) struct Builds {
    compiled: Mutex<Vec<(Variant, Arc<Compiled>)>>,
    loaded: RwLock<Vec<(Variant, Arc<Loaded>)>>,
    /// The plain build of the last plain launch: the hot path checks it with two loads and
    /// no lock.
    last_plain: AtomicPtr<Loaded>,
}

/// How to make a build that is not cached: the architecture to compile for on a context, and
/// the compile itself.
pub(crate) trait Make {
    fn arch(&self, state: &ContextState) -> Arch;
    fn compile(&self, variant: Variant, arch: Arch) -> Result<Compiled, Error>;
}

impl Builds {
    /// The plain build loaded in `ctx`, made on first use.
    #[inline]
    pub(crate) fn plain(&self, ctx: &Arc<CudaContext>, make: &dyn Make) -> Result<&Loaded, Error> {
        let last = self.last_plain.load(Ordering::Acquire);
        if !last.is_null() {
            // SAFETY: `last` points into an `Arc<Loaded>` of `self.loaded`, whose entries are
            // never removed while `self` lives, and `&self` is borrowed for the result.
            let l = unsafe { &*last };
            if l.state.is_state_of(ctx) {
                return Ok(l);
            }
        }
        let l = self.get(ctx, Variant::Plain, make)?;
        self.last_plain
            .store(l as *const Loaded as *mut Loaded, Ordering::Release);
        Ok(l)
    }

    /// The build `variant` loaded in `ctx`: found under a read lock, compiled (once per
    /// variant and architecture) and loaded (once per variant and context) on first use.
    pub(crate) fn get(
        &self,
        ctx: &Arc<CudaContext>,
        variant: Variant,
        make: &dyn Make,
    ) -> Result<&Loaded, Error> {
        let table = self.loaded.read().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = find(&table, ctx, variant) {
            return Ok(l);
        }
        drop(table);
        self.load_into(ctx, variant, make)
    }

    /// Adds a build made elsewhere (a function the application loaded): the one `get` finds
    /// for `variant` in its context from now on.
    pub(crate) fn adopt(&self, variant: Variant, loaded: Loaded) {
        let mut table = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        table.push((variant, Arc::new(loaded)));
    }

    /// The CUBIN of `variant` for `arch`, compiled on first use.
    pub(crate) fn compiled(
        &self,
        variant: Variant,
        arch: Arch,
        make: &dyn Make,
    ) -> Result<Arc<Compiled>, Error> {
        // Held while compiling: two threads asking for the same build compile once.
        let mut cache = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = cache.iter().find(|(v, c)| *v == variant && c.arch == arch) {
            return Ok(Arc::clone(c));
        }
        let c = Arc::new(make.compile(variant, arch)?);
        cache.push((variant, Arc::clone(&c)));
        Ok(c)
    }

    #[cold]
    fn load_into(
        &self,
        ctx: &Arc<CudaContext>,
        variant: Variant,
        make: &dyn Make,
    ) -> Result<&Loaded, Error> {
        let state = state_of(ctx)?;
        state.check_health()?;
        let compiled = self.compiled(variant, make.arch(&state), make)?;
        let loaded = Arc::new(Loaded::load(ctx, state, compiled)?);
        let mut table = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        // Another thread may have loaded it meanwhile: keep the first, drop ours.
        if let Some(l) = find(&table, ctx, variant) {
            return Ok(l);
        }
        let p = Arc::as_ptr(&loaded);
        table.push((variant, loaded));
        // SAFETY: as in `find`: the entry just pushed is never removed while `self` lives.
        Ok(unsafe { &*p })
    }
}

/// The entry for `variant` in `ctx`, as a reference that outlives the table's lock.
fn find<'a>(
    table: &[(Variant, Arc<Loaded>)],
    ctx: &Arc<CudaContext>,
    variant: Variant,
) -> Option<&'a Loaded> {
    let (_, l) = table
        .iter()
        .find(|(v, l)| *v == variant && l.state.is_state_of(ctx))?;
    let p = Arc::as_ptr(l);
    // SAFETY: entries of `Builds::loaded` are never removed while their `Builds` lives, and
    // callers tie `'a` to a borrow of that `Builds`.
    Some(unsafe { &*p })
}

/// [`HostCheckMemo`]'s key: grid, block, then per parameter its length, value and size.
type MemoKey = [u64; 6 + 3 * crate::args::MAX_ARGS];

/// The last host-check verdict of a checked build (`launch::checked`) and the launch
/// values it holds for: grid, block, then each parameter's length and scalar value and size.
#[derive(Debug)]
pub(crate) struct HostCheckMemo {
    pub(crate) key: MemoKey,
    pub(crate) verdict: Option<cudacheck_core::instrument::HostCheckSet>,
}

impl HostCheckMemo {
    pub(crate) fn key(v: &cudacheck_core::instrument::LaunchValues<'_>) -> MemoKey {
        let mut key: MemoKey = [0; 6 + 3 * crate::args::MAX_ARGS];
        for (k, d) in v.grid.iter().chain(&v.block).enumerate() {
            key[k] = u64::from(*d);
        }
        for (k, (len, scalar)) in v.lens.iter().zip(v.scalars).enumerate() {
            let (value, size) = scalar.unwrap_or((0, u32::MAX));
            key[6 + 3 * k] = *len;
            key[6 + 3 * k + 1] = value;
            key[6 + 3 * k + 2] = u64::from(size);
        }
        key
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_check_memo_keys_tell_launch_values_apart() {
        use cudacheck_core::instrument::LaunchValues;
        let key = |grid: u32, n: u64, len: u64| {
            let scalars = [None, Some((n, 4))];
            HostCheckMemo::key(&LaunchValues {
                grid: [grid, 1, 1],
                block: [256, 1, 1],
                scalars: &scalars,
                lens: &[len, u64::MAX],
            })
        };
        assert_eq!(key(4, 1000, 4000), key(4, 1000, 4000));
        assert_ne!(key(4, 1000, 4000), key(5, 1000, 4000));
        assert_ne!(key(4, 1000, 4000), key(4, 1001, 4000));
        assert_ne!(key(4, 1000, 4000), key(4, 1000, 3996));
        // A buffer argument (no scalar) differs from a scalar of value 0.
        let buffer = HostCheckMemo::key(&LaunchValues {
            grid: [4, 1, 1],
            block: [256, 1, 1],
            scalars: &[None, None],
            lens: &[4000, u64::MAX],
        });
        assert_ne!(buffer, key(4, 0, 4000));
    }

    use super::*;

    #[test]
    fn a_cubin_of_a_newer_cuda_than_the_driver_is_named_with_the_fix() {
        let load = DriverError::new("cuModuleLoadData", 222);
        let e = explain_load_failure(
            load.clone(),
            Some(driver::CudaVersion(12040)),
            Some((13, 0)),
        );
        assert!(matches!(e, Error::CompilerNewerThanDriver { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("the CUDA 12.4 driver could not load the CUBIN that NVRTC 13.0 made"),
            "{text}"
        );
        assert!(
            text.contains("Point CUDACHECK_NVRTC at an NVRTC 12.x"),
            "{text}"
        );
        // The same refusal with a compiler the driver can load is the driver's own error.
        let same = explain_load_failure(load, Some(driver::CudaVersion(13000)), Some((13, 0)));
        assert!(matches!(same, Error::Driver(_)), "{same:?}");
    }
    use cudacheck_core::Dim3;

    #[test]
    fn memo_remembers_the_last_configs_exactly() {
        let m = Memo::default();
        let cfg = |g| LaunchConfig::new(Dim3::x(g), Dim3::x(256));
        for g in 1..=MEMO_SLOTS as u32 {
            m.insert(Memo::words(&cfg(g), true));
        }
        assert!(m.contains(&Memo::words(&cfg(1), true)));
        assert!(
            !m.contains(&Memo::words(&cfg(1), false)),
            "the opt-in choice is part of the key"
        );
        m.insert(Memo::words(&cfg(100), true));
        assert!(
            !m.contains(&Memo::words(&cfg(1), true)),
            "the oldest is evicted"
        );
        assert!(m.contains(&Memo::words(&cfg(100), true)));
    }

    #[test]
    fn memo_under_many_threads_holds_only_whole_configurations() {
        // Writers insert under a lock, as `validate_and_opt_in` does; readers test and read
        // the slots without one, as `prepare` does. A configuration is grid (g, g, g) with
        // block (32 (g % 32 + 1), 1, 1): a slot mixing two inserts breaks that.
        use std::sync::atomic::AtomicBool;
        let memo = Arc::new(Memo::default());
        let serial = Arc::new(Mutex::new(()));
        let done = Arc::new(AtomicBool::new(false));
        let cfg = |g: u32| LaunchConfig::new(Dim3::new(g, g, g), Dim3::x(32 * (g % 32 + 1)));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (memo, done) = (Arc::clone(&memo), Arc::clone(&done));
                std::thread::spawn(move || {
                    let mut read = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        for slot in &memo.slots {
                            if let Some((_, w)) = slot.read() {
                                let c = crate::seqlock::unpack_config(&w);
                                let g = c.grid.x;
                                assert_eq!((c.grid.y, c.grid.z), (g, g), "a mixed slot");
                                assert_eq!(c.block, Dim3::x(32 * (g % 32 + 1)), "a mixed slot");
                                read += 1;
                            }
                        }
                    }
                    read
                })
            })
            .collect();
        let writers: Vec<_> = (0..4u32)
            .map(|t| {
                let (memo, serial) = (Arc::clone(&memo), Arc::clone(&serial));
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        let words = Memo::words(&cfg(t * 100_000 + i), i % 2 == 0);
                        let _one = serial.lock().unwrap();
                        memo.insert(words);
                        // The newest insert is always remembered.
                        assert!(memo.contains(&words));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(memo.writes.load(Ordering::Relaxed), 80_000);
    }

    #[test]
    fn memo_tells_a_cluster_from_none() {
        let m = Memo::default();
        let plain = LaunchConfig::new(Dim3::x(4), Dim3::x(256));
        let mut one = plain;
        one.cluster = Some(Dim3::new(0, 0, 0));
        m.insert(Memo::words(&plain, false));
        assert!(!m.contains(&Memo::words(&one, false)));
    }

    #[test]
    fn variants_key_builds_apart() {
        let shape = Spec::of(Dim3::x(256), 0);
        assert_ne!(Variant::Plain, Variant::Checked { shape });
        assert_ne!(
            Variant::Checked { shape },
            Variant::Checked {
                shape: Spec::of(Dim3::x(128), 0)
            }
        );
    }
}
