//! The only place that calls the CUDA driver directly (`cudarc::driver::sys`/`result`).
//!
//! Everything above this module works with safe functions returning [`DriverError`]s that name
//! the call. Two rules hold here:
//!
//! - **No call before [`ensure_loaded`]**. cudarc's dynamic loader panics when `libcuda.so.1`
//!   is missing; we load it with `libloading` first, so a machine without a driver gets
//!   [`DriverMissing`] (the runtime's `Error::DriverNotFound`) instead of a panic. (glibc's
//!   `dlopen` of the same soname later returns the object already loaded, so cudarc then finds
//!   ours; under the application's `dynamic-linking` the process linked it already.)
//! - **Only calls every supported driver has go through cudarc**; the others go through
//!   [`entry`], which resolves them from the driver itself and reports a missing one as a typed
//!   error naming the version needed.
//! - Every `unsafe` block says why it is sound.

pub mod codes;
pub mod entry;
mod error;

pub use entry::{CudaVersion, EntryPoint, MissingEntryPoint};
pub use error::{DriverError, DriverMissing};

use std::ffi::{c_int, c_void, CString};

use cudacheck_core::limits::{ArchLimits, LimitsOrigin};
use cudacheck_core::{Arch, Dim3};
use cudarc::driver::sys::{
    self, CUcontext, CUdevice, CUdevice_attribute as DevAttr, CUfunction,
    CUfunction_attribute as FnAttr, CUmodule, CUresult, CUstream, CUstreamCaptureMode,
};

fn check(call: &'static str, r: CUresult) -> Result<(), DriverError> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(()),
        other => Err(DriverError::new(call, other as u32)),
    }
}

/// Loads `libcuda.so.1` once per process (kept loaded for the process's life) so that later
/// cudarc calls cannot panic for want of it, and resolves the entry points that depend on the
/// driver's version ([`entry`]).
///
/// # Errors
///
/// [`DriverMissing`] with the loader's reason.
pub fn ensure_loaded() -> Result<(), DriverMissing> {
    entry::driver().map(|_| ())
}

/// The driver's version (`cuDriverGetVersion`, or the simulated one, see [`entry`]).
///
/// # Errors
///
/// [`DriverMissing`] with the loader's reason.
pub fn driver_version() -> Result<CudaVersion, DriverMissing> {
    entry::driver().map(|d| d.version)
}

/// What this driver lacks of `e`: `None` when it has it, or when there is no driver (every
/// call then fails with [`DriverMissing`] first).
pub fn missing(e: EntryPoint) -> Option<MissingEntryPoint> {
    entry::driver().ok()?.require(e).err()
}

/// The attributes of a device that the limits and the runtime need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub arch: Arch,
    pub total_memory: u64,
    pub attrs: DeviceAttributes,
}

/// Raw `cuDeviceGetAttribute` values, kept apart from [`ArchLimits`] so that turning them into
/// limits ([`limits_from_attributes`]) is pure and testable without a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttributes {
    pub max_threads_per_block: u32,
    pub max_block_dim: [u32; 3],
    pub max_grid_dim: [u32; 3],
    pub warp_size: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub registers_per_sm: u32,
    pub max_registers_per_block: u32,
    pub shared_per_sm: u32,
    pub shared_per_block: u32,
    pub shared_per_block_opt_in: u32,
    pub reserved_shared_per_block: u32,
    pub cluster_launch: bool,
    pub sm_count: u32,
}

