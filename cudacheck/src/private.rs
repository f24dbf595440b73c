//! What macro-generated code needs and users do not: `::cudacheck::__private::...`.
//! Not part of the public API; may change in any release.

use std::sync::OnceLock;

pub use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
pub use half;

pub use crate::kernel::{Kernel, ParamKind, ParamSpec};
pub use crate::launch::{Grid, LaunchDims};
pub use crate::policy::{InstrumentMode, SyncMode};
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
