use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/bounds.cu", block = 256)]
pub fn bounded(out: &mut CudaSlice<f32>, n: i32);

fn main() {}
