use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/saxpy.cu")]
pub fn saxpy(y: &CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn main() {}
