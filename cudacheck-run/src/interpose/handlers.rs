//! What each hooked entry point does around the real one (`ffi.rs` declares which entry point
//! comes here). Lookups and loads are recorded after the driver answers; allocations enter
//! the table; launches go to `launch.rs`; the program's own waits are when fault records are
//! read; a context going away has its launches read first.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use super::alloc::Allocation;
use super::ffi::{
    self, call, CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUkernel, CUlaunchConfig,
    CUlibrary, CUmemGenericAllocationHandle, CUmemoryPool, CUmodule, CUresult, CUstream,
    CUDA_SUCCESS,
};
use super::launch::{self, CoopFn, ExFn, Launch, LaunchFn, Via};
use super::module::{Func, Handle, Module};
use super::records;
use super::shadow;
use super::stack::Stack;
use super::state::{program_name, state, State};

type Real<F> = F;

// ---- entry points -------------------------------------------------------------------------

/// `cuGetProcAddress` (CUDA 11.3-12 signature): the CUDA runtime finds every entry point
/// through it; a hooked one is answered with its hook.
pub unsafe fn get_proc_address_v1(
    real: Real<unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> CUresult>,
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(symbol, pfn, version, flags) };
    // SAFETY: `pfn` is the program's out-pointer, written by the driver on success.
    unsafe { swap_in_hook(r, pfn) };
    r
}

/// `cuGetProcAddress_v2` (CUDA 12.0 and later).
pub unsafe fn get_proc_address_v2(
    real: Real<
        unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CUresult,
    >,
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(symbol, pfn, version, flags, status) };
    // SAFETY: as above.
    unsafe { swap_in_hook(r, pfn) };
    r
}

/// # Safety
/// `pfn` is null or valid for a read and a write.
unsafe fn swap_in_hook(r: CUresult, pfn: *mut *mut c_void) {
    if r != CUDA_SUCCESS || pfn.is_null() {
        return;
    }
    // SAFETY: as the caller promises.
    let p = unsafe { *pfn };
    if let Some(h) = ffi::hook_for_address(p as usize) {
        // SAFETY: as above.
        unsafe { *pfn = h as *mut c_void };
    }
}

// ---- modules, libraries, functions --------------------------------------------------------

fn arch(s: &State) -> Option<cudacheck_core::Arch> {
    s.current_device().map(|d| d.arch)
}

/// Loaded modules or libraries, by the program's handle (`State::modules`, `State::libraries`).
type Registry = RwLock<HashMap<usize, Arc<Module>>>;

/// What `handle` names in `registry`.
fn registered(registry: &Registry, handle: usize) -> Option<Arc<Module>> {
    registry
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&handle)
        .cloned()
}

fn register(registry: &Registry, handle: usize, m: Arc<Module>) {
    registry
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(handle, m);
}

/// Forgets an unloaded module or library; launches of its kernels still in flight are read
/// first, while their tables are at hand.
fn unregister(s: &State, registry: &Registry, handle: usize) {
    let m = registry
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&handle);
    if let Some(m) = m {
        records::poll_all(s);
        s.retire_module(&m);
    }
}

/// Records the kernel handle `*out` the driver returned for `name` in `m`'s module.
///
/// # Safety
/// The driver wrote `*out`; `name` is NUL-terminated.
unsafe fn add_named_func(
    s: &State,
    m: Option<Arc<Module>>,
    out: *const *mut c_void,
    name: *const c_char,
    is_kernel: bool,
) {
    // SAFETY: as the caller promises.
    let (h, symbol) = unsafe { (*out as usize, CStr::from_ptr(name).to_string_lossy()) };
    add_func(s, h, Func::new(m, symbol.into_owned(), is_kernel));
}

fn add_module(s: &State, handle: usize, mut m: Module) {
    // A module belongs to the context current at its load, and goes with it.
    m.ctx = s.current_context().map_or(0, |c| c as usize);
    register(&s.modules, handle, Arc::new(m));
}

pub unsafe fn module_load(
    real: Real<unsafe extern "C" fn(*mut CUmodule, *const c_char) -> CUresult>,
    module: *mut CUmodule,
    fname: *const c_char,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(module, fname) };
    if r == CUDA_SUCCESS && !fname.is_null() {
        let s = state();
        // SAFETY: the driver wrote the handle; the name is NUL-terminated.
        let (h, path) = unsafe { (*module as usize, CStr::from_ptr(fname).to_string_lossy()) };
        add_module(s, h, Module::from_file(Handle::Module(h), &path, arch(s)));
    }
    r
}

