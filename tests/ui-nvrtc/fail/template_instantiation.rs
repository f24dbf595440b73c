use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// Each instantiation is compiled and checked on its own: `heavy_t<float>` fits 512 threads,
// `heavy_t<double>` (198 registers per thread) does not.
#[checked_kernel(file = "ui/cuda/heavy.cu", name = "heavy_t<float>", arch = "sm_90", block = 512)]
pub fn heavy_f32(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

#[checked_kernel(file = "ui/cuda/heavy.cu", name = "heavy_t<double>", arch = "sm_90", block = 512)]
pub fn heavy_f64(input: &CudaSlice<f64>, out: &mut CudaSlice<f64>, n: i32);

fn main() {}
