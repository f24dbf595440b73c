use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/types.cu")]
pub fn bytes(out: &mut CudaSlice<i8>, input: &CudaSlice<f64>, n: i32);

fn main() {}
