use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// A kernel shipped as PTX: the build assembles it (ptxas through nvJitLink) for sm_90 and finds
// its registers, as the launch would.
#[checked_kernel(ptx_file = "ui/cuda/heavy.ptx", name = "heavy", arch = "sm_90", block = 1024)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