/// # Safety
/// `image` is the image the driver just loaded (its contract).
unsafe fn loaded_image(module: *mut CUmodule, image: *const c_void, what: &str) {
    let s = state();
    // SAFETY: the driver wrote the handle.
    let h = unsafe { *module } as usize;
    let label = format!("{} ({what})", program_name());
    // SAFETY: as the caller promises.
    let m = unsafe { Module::from_image(Handle::Module(h), image, arch(s), label) };
    add_module(s, h, m);
}

pub unsafe fn module_load_data(
    real: Real<unsafe extern "C" fn(*mut CUmodule, *const c_void) -> CUresult>,
    module: *mut CUmodule,
    image: *const c_void,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(module, image) };
    if r == CUDA_SUCCESS {
        // SAFETY: loaded from `image`.
        unsafe { loaded_image(module, image, "module") };
    }
    r
}

pub unsafe fn module_load_data_ex(
    real: Real<
        unsafe extern "C" fn(
            *mut CUmodule,
            *const c_void,
            c_uint,
            *mut c_int,
            *mut *mut c_void,
        ) -> CUresult,
    >,
    module: *mut CUmodule,
    image: *const c_void,
    n: c_uint,
    options: *mut c_int,
    values: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(module, image, n, options, values) };
    if r == CUDA_SUCCESS {
        // SAFETY: loaded from `image`.
        unsafe { loaded_image(module, image, "module") };
    }
    r
}

pub unsafe fn module_load_fat_binary(
    real: Real<unsafe extern "C" fn(*mut CUmodule, *const c_void) -> CUresult>,
    module: *mut CUmodule,
    fatbin: *const c_void,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(module, fatbin) };
    if r == CUDA_SUCCESS {
        // SAFETY: loaded from `fatbin`.
        unsafe { loaded_image(module, fatbin, "fatbin") };
    }
    r
}

pub unsafe fn module_unload(
    real: Real<unsafe extern "C" fn(CUmodule) -> CUresult>,
    module: CUmodule,
) -> CUresult {
    let s = state();
    unregister(s, &s.modules, module as usize);
    // SAFETY: the program's argument.
    unsafe { real(module) }
}

pub unsafe fn module_get_function(
    real: Real<unsafe extern "C" fn(*mut CUfunction, CUmodule, *const c_char) -> CUresult>,
    f: *mut CUfunction,
    module: CUmodule,
    name: *const c_char,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(f, module, name) };
    if r == CUDA_SUCCESS && !name.is_null() {
        let s = state();
        let m = registered(&s.modules, module as usize);
        // SAFETY: the driver wrote the handle; the name is NUL-terminated.
        unsafe { add_named_func(s, m, f.cast(), name, false) };
    }
    r
}

fn add_func(s: &State, handle: usize, f: Func) {
    s.funcs
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .entry(handle)
        .or_insert_with(|| Arc::new(f));
}

type LibLoad<T> = unsafe extern "C" fn(
    *mut CUlibrary,
    T,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
) -> CUresult;

fn add_library(s: &State, handle: usize, m: Module) {
    register(&s.libraries, handle, Arc::new(m));
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn library_load_data(
    real: Real<LibLoad<*const c_void>>,
    library: *mut CUlibrary,
    code: *const c_void,
    jo: *mut c_int,
    jv: *mut *mut c_void,
    jn: c_uint,
    lo: *mut c_int,
    lv: *mut *mut c_void,
    ln: c_uint,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(library, code, jo, jv, jn, lo, lv, ln) };
    if r == CUDA_SUCCESS {
        let s = state();
        // SAFETY: the driver wrote the handle.
        let h = unsafe { *library } as usize;
        let label = format!("{} (library)", program_name());
        // SAFETY: the driver loaded `code`.
        let m = unsafe { Module::from_image(Handle::Library(h), code, arch(s), label) };
        add_library(s, h, m);
    }
    r
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn library_load_from_file(
    real: Real<LibLoad<*const c_char>>,
    library: *mut CUlibrary,
    fname: *const c_char,
    jo: *mut c_int,
    jv: *mut *mut c_void,
    jn: c_uint,
    lo: *mut c_int,
    lv: *mut *mut c_void,
    ln: c_uint,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(library, fname, jo, jv, jn, lo, lv, ln) };
    if r == CUDA_SUCCESS && !fname.is_null() {
        let s = state();
        // SAFETY: the driver wrote the handle; the name is NUL-terminated.
        let (h, path) = unsafe { (*library as usize, CStr::from_ptr(fname).to_string_lossy()) };
        add_library(s, h, Module::from_file(Handle::Library(h), &path, arch(s)));
    }
    r
}