/// The device's limits: the table of its architecture, overwritten with every value the device
/// reports, and named after the device.
pub fn limits_from_attributes(
    arch: Arch,
    ordinal: usize,
    name: &str,
    a: &DeviceAttributes,
) -> ArchLimits {
    let mut l = ArchLimits::for_arch(arch);
    l.origin = LimitsOrigin::Device {
        ordinal: ordinal as u32,
        name: name.to_string(),
    };
    // A zero means the attribute is unknown to this driver; keep the table's value then.
    let set = |field: &mut u32, v: u32| {
        if v != 0 {
            *field = v;
        }
    };
    set(&mut l.max_threads_per_block, a.max_threads_per_block);
    set(&mut l.max_block_dim.x, a.max_block_dim[0]);
    set(&mut l.max_block_dim.y, a.max_block_dim[1]);
    set(&mut l.max_block_dim.z, a.max_block_dim[2]);
    set(&mut l.max_grid_dim.x, a.max_grid_dim[0]);
    set(&mut l.max_grid_dim.y, a.max_grid_dim[1]);
    set(&mut l.max_grid_dim.z, a.max_grid_dim[2]);
    set(&mut l.warp_size, a.warp_size);
    set(&mut l.max_threads_per_sm, a.max_threads_per_sm);
    l.max_warps_per_sm = l.max_threads_per_sm / l.warp_size.max(1);
    set(&mut l.max_blocks_per_sm, a.max_blocks_per_sm);
    set(&mut l.registers_per_sm, a.registers_per_sm);
    set(&mut l.max_registers_per_block, a.max_registers_per_block);
    set(&mut l.shared_per_sm, a.shared_per_sm);
    set(&mut l.shared_per_block_default, a.shared_per_block);
    set(&mut l.shared_per_block_opt_in, a.shared_per_block_opt_in);
    // Zero is a real value for the reservation (Volta and Turing reserve nothing).
    l.reserved_shared_per_block = a.reserved_shared_per_block;
    if !a.cluster_launch {
        l.max_cluster_size = None;
    }
    l
}

fn attr(dev: CUdevice, a: DevAttr) -> Result<u32, DriverError> {
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer for one int; `dev` came from cuCtxGetDevice.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, a, dev)
    })?;
    Ok(v.max(0) as u32)
}

/// Queries everything [`DeviceInfo`] holds about `dev`.
pub fn device_info(dev: CUdevice, ordinal: usize) -> Result<DeviceInfo, DriverError> {
    let major = attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let attrs = DeviceAttributes {
        max_threads_per_block: attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dim: [
            attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        warp_size: attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        max_threads_per_sm: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )?,
        max_blocks_per_sm: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
        )?,
        registers_per_sm: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        )?,
        max_registers_per_block: attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        shared_per_sm: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        )?,
        shared_per_block: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        )?,
        shared_per_block_opt_in: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?,
        reserved_shared_per_block: attr(
            dev,
            DevAttr::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        )?,
        cluster_launch: attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)? != 0,
        sm_count: attr(dev, DevAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
    };
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: `buf` holds 256 chars and we pass its length; the driver NUL-terminates.
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev)
    })?;
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let name = String::from_utf8_lossy(&bytes).into_owned();
    let mut total: usize = 0;
    // SAFETY: `total` is a valid out-pointer.
    check("cuDeviceTotalMem", unsafe {
        sys::cuDeviceTotalMem_v2(&mut total, dev)
    })?;
    Ok(DeviceInfo {
        ordinal,
        name,
        arch: Arch::new(major, minor),
        total_memory: total as u64,
        attrs,
    })
}

/// A kernel's attributes as the driver reports them (`cuFuncGetAttribute`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionAttributes {
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`.
    pub num_regs: u32,
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: static shared memory.
    pub shared_size_bytes: u32,
    /// `CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES`.
    pub const_size_bytes: u32,
    /// `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: local memory (stack frame) per thread.
    pub local_size_bytes: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the largest block this kernel can launch with
    /// on this device (registers and `__launch_bounds__` included).
    pub max_threads_per_block: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: the current dynamic shared opt-in.
    pub max_dynamic_shared_size_bytes: u32,
    /// `CU_FUNC_ATTRIBUTE_PTX_VERSION` (major x 10 + minor).
    pub ptx_version: u32,
    /// `CU_FUNC_ATTRIBUTE_BINARY_VERSION` (major x 10 + minor).
    pub binary_version: u32,
}

