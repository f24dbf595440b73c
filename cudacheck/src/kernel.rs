//! [`Kernel`]: a kernel in a CUDA source, compiled once per architecture and loaded once per
//! context, with the resources the launch checks need.
//!
//! Compiling happens at the first launch (or [`Kernel::load`]) on a context, for that device's
//! exact architecture (`sm_XY` from its compute capability). Loading a CUBIN, not PTX, means a
//! newer NVRTC than the driver still works: the driver never JIT-compiles anything.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use cudacheck_core::cubin::read_cubin;
use cudacheck_core::limits::ArchLimits;
use cudacheck_core::validate::{
    kernel_max_threads, validate, LaunchConfig, ValidateOptions, Violation,
};
use cudacheck_core::{Arch, KernelResources};
use cudarc::driver::{CudaContext, CudaStream};

use crate::context::{bind, state_of, ContextState};
use crate::driver::{self, FunctionAttributes};
use crate::error::{DriverError, Error};
use crate::launch::{Launch, SyncMode};
use crate::nvrtc::{self, CompileError, CompileOptions, CudaSource};

/// One parameter of the kernel as the Rust side declares it; checked against the compiled
/// kernel's parameter table at load ([`Error::SignatureMismatch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
}

/// What a parameter is: a pointer to device memory (read-only or written), or a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    ConstPtr {
        /// The C element type, for messages.
        elem: &'static str,
        elem_size: u32,
        elem_align: u32,
    },
    MutPtr {
        elem: &'static str,
        elem_size: u32,
        elem_align: u32,
    },
    Value {
        ty: &'static str,
        size: u32,
        align: u32,
    },
}

impl ParamKind {
    /// Bytes in the parameter buffer: 8 for a pointer.
    pub fn size(&self) -> u32 {
        match self {
            ParamKind::ConstPtr { .. } | ParamKind::MutPtr { .. } => 8,
            ParamKind::Value { size, .. } => *size,
        }
    }

    /// Alignment in the parameter buffer: 8 for a pointer.
    pub fn align(&self) -> u32 {
        match self {
            ParamKind::ConstPtr { .. } | ParamKind::MutPtr { .. } => 8,
            ParamKind::Value { align, .. } => *align,
        }
    }
}

impl fmt::Display for ParamSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ParamKind::ConstPtr { elem, .. } => write!(f, "const {elem}* {}", self.name),
            ParamKind::MutPtr { elem, .. } => write!(f, "{elem}* {}", self.name),
            ParamKind::Value { ty, .. } => write!(f, "{ty} {}", self.name),
        }
    }
}

/// Whether launches of a kernel are bounds-checked ([`KernelBuilder::instrument`]).
///
/// An instrumented launch runs a rewritten copy of the kernel (see
/// [`cudacheck_core::instrument`]) that checks every access through its pointer parameters and
/// fixed-size arrays, synchronizes, and returns [`Error::OutOfBounds`] or
/// [`Error::DeviceAssert`] for the first bad access or failed `assert`, naming the CUDA source
/// line, instead of letting the kernel corrupt memory or poison the context.
///
/// Resolution, first match wins:
/// 1. the launch's own [`Launch::instrument`](crate::Launch::instrument);
/// 2. the kernel's mode, [`On`](Self::On) or [`Off`](Self::Off) (from
///    [`KernelBuilder::instrument`] or the macro's `instrument = true/false`);
/// 3. the `CUDACHECK_INSTRUMENT` environment variable (`1`/`0`, read once per process);
/// 4. the build profile: on in debug builds, off in release builds (for macro-declared kernels,
///    the profile of the crate that declares them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InstrumentMode {
    /// Never bounds-check this kernel's launches (a launch may still ask for it).
    Off,
    /// Bounds-check every launch of this kernel (unless a launch says otherwise).
    On,
    /// Defer to `CUDACHECK_INSTRUMENT`, then the build profile.
    #[default]
    Auto,
}

/// Builds a [`Kernel`]; see [`Kernel::new`].
#[derive(Clone, Debug)]
#[must_use = "call .build() to get the Kernel"]
pub struct KernelBuilder {
    source: CudaSource,
    name: String,
    defines: Vec<(String, Option<String>)>,
    include_dirs: Vec<PathBuf>,
    options: Vec<String>,
    max_registers: Option<u32>,
    arch: Option<Arch>,
    params: Option<&'static [ParamSpec]>,
    instrument: InstrumentMode,
    sync: SyncMode,
    shared_opt_in: bool,
}