pub unsafe fn library_unload(
    real: Real<unsafe extern "C" fn(CUlibrary) -> CUresult>,
    library: CUlibrary,
) -> CUresult {
    let s = state();
    unregister(s, &s.libraries, library as usize);
    // SAFETY: the program's argument.
    unsafe { real(library) }
}

pub unsafe fn library_get_kernel(
    real: Real<unsafe extern "C" fn(*mut CUkernel, CUlibrary, *const c_char) -> CUresult>,
    kernel: *mut CUkernel,
    library: CUlibrary,
    name: *const c_char,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(kernel, library, name) };
    if r == CUDA_SUCCESS && !name.is_null() {
        let s = state();
        let m = registered(&s.libraries, library as usize);
        // SAFETY: the driver wrote the handle; the name is NUL-terminated.
        unsafe { add_named_func(s, m, kernel.cast(), name, true) };
    }
    r
}

pub unsafe fn library_get_module(
    real: Real<unsafe extern "C" fn(*mut CUmodule, CUlibrary) -> CUresult>,
    module: *mut CUmodule,
    library: CUlibrary,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(module, library) };
    if r == CUDA_SUCCESS {
        let s = state();
        if let Some(m) = registered(&s.libraries, library as usize) {
            // SAFETY: the driver wrote the handle.
            let h = unsafe { *module } as usize;
            register(&s.modules, h, m);
        }
    }
    r
}

pub unsafe fn kernel_get_function(
    real: Real<unsafe extern "C" fn(*mut CUfunction, CUkernel) -> CUresult>,
    f: *mut CUfunction,
    kernel: CUkernel,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(f, kernel) };
    if r == CUDA_SUCCESS {
        let s = state();
        if let Some(k) = s.func(kernel as usize) {
            // SAFETY: the driver wrote the handle.
            let h = unsafe { *f } as usize;
            add_func(s, h, Func::new(k.module.clone(), k.symbol.clone(), false));
        }
    }
    r
}

// ---- launches -----------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
unsafe fn launch_common(
    via: Via,
    f: CUfunction,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cluster: Option<[u32; 3]>,
    per_thread: bool,
) -> CUresult {
    let l = Launch {
        f,
        grid,
        block,
        shared,
        stream,
        params,
        extra,
        cluster,
        per_thread,
    };
    // SAFETY: the program's launch.
    unsafe { launch::launch(via, &l) }
}

macro_rules! launch_handlers {
    ($($name:ident, $per_thread:expr;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            real: Real<LaunchFn>,
            f: CUfunction,
            gx: c_uint,
            gy: c_uint,
            gz: c_uint,
            bx: c_uint,
            by: c_uint,
            bz: c_uint,
            shared: c_uint,
            stream: CUstream,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> CUresult {
            // SAFETY: the program's launch.
            unsafe {
                launch_common(Via::Plain(real), f, [gx, gy, gz], [bx, by, bz], shared, stream,
                    params, extra, None, $per_thread)
            }
        }
    )*};
}

launch_handlers! {
    launch_kernel, false;
    launch_kernel_ptsz, true;
}

macro_rules! cooperative_handlers {
    ($($name:ident, $per_thread:expr;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            real: Real<CoopFn>,
            f: CUfunction,
            gx: c_uint,
            gy: c_uint,
            gz: c_uint,
            bx: c_uint,
            by: c_uint,
            bz: c_uint,
            shared: c_uint,
            stream: CUstream,
            params: *mut *mut c_void,
        ) -> CUresult {
            // SAFETY: the program's launch.
            unsafe {
                launch_common(Via::Cooperative(real), f, [gx, gy, gz], [bx, by, bz], shared,
                    stream, params, std::ptr::null_mut(), None, $per_thread)
            }
        }
    )*};
}

