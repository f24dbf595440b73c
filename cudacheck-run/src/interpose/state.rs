//! The interposer's process-wide state: the options the launcher passed, the modules,
//! libraries and functions the program loaded, the allocation table, the devices' limits, the
//! per-context record arenas, and the findings and notes for the summary printed at exit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use cudacheck::__private::engine::{limits_from_attributes, DeviceAttributes};
use cudacheck_core::{Arch, ArchLimits};

use super::alloc::Table;
use super::ffi::{call, dev_attr, CUcontext, CUdevice, CUDA_SUCCESS};
use super::module::{Func, Module};
use super::records::Records;
use crate::protocol::{self, KernelSummary, OnFault, ProcessSummary};

/// What the launcher asked for (the `CUDACHECK_RUN_*` variables).
#[derive(Clone, Debug)]
pub struct Options {
    pub bounds: bool,
    pub races: bool,
    /// Reads of global memory nothing wrote are checked (`shadow.rs`).
    pub init: bool,
    pub json: Option<std::path::PathBuf>,
    pub on_fault: OnFault,
    pub abort_status: i32,
    pub summary_dir: Option<std::path::PathBuf>,
    pub stacks: StackMode,
}

/// Which host call stacks are captured (`CUDACHECK_RUN_STACKS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackMode {
    Off,
    /// Every allocation's, and the first launch's of each kernel and shape.
    First,
    /// Every allocation's and every launch's.
    All,
}

impl Options {
    fn from_env() -> Options {
        let var = |k: &str| std::env::var(k).ok();
        let on = |k: &str, default: bool| var(k).map_or(default, |v| v != "0" && !v.is_empty());
        Options {
            bounds: on(protocol::ENV_BOUNDS, true),
            races: on(protocol::ENV_RACES, false),
            init: on(protocol::ENV_INIT, false),
            json: var(protocol::ENV_JSON)
                .filter(|v| !v.is_empty())
                .map(Into::into),
            on_fault: OnFault::from_env_value(var(protocol::ENV_ON_FAULT).as_deref()),
            abort_status: var(protocol::ENV_ABORT_STATUS)
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
            summary_dir: var(protocol::ENV_SUMMARY_DIR)
                .filter(|v| !v.is_empty())
                .map(Into::into),
            stacks: match var(protocol::ENV_STACKS).as_deref() {
                Some("off" | "0") => StackMode::Off,
                Some("all") => StackMode::All,
                _ => StackMode::First,
            },
        }
    }
}

/// Time added up from several threads.
#[derive(Default)]
pub struct Timer(AtomicU64);

impl Timer {
    pub fn add(&self, d: std::time::Duration) {
        self.0.fetch_add(
            d.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
    }

    pub fn seconds(&self) -> f64 {
        self.0.load(Ordering::Relaxed) as f64 / 1e9
    }
}

/// A device the program uses: its architecture and limits, read once.
pub struct Device {
    pub arch: Arch,
    pub limits: ArchLimits,
}

pub struct State {
    pub opts: Options,
    /// `CUmodule` -> what it was loaded from.
    pub modules: RwLock<HashMap<usize, Arc<Module>>>,
    /// `CUlibrary` -> what it was loaded from.
    pub libraries: RwLock<HashMap<usize, Arc<Module>>>,
    /// `CUfunction` and `CUkernel` handles -> the kernel.
    pub funcs: RwLock<HashMap<usize, Arc<Func>>>,
    pub allocs: Table,
    devices: Mutex<HashMap<CUdevice, Arc<Device>>>,
    /// Per context: the fault records of its checked launches.
    pub records: Mutex<HashMap<usize, Arc<Records>>>,
    pub launches: AtomicU64,
    pub checked_launches: AtomicU64,
    /// With `--init`: checked launches that looked up global memory's shadow (the others
    /// could reach only written memory).
    pub init_global_launches: AtomicU64,
    /// Stream captures under way: launches are asked about capture only while one is.
    pub captures: AtomicUsize,
    pub findings: AtomicU64,
    /// Time spent making checked builds (the engine: instrumenting, assembling, the module
    /// cache), loading them (the driver's JIT), and reading fault records.
    pub time_building: Timer,
    pub time_loading: Timer,
    pub time_reading: Timer,
    /// Kernels of unloaded modules, folded in by name.
    retired: Mutex<BTreeMap<String, KernelSummary>>,
    notes: Mutex<BTreeSet<String>>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The state, made on the first intercepted call (which also arranges the summary at exit).
pub fn state() -> &'static State {
    STATE.get_or_init(|| {
        // SAFETY: registering a plain `extern "C" fn()` with the C library.
        unsafe { libc::atexit(at_exit) };
        State {
            opts: Options::from_env(),
            modules: RwLock::default(),
            libraries: RwLock::default(),
            funcs: RwLock::default(),
            allocs: Table::default(),
            devices: Mutex::default(),
            records: Mutex::default(),
            launches: AtomicU64::new(0),
            checked_launches: AtomicU64::new(0),
            init_global_launches: AtomicU64::new(0),
            captures: AtomicUsize::new(0),
            findings: AtomicU64::new(0),
            time_building: Timer::default(),
            time_loading: Timer::default(),
            time_reading: Timer::default(),
            retired: Mutex::default(),
            notes: Mutex::default(),
        }
    })
}

/// Something the interposer could not do and fell back from: said once on stderr, and listed
/// in the summary.
pub fn note(text: &str) {
    let s = state();
    let fresh = s
        .notes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(text.to_string());
    if fresh {
        eprintln!("cudacheck run: note: {text}");
    }
}

impl State {
    /// The device of the current context, read once per device.
    pub fn current_device(&self) -> Option<Arc<Device>> {
        let mut dev: CUdevice = 0;
        // SAFETY: a valid out-pointer.
        if unsafe { call!(cuCtxGetDevice(&mut dev)) } != CUDA_SUCCESS {
            return None;
        }
        let mut devices = self.devices.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = devices.get(&dev) {
            return Some(Arc::clone(d));
        }
        let d = Arc::new(read_device(dev)?);
        devices.insert(dev, Arc::clone(&d));
        Some(d)
    }

