//! The one error type of the runtime, and the records it carries.
//!
//! Context is added by wrapping, never by pasting strings: a rejected launch is an
//! [`Error::Launch`] holding a [`LaunchError`] (kernel, Rust launch site, configuration) whose
//! `source` is the [`LaunchErrorKind`] saying what was wrong; a driver failure is a
//! [`DriverError`] naming the call, the code, its name and what usually causes it.

use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::validate::{LaunchConfig, Violation};
use thiserror::Error;

pub use crate::driver::DriverError;
use crate::driver::{CudaVersion, DriverMissing, MissingEntryPoint};
use crate::instrument::{
    BarrierMisuse, DeviceAssert, Fault, Misaligned, OutOfBounds, SharedRace, Uninitialized,
};
use crate::nvrtc::{CompileError, NvrtcNotFound};
use crate::ring::LaunchRecord;

/// Everything a cudacheck call can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The launch was rejected before reaching the GPU (bad configuration, arguments, ...), or
    /// the driver refused it. The context stays healthy.
    #[error(transparent)]
    Launch(Box<LaunchError>),

    /// NVRTC could not compile the kernel's source.
    #[error("could not compile kernel `{kernel}` for {arch}")]
    Compile {
        kernel: String,
        arch: String,
        #[source]
        source: Box<CompileError>,
    },

    /// A kernel made from PTX could not be built: the PTX is unreadable, or ptxas rejected it.
    #[error("could not build kernel `{kernel}` from the PTX of `{file}` for {arch}")]
    PtxBuild {
        kernel: String,
        file: String,
        arch: String,
        #[source]
        source: Box<crate::ptx::PtxBuildError>,
    },

    /// A kernel the application loaded itself ([`Kernel::from_function`](crate::Kernel::from_function))
    /// was asked for something that needs its code.
    #[error(
        "kernel `{kernel}` was loaded by the application (`Kernel::from_function`), so \
         cudacheck cannot {what}: it has neither the source nor the PTX. Make the kernel with \
         `Kernel::from_ptx` from the PTX the module was loaded from to {what}"
    )]
    LoadedByApplication { kernel: String, what: &'static str },

    /// NVRTC, which cudacheck compiles kernels with, is not installed or not found.
    #[error(transparent)]
    NvrtcNotFound(Box<NvrtcNotFound>),

    /// `libcuda.so.1` could not be loaded: no NVIDIA driver on this machine.
    #[error(
        "no CUDA driver: {reason}. Install the NVIDIA driver (nvidia-smi must work), or run on \
         a machine with a GPU"
    )]
    DriverNotFound { reason: String },

    /// A driver call failed outside a launch (module load, attribute query, allocation...).
    #[error(transparent)]
    Driver(DriverError),

    /// The driver could not load a CUBIN that an NVRTC of a newer CUDA major version made.
    #[error(
        "the CUDA {driver} driver could not load the CUBIN that NVRTC {}.{} made ({load}); a \
         driver loads CUBINs of its own CUDA major version or older. Point CUDACHECK_NVRTC at \
         an NVRTC {}.x (for CUDA 12: `pip install nvidia-cuda-nvrtc-cu12`), or update the \
         NVIDIA driver to CUDA {}.0 or newer",
        .nvrtc.0, .nvrtc.1, .driver.major(), .nvrtc.0
    )]
    CompilerNewerThanDriver {
        /// NVRTC's `(major, minor)`.
        nvrtc: (i32, i32),
        driver: CudaVersion,
        /// The driver's refusal.
        load: DriverError,
    },

    /// An earlier fault made the context unusable; every later call in it fails.
    #[error(
        "the CUDA context of device {device} is poisoned by an earlier fault{}, \
         {first_fault}{}; every later CUDA call on this device in this process fails. The \
         process must be restarted to use the device again (NVIDIA's driver keeps such faults \
         for the life of the process); run work that may fault in a child process to survive it",
        elsewhere_text(*.device, *.fault_device),
        culprit_text(.launch, .suspects)
    )]
    ContextPoisoned {
        device: usize,
        /// The device whose context saw the fault first. Another device than `device` when the
        /// driver reported that device's sticky fault to this context too (NVIDIA's driver
        /// does, to every context of the process); `launch` and `suspects` are then that
        /// device's.
        fault_device: usize,
        first_fault: DriverError,
        /// The launch known to have faulted (found by a synchronizing check right after it).
        launch: Option<Box<LaunchRecord>>,
        /// When the fault surfaced later: the recent launches that may have caused it, oldest
        /// first.
        suspects: Vec<LaunchRecord>,
    },

    /// [`recover`](crate::recover) reset the context, but the driver still refuses the device:
    /// the fault outlives any context in this process.
    #[error(
        "device {device} cannot be recovered in this process: after resetting its context the \
         driver still answers {still}. NVIDIA's driver keeps this fault for the life of the \
         process (\"to continue using CUDA, the process must be terminated and relaunched\"); \
         restart the process, or run work that may fault in a child process"
    )]
    Unrecoverable { device: usize, still: DriverError },

    /// An allocation did not fit in the device's memory.
    #[error(
        "out of device memory on device {device}: asked for {} but only {} of {} are free. {hint}",
        bytes(*.requested), bytes(*.free), bytes(*.total)
    )]
    OutOfMemory {
        device: usize,
        requested: u64,
        free: u64,
        total: u64,
        hint: String,
    },

    /// The Rust-side parameter list given with [`KernelBuilder::params`] does not match the
    /// compiled kernel's parameter table.
    ///
    /// [`KernelBuilder::params`]: crate::KernelBuilder::params
    #[error("kernel `{kernel}`: the Rust signature does not match the compiled kernel: {detail}")]
    SignatureMismatch { kernel: String, detail: String },

    /// A `requires(...)` clause of the kernel was false; nothing was launched.
    #[error(
        "kernel `{kernel}` launched at {site}: requirement `{clause}` does not hold; the \
         launch was not made"
    )]
    RequirementFailed {
        kernel: String,
        clause: &'static str,
        site: &'static Location<'static>,
    },

    /// A launch faulted on the device, found by the synchronizing check right after it.
    #[error(
        "kernel `{kernel}` launched at {site} with grid {}, block {}, {} bytes of dynamic shared \
         memory faulted on the device",
        .config.grid, .config.block, .config.dynamic_shared_bytes
    )]
    Fault {
        /// The kernel's name (shared with the kernel: no copy).
        kernel: Arc<str>,
        site: &'static Location<'static>,
        config: LaunchConfig,
        #[source]
        fault: DriverError,
    },

    /// A fault surfaced at a later call (release mode does not synchronize after launches);
    /// `suspects` are the recent launches in this context that may have caused it.
    #[error(
        "a device fault on device {device} surfaced at {detected_at}, after the launch that \
         caused it: {fault}. {}Rerun with CUDACHECK_SYNC=1 to find the launch exactly",
        suspects_text(.suspects, *.stream)
    )]
    AsyncFault {
        /// The device whose context faulted.
        device: usize,
        fault: DriverError,
        detected_at: &'static Location<'static>,
        /// The stream of the call that saw it (`CUstream` as a number, as in
        /// [`LaunchRecord::stream`]).
        stream: u64,
        /// The context's recent launches, oldest first, on every stream of the context (a
        /// sticky fault of any of them surfaces on all); never another context's.
        suspects: Vec<LaunchRecord>,
    },

    /// The compiled module has no kernel of this name.
    #[error(
        "kernel `{kernel}` (symbol `{symbol}`) is not in the compiled module; it has: {}. \
         Check the spelling, and mark the kernel `extern \"C\"` or give its C++ name",
        list_or_none(.available)
    )]
    KernelNotFound {
        kernel: String,
        symbol: String,
        available: Vec<String>,
    },

    /// A bounds-checked launch accessed a buffer or array out of its bounds (the access was
    /// dropped: an out-of-bounds read gave 0, a write went nowhere). The context stays usable.
    #[error(transparent)]
    OutOfBounds(Box<OutOfBounds>),

    /// A bounds-checked launch made an access at an address not aligned to its width (a
    /// `float4` through an offset view): skipped on the device, or the launch refused on the
    /// host when a buffer argument itself is misaligned. CUDA raised no error; the context
    /// stays usable.
    #[error(transparent)]
    Misaligned(Box<Misaligned>),

    /// A bounds-checked launch failed an `assert(...)` in the kernel (recorded instead of
    /// trapping, so the context stays usable).
    #[error(transparent)]
    DeviceAssert(Box<DeviceAssert>),

    /// A race-checked launch found two threads of a block touching one `__shared__` element,
    /// at least one writing, with no barrier between them. The outputs may be wrong; the
    /// context stays usable.
    #[error(transparent)]
    SharedRace(Box<SharedRace>),

    /// A race-checked launch found a barrier misused: threads of a block at different
    /// `__syncthreads()`, or `__syncwarp(mask)` called by a lane outside its mask
    /// ([`BarrierMisuse::kind`]). Named as the other reports of a checked launch are: after
    /// the struct it holds.
    #[error(transparent)]
    BarrierMisuse(Box<BarrierMisuse>),

    /// An init-checked launch read memory nothing wrote: a buffer element no launch and no
    /// copy the library saw had written, or a `__shared__` byte the block had not written yet
    /// ([`Uninitialized`]). The read went ahead; the context stays usable.
    #[error(transparent)]
    Uninitialized(Box<Uninitialized>),

    /// The kernel's bounds-checked build could not be made (its PTX unreadable, nvJitLink
    /// missing, or ptxas refusing the checked code).
    #[error("kernel `{kernel}`: `{file}` could not be built for bounds checking for {arch}")]
    Instrument {
        kernel: String,
        file: String,
        arch: String,
        #[source]
        source: Box<crate::instrument::BuildError>,
    },

    /// A [`capture`](crate::capture) call at the wrong point of a stream capture.
    #[error(transparent)]
    Capture(CaptureError),

    /// [`enable_peer_access`](crate::enable_peer_access) failed.
    #[error(transparent)]
    PeerAccess(Box<PeerAccessError>),

    /// The CUBIN NVRTC produced could not be read for the kernel's resources.
    #[error("kernel `{kernel}`: could not read the compiled CUBIN")]
    Cubin {
        kernel: String,
        #[source]
        source: cudacheck_core::cubin::CubinError,
    },
}

