//! [`Kernel`]: a kernel in a CUDA source, compiled once per architecture and loaded once per
//! context, with the resources the launch checks need.
//!
//! Compiling happens at the first launch (or [`Kernel::load`]) on a context, for that device's
//! exact architecture (`sm_XY` from its compute capability). Loading a CUBIN, not PTX, means a
//! newer NVRTC than the driver still works: the driver never JIT-compiles anything.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use cudacheck_core::cubin::read_cubin;
use cudacheck_core::limits::ArchLimits;
use cudacheck_core::validate::kernel_max_threads;
use cudacheck_core::{Arch, Dim3, KernelResources};
use cudarc::driver::{CudaContext, CudaStream};

use crate::build::{Builds, Compiled, Loaded, Make, Variant};
use crate::cache::{self, CheckedBuild};
use crate::context::{bind, ContextState};
use crate::driver::{self, FunctionAttributes};
use crate::error::Error;
use crate::instrument::{self, ArgView, BuildError, Coverage, InitCoverage, RaceCoverage, Spec};
use crate::nvrtc::{self, CompileError, CompileOptions, CudaSource};
use crate::ring::{intern, KernelName};
use cudacheck_core::instrument::HostCheckSet;

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
    /// The kernel's switches ([`sync`](Self::sync), [`instrument`](Self::instrument),
    /// [`races`](Self::races), [`init`](Self::init)): `None` until set, which leaves them to the
    /// environment and the build profile.
    instrument: Option<bool>,
    races: Option<bool>,
    init: Option<bool>,
    sync: Option<bool>,
    shared_opt_in: bool,
    origin: Origin,
}