impl KernelBuilder {
    /// `-DNAME` or `-DNAME=VALUE`.
    pub fn define(mut self, name: &str, value: Option<&str>) -> Self {
        self.defines
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    /// An extra `-I` directory.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    /// A raw NVRTC option, passed last.
    pub fn option(mut self, opt: &str) -> Self {
        self.options.push(opt.to_string());
        self
    }

    /// `--maxrregcount=n`.
    pub fn max_registers(mut self, n: u32) -> Self {
        self.max_registers = Some(n);
        self
    }

    /// Compile for `arch` instead of the device's own architecture.
    pub fn arch(mut self, arch: Arch) -> Self {
        self.arch = Some(arch);
        self
    }

    /// The Rust-side parameter list, in order, checked at first load against the CUBIN's
    /// parameter table (count, sizes, alignment).
    pub fn params(mut self, params: &'static [ParamSpec]) -> Self {
        self.params = Some(params);
        self
    }

    /// Whether launches are bounds-checked (see [`InstrumentMode`] for the order in which the
    /// launch, this setting, `CUDACHECK_INSTRUMENT` and the build profile decide).
    pub fn instrument(mut self, mode: InstrumentMode) -> Self {
        self.instrument = mode;
        self
    }

    /// Whether launches of this kernel synchronize and check afterwards, unless a launch says
    /// otherwise. Overrides `CUDACHECK_SYNC`.
    pub fn sync(mut self, mode: SyncMode) -> Self {
        self.sync = mode;
        self
    }

    /// Whether cudacheck may opt the kernel in to more than 48 KiB of shared memory per block
    /// (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`) when a launch
    /// asks for it (default: yes). With `false`, such a launch is refused.
    pub fn shared_opt_in(mut self, allow: bool) -> Self {
        self.shared_opt_in = allow;
        self
    }

    pub fn build(self) -> Kernel {
        let instrument_default = match self.instrument {
            InstrumentMode::On => Some(true),
            InstrumentMode::Off => Some(false),
            InstrumentMode::Auto => crate::instrument::env_instrument(),
        };
        Kernel {
            inner: Arc::new(KernelInner {
                name: self.name.as_str().into(),
                instrument_default,
                instrumented: crate::instrument::InstCache::default(),
                builder: self,
                compiled: Mutex::new(Vec::new()),
                loaded: RwLock::new(Vec::new()),
                last: AtomicPtr::new(std::ptr::null_mut()),
            }),
        }
    }
}

/// A kernel in a CUDA source. Cheap to clone (an `Arc` inside); `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Kernel {
    inner: Arc<KernelInner>,
}

#[derive(Debug)]
struct KernelInner {
    name: Arc<str>,
    builder: KernelBuilder,
    /// One compiled CUBIN per architecture, shared by every context of that architecture.
    compiled: Mutex<Vec<Arc<Compiled>>>,
    /// One loaded module per context. Entries are never removed while the kernel lives, so
    /// a pointer to one stays valid for the kernel's lifetime (see `last`); entries of dead
    /// contexts are few (one per context ever used) and inert.
    loaded: RwLock<Vec<Arc<Loaded>>>,
    /// The entry of the last launch: the hot path checks it with two loads and no lock.
    last: AtomicPtr<Loaded>,
    /// Whether launches are instrumented when the launch does not say: the builder's mode, or
    /// for `Auto` the environment; `None` leaves it to the launch's build profile. Resolved once
    /// here so that a plain launch pays one test for it.
    instrument_default: Option<bool>,
    /// The bounds-checked build of the kernel, compiled and loaded apart from the plain one.
    instrumented: crate::instrument::InstCache,
}

/// The CUBIN of one kernel for one architecture, with its resources.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) arch: Arch,
    pub(crate) cubin: Vec<u8>,
    pub(crate) symbol: String,
    pub(crate) resources: KernelResources,
    log: String,
}

