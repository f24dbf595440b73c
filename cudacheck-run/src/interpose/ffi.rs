//! The driver as the interposer sees it: handle types, the entry points it hooks (declared once,
//! in [`driver_api!`]: each becomes a field of the real driver's table, an exported hook and a
//! row of [`HOOKED`]), the ones it only calls, and the real `libcuda.so.1` they come from.
//!
//! Every call into the real driver goes through [`real`]'s table; the exported hooks are the
//! only functions of this crate a program reaches, and each one passes straight through when
//! the interposer itself is running on the thread ([`Guard`]), so the engine's own driver calls
//! (and cudarc's inside it) are never checked, recorded or counted.

#![allow(non_snake_case, non_camel_case_types, clippy::upper_case_acronyms)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

pub type CUresult = c_uint;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUlibrary = *mut c_void;
pub type CUkernel = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;
pub type CUmemoryPool = *mut c_void;
pub type CUmemGenericAllocationHandle = u64;

pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
pub const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
pub const CUDA_ERROR_NOT_READY: CUresult = 600;

/// `CU_LAUNCH_PARAM_END`, `CU_LAUNCH_PARAM_BUFFER_POINTER`, `CU_LAUNCH_PARAM_BUFFER_SIZE`: the
/// markers of `cuLaunchKernel`'s `extra` array.
pub const LAUNCH_PARAM_END: usize = 0;
pub const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
pub const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

/// `CUlaunchAttributeID` values read from `cuLaunchKernelEx`'s configuration.
pub const LAUNCH_ATTRIBUTE_COOPERATIVE: c_uint = 2;
pub const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: c_uint = 4;

/// `CUlaunchAttribute`: an id and a 64-byte value union (the layout of cuda.h since 12.0).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUlaunchAttribute {
    pub id: c_uint,
    pub pad: [c_char; 4],
    pub value: [u32; 16],
}

/// `CUlaunchConfig`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUlaunchConfig {
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_mem_bytes: c_uint,
    pub stream: CUstream,
    pub attrs: *mut CUlaunchAttribute,
    pub num_attrs: c_uint,
}

/// `CUmemAllocationProp` is only passed through; its address suffices.
pub type CUmemAllocationPropPtr = *const c_void;

/// `CUdevice_attribute` values the interposer reads.
pub mod dev_attr {
    use std::ffi::c_int;
    pub const MAX_THREADS_PER_BLOCK: c_int = 1;
    pub const MAX_BLOCK_DIM_X: c_int = 2;
    pub const MAX_BLOCK_DIM_Y: c_int = 3;
    pub const MAX_BLOCK_DIM_Z: c_int = 4;
    pub const MAX_GRID_DIM_X: c_int = 5;
    pub const MAX_GRID_DIM_Y: c_int = 6;
    pub const MAX_GRID_DIM_Z: c_int = 7;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
    pub const WARP_SIZE: c_int = 10;
    pub const MAX_REGISTERS_PER_BLOCK: c_int = 12;
    pub const MULTIPROCESSOR_COUNT: c_int = 16;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    pub const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: c_int = 81;
    pub const MAX_REGISTERS_PER_MULTIPROCESSOR: c_int = 82;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 39;
    pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
    pub const MAX_BLOCKS_PER_MULTIPROCESSOR: c_int = 106;
    pub const RESERVED_SHARED_MEMORY_PER_BLOCK: c_int = 111;
    pub const CLUSTER_LAUNCH: c_int = 120;
}

/// `CUfunction_attribute` values the interposer reads and mirrors.
pub mod fn_attr {
    use std::ffi::c_int;
    pub const MAX_THREADS_PER_BLOCK: c_int = 0;
    pub const SHARED_SIZE_BYTES: c_int = 1;
    pub const CONST_SIZE_BYTES: c_int = 2;
    pub const LOCAL_SIZE_BYTES: c_int = 3;
    pub const NUM_REGS: c_int = 4;
    pub const MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
    pub const PREFERRED_SHARED_MEMORY_CARVEOUT: c_int = 9;
}

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The interposer is running on this thread: driver calls it makes pass through its own hooks
/// unchecked. Held by every hook for the length of its work.
pub struct Guard(());

