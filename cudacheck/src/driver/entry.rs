//! The driver library itself, and the entry points whose presence depends on its version.
//!
//! cudacheck binds most of the driver through cudarc, whose bindings are generated for one CUDA
//! version: the application's choice (cudarc's `cuda-XXXXX` features), not ours. A binding
//! for an entry point the installed driver lacks panics on first call under cudarc's dynamic
//! loading. The few entry points cudacheck calls that are not in every CUDA 12 and 13 driver,
//! or that the CUDA 12 and 13 headers name differently, are therefore resolved here, from
//! the `libcuda.so.1` this module loaded, with our own function types: their absence is an
//! [`EntryPoint`] that a caller turns into a typed error naming the driver version needed
//! ([`MissingEntryPoint`]), never a panic. Every other call cudacheck makes exists, under
//! the same name, in every driver from CUDA 11.4 on (checked against cudarc's bindings for
//! 12.0 through 13.4).
//!
//! `CUDACHECK_SIMULATE_DRIVER_VERSION=11070` (a CUDA version as `cuDriverGetVersion` writes it)
//! makes this process behave as on a driver of that version: entry points newer than it are
//! treated as absent and that version is reported. It exists for tests of old-driver
//! behaviour on a machine with a new driver; it cannot make a new entry point appear.

use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::OnceLock;

use cudarc::driver::sys::{CUfunction, CUlaunchConfig, CUresult, CUstream};
use thiserror::Error;

use super::DriverMissing;

/// The soname the NVIDIA driver installs on Linux.
const LIBCUDA: &str = "libcuda.so.1";

/// The environment variable that simulates an older driver (module docs).
pub const SIMULATE_ENV_VAR: &str = "CUDACHECK_SIMULATE_DRIVER_VERSION";

/// A CUDA version as the driver API writes it: 1000 x major + 10 x minor (12040 is 12.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion(pub i32);

impl CudaVersion {
    /// The major version (12 for 12040).
    pub fn major(self) -> i32 {
        self.0 / 1000
    }

    /// The minor version (4 for 12040).
    pub fn minor(self) -> i32 {
        (self.0 % 1000) / 10
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

/// A driver entry point cudacheck calls only when it exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryPoint {
    /// `cuLaunchKernelEx`: launches with thread-block clusters.
    LaunchKernelEx,
    /// `cuStreamGetCaptureInfo_v3`, else `_v2`, else `cuStreamIsCapturing`: whether a stream
    /// is being captured, and the capture's id.
    StreamCaptureInfo,
    /// `cuFuncGetParamInfo`: the parameter list of a kernel the application loaded itself.
    FuncParamInfo,
}

impl EntryPoint {
    /// Every entry point of the table, for `cudacheck doctor`.
    pub const ALL: [EntryPoint; 3] = [
        EntryPoint::LaunchKernelEx,
        EntryPoint::StreamCaptureInfo,
        EntryPoint::FuncParamInfo,
    ];

    /// The symbol, as the driver exports it (the newest form cudacheck uses).
    pub fn symbol(self) -> &'static str {
        match self {
            EntryPoint::LaunchKernelEx => "cuLaunchKernelEx",
            EntryPoint::StreamCaptureInfo => "cuStreamGetCaptureInfo",
            EntryPoint::FuncParamInfo => "cuFuncGetParamInfo",
        }
    }

    /// The oldest driver that has it (in some form cudacheck can call).
    pub fn since(self) -> CudaVersion {
        match self {
            EntryPoint::LaunchKernelEx => CudaVersion(11080),
            // cuStreamIsCapturing, the last fallback.
            EntryPoint::StreamCaptureInfo => CudaVersion(10000),
            EntryPoint::FuncParamInfo => CudaVersion(12040),
        }
    }

    /// What a user can do without a newer driver, as the end of a sentence.
    pub fn otherwise(self) -> &'static str {
        match self {
            EntryPoint::LaunchKernelEx => ", or launch without a cluster",
            EntryPoint::StreamCaptureInfo => "",
            EntryPoint::FuncParamInfo => {
                "; without it, launches of such kernels skip the argument count and size checks"
            }
        }
    }

    /// What cudacheck does with it, for messages (a plural noun phrase).
    pub fn used_for(self) -> &'static str {
        match self {
            EntryPoint::LaunchKernelEx => "launches with thread-block clusters",
            EntryPoint::StreamCaptureInfo => "checks of whether a stream is being captured",
            EntryPoint::FuncParamInfo => {
                "argument checks of kernels loaded by the application (`Kernel::from_function`)"
            }
        }
    }
}

/// An entry point this driver lacks.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "{what} need the driver entry point `{symbol}` (CUDA {needs} or newer), but this driver is \
     CUDA {driver}{simulated} and has none. Update the NVIDIA driver to CUDA {needs} or newer \
     (`nvidia-smi` shows its version){fix}",
    what = upper_first(.entry.used_for()),
    symbol = .entry.symbol(),
    needs = .entry.since(),
    simulated = if *.simulated { " (simulated with CUDACHECK_SIMULATE_DRIVER_VERSION)" } else { "" },
    fix = .entry.otherwise()
)]
pub struct MissingEntryPoint {
    pub entry: EntryPoint,
    /// The driver's version.
    pub driver: CudaVersion,
    /// Whether the absence was simulated (module docs).
    pub simulated: bool,
}

