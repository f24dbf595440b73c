//! The launch path: every launch entry point the program reaches comes here. A launch is
//! validated against the device and the kernel (as the library validates its own), then, where
//! the kernel's module carries PTX, replaced by a launch of the kernel's bounds-checked build,
//! with each pointer argument bounded by the allocation it points into; anything that cannot
//! be checked runs as the program asked, with the reason kept for the summary.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cudacheck::__private::engine::Shape;
use cudacheck_core::instrument::{
    BufferSlot, HostCheckSet, InstrumentedKernel, LaunchValues, UNKNOWN_LEN,
};
use cudacheck_core::validate::{validate, LaunchConfig, ValidateOptions};
use cudacheck_core::{Dim3, KernelResources, PtxEntry};

use super::alloc::Allocation;
use super::builds::{self, Built, Made};
use super::ffi::{
    self, call, fn_attr, CUcontext, CUfunction, CUlaunchConfig, CUresult, CUstream, CUDA_SUCCESS,
    LAUNCH_PARAM_BUFFER_POINTER, LAUNCH_PARAM_BUFFER_SIZE, LAUNCH_PARAM_END,
};
use super::module::{Func, ValidKey};
use super::records::{LaunchInfo, Records};
use super::report;
use super::stack::Stack;
use super::state::{state, Device, StackMode, State};

pub type LaunchFn = unsafe extern "C" fn(
    CUfunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    CUstream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;
pub type CoopFn = unsafe extern "C" fn(
    CUfunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    CUstream,
    *mut *mut c_void,
) -> CUresult;
pub type ExFn = unsafe extern "C" fn(
    *const CUlaunchConfig,
    CUfunction,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;

/// Which entry point a launch came through (the checked launch goes through the same one).
#[derive(Clone, Copy)]
pub enum Via {
    Plain(LaunchFn),
    Cooperative(CoopFn),
    Ex(ExFn, *const CUlaunchConfig),
}

/// One launch as the program made it.
pub struct Launch {
    pub f: CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub stream: CUstream,
    pub params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
    /// A cluster shape from `cuLaunchKernelEx`'s attributes.
    pub cluster: Option<[u32; 3]>,
    /// Launched through a `_ptsz` entry point: a null stream is the thread's own.
    pub per_thread: bool,
}

impl Launch {
    fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid: dim(self.grid),
            block: dim(self.block),
            dynamic_shared_bytes: self.shared,
            cluster: self.cluster.map(dim),
        }
    }
}

fn dim(v: [u32; 3]) -> Dim3 {
    Dim3::new(v[0], v[1], v[2])
}

/// The launch as the program asked for it, on the real driver.
///
/// # Safety
/// The launch's arguments are the program's, valid for the entry point they came through.
pub unsafe fn plain(via: Via, l: &Launch) -> CUresult {
    // SAFETY: the program's own arguments to its own entry point.
    unsafe { run(via, l, l.f, l.params, l.extra, l.shared) }
}

/// # Safety
/// `f`, `params`, `extra` and `shared` make a launch the entry point accepts.
unsafe fn run(
    via: Via,
    l: &Launch,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    shared: u32,
) -> CUresult {
    let [gx, gy, gz] = l.grid;
    let [bx, by, bz] = l.block;
    // SAFETY: as the caller promises.
    unsafe {
        match via {
            Via::Plain(real) => real(f, gx, gy, gz, bx, by, bz, shared, l.stream, params, extra),
            Via::Cooperative(real) => real(f, gx, gy, gz, bx, by, bz, shared, l.stream, params),
            Via::Ex(real, cfg) => {
                let mut c = *cfg;
                c.shared_mem_bytes = shared;
                real(&c, f, params, extra)
            }
        }
    }
}

