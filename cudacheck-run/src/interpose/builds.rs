//! Checked builds of the program's kernels: made once per launch shape through the library's
//! engine (its instrumenter and module cache), loaded once per context through the driver's
//! JIT, as the library loads its own; and the module-scope variables a build has its own copies
//! of, mirrored around each launch.

use std::collections::hash_map::Entry;
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudacheck::__private::engine::{self, Shape};
use cudacheck_core::instrument::{HostCheckSet, InstrumentedKernel};

use super::ffi::{self, call, fn_attr, CUcontext, CUfunction, CUmodule, CUDA_SUCCESS};
use super::launch::Launch;
use super::module::{Func, Handle};
use super::stack::Stack;
use super::state::{state, Device};

/// The shape a checked build serves, as a key.
pub type ShapeKey = ([u32; 3], u32, bool, HostCheckSet, bool, bool);

/// The key of `s`'s build, with global memory init-checked (`global`) or not.
pub fn key_of(s: &Shape, global: bool) -> ShapeKey {
    (
        s.block.to_array(),
        s.dynamic_shared_bytes,
        s.host_checks,
        s.on_device,
        s.races,
        global,
    )
}

/// A checked build as the engine made it, for every context.
pub struct Made {
    /// The checked PTX, ready for the driver.
    ptx: CString,
    symbol: CString,
    pub sites: Arc<InstrumentedKernel>,
    /// The last host-check verdict and the launch values it was for: a call site usually
    /// launches with the same values, and the verdict depends on them alone.
    verdict: Mutex<Option<(Vec<u64>, Option<HostCheckSet>)>>,
}

impl Made {
    /// The host checks failing for these values (`key` holds them all), remembered for the
    /// next launch with the same ones.
    pub fn verdict(
        &self,
        key: Vec<u64>,
        decide: impl FnOnce() -> Option<HostCheckSet>,
    ) -> Option<HostCheckSet> {
        let mut memo = self.verdict.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, v)) = memo.as_ref() {
            if *k == key {
                return *v;
            }
        }
        let v = decide();
        *memo = Some((key, v));
        v
    }
}

/// A checked build loaded into one context.
pub struct Built {
    pub module: CUmodule,
    pub function: CUfunction,
    pub sites: Arc<InstrumentedKernel>,
    /// The module-scope variables it uses, mirrored from the program's module.
    pub globals: Vec<Mirror>,
    /// Static shared memory of the checked function (for the race checker's shadow).
    pub static_shared: u32,
    /// The dynamic shared opt-in last set on `function`.
    opt_in: AtomicU32,
    /// The host call stack of the first launch that ran it (`--stacks first`).
    pub first_stack: OnceLock<Option<Arc<Stack>>>,
}

// SAFETY: the handles are the driver's, usable from any thread; the rest is plain data.
unsafe impl Send for Built {}
// SAFETY: as above.
unsafe impl Sync for Built {}

impl Built {
    /// Raises the function's dynamic shared opt-in to `bytes` when a launch needs more than it
    /// has (the program opted its own function in; this one is ours).
    pub fn opt_in(&self, bytes: u32) {
        if bytes > 0 && self.opt_in.load(Ordering::Relaxed) < bytes {
            // SAFETY: the build's live function; a byte count the launch validated.
            unsafe {
                call!(cuFuncSetAttribute(
                    self.function,
                    fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as c_int
                ))
            };
            self.opt_in.store(bytes, Ordering::Relaxed);
        }
    }
}

/// A module-scope variable of the kernel's module, as the checked build's module has its own
/// copy: the program's is copied in before each checked launch and, for writable memory, back
/// after it.
#[derive(Clone, Debug)]
pub struct GlobalVar {
    pub name: String,
    pub writable: bool,
}

/// A variable's two addresses in one context.
#[derive(Clone, Copy, Debug)]
pub struct Mirror {
    pub program: u64,
    pub ours: u64,
    pub bytes: usize,
    pub writable: bool,
}

