use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// 512 threads fit `heavy`'s registers on both architectures.
#[checked_kernel(file = "ui/cuda/heavy.cu", arch = ["sm_80", "sm_90"], block = 512)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
