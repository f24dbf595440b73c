//! Bounds-checked launches: the runtime side of [`cudacheck_core::instrument`].
//!
//! A kernel's instrumented build is its source rewritten by `cudacheck_core::instrument`,
//! compiled with exactly the kernel's NVRTC options (so the compat headers, include
//! directories and defines are those of the plain build) and cached beside the plain build as
//! its `Variant::Checked` (see `build.rs`). The launch side (lengths, record, hidden
//! parameters) is the checked plan of the one launch path (`launch/checked.rs`); this module
//! makes the rewrite and turns a fault record read back into [`OutOfBounds`] or
//! [`DeviceAssert`] ([`report`]).
//!
//! Whether a launch is bounds-checked is decided by [`InstrumentMode`](crate::InstrumentMode)'s
//! order: the launch, the kernel, `CUDACHECK_INSTRUMENT`, the build profile.

mod fault;

use cudacheck_core::instrument::{
    instrument, InstrumentError, InstrumentOptions, Instrumented, InstrumentedKernel,
};
use cudacheck_core::Dim3;

pub use cudacheck_core::instrument::Coverage;
pub(crate) use fault::{error_of, FaultContext};
pub use fault::{DeviceAssert, OutOfBounds};

use crate::error::Error;
use crate::nvrtc::CudaSource;

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

    pub(crate) fn defines(spec: Option<Spec>) -> Vec<(String, Option<String>)> {
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

/// A bounds-checked launch's outcome from its fault record, read back after the kernel:
/// decoded with `cudacheck_core::instrument::decode`, then turned into an error by
/// [`error_of`].
pub(crate) fn report(record: &[u8], cx: &FaultContext<'_>) -> Result<(), Error> {
    let Some(rec) = cudacheck_core::instrument::decode(record) else {
        return Ok(());
    };
    match error_of(&rec, cx) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The rewrite of `source` and the entry of kernel `name` in it.
pub(crate) fn rewrite(source: &CudaSource, name: &str) -> Result<Rewritten, InstrumentError> {
    let inst = instrument(&source.text, &source.name, &InstrumentOptions::default())?;
    let entry = inst.kernel(instrumenter_name(name)).cloned();
    Ok(Rewritten {
        source: CudaSource {
            name: source.name.clone(),
            text: inst.source.clone(),
            dir: source.dir.clone(),
        },
        inst,
        kernel: entry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;

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