/// A kernel loaded in one context.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) state: Arc<ContextState>,
    module: driver::Module,
    pub(crate) function: driver::Function,
    compiled: Arc<Compiled>,
    pub(crate) attrs: FunctionAttributes,
    /// What launches are validated against: the CUBIN's resources with the driver's own numbers
    /// for registers and static shared memory (they agree; the driver's are authoritative for the
    /// code it loaded).
    pub(crate) resources: KernelResources,
    /// The kernel's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    opted_in: AtomicU32,
    memo: Memo,
    opt_in_lock: Mutex<()>,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // A destroyed or reset context took its modules with it; unloading the stale handle
        // could hit a module of a newer context. (A context kept alive by another
        // `CudaContext` of the same primary context only leaks the module.)
        if !self.state.is_alive() {
            self.module.forget();
        }
    }
}

/// The last few configurations that passed validation, so repeated launches skip it.
const MEMO_SIZE: usize = 8;

/// Validated configurations as 64-bit keys in atomics: the hot path reads them without a lock.
/// Two different configurations sharing a key (odds 2^-64 per pair) would only let the driver,
/// not cudacheck, reject an invalid one.
#[derive(Debug, Default)]
struct Memo {
    keys: [AtomicU64; MEMO_SIZE],
    next: AtomicUsize,
}

impl Memo {
    /// A well-mixed, never-zero key of a configuration and the opt-in choice.
    fn key(cfg: &LaunchConfig, opt_in: bool) -> u64 {
        let c = cfg.cluster;
        let words = [
            cfg.grid.x,
            cfg.grid.y,
            cfg.grid.z,
            cfg.block.x,
            cfg.block.y,
            cfg.block.z,
            cfg.dynamic_shared_bytes,
            c.map_or(0, |c| c.x),
            c.map_or(0, |c| c.y),
            c.map_or(0, |c| c.z),
            u32::from(c.is_some()) | u32::from(opt_in) << 1,
        ];
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for w in words {
            // splitmix64's finalizer on each word folded in: every input bit reaches every
            // output bit.
            h = (h ^ u64::from(w)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            h ^= h >> 31;
            h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
            h ^= h >> 29;
        }
        h | 1
    }

    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.keys.iter().any(|k| k.load(Ordering::Relaxed) == key)
    }

    fn insert(&self, key: u64) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % MEMO_SIZE;
        self.keys[i].store(key, Ordering::Relaxed);
    }
}

impl Loaded {
    /// Validates `cfg` (memoized) and opts in to the dynamic shared memory it needs.
    #[inline]
    pub(crate) fn prepare(&self, cfg: &LaunchConfig, opt_in: bool) -> Result<(), PrepareError> {
        let key = Memo::key(cfg, opt_in);
        if self.memo.contains(key) {
            return Ok(());
        }
        self.validate_and_opt_in(cfg, opt_in)?;
        self.memo.insert(key);
        Ok(())
    }

    #[cold]
    fn validate_and_opt_in(&self, cfg: &LaunchConfig, opt_in: bool) -> Result<(), PrepareError> {
        validate(
            &self.resources,
            cfg,
            &self.state.limits,
            &ValidateOptions {
                shared_opt_in: opt_in,
            },
        )
        .map_err(PrepareError::Invalid)?;
        // A launch may use at most MAX_DYNAMIC_SHARED_SIZE_BYTES of dynamic shared memory; the
        // default is what fits beside the static part in 48 KiB. Serialized so that two threads
        // never lower each other's setting.
        let _serial = self.opt_in_lock.lock().unwrap_or_else(|p| p.into_inner());
        if cfg.dynamic_shared_bytes > self.opted_in.load(Ordering::Relaxed) {
            driver::set_max_dynamic_shared(&self.function, cfg.dynamic_shared_bytes)
                .map_err(PrepareError::Driver)?;
            self.opted_in
                .store(cfg.dynamic_shared_bytes, Ordering::Relaxed);
        }
        Ok(())
    }
}

pub(crate) enum PrepareError {
    Invalid(Vec<Violation>),
    Driver(DriverError),
}