fn fattr(f: CUfunction, a: FnAttr) -> Result<u32, DriverError> {
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer; `f` is a live function handle of a loaded module.
    check("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(&mut v, a, f)
    })?;
    Ok(v.max(0) as u32)
}

impl Function {
    /// A function handle the application got from the driver (cudarc's
    /// `CudaFunction::cu_function`).
    ///
    /// # Safety
    ///
    /// `handle` is a live function of a loaded module, and stays so while the `Function` is
    /// used (the caller keeps the module alive).
    pub unsafe fn from_raw(handle: CUfunction) -> Function {
        Function { handle }
    }
}

/// A loaded kernel's parameter list (`cuFuncGetParamInfo`, CUDA 12.4): `Ok(None)` when this
/// driver cannot tell.
pub fn param_slots(f: &Function) -> Result<Option<Vec<cudacheck_core::ParamSlot>>, DriverError> {
    let Some(info) = entry::driver().ok().and_then(|d| d.param_info) else {
        return Ok(None);
    };
    let mut slots = Vec::new();
    // No kernel takes more than 4 KiB of parameters (32 KiB since CUDA 12.1): at most 32768
    // one-byte parameters, a bound that keeps a misbehaving driver from looping forever.
    for index in 0..32_768usize {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: `info` is the driver's cuFuncGetParamInfo (resolved by `entry`); `f` is a
        // live function; both out-pointers are valid.
        let r = unsafe { info(f.handle, index, &mut offset, &mut size) };
        match r {
            CUresult::CUDA_SUCCESS => slots.push(cudacheck_core::ParamSlot {
                ordinal: index as u32,
                offset: offset as u32,
                size: size as u32,
            }),
            // Past the last parameter the driver answers CUDA_ERROR_INVALID_VALUE.
            CUresult::CUDA_ERROR_INVALID_VALUE => break,
            other => return Err(DriverError::new("cuFuncGetParamInfo", other as u32)),
        }
    }
    Ok(Some(slots))
}

/// Reads a loaded kernel's attributes.
pub fn function_attributes(f: &Function) -> Result<FunctionAttributes, DriverError> {
    let h = f.handle;
    Ok(FunctionAttributes {
        num_regs: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        shared_size_bytes: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        const_size_bytes: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
        local_size_bytes: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        max_threads_per_block: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_dynamic_shared_size_bytes: fattr(
            h,
            FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        )?,
        ptx_version: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
        binary_version: fattr(h, FnAttr::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
    })
}

/// Opts the kernel in to `bytes` of dynamic shared memory per block
/// (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`).
pub fn set_max_dynamic_shared(f: &Function, bytes: u32) -> Result<(), DriverError> {
    // SAFETY: `f.handle` is a live function handle; the value is a plain int.
    check("cuFuncSetAttribute", unsafe {
        sys::cuFuncSetAttribute(
            f.handle,
            FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes.min(i32::MAX as u32) as c_int,
        )
    })
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: the driver's own occupancy answer.
pub fn max_active_blocks(
    f: &Function,
    block_threads: u32,
    dynamic_shared: u32,
) -> Result<u32, DriverError> {
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer; `f.handle` is live.
    check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
        sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut n,
            f.handle,
            block_threads.min(i32::MAX as u32) as c_int,
            dynamic_shared as usize,
        )
    })?;
    Ok(n.max(0) as u32)
}

/// A module loaded from a CUBIN into the context current on the loading thread. Unloaded on
/// drop unless [`Module::forget`] was called (after a context reset the handle is dead).
#[derive(Debug)]
pub struct Module {
    handle: CUmodule,
    forgotten: std::sync::atomic::AtomicBool,
}

// SAFETY: a CUmodule is a handle the driver lets any thread use (the driver API is thread-safe);
// we never dereference it ourselves.
unsafe impl Send for Module {}
// SAFETY: as for Send; shared use only passes the handle to thread-safe driver calls.
unsafe impl Sync for Module {}