impl Guard {
    /// Whether the interposer is already running on this thread.
    pub fn inside() -> bool {
        DEPTH.with(|d| d.get() > 0)
    }

    pub fn enter() -> Guard {
        DEPTH.with(|d| d.set(d.get() + 1));
        Guard(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The C library's own `dlsym`, behind the interposer's. glibc versions it (`GLIBC_2.34`, and
/// `GLIBC_2.2.5` before 2.34 moved it from libdl into libc); `dlvsym` is not interposed.
pub fn real_dlsym() -> Option<DlsymFn> {
    static REAL: OnceLock<Option<usize>> = OnceLock::new();
    let p = REAL.get_or_init(|| {
        for version in [c"GLIBC_2.34", c"GLIBC_2.2.5", c"GLIBC_2.17"] {
            // SAFETY: `dlvsym` with RTLD_NEXT and NUL-terminated names only looks a symbol up.
            let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
            if !p.is_null() {
                return Some(p as usize);
            }
        }
        None
    });
    // SAFETY: the address is glibc's `dlsym`, whose signature this is.
    p.map(|p| unsafe { std::mem::transmute::<usize, DlsymFn>(p) })
}

/// Looks `name` up in `lib` through the C library's own `dlsym` (never the interposer's).
///
/// # Safety
/// `lib` is a handle from `dlopen` (or a pseudo-handle), `name` NUL-terminated.
pub unsafe fn lookup(lib: *mut c_void, name: &CStr) -> *mut c_void {
    match real_dlsym() {
        // SAFETY: as the caller promises.
        Some(f) => unsafe { f(lib, name.as_ptr()) },
        None => std::ptr::null_mut(),
    }
}

/// The real driver library, opened once (it is usually open already: the program linked it,
/// or opened it, before calling anything the interposer hooks).
fn real_lib() -> *mut c_void {
    static LIB: OnceLock<usize> = OnceLock::new();
    *LIB.get_or_init(|| {
        for name in [c"libcuda.so.1", c"libcuda.so"] {
            // SAFETY: dlopen with a NUL-terminated name; RTLD_NOLOAD first so an open library
            // is found without loading another copy.
            let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if !h.is_null() {
                return h as usize;
            }
            // SAFETY: as above.
            let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !h.is_null() {
                return h as usize;
            }
        }
        0
    }) as *mut c_void
}

macro_rules! driver_api {
    (
        hooked { $( fn $h:ident ( $($ha:ident : $ht:ty),* $(,)? ) => $handler:path; )* }
        used { $( fn $u:ident ( $($ua:ident : $ut:ty),* $(,)? ); )* }
    ) => {
        /// The real driver's entry points, `None` where this driver lacks one.
        pub struct Real {
            $( pub $h: Option<unsafe extern "C" fn($($ht),*) -> CUresult>, )*
            $( pub $u: Option<unsafe extern "C" fn($($ut),*) -> CUresult>, )*
        }

        impl Real {
            fn load(lib: *mut c_void) -> Real {
                Real {
                    $( $h: resolve(lib, concat!(stringify!($h), "\0")), )*
                    $( $u: resolve(lib, concat!(stringify!($u), "\0")), )*
                }
            }

            /// The real address of hooked entry point `name`, if the driver has it.
            fn hooked_address(&self, name: &str) -> Option<usize> {
                match name {
                    $( stringify!($h) => self.$h.map(|f| f as usize), )*
                    _ => None,
                }
            }
        }

        /// The exported hooks: each passes through to the real entry point when the interposer
        /// is running on the thread, else hands the real one and its arguments to its handler;
        /// a panic in a handler is a note and a plain call, never a crash of the program.
        pub mod hooks {
            use super::*;
            $(
                /// Interposed: see the handler.
                ///
                /// # Safety
                /// The driver entry point's own contract.
                #[cfg_attr(feature = "interpose", no_mangle)]
                pub unsafe extern "C" fn $h($($ha: $ht),*) -> CUresult {
                    let Some(real_fn) = real().$h else {
                        return CUDA_ERROR_NOT_INITIALIZED;
                    };
                    if Guard::inside() {
                        // SAFETY: the caller's arguments, to the entry point they were for.
                        return unsafe { real_fn($($ha),*) };
                    }
                    let _g = Guard::enter();
                    let run = std::panic::AssertUnwindSafe(|| {
                        // SAFETY: the caller's arguments and the real entry point.
                        unsafe { $handler(real_fn, $($ha),*) }
                    });
                    match std::panic::catch_unwind(run) {
                        Ok(r) => r,
                        Err(_) => {
                            super::super::state::note(concat!(
                                "an internal error in the handler of ",
                                stringify!($h),
                                "; the call went to the driver unchecked"
                            ));
                            // SAFETY: as above.
                            unsafe { real_fn($($ha),*) }
                        }
                    }
                }
            )*
        }

        /// Every hooked entry point's name and its hook's address.
        pub fn hooked() -> &'static [(&'static str, usize)] {
            static LIST: OnceLock<Vec<(&'static str, usize)>> = OnceLock::new();
            LIST.get_or_init(|| vec![ $( (stringify!($h), hooks::$h as *const () as usize), )* ])
        }
    };
}

fn resolve<F: Copy>(lib: *mut c_void, name: &'static str) -> Option<F> {
    if lib.is_null() {
        return None;
    }
    let name = CStr::from_bytes_with_nul(name.as_bytes()).ok()?;
    // SAFETY: `lib` is the driver's handle.
    let p = unsafe { lookup(lib, name) };
    if p.is_null() {
        return None;
    }
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<usize>());
    // SAFETY: `F` is the entry point's function pointer type (declared in `driver_api!`), and
    // `p` the driver's address of that entry point.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

use super::copies as c;
use super::handlers as h;

driver_api! {
    hooked {
        fn cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, cuda_version: c_int,
            flags: u64) => h::get_proc_address_v1;
        fn cuGetProcAddress_v2(symbol: *const c_char, pfn: *mut *mut c_void, cuda_version: c_int,
            flags: u64, status: *mut c_int) => h::get_proc_address_v2;

        fn cuModuleLoad(module: *mut CUmodule, fname: *const c_char) => h::module_load;
        fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void) => h::module_load_data;
        fn cuModuleLoadDataEx(module: *mut CUmodule, image: *const c_void, num_options: c_uint,
            options: *mut c_int, values: *mut *mut c_void) => h::module_load_data_ex;
        fn cuModuleLoadFatBinary(module: *mut CUmodule, fatbin: *const c_void)
            => h::module_load_fat_binary;
        fn cuModuleUnload(module: CUmodule) => h::module_unload;
        fn cuModuleGetFunction(f: *mut CUfunction, module: CUmodule, name: *const c_char)
            => h::module_get_function;
        fn cuLibraryLoadData(library: *mut CUlibrary, code: *const c_void,
            jit_options: *mut c_int, jit_values: *mut *mut c_void, num_jit: c_uint,
            lib_options: *mut c_int, lib_values: *mut *mut c_void, num_lib: c_uint)
            => h::library_load_data;
        fn cuLibraryLoadFromFile(library: *mut CUlibrary, fname: *const c_char,
            jit_options: *mut c_int, jit_values: *mut *mut c_void, num_jit: c_uint,
            lib_options: *mut c_int, lib_values: *mut *mut c_void, num_lib: c_uint)
            => h::library_load_from_file;
        fn cuLibraryUnload(library: CUlibrary) => h::library_unload;
        fn cuLibraryGetKernel(kernel: *mut CUkernel, library: CUlibrary, name: *const c_char)
            => h::library_get_kernel;
        fn cuLibraryGetModule(module: *mut CUmodule, library: CUlibrary)
            => h::library_get_module;
        fn cuKernelGetFunction(f: *mut CUfunction, kernel: CUkernel) => h::kernel_get_function;

        fn cuLaunchKernel(f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint,
            by: c_uint, bz: c_uint, shared: c_uint, stream: CUstream,
            params: *mut *mut c_void, extra: *mut *mut c_void) => h::launch_kernel;
        fn cuLaunchKernel_ptsz(f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint,
            by: c_uint, bz: c_uint, shared: c_uint, stream: CUstream,
            params: *mut *mut c_void, extra: *mut *mut c_void) => h::launch_kernel_ptsz;
        fn cuLaunchCooperativeKernel(f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint,
            bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint, stream: CUstream,
            params: *mut *mut c_void) => h::launch_cooperative;
        fn cuLaunchCooperativeKernel_ptsz(f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint,
            bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint, stream: CUstream,
            params: *mut *mut c_void) => h::launch_cooperative_ptsz;
        fn cuLaunchKernelEx(config: *const CUlaunchConfig, f: CUfunction,
            params: *mut *mut c_void, extra: *mut *mut c_void) => h::launch_kernel_ex;
        fn cuLaunchKernelEx_ptsz(config: *const CUlaunchConfig, f: CUfunction,
            params: *mut *mut c_void, extra: *mut *mut c_void) => h::launch_kernel_ex_ptsz;

        fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytes: usize) => h::mem_alloc;
        fn cuMemAllocPitch_v2(dptr: *mut CUdeviceptr, pitch: *mut usize, width: usize,
            height: usize, elem: c_uint) => h::mem_alloc_pitch;
        fn cuMemAllocManaged(dptr: *mut CUdeviceptr, bytes: usize, flags: c_uint)
            => h::mem_alloc_managed;
        fn cuMemAllocAsync(dptr: *mut CUdeviceptr, bytes: usize, stream: CUstream)
            => h::mem_alloc_async;
        fn cuMemAllocAsync_ptsz(dptr: *mut CUdeviceptr, bytes: usize, stream: CUstream)
            => h::mem_alloc_async;
        fn cuMemAllocFromPoolAsync(dptr: *mut CUdeviceptr, bytes: usize, pool: CUmemoryPool,
            stream: CUstream) => h::mem_alloc_from_pool_async;
        fn cuMemAllocFromPoolAsync_ptsz(dptr: *mut CUdeviceptr, bytes: usize,
            pool: CUmemoryPool, stream: CUstream) => h::mem_alloc_from_pool_async;
        fn cuMemHostAlloc(pp: *mut *mut c_void, bytes: usize, flags: c_uint)
            => h::mem_host_alloc;
        fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytes: usize) => h::mem_alloc_host;
        fn cuMemHostRegister_v2(p: *mut c_void, bytes: usize, flags: c_uint)
            => h::mem_host_register;
        fn cuMemHostUnregister(p: *mut c_void) => h::mem_host_unregister;
        fn cuMemFree_v2(dptr: CUdeviceptr) => h::mem_free;
        fn cuMemFreeHost(p: *mut c_void) => h::mem_free_host;
        fn cuMemFreeAsync(dptr: CUdeviceptr, stream: CUstream) => h::mem_free_async;
        fn cuMemFreeAsync_ptsz(dptr: CUdeviceptr, stream: CUstream) => h::mem_free_async;
        fn cuMemMap(ptr: CUdeviceptr, bytes: usize, offset: usize,
            handle: CUmemGenericAllocationHandle, flags: u64) => h::mem_map;
        fn cuMemUnmap(ptr: CUdeviceptr, bytes: usize) => h::mem_unmap;
        fn cuMemAddressReserve(ptr: *mut CUdeviceptr, bytes: usize, alignment: usize,
            addr: CUdeviceptr, flags: u64) => h::mem_address_reserve;
        fn cuMemAddressFree(ptr: CUdeviceptr, bytes: usize) => h::mem_address_free;

