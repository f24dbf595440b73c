use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// `x` is 8 bytes either way, but the kernel loads through it: it must be a buffer.
#[checked_kernel(ptx_file = "ui/cuda/saxpy.ptx", block = 256)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: u64, a: f32, n: i32);

fn main() {}
