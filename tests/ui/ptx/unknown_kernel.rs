use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(ptx_file = "ui/cuda/saxpy.ptx", name = "daxpy", block = 256)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn main() {}
