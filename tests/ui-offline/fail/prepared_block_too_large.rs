use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// No NVRTC in this build: the resources `cudacheck prepare` recorded (ui-offline/prepared)
// still show that 1024 threads of `heavy` need more registers than a block may use.
#[checked_kernel(file = "ui/cuda/heavy.cu", arch = "sm_90", block = 1024)]
pub fn heavy(input: &CudaSlice<f32>, out: &mut CudaSlice<f32>, n: i32);

fn main() {}
