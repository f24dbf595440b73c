//! Every `CUresult` the project can meet, with its name, what usually causes it, and whether it
//! poisons the context.
//!
//! Names and numbers follow `cuda.h` of CUDA 13.0 (`cudaError_enum`); the explanations condense
//! the [driver API's error documentation](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html#group__CUDA__TYPES_1gc6c391505e117393cc2558fff6bfc2e9)
//! into the causes a person can act on. The table is pure data so that it can be tested without
//! a driver; codes missing from it keep their raw number (see [`describe`]).

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeInfo {
    /// The numeric `CUresult`.
    pub code: u32,
    /// The enumerator's name, as `cuGetErrorName` returns it.
    pub name: &'static str,
    /// The usual causes, written for a person.
    pub explanation: &'static str,
    /// Whether the error is "sticky": the context can no longer be used and every later call
    /// in it fails the same way, until the primary context is reset (see `cudacheck::recover`).
    pub poisons: bool,
}

const fn row(code: u32, name: &'static str, poisons: bool, explanation: &'static str) -> CodeInfo {
    CodeInfo {
        code,
        name,
        explanation,
        poisons,
    }
}

/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const OUT_OF_MEMORY: u32 = 2;
/// `CUDA_ERROR_INVALID_CONTEXT`: no context is current, or not the one the call needs.
pub const INVALID_CONTEXT: u32 = 201;
/// `CUDA_ERROR_INVALID_HANDLE`: a handle of another context than the current one, among others.
pub const INVALID_HANDLE: u32 = 400;
/// `CUDA_ERROR_NOT_READY`: not an error, work is still running (`cuStreamQuery`).
pub const NOT_READY: u32 = 600;
/// `CUDA_ERROR_NOT_SUPPORTED`.
pub const NOT_SUPPORTED: u32 = 801;