        fn cuStreamBeginCapture(stream: CUstream, mode: c_int) => h::begin_capture;
        fn cuStreamBeginCapture_ptsz(stream: CUstream, mode: c_int) => h::begin_capture;
        fn cuStreamBeginCapture_v2(stream: CUstream, mode: c_int) => h::begin_capture;
        fn cuStreamBeginCapture_v2_ptsz(stream: CUstream, mode: c_int) => h::begin_capture;
        fn cuStreamBeginCaptureToGraph(stream: CUstream, graph: *mut c_void,
            deps: *const c_void, edges: *const c_void, n: usize, mode: c_int)
            => h::begin_capture_to_graph;
        fn cuStreamBeginCaptureToGraph_ptsz(stream: CUstream, graph: *mut c_void,
            deps: *const c_void, edges: *const c_void, n: usize, mode: c_int)
            => h::begin_capture_to_graph;
        fn cuStreamEndCapture(stream: CUstream, graph: *mut *mut c_void) => h::end_capture;
        fn cuStreamEndCapture_ptsz(stream: CUstream, graph: *mut *mut c_void) => h::end_capture;

        fn cuCtxSynchronize() => h::ctx_synchronize;
        fn cuStreamSynchronize(stream: CUstream) => h::stream_synchronize;
        fn cuStreamSynchronize_ptsz(stream: CUstream) => h::stream_synchronize;
        fn cuEventSynchronize(event: CUevent) => h::event_synchronize;
        fn cuCtxDestroy_v2(ctx: CUcontext) => h::ctx_destroy;
        fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) => h::primary_ctx_release;
        fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) => h::primary_ctx_release;

        // Copies and memsets: what they write is marked for `--init` (`copies.rs`).
        fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, n: usize) => c::memcpy_htod;
        fn cuMemcpyHtoD_v2_ptds(dst: CUdeviceptr, src: *const c_void, n: usize) => c::memcpy_htod_ptds;
        fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, n: usize, stream: CUstream) => c::memcpy_htod_async;
        fn cuMemcpyHtoDAsync_v2_ptsz(dst: CUdeviceptr, src: *const c_void, n: usize, stream: CUstream) => c::memcpy_htod_async_ptsz;
        fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize) => c::memcpy_dtod;
        fn cuMemcpyDtoD_v2_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize) => c::memcpy_dtod_ptds;
        fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream) => c::memcpy_dtod_async;
        fn cuMemcpyDtoDAsync_v2_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream) => c::memcpy_dtod_async_ptsz;
        fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) => c::memcpy;
        fn cuMemcpy_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize) => c::memcpy_ptds;
        fn cuMemcpyAsync(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream) => c::memcpy_async;
        fn cuMemcpyAsync_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream) => c::memcpy_async_ptsz;
        fn cuMemcpyPeer(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize) => c::memcpy_peer;
        fn cuMemcpyPeer_ptds(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize) => c::memcpy_peer_ptds;
        fn cuMemcpyPeerAsync(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize, stream: CUstream) => c::memcpy_peer_async;
        fn cuMemcpyPeerAsync_ptsz(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize, stream: CUstream) => c::memcpy_peer_async_ptsz;
        fn cuMemcpy2D_v2(p: *const c::Memcpy2D) => c::memcpy_2d;
        fn cuMemcpy2DUnaligned_v2(p: *const c::Memcpy2D) => c::memcpy_2d;
        fn cuMemcpy2D_v2_ptds(p: *const c::Memcpy2D) => c::memcpy_2d_ptds;
        fn cuMemcpy2DUnaligned_v2_ptds(p: *const c::Memcpy2D) => c::memcpy_2d_ptds;
        fn cuMemcpy2DAsync_v2(p: *const c::Memcpy2D, stream: CUstream) => c::memcpy_2d_async;
        fn cuMemcpy2DAsync_v2_ptsz(p: *const c::Memcpy2D, stream: CUstream) => c::memcpy_2d_async_ptsz;
        fn cuMemcpy3D_v2(p: *const c::Memcpy3D) => c::memcpy_3d;
        fn cuMemcpy3D_v2_ptds(p: *const c::Memcpy3D) => c::memcpy_3d_ptds;
        fn cuMemcpy3DAsync_v2(p: *const c::Memcpy3D, stream: CUstream) => c::memcpy_3d_async;
        fn cuMemcpy3DAsync_v2_ptsz(p: *const c::Memcpy3D, stream: CUstream) => c::memcpy_3d_async_ptsz;
        fn cuMemsetD8_v2(dst: CUdeviceptr, v: u8, n: usize) => c::memset_d8;
        fn cuMemsetD8_v2_ptds(dst: CUdeviceptr, v: u8, n: usize) => c::memset_d8_ptds;
        fn cuMemsetD8Async(dst: CUdeviceptr, v: u8, n: usize, stream: CUstream) => c::memset_d8_async;
        fn cuMemsetD8Async_ptsz(dst: CUdeviceptr, v: u8, n: usize, stream: CUstream) => c::memset_d8_async_ptsz;
        fn cuMemsetD2D8_v2(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize) => c::memset_d2d8;
        fn cuMemsetD2D8_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize) => c::memset_d2d8_ptds;
        fn cuMemsetD2D8Async(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, stream: CUstream) => c::memset_d2d8_async;
        fn cuMemsetD2D8Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, stream: CUstream) => c::memset_d2d8_async_ptsz;
        fn cuMemsetD16_v2(dst: CUdeviceptr, v: u16, n: usize) => c::memset_d16;
        fn cuMemsetD16_v2_ptds(dst: CUdeviceptr, v: u16, n: usize) => c::memset_d16_ptds;
        fn cuMemsetD16Async(dst: CUdeviceptr, v: u16, n: usize, stream: CUstream) => c::memset_d16_async;
        fn cuMemsetD16Async_ptsz(dst: CUdeviceptr, v: u16, n: usize, stream: CUstream) => c::memset_d16_async_ptsz;
        fn cuMemsetD2D16_v2(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize) => c::memset_d2d16;
        fn cuMemsetD2D16_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize) => c::memset_d2d16_ptds;
        fn cuMemsetD2D16Async(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, stream: CUstream) => c::memset_d2d16_async;
        fn cuMemsetD2D16Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, stream: CUstream) => c::memset_d2d16_async_ptsz;
        fn cuMemsetD32_v2(dst: CUdeviceptr, v: u32, n: usize) => c::memset_d32;
        fn cuMemsetD32_v2_ptds(dst: CUdeviceptr, v: u32, n: usize) => c::memset_d32_ptds;
        fn cuMemsetD32Async(dst: CUdeviceptr, v: u32, n: usize, stream: CUstream) => c::memset_d32_async;
        fn cuMemsetD32Async_ptsz(dst: CUdeviceptr, v: u32, n: usize, stream: CUstream) => c::memset_d32_async_ptsz;
        fn cuMemsetD2D32_v2(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize) => c::memset_d2d32;
        fn cuMemsetD2D32_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize) => c::memset_d2d32_ptds;
        fn cuMemsetD2D32Async(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, stream: CUstream) => c::memset_d2d32_async;
        fn cuMemsetD2D32Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, stream: CUstream) => c::memset_d2d32_async_ptsz;
    }
    used {
        fn cuCtxGetCurrent(ctx: *mut CUcontext);
        fn cuCtxSetCurrent(ctx: CUcontext);
        fn cuCtxGetDevice(dev: *mut CUdevice);
        fn cuCtxPushCurrent_v2(ctx: CUcontext);
        fn cuCtxPopCurrent_v2(ctx: *mut CUcontext);
        fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, dev: CUdevice);
        fn cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int);
        fn cuDeviceGetAttribute(v: *mut c_int, attr: c_int, dev: CUdevice);
        fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice);
        fn cuFuncGetAttribute(v: *mut c_int, attr: c_int, f: CUfunction);
        fn cuFuncSetAttribute(f: CUfunction, attr: c_int, v: c_int);
        fn cuFuncGetName(name: *mut *const c_char, f: CUfunction);
        fn cuKernelGetName(name: *mut *const c_char, k: CUkernel);
        fn cuStreamGetCtx(stream: CUstream, ctx: *mut CUcontext);
        fn cuStreamIsCapturing(stream: CUstream, status: *mut c_int);
        fn cuStreamCreate(stream: *mut CUstream, flags: c_uint);
        fn cuEventCreate(event: *mut CUevent, flags: c_uint);
        fn cuEventRecord(event: CUevent, stream: CUstream);
        fn cuEventRecord_ptsz(event: CUevent, stream: CUstream);
        fn cuEventQuery(event: CUevent);
        fn cuEventDestroy_v2(event: CUevent);
        fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, module: CUmodule,
            name: *const c_char);
        fn cuLibraryGetGlobal(dptr: *mut CUdeviceptr, bytes: *mut usize, library: CUlibrary,
            name: *const c_char);
        fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, n: usize, stream: CUstream);
        fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize);
        fn cuMemHostGetDevicePointer_v2(dptr: *mut CUdeviceptr, p: *mut c_void, flags: c_uint);
        fn cuMemGetAddressRange_v2(base: *mut CUdeviceptr, bytes: *mut usize,
            dptr: CUdeviceptr);
    }
}