impl From<LaunchError> for Error {
    fn from(e: LaunchError) -> Self {
        Error::Launch(Box::new(e))
    }
}

impl From<DriverMissing> for Error {
    fn from(e: DriverMissing) -> Self {
        Error::DriverNotFound { reason: e.reason }
    }
}

impl From<DriverError> for Error {
    fn from(e: DriverError) -> Self {
        Error::Driver(e)
    }
}

impl Error {
    /// The driver error inside, if this error came from the driver.
    pub fn driver_error(&self) -> Option<&DriverError> {
        match self {
            Error::Driver(d) => Some(d),
            Error::Fault { fault, .. } | Error::AsyncFault { fault, .. } => Some(fault),
            Error::ContextPoisoned { first_fault, .. } => Some(first_fault),
            Error::Unrecoverable { still, .. } => Some(still),
            Error::PeerAccess(p) => p.driver.as_ref(),
            Error::Launch(l) => match &l.kind {
                LaunchErrorKind::Driver { error } => Some(error),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A launch that was refused: which kernel, where, with what configuration, and why
/// (`kind`, also the error's `source`).
#[derive(Debug, Error)]
#[error(
    "kernel `{kernel}` launched at {site} with grid {}, block {}, {} bytes of dynamic shared \
     memory: {kind}",
    .config.grid, .config.block, .config.dynamic_shared_bytes
)]
pub struct LaunchError {
    pub kernel: String,
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    pub kind: LaunchErrorKind,
}

/// Why a launch was refused.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LaunchErrorKind {
    /// The configuration breaks the device's or the kernel's limits (every broken rule).
    #[error("{}", violations_text(.violations))]
    InvalidConfig { violations: Vec<Violation> },

    /// `grid`/`block` were never given.
    #[error("the {part} was not set; call .{part}(...) or .config(...) before .run()")]
    MissingDims { part: &'static str },

    /// A different number of arguments than the kernel's parameters.
    #[error(
        "{given} arguments were passed but the kernel takes {expected} parameters ({params}); \
         pass exactly one argument per parameter, in order"
    )]
    ArgCount {
        expected: usize,
        given: usize,
        params: String,
    },

