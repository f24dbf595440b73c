use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// 40 KiB of static shared memory (sized by a macro, so only the compiled kernel tells) plus
// 200 KiB of dynamic passes sm_90's 227 KiB per block.
#[checked_kernel(file = "ui/cuda/big_static.cu", arch = "sm_90", block = 256, shared = 200 * 1024)]
pub fn big_static(out: &mut CudaSlice<f32>, n: i32);

fn main() {}
