//! Bounds-checked launches: the runtime side of [`cudacheck_core::instrument`].
//!
//! A kernel's instrumented build is its source rewritten by `cudacheck_core::instrument`,
//! compiled with exactly the kernel's NVRTC options (so the compat headers, include
//! directories and defines are those of the plain build) and cached apart from the plain build:
//! one CUBIN per architecture, one module per context. A bounds-checked launch uploads the
//! lengths of its buffer arguments (and the dynamic shared bytes) with a zeroed fault record
//! into a per-context scratch block, appends the two hidden parameters, launches, synchronizes,
//! reads the record back and turns a recorded fault into [`OutOfBounds`] or [`DeviceAssert`].
//!
//! Whether a launch is bounds-checked is decided by [`InstrumentMode`](crate::InstrumentMode)'s
//! order: the launch, the kernel, `CUDACHECK_INSTRUMENT`, the build profile.

mod fault;
mod launch;

use std::sync::{Arc, Mutex, OnceLock, RwLock};

use cudacheck_core::instrument::{
    instrument, InstrumentError, InstrumentOptions, Instrumented, InstrumentedKernel,
};
use cudacheck_core::Dim3;
use cudarc::driver::CudaContext;

pub use cudacheck_core::instrument::Coverage;
pub use fault::{DeviceAssert, OutOfBounds};
pub(crate) use launch::run_checked;

use crate::context::{state_of, ContextState};
use crate::error::Error;
use crate::kernel::{Compiled, Kernel, Loaded};
use crate::launch::parse_sync;
use crate::nvrtc::CudaSource;

/// `CUDACHECK_INSTRUMENT`, read once per process: `Some(true)` for 1/true/on, `Some(false)` for
/// 0/false/off, `None` when unset or unrecognized.
pub(crate) fn env_instrument() -> Option<bool> {
    static ENV: OnceLock<Option<bool>> = OnceLock::new();
    *ENV.get_or_init(|| parse_sync(std::env::var("CUDACHECK_INSTRUMENT").ok().as_deref()))
}

/// The name the instrumenter lists a kernel under: the kernel's name without template
/// arguments or namespaces (`ns::scale<float>` is `scale`).
fn instrumenter_name(name: &str) -> &str {
    let base = name.split('<').next().unwrap_or(name);
    base.rsplit("::").next().unwrap_or(base).trim()
}

/// A kernel's source, rewritten.
#[derive(Debug)]
pub(crate) struct Rewritten {
    /// The rewrite, as NVRTC compiles it (same name and directory as the original).
    pub(crate) source: CudaSource,
    pub(crate) inst: Instrumented,
    /// This kernel's entry, when the instrumenter rewrote it.
    pub(crate) kernel: Option<InstrumentedKernel>,
}

/// A kernel's instrumented build: the rewrite, one CUBIN per architecture, one module per
/// context. Lives beside the plain build in the kernel.
#[derive(Debug, Default)]
pub(crate) struct InstCache {
    rewrite: OnceLock<Result<Arc<Rewritten>, InstrumentError>>,
    compiled: Mutex<Vec<(Option<Spec>, Arc<Compiled>)>>,
    loaded: RwLock<Vec<(Option<Spec>, Arc<Loaded>)>>,
}

/// What an instrumented build is specialised for: the launch's block size and dynamic shared
/// bytes, which the prelude turns into facts the compiler uses to drop checks it can prove
/// (`__CC_BX`..., `__CC_DYN_SMEM`). One build per distinct pair, compiled on first use: bounds
/// checking is a debug-build feature, where a compile per launch shape is a fair price for
/// kernels that run close to their plain speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) block: Dim3,
    pub(crate) dynamic_shared_bytes: u32,
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
        })
    }

    fn defines(spec: Option<Spec>) -> Vec<(String, Option<String>)> {
        let Some(s) = spec else { return Vec::new() };
        let d = |n: &str, v: u32| (n.to_string(), Some(v.to_string()));
        vec![
            d("__CC_BX", s.block.x),
            d("__CC_BY", s.block.y),
            d("__CC_BZ", s.block.z),
            d("__CC_DYN_SMEM", s.dynamic_shared_bytes),
        ]
    }
}