impl Module {
    /// `cuModuleLoadData` of a CUBIN image. The caller must have made the target context current
    /// (`CudaContext::bind_to_thread`).
    pub fn load_cubin(image: &[u8]) -> Result<Module, DriverError> {
        // cuModuleLoadData reads the ELF header to learn the image's size; an image shorter
        // than a header would be read past its end.
        if image.len() < 64 || &image[..4] != b"\x7fELF" {
            return Err(DriverError::new("cuModuleLoadData", 200));
        }
        // SAFETY: `image` is a complete ELF image (checked above; NVRTC produced it and the
        // driver bounds itself by the ELF's own section table), alive for the call.
        unsafe { Self::load_data(image.as_ptr() as *const c_void) }
    }

    /// Loads PTX text (`cuModuleLoadData`): the driver's JIT assembles it for the context's
    /// device, as a whole program.
    pub fn load_ptx(ptx: &str) -> Result<Module, DriverError> {
        let text = CString::new(ptx).map_err(|_| DriverError::new("cuModuleLoadData", 218))?;
        // SAFETY: `text` is a NUL-terminated string alive for the call (the driver reads PTX
        // up to its NUL).
        unsafe { Self::load_data(text.as_ptr() as *const c_void) }
    }

    /// `cuModuleLoadData` of `image`.
    ///
    /// # Safety
    /// `image` points to a CUBIN whose ELF headers bound it, or to NUL-terminated PTX, alive
    /// for the call.
    unsafe fn load_data(image: *const c_void) -> Result<Module, DriverError> {
        let mut handle: CUmodule = std::ptr::null_mut();
        // SAFETY: the caller's contract for `image`; `handle` is a valid out-pointer.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut handle, image)
        })?;
        Ok(Module {
            handle,
            forgotten: false.into(),
        })
    }

    /// The kernel `symbol` (`cuModuleGetFunction`).
    pub fn function(&self, symbol: &str) -> Result<Function, DriverError> {
        // A symbol with an interior NUL cannot name anything in the module.
        let c = CString::new(symbol).map_err(|_| DriverError::new("cuModuleGetFunction", 500))?;
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: `self.handle` is a live module, `c` a NUL-terminated string alive for the
        // call, `f` a valid out-pointer.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, self.handle, c.as_ptr())
        })?;
        Ok(Function { handle: f })
    }

    /// The device address of the module variable `symbol` and its size in bytes
    /// (`cuModuleGetGlobal`).
    pub fn global(&self, symbol: &str) -> Result<(u64, usize), DriverError> {
        let c = CString::new(symbol).map_err(|_| DriverError::new("cuModuleGetGlobal", 500))?;
        let (mut ptr, mut bytes): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: `self.handle` is a live module, `c` a NUL-terminated string alive for the
        // call, `ptr` and `bytes` valid out-pointers.
        check("cuModuleGetGlobal", unsafe {
            sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.handle, c.as_ptr())
        })?;
        Ok((ptr, bytes))
    }

    /// Do not unload on drop: the module died with its context (a reset).
    pub fn forget(&self) {
        self.forgotten
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if self.forgotten.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        // SAFETY: the handle is live (not forgotten) and unloaded once, here. A failure (e.g. a
        // poisoned context) only leaks the module.
        let _ = unsafe { sys::cuModuleUnload(self.handle) };
    }
}

/// A kernel handle inside a [`Module`]; valid while the module is.
#[derive(Clone, Copy, Debug)]
pub struct Function {
    handle: CUfunction,
}

// SAFETY: see Module; a CUfunction is a driver handle usable from any thread.
unsafe impl Send for Function {}
// SAFETY: see Module.
unsafe impl Sync for Function {}

/// A launch's geometry in the driver's terms.
#[derive(Clone, Copy, Debug)]
pub struct RawConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
    pub cluster: Option<Dim3>,
}