/// Where a kernel's code comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// CUDA C++ that NVRTC compiles ([`Kernel::new`]).
    Source,
    /// PTX that nvJitLink assembles ([`Kernel::from_ptx`]).
    Ptx,
    /// A function the application loaded ([`Kernel::from_function`]): nothing to compile.
    LoadedByApp,
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

    /// Bounds-check this kernel's launches (`true`) or not (`false`), unless a launch says
    /// otherwise ([`Launch::instrument`](crate::Launch::instrument)). Overrides
    /// `CUDACHECK_INSTRUMENT`; without either, debug builds bounds-check and release builds do
    /// not (for macro-declared kernels, the profile of the crate that declares them). The
    /// macro's `instrument = true/false` calls this. See [the switches](crate#switches).
    ///
    /// A bounds-checked launch runs a rewritten copy of the kernel (see
    /// [`cudacheck_core::instrument`]) that checks every access through its pointer
    /// parameters and fixed-size arrays, synchronizes, and returns
    /// [`Error::OutOfBounds`] or [`Error::DeviceAssert`] for the first bad access or failed
    /// `assert`, naming the CUDA source line, instead of letting the kernel corrupt memory or
    /// poison the context.
    pub fn instrument(mut self, on: bool) -> Self {
        self.instrument = Some(on);
        self
    }

    /// Race-check this kernel's launches (`true`) or not (`false`), unless a launch says
    /// otherwise ([`Launch::races`](crate::Launch::races)): shared-memory races and misused
    /// barriers are reported as [`Error::SharedRace`] and [`Error::BarrierMisuse`] (see
    /// [`cudacheck_core::race`]). A race-checked launch is also bounds-checked, unless bounds
    /// checking is turned off by name (see [the switches](crate#switches)). Overrides
    /// `CUDACHECK_RACES`; without either, off in every build profile. The macro's
    /// `races = true/false` calls this. See [the switches](crate#switches).
    pub fn races(mut self, on: bool) -> Self {
        self.races = Some(on);
        self
    }

    /// Check this kernel's launches for reads of memory nothing wrote (`true`) or not
    /// (`false`), unless a launch says otherwise ([`Launch::init`](crate::Launch::init)): the
    /// first such read is reported as [`Error::Uninitialized`] (see
    /// [`cudacheck_core::init`]). The block's `__shared__` memory is checked from the block's
    /// start; global memory is checked in the buffers [`alloc_uninit`](crate::alloc_uninit)
    /// made, and counts as written elsewhere (see [`Launch::init`](crate::Launch::init)). An
    /// init-checked launch is also bounds-checked,
    /// unless bounds checking is turned off by name (and then it is not init-checked either).
    /// Overrides `CUDACHECK_INIT`; without either, off in every build profile. See
    /// [the switches](crate#switches).
    pub fn init(mut self, on: bool) -> Self {
        self.init = Some(on);
        self
    }

    /// Synchronize after each launch of this kernel and check for faults (`true`), or return
    /// at once (`false`), unless a launch says otherwise
    /// ([`Launch::sync`](crate::Launch::sync)). Overrides `CUDACHECK_SYNC`; without either,
    /// debug builds synchronize and release builds do not. See [the switches](crate#switches).
    pub fn sync(mut self, on: bool) -> Self {
        self.sync = Some(on);
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
        let name: Arc<str> = self.name.as_str().into();
        Kernel {
            inner: Arc::new(KernelInner {
                ring_name: intern(&name),
                name,
                instrument_default: crate::policy::instrument_default(self.instrument),
                races_default: crate::policy::races_default(self.races),
                init_default: crate::policy::init_default(self.init),
                races_noted: std::sync::atomic::AtomicBool::new(false),
                builder: self,
                builds: Builds::default(),
                device_check_sets: std::sync::Mutex::new(Vec::new()),
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
    /// The name as the launch ring stores it (one word).
    ring_name: &'static KernelName,
    builder: KernelBuilder,
    /// The plain build and the bounds-checked ones, per architecture and per context.
    builds: Builds,
    /// Whether launches are instrumented when the launch does not say: the kernel's setting,
    /// else `CUDACHECK_INSTRUMENT`; `None` leaves it to the build profile
    /// (`policy::instrument_default`).
    instrument_default: Option<bool>,
    /// Whether launches are race-checked when the launch does not say: the kernel's setting,
    /// else `CUDACHECK_RACES`, else no.
    races_default: bool,
    /// Whether launches are init-checked when the launch does not say: the kernel's setting,
    /// else `CUDACHECK_INIT`, else no.
    init_default: bool,
    /// Whether a launch already said that the kernel's races went unchecked.
    races_noted: std::sync::atomic::AtomicBool,
    /// The sets of failing host checks a build was made for (`launch/checked.rs`), at most
    /// [`MAX_DEVICE_CHECK_SETS`]: past that, launches failing a new set take the fully
    /// checked build, so arguments that fail a different set each time cannot make a build
    /// per launch.
    device_check_sets: std::sync::Mutex<Vec<(Spec, HostCheckSet)>>,
}

/// How many builds with host checks moved to the device one kernel may make.
pub(crate) const MAX_DEVICE_CHECK_SETS: usize = 16;

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
            instrument: None,
            races: None,
            init: None,
            sync: None,
            shared_opt_in: true,
            origin: Origin::Source,
        }
    }

    /// A kernel the application loaded itself with cudarc (`CudaModule::load_function`), in
    /// `ctx`, the context its module was loaded into. Its launches get the same validation,
    /// typed errors, debug synchronization and launch ring as any kernel's, from what the
    /// driver reports of the function (`cuFuncGetAttribute`: registers, static shared and
    /// local memory, the largest block its registers and launch bounds allow; and, on CUDA
    /// 12.4 drivers and newer, `cuFuncGetParamInfo`: its parameter list, for the argument
    /// checks). `name` is what reports call it. On an older driver the argument count and
    /// sizes are not checked: they are then the caller's promise, as with a raw cudarc launch.
    ///
    /// It cannot be bounds-checked (there is no PTX to rewrite; make the kernel with
    /// [`Kernel::from_ptx`] from the PTX the module was loaded from for that), nor launched in
    /// another context: both are [`Error::LoadedByApplication`]. Launches are plain unless
    /// one asks for bounds checking.
    ///
    /// # Errors
    ///
    /// [`Error::DriverNotFound`], [`Error::ContextPoisoned`], or the driver's error reading
    /// the function's attributes.
    pub fn from_function(
        ctx: &Arc<CudaContext>,
        function: cudarc::driver::CudaFunction,
        name: impl Into<String>,
    ) -> Result<Kernel, Error> {
        crate::driver::ensure_loaded()?;
        let name = name.into();
        let state = crate::context::state_of(ctx)?;
        state.check_health()?;
        bind(ctx)?;
        // SAFETY: `function` is a live cudarc function; the build below holds it (and so its
        // module) for as long as the handle is used.
        let handle = unsafe { driver::Function::from_raw(function.cu_function()) };
        let attrs = driver::function_attributes(&handle)?;
        let params = driver::param_slots(&handle)?;
        let mut resources = KernelResources {
            symbol: name.clone(),
            registers: attrs.num_regs,
            static_shared_bytes: attrs.shared_size_bytes,
            local_bytes: attrs.local_size_bytes,
            const_bytes: attrs.const_size_bytes,
            param_bytes: params
                .as_ref()
                .and_then(|p| p.last())
                .map_or(0, |p| p.offset + p.size),
            params: params.clone().unwrap_or_default(),
            ..KernelResources::default()
        };
        // A largest block below what the registers allow comes from launch bounds
        // (`__launch_bounds__`, `.maxntid`): validated as such.
        if attrs.max_threads_per_block < kernel_max_threads(&resources, &state.limits) {
            resources.max_threads_per_block = Some(attrs.max_threads_per_block);
        }
        let compiled = Arc::new(Compiled {
            arch: state.device.arch,
            cubin: Vec::new(),
            symbol: name.clone(),
            resources,
            log: String::new(),
            sites: None,
            ptx: None,
            params_known: params.is_some(),
        });
        let mut b = Kernel::new(CudaSource::from_str(name.clone(), String::new()), name);
        b.instrument = Some(false);
        b.origin = Origin::LoadedByApp;
        let kernel = b.build();
        kernel.inner.builds.adopt(
            Variant::Plain,
            Loaded::adopt(state, function, handle, attrs, compiled),
        );
        Ok(kernel)
    }

    /// A kernel `name` (its symbol, or its C++ name such as `scale<float>` for a mangled one)
    /// in a PTX module: what candle-style crates build with nvcc at build time and embed.
    /// Launches are validated like those of a kernel from source (resources from assembling
    /// the PTX for the device, parameters from the PTX's list) and bounds-checked by
    /// rewriting the PTX; no NVRTC is needed, nvJitLink is. Faults name a parameter by the
    /// PTX's name for it, or by its index where the compiler named it `..._param_N`, and the
    /// source line where the PTX has line information (`nvcc -lineinfo`).
    ///
    /// The builder's `define`, `include_dir`, `option` and `max_registers` do not apply to
    /// PTX (it is compiled already).
    #[allow(clippy::new_ret_no_self)]
    pub fn from_ptx(ptx: crate::ptx::PtxSource, name: impl Into<String>) -> KernelBuilder {
        let mut b = Kernel::new(ptx.into_source(), name);
        b.origin = Origin::Ptx;
        b
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

    /// The first call says yes: a kernel's "not race-checked" note is printed once.
    pub(crate) fn note_races_unchecked(&self) -> bool {
        !self
            .inner
            .races_noted
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// See `KernelInner::races_default`.
    #[inline]
    pub(crate) fn races_default(&self) -> bool {
        self.inner.races_default
    }

    /// See `KernelInner::init_default`.
    #[inline]
    pub(crate) fn init_default(&self) -> bool {
        self.inner.init_default
    }

    pub(crate) fn source(&self) -> &CudaSource {
        &self.inner.builder.source
    }

    /// The name as the launch ring stores it.
    #[inline]
    pub(crate) fn ring_name(&self) -> &'static KernelName {
        self.inner.ring_name
    }

    /// What a fault report of this kernel's bounds-checked build needs besides the record:
    /// its site table and the launch's arguments.
    pub(crate) fn fault_context<'a>(
        &'a self,
        sites: &'a cudacheck_core::instrument::InstrumentedKernel,
        args: &'a [ArgView],
        site: &'static std::panic::Location<'static>,
        config: &cudacheck_core::validate::LaunchConfig,
    ) -> instrument::FaultContext<'a> {
        instrument::FaultContext {
            kernel: self.name_arc(),
            site,
            config: *config,
            build: sites,
            source: self.source(),
            name: self.name(),
            param_names: self.is_ptx().then_some(crate::ptx::param_labels as _),
            args,
        }
    }

    fn build_error(&self, arch: Arch, e: BuildError) -> Error {
        Error::Instrument {
            kernel: self.name().to_string(),
            file: self.source().name.clone(),
            arch: arch.sm_name(),
            source: Box::new(e),
        }
    }

    /// NVRTC's PTX of the kernel's source for `arch` (or the PTX it was made from),
    /// instrumented for `shape`, and the kernel's symbol and NVRTC's log.
    fn instrumented_ptx(
        &self,
        arch: Arch,
        shape: Option<Spec>,
        host_checks: bool,
    ) -> Result<(cudacheck_core::instrument::InstrumentedPtx, String, String), Error> {
        let (ptx, symbol, log) = if self.is_ptx() {
            let e = self.ptx_entry(arch)?;
            (Cow::Borrowed(&self.source().text), e.symbol, String::new())
        } else {
            let (out, symbol) = self.nvrtc_output(arch, true)?;
            (Cow::Owned(out.ptx.unwrap_or_default()), symbol, out.log)
        };
        // This kernel alone: a file's module holds many (candle's `quantized.cu` 142, a
        // library's PTX hundreds), which the rewrite and ptxas would otherwise process for each
        // kernel and launch shape (`quantized.cu`: 18 s a build for the whole module, 0.3 s for
        // one kernel, the same coverage and host checks; results/instrument_cost.md, 2026-11-27).
        let ptx = cudacheck_core::ptx_subset(&ptx, &symbol)
            .ok()
            .flatten()
            .unwrap_or_else(|| ptx.into_owned());
        let inst = instrument::instrument(&ptx, shape, host_checks)
            .map_err(|e| self.build_error(arch, e))?;
        Ok((inst, symbol, log))
    }

    /// Whether the kernel was made from PTX ([`Kernel::from_ptx`]).
    pub(crate) fn is_ptx(&self) -> bool {
        self.inner.builder.origin == Origin::Ptx
    }

    /// The PTX entry this kernel's name means.
    fn ptx_entry(&self, arch: Arch) -> Result<cudacheck_core::PtxEntry, Error> {
        let name = self.name();
        match crate::ptx::entry(self.source(), name) {
            Ok(Ok(e)) => Ok(e),
            Ok(Err(available)) => Err(Error::KernelNotFound {
                kernel: name.to_string(),
                symbol: name.to_string(),
                available,
            }),
            Err(e) => Err(self.ptx_error(arch, e)),
        }
    }

    fn ptx_error(&self, arch: Arch, e: crate::ptx::PtxBuildError) -> Error {
        Error::PtxBuild {
            kernel: self.name().to_string(),
            file: self.source().name.clone(),
            arch: arch.sm_name(),
            source: Box::new(e),
        }
    }

    /// What bounds checking covers in this kernel: how many accesses are checked, proven in
    /// bounds, or left unchecked and why, in its build for the kernel's architecture (sm_90
    /// when it names none). `Ok(None)` when the compiled source has no such kernel. Needs
    /// NVRTC, no GPU. Accesses the user's guards keep in bounds count as
    /// [`host_checked`](Coverage::host_checked): a launch checks them once on the host and
    /// runs a build checking on the device those its arguments do not keep in bounds.
    ///
    /// # Errors
    ///
    /// [`Error::Compile`] or [`Error::NvrtcNotFound`] when the source does not compile, and
    /// [`Error::Instrument`] when its PTX cannot be read.
    pub fn coverage(&self) -> Result<Option<Coverage>, Error> {
        let arch = self.coverage_arch();
        let (inst, symbol, _) = self.instrumented_ptx(arch, None, true)?;
        Ok(inst.kernel(&symbol).map(|k| k.coverage.clone()))
    }

    /// The host checks bounds-checked launches of this kernel have failed so far: one set per
    /// launch shape and combination of failures (positions in the host-checked build's list,
    /// [`Coverage::host_checked`] of them), whose accesses those launches checked on the
    /// device instead. Empty when every bounds-checked launch ran the build that checks them
    /// all on the host. A failure is either a real risk (the arguments do not keep the access
    /// in bounds) or a bound the host analysis cannot prove; either way such a launch costs
    /// what its device checks cost, so this is where to look when a bounds-checked kernel is
    /// slower than its coverage suggests.
    pub fn failed_host_checks(&self) -> Vec<HostCheckSet> {
        let sets = self
            .inner
            .device_check_sets
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        sets.iter().map(|&(_, set)| set).collect()
    }

    /// What bounds checking covers in launches of one shape: as [`coverage`](Self::coverage),
    /// in the build those launches run, which is specialised for the block (`block`) and the
    /// dynamic shared memory (`dynamic_shared_bytes`; the grid plays no part). Knowing them, the
    /// instrumenter proves more accesses in bounds (a tile indexed by `threadIdx` in a block no
    /// larger than the tile), so [`proven`](Coverage::proven) may be higher and
    /// [`checked`](Coverage::checked) lower than without a shape. A block no GPU runs gives the
    /// coverage without launch-shape facts (a launch with it is refused). Needs NVRTC, no GPU.
    ///
    /// # Errors
    ///
    /// As [`Kernel::coverage`].
    pub fn coverage_for(
        &self,
        block: impl Into<Dim3>,
        dynamic_shared_bytes: u32,
    ) -> Result<Option<Coverage>, Error> {
        let arch = self.coverage_arch();
        let shape = Spec::of(block.into(), dynamic_shared_bytes);
        let (inst, symbol, _) = self.instrumented_ptx(arch, shape, true)?;
        Ok(inst.kernel(&symbol).map(|k| k.coverage.clone()))
    }

    /// What race checking covers in this kernel ([`KernelBuilder::races`]): shared accesses
    /// and barriers checked, accesses left unchecked and why, or why the kernel is not
    /// race-checked at all; built without launch-shape facts and for launches without dynamic
    /// shared memory ([`race_coverage_for`](Self::race_coverage_for) gives a launch shape's).
    /// `Ok(None)` when the compiled source has no such kernel. Needs NVRTC, no GPU.
    ///
    /// # Errors
    ///
    /// As [`Kernel::coverage`].
    pub fn race_coverage(&self) -> Result<Option<RaceCoverage>, Error> {
        let arch = self.coverage_arch();
        let (inst, symbol, _) = self.instrumented_ptx(arch, None, true)?;
        let r =
            cudacheck_core::race::race_ptx(&inst.ptx, &cudacheck_core::race::RaceOptions::new(0))
                .map_err(|e| self.build_error(arch, BuildError::Ptx(e.into())))?;
        Ok(r.kernel(&symbol).map(|k| k.coverage.clone()))
    }

    /// What race checking covers in race-checked launches of one shape: as
    /// [`race_coverage`](Self::race_coverage), in the build those launches run (the
    /// race-checked build for `block` and `dynamic_shared_bytes`; the grid plays no part).
    /// The race rewrite works on the bounds-checked build of the shape, whose code (loops
    /// versioned for the block, accesses proven in bounds) can differ from the shapeless one,
    /// so the counts can too. Whether a launch's shared memory leaves room for the checker's
    /// shadow depends on the device, and is said by the launch (it then runs without race
    /// checks). A block no GPU runs gives the coverage without launch-shape facts. Needs
    /// NVRTC, no GPU.
    ///
    /// # Errors
    ///
    /// As [`Kernel::coverage`].
    pub fn race_coverage_for(
        &self,
        block: impl Into<Dim3>,
        dynamic_shared_bytes: u32,
    ) -> Result<Option<RaceCoverage>, Error> {
        let Some(shape) = Spec::of(block.into(), dynamic_shared_bytes) else {
            return self.race_coverage();
        };
        let arch = self.coverage_arch();
        let (inst, symbol, _) = self.instrumented_ptx(arch, Some(shape.races(true)), true)?;
        Ok(inst
            .kernel(&symbol)
            .and_then(|k| k.races.as_ref())
            .map(|r| r.coverage.clone()))
    }

    /// What init checking covers in init-checked launches of one shape ([`KernelBuilder::init`]):
    /// global reads checked and writes marked, accesses left unchecked and why, whether the
    /// block's shared memory is checked (and why not), or why the kernel is not init-checked
    /// at all; from the build those launches run (the bounds-checked build for `block` and
    /// `dynamic_shared_bytes`, rewritten by [`cudacheck_core::init`], assembled by nvJitLink).
    /// `Ok(None)` when the compiled source has no such kernel, or for a block no GPU runs.
    /// Needs NVRTC and nvJitLink, no GPU.
    ///
    /// # Errors
    ///
    /// As [`Kernel::coverage`], and [`Error::Instrument`] when nvJitLink refuses the build.
    pub fn init_coverage_for(
        &self,
        block: impl Into<Dim3>,
        dynamic_shared_bytes: u32,
    ) -> Result<Option<InitCoverage>, Error> {
        let Some(shape) = Spec::of(block.into(), dynamic_shared_bytes) else {
            return Ok(None);
        };
        let built = self.checked_build(self.coverage_arch(), Some(shape.init(true)))?;
        Ok(built.sites.init.map(|k| k.coverage))
    }

    /// The architecture coverage reports build for: the kernel's, else sm_90.
    fn coverage_arch(&self) -> Arch {
        self.inner.builder.arch.unwrap_or(Arch::new(9, 0))
    }

    pub(crate) fn default_sync(&self) -> Option<bool> {
        self.inner.builder.sync
    }

    pub(crate) fn default_shared_opt_in(&self) -> bool {
        self.inner.builder.shared_opt_in
    }

    /// The Rust-side parameter list given with [`KernelBuilder::params`].
    pub fn params(&self) -> Option<&'static [ParamSpec]> {
        self.inner.builder.params
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

    /// The plain build loaded in `ctx`: two loads and no lock on the hot path, loaded (and
    /// compiled if needed) the first time.
    #[inline]
    pub(crate) fn loaded(&self, ctx: &Arc<CudaContext>) -> Result<&Loaded, Error> {
        self.inner.builds.plain(ctx, self)
    }

    /// The plain CUBIN for `arch`, compiled on first use.
    pub(crate) fn compiled_for(&self, arch: Arch) -> Result<Arc<Compiled>, Error> {
        self.inner.builds.compiled(Variant::Plain, arch, self)
    }

    /// The bounds-checked CUBIN for `arch` and `shape`, made on first use.
    pub(crate) fn compiled_checked_for(
        &self,
        arch: Arch,
        shape: Option<Spec>,
    ) -> Result<Arc<Compiled>, Error> {
        self.inner
            .builds
            .compiled(Variant::Checked { shape }, arch, self)
    }

    /// Whether a build of `shape` with `set` on the device may be used: one already made, or
    /// a new one while fewer than [`MAX_DEVICE_CHECK_SETS`] were.
    pub(crate) fn may_build_device_checks(&self, shape: Spec, set: HostCheckSet) -> bool {
        let mut sets = self
            .inner
            .device_check_sets
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if sets.contains(&(shape, set)) {
            return true;
        }
        if sets.len() >= MAX_DEVICE_CHECK_SETS {
            return false;
        }
        sets.push((shape, set));
        true
    }

    /// The bounds-checked build for `shape` loaded in `ctx`, made on first use.
    pub(crate) fn loaded_checked(
        &self,
        ctx: &Arc<CudaContext>,
        shape: Option<Spec>,
    ) -> Result<&Loaded, Error> {
        self.inner.builds.get(ctx, Variant::Checked { shape }, self)
    }

    /// The options the kernel's source is compiled with for `arch` (the PTX too when `ptx`).
    fn compile_options(&self, arch: Arch, ptx: bool) -> CompileOptions {
        let b = &self.inner.builder;
        let mut opts = CompileOptions::new(arch);
        opts.include_dirs = b.include_dirs.clone();
        opts.defines = b.defines.clone();
        opts.extra_options = b.options.clone();
        opts.max_registers = b.max_registers;
        opts.name_expressions = vec![b.name.clone()];
        opts.ptx = ptx;
        opts
    }

    /// NVRTC's output for the kernel's source with its options for `arch` (the PTX too when
    /// `ptx`), and the kernel's symbol in it.
    fn nvrtc_output(&self, arch: Arch, ptx: bool) -> Result<(nvrtc::Compiled, String), Error> {
        let b = &self.inner.builder;
        let opts = self.compile_options(arch, ptx);
        let out = nvrtc::compile(&b.source, &opts).map_err(|e| match e {
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

    /// The bounds-checked build for `arch` and `shape`, from the cache (`cache::through_checked`)
    /// or made now: NVRTC's PTX instrumented for the shape and assembled by nvJitLink.
    pub(crate) fn checked_build(
        &self,
        arch: Arch,
        shape: Option<Spec>,
    ) -> Result<CheckedBuild, Error> {
        let opts = self.compile_options(arch, true);
        cache::through_checked(
            self.source(),
            &opts,
            self.name(),
            &shape_bytes(shape),
            builder_code(),
            || {
                let (inst, symbol, log) = self.instrumented_ptx(arch, shape, false)?;
                let Some(sites) = inst.kernel(&symbol).cloned() else {
                    return Err(self.build_error(arch, BuildError::NoEntry { symbol }));
                };
                // The build holds this kernel alone (`instrumented_ptx`): nvJitLink here and the
                // driver's JIT at load (`build.rs`) assemble nothing else.
                let assembled = nvrtc::assemble_ptx(&inst.ptx, arch, &self.source().name)
                    .map_err(|e| self.build_error(arch, e.into()))?;
                Ok(CheckedBuild {
                    ptx: inst.ptx,
                    cubin: assembled.cubin,
                    symbol,
                    log,
                    sites,
                })
            },
        )
    }

    /// The kernel's resources in `cubin`, its signature checked against the Rust declaration.
    /// `hidden` parameters trail the user's in the compiled kernel and are left out of the
    /// signature check.
    fn finish(
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
            let mut user = resources.clone();
            let n = user.params.len().saturating_sub(hidden);
            user.params.truncate(n);
            check_signature(&b.name, params, &user)?;
        }
        Ok(Compiled {
            arch,
            cubin,
            symbol,
            resources,
            log,
            sites: None,
            ptx: None,
            params_known: true,
        })
    }
}

impl Make for Kernel {
    fn arch(&self, state: &ContextState) -> Arch {
        self.inner.builder.arch.unwrap_or(state.device.arch)
    }

    /// The plain source as written; a checked variant: NVRTC's PTX instrumented for the
    /// shape and assembled by nvJitLink, with its hidden parameters and its site table.
    fn compile(&self, variant: Variant, arch: Arch) -> Result<Compiled, Error> {
        if self.inner.builder.origin == Origin::LoadedByApp {
            return Err(Error::LoadedByApplication {
                kernel: self.name().to_string(),
                what: match variant {
                    Variant::Plain => "load it into another context",
                    Variant::Checked { .. } => "bounds-check its launches",
                },
            });
        }
        match variant {
            Variant::Plain if self.is_ptx() => {
                let entry = self.ptx_entry(arch)?;
                let (cubin, log) = crate::ptx::assembled(self.source(), arch)
                    .map_err(|e| self.ptx_error(arch, e))?;
                let mut c = self.finish(arch, cubin.to_vec(), entry.symbol, 0, log)?;
                // (A launch then takes the driver's own figure.)
                if let Some(b) = cudacheck_core::cubin::ptxas_static_shared(&c.log, &c.symbol) {
                    c.resources.static_shared_bytes = b;
                }
                Ok(c)
            }
            Variant::Plain => {
                let jit = crate::policy::plain_jit();
                let (out, symbol) = self.nvrtc_output(arch, jit)?;
                let mut c = self.finish(arch, out.cubin, symbol, 0, out.log)?;
                // Loaded from its PTX then (`build.rs`, `Loaded::load`).
                c.ptx = out.ptx.filter(|_| jit);
                Ok(c)
            }
            Variant::Checked { shape } => {
                let built = self.checked_build(arch, shape)?;
                let hidden =
                    cudacheck_core::instrument::hidden_params(built.sites.num_params as usize);
                let mut c = self.finish(arch, built.cubin, built.symbol, hidden, built.log)?;
                c.sites = Some(Arc::new(built.sites));
                c.ptx = Some(built.ptx);
                Ok(c)
            }
        }
    }
}

/// The digest of this crate's code that decides a checked build's instrumenter options (the
/// cache's key covers the instrumenter itself).
fn builder_code() -> &'static [u8; 32] {
    static DIGEST: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    DIGEST.get_or_init(|| cache::code_digest(&[include_str!("instrument/mod.rs")]))
}

