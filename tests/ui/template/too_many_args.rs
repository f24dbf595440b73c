use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/scale.cu", name = "scale<float, int>")]
pub fn scale(out: &mut CudaSlice<f32>, input: &CudaSlice<f32>, factor: f32, n: i32);

fn main() {}