/// Launches `f` on `stream`: `cuLaunchKernel`, or `cuLaunchKernelEx` with a cluster attribute
/// when a cluster is given.
///
/// # Safety
///
/// - `f` belongs to a module loaded in `stream`'s context, which is current on this thread;
/// - `params` holds one pointer per kernel parameter, in order, each pointing at a live value
///   of exactly the parameter's size (the caller checked sizes against the CUBIN);
/// - the kernel's memory accesses stay inside the buffers passed (what cudarc's launch asks).
#[inline]
pub unsafe fn launch(
    f: &Function,
    cfg: &RawConfig,
    stream: CUstream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    let params_ptr = if params.is_empty() {
        std::ptr::null_mut()
    } else {
        params.as_mut_ptr()
    };
    match cfg.cluster {
        None => {
            // SAFETY: the caller's contract above; the dims are plain values.
            check("cuLaunchKernel", unsafe {
                sys::cuLaunchKernel(
                    f.handle,
                    cfg.grid.x,
                    cfg.grid.y,
                    cfg.grid.z,
                    cfg.block.x,
                    cfg.block.y,
                    cfg.block.z,
                    cfg.shared_bytes,
                    stream,
                    params_ptr,
                    std::ptr::null_mut(),
                )
            })
        }
        Some(c) => {
            // SAFETY: an all-zero CUlaunchAttribute is valid (id 0 is IGNORE, the value a
            // plain-old-data union); we set its fields next.
            let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
                x: c.x,
                y: c.y,
                z: c.z,
            };
            let lc = sys::CUlaunchConfig {
                gridDimX: cfg.grid.x,
                gridDimY: cfg.grid.y,
                gridDimZ: cfg.grid.z,
                blockDimX: cfg.block.x,
                blockDimY: cfg.block.y,
                blockDimZ: cfg.block.z,
                sharedMemBytes: cfg.shared_bytes,
                hStream: stream,
                attrs: &mut attr,
                numAttrs: 1,
            };
            // Launch preparation refuses a cluster on a driver without cuLaunchKernelEx
            // (`require(EntryPoint::LaunchKernelEx)`); this only keeps the call total.
            let Some(launch_ex) = entry::driver().ok().and_then(|d| d.launch_ex) else {
                return Err(DriverError::new("cuLaunchKernelEx", codes::NOT_SUPPORTED));
            };
            // SAFETY: `lc` and `attr` live on this stack frame for the call; `launch_ex` is
            // the driver's cuLaunchKernelEx (resolved by `entry`); the rest is the caller's
            // contract.
            check("cuLaunchKernelEx", unsafe {
                launch_ex(&lc, f.handle, params_ptr, std::ptr::null_mut())
            })
        }
    }
}

/// `cuStreamQuery`: `Ok(true)` when all work is done, `Ok(false)` while it runs.
pub fn stream_query(stream: CUstream) -> Result<bool, DriverError> {
    // SAFETY: `stream` is a live stream handle of the current context (or null/per-thread).
    match unsafe { sys::cuStreamQuery(stream) } {
        CUresult::CUDA_SUCCESS => Ok(true),
        CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverError::new("cuStreamQuery", other as u32)),
    }
}

/// `cuStreamSynchronize`.
pub fn stream_synchronize(stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: `stream` is a live stream handle of the current context (or null/per-thread).
    check("cuStreamSynchronize", unsafe {
        sys::cuStreamSynchronize(stream)
    })
}

/// `cuMemGetInfo` in the current context: `(free, total)` bytes.
pub fn mem_get_info() -> Result<(u64, u64), DriverError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both are valid out-pointers; a context is current (the caller bound one).
    check("cuMemGetInfo", unsafe {
        sys::cuMemGetInfo_v2(&mut free, &mut total)
    })?;
    Ok((free as u64, total as u64))
}

/// `cuMemAlloc` in the current context: the address of `bytes` bytes of device memory, as a
/// plain number, so that holding it keeps no context alive (bounds checking keeps one such
/// block per context; it goes with its context).
pub fn mem_alloc(bytes: usize) -> Result<u64, DriverError> {
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: `ptr` is a valid out-pointer; a context is current (the caller bound one).
    check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })?;
    Ok(ptr)
}

