use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

const THREADS: u32 = 256;

#[checked_kernel(file = "ui/cuda/saxpy.cu", block = THREADS)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn main() {}