    /// The current context.
    pub fn current_context(&self) -> Option<CUcontext> {
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let r = unsafe { call!(cuCtxGetCurrent(&mut ctx)) };
        (r == CUDA_SUCCESS && !ctx.is_null()).then_some(ctx)
    }

    /// The kernel behind a launched handle (`CUfunction`, or a `CUkernel` passed in its place).
    pub fn func(&self, handle: usize) -> Option<Arc<Func>> {
        self.funcs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&handle)
            .cloned()
    }

    /// Forgets the functions of `module` (unloaded), keeping their counts for the summary.
    pub fn retire_module(&self, module: &Arc<Module>) {
        let mut funcs = self.funcs.write().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<usize> = funcs
            .iter()
            .filter(|(_, f)| f.module.as_ref().is_some_and(|m| Arc::ptr_eq(m, module)))
            .map(|(&h, _)| h)
            .collect();
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        for h in gone {
            if let Some(f) = funcs.remove(&h) {
                fold(&mut retired, &f);
            }
        }
    }

    /// Forgets what was kept for context `ctx`, which is gone: its fault records (their memory
    /// went with it), its checked builds and validated configurations, and the modules loaded
    /// into it (a handle the driver hands out again names something else).
    pub fn forget_context(&self, ctx: usize) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ctx);
        let gone: Vec<Arc<Module>> = {
            let mut modules = self.modules.write().unwrap_or_else(|p| p.into_inner());
            let handles: Vec<usize> = modules
                .iter()
                .filter(|(_, m)| m.ctx == ctx)
                .map(|(&h, _)| h)
                .collect();
            handles.iter().filter_map(|h| modules.remove(h)).collect()
        };
        for m in &gone {
            self.retire_module(m);
        }
        for f in self
            .funcs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            let mut i = f.lock();
            i.last_valid.remove(&ctx);
            i.functions.remove(&ctx);
            i.loaded.retain(|&(c, _), _| c != ctx);
        }
    }

    /// What this process did, for the summary.
    pub fn summary(&self) -> ProcessSummary {
        let mut kernels = self
            .retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let funcs = self.funcs.read().unwrap_or_else(|p| p.into_inner());
        // A kernel reached through several handles (its CUkernel and each context's
        // CUfunction) is one kernel: each handle's object counts once.
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        for f in funcs.values() {
            if seen.insert(Arc::as_ptr(f) as usize) {
                fold(&mut kernels, f);
            }
        }
        ProcessSummary {
            pid: std::process::id(),
            program: program_name(),
            kernels: kernels.into_values().filter(|k| k.launches > 0).collect(),
            launches: self.launches.load(Ordering::Relaxed),
            checked_launches: self.checked_launches.load(Ordering::Relaxed),
            findings: self.findings.load(Ordering::Relaxed),
            init_global_launches: self
                .opts
                .init
                .then(|| self.init_global_launches.load(Ordering::Relaxed)),
            allocations: self.allocs.made(),
            seconds_building: self.time_building.seconds(),
            seconds_loading: self.time_loading.seconds(),
            seconds_reading: self.time_reading.seconds(),
            notes: self
                .notes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect(),
        }
    }
}