cooperative_handlers! {
    launch_cooperative, false;
    launch_cooperative_ptsz, true;
}

macro_rules! ex_handlers {
    ($($name:ident, $per_thread:expr;)*) => {$(
        pub unsafe fn $name(
            real: Real<ExFn>,
            config: *const CUlaunchConfig,
            f: CUfunction,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> CUresult {
            if config.is_null() {
                // SAFETY: the program's arguments; the driver answers a null configuration.
                return unsafe { real(config, f, params, extra) };
            }
            // SAFETY: a valid configuration (the driver's contract).
            let c = unsafe { *config };
            // SAFETY: as above.
            let cluster = unsafe { launch::cluster_of(&c) };
            // SAFETY: the program's launch.
            unsafe {
                launch_common(Via::Ex(real, config), f, c.grid, c.block, c.shared_mem_bytes,
                    c.stream, params, extra, cluster, $per_thread)
            }
        }
    )*};
}

ex_handlers! {
    launch_kernel_ex, false;
    launch_kernel_ex_ptsz, true;
}

// ---- allocations --------------------------------------------------------------------------

fn record(base: u64, bytes: u64, api: &'static str) {
    let s = state();
    s.allocs.insert(Allocation {
        base,
        bytes,
        api,
        stack: Stack::maybe(s),
    });
}

/// The device address of host memory `p` (the same address under unified addressing).
fn device_address_of(p: *mut c_void) -> u64 {
    let mut d: CUdeviceptr = 0;
    // SAFETY: a valid out-pointer; `p` is pinned host memory the driver knows.
    let r = unsafe { call!(cuMemHostGetDevicePointer_v2(&mut d, p, 0)) };
    if r == CUDA_SUCCESS {
        d
    } else {
        p as u64
    }
}

pub unsafe fn mem_alloc(
    real: Real<unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult>,
    dptr: *mut CUdeviceptr,
    bytes: usize,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(dptr, bytes) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the address.
        let p = unsafe { *dptr };
        record(p, bytes as u64, "cuMemAlloc");
        shadow::allocated(p, bytes as u64, None);
    }
    r
}

pub unsafe fn mem_alloc_pitch(
    real: Real<
        unsafe extern "C" fn(*mut CUdeviceptr, *mut usize, usize, usize, c_uint) -> CUresult,
    >,
    dptr: *mut CUdeviceptr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    elem: c_uint,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(dptr, pitch, width, height, elem) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote both.
        let (p, pitch) = unsafe { (*dptr, *pitch) };
        let bytes = (pitch as u64).saturating_mul(height as u64);
        record(p, bytes, "cuMemAllocPitch");
        shadow::allocated(p, bytes, None);
    }
    r
}

pub unsafe fn mem_alloc_managed(
    real: Real<unsafe extern "C" fn(*mut CUdeviceptr, usize, c_uint) -> CUresult>,
    dptr: *mut CUdeviceptr,
    bytes: usize,
    flags: c_uint,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(dptr, bytes, flags) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the address.
        record(unsafe { *dptr }, bytes as u64, "cuMemAllocManaged");
    }
    r
}

pub unsafe fn mem_alloc_async(
    real: Real<unsafe extern "C" fn(*mut CUdeviceptr, usize, CUstream) -> CUresult>,
    dptr: *mut CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(dptr, bytes, stream) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the address.
        let p = unsafe { *dptr };
        record(p, bytes as u64, "cuMemAllocAsync");
        shadow::allocated(p, bytes as u64, Some(stream));
    }
    r
}

pub unsafe fn mem_alloc_from_pool_async(
    real: Real<unsafe extern "C" fn(*mut CUdeviceptr, usize, CUmemoryPool, CUstream) -> CUresult>,
    dptr: *mut CUdeviceptr,
    bytes: usize,
    pool: CUmemoryPool,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(dptr, bytes, pool, stream) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the address.
        let p = unsafe { *dptr };
        record(p, bytes as u64, "cuMemAllocFromPoolAsync");
        shadow::allocated(p, bytes as u64, Some(stream));
    }
    r
}