type LaunchExFn = unsafe extern "C" fn(
    *const CUlaunchConfig,
    CUfunction,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;
/// `cuStreamGetCaptureInfo_v3(stream, status, id, graph, deps, edge data, count)`; the status
/// is read as an int (a newer driver may add values).
type CaptureV3Fn = unsafe extern "C" fn(
    CUstream,
    *mut c_int,
    *mut u64,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut usize,
) -> CUresult;
/// `cuStreamGetCaptureInfo_v2(stream, status, id, graph, deps, count)`.
type CaptureV2Fn = unsafe extern "C" fn(
    CUstream,
    *mut c_int,
    *mut u64,
    *mut c_void,
    *mut c_void,
    *mut usize,
) -> CUresult;
/// `cuStreamIsCapturing(stream, status)`.
type IsCapturingFn = unsafe extern "C" fn(CUstream, *mut c_int) -> CUresult;
type VersionFn = unsafe extern "C" fn(*mut c_int) -> CUresult;

/// `CUmemAccessDesc` (cuda.h): `{ CUmemLocation { CUmemLocationType type; int id; };
/// CUmemAccess_flags flags; }`, three ints in every CUDA version. Declared here because cudarc's
/// bindings spell `CUmemLocation` differently from one CUDA version to the next (13.2 made
/// `id` a member of an anonymous union), and the application picks the version.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemAccessDesc {
    pub location_type: c_int,
    pub location_id: c_int,
    pub flags: c_int,
}
/// `CU_MEM_LOCATION_TYPE_DEVICE`.
pub(crate) const MEM_LOCATION_TYPE_DEVICE: c_int = 1;
/// `CU_MEM_ACCESS_FLAGS_PROT_READWRITE`.
pub(crate) const MEM_ACCESS_FLAGS_PROT_READWRITE: c_int = 3;
/// `cuMemPoolSetAccess(pool, descriptors, count)`.
pub(crate) type PoolSetAccessFn =
    unsafe extern "C" fn(*mut c_void, *const MemAccessDesc, usize) -> CUresult;
/// `cuFuncGetParamInfo(function, index, offset, size)`.
pub(crate) type ParamInfoFn =
    unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> CUresult;
/// `cuDeviceGetMemPool(pool, device)`.
pub(crate) type GetMemPoolFn = unsafe extern "C" fn(*mut *mut c_void, c_int) -> CUresult;

/// How this driver answers "is the stream being captured".
#[derive(Clone, Copy, Debug)]
pub(crate) enum CaptureQuery {
    V3(CaptureV3Fn),
    V2(CaptureV2Fn),
    /// No capture id: captures are told apart only by their stream.
    IsCapturing(IsCapturingFn),
}

/// The loaded driver: its version and the optional entry points.
#[derive(Debug)]
pub(crate) struct Driver {
    pub version: CudaVersion,
    pub simulated: bool,
    pub launch_ex: Option<LaunchExFn>,
    pub capture: Option<CaptureQuery>,
    /// `cuFuncGetParamInfo` (CUDA 12.4): a loaded kernel's parameter offsets and sizes.
    pub param_info: Option<ParamInfoFn>,
    /// `cuDeviceGetMemPool` and `cuMemPoolSetAccess` (CUDA 11.2), together.
    pub pools: Option<(GetMemPoolFn, PoolSetAccessFn)>,
    /// Keeps the pointers above valid, and `libcuda.so.1` loaded for the process's life, so
    /// that cudarc's own loader (which panics when it finds none) lands on it.
    _lib: libloading::Library,
}

impl Driver {
    /// `entry`, or why this driver has none.
    pub fn require(&self, entry: EntryPoint) -> Result<(), MissingEntryPoint> {
        let present = match entry {
            EntryPoint::LaunchKernelEx => self.launch_ex.is_some(),
            EntryPoint::StreamCaptureInfo => self.capture.is_some(),
            EntryPoint::FuncParamInfo => self.param_info.is_some(),
        };
        if present {
            Ok(())
        } else {
            Err(MissingEntryPoint {
                entry,
                driver: self.version,
                simulated: self.simulated,
            })
        }
    }
}

/// The driver, loaded once per process.
///
/// # Errors
///
/// [`DriverMissing`] with the loader's reason.
pub(crate) fn driver() -> Result<&'static Driver, DriverMissing> {
    static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| load(std::env::var(SIMULATE_ENV_VAR).ok().as_deref()))
        .as_ref()
        .map_err(|reason| DriverMissing {
            reason: reason.clone(),
        })
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// What a simulated version string says, if anything usable.
fn parse_simulated(v: Option<&str>) -> Option<CudaVersion> {
    v.and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|&n| n >= 1000)
        .map(CudaVersion)
}