/// What [`Kernel::load`] reports: the kernel's resources and the device's limits.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LoadedKernelInfo {
    /// The name the kernel was created with.
    pub kernel: String,
    /// The symbol in the CUBIN (mangled for C++ kernels).
    pub symbol: String,
    /// The architecture the CUBIN was compiled for.
    pub arch: Arch,
    /// The resources read from the CUBIN (`cudacheck_core::cubin::read_cubin`).
    pub resources: KernelResources,
    /// The same facts as the driver reports them (`cuFuncGetAttribute`).
    pub attributes: FunctionAttributes,
    /// The device's limits.
    pub limits: ArchLimits,
    /// The largest block the kernel can launch with, computed offline from `resources`
    /// (equals `attributes.max_threads_per_block`).
    pub max_threads_per_block: u32,
    /// NVRTC's log (warnings).
    pub compile_log: String,
}

impl Kernel {
    /// A kernel `name` (an `extern "C"` symbol, a C++ name such as `ns::f`, or a template
    /// name expression such as `scale<float>`) in `source`. Nothing is compiled until the
    /// first launch on a context.
    // `Kernel::new(..)...build()` reads as what it makes, like `std::thread::Builder`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(source: CudaSource, name: impl Into<String>) -> KernelBuilder {
        KernelBuilder {
            source,
            name: name.into(),
            defines: Vec::new(),
            include_dirs: Vec::new(),
            options: Vec::new(),
            max_registers: None,
            arch: None,
            params: None,
            instrument: InstrumentMode::Auto,
            sync: SyncMode::FromEnv,
            shared_opt_in: true,
        }
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub(crate) fn name_arc(&self) -> &Arc<str> {
        &self.inner.name
    }

    /// See `KernelInner::instrument_default`.
    #[inline]
    pub(crate) fn instrument_default(&self) -> Option<bool> {
        self.inner.instrument_default
    }

    pub(crate) fn source(&self) -> &CudaSource {
        &self.inner.builder.source
    }

    pub(crate) fn inst_cache(&self) -> &crate::instrument::InstCache {
        &self.inner.instrumented
    }

    /// What bounds checking covers in this kernel: how many accesses are checked, and which are
    /// not and why. `Ok(None)` when the instrumenter does not rewrite this kernel (its
    /// definition comes from a macro, or the parser could not read it): its launches then run
    /// unchecked even when instrumentation is on. Needs no GPU and no NVRTC.
    ///
    /// # Errors
    ///
    /// [`Error::Instrument`] when the source cannot be instrumented at all (a NUL byte, or the
    /// parser gave up on the file).
    pub fn coverage(&self) -> Result<Option<crate::instrument::Coverage>, Error> {
        crate::instrument::coverage(self)
    }

    pub(crate) fn default_sync(&self) -> SyncMode {
        self.inner.builder.sync
    }

    pub(crate) fn default_shared_opt_in(&self) -> bool {
        self.inner.builder.shared_opt_in
    }