/// The real driver's table, loaded on first use. A program reaching a hook has the driver
/// loaded already; a table that found no driver has every entry `None`.
pub fn real() -> &'static Real {
    static REAL: OnceLock<Real> = OnceLock::new();
    REAL.get_or_init(|| Real::load(real_lib()))
}

/// Our hook for the driver entry point at real address `addr`, whatever name the program asked
/// for it by (`cuGetProcAddress("cuMemAlloc", 12000)` answers with `cuMemAlloc_v2`'s address).
pub fn hook_for_address(addr: usize) -> Option<usize> {
    use std::collections::HashMap;
    static MAP: OnceLock<HashMap<usize, usize>> = OnceLock::new();
    let map = MAP.get_or_init(|| {
        let r = real();
        hooked()
            .iter()
            .filter_map(|&(name, hook)| Some((r.hooked_address(name)?, hook)))
            .collect()
    });
    map.get(&addr).copied()
}

/// Calls a `used` entry point: `call!(cuCtxGetCurrent(&mut ctx))` is the driver's result, or
/// `CUDA_ERROR_NOT_INITIALIZED` when this driver lacks it.
macro_rules! call {
    ($f:ident ( $($a:expr),* $(,)? )) => {
        match $crate::interpose::ffi::real().$f {
            // SAFETY: the arguments are the entry point's, as each call site states.
            Some(f) => f($($a),*),
            None => $crate::interpose::ffi::CUDA_ERROR_NOT_INITIALIZED,
        }
    };
}
pub(crate) use call;

/// The interposed `dlsym`: the C library's answer, except that a hooked driver entry point the
/// program looks up in the driver library (cudarc's `dynamic-loading`, CuPy, the CUDA runtime's
/// `cuGetProcAddress`) is answered with its hook. Lookups by the interposer itself, and of any
/// other name, are the C library's own.
///
/// # Safety
/// `dlsym`'s contract. A program's `dlsym(RTLD_NEXT, ...)` is answered as if asked from this
/// library, which follows the program's in the search order: the same answer for every symbol
/// the interposer does not define.
#[cfg_attr(feature = "interpose", no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let Some(real_fn) = real_dlsym() else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's arguments, to the C library's `dlsym`.
    let p = unsafe { real_fn(handle, symbol) };
    if p.is_null() || symbol.is_null() || Guard::inside() {
        return p;
    }
    // SAFETY: `dlsym` takes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(symbol) }.to_bytes();
    if !name.starts_with(b"cu") {
        return p;
    }
    let _g = Guard::enter();
    match hook_for_address(p as usize) {
        Some(hook) => hook as *mut c_void,
        None => p,
    }
}