fn load(simulate: Option<&str>) -> Result<Driver, String> {
    // SAFETY: loading libcuda runs its initializers, which have no preconditions; the
    // library is the NVIDIA driver that cudarc would load anyway.
    let lib = unsafe { libloading::Library::new(LIBCUDA) }
        .map_err(|e| format!("{LIBCUDA} could not be loaded ({})", describe(&e)))?;
    let version_fn: VersionFn = get(&lib, "cuDriverGetVersion")
        .ok_or_else(|| format!("{LIBCUDA} has no cuDriverGetVersion: it is not a CUDA driver"))?;
    let mut v: c_int = 0;
    // SAFETY: the symbol is cuDriverGetVersion (type from cuda.h); the out-pointer is valid;
    // it needs no cuInit.
    let code = unsafe { version_fn(&mut v) };
    if code != CUresult::CUDA_SUCCESS {
        return Err(format!("cuDriverGetVersion failed: {code:?}"));
    }
    let simulated = parse_simulated(simulate).filter(|s| s.0 < v);
    let version = simulated.unwrap_or(CudaVersion(v));
    let since = |at: i32| version >= CudaVersion(at);
    let launch_ex = since(11080)
        .then(|| get::<LaunchExFn>(&lib, "cuLaunchKernelEx"))
        .flatten();
    let capture = since(12030)
        .then(|| get::<CaptureV3Fn>(&lib, "cuStreamGetCaptureInfo_v3").map(CaptureQuery::V3))
        .flatten()
        .or_else(|| {
            since(11030)
                .then(|| {
                    get::<CaptureV2Fn>(&lib, "cuStreamGetCaptureInfo_v2").map(CaptureQuery::V2)
                })
                .flatten()
        })
        .or_else(|| {
            get::<IsCapturingFn>(&lib, "cuStreamIsCapturing").map(CaptureQuery::IsCapturing)
        });
    let pools = since(11020)
        .then(|| {
            Some((
                get(&lib, "cuDeviceGetMemPool")?,
                get(&lib, "cuMemPoolSetAccess")?,
            ))
        })
        .flatten();
    let param_info = since(12040)
        .then(|| get::<ParamInfoFn>(&lib, "cuFuncGetParamInfo"))
        .flatten();
    Ok(Driver {
        version,
        simulated: simulated.is_some(),
        launch_ex,
        capture,
        param_info,
        pools,
        _lib: lib,
    })
}

/// `name` from `lib` as a function of type `T`.
fn get<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: each caller names `T` as the type cuda.h declares for `name` (the aliases above
    // say which); the pointer is used only while `lib` is loaded (it never unloads: `Driver`
    // lives in a process-wide OnceLock).
    unsafe { lib.get::<T>(name.as_bytes()) }.ok().map(|s| *s)
}

/// libloading's error with its cause (`dlopen failed: libfoo.so: cannot open shared object
/// file`): its own Display stops at the first half.
pub(crate) use cudacheck_nvrtc::describe_load_error as describe;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_print_as_cuda_writes_them() {
        assert_eq!(CudaVersion(12040).to_string(), "12.4");
        assert_eq!(CudaVersion(13000).to_string(), "13.0");
        assert_eq!(CudaVersion(11080).major(), 11);
        assert!(CudaVersion(12030) > CudaVersion(11080));
    }

    #[test]
    fn a_simulated_version_must_be_a_number_in_the_drivers_form() {
        assert_eq!(parse_simulated(Some("11070")), Some(CudaVersion(11070)));
        assert_eq!(parse_simulated(Some(" 12000 ")), Some(CudaVersion(12000)));
        assert_eq!(parse_simulated(Some("12.0")), None);
        assert_eq!(parse_simulated(Some("12")), None);
        assert_eq!(parse_simulated(None), None);
    }

    #[test]
    fn a_missing_entry_point_names_the_version_needed_and_the_fix() {
        let e = MissingEntryPoint {
            entry: EntryPoint::LaunchKernelEx,
            driver: CudaVersion(11070),
            simulated: false,
        };
        assert_eq!(
            e.to_string(),
            "Launches with thread-block clusters need the driver entry point `cuLaunchKernelEx` \
             (CUDA 11.8 or newer), but this driver is CUDA 11.7 and has none. Update the NVIDIA \
             driver to CUDA 11.8 or newer (`nvidia-smi` shows its version), or launch without a \
             cluster"
        );
    }

    #[test]
    fn the_table_reports_absence_as_a_typed_error() {
        let d = Driver {
            version: CudaVersion(11070),
            simulated: true,
            launch_ex: None,
            capture: None,
            param_info: None,
            pools: None,
            // Any loaded library will do for holding: the test process itself.
            _lib: this_process(),
        };
        let e = d.require(EntryPoint::LaunchKernelEx).unwrap_err();
        assert_eq!(e.entry, EntryPoint::LaunchKernelEx);
        assert_eq!(e.driver, CudaVersion(11070));
        assert!(
            e.to_string()
                .contains("simulated with CUDACHECK_SIMULATE_DRIVER_VERSION"),
            "{e}"
        );
        assert!(d.require(EntryPoint::StreamCaptureInfo).is_err());
    }

    fn this_process() -> libloading::Library {
        libloading::os::unix::Library::this().into()
    }
}
