use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};

// `block = ,`: one error at the missing value; the key still counts (the wrapper takes the
// grid alone) and the other entries are read.
#[checked_kernel(file = "ui/cuda/saxpy.cu", block = , requires(n > 0))]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

#[allow(dead_code)]
fn launch(s: &Arc<CudaStream>, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>) -> Result<(), cudacheck::Error> {
    unsafe { saxpy(s, 4u32, y, x, 2.0, 1000) }
}

fn main() {}
