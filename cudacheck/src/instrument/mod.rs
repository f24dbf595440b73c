//! Bounds-checked launches: the runtime side of [`cudacheck_core::instrument`].
//!
//! A kernel's bounds-checked build is its source compiled by NVRTC exactly like the plain
//! build (same options, compatibility headers, include directories and defines) to PTX with
//! line information, rewritten by [`cudacheck_core::instrument::instrument_ptx`], and assembled
//! by nvJitLink (ptxas) for the device's architecture. It is cached beside the plain build as
//! its `Variant::Checked` (see `build.rs`), with the site table faults are mapped through. The
//! launch side (lengths, record, hidden parameters) is the checked plan of the one launch path
//! (`launch/checked.rs`); this module makes the build's PTX and turns a fault record read back
//! into [`OutOfBounds`] or [`DeviceAssert`] ([`report`]).
//!
//! Whether a launch is bounds-checked is decided by the `instrument` switch's order (see
//! [the switches](crate#switches)): the launch, the kernel, `CUDACHECK_INSTRUMENT`, the build
//! profile.

mod fault;
mod race;
mod uninit;

use cudacheck_core::instrument::{HostCheckSet, InstrumentError, InstrumentedPtx};
use cudacheck_core::Dim3;
use thiserror::Error;

pub use cudacheck_core::init::InitCoverage;
pub use cudacheck_core::instrument::Coverage;
pub use cudacheck_core::race::{AccessKind, RaceCoverage};
pub(crate) use fault::{error_of, misaligned_argument, param_names, ArgView, Fault, FaultContext};
pub use fault::{DeviceAssert, Misaligned, OutOfBounds};
#[allow(deprecated)]
pub use race::BarrierErrorKind;
pub use race::{BarrierCall, BarrierMisuse, BarrierMisuseKind, RaceAccess, SharedRace};
pub(crate) use uninit::report_init;
pub use uninit::Uninitialized;

use crate::nvrtc::AssembleError;

/// Why a kernel's bounds-checked build could not be made.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The PTX NVRTC wrote could not be read by the instrumenter.
    #[error(transparent)]
    Ptx(#[from] InstrumentError),
    /// nvJitLink is missing, or ptxas refused the checked PTX.
    #[error(transparent)]
    Assemble(#[from] AssembleError),
    /// The kernel's symbol is not an entry of the PTX.
    #[error("the PTX has no kernel `{symbol}`")]
    NoEntry { symbol: String },
}

/// What an instrumented build is specialised for: the launch's block size and dynamic shared
/// bytes, which let the instrumenter prove accesses in bounds without a run-time check. One
/// build per distinct pair, made on first use: bounds checking is a debug-build feature, where
/// an assembly per launch shape is a fair price for kernels that run close to their plain speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) block: Dim3,
    pub(crate) dynamic_shared_bytes: u32,
    /// Accesses the user's guards keep in bounds have no device check; the build lists them
    /// as host checks, and only launches for which they all hold may run it (the launch takes
    /// the same shape without them otherwise: `launch/checked.rs`).
    pub(crate) host_checks: bool,
    /// Host checks (by position in the host-checked build's list) this build makes on the
    /// device after all: the ones a launch's arguments fail.
    pub(crate) on_device: HostCheckSet,
    /// Shared-memory races and barriers are checked too (`cudacheck_core::race`).
    pub(crate) races: bool,
    /// Reads of memory nothing wrote are checked too (`cudacheck_core::init`).
    pub(crate) init: bool,
    /// Every check inside loops stays (`CUDACHECK_KEEP_LOOP_CHECKS`: no loop versioning).
    pub(crate) keep_loop_checks: bool,
    /// Each pointer parameter is checked against a hidden base and length (the allocation it
    /// points into: `cudacheck run`'s builds), not against its own value, so a pointer into
    /// the middle of an allocation may index down to the allocation's start.
    pub(crate) alloc_bases: bool,
}

impl Spec {
    /// The specialisation for a launch, or `None` for a block no GPU runs (the launch is then
    /// refused by validation; compiling a build for it would be wasted).
    pub(crate) fn of(block: Dim3, dynamic_shared_bytes: u32) -> Option<Spec> {
        let sane = block.to_array().iter().all(|&d| d >= 1)
            && block.volume() <= u64::from(cudacheck_core::PORTABLE.max_threads_per_block);
        sane.then_some(Spec {
            block,
            dynamic_shared_bytes,
            host_checks: true,
            on_device: HostCheckSet::new(),
            races: false,
            init: false,
            keep_loop_checks: crate::policy::keep_loop_checks(),
            alloc_bases: false,
        })
    }