fn fold(into: &mut BTreeMap<String, KernelSummary>, f: &Func) {
    let s = f.summary();
    let k = into
        .entry(s.kernel.clone())
        .or_insert_with(|| KernelSummary {
            kernel: s.kernel.clone(),
            ..KernelSummary::default()
        });
    k.launches += s.launches;
    k.checked_launches += s.checked_launches;
    k.findings += s.findings;
    if k.unchecked_because.is_none() {
        k.unchecked_because = s.unchecked_because;
    }
}

/// The program, as `argv[0]` names it, without its directory.
pub fn program_name() -> String {
    std::env::args()
        .next()
        .map(|a| a.rsplit('/').next().unwrap_or(&a).to_string())
        .unwrap_or_else(|| "?".to_string())
}

fn read_device(dev: CUdevice) -> Option<Device> {
    let attr = |a: c_int| -> u32 {
        let mut v: c_int = 0;
        // SAFETY: a valid out-pointer; `dev` came from the current context.
        let r = unsafe { call!(cuDeviceGetAttribute(&mut v, a, dev)) };
        if r == CUDA_SUCCESS {
            v.max(0) as u32
        } else {
            0
        }
    };
    let arch = Arch::new(
        attr(dev_attr::COMPUTE_CAPABILITY_MAJOR),
        attr(dev_attr::COMPUTE_CAPABILITY_MINOR),
    );
    let a = DeviceAttributes {
        max_threads_per_block: attr(dev_attr::MAX_THREADS_PER_BLOCK),
        max_block_dim: [
            attr(dev_attr::MAX_BLOCK_DIM_X),
            attr(dev_attr::MAX_BLOCK_DIM_Y),
            attr(dev_attr::MAX_BLOCK_DIM_Z),
        ],
        max_grid_dim: [
            attr(dev_attr::MAX_GRID_DIM_X),
            attr(dev_attr::MAX_GRID_DIM_Y),
            attr(dev_attr::MAX_GRID_DIM_Z),
        ],
        warp_size: attr(dev_attr::WARP_SIZE),
        max_threads_per_sm: attr(dev_attr::MAX_THREADS_PER_MULTIPROCESSOR),
        max_blocks_per_sm: attr(dev_attr::MAX_BLOCKS_PER_MULTIPROCESSOR),
        registers_per_sm: attr(dev_attr::MAX_REGISTERS_PER_MULTIPROCESSOR),
        max_registers_per_block: attr(dev_attr::MAX_REGISTERS_PER_BLOCK),
        shared_per_sm: attr(dev_attr::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        shared_per_block: attr(dev_attr::MAX_SHARED_MEMORY_PER_BLOCK),
        shared_per_block_opt_in: attr(dev_attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        reserved_shared_per_block: attr(dev_attr::RESERVED_SHARED_MEMORY_PER_BLOCK),
        cluster_launch: attr(dev_attr::CLUSTER_LAUNCH) != 0,
        sm_count: attr(dev_attr::MULTIPROCESSOR_COUNT),
    };
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: a buffer of the length passed.
    let r = unsafe { call!(cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev)) };
    let name = if r == CUDA_SUCCESS {
        // SAFETY: the driver NUL-terminates the name within the buffer.
        unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    } else {
        String::new()
    };
    Some(Device {
        arch,
        limits: limits_from_attributes(arch, dev as usize, &name, &a),
    })
}

/// The process is exiting (the summary is being made): a finding that would stop it
/// (`--on-fault abort`) sets the status it ends with instead, after the summary.
pub static EXITING: AtomicBool = AtomicBool::new(false);
/// The status an abort at exit ends the process with, or -1.
pub static EXIT_STATUS: AtomicI32 = AtomicI32::new(-1);

/// At exit: the records of launches still in flight are read (their contexts synchronized),
/// then the summary is written for the launcher, or printed.
extern "C" fn at_exit() {
    let _g = super::ffi::Guard::enter();
    let Some(s) = STATE.get() else {
        return;
    };
    EXITING.store(true, Ordering::SeqCst);
    let _ = std::panic::catch_unwind(|| {
        super::records::drain_all(s);
        let summary = s.summary();
        if summary.launches == 0 && summary.allocations == 0 {
            return;
        }
        match &s.opts.summary_dir {
            Some(dir) => {
                let path = protocol::summary_path(dir, summary.pid);
                if let Ok(bytes) = serde_json::to_vec(&summary) {
                    let _ = std::fs::write(path, bytes);
                }
            }
            None => eprint!("{}", summary.render()),
        }
    });
    let status = EXIT_STATUS.load(Ordering::SeqCst);
    if status >= 0 {
        // SAFETY: ends the process with the abort's status; nothing of this process is
        // needed any more (the summary is written).
        unsafe { libc::_exit(status) };
    }
}
