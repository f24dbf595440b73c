use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};

// One missing `,`: one error there. `block`, `requires` and `instrument` still count, so the
// wrapper takes the grid alone and the call below compiles as written.
#[checked_kernel(file = "ui/cuda/saxpy.cu", arch = "sm_90", block = 512, requires(n > 0) instrument)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

#[allow(dead_code)]
fn launch(s: &Arc<CudaStream>, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>) -> Result<(), cudacheck::Error> {
    unsafe { saxpy(s, 4u32, y, x, 2.0, 1000) }
}

fn main() {}
