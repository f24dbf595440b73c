use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// A PTX kernel with no nvJitLink in this build: what `cudacheck prepare` recorded from
// assembling it still shows 1024 threads need too many registers.
#[checked_kernel(ptx_file = "ui/cuda/heavy.ptx", name = "heavy", arch = "sm_90", block = 1024)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
