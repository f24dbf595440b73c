use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/saxpy.cu", block = 256, cluster = (2, 0, 1))]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn main() {}
