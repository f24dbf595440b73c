use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/types.cu", name = "fill")]
pub fn fill(out: &mut CudaSlice<u32>, value: u32, n: usize);

fn main() {}
