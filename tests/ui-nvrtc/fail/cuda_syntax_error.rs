use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// A CUDA syntax error is one build error naming the `.cu` file's line.
#[checked_kernel(file = "ui/cuda/syntax_error.cu", arch = "sm_90", block = 256)]
pub fn broken(out: &mut CudaSlice<f32>, n: i32);

fn main() {}
