use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// The PTX kernel with a block its registers fit.
#[checked_kernel(ptx_file = "ui/cuda/heavy.ptx", name = "heavy", arch = "sm_90", block = 512)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