    /// More arguments than a launch can hold.
    #[error(
        "{given} arguments were passed; cudacheck launches take at most {max}. Group \
         parameters into a struct passed by value"
    )]
    TooManyArgs { given: usize, max: usize },

    /// An argument's size differs from the kernel parameter's.
    #[error(
        "argument {index} is {given_bytes} bytes ({given_type}) but the kernel's parameter \
         {index} is {expected_bytes} bytes; pass a value of the parameter's C type"
    )]
    ArgSize {
        index: usize,
        given_bytes: u32,
        given_type: &'static str,
        expected_bytes: u32,
    },

    /// A buffer belongs to another context or device than the launch's stream, and the
    /// stream's context was not given access to it with
    /// [`enable_peer_access`](crate::enable_peer_access).
    #[error(
        "argument {index}{} is a buffer of device {buffer_device}{}, but the stream runs on \
         device {stream_device}; {}",
        param_text(.param),
        if *.same_device { " in a different context" } else { "" },
        foreign_fix(*.peer, *.stream_device, *.buffer_device, *.same_device)
    )]
    ForeignBuffer {
        index: usize,
        /// The parameter's name, from the Rust declaration or the CUDA source, when known.
        param: Option<String>,
        buffer_device: usize,
        stream_device: usize,
        same_device: bool,
        /// What the driver says about the stream's device reading the buffer's device memory.
        peer: PeerSupport,
    },

    /// A bounds-checked launch into a stream being captured, with no
    /// [`capture::Checks`](crate::capture::Checks) to report its faults after the graph runs.
    #[error(
        "the launch is bounds-checked and its stream is being captured into a graph, but no \
         `cudacheck::capture::Checks` collects this capture's fault records; call \
         `Checks::begin(&stream)` right after beginning the capture and `checks.check(&stream)` \
         after each replay, or launch unchecked with `.instrument(false)`"
    )]
    CapturedWithoutChecks,

    /// The driver refused the launch (a cause cudacheck does not check for itself).
    #[error("the driver refused the launch: {error}")]
    Driver { error: DriverError },

    /// The launch needs a driver entry point this driver is too old to have.
    #[error(transparent)]
    DriverTooOld(MissingEntryPoint),
}

