use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/bounds.cu")]
pub fn hoard(out: &mut CudaSlice<f32>, n: i32);

fn main() {}