/// Variables larger than this in all are not mirrored around each launch: the kernel runs
/// unchecked instead.
const MIRROR_LIMIT: usize = 64 << 20;

/// The checked build of `func` for `shape`, made through the library's engine (and its module
/// cache) once per process; a failure is remembered and not tried again. With `--init`,
/// `global` says whether global memory is init-checked too (else shared memory only: for
/// launches that can reach no unwritten global memory, `shadow::needs_global`).
pub fn made(func: &Func, d: &Device, shape: Shape, global: bool) -> Result<Arc<Made>, String> {
    let global = global || !state().opts.init;
    let key = key_of(&shape, global);
    {
        let inner = func.lock();
        if let Some(m) = inner.made.get(&key) {
            return m.clone();
        }
    }
    let started = Instant::now();
    let result = make(func, d, &shape, global).map(Arc::new);
    state().time_building.add(started.elapsed());
    let mut inner = func.lock();
    match inner.made.entry(key) {
        Entry::Occupied(e) => e.get().clone(),
        Entry::Vacant(e) => e.insert(result).clone(),
    }
}

fn make(func: &Func, d: &Device, shape: &Shape, global: bool) -> Result<Made, String> {
    let module = func.module.as_ref().ok_or("its module is unknown")?;
    let ptx = module.ptx.as_deref().ok_or("no PTX")?;
    let kernel = {
        let mut inner = func.lock();
        if inner.engine.is_none() {
            // The module was read once (its entries); each kernel's subset is cut from that.
            let subset = cudacheck_core::ptx_subset_of(ptx, module.entries(), &func.symbol)
                .ok_or_else(|| format!("its module's PTX has no kernel `{}`", func.symbol))?;
            inner.engine = Some(engine::ptx_kernel(&module.label, subset, &func.symbol));
        }
        inner.engine.clone().expect("made above")
    };
    let b = match engine::checked_build(&kernel, d.arch, shape) {
        Ok(Some(b)) => b,
        Ok(None) => return Err("its block is one no GPU runs".into()),
        Err(e) => return Err(format!("its bounds-checked build could not be made: {e}")),
    };
    if !b.sites.alloc_bases {
        return Err("its checked build does not check against allocations".into());
    }
    let (mut ptx, mut sites) = (b.ptx, b.sites);
    if state().opts.init {
        // Reads of memory nothing wrote: the bounds-checked build rewritten once more. A
        // kernel it leaves unchanged is run as it is, and counts as writing what it can reach.
        let mut opts = cudacheck_core::init::InitOptions::new(shape.dynamic_shared_bytes);
        if !global {
            opts = opts.shared_only();
        }
        if let Ok(init) = cudacheck_core::init::init_ptx_with(&ptx, &opts) {
            sites.init = init.kernel(&b.symbol).cloned();
            ptx = init.ptx;
        }
    }
    Ok(Made {
        ptx: CString::new(ptx).map_err(|_| "the checked PTX holds a NUL byte".to_string())?,
        symbol: CString::new(b.symbol).map_err(|_| "a NUL in the symbol".to_string())?,
        sites: Arc::new(sites),
        verdict: Mutex::new(None),
    })
}

/// `made` loaded into context `ctx` (current), once per context.
pub fn loaded(func: &Func, ctx: CUcontext, made: &Made) -> Result<Arc<Built>, String> {
    let key = (ctx as usize, Arc::as_ptr(&made.sites) as usize);
    {
        let inner = func.lock();
        if let Some(b) = inner.loaded.get(&key) {
            return b.clone();
        }
    }
    let started = Instant::now();
    let result = load(func, made).map(Arc::new);
    state().time_loading.add(started.elapsed());
    func.lock().loaded.entry(key).or_insert(result).clone()
}