/// Whether kernels on one device could access another device's memory directly, as
/// [`cuDeviceCanAccessPeer`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PEER__ACCESS.html)
/// answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerSupport {
    /// The hardware allows it: [`enable_peer_access`](crate::enable_peer_access) turns it on.
    Possible,
    /// The driver says the two devices cannot access each other's memory.
    Unsupported,
    /// Not asked (both buffers are on one device), or the driver could not say.
    Unknown,
}

/// A [`capture::Checks`](crate::capture::Checks) call at the wrong point of a capture.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// `Checks::begin` on a stream that is not being captured.
    #[error(
        "`capture::Checks::begin` was called on a stream that is not being captured; call it \
         right after `begin_capture` (cuStreamBeginCapture) on the same stream"
    )]
    NotCapturing,
    /// `Checks::check` while the stream is still being captured.
    #[error(
        "`capture::Checks::check` was called while the stream is still being captured; end the \
         capture (`end_capture`), launch the graph, then check"
    )]
    StillCapturing,
}

fn violations_text(v: &[Violation]) -> String {
    match v {
        [one] => one.to_string(),
        many => {
            let mut s = format!("{} problems:", many.len());
            for (i, x) in many.iter().enumerate() {
                s.push_str(&format!("\n  {}. {x}", i + 1));
            }
            s
        }
    }
}

