//! Checked launches inside CUDA stream capture (`cuStreamBeginCapture`), where work queued on
//! a stream is recorded into a graph instead of run.
//!
//! # What a launch does while its stream is captured
//!
//! - It is checked as always before it is recorded: the configuration against the device and
//!   the kernel, the arguments, `requires` clauses. Those errors come back from `run` at
//!   capture time.
//! - It never waits for the kernel: the kernel has not run, and synchronizing a capturing
//!   stream would invalidate the capture. A launch whose [`sync`](crate::Launch::sync) switch
//!   says "synchronize" (debug builds) is recorded like a release launch. Faults of a plain kernel
//!   of the graph surface when the graph's stream is next checked
//!   ([`synchronize`](crate::synchronize), [`check`](crate::check)), as a release launch's do.
//! - A launch that asked (one that would synchronize, or a bounds-checked one) is not entered
//!   in the context's ring of recent launches: it did not run. A release launch does not ask
//!   (asking costs a driver call), so it is entered as if it ran, and a fault of a replay may
//!   name it among the suspects.
//! - A **bounds-checked** launch needs a [`Checks`] for the capture, created on the capturing
//!   stream before the launch; without one the launch is refused
//!   ([`LaunchErrorKind::CapturedWithoutChecks`](crate::LaunchErrorKind::CapturedWithoutChecks)).
//!   Its fault record and lengths get a device block of their own; the graph holds a memset
//!   node that zeroes the record before the kernel node, so each replay starts clean. After a
//!   replay, [`Checks::check`] waits for the stream the graph was launched on and reads every
//!   record: the first fault is returned as [`Error::OutOfBounds`] or [`Error::DeviceAssert`],
//!   naming the kernel, its Rust launch site (where it was captured), buffer, index and line.
//!   A replay queued after another before `check` zeroes the earlier replay's records: check
//!   after each replay whose faults you want.
//!
//! Each captured bounds-checked launch keeps its block (a few hundred bytes) for the life of
//! the context, because the graph may be replayed at any time, even after its `Checks` is
//! dropped. Bounds checking is a debug-build feature; graphs are captured once and replayed.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use cudacheck::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
//! # use cudacheck::cudarc::driver::{CudaSlice, CudaStream};
//! # fn f(stream: &Arc<CudaStream>, k: &cudacheck::Kernel, y: &mut CudaSlice<f32>) -> Result<(), Box<dyn std::error::Error>> {
//! stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
//! let checks = cudacheck::capture::Checks::begin(stream)?;
//! // SAFETY: the kernel touches y[i] for i < 256 only.
//! unsafe { k.launch(stream).grid(1).block(256).instrument(true).arg_mut(y).run()? };
//! let graph = stream.end_capture(CUgraphInstantiate_flags(0))?.expect("a graph");
//! for _ in 0..3 {
//!     graph.launch()?;
//!     checks.check(stream)?; // waits, then reports this replay's out-of-bounds accesses
//! }
//! # Ok(()) }
//! ```

use std::panic::Location;
use std::sync::{Arc, Mutex, Weak};

use cudacheck_core::instrument::RECORD_BYTES;
use cudacheck_core::validate::LaunchConfig;
use cudarc::driver::CudaStream;

use crate::context::{bind, state_of};
use crate::driver::{self, Capture};
use crate::error::{CaptureError, Error};
use crate::instrument::{self, ArgView};
use crate::kernel::Kernel;
use cudacheck_core::instrument::InstrumentedKernel;

/// A bounds-checked launch recorded into a graph: what its fault record needs to be read and
/// reported.
pub(crate) struct Captured {
    pub(crate) kernel: Kernel,
    /// The checked build's site table.
    pub(crate) sites: Arc<InstrumentedKernel>,
    /// The launch's arguments as the fault report reads them.
    pub(crate) args: Vec<ArgView>,
    pub(crate) site: &'static Location<'static>,
    pub(crate) config: LaunchConfig,
    /// The device address of its fault record.
    pub(crate) record: u64,
}

/// The captured launches of one capture sequence.
#[derive(Default)]
pub(crate) struct Collector {
    launches: Mutex<Vec<Captured>>,
}