/// `cuMemFree`.
///
/// # Safety
///
/// `ptr` came from [`mem_alloc`] in the current context, is not freed yet, and no queued work
/// uses it any more.
pub unsafe fn mem_free(ptr: u64) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemFree", unsafe { sys::cuMemFree_v2(ptr) })
}

/// `cuMemcpyDtoHAsync` of `dst.len()` bytes at device address `src` into `dst`. To pageable
/// memory the call returns only once the copy is done, so `dst` holds the bytes on `Ok`.
///
/// # Safety
///
/// `src` is device memory of the stream's context, current on this thread, with at least
/// `dst.len()` bytes.
pub unsafe fn memcpy_dtoh_async(
    dst: &mut [u8],
    src: u64,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: `dst` is a live, exclusively borrowed slice for the call; the rest is the
    // caller's contract.
    check("cuMemcpyDtoHAsync", unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, dst.len(), stream)
    })
}

/// Makes `ctx` current on this thread unless it already is: one `cuCtxGetCurrent` on the
/// hot path. (cudarc's `bind_to_thread` does the same, after an atomic swap of its own error
/// state that a launch does not need.)
#[inline]
pub fn make_current(ctx: CUcontext) -> Result<(), DriverError> {
    let mut cur: CUcontext = std::ptr::null_mut();
    // SAFETY: `cur` is a valid out-pointer; the call only reads this thread's current context.
    check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
    if cur == ctx {
        return Ok(());
    }
    // SAFETY: `ctx` is a live context handle: the caller holds the `CudaContext` it came from.
    check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })
}

/// Where a stream stands with respect to stream capture (`cuStreamGetCaptureInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// Work queued on the stream runs.
    None,
    /// Work queued on the stream is recorded into a graph: capture sequence `id`.
    Active { id: u64 },
    /// The capture was invalidated by an illegal call; `cuStreamEndCapture` will fail.
    Invalidated,
}

/// Whether `stream` is being captured, and the capture sequence's id
/// (`cuStreamGetCaptureInfo`, in the newest form this driver has; see [`entry`]).
pub fn capture_status(stream: CUstream) -> Result<Capture, DriverError> {
    let query = entry::driver()
        .ok()
        .and_then(|d| d.capture)
        .ok_or_else(|| DriverError::new("cuStreamGetCaptureInfo", codes::NOT_SUPPORTED))?;
    let mut status: c_int = 0;
    let mut id: u64 = 0;
    let null: *mut c_void = std::ptr::null_mut();
    // SAFETY: each pointer is the driver's own function of that form (resolved by `entry`);
    // `status` and `id` are valid out-pointers, the other outputs are optional and null;
    // `stream` is a live stream of the current context.
    let code = unsafe {
        match query {
            entry::CaptureQuery::V3(f) => f(
                stream,
                &mut status,
                &mut id,
                null,
                null,
                null,
                std::ptr::null_mut(),
            ),
            entry::CaptureQuery::V2(f) => f(
                stream,
                &mut status,
                &mut id,
                null,
                null,
                std::ptr::null_mut(),
            ),
            entry::CaptureQuery::IsCapturing(f) => f(stream, &mut status),
        }
    };
    check("cuStreamGetCaptureInfo", code)?;
    // CUstreamCaptureStatus: NONE 0, ACTIVE 1, INVALIDATED 2.
    Ok(match status {
        0 => Capture::None,
        1 => Capture::Active { id },
        _ => Capture::Invalidated,
    })
}

/// While alive, this thread may make calls that stream capture otherwise forbids (allocating,
/// loading a module, copying on a private stream): `cuThreadExchangeStreamCaptureMode` to
/// `RELAXED`, restored on drop. This is how NVIDIA's documentation has a library make such a
/// call while its caller captures; none of these calls touches the capturing stream.
pub struct RelaxedCapture {
    previous: CUstreamCaptureMode,
}