/// What makes a race- or init-checked build's key differ: a marker and a hash of the checker's
/// sources (`cudacheck_core::race::RACE_SOURCES`, `cudacheck_core::init::INIT_SOURCES`).
fn checker_key(marker: &[u8], sources: &[&str]) -> Vec<u8> {
    let mut h = blake3::Hasher::new();
    for src in sources {
        h.update(src.as_bytes());
    }
    let mut v = marker.to_vec();
    v.extend(&h.finalize().as_bytes()[..16]);
    v
}

/// A launch shape as a checked build's cache key holds it.
fn shape_bytes(shape: Option<Spec>) -> Vec<u8> {
    match shape {
        None => vec![0],
        Some(s) => std::iter::once(1)
            .chain(s.block.to_array().into_iter().flat_map(u32::to_le_bytes))
            .chain(s.dynamic_shared_bytes.to_le_bytes())
            .chain([u8::from(s.host_checks)])
            // Only builds that move host checks back to the device say which (the key of
            // every other build stays as it was).
            .chain(
                (!s.on_device.is_empty())
                    .then(|| s.on_device.to_le_bytes())
                    .into_iter()
                    .flatten(),
            )
            // Race-checked builds say so, with the race checker's source (the key of every
            // other build stays as it was).
            .chain(
                s.races
                    .then(|| checker_key(b"races", cudacheck_core::race::RACE_SOURCES))
                    .into_iter()
                    .flatten(),
            )
            // Likewise init-checked builds.
            .chain(
                s.init
                    .then(|| checker_key(b"init", cudacheck_core::init::INIT_SOURCES))
                    .into_iter()
                    .flatten(),
            )
            // Builds without loop versioning say so (`CUDACHECK_KEEP_LOOP_CHECKS`).
            .chain(
                s.keep_loop_checks
                    .then_some(*b"keep-loop-checks")
                    .into_iter()
                    .flatten(),
            )
            // Builds checked against allocation bases say so (`cudacheck run`).
            .chain(
                s.alloc_bases
                    .then_some(*b"alloc-bases")
                    .into_iter()
                    .flatten(),
            )
            .collect(),
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
}

#[cfg(test)]
mod device_check_sets {
    use super::*;
    use cudacheck_core::Dim3;

    /// A kernel makes at most `MAX_DEVICE_CHECK_SETS` builds with host checks moved to the
    /// device; a set it already built for stays usable, and a new one past the cap is
    /// refused (the launch takes the fully checked build).
    #[test]
    fn builds_with_host_checks_on_the_device_are_capped_per_kernel() {
        let k = Kernel::new(CudaSource::from_str("k.cu", "__global__ void k() {}"), "k").build();
        let shape = Spec::of(Dim3::x(256), 0).expect("a sane block");
        let set = |n: usize| {
            let mut s = HostCheckSet::new();
            assert!(s.insert(n));
            s
        };
        for n in 0..MAX_DEVICE_CHECK_SETS {
            assert!(k.may_build_device_checks(shape, set(n)), "set {n}");
        }
        assert!(!k.may_build_device_checks(shape, set(MAX_DEVICE_CHECK_SETS)));
        assert!(k.may_build_device_checks(shape, set(3)), "already built");
        // Another shape is another build of an already counted set: also capped.
        let other = Spec::of(Dim3::x(128), 0).expect("a sane block");
        assert!(!k.may_build_device_checks(other, set(3)));
    }

    /// `Kernel::failed_host_checks` lists each set a launch moved to the device, once.
    #[test]
    fn failed_host_checks_lists_the_sets_launches_moved_to_the_device() {
        let k = Kernel::new(CudaSource::from_str("k.cu", "__global__ void k() {}"), "k").build();
        assert!(k.failed_host_checks().is_empty());
        let shape = Spec::of(Dim3::x(256), 0).expect("a sane block");
        let mut two = HostCheckSet::new();
        assert!(two.insert(1) && two.insert(4));
        let mut one = HostCheckSet::new();
        assert!(one.insert(7));
        assert!(k.may_build_device_checks(shape, two));
        assert!(k.may_build_device_checks(shape, one));
        assert!(k.may_build_device_checks(shape, two), "the same set again");
        assert_eq!(k.failed_host_checks(), vec![two, one]);
        assert_eq!(k.failed_host_checks()[0].len(), 2);
    }
}