/// Every launch entry point's handler.
///
/// # Safety
/// As [`plain`].
pub unsafe fn launch(via: Via, l: &Launch) -> CUresult {
    let s = state();
    s.launches.fetch_add(1, Ordering::Relaxed);
    let func = s.func(l.f as usize).unwrap_or_else(|| adopt(s, l.f));
    func.count_launch();
    let Some(ctx) = s.current_context() else {
        func.unchecked("no current context");
        // SAFETY: the program's launch.
        return unsafe { plain(via, l) };
    };
    // SAFETY: the program's launch.
    let plain = |via, l: &Launch| unsafe { unseen(s, l, &func, plain(via, l)) };
    if let Err(violations) = validated(s, &func, l, ctx as usize) {
        report::launch_error(&func, l, violations);
        // The driver refuses it as it would have: the program sees its own error.
        // SAFETY: the program's launch.
        return plain(via, l);
    }
    if !s.opts.bounds {
        func.unchecked("bounds checking is off (--no-bounds)");
        return plain(via, l);
    }
    // The common unchecked case costs no more than this test: a module without PTX.
    if let Some(why) = func.module.as_ref().and_then(|m| m.no_ptx.as_deref()) {
        func.unchecked(why);
        return plain(via, l);
    }
    let why = match s.current_device() {
        // SAFETY: the program's launch, on its current context.
        Some(d) => match unsafe { checked(s, via, l, &func, ctx, &d) } {
            Ok(r) => return r,
            Err(why) => why,
        },
        None => "the current context's device could not be read".to_string(),
    };
    func.unchecked(&why);
    plain(via, l)
}

/// After a launch the init checker could not see into (`--init`): every shadowed allocation
/// an argument points into (any 8 bytes of an argument, so pointers inside structs too; every
/// allocation when the arguments cannot be read) counts as written by it, so that no read
/// after it is reported for bytes it may have written. Returns `r`.
///
/// # Safety
/// `l` is the program's launch, as [`plain`] takes it.
unsafe fn unseen(s: &State, l: &Launch, func: &Func, r: CUresult) -> CUresult {
    if !s.opts.init || r != CUDA_SUCCESS {
        return r;
    }
    let stream = super::shadow::stream_of(l.stream, l.per_thread);
    // SAFETY: as the caller promises.
    let words: Option<Vec<u64>> = entry_of(func)
        .ok()
        .and_then(|e| unsafe { read_params(l, &e) }.ok())
        .map(|args| arg_words(&args));
    super::shadow::all_written(stream, |base, bytes| match &words {
        Some(w) => w
            .iter()
            .any(|&p| p >= base && p < base.saturating_add(bytes)),
        None => true,
    });
    r
}

/// A handle launched that no intercepted lookup returned: named by the driver, validated,
/// never bounds-checked (its module's image was not seen).
fn adopt(s: &State, f: CUfunction) -> Arc<Func> {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: a valid out-pointer; `f` is the launched handle.
    let r = unsafe { call!(cuFuncGetName(&mut name, f)) };
    let symbol = if r == CUDA_SUCCESS && !name.is_null() {
        // SAFETY: the driver's NUL-terminated name.
        unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("function {f:p}")
    };
    let func = Arc::new(Func::new(
        Some(Arc::new(super::module::Module::unknown())),
        symbol,
        false,
    ));
    s.funcs
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .entry(f as usize)
        .or_insert(func)
        .clone()
}

/// A `CUfunction` for reading the kernel's attributes in context `ctx` (current): the handle
/// itself, or, for a `CUkernel` (what the CUDA runtime launches), its function in the context,
/// asked of the driver once per context.
fn function_of(func: &Func, handle: CUfunction, ctx: usize) -> Option<CUfunction> {
    if !func.is_kernel_handle {
        return Some(handle);
    }
    if let Some(&f) = func.lock().functions.get(&ctx) {
        return Some(f as CUfunction);
    }
    let mut f: CUfunction = std::ptr::null_mut();
    let get = ffi::real().cuKernelGetFunction?;
    // SAFETY: `handle` is a CUkernel the program launched; `f` a valid out-pointer.
    if unsafe { get(&mut f, handle) } != CUDA_SUCCESS {
        return None;
    }
    func.lock().functions.insert(ctx, f as usize);
    Some(f)
}

fn fattr(f: CUfunction, a: c_int) -> u32 {
    let mut v: c_int = 0;
    // SAFETY: a valid out-pointer and a live function.
    if unsafe { call!(cuFuncGetAttribute(&mut v, a, f)) } == CUDA_SUCCESS {
        v.max(0) as u32
    } else {
        0
    }
}