    /// The Rust-side parameter list given with [`KernelBuilder::params`].
    pub fn params(&self) -> Option<&'static [ParamSpec]> {
        self.inner.builder.params
    }

    /// Starts a launch of this kernel on `stream`.
    #[inline]
    pub fn launch<'a>(&'a self, stream: &'a Arc<CudaStream>) -> Launch<'a> {
        Launch::new(self, stream)
    }

    /// Compiles (once per architecture, cached) and loads (once per context) the kernel for
    /// the stream's device, and reports its resources.
    ///
    /// # Errors
    ///
    /// [`Error::Compile`], [`Error::NvrtcNotFound`], [`Error::KernelNotFound`],
    /// [`Error::SignatureMismatch`], [`Error::Cubin`], or the driver's error.
    pub fn load(&self, stream: &Arc<CudaStream>) -> Result<LoadedKernelInfo, Error> {
        let l = self.loaded(stream.context())?;
        Ok(LoadedKernelInfo {
            kernel: self.name().to_string(),
            symbol: l.compiled.symbol.clone(),
            arch: l.compiled.arch,
            resources: l.compiled.resources.clone(),
            attributes: l.attrs,
            limits: l.state.limits.clone(),
            max_threads_per_block: kernel_max_threads(&l.compiled.resources, &l.state.limits),
            compile_log: l.compiled.log.clone(),
        })
    }

    /// The driver's occupancy for a block of `block_threads` threads
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`): resident blocks per SM.
    ///
    /// # Errors
    ///
    /// As [`Kernel::load`].
    pub fn device_occupancy(
        &self,
        stream: &Arc<CudaStream>,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, Error> {
        let l = self.loaded(stream.context())?;
        l.state.check_health()?;
        bind(stream.context())?;
        Ok(driver::max_active_blocks(
            &l.function,
            block_threads,
            dynamic_shared_bytes,
        )?)
    }

    /// The kernel loaded in `ctx`: found under a read lock on the hot path, loaded (and
    /// compiled if needed) the first time.
    #[inline]
    pub(crate) fn loaded(&self, ctx: &Arc<CudaContext>) -> Result<&Loaded, Error> {
        let last = self.inner.last.load(Ordering::Acquire);
        if !last.is_null() {
            // SAFETY: `last` points into an `Arc<Loaded>` of `self.inner.loaded`, whose entries
            // are never removed while the kernel lives (it is only pushed to), and `&self`
            // keeps the kernel alive for the returned borrow.
            let l = unsafe { &*last };
            if l.state.is_state_of(ctx) {
                return Ok(l);
            }
        }
        self.loaded_slow(ctx)
    }

    #[cold]
    fn loaded_slow(&self, ctx: &Arc<CudaContext>) -> Result<&Loaded, Error> {
        loop {
            {
                let table = self.inner.loaded.read().unwrap_or_else(|p| p.into_inner());
                if let Some(l) = table.iter().find(|l| l.state.is_state_of(ctx)) {
                    let p = Arc::as_ptr(l);
                    self.inner.last.store(p as *mut Loaded, Ordering::Release);
                    // SAFETY: as in `loaded`: the entry outlives the table lock because entries
                    // are never removed while the kernel (borrowed by `&self`) lives.
                    return Ok(unsafe { &*p });
                }
            }
            self.load_into(ctx)?;
        }
    }

    #[cold]
    fn load_into(&self, ctx: &Arc<CudaContext>) -> Result<(), Error> {
        let state = state_of(ctx)?;
        state.check_health()?;
        let arch = self.target_arch(&state);
        let compiled = self.compiled_for(arch)?;
        let loaded = Self::load_compiled(ctx, state, compiled)?;
        let mut table = self.inner.loaded.write().unwrap_or_else(|p| p.into_inner());
        if !table.iter().any(|l| l.state.is_state_of(ctx)) {
            table.push(loaded);
        }
        Ok(())
    }

    /// The architecture to compile for on the context of `state`.
    /// The architecture the builder fixed, if any.
    pub(crate) fn declared_arch(&self) -> Option<Arch> {
        self.inner.builder.arch
    }

    pub(crate) fn target_arch(&self, state: &ContextState) -> Arch {
        self.inner.builder.arch.unwrap_or(state.device.arch)
    }

    /// Loads `compiled` into `ctx` (whose state is `state`).
    pub(crate) fn load_compiled(
        ctx: &Arc<CudaContext>,
        state: Arc<ContextState>,
        compiled: Arc<Compiled>,
    ) -> Result<Arc<Loaded>, Error> {
        bind(ctx)?;
        let module = driver::Module::load_cubin(&compiled.cubin)?;
        let function = module.function(&compiled.symbol)?;
        let attrs = driver::function_attributes(&function)?;
        let mut resources = compiled.resources.clone();
        resources.registers = attrs.num_regs;
        resources.static_shared_bytes = attrs.shared_size_bytes;
        resources.local_bytes = attrs.local_size_bytes;
        let loaded = Arc::new(Loaded {
            state,
            module,
            function,
            compiled,
            opted_in: AtomicU32::new(attrs.max_dynamic_shared_size_bytes),
            attrs,
            resources,
            memo: Memo::default(),
            opt_in_lock: Mutex::new(()),
        });
        Ok(loaded)
    }

    /// The CUBIN for `arch`, compiled on first use.
    pub(crate) fn compiled_for(&self, arch: Arch) -> Result<Arc<Compiled>, Error> {
        // Held while compiling: two threads asking for the same arch compile once.
        let mut cache = self
            .inner
            .compiled
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.iter().find(|c| c.arch == arch) {
            return Ok(Arc::clone(c));
        }
        let c = Arc::new(self.compile(&self.inner.builder.source, arch)?);
        cache.push(Arc::clone(&c));
        Ok(c)
    }

    /// Compiles the kernel's source with its options for `arch`.
    pub(crate) fn compile(&self, source: &CudaSource, arch: Arch) -> Result<Compiled, Error> {
        let (out, symbol) = self.nvrtc_output(source, arch, false)?;
        self.finish(arch, out.cubin, symbol, 0, out.log)
    }

    /// NVRTC's output for `source` with the kernel's options (the PTX too when `ptx`), and the
    /// kernel's symbol in it.
    pub(crate) fn nvrtc_output(
        &self,
        source: &CudaSource,
        arch: Arch,
        ptx: bool,
    ) -> Result<(nvrtc::Compiled, String), Error> {
        let b = &self.inner.builder;
        let mut opts = CompileOptions::new(arch);
        opts.include_dirs = b.include_dirs.clone();
        opts.defines = b.defines.clone();
        opts.extra_options = b.options.clone();
        opts.max_registers = b.max_registers;
        opts.name_expressions = vec![b.name.clone()];
        opts.ptx = ptx;
        let out = nvrtc::compile(source, &opts).map_err(|e| match e {
            CompileError::NvrtcNotFound(n) => Error::NvrtcNotFound(Box::new(n)),
            other => Error::Compile {
                kernel: b.name.clone(),
                arch: arch.sm_name(),
                source: Box::new(other),
            },
        })?;
        let symbol = out
            .lowered_names
            .iter()
            .find(|(expr, _)| *expr == b.name)
            .map(|(_, lowered)| lowered.clone())
            .unwrap_or_else(|| b.name.clone());
        Ok((out, symbol))
    }

    /// The kernel's resources in `cubin`, its signature checked against the Rust declaration.
    /// `hidden` parameters trail the user's in the compiled kernel and are left out of the
    /// signature check.
    pub(crate) fn finish(
        &self,
        arch: Arch,
        cubin: Vec<u8>,
        symbol: String,
        hidden: usize,
        log: String,
    ) -> Result<Compiled, Error> {
        let b = &self.inner.builder;
        let info = read_cubin(&cubin).map_err(|source| Error::Cubin {
            kernel: b.name.clone(),
            source,
        })?;
        let Some(resources) = info.kernel(&symbol).cloned() else {
            return Err(Error::KernelNotFound {
                kernel: b.name.clone(),
                symbol,
                available: info.kernels.iter().map(|k| k.symbol.clone()).collect(),
            });
        };
        if let Some(params) = b.params {
            if hidden == 0 {
                check_signature(&b.name, params, &resources)?;
            } else {
                let mut user = resources.clone();
                let n = user.params.len().saturating_sub(hidden);
                user.params.truncate(n);
                check_signature(&b.name, params, &user)?;
            }
        }
        Ok(Compiled {
            arch,
            cubin,
            symbol,
            resources,
            log,
        })
    }
}

/// The Rust declaration against the CUBIN's parameter table: same count, sizes, and each
/// offset aligned for the declared type.
fn check_signature(kernel: &str, params: &[ParamSpec], r: &KernelResources) -> Result<(), Error> {
    let mismatch = |detail: String| Error::SignatureMismatch {
        kernel: kernel.to_string(),
        detail,
    };
    if params.len() != r.params.len() {
        return Err(mismatch(format!(
            "Rust declares {} parameters ({}) but the compiled kernel has {}",
            params.len(),
            params
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            r.params.len()
        )));
    }
    for (i, (spec, slot)) in params.iter().zip(&r.params).enumerate() {
        if spec.kind.size() != slot.size {
            return Err(mismatch(format!(
                "parameter {i} `{spec}` is {} bytes in Rust but {} bytes in the compiled kernel",
                spec.kind.size(),
                slot.size
            )));
        }
        let align = spec.kind.align().max(1);
        if slot.offset % align != 0 {
            return Err(mismatch(format!(
                "parameter {i} `{spec}` needs {align}-byte alignment but the compiled kernel \
                 places it at offset {}",
                slot.offset
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::ParamSlot;

    const SAXPY: &[ParamSpec] = &[
        ParamSpec {
            name: "y",
            kind: ParamKind::MutPtr {
                elem: "float",
                elem_size: 4,
                elem_align: 4,
            },
        },
        ParamSpec {
            name: "x",
            kind: ParamKind::ConstPtr {
                elem: "float",
                elem_size: 4,
                elem_align: 4,
            },
        },
        ParamSpec {
            name: "a",
            kind: ParamKind::Value {
                ty: "float",
                size: 4,
                align: 4,
            },
        },
        ParamSpec {
            name: "n",
            kind: ParamKind::Value {
                ty: "int",
                size: 4,
                align: 4,
            },
        },
    ];

    fn saxpy_resources(sizes: &[(u32, u32)]) -> KernelResources {
        KernelResources {
            symbol: "saxpy".into(),
            params: sizes
                .iter()
                .enumerate()
                .map(|(i, &(offset, size))| ParamSlot {
                    ordinal: i as u32,
                    offset,
                    size,
                })
                .collect(),
            ..KernelResources::default()
        }
    }

    #[test]
    fn matching_signature_passes() {
        let r = saxpy_resources(&[(0, 8), (8, 8), (16, 4), (20, 4)]);
        assert!(check_signature("saxpy", SAXPY, &r).is_ok());
    }

    #[test]
    fn wrong_count_names_both_sides() {
        let r = saxpy_resources(&[(0, 8), (8, 8), (16, 4)]);
        let e = check_signature("saxpy", SAXPY, &r).unwrap_err();
        assert!(matches!(e, Error::SignatureMismatch { .. }));
        assert_eq!(
            e.to_string(),
            "kernel `saxpy`: the Rust signature does not match the compiled kernel: Rust declares \
             4 parameters (float* y, const float* x, float a, int n) but the compiled kernel has 3"
        );
    }

    #[test]
    fn wrong_size_names_the_parameter() {
        // `a` compiled as a double.
        let r = saxpy_resources(&[(0, 8), (8, 8), (16, 8), (24, 4)]);
        let e = check_signature("saxpy", SAXPY, &r).unwrap_err().to_string();
        assert!(
            e.contains(
                "parameter 2 `float a` is 4 bytes in Rust but 8 bytes in the compiled kernel"
            ),
            "{e}"
        );
    }

    #[test]
    fn memo_remembers_the_last_configs() {
        let m = Memo::default();
        let cfg = |g| LaunchConfig::new(cudacheck_core::Dim3::x(g), cudacheck_core::Dim3::x(256));
        for g in 1..=MEMO_SIZE as u32 {
            m.insert(Memo::key(&cfg(g), true));
        }
        assert!(m.contains(Memo::key(&cfg(1), true)));
        assert!(
            !m.contains(Memo::key(&cfg(1), false)),
            "the opt-in choice is part of the key"
        );
        m.insert(Memo::key(&cfg(100), true));
        assert!(
            !m.contains(Memo::key(&cfg(1), true)),
            "the oldest is evicted"
        );
        assert!(m.contains(Memo::key(&cfg(100), true)));
    }

    #[test]
    fn memo_keys_differ_for_nearby_configs() {
        use cudacheck_core::Dim3;
        use std::collections::HashSet;
        let mut configs = HashSet::new();
        for g in 0..48u32 {
            for b in [0u32, 1, 2, 32, 64, 256, 1024] {
                for s in [0u32, 1, 1024] {
                    for (grid, block) in [
                        (Dim3::new(g, 1, 1), Dim3::new(b, 1, 1)),
                        (Dim3::new(1, g, 1), Dim3::new(1, b, 1)),
                        (Dim3::new(1, 1, g), Dim3::new(b, 1, 1)),
                    ] {
                        let mut c = LaunchConfig::new(grid, block);
                        c.dynamic_shared_bytes = s;
                        configs.insert((c, true));
                        configs.insert((c, false));
                        c.cluster = Some(Dim3::x(1));
                        configs.insert((c, true));
                    }
                }
            }
        }
        let keys: HashSet<u64> = configs.iter().map(|(c, o)| Memo::key(c, *o)).collect();
        assert!(configs.len() > 5000);
        assert_eq!(
            keys.len(),
            configs.len(),
            "no two configurations share a key"
        );
    }
}