fn param_text(param: &Option<String>) -> String {
    match param {
        Some(p) => format!(" (`{p}`)"),
        None => String::new(),
    }
}

fn foreign_fix(peer: PeerSupport, stream: usize, buffer: usize, same_device: bool) -> String {
    if same_device {
        return "copy the data to the stream's context first, or launch on a stream of the \
                buffer's context"
            .into();
    }
    match peer {
        PeerSupport::Possible => format!(
            "peer access from device {stream} to device {buffer} is not enabled. The devices \
             allow it (cuDeviceCanAccessPeer): call \
             `cudacheck::enable_peer_access(stream.context(), buffer_stream.context())` first, \
             or copy the data to device {stream}"
        ),
        PeerSupport::Unsupported => format!(
            "device {stream} cannot access memory of device {buffer} (cuDeviceCanAccessPeer \
             says these devices have no peer access); copy the data to device {stream} first, \
             or launch on a stream of device {buffer}"
        ),
        PeerSupport::Unknown => format!(
            "copy the data to device {stream} first, or launch on a stream of device {buffer}"
        ),
    }
}

/// Peer access from one device to another could not be enabled.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "peer access from device {from} to device {to} cannot be enabled: {}",
    refusal_text(.driver)
)]
pub struct PeerAccessError {
    pub from: usize,
    pub to: usize,
    /// The driver's refusal; `None` when `cuDeviceCanAccessPeer` said no before anything was
    /// tried.
    pub driver: Option<DriverError>,
}

fn refusal_text(driver: &Option<DriverError>) -> String {
    match driver {
        Some(e) => e.to_string(),
        None => "cuDeviceCanAccessPeer says the hardware does not allow it (no NVLink or PCIe \
                 peer path between them, or both are one device); copy data between the \
                 devices instead (`memcpy_dtod` between their streams)"
            .to_string(),
    }
}

fn elsewhere_text(device: usize, fault_device: usize) -> String {
    if device == fault_device {
        String::new()
    } else {
        format!(
            " on device {fault_device} (NVIDIA's driver reports a sticky fault to every context \
             of the process)"
        )
    }
}

fn culprit_text(launch: &Option<Box<LaunchRecord>>, suspects: &[LaunchRecord]) -> String {
    match launch {
        Some(l) => format!(" raised by {l}"),
        None if suspects.is_empty() => String::new(),
        None => format!(" (one of: {})", join(suspects)),
    }
}