/// The table, sorted by code (the test `table_is_sorted_and_unique` keeps it so, because
/// [`lookup`] searches it by bisection).
pub const CODES: &[CodeInfo] = &[
    row(1, "CUDA_ERROR_INVALID_VALUE", false,
        "an argument of the driver call was out of range or null; for a launch, often a block or grid dimension or shared-memory size the device cannot take"),
    row(2, "CUDA_ERROR_OUT_OF_MEMORY", false,
        "the device has not enough free memory for the allocation (or the launch's local memory); free buffers, use smaller ones, or check for leaks"),
    row(3, "CUDA_ERROR_NOT_INITIALIZED", false,
        "cuInit was not called; create a cudarc CudaContext before anything else"),
    row(4, "CUDA_ERROR_DEINITIALIZED", false,
        "the driver is shutting down (a call made during process exit, e.g. from a destructor of a static)"),
    row(5, "CUDA_ERROR_PROFILER_DISABLED", false, "the profiler is disabled for this process"),
    row(6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", false, "the profiler was not initialized"),
    row(7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", false, "the profiler was already started"),
    row(8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", false, "the profiler was already stopped"),
    row(34, "CUDA_ERROR_STUB_LIBRARY", false,
        "the libcuda.so found is the toolkit's stub library, not the real driver; remove the stubs directory from LD_LIBRARY_PATH"),
    row(36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", false,
        "the call needs a newer CUDA driver than the one installed; update the NVIDIA driver"),
    row(46, "CUDA_ERROR_DEVICE_UNAVAILABLE", false,
        "the device is busy or unavailable (exclusive-process compute mode held by another process, or the GPU is being reset)"),
    row(100, "CUDA_ERROR_NO_DEVICE", false,
        "no CUDA-capable device is visible; check nvidia-smi and CUDA_VISIBLE_DEVICES"),
    row(101, "CUDA_ERROR_INVALID_DEVICE", false,
        "the device ordinal does not name a visible device (check CUDA_VISIBLE_DEVICES)"),
    row(102, "CUDA_ERROR_DEVICE_NOT_LICENSED", false, "the device lacks the license for this operation"),
    row(200, "CUDA_ERROR_INVALID_IMAGE", false,
        "the module image is not a valid CUBIN/PTX/fatbin for the driver (corrupt bytes, or a CUBIN for another architecture)"),
    row(201, "CUDA_ERROR_INVALID_CONTEXT", false,
        "no context is current on this thread, or the context was destroyed (a buffer or module outliving its context, or used after recover)"),
    row(202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", false, "the context is already current"),
    row(205, "CUDA_ERROR_MAP_FAILED", false, "a map or register operation failed"),
    row(206, "CUDA_ERROR_UNMAP_FAILED", false, "an unmap or unregister operation failed"),
    row(207, "CUDA_ERROR_ARRAY_IS_MAPPED", false, "the array is mapped and cannot be destroyed"),
    row(208, "CUDA_ERROR_ALREADY_MAPPED", false, "the resource is already mapped"),
    row(209, "CUDA_ERROR_NO_BINARY_FOR_GPU", false,
        "the module has no code for this GPU's architecture: compile for the device's own sm_XY (cudacheck does by default) or include PTX"),
    row(210, "CUDA_ERROR_ALREADY_ACQUIRED", false, "the resource was already acquired"),
    row(211, "CUDA_ERROR_NOT_MAPPED", false, "the resource is not mapped"),
    row(212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", false, "the mapped resource is not an array"),
    row(213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", false, "the mapped resource is not a pointer"),
    row(214, "CUDA_ERROR_ECC_UNCORRECTABLE", true,
        "the GPU reported an uncorrectable ECC memory error; the hardware may be failing (check nvidia-smi -q)"),
    row(215, "CUDA_ERROR_UNSUPPORTED_LIMIT", false, "the context limit is not supported by this device"),
    row(216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", false,
        "the context is current on another thread and the device is in a mode that forbids sharing it"),
    row(217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", false, "peer access between these two devices is not supported"),
    row(218, "CUDA_ERROR_INVALID_PTX", false,
        "the driver's JIT compiler rejected the PTX (usually PTX from a newer compiler than the driver)"),
    row(219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", false, "the OpenGL/DirectX context is invalid"),
    row(220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", true, "an uncorrectable NVLink error was detected"),
    row(221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", false, "the PTX JIT compiler library was not found"),
    row(222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", false,
        "the PTX was produced by a newer toolkit than the driver supports: update the driver, or load a CUBIN for the device's exact architecture (cudacheck does)"),
    row(223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", false, "PTX JIT compilation is disabled (CUDA_DISABLE_PTX_JIT)"),
    row(224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", false, "the execution affinity is not supported"),
    row(225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", false,
        "the code uses device-side cudaDeviceSynchronize, which this device does not support"),
    row(226, "CUDA_ERROR_CONTAINED", true,
        "an error was contained by the hardware (e.g. a memory error in another process's work); the context must be reset"),
    row(300, "CUDA_ERROR_INVALID_SOURCE", false, "the device kernel source is invalid"),
    row(301, "CUDA_ERROR_FILE_NOT_FOUND", false, "the file given to the driver was not found"),
    row(302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", false, "a shared-object symbol could not be resolved"),
    row(303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", false, "a shared-object initialization failed"),
    row(304, "CUDA_ERROR_OPERATING_SYSTEM", false, "an operating-system call made by the driver failed"),
    row(400, "CUDA_ERROR_INVALID_HANDLE", false,
        "a handle (stream, event, module, function) is invalid: destroyed, from another context, or from before a context reset"),
    row(401, "CUDA_ERROR_ILLEGAL_STATE", false, "the resource is not in a state valid for this operation"),
    row(402, "CUDA_ERROR_LOSSY_QUERY", false, "the query's answer would lose information"),
    row(500, "CUDA_ERROR_NOT_FOUND", false,
        "a named symbol was not found: for cuModuleGetFunction, the kernel name is not in the module (a C++ kernel needs its mangled name or extern \"C\")"),
    row(600, "CUDA_ERROR_NOT_READY", false, "the queried work has not completed yet (not an error)"),
    row(700, "CUDA_ERROR_ILLEGAL_ADDRESS", true,
        "a kernel read or wrote memory outside any allocation: an index past a buffer's end, a wrong length or grid bound check, or a freed/foreign pointer"),
    row(701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", false,
        "the launch asked for more registers or shared memory per block than the SM has: fewer threads per block, less shared memory, or cap registers (max_registers)"),
    row(702, "CUDA_ERROR_LAUNCH_TIMEOUT", true,
        "the kernel ran longer than the display watchdog allows; split the work into shorter launches or use a GPU without a display"),
    row(703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", false, "the launch used an incompatible texturing mode"),
    row(704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", false, "peer access was already enabled"),
    row(705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", false, "peer access was not enabled"),
    row(708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", false, "the primary context is already initialized"),
    row(709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", false, "the context was destroyed (used after it was dropped or reset)"),
    row(710, "CUDA_ERROR_ASSERT", true,
        "a device-side assert() failed in a kernel; the kernel's printf output names the failed condition"),
    row(711, "CUDA_ERROR_TOO_MANY_PEERS", false, "too many peer mappings"),
    row(712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", false, "the host memory was already registered"),
    row(713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", false, "the host memory is not registered"),
    row(714, "CUDA_ERROR_HARDWARE_STACK_ERROR", true,
        "a kernel overflowed its call stack (deep recursion or large local arrays) or corrupted it"),
    row(715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", true,
        "a kernel executed an illegal instruction (often code built for another architecture, or a corrupted function pointer)"),
    row(716, "CUDA_ERROR_MISALIGNED_ADDRESS", true,
        "a kernel accessed memory at an address not aligned to the access size (e.g. a float4 load from a pointer not a multiple of 16, or a cast of a byte offset)"),
    row(717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", true,
        "a kernel used a generic address in the wrong state space (e.g. a shared-memory instruction on a global pointer)"),
    row(718, "CUDA_ERROR_INVALID_PC", true, "the program counter became invalid (a corrupted function pointer or return address)"),
    row(719, "CUDA_ERROR_LAUNCH_FAILED", true,
        "an exception occurred on the device while running a kernel (commonly a null or dangling pointer dereference)"),
    row(720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", false,
        "a cooperative launch had more blocks than can be resident at once; use fewer blocks (see the occupancy calculator)"),
    row(721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", true, "a kernel exited without freeing its tensor memory"),
    row(800, "CUDA_ERROR_NOT_PERMITTED", false, "the operation is not permitted"),
    row(801, "CUDA_ERROR_NOT_SUPPORTED", false, "the operation is not supported on this device or configuration"),
    row(802, "CUDA_ERROR_SYSTEM_NOT_READY", false, "the system is not ready (the fabric manager or the driver is still starting)"),
    row(803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", false,
        "the user-space driver (libcuda) and the kernel module versions differ; reboot or reinstall the driver"),
    row(804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", false, "the forward-compatibility driver does not support this device"),
    row(805, "CUDA_ERROR_MPS_CONNECTION_FAILED", false, "the MPS client could not connect to the MPS server"),
    row(806, "CUDA_ERROR_MPS_RPC_FAILURE", false, "the MPS remote procedure call failed"),
    row(807, "CUDA_ERROR_MPS_SERVER_NOT_READY", false, "the MPS server is not ready"),
    row(808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", false, "the MPS server has reached its maximum number of clients"),
    row(809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", false, "the MPS server has reached its maximum number of connections"),
    row(810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", true, "the MPS client was terminated by the server"),
    row(811, "CUDA_ERROR_CDP_NOT_SUPPORTED", false, "dynamic parallelism is not supported here"),
    row(812, "CUDA_ERROR_CDP_VERSION_MISMATCH", false, "dynamic-parallelism versions of the code and the driver differ"),
    row(900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", false, "the operation is not allowed while the stream is being captured into a graph"),
    row(901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", false, "the stream capture was invalidated by an earlier error"),
    row(902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", false, "two independent captures would merge"),
    row(903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", false, "the capture was not started in this stream"),
    row(904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", false, "a forked capture stream was not joined back"),
    row(905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", false, "the capture would create a dependency on uncaptured work"),
    row(906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", false, "the capture would use the legacy default stream implicitly"),
    row(907, "CUDA_ERROR_CAPTURED_EVENT", false, "the event was recorded in a capture and cannot be used this way"),
    row(908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", false, "the capture was ended from a different thread"),
    row(909, "CUDA_ERROR_TIMEOUT", false, "the wait timed out"),
    row(910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", false, "the graph update was not performed because it is not allowed"),
    row(911, "CUDA_ERROR_EXTERNAL_DEVICE", true, "an asynchronous error occurred in an external device"),
    row(912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", false,
        "the cluster size is invalid: larger than the device allows (8 portable), or the grid is not a multiple of it"),
    row(913, "CUDA_ERROR_FUNCTION_NOT_LOADED", false, "the function was not loaded (lazy loading)"),
    row(914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", false, "the resource type is invalid for this operation"),
    row(915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", false, "the resource configuration is invalid"),
    row(916, "CUDA_ERROR_KEY_ROTATION", false, "the confidential-computing key rotation failed"),
    row(999, "CUDA_ERROR_UNKNOWN", false, "an unknown internal driver error"),
];

/// The row for `code`, if the table has one.
pub fn lookup(code: u32) -> Option<&'static CodeInfo> {
    CODES
        .binary_search_by_key(&code, |r| r.code)
        .ok()
        .map(|i| &CODES[i])
}

/// Whether `code` poisons the context. Unknown codes are assumed not to: a wrong "healthy" costs
/// one more failing call, a wrong "poisoned" would refuse every later launch.
pub fn poisons(code: u32) -> bool {
    lookup(code).is_some_and(|r| r.poisons)
}

/// Name and explanation for `code`: from the table, or generic texts for codes it lacks (a
/// newer driver than this table); the raw number is always kept beside the name.
pub fn describe(code: u32) -> (&'static str, &'static str) {
    match lookup(code) {
        Some(r) => (r.name, r.explanation),
        None => (
            "an unknown CUresult",
            "a driver error this version of cudacheck does not know; see cuda.h's cudaError_enum",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        assert!(CODES.windows(2).all(|w| w[0].code < w[1].code));
    }

    #[test]
    fn names_match_the_numbers_of_cuda_h() {
        assert_eq!(
            lookup(700).map(|r| r.name),
            Some("CUDA_ERROR_ILLEGAL_ADDRESS")
        );
        assert_eq!(lookup(710).map(|r| r.name), Some("CUDA_ERROR_ASSERT"));
        assert_eq!(
            lookup(716).map(|r| r.name),
            Some("CUDA_ERROR_MISALIGNED_ADDRESS")
        );
        assert_eq!(
            lookup(719).map(|r| r.name),
            Some("CUDA_ERROR_LAUNCH_FAILED")
        );
        assert_eq!(lookup(2).map(|r| r.name), Some("CUDA_ERROR_OUT_OF_MEMORY"));
        assert_eq!(lookup(OUT_OF_MEMORY).map(|r| r.code), Some(2));
        assert_eq!(
            lookup(NOT_READY).map(|r| r.name),
            Some("CUDA_ERROR_NOT_READY")
        );
    }

    /// The table must agree with cudarc's bindings, which are generated from cuda.h itself.
    #[test]
    fn every_row_agrees_with_cudarc_bindings() {
        use cudarc::driver::sys::cudaError_enum as E;
        macro_rules! pairs {
            ($($n:ident),* $(,)?) => { [$((E::$n as u32, stringify!($n))),*] };
        }
        let from_header = pairs!(
            CUDA_ERROR_ALREADY_ACQUIRED,
            CUDA_ERROR_ALREADY_MAPPED,
            CUDA_ERROR_ARRAY_IS_MAPPED,
            CUDA_ERROR_ASSERT,
            CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
            CUDA_ERROR_CAPTURED_EVENT,
            CUDA_ERROR_CDP_NOT_SUPPORTED,
            CUDA_ERROR_CDP_VERSION_MISMATCH,
            CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
            CUDA_ERROR_CONTAINED,
            CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
            CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
            CUDA_ERROR_CONTEXT_IS_DESTROYED,
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
            CUDA_ERROR_DEINITIALIZED,
            CUDA_ERROR_DEVICE_NOT_LICENSED,
            CUDA_ERROR_DEVICE_UNAVAILABLE,
            CUDA_ERROR_ECC_UNCORRECTABLE,
            CUDA_ERROR_EXTERNAL_DEVICE,
            CUDA_ERROR_FILE_NOT_FOUND,
            CUDA_ERROR_FUNCTION_NOT_LOADED,
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
            CUDA_ERROR_HARDWARE_STACK_ERROR,
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
            CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
            CUDA_ERROR_ILLEGAL_ADDRESS,
            CUDA_ERROR_ILLEGAL_INSTRUCTION,
            CUDA_ERROR_ILLEGAL_STATE,
            CUDA_ERROR_INVALID_ADDRESS_SPACE,
            CUDA_ERROR_INVALID_CLUSTER_SIZE,
            CUDA_ERROR_INVALID_CONTEXT,
            CUDA_ERROR_INVALID_DEVICE,
            CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
            CUDA_ERROR_INVALID_HANDLE,
            CUDA_ERROR_INVALID_IMAGE,
            CUDA_ERROR_INVALID_PC,
            CUDA_ERROR_INVALID_PTX,
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            CUDA_ERROR_INVALID_RESOURCE_TYPE,
            CUDA_ERROR_INVALID_SOURCE,
            CUDA_ERROR_INVALID_VALUE,
            CUDA_ERROR_JIT_COMPILATION_DISABLED,
            CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
            CUDA_ERROR_KEY_ROTATION,
            CUDA_ERROR_LAUNCH_FAILED,
            CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            CUDA_ERROR_LAUNCH_TIMEOUT,
            CUDA_ERROR_LOSSY_QUERY,
            CUDA_ERROR_MAP_FAILED,
            CUDA_ERROR_MISALIGNED_ADDRESS,
            CUDA_ERROR_MPS_CLIENT_TERMINATED,
            CUDA_ERROR_MPS_CONNECTION_FAILED,
            CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
            CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
            CUDA_ERROR_MPS_RPC_FAILURE,
            CUDA_ERROR_MPS_SERVER_NOT_READY,
            CUDA_ERROR_NOT_FOUND,
            CUDA_ERROR_NOT_INITIALIZED,
            CUDA_ERROR_NOT_MAPPED,
            CUDA_ERROR_NOT_MAPPED_AS_ARRAY,
            CUDA_ERROR_NOT_MAPPED_AS_POINTER,
            CUDA_ERROR_NOT_PERMITTED,
            CUDA_ERROR_NOT_READY,
            CUDA_ERROR_NOT_SUPPORTED,
            CUDA_ERROR_NO_BINARY_FOR_GPU,
            CUDA_ERROR_NO_DEVICE,
            CUDA_ERROR_NVLINK_UNCORRECTABLE,
            CUDA_ERROR_OPERATING_SYSTEM,
            CUDA_ERROR_OUT_OF_MEMORY,
            CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
            CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
            CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
            CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
            CUDA_ERROR_PROFILER_ALREADY_STARTED,
            CUDA_ERROR_PROFILER_ALREADY_STOPPED,
            CUDA_ERROR_PROFILER_DISABLED,
            CUDA_ERROR_PROFILER_NOT_INITIALIZED,
            CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
            CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
            CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
            CUDA_ERROR_STREAM_CAPTURE_MERGE,
            CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
            CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
            CUDA_ERROR_STUB_LIBRARY,
            CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
            CUDA_ERROR_SYSTEM_NOT_READY,
            CUDA_ERROR_TENSOR_MEMORY_LEAK,
            CUDA_ERROR_TIMEOUT,
            CUDA_ERROR_TOO_MANY_PEERS,
            CUDA_ERROR_UNKNOWN,
            CUDA_ERROR_UNMAP_FAILED,
            CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
            CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
            CUDA_ERROR_UNSUPPORTED_LIMIT,
            CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        );
        assert_eq!(from_header.len(), CODES.len(), "every row is checked");
        for (code, name) in from_header {
            assert_eq!(lookup(code).map(|r| r.name), Some(name), "code {code}");
        }
    }

    #[test]
    fn sticky_errors_poison_and_launch_config_errors_do_not() {
        for code in [700, 702, 710, 714, 715, 716, 717, 718, 719] {
            assert!(poisons(code), "{code} must poison");
        }
        for code in [1, 2, 209, 400, 500, 701, 912] {
            assert!(!poisons(code), "{code} must not poison");
        }
        assert!(!poisons(123_456), "unknown codes are assumed harmless");
    }

    #[test]
    fn unknown_codes_keep_their_number() {
        let (name, why) = describe(4242);
        assert_eq!(name, "an unknown CUresult");
        assert!(why.contains("does not know"));
        let (name, why) = describe(700);
        assert_eq!(name, "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert!(why.contains("outside any allocation"));
    }
}
