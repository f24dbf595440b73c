use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/types.cu")]
pub fn fill_u32(out: &mut CudaSlice<u32>, value: u32, n: u64);

fn main() {}
