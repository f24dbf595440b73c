use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// No NVRTC, and the prepared resources were taken from another version of the source (the
// test marks them so): the build says so and how to refresh them.
#[checked_kernel(file = "ui/cuda/stale.cu", arch = "sm_90", block = 256)]
pub fn stale(out: &mut CudaSlice<f32>, n: i32);

fn main() {}