pub unsafe fn mem_host_alloc(
    real: Real<unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> CUresult>,
    pp: *mut *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(pp, bytes, flags) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the pointer.
        let p = unsafe { *pp };
        record(device_address_of(p), bytes as u64, "cuMemHostAlloc");
    }
    r
}

pub unsafe fn mem_alloc_host(
    real: Real<unsafe extern "C" fn(*mut *mut c_void, usize) -> CUresult>,
    pp: *mut *mut c_void,
    bytes: usize,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(pp, bytes) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the pointer.
        let p = unsafe { *pp };
        record(device_address_of(p), bytes as u64, "cuMemAllocHost");
    }
    r
}

pub unsafe fn mem_host_register(
    real: Real<unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CUresult>,
    p: *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(p, bytes, flags) };
    if r == CUDA_SUCCESS {
        record(device_address_of(p), bytes as u64, "cuMemHostRegister");
    }
    r
}

pub unsafe fn mem_host_unregister(
    real: Real<unsafe extern "C" fn(*mut c_void) -> CUresult>,
    p: *mut c_void,
) -> CUresult {
    state().allocs.remove(device_address_of(p));
    // SAFETY: the program's argument.
    unsafe { real(p) }
}

pub unsafe fn mem_free(
    real: Real<unsafe extern "C" fn(CUdeviceptr) -> CUresult>,
    dptr: CUdeviceptr,
) -> CUresult {
    state().allocs.remove(dptr);
    shadow::freed(dptr, std::ptr::null_mut());
    // SAFETY: the program's argument.
    unsafe { real(dptr) }
}

pub unsafe fn mem_free_host(
    real: Real<unsafe extern "C" fn(*mut c_void) -> CUresult>,
    p: *mut c_void,
) -> CUresult {
    state().allocs.remove(device_address_of(p));
    // SAFETY: the program's argument.
    unsafe { real(p) }
}

pub unsafe fn mem_free_async(
    real: Real<unsafe extern "C" fn(CUdeviceptr, CUstream) -> CUresult>,
    dptr: CUdeviceptr,
    stream: CUstream,
) -> CUresult {
    state().allocs.remove(dptr);
    shadow::freed(dptr, stream);
    // SAFETY: the program's arguments.
    unsafe { real(dptr, stream) }
}

pub unsafe fn mem_map(
    real: Real<
        unsafe extern "C" fn(
            CUdeviceptr,
            usize,
            usize,
            CUmemGenericAllocationHandle,
            u64,
        ) -> CUresult,
    >,
    ptr: CUdeviceptr,
    bytes: usize,
    offset: usize,
    handle: CUmemGenericAllocationHandle,
    flags: u64,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(ptr, bytes, offset, handle, flags) };
    if r == CUDA_SUCCESS {
        let s = state();
        s.allocs.map(ptr, bytes as u64, Stack::maybe(s));
    }
    r
}

pub unsafe fn mem_unmap(
    real: Real<unsafe extern "C" fn(CUdeviceptr, usize) -> CUresult>,
    ptr: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    state().allocs.unmap(ptr, bytes as u64);
    // SAFETY: the program's arguments.
    unsafe { real(ptr, bytes) }
}

pub unsafe fn mem_address_reserve(
    real: Real<unsafe extern "C" fn(*mut CUdeviceptr, usize, usize, CUdeviceptr, u64) -> CUresult>,
    ptr: *mut CUdeviceptr,
    bytes: usize,
    alignment: usize,
    addr: CUdeviceptr,
    flags: u64,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(ptr, bytes, alignment, addr, flags) };
    if r == CUDA_SUCCESS {
        // SAFETY: the driver wrote the address.
        state().allocs.reserve(unsafe { *ptr }, bytes as u64);
    }
    r
}

pub unsafe fn mem_address_free(
    real: Real<unsafe extern "C" fn(CUdeviceptr, usize) -> CUresult>,
    ptr: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    state().allocs.release(ptr, bytes as u64);
    // SAFETY: the program's arguments.
    unsafe { real(ptr, bytes) }
}

// ---- stream capture -----------------------------------------------------------------------

