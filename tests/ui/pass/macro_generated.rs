// A kernel the preprocessor generates (`DEFINE_ADD(float)` -> `add_float`): accepted with the
// Rust signature as the declaration; the runtime checks it against the compiled kernel.
use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(file = "ui/cuda/generated.cu", grid = 64, block = 256)]
pub fn add_float(out: &mut CudaSlice<f32>, a: &CudaSlice<f32>, b: &CudaSlice<f32>, n: i32);

#[checked_kernel(file = "ui/cuda/generated.cu", name = "add_int")]
pub fn add_i32(out: &mut CudaSlice<i32>, a: &CudaSlice<i32>, b: &CudaSlice<i32>, n: i32);

fn main() {}
