use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/saxpy.cu")]
pub fn saxpy<T>(y: &mut CudaSlice<T>, x: &CudaSlice<T>, a: f32, n: i32);

fn main() {}