impl RelaxedCapture {
    pub fn enter() -> Result<RelaxedCapture, DriverError> {
        let mut mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: `mode` is a valid in/out pointer; the call swaps this thread's capture mode.
        check("cuThreadExchangeStreamCaptureMode", unsafe {
            sys::cuThreadExchangeStreamCaptureMode(&mut mode)
        })?;
        Ok(RelaxedCapture { previous: mode })
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        let mut mode = self.previous;
        // SAFETY: as in `enter`; a failure leaves the thread relaxed, which only permits more.
        let _ = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    }
}

/// `cuMemsetD8Async(dst, 0, bytes, stream)`; under capture, a memset node of the graph.
///
/// # Safety
///
/// `dst` is device memory of the stream's context, current on this thread, with at least
/// `bytes` bytes that no running kernel uses.
pub unsafe fn memset_zero_async(
    dst: u64,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(dst, 0, bytes, stream)
    })
}

/// `cuMemsetD8Async(dst, value, bytes, stream)`; under capture, a memset node of the graph.
///
/// # Safety
///
/// As [`memset_zero_async`].
pub unsafe fn memset_d8_async(
    dst: u64,
    value: u8,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(dst, value, bytes, stream)
    })
}

/// `cuMemcpyHtoD` of `src` to device address `dst`: done when the call returns.
///
/// # Safety
///
/// `dst` is device memory of the current context with at least `src.len()` bytes that no
/// running kernel writes.
pub unsafe fn memcpy_htod(dst: u64, src: &[u8]) -> Result<(), DriverError> {
    // SAFETY: `src` is live for the call; the rest is the caller's contract.
    check("cuMemcpyHtoD", unsafe {
        sys::cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), src.len())
    })
}

/// `cuCtxSynchronize`: waits for all work of the current context.
pub fn ctx_synchronize() -> Result<(), DriverError> {
    // SAFETY: no arguments; a context is current (the caller bound one).
    check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
}

/// `cuDeviceGet`: the device of ordinal `ordinal`.
pub fn device(ordinal: usize) -> Result<CUdevice, DriverError> {
    let mut dev: CUdevice = 0;
    let ordinal = c_int::try_from(ordinal).map_err(|_| DriverError::new("cuDeviceGet", 101))?;
    // SAFETY: `dev` is a valid out-pointer; an unknown ordinal is an error, not UB.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut dev, ordinal)
    })?;
    Ok(dev)
}

/// `cuDeviceCanAccessPeer`: whether code on `dev` can access memory of `peer` directly.
pub fn can_access_peer(dev: CUdevice, peer: CUdevice) -> Result<bool, DriverError> {
    let mut can: c_int = 0;
    // SAFETY: `can` is a valid out-pointer; both devices came from the driver.
    check("cuDeviceCanAccessPeer", unsafe {
        sys::cuDeviceCanAccessPeer(&mut can, dev, peer)
    })?;
    Ok(can != 0)
}

/// `cuCtxEnablePeerAccess(peer, 0)` from the current context: allocations made with
/// `cuMemAlloc` in `peer` become accessible to kernels of the current context. Already enabled
/// is not an error.
pub fn enable_peer_access(peer: CUcontext) -> Result<(), DriverError> {
    // SAFETY: `peer` is a live context: the caller holds the `CudaContext` it came from; a
    // context is current (the caller bound the accessing one).
    match unsafe { sys::cuCtxEnablePeerAccess(peer, 0) } {
        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        other => Err(DriverError::new("cuCtxEnablePeerAccess", other as u32)),
    }
}

