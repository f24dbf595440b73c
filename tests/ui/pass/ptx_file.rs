// A kernel shipped as PTX (what `nvcc --ptx` in a build script writes), checked against its
// parameter list at build time.
use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[checked_kernel(ptx_file = "ui/cuda/saxpy.ptx", block = 256, requires(y.len() >= n as usize))]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn main() {
    // The wrapper's kernel is made from the PTX, not from CUDA source.
    assert_eq!(saxpy::kernel().name(), "saxpy");
}
