use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// The PTX kernel takes four parameters; `n` is missing.
#[checked_kernel(ptx_file = "ui/cuda/saxpy.ptx", block = 256)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32);

fn main() {}
