use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/types.cu")]
pub fn halve(out: &mut CudaSlice<f32>, input: &CudaSlice<half::f16>, unused: half::bf16, n: i64);

fn main() {}
