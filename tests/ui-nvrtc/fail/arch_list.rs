use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// Each architecture of the list is compiled and checked: 1024 threads of `heavy` need more
// registers than a block may use on both.
#[checked_kernel(file = "ui/cuda/heavy.cu", arch = ["sm_80", "sm_90"], block = 1024)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
