//! What macro-generated code needs and users do not: `::cudacheck::__private::...`.
//! Not part of the public API; may change in any release.

use std::sync::OnceLock;

pub use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
pub use half;

pub use crate::kernel::{Kernel, ParamKind, ParamSpec};
pub use crate::launch::{Grid, LaunchDims};
pub use cudacheck_core::Dim3;

/// A kernel built on first use, for the `static` a macro wrapper keeps:
/// `static K: LazyKernel = LazyKernel::new(|| Kernel::new(...).build());`.
pub struct LazyKernel {
    cell: OnceLock<Kernel>,
    init: fn() -> Kernel,
}

impl LazyKernel {
    pub const fn new(init: fn() -> Kernel) -> Self {
        LazyKernel {
            cell: OnceLock::new(),
            init,
        }
    }

    pub fn get(&self) -> &Kernel {
        self.cell.get_or_init(self.init)
    }
}

/// The engine behind `cudacheck run` (the `cudacheck-run` crate's interposer): the library's own
/// bounds-checked builds (instrumenter, nvJitLink, module cache) and device limits, for kernels
/// a program that never calls cudacheck launches. Not part of the public API.
pub mod engine {
    use cudacheck_core::instrument::{HostCheckSet, InstrumentedKernel};
    use cudacheck_core::{Arch, Dim3};

    pub use crate::driver::{limits_from_attributes, DeviceAttributes};
    use crate::instrument::Spec;
    use crate::{Error, Kernel, PtxSource};

    /// The launch shape a checked build serves (see `instrument::Spec`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Shape {
        pub block: Dim3,
        pub dynamic_shared_bytes: u32,
        /// Guarded accesses are host checks (the first build a launch tries).
        pub host_checks: bool,
        /// Host checks made on the device after all (those a launch's arguments fail).
        pub on_device: HostCheckSet,
        /// Shared-memory races and barriers are checked too.
        pub races: bool,
    }

    /// A bounds-checked build: its PTX (for the driver's JIT), symbol and site table.
    pub struct Build {
        pub ptx: String,
        pub symbol: String,
        pub sites: InstrumentedKernel,
    }

    /// A kernel of a PTX module the program loaded (`module_name` names it in reports).
    pub fn ptx_kernel(module_name: &str, ptx: String, symbol: &str) -> Kernel {
        Kernel::from_ptx(PtxSource::from_str(module_name, ptx), symbol).build()
    }

    /// `kernel`'s bounds-checked build for `arch` and `shape`, with every pointer parameter
    /// checked against the allocation base and length passed beside it (two-sided), from the
    /// module cache or made now; `None` for a block no GPU runs (validation refuses it first).
    ///
    /// # Errors
    /// The library's: the PTX cannot be instrumented, nvJitLink is missing or refuses it.
    pub fn checked_build(
        kernel: &Kernel,
        arch: Arch,
        shape: &Shape,
    ) -> Result<Option<Build>, Error> {
        let Some(spec) = Spec::of(shape.block, shape.dynamic_shared_bytes) else {
            return Ok(None);
        };
        let mut spec = spec.races(shape.races).on_device(shape.on_device);
        if !shape.host_checks {
            spec = spec.fully_checked();
        }
        spec.alloc_bases = true;
        let b = kernel.checked_build(arch, Some(spec))?;
        Ok(Some(Build {
            ptx: b.ptx,
            symbol: b.symbol,
            sites: b.sites,
        }))
    }
}