fn suspects_text(suspects: &[LaunchRecord], stream: u64) -> String {
    if suspects.is_empty() {
        return "No cudacheck launch in this context is on record. ".into();
    }
    let list = suspects
        .iter()
        .map(|r| {
            let on = if r.stream == stream {
                "this stream".to_string()
            } else {
                format!("stream {:#x}", r.stream)
            };
            format!("{r} on {on}")
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!("The most recent launches in this context, oldest first: {list}. ")
}

fn join(records: &[LaunchRecord]) -> String {
    records
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "no kernels".into()
    } else {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `1536 bytes (1.5 KiB)`: exact bytes for the arithmetic, a unit for the eye.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{n} bytes ({v:.1} {})", UNITS[unit])
}

impl From<Fault> for Error {
    fn from(f: Fault) -> Self {
        match f {
            Fault::OutOfBounds(o) => Error::OutOfBounds(o),
            Fault::Misaligned(m) => Error::Misaligned(m),
            Fault::DeviceAssert(d) => Error::DeviceAssert(d),
            Fault::SharedRace(r) => Error::SharedRace(r),
            Fault::BarrierMisuse(b) => Error::BarrierMisuse(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::Dim3;

    fn record(seq: u64) -> LaunchRecord {
        LaunchRecord {
            seq,
            kernel: "saxpy".into(),
            config: LaunchConfig::new(Dim3::x(4), Dim3::x(256)),
            site: Location::caller(),
            stream: seq % 2,
        }
    }

    #[test]
    fn driver_errors_name_the_call_the_code_and_the_cause() {
        let e = DriverError::new("cuStreamSynchronize", 700);
        assert!(e.poisons());
        assert_eq!(
            e.to_string(),
            "cuStreamSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700): a kernel read or \
             wrote memory outside any allocation: an index past a buffer's end, a wrong length \
             or grid bound check, or a freed/foreign pointer"
        );
        let unknown = DriverError::new("cuLaunchKernel", 77_777);
        assert_eq!(unknown.name, "an unknown CUresult");
        assert!(
            unknown.to_string().contains("an unknown CUresult (77777)"),
            "{unknown}"
        );
        assert!(!unknown.poisons());
    }

    #[test]
    fn poisoned_context_names_the_first_fault_and_its_launch() {
        let e = Error::ContextPoisoned {
            device: 0,
            fault_device: 0,
            first_fault: DriverError::new("cuStreamSynchronize", 710),
            launch: Some(Box::new(record(3))),
            suspects: vec![],
        };
        let s = e.to_string();
        assert!(s.contains("device 0 is poisoned"), "{s}");
        assert!(s.contains("CUDA_ERROR_ASSERT"), "{s}");
        assert!(s.contains("launch #3 of `saxpy`"), "{s}");
        assert!(s.contains("must be restarted"), "{s}");
        assert_eq!(e.driver_error().map(|d| d.code), Some(710));
    }

    #[test]
    fn a_context_poisoned_by_another_devices_fault_says_which() {
        let e = Error::ContextPoisoned {
            device: 0,
            fault_device: 1,
            first_fault: DriverError::new("cuStreamSynchronize", 700),
            launch: None,
            suspects: vec![record(2)],
        };
        let s = e.to_string();
        assert!(
            s.contains("device 0 is poisoned by an earlier fault on device 1 (NVIDIA's driver"),
            "{s}"
        );
        assert!(s.contains("(one of: launch #2 of `saxpy`"), "{s}");
    }

    #[test]
    fn async_faults_list_the_suspects() {
        let e = Error::AsyncFault {
            device: 1,
            fault: DriverError::new("cuLaunchKernel", 700),
            detected_at: Location::caller(),
            stream: 0,
            suspects: vec![record(1), record(2)],
        };
        let s = e.to_string();
        assert!(s.contains("a device fault on device 1 surfaced at "), "{s}");
        assert!(s.contains("launch #1 of `saxpy`"), "{s}");
        assert!(s.contains("launch #2 of `saxpy`"), "{s}");
        assert!(
            s.contains("dynamic shared) on stream 0x1; launch #2"),
            "{s}"
        );
        assert!(s.contains("dynamic shared) on this stream. "), "{s}");
        assert!(s.contains("CUDACHECK_SYNC=1"), "{s}");
    }

    #[test]
    fn launch_errors_wrap_kernel_site_and_config() {
        let e: Error = LaunchError {
            kernel: "saxpy".into(),
            site: Location::caller(),
            config: LaunchConfig::new(Dim3::x(4), Dim3::x(256)),
            kind: LaunchErrorKind::ArgCount {
                expected: 4,
                given: 3,
                params: "float* y, const float* x, float a, int n".into(),
            },
        }
        .into();
        let s = e.to_string();
        assert!(s.starts_with("kernel `saxpy` launched at "), "{s}");
        assert!(s.contains("error.rs"), "{s}");
        assert!(s.contains("grid (4, 1, 1), block (256, 1, 1)"), "{s}");
        assert!(
            s.contains("3 arguments were passed but the kernel takes 4 parameters"),
            "{s}"
        );
        let Error::Launch(l) = &e else {
            panic!("not a launch error: {e:?}")
        };
        assert!(matches!(
            l.kind,
            LaunchErrorKind::ArgCount {
                expected: 4,
                given: 3,
                ..
            }
        ));
    }

    fn foreign(peer: PeerSupport, buffer_device: usize, param: Option<&str>) -> String {
        let e: Error = LaunchError {
            kernel: "saxpy".into(),
            site: Location::caller(),
            config: LaunchConfig::new(Dim3::x(4), Dim3::x(256)),
            kind: LaunchErrorKind::ForeignBuffer {
                index: 1,
                param: param.map(str::to_string),
                buffer_device,
                stream_device: 0,
                same_device: buffer_device == 0,
                peer,
            },
        }
        .into();
        e.to_string()
    }

    #[test]
    fn a_buffer_of_a_peer_capable_device_says_how_to_enable_peer_access() {
        let s = foreign(PeerSupport::Possible, 1, Some("x"));
        assert!(
            s.contains("argument 1 (`x`) is a buffer of device 1, but the stream runs on device 0"),
            "{s}"
        );
        assert!(
            s.contains("peer access from device 0 to device 1 is not enabled"),
            "{s}"
        );
        assert!(s.contains("cudacheck::enable_peer_access("), "{s}");
    }

    #[test]
    fn a_buffer_of_a_device_without_peer_access_says_to_copy() {
        let s = foreign(PeerSupport::Unsupported, 1, None);
        assert!(s.contains("argument 1 is a buffer of device 1,"), "{s}");
        assert!(s.contains("cannot access memory of device 1"), "{s}");
        assert!(s.contains("copy the data to device 0"), "{s}");
        assert!(!s.contains("enable_peer_access"), "{s}");
    }

    #[test]
    fn a_buffer_of_another_context_of_the_same_device_names_the_context() {
        let s = foreign(PeerSupport::Unknown, 0, Some("y"));
        assert!(
            s.contains("argument 1 (`y`) is a buffer of device 0 in a different context"),
            "{s}"
        );
        assert!(
            s.contains("launch on a stream of the buffer's context"),
            "{s}"
        );
    }

    #[test]
    fn peer_access_refusals_say_why() {
        let no = PeerAccessError {
            from: 0,
            to: 1,
            driver: None,
        };
        let s = Error::PeerAccess(Box::new(no)).to_string();
        assert!(
            s.starts_with("peer access from device 0 to device 1 cannot be enabled"),
            "{s}"
        );
        assert!(s.contains("cuDeviceCanAccessPeer"), "{s}");
        let refused = PeerAccessError {
            from: 0,
            to: 1,
            driver: Some(DriverError::new("cuCtxEnablePeerAccess", 711)),
        };
        let s = Error::PeerAccess(Box::new(refused)).to_string();
        assert!(s.contains("CUDA_ERROR_TOO_MANY_PEERS"), "{s}");
    }

    /// Users return `Result<_, Error>` from their own closures and functions; an error larger
    /// than clippy's `result_large_err` threshold (128 bytes) would warn in their code.
    #[test]
    fn error_stays_small() {
        assert!(
            std::mem::size_of::<Error>() < 128,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn out_of_memory_shows_exact_and_readable_sizes() {
        let e = Error::OutOfMemory {
            device: 0,
            requested: 1 << 50,
            free: 80 << 30,
            total: 81 << 30,
            hint: "Split the data.".into(),
        };
        assert_eq!(
            e.to_string(),
            "out of device memory on device 0: asked for 1125899906842624 bytes (1.0 PiB) but \
             only 85899345920 bytes (80.0 GiB) of 86973087744 bytes (81.0 GiB) are free. Split \
             the data."
        );
        assert_eq!(bytes(1000), "1000 bytes");
    }
}
