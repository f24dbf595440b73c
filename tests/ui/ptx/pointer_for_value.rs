use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// `n` is a 4-byte value in the PTX; a buffer is an 8-byte pointer.
#[checked_kernel(ptx_file = "ui/cuda/saxpy.ptx", block = 256)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: &CudaSlice<i32>);

fn main() {}