impl InstCache {
    /// The rewrite of `kernel`'s source, made once.
    pub(crate) fn rewrite(&self, kernel: &Kernel) -> Result<&Arc<Rewritten>, Error> {
        let r = self.rewrite.get_or_init(|| {
            let src = kernel.source();
            let inst = instrument(&src.text, &src.name, &InstrumentOptions::default())?;
            let name = instrumenter_name(kernel.name());
            let entry = inst.kernel(name).cloned();
            Ok(Arc::new(Rewritten {
                source: CudaSource {
                    name: src.name.clone(),
                    text: inst.source.clone(),
                    dir: src.dir.clone(),
                },
                inst,
                kernel: entry,
            }))
        });
        r.as_ref().map_err(|e| Error::Instrument {
            kernel: kernel.name().to_string(),
            file: kernel.source().name.clone(),
            source: Box::new(e.clone()),
        })
    }

    /// The instrumented build for `spec` loaded in `ctx`: compiled (once per architecture and
    /// spec) and loaded (once per context and spec) on first use.
    pub(crate) fn loaded(
        &self,
        kernel: &Kernel,
        rewritten: &Rewritten,
        ctx: &Arc<CudaContext>,
        spec: Option<Spec>,
    ) -> Result<Arc<Loaded>, Error> {
        {
            let table = self.loaded.read().unwrap_or_else(|p| p.into_inner());
            if let Some((_, l)) = table
                .iter()
                .find(|(s, l)| *s == spec && l.state.is_state_of(ctx))
            {
                return Ok(Arc::clone(l));
            }
        }
        let state: Arc<ContextState> = state_of(ctx)?;
        state.check_health()?;
        let arch = kernel.target_arch(&state);
        let compiled = {
            // Held while compiling: two threads asking for the same arch compile once.
            let mut cache = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
            match cache.iter().find(|(s, c)| *s == spec && c.arch == arch) {
                Some((_, c)) => Arc::clone(c),
                None => {
                    let hidden = cudacheck_core::instrument::HIDDEN_PARAMS.len();
                    let defines = Spec::defines(spec);
                    let c = Arc::new(kernel.compile(&rewritten.source, arch, hidden, &defines)?);
                    cache.push((spec, Arc::clone(&c)));
                    c
                }
            }
        };
        let loaded = Kernel::load_compiled(ctx, state, compiled)?;
        let mut table = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        if let Some((_, l)) = table
            .iter()
            .find(|(s, l)| *s == spec && l.state.is_state_of(ctx))
        {
            return Ok(Arc::clone(l));
        }
        table.push((spec, Arc::clone(&loaded)));
        Ok(loaded)
    }
}

/// [`Kernel::coverage`].
pub(crate) fn coverage(kernel: &Kernel) -> Result<Option<Coverage>, Error> {
    let r = kernel.inst_cache().rewrite(kernel)?;
    Ok(r.kernel.as_ref().map(|k| k.coverage.clone()))
}

/// The per-context device block bounds-checked launches use: the fault record, then the
/// lengths array. Grown when a kernel needs more lengths; never freed while its context lives
/// (it is a few hundred bytes), and freed with the context by the driver: holding a plain
/// address keeps no context alive.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) ptr: u64,
    pub(crate) bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instrumenter_names_drop_templates_and_namespaces() {
        assert_eq!(instrumenter_name("saxpy"), "saxpy");
        assert_eq!(instrumenter_name("scale<float>"), "scale");
        assert_eq!(instrumenter_name("ns::inner::scale<__half>"), "scale");
    }

    #[test]
    fn coverage_needs_no_gpu_and_lists_skipped_accesses() {
        let src = "extern \"C\" __global__ void k(float* p, int n)\n{\n    p[threadIdx.x] = 1.0f;\n    ((float4*)p)[0] = make_float4(0, 0, 0, 0);\n}\n";
        let k = Kernel::new(CudaSource::from_str("k.cu", src), "k").build();
        let c = k.coverage().unwrap().unwrap();
        assert_eq!(c.instrumented, 1);
        assert_eq!(c.skipped.len(), 1);
        assert_eq!(c.skipped[0].line, 4);
        assert_eq!(
            c.skipped[0].reason,
            cudacheck_core::instrument::SkipReason::PointerCast
        );
        let missing = Kernel::new(CudaSource::from_str("k.cu", src), "other").build();
        assert_eq!(missing.coverage().unwrap(), None);
    }
}