/// `cuStreamBeginCapture` (every version): launches are asked whether their stream is being
/// captured only while a capture is under way.
pub unsafe fn begin_capture(
    real: Real<unsafe extern "C" fn(CUstream, c_int) -> CUresult>,
    stream: CUstream,
    mode: c_int,
) -> CUresult {
    // SAFETY: the program's arguments. (The oldest version takes the stream alone; the mode
    // passed beside it is ignored there.)
    let r = unsafe { real(stream, mode) };
    if r == CUDA_SUCCESS {
        state().captures.fetch_add(1, Ordering::Relaxed);
    }
    r
}

pub unsafe fn begin_capture_to_graph(
    real: Real<
        unsafe extern "C" fn(
            CUstream,
            *mut c_void,
            *const c_void,
            *const c_void,
            usize,
            c_int,
        ) -> CUresult,
    >,
    stream: CUstream,
    graph: *mut c_void,
    deps: *const c_void,
    edges: *const c_void,
    n: usize,
    mode: c_int,
) -> CUresult {
    // SAFETY: the program's arguments.
    let r = unsafe { real(stream, graph, deps, edges, n, mode) };
    if r == CUDA_SUCCESS {
        state().captures.fetch_add(1, Ordering::Relaxed);
    }
    r
}

pub unsafe fn end_capture(
    real: Real<unsafe extern "C" fn(CUstream, *mut *mut c_void) -> CUresult>,
    stream: CUstream,
    graph: *mut *mut c_void,
) -> CUresult {
    // The capture ends whatever the result (an invalidated capture ends with an error).
    let _ = state()
        .captures
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    // SAFETY: the program's arguments.
    unsafe { real(stream, graph) }
}

// ---- waits and teardown -------------------------------------------------------------------

pub unsafe fn ctx_synchronize(real: Real<unsafe extern "C" fn() -> CUresult>) -> CUresult {
    // SAFETY: no arguments.
    let r = unsafe { real() };
    records::poll_all(state());
    r
}

pub unsafe fn stream_synchronize(
    real: Real<unsafe extern "C" fn(CUstream) -> CUresult>,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the program's argument.
    let r = unsafe { real(stream) };
    records::poll_all(state());
    r
}

pub unsafe fn event_synchronize(
    real: Real<unsafe extern "C" fn(CUevent) -> CUresult>,
    event: CUevent,
) -> CUresult {
    // SAFETY: the program's argument.
    let r = unsafe { real(event) };
    records::poll_all(state());
    r
}

pub unsafe fn ctx_destroy(
    real: Real<unsafe extern "C" fn(CUcontext) -> CUresult>,
    ctx: CUcontext,
) -> CUresult {
    let s = state();
    records::drain_context(s, ctx);
    // SAFETY: the program's argument.
    let r = unsafe { real(ctx) };
    if r == CUDA_SUCCESS {
        s.forget_context(ctx as usize);
    }
    r
}

/// `cuDevicePrimaryCtxRelease` and `cuDevicePrimaryCtxReset`: the primary context may go
/// away, so its launches are read first, and what the interposer keeps for it is forgotten if
/// it did go (a release that leaves it retained elsewhere changes nothing).
pub unsafe fn primary_ctx_release(
    real: Real<unsafe extern "C" fn(CUdevice) -> CUresult>,
    dev: CUdevice,
) -> CUresult {
    let s = state();
    let ctx = active_primary(dev);
    if let Some(ctx) = ctx {
        records::drain_context(s, ctx);
    }
    // SAFETY: the program's argument.
    let r = unsafe { real(dev) };
    if let Some(ctx) = ctx.filter(|_| active_primary(dev).is_none()) {
        s.forget_context(ctx as usize);
    }
    r
}

/// The primary context of `dev`, when it is active (never made active by asking).
fn active_primary(dev: CUdevice) -> Option<CUcontext> {
    let (mut flags, mut active): (c_uint, c_int) = (0, 0);
    // SAFETY: valid out-pointers.
    let r = unsafe { call!(cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active)) };
    if r != CUDA_SUCCESS || active == 0 {
        return None;
    }
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the context is active, so retaining it creates nothing,
    // and the release below balances the retain.
    if unsafe { call!(cuDevicePrimaryCtxRetain(&mut ctx, dev)) } != CUDA_SUCCESS {
        return None;
    }
    if let Some(release) = ffi::real().cuDevicePrimaryCtxRelease_v2 {
        // SAFETY: balances the retain above.
        unsafe { release(dev) };
    }
    Some(ctx)
}
