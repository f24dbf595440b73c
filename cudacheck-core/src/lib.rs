//! The logic that cudacheck's compile-time macro, its launch-time runtime and its offline CLI
//! share, so that they can never disagree about a limit because each wrote it down:
//!
//! - [`arch`]: architecture names (`sm_90`) and the set cudacheck supports;
//! - [`limits`]: the hardware limits of each compute capability;
//! - [`mod@validate`]: the pure launch validator and occupancy calculator;
//! - [`cubin`]: reading a kernel's resources out of a CUBIN's `.nv.info` records;
//! - [`source`]: the CUDA source model (kernels, parameters, types), from a real parser;
//! - [`instrument`]: the bounds-checking rewriter of PTX; [`race`] and [`mod@init`], the race- and
//!   init-checking rewrites beside it (none of the three names another).
//!
//! Nothing here needs a GPU, NVRTC or the CUDA driver.

pub mod arch;
pub mod cubin;
pub mod dim;
pub mod image;
pub mod init;
pub mod ir;
pub mod instrument;
pub mod limits;
pub mod ptx_entry;
pub mod race;
pub mod resources;
mod site;
mod sources;
pub mod source;
pub mod text;
pub mod validate;

pub use arch::Arch;
pub use dim::{Axis, Dim3};
pub use limits::{ArchLimits, LimitsOrigin, PortableLimits, PORTABLE};
pub use ptx_entry::{
    find_entry, ptx_entries, ptx_subset, ptx_subset_of, ParamUse, PtxEntry, PtxParam,
};
pub use resources::{KernelResources, ParamSlot};
pub use source::{parse_source, CudaType, KernelDecl, Scalar, SourceError, SourceModel};
pub use validate::{
    occupancy, validate, LaunchConfig, Limiter, Occupancy, ValidateOptions, Violation,
};
