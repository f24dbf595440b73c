//! Bounds-checked launches: the runtime side of [`cudacheck_core::instrument`].
//!
//! A kernel's instrumented build is its source compiled by NVRTC exactly like the plain build
//! (same options, compatibility headers, include directories and defines) to PTX with line
//! information, rewritten by [`cudacheck_core::instrument::instrument_ptx`], and assembled by
//! nvJitLink (ptxas) for the device's architecture: one build per architecture, one module per
//! context, cached apart from the plain build. A bounds-checked launch passes each buffer
//! argument's length in bytes and a zeroed fault record as hidden parameters, launches,
//! synchronizes, reads the record back and turns a recorded fault into [`OutOfBounds`] or
//! [`DeviceAssert`].
//!
//! Whether a launch is bounds-checked is decided by [`InstrumentMode`](crate::InstrumentMode)'s
//! order: the launch, the kernel, `CUDACHECK_INSTRUMENT`, the build profile.

mod fault;
mod launch;

use std::sync::{Arc, Mutex, OnceLock, RwLock};

use cudacheck_core::instrument::{
    hidden_params, instrument_ptx, InstrumentError, InstrumentedKernel, InstrumentedPtx,
};
use cudacheck_core::Arch;
use cudarc::driver::CudaContext;
use thiserror::Error;

pub use cudacheck_core::instrument::Coverage;
pub use fault::{DeviceAssert, OutOfBounds};
pub(crate) use launch::run_checked;

use crate::context::{state_of, ContextState};
use crate::error::Error;
use crate::kernel::{Compiled, Kernel, Loaded};
use crate::launch::parse_sync;
use crate::nvrtc::{assemble_ptx, AssembleError};

/// `CUDACHECK_INSTRUMENT`, read once per process: `Some(true)` for 1/true/on, `Some(false)` for
/// 0/false/off, `None` when unset or unrecognized.
pub(crate) fn env_instrument() -> Option<bool> {
    static ENV: OnceLock<Option<bool>> = OnceLock::new();
    *ENV.get_or_init(|| parse_sync(std::env::var("CUDACHECK_INSTRUMENT").ok().as_deref()))
}

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

/// A kernel's bounds-checked build for one architecture.
#[derive(Debug)]
pub(crate) struct Build {
    /// This kernel's entry in the instrumented module: its sites and coverage.
    pub(crate) kernel: InstrumentedKernel,
    pub(crate) compiled: Arc<Compiled>,
}

/// A kernel's instrumented builds (one per architecture) and their modules (one per context).
#[derive(Debug, Default)]
pub(crate) struct InstCache {
    builds: Mutex<Vec<(Arch, Arc<Build>)>>,
    loaded: RwLock<Vec<(Arc<Build>, Arc<Loaded>)>>,
}

/// The instrumented PTX of `kernel`'s source for `arch` (NVRTC, then the rewrite).
fn instrumented_ptx(kernel: &Kernel, arch: Arch) -> Result<(InstrumentedPtx, String, String), Error> {
    let (out, symbol) = kernel.nvrtc_output(kernel.source(), arch, true)?;
    let ptx = out.ptx.unwrap_or_default();
    let inst = instrument_ptx(&ptx).map_err(|e| build_error(kernel, arch, e.into()))?;
    Ok((inst, symbol, out.log))
}

fn build_error(kernel: &Kernel, arch: Arch, e: BuildError) -> Error {
    Error::Instrument {
        kernel: kernel.name().to_string(),
        file: kernel.source().name.clone(),
        arch: arch.sm_name(),
        source: Box::new(e),
    }
}

impl InstCache {
    /// The bounds-checked build of `kernel` for `arch`, made on first use.
    pub(crate) fn build(&self, kernel: &Kernel, arch: Arch) -> Result<Arc<Build>, Error> {
        // Held while building: two threads asking for the same arch build once.
        let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, b)) = builds.iter().find(|(a, _)| *a == arch) {
            return Ok(Arc::clone(b));
        }
        let (inst, symbol, log) = instrumented_ptx(kernel, arch)?;
        let Some(entry) = inst.kernel(&symbol).cloned() else {
            return Err(build_error(kernel, arch, BuildError::NoEntry { symbol }));
        };
        let assembled = assemble_ptx(&inst.ptx, arch, &kernel.source().name)
            .map_err(|e| build_error(kernel, arch, e.into()))?;
        let hidden = hidden_params(entry.num_params as usize);
        let compiled = kernel.finish(arch, assembled.cubin, symbol, hidden, log)?;
        let b = Arc::new(Build {
            kernel: entry,
            compiled: Arc::new(compiled),
        });
        builds.push((arch, Arc::clone(&b)));
        Ok(b)
    }

    /// `build` loaded in `ctx`, loaded on first use.
    pub(crate) fn loaded(
        &self,
        kernel: &Kernel,
        build: &Arc<Build>,
        ctx: &Arc<CudaContext>,
    ) -> Result<Arc<Loaded>, Error> {
        let find = |table: &Vec<(Arc<Build>, Arc<Loaded>)>| {
            table
                .iter()
                .find(|(b, l)| Arc::ptr_eq(b, build) && l.state.is_state_of(ctx))
                .map(|(_, l)| Arc::clone(l))
        };
        if let Some(l) = find(&self.loaded.read().unwrap_or_else(|p| p.into_inner())) {
            return Ok(l);
        }
        let state: Arc<ContextState> = state_of(ctx)?;
        state.check_health()?;
        let _ = kernel;
        let loaded = Kernel::load_compiled(ctx, state, Arc::clone(&build.compiled))?;
        let mut table = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = find(&table) {
            return Ok(l);
        }
        table.push((Arc::clone(build), Arc::clone(&loaded)));
        Ok(loaded)
    }
}

/// [`Kernel::coverage`]: from the instrumented PTX for the kernel's target architecture (or
/// sm_90 when it has none), without a GPU and without assembling.
pub(crate) fn coverage(kernel: &Kernel) -> Result<Option<Coverage>, Error> {
    let arch = kernel.declared_arch().unwrap_or(Arch::new(9, 0));
    let (inst, symbol, _) = instrumented_ptx(kernel, arch)?;
    Ok(inst.kernel(&symbol).map(|k| k.coverage.clone()))
}

/// The per-context device block bounds-checked launches use for the fault record. Grown on
/// demand; never freed while its context lives (it is a few hundred bytes), and freed with the
/// context by the driver: holding a plain address keeps no context alive.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) ptr: u64,
    pub(crate) bytes: usize,
}