    /// The same shape, race-checked or not.
    pub(crate) fn races(self, races: bool) -> Spec {
        Spec { races, ..self }
    }

    /// The same shape, init-checked or not.
    pub(crate) fn init(self, init: bool) -> Spec {
        Spec { init, ..self }
    }

    /// The same shape checking these host checks on the device: for launches whose arguments
    /// fail exactly them. Every other access stays as in the host-checked build.
    pub(crate) fn on_device(self, set: HostCheckSet) -> Spec {
        Spec {
            on_device: set,
            ..self
        }
    }

    /// The same shape with every check on the device: for launches whose arguments do not
    /// satisfy the host checks.
    pub(crate) fn fully_checked(self) -> Spec {
        Spec {
            host_checks: false,
            on_device: HostCheckSet::new(),
            ..self
        }
    }
}

/// Instruments NVRTC's PTX for a launch shape: with the shape known, accesses it keeps in
/// bounds whatever the data (a tile indexed by `threadIdx` in a block no larger than the tile)
/// are proven and get no run-time check. The build then serves launches of exactly that shape
/// (the build cache keys it by the shape).
///
/// With no shape, `host_checks` says whether accesses the user's guards keep in bounds are
/// listed as host checks (for coverage reports); with one, the shape says.
pub(crate) fn instrument(
    ptx: &str,
    shape: Option<Spec>,
    host_checks: bool,
) -> Result<InstrumentedPtx, BuildError> {
    let opts = match shape {
        Some(s) => cudacheck_core::instrument::InstrumentOptions::new()
            .block(s.block.to_array())
            .dynamic_shared_bytes(s.dynamic_shared_bytes)
            .host_checks(s.host_checks)
            .on_device(s.on_device)
            .keep_loop_checks(s.keep_loop_checks)
            .alloc_bases(s.alloc_bases),
        None => cudacheck_core::instrument::InstrumentOptions::new().host_checks(host_checks),
    };
    let mut inst = cudacheck_core::instrument::instrument_ptx_with(ptx, &opts)?;
    if let Some(s) = shape.filter(|s| s.races) {
        let r = cudacheck_core::race::race_ptx(
            &inst.ptx,
            &cudacheck_core::race::RaceOptions::new(s.dynamic_shared_bytes)
                .block(s.block.to_array()),
        )
        .map_err(|e| BuildError::Ptx(e.into()))?;
        for k in &mut inst.kernels {
            k.races = r.kernel(&k.symbol).cloned();
        }
        inst.ptx = r.ptx;
    }
    if let Some(s) = shape.filter(|s| s.init) {
        // After the race rewrite: the init record follows the race record, and a
        // race-checked kernel's shared memory is left to the race checker.
        let r = cudacheck_core::init::init_ptx_with(
            &inst.ptx,
            &cudacheck_core::init::InitOptions::new(s.dynamic_shared_bytes),
        )
        .map_err(|e| BuildError::Ptx(e.into()))?;
        for k in &mut inst.kernels {
            k.init = r.kernel(&k.symbol).cloned();
        }
        inst.ptx = r.ptx;
    }
    Ok(inst)
}

/// A bounds-checked launch's outcome from its fault record, read back after the kernel:
/// decoded with `cudacheck_core::instrument::decode`, then turned into a [`Fault`] by
/// [`error_of`] (which `error` makes an `Error` of).
pub(crate) fn report(record: &[u8], cx: &FaultContext<'_>) -> Result<(), Fault> {
    let Some(rec) = cudacheck_core::instrument::decode(record) else {
        return Ok(());
    };
    if let Some(e) = error_of(&rec, cx) {
        return Err(e);
    }
    // A race-checked launch's record follows (a bounds fault is reported first: the race
    // checks of a skipped access saw an address the kernel never used).
    let Some(race) = record
        .get(cudacheck_core::race::RACE_RECORD_OFFSET..)
        .and_then(cudacheck_core::race::decode_race)
    else {
        return Ok(());
    };
    match race::race_error_of(&race, cx) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