/// The launch checked against the device's limits and the kernel's resources, remembered
/// per context once it passes; every rule it breaks, in words, when it does not.
fn validated(s: &State, func: &Func, l: &Launch, ctx: usize) -> Result<(), Vec<String>> {
    // The opt-in can change between launches (cuFuncSetAttribute); read it only when the
    // launch asks for dynamic shared memory.
    let opt_in = if l.shared > 0 {
        match function_of(func, l.f, ctx) {
            Some(f) => fattr(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES),
            None => return Ok(()),
        }
    } else {
        0
    };
    let key: ValidKey = (l.grid, l.block, l.shared, l.cluster, opt_in);
    if func.lock().last_valid.get(&ctx) == Some(&key) {
        return Ok(());
    }
    let Some(f) = function_of(func, l.f, ctx) else {
        return Ok(());
    };
    let Some(d) = s.current_device() else {
        return Ok(());
    };
    let mut resources = KernelResources {
        symbol: func.symbol.clone(),
        registers: fattr(f, fn_attr::NUM_REGS),
        static_shared_bytes: fattr(f, fn_attr::SHARED_SIZE_BYTES),
        local_bytes: fattr(f, fn_attr::LOCAL_SIZE_BYTES),
        const_bytes: fattr(f, fn_attr::CONST_SIZE_BYTES),
        ..KernelResources::default()
    };
    // A largest block below what the registers allow comes from launch bounds.
    let max = fattr(f, fn_attr::MAX_THREADS_PER_BLOCK);
    if max > 0 && max < cudacheck_core::validate::kernel_max_threads(&resources, &d.limits) {
        resources.max_threads_per_block = Some(max);
    }
    let opts = ValidateOptions {
        shared_opt_in: l.shared <= opt_in,
    };
    match validate(&resources, &l.config(), &d.limits, &opts) {
        Ok(_) => {
            func.lock().last_valid.insert(ctx, key);
            Ok(())
        }
        Err(v) => Err(v.iter().map(ToString::to_string).collect()),
    }
}

/// How many builds with host checks moved to the device one kernel may make (as the library).
const MAX_DEVICE_CHECK_SETS: usize = 16;

/// The bounds-checked launch, or why the launch cannot be one.
///
/// # Safety
/// As [`plain`]; `ctx` is the current context.
unsafe fn checked(
    s: &State,
    via: Via,
    l: &Launch,
    func: &Arc<Func>,
    ctx: CUcontext,
    d: &Device,
) -> Result<CUresult, String> {
    if capturing(l.stream) {
        return Err(
            "launched into a stream being captured (graphs are validated, not \
                    bounds-checked)"
                .into(),
        );
    }
    if s.captures.load(Ordering::Relaxed) > 0 {
        // A capture in the global mode is invalidated by a wait or an allocation on any
        // thread, which a checked launch may need (for its fault records).
        return Err("launched while a stream capture was under way in the process".into());
    }
    let entry = entry_of(func)?;
    // SAFETY: the program's parameters, laid out as the kernel's PTX declares them.
    let args = unsafe { read_params(l, &entry) }?;
    let ptrs: Vec<u64> = args
        .iter()
        .map(|a| {
            if a.size == 8 {
                a.value().unwrap_or(0)
            } else {
                0
            }
        })
        .collect();
    let first = Shape {
        block: dim(l.block),
        dynamic_shared_bytes: l.shared,
        host_checks: true,
        on_device: HostCheckSet::new(),
        races: s.opts.races,
    };
    let host_checked = builds::made(func, d, first, true)?;
    // With `--init`: global memory is init-checked only when the launch can reach an
    // allocation with unwritten bytes. Reachable: what the arguments point into, when every
    // global access of the kernel goes through them (the bounds checker placed each one).
    let stream = super::shadow::stream_of(l.stream, l.per_thread);
    let words = s.opts.init.then(|| {
        host_checked
            .sites
            .coverage
            .unchecked
            .is_empty()
            .then(|| arg_words(&args))
    });
    let global = match &words {
        Some(w) => super::shadow::needs_global(w.as_deref(), stream),
        None => true,
    };
    let made = match failing_host_checks(s, &host_checked, &args, &ptrs, l) {
        Some(set) if set.is_empty() && global => host_checked,
        Some(set) if set.is_empty() => builds::made(func, d, first, false)?,
        Some(set) if device_check_sets(func) < MAX_DEVICE_CHECK_SETS => builds::made(
            func,
            d,
            Shape {
                on_device: set,
                ..first
            },
            global,
        )?,
        _ => builds::made(
            func,
            d,
            Shape {
                host_checks: false,
                ..first
            },
            global,
        )?,
    };
    let built = builds::loaded(func, ctx, &made)?;
    let bounds = slot_bounds(s, &built.sites, &args);
    if let Some(w) = built.sites.misaligned_argument(&ptrs) {
        let stack = stack_of(s, &built);
        report::misaligned(func, l, &entry, w, &ptrs, stack.as_deref());
        // CUDA would raise a misaligned address and poison the context: the launch is left
        // out, as the library refuses it.
        return Ok(CUDA_SUCCESS);
    }
    let records = Records::for_context(s, ctx)?;
    let (slot, record) = records.take_slot()?;
    let mut hidden: Vec<u64> = Vec::with_capacity(2 * bounds.len() + 1);
    hidden.extend(bounds.iter().map(|b| b.len));
    hidden.extend(bounds.iter().map(|b| b.base));
    hidden.push(record);
    let mut params: Vec<*mut c_void> = args.iter().map(|a| a.ptr).collect();
    params.extend(hidden.iter_mut().map(|h| (h as *mut u64).cast::<c_void>()));
    let shared = l
        .shared
        .saturating_add(race_shadow(&built, l.shared, d))
        .saturating_add(init_shadow(&built, l.shared, d));
    built.opt_in(shared);
    // SAFETY: device addresses of this context's variables, their sizes; the copies are
    // ordered before the launch on its stream.
    unsafe { builds::mirror(&built.globals, l, true) };
    // SAFETY: the checked build takes the user's parameters then the hidden ones, all in
    // `params`, alive until the call returns (the driver copies them at the launch).
    let r = unsafe {
        run(
            via,
            l,
            built.function,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
            shared,
        )
    };
    if r != CUDA_SUCCESS {
        records.give_back(slot);
        return Err(format!(
            "the driver refused the checked build's launch (error {r}), so the kernel ran as \
             the program built it"
        ));
    }
    // SAFETY: as above, after the launch.
    unsafe { builds::mirror(&built.globals, l, false) };
    if built
        .sites
        .init
        .as_ref()
        .map_or(true, |k| k.coverage.not_checked.is_some())
    {
        // SAFETY: the program's launch.
        unsafe { unseen(s, l, func, r) };
    }
    if global {
        if let Some(w) = &words {
            super::shadow::launched_global(w.as_deref());
            s.init_global_launches.fetch_add(1, Ordering::Relaxed);
        }
    }
    s.checked_launches.fetch_add(1, Ordering::Relaxed);
    func.count_checked();
    records.launched(
        slot,
        l.stream,
        l.per_thread,
        LaunchInfo {
            func: Arc::clone(func),
            sites: Arc::clone(&built.sites),
            entry,
            grid: l.grid,
            block: l.block,
            bounds,
            stack: stack_of(s, &built),
        },
    );
    Ok(CUDA_SUCCESS)
}

