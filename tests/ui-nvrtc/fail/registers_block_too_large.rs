use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// NVRTC gives `heavy` 128 registers per thread on sm_90: 1024 threads need 131,072 registers,
// twice what a block may use. Only the compiled kernel knows; the build compiles it.
#[checked_kernel(file = "ui/cuda/heavy.cu", arch = "sm_90", block = 1024)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
