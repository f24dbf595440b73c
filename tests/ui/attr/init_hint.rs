use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/saxpy.cu", uninit = true)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn main() {}