/// The host call stack a report of this launch shows: this launch's (`--stacks all`), or the
/// first launch's of this build (`--stacks first`, the default: a kernel launched with one
/// shape is launched from one place, nearly always, and unwinding every launch costs
/// microseconds).
fn stack_of(s: &State, built: &Built) -> Option<Arc<Stack>> {
    match s.opts.stacks {
        StackMode::Off => None,
        StackMode::All => Some(Arc::new(Stack::capture())),
        StackMode::First => built
            .first_stack
            .get_or_init(|| Some(Arc::new(Stack::capture())))
            .clone(),
    }
}

/// Bytes the race checker's shadow needs beside the launch's dynamic shared memory, when the
/// build is race-checked and the device has room (0 otherwise: the kernel then checks no races
/// and its record says so).
fn race_shadow(built: &Built, user: u32, d: &Device) -> u32 {
    let Some(races) = built.sites.races.as_ref().filter(|r| r.shadow) else {
        return 0;
    };
    fits(
        built,
        user,
        races.shadow_bytes(built.static_shared, user),
        d,
    )
}

/// `extra` bytes of shadow, when they fit beside the launch's shared memory; else 0.
fn fits(built: &Built, user: u32, extra: u32, d: &Device) -> u32 {
    let total = u64::from(built.static_shared) + u64::from(user) + u64::from(extra);
    if total <= u64::from(d.limits.shared_per_block_opt_in) {
        extra
    } else {
        0
    }
}

/// Bytes the init checker's shared-memory shadow needs beside the launch's dynamic shared
/// memory, when the build checks shared memory and the device has room (0 otherwise: the
/// kernel then checks no shared memory).
fn init_shadow(built: &Built, user: u32, d: &Device) -> u32 {
    if !built.sites.init.as_ref().is_some_and(|k| k.shared_shadow) {
        return 0;
    }
    fits(
        built,
        user,
        cudacheck_core::init::shared_shadow_bytes(built.static_shared, user),
        d,
    )
}