/// Loads a build's PTX into the current context (the driver's JIT, as the library loads its
/// checked builds) and finds what it mirrors.
fn load(func: &Func, made: &Made) -> Result<Built, String> {
    let mut module: CUmodule = std::ptr::null_mut();
    let load = ffi::real()
        .cuModuleLoadData
        .ok_or("the driver has no cuModuleLoadData")?;
    // SAFETY: a NUL-terminated PTX text; the interposer's own load (the guard is held, so it
    // is not recorded as the program's).
    let r = unsafe { load(&mut module, made.ptx.as_ptr().cast::<c_void>()) };
    if r != CUDA_SUCCESS {
        return Err(format!(
            "the driver did not load its bounds-checked build (error {r})"
        ));
    }
    let mut function: CUfunction = std::ptr::null_mut();
    let get = ffi::real()
        .cuModuleGetFunction
        .ok_or("the driver has no cuModuleGetFunction")?;
    // SAFETY: the module just loaded, a NUL-terminated symbol.
    let r = unsafe { get(&mut function, module, made.symbol.as_ptr()) };
    if r != CUDA_SUCCESS {
        return Err(format!(
            "the bounds-checked build has no kernel `{}` (error {r})",
            made.symbol.to_string_lossy()
        ));
    }
    let globals = mirrors(func, &made.ptx, module)?;
    if made.sites.init.is_some() {
        set_init_directory(module);
    }
    let mut shared: c_int = 0;
    // SAFETY: a valid out-pointer and the function just found.
    unsafe {
        call!(cuFuncGetAttribute(
            &mut shared,
            fn_attr::SHARED_SIZE_BYTES,
            function
        ))
    };
    Ok(Built {
        module,
        function,
        sites: Arc::clone(&made.sites),
        globals,
        static_shared: shared.max(0) as u32,
        opt_in: AtomicU32::new(0),
        first_stack: OnceLock::new(),
    })
}

/// Points an init-checked module at the current context's shadow directory (left 0, its
/// checks stay off: the directory could not be made).
fn set_init_directory(module: CUmodule) {
    let Ok(name) = CString::new(cudacheck_core::init::DIR_SYMBOL) else {
        return;
    };
    // SAFETY: our module, just loaded in the current context; a NUL-terminated name.
    let Some((at, 8)) = (unsafe { global_of(module, &name) }) else {
        return;
    };
    let dir = super::shadow::directory().to_le_bytes();
    // SAFETY: the variable's 8 bytes; 8 bytes of host memory.
    unsafe { call!(cuMemcpyHtoD_v2(at, dir.as_ptr().cast::<c_void>(), 8)) };
}

/// The module-scope variables the checked PTX uses, each with the program's address and ours.
fn mirrors(func: &Func, ptx: &CString, ours: CUmodule) -> Result<Vec<Mirror>, String> {
    let vars = global_vars(ptx.to_str().unwrap_or_default());
    if vars.is_empty() {
        return Ok(Vec::new());
    }
    let module = func.module.as_ref().ok_or("its module is unknown")?;
    let mut out = Vec::new();
    let mut total = 0usize;
    for v in vars {
        let name = CString::new(v.name.clone()).map_err(|_| "a NUL in a variable name")?;
        let program = module_global(module.handle, &name);
        // SAFETY: our module, just loaded in the current context; a NUL-terminated name.
        let theirs = unsafe { global_of(ours, &name) };
        let (Some((program, program_bytes)), Some((ours, ours_bytes))) = (program, theirs) else {
            return Err(format!(
                "its module's variable `{}` could not be found in both modules",
                v.name
            ));
        };
        total += ours_bytes;
        out.push(Mirror {
            program,
            ours,
            bytes: program_bytes.min(ours_bytes),
            writable: v.writable,
        });
    }
    if total > MIRROR_LIMIT {
        return Err(format!(
            "its module's variables hold {total} bytes, too many to copy around each launch"
        ));
    }
    Ok(out)
}