impl Collector {
    pub(crate) fn push(&self, c: Captured) {
        lock(&self.launches).push(c);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Live [`Checks`] by capture sequence id (ids are unique in the process).
static COLLECTORS: Mutex<Vec<(u64, Weak<Collector>)>> = Mutex::new(Vec::new());

/// The collector of capture sequence `id`, if a [`Checks`] for it is alive.
pub(crate) fn collector(id: u64) -> Option<Arc<Collector>> {
    lock(&COLLECTORS)
        .iter()
        .find(|(i, _)| *i == id)
        .and_then(|(_, w)| w.upgrade())
}

/// The fault records of the bounds-checked launches captured into one graph, to read after
/// the graph ran. See the [module documentation](self) for the semantics.
#[must_use = "the captured launches' faults are reported only by Checks::check"]
pub struct Checks {
    collector: Arc<Collector>,
    id: u64,
}

impl Checks {
    /// Collects the bounds-checked launches captured on `stream` from now until the capture
    /// ends. Call it right after beginning the capture.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] when `stream` is not being captured; the driver's error.
    pub fn begin(stream: &Arc<CudaStream>) -> Result<Checks, Error> {
        let state = state_of(stream.context())?;
        state.check_health()?;
        bind(stream.context())?;
        let Capture::Active { id } = driver::capture_status(stream.cu_stream())? else {
            return Err(Error::Capture(CaptureError::NotCapturing));
        };
        let mut all = lock(&COLLECTORS);
        all.retain(|(_, w)| w.strong_count() > 0);
        // A second `Checks` of the same capture shares the first one's records.
        if let Some(collector) = all
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(Checks { collector, id });
        }
        let collector = Arc::new(Collector::default());
        all.push((id, Arc::downgrade(&collector)));
        Ok(Checks { collector, id })
    }

    /// How many bounds-checked launches were captured so far.
    pub fn len(&self) -> usize {
        lock(&self.collector.launches).len()
    }

    /// Whether no bounds-checked launch was captured.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for `stream` (the one the graph was launched on), then reads the fault record of
    /// every captured bounds-checked launch, in capture order.
    ///
    /// # Errors
    ///
    /// The first recorded fault: [`Error::OutOfBounds`] or [`Error::DeviceAssert`] naming the
    /// captured launch (the context stays usable); [`Error::Capture`] when `stream` is still
    /// being captured; a fault the driver reports while waiting ([`Error::AsyncFault`],
    /// [`Error::ContextPoisoned`]).
    #[track_caller]
    pub fn check(&self, stream: &Arc<CudaStream>) -> Result<(), Error> {
        let site = Location::caller();
        let state = state_of(stream.context())?;
        state.check_health()?;
        bind(stream.context())?;
        let s = stream.cu_stream();
        if driver::capture_status(s)? != Capture::None {
            return Err(Error::Capture(CaptureError::StillCapturing));
        }
        driver::stream_synchronize(s).map_err(|e| state.fault(e, site, None, s))?;
        let launches = lock(&self.collector.launches);
        for c in launches.iter() {
            let mut rec = [0u8; RECORD_BYTES];
            // SAFETY: `c.record` is a live block of this context (never freed while the
            // context lives) of at least `RECORD_BYTES`; the stream's work is done.
            unsafe { driver::memcpy_dtoh_async(&mut rec, c.record, s) }?;
            driver::stream_synchronize(s).map_err(|e| state.fault(e, site, None, s))?;
            instrument::report(
                &rec,
                &c.kernel.fault_context(&c.sites, &c.args, c.site, &c.config),
            )?;
        }
        Ok(())
    }
}

impl Drop for Checks {
    fn drop(&mut self) {
        // The entry goes with the last `Checks` of its capture (then its `Weak` is dead).
        let last = Arc::strong_count(&self.collector) == 1;
        lock(&COLLECTORS).retain(|(i, _)| !(last && *i == self.id));
    }
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checks")
            .field("capture", &self.id)
            .field("launches", &self.len())
            .finish()
    }
}