fn device_check_sets(func: &Func) -> usize {
    func.lock()
        .made
        .keys()
        .filter(|k| !k.3.is_empty())
        .map(|k| (k.0, k.1, k.3, k.4))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// Whether `stream` is being captured into a graph. Asked of the driver only while some
/// capture is under way (the interposer sees every capture begin and end).
fn capturing(stream: CUstream) -> bool {
    if state().captures.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let mut status: c_int = 0;
    // SAFETY: a valid out-pointer; the program's stream.
    let r = unsafe { call!(cuStreamIsCapturing(stream, &mut status)) };
    r == CUDA_SUCCESS && status != 0
}

fn entry_of(func: &Func) -> Result<Arc<PtxEntry>, String> {
    if let Some(e) = func.lock().entry.clone() {
        return Ok(e);
    }
    let module = func.module.as_ref().ok_or("its module is unknown")?;
    let e = module
        .entries()
        .iter()
        .find(|e| e.symbol == func.symbol)
        .cloned()
        .map(Arc::new)
        .ok_or_else(|| format!("its module's PTX has no kernel `{}`", func.symbol))?;
    func.lock().entry = Some(Arc::clone(&e));
    Ok(e)
}

/// One argument: where its bytes are, and how many.
pub struct Arg {
    pub ptr: *mut c_void,
    pub size: u32,
}

impl Arg {
    /// Its value, when it is at most 8 bytes (little-endian).
    fn value(&self) -> Option<u64> {
        if self.size == 0 || self.size > 8 || self.ptr.is_null() {
            return None;
        }
        let mut b = [0u8; 8];
        // SAFETY: `ptr` holds `size` bytes of the argument (see `read_params`).
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.cast::<u8>(), b.as_mut_ptr(), self.size as usize)
        };
        Some(u64::from_le_bytes(b))
    }
}

/// The arguments of a launch, from `kernelParams` or from `extra`'s packed buffer laid out as
/// the PTX declares the parameters.
///
/// # Safety
/// `params` holds one pointer per parameter, each to its value, or `extra` is a well-formed
/// `CU_LAUNCH_PARAM_*` list.
unsafe fn read_params(l: &Launch, entry: &PtxEntry) -> Result<Vec<Arg>, String> {
    let n = entry.params.len();
    if !l.params.is_null() {
        return Ok((0..n)
            .map(|k| Arg {
                // SAFETY: one pointer per parameter (the driver's contract).
                ptr: unsafe { *l.params.add(k) },
                size: entry.params[k].size,
            })
            .collect());
    }
    if l.extra.is_null() {
        return if n == 0 {
            Ok(Vec::new())
        } else {
            Err("the launch passed no parameters".into())
        };
    }
    let (mut buf, mut len) = (std::ptr::null_mut::<u8>(), None::<usize>);
    let mut i = 0;
    loop {
        // SAFETY: the list is a sequence of (marker, value) pairs ending in END.
        let marker = unsafe { *l.extra.add(i) } as usize;
        match marker {
            LAUNCH_PARAM_END => break,
            // SAFETY: as above.
            LAUNCH_PARAM_BUFFER_POINTER => buf = unsafe { *l.extra.add(i + 1) }.cast(),
            LAUNCH_PARAM_BUFFER_SIZE => {
                // SAFETY: the value is a pointer to a size_t.
                len = Some(unsafe { *(*l.extra.add(i + 1)).cast::<usize>() });
            }
            _ => return Err("the launch's `extra` list holds an unknown entry".into()),
        }
        i += 2;
    }
    let (Some(len), false) = (len, buf.is_null()) else {
        return Err("the launch's `extra` list has no parameter buffer".into());
    };
    let mut off = 0usize;
    let mut out = Vec::with_capacity(n);
    for p in &entry.params {
        let align = p.align.max(1) as usize;
        off = off.div_ceil(align) * align;
        if off + p.size as usize > len {
            return Err(format!(
                "the launch's parameter buffer holds {len} bytes; the kernel's parameters need more"
            ));
        }
        out.push(Arg {
            // SAFETY: inside the buffer of `len` bytes.
            ptr: unsafe { buf.add(off) }.cast(),
            size: p.size,
        });
        off += p.size as usize;
    }
    Ok(out)
}