/// The `.global` and `.const` variables a PTX module defines (not the instrumenter's own).
pub fn global_vars(ptx: &str) -> Vec<GlobalVar> {
    use cudacheck_core::instrument::ptx::{parse, Space};
    let Ok(m) = parse(ptx) else {
        return Vec::new();
    };
    // A variable the text names only where it declares it is not used: a module's other
    // kernels' tables are not copied around this one's launches.
    let uses = |name: &str| {
        ptx.match_indices(name)
            .filter(|(at, _)| {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
                let before = ptx[..*at].chars().next_back().map_or(true, |c| !word(c));
                let after = ptx[at + name.len()..]
                    .chars()
                    .next()
                    .map_or(true, |c| !word(c));
                before && after
            })
            .count()
    };
    m.vars
        .iter()
        .filter(|v| !v.name.starts_with("__cc_") && v.bytes.is_some_and(|b| b > 0))
        .filter(|v| uses(&v.name) > 1)
        .filter_map(|v| match v.space {
            Space::Global => Some(GlobalVar {
                name: v.name.clone(),
                writable: true,
            }),
            Space::Const => Some(GlobalVar {
                name: v.name.clone(),
                writable: false,
            }),
            _ => None,
        })
        .collect()
}

/// # Safety
/// `module` is a loaded module of the current context; `name` NUL-terminated.
unsafe fn global_of(module: CUmodule, name: &CString) -> Option<(u64, usize)> {
    let (mut addr, mut bytes) = (0u64, 0usize);
    // SAFETY: as the caller promises; valid out-pointers.
    let r = unsafe {
        call!(cuModuleGetGlobal_v2(
            &mut addr,
            &mut bytes,
            module,
            name.as_ptr()
        ))
    };
    (r == CUDA_SUCCESS).then_some((addr, bytes))
}

fn module_global(h: Handle, name: &CString) -> Option<(u64, usize)> {
    match h {
        // SAFETY: the program's module (of the current context, where it launches).
        Handle::Module(m) => unsafe { global_of(m as CUmodule, name) },
        Handle::Library(lib) => {
            let (mut addr, mut bytes) = (0u64, 0usize);
            // SAFETY: the program's library; valid out-pointers.
            let r = unsafe {
                call!(cuLibraryGetGlobal(
                    &mut addr,
                    &mut bytes,
                    lib as *mut c_void,
                    name.as_ptr()
                ))
            };
            (r == CUDA_SUCCESS).then_some((addr, bytes))
        }
        Handle::None => None,
    }
}

/// Copies the program's variables into ours before a launch (`into_ours`), or our writable
/// ones back after it, on the launch's stream.
///
/// # Safety
/// The mirrors are device addresses of this context with at least `bytes` bytes each.
pub unsafe fn mirror(globals: &[Mirror], l: &Launch, into_ours: bool) {
    for g in globals.iter().filter(|g| into_ours || g.writable) {
        let (dst, src) = if into_ours {
            (g.ours, g.program)
        } else {
            (g.program, g.ours)
        };
        // SAFETY: as the caller promises; ordered on the launch's stream.
        unsafe {
            if l.per_thread {
                call!(cuMemcpyDtoDAsync_v2_ptsz(dst, src, g.bytes, l.stream))
            } else {
                call!(cuMemcpyDtoDAsync_v2(dst, src, g.bytes, l.stream))
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_and_constant_variables_are_found_and_the_instrumenters_are_not() {
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .global .align 4 .b8 table[64];\n.const .align 4 .b8 coeffs[16];\n\
            .global .align 4 .b8 __cc_sink[16];\n.shared .align 4 .b8 tile[128];\n\
            .global .align 4 .b8 unused[8];\n\
            .visible .entry k()\n{\n\tmov.u64 %rd1, table;\n\tld.const.f32 %f1, [coeffs+4];\n\t\
            st.global.u32 [__cc_sink], 0;\n\tret;\n}\n";
        let v = global_vars(ptx);
        let names: Vec<(&str, bool)> = v.iter().map(|g| (g.name.as_str(), g.writable)).collect();
        assert_eq!(names, vec![("table", true), ("coeffs", false)]);
    }
}
