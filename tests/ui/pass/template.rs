// A template kernel, named by its instantiations.
use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};

#[checked_kernel(file = "ui/cuda/scale.cu", name = "scale<float>", block = (256, 1, 1))]
pub fn scale_f32(out: &mut CudaSlice<f32>, input: &CudaSlice<f32>, factor: f32, n: i32);

#[checked_kernel(file = "ui/cuda/scale.cu", name = "scale<__half>", block = 256)]
pub fn scale_f16(out: &mut CudaSlice<half::f16>, input: &CudaSlice<half::f16>, factor: f32, n: i32);

#[allow(dead_code)]
fn launch(
    stream: &Arc<CudaStream>,
    out: &mut CudaSlice<half::f16>,
    input: &CudaSlice<half::f16>,
) -> Result<(), cudacheck::Error> {
    let n = out.len() as i32;
    // SAFETY: scale touches out[i] and in[i] for i < n only.
    unsafe { scale_f16(stream, (n as u32).div_ceil(256), out, input, 0.5, n) }
}

fn main() {}
