use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// No NVRTC and nothing prepared for this kernel: the build never fails for want of NVRTC; it
// checks what the source and sm_90's table decide (the launch checks the rest).
#[checked_kernel(file = "ui/cuda/big_static.cu", arch = "sm_90", block = 256, shared = 200 * 1024)]
pub fn big_static(out: &mut CudaSlice<f32>, n: i32);

fn main() {}