/// Grants device `accessor` read and write access to the allocations of `owner`'s current
/// memory pool (`cuDeviceGetMemPool`, then `cuMemPoolSetAccess`). Stream-ordered allocations
/// (`cuMemAllocAsync`, what cudarc allocates with where pools are supported) do not follow
/// `cuCtxEnablePeerAccess`: NVIDIA's programming guide, "Stream Ordered Memory Allocator",
/// device accessibility for multi-GPU support. Does nothing on a device without pools.
pub fn grant_pool_access(owner: CUdevice, accessor: usize) -> Result<(), DriverError> {
    if attr(owner, DevAttr::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? == 0 {
        return Ok(());
    }
    let Some((get_pool, set_access)) = entry::driver().ok().and_then(|d| d.pools) else {
        // Pools are supported (the attribute says so) but the driver exports no pool API:
        // nothing cudarc allocated can be in a pool either.
        return Ok(());
    };
    let mut pool: *mut c_void = std::ptr::null_mut();
    // SAFETY: `get_pool` is the driver's cuDeviceGetMemPool (resolved by `entry`); `pool` is a
    // valid out-pointer; `owner` came from the driver.
    check("cuDeviceGetMemPool", unsafe { get_pool(&mut pool, owner) })?;
    let id = c_int::try_from(accessor).map_err(|_| DriverError::new("cuMemPoolSetAccess", 101))?;
    let desc = entry::MemAccessDesc {
        location_type: entry::MEM_LOCATION_TYPE_DEVICE,
        location_id: id,
        flags: entry::MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: `set_access` is the driver's cuMemPoolSetAccess; `pool` is the device's live
    // pool; `desc` is one descriptor of cuda.h's layout on this stack frame, and the count
    // says one.
    check("cuMemPoolSetAccess", unsafe { set_access(pool, &desc, 1) })
}

/// `cuDevicePrimaryCtxReset`: destroys every allocation, module and stream of the device's
/// primary context in this process and clears its sticky error.
///
/// # Safety
///
/// Every handle created in the old context (buffers, modules, streams, events) is dead
/// afterwards; the caller must make sure none is used or freed later (see `cudacheck::recover`).
pub unsafe fn primary_ctx_reset(dev: CUdevice) -> Result<(), DriverError> {
    // SAFETY: `dev` is a valid device; the caller's contract covers the dead handles.
    check("cuDevicePrimaryCtxReset", unsafe {
        sys::cuDevicePrimaryCtxReset_v2(dev)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100_attrs() -> DeviceAttributes {
        DeviceAttributes {
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [2_147_483_647, 65535, 65535],
            warp_size: 32,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            registers_per_sm: 65536,
            max_registers_per_block: 65536,
            shared_per_sm: 233_472,
            shared_per_block: 49_152,
            shared_per_block_opt_in: 232_448,
            reserved_shared_per_block: 1024,
            cluster_launch: true,
            sm_count: 132,
        }
    }

    #[test]
    fn device_values_overwrite_the_table_and_name_the_device() {
        let mut a = h100_attrs();
        a.max_grid_dim[1] = 1000; // a made-up device with a smaller grid
        let l = limits_from_attributes(Arch::new(9, 0), 0, "NVIDIA H100 80GB HBM3", &a);
        assert_eq!(l.max_grid_dim.y, 1000);
        assert_eq!(l.shared_per_block_opt_in, 232_448);
        assert_eq!(l.max_cluster_size, Some(8));
        assert_eq!(l.origin.to_string(), "device 0 (NVIDIA H100 80GB HBM3)");
        // The real H100's attributes equal the sm_90 table, except for the name.
        let real = limits_from_attributes(Arch::new(9, 0), 0, "H100", &h100_attrs());
        let mut table = ArchLimits::for_arch(Arch::new(9, 0));
        table.origin = real.origin.clone();
        assert_eq!(real, table);
    }

    #[test]
    fn unknown_attributes_keep_the_table_and_no_cluster_launch_disables_clusters() {
        let a = DeviceAttributes {
            cluster_launch: false,
            ..DeviceAttributes::default()
        };
        let l = limits_from_attributes(Arch::new(8, 0), 1, "A100", &a);
        assert_eq!(l.max_threads_per_block, 1024);
        assert_eq!(l.max_cluster_size, None);
        assert_eq!(l.reserved_shared_per_block, 0);
    }

    #[test]
    fn a_truncated_image_is_refused_before_the_driver_sees_it() {
        let e = Module::load_cubin(b"\x7fELF").unwrap_err();
        assert_eq!(e.name, "CUDA_ERROR_INVALID_IMAGE");
        assert_eq!(e.call, "cuModuleLoadData");
    }
}