/// What bounds one buffer slot of a checked build (a pointer parameter, or a pointer field of
/// a struct passed by value): the allocation its pointer points into.
#[derive(Clone, Debug)]
pub struct Bound {
    pub slot: BufferSlot,
    /// The pointer (0 where the slot holds none).
    pub ptr: u64,
    /// The allocation's first byte and length; for a pointer into no allocation the
    /// interposer saw, base 0 and a length every address passes.
    pub base: u64,
    pub len: u64,
    /// The allocation, when the pointer is in one the interposer saw made.
    pub alloc: Option<Arc<Allocation>>,
}

/// A length through which every address passes, with base 0.
const ANY: u64 = UNKNOWN_LEN;

/// Reads the 8 bytes at `offset` of an argument.
/// Every 8 bytes of the arguments (at 8-byte offsets of each): the pointers among them, and
/// pointers inside structs passed by value.
fn arg_words(args: &[Arg]) -> Vec<u64> {
    args.iter()
        .flat_map(|a| (0..a.size / 8).filter_map(move |k| pointer_at(a, 8 * k)))
        .collect()
}

fn pointer_at(a: &Arg, offset: u32) -> Option<u64> {
    if a.ptr.is_null() || offset.checked_add(8)? > a.size {
        return None;
    }
    let mut b = [0u8; 8];
    // SAFETY: the argument holds `size` bytes, of which these 8 (checked above).
    unsafe {
        std::ptr::copy_nonoverlapping(a.ptr.cast::<u8>().add(offset as usize), b.as_mut_ptr(), 8)
    };
    Some(u64::from_le_bytes(b))
}

/// Each slot of the build bounded by the allocation its pointer points into.
fn slot_bounds(s: &State, sites: &InstrumentedKernel, args: &[Arg]) -> Vec<Bound> {
    sites
        .slots
        .iter()
        .map(|&slot| {
            let v = args
                .get(slot.param as usize)
                .and_then(|a| pointer_at(a, slot.offset));
            let (ptr, base, len, alloc) = match v {
                // A null pointer: every access through it is out of bounds.
                Some(0) => (0, 0, 0, None),
                Some(v) => match s.allocs.find(v) {
                    Some(a) => (v, a.base, a.bytes, Some(a)),
                    None => (v, 0, ANY, None),
                },
                None => (0, 0, ANY, None),
            };
            Bound {
                slot,
                ptr,
                base,
                len,
                alloc,
            }
        })
        .collect()
}

/// The host checks the launch's values fail: lengths measured from each pointer argument to
/// the end of its allocation (so a check that holds keeps the access inside it). Remembered
/// for the next launch with the same values.
fn failing_host_checks(
    s: &State,
    made: &Made,
    args: &[Arg],
    ptrs: &[u64],
    l: &Launch,
) -> Option<HostCheckSet> {
    let sites = &made.sites;
    if sites.host_checks.is_empty() {
        return Some(HostCheckSet::new());
    }
    let scalars: Vec<Option<(u64, u32)>> = args
        .iter()
        .map(|a| a.value().map(|v| (v, a.size)))
        .collect();
    let lens: Vec<u64> = ptrs
        .iter()
        .zip(args)
        .map(|(&p, a)| match (p, a.size) {
            // A null pointer has nothing to access (its device slot has length 0 too).
            (0, 8) => 0,
            (0, _) => UNKNOWN_LEN,
            (p, _) => s.allocs.find(p).map_or(UNKNOWN_LEN, |a| a.end() - p),
        })
        .collect();
    let mut key: Vec<u64> = Vec::with_capacity(6 + 3 * args.len());
    key.extend(l.grid.iter().chain(&l.block).map(|&v| u64::from(v)));
    for (sc, len) in scalars.iter().zip(&lens) {
        let (v, size) = sc.unwrap_or((0, 0));
        key.extend([v, u64::from(size), *len]);
    }
    made.verdict(key, || {
        sites.failing_host_checks(&LaunchValues {
            grid: l.grid,
            block: l.block,
            scalars: &scalars,
            lens: &lens,
        })
    })
}

/// Reads `cuLaunchKernelEx`'s cluster attribute.
///
/// # Safety
/// `cfg` is a valid launch configuration.
pub unsafe fn cluster_of(cfg: &CUlaunchConfig) -> Option<[u32; 3]> {
    if cfg.attrs.is_null() {
        return None;
    }
    (0..cfg.num_attrs as usize)
        // SAFETY: `num_attrs` attributes.
        .map(|k| unsafe { *cfg.attrs.add(k) })
        .find(|a| a.id == ffi::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        .map(|a| [a.value[0], a.value[1], a.value[2]])
}
