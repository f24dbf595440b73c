// The happy path: a fixed block, requirements, and a launch that type-checks.
use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream, CudaView};

/// y = a * x + y.
#[checked_kernel(
    file = "ui/cuda/saxpy.cu",
    block = 256,
    requires(y.len() >= n as usize, x.len() >= n as usize)
)]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

/// The same kernel under another Rust name, with the whole configuration left to the caller
/// and a view in place of the slice.
#[checked_kernel(file = "ui/cuda/saxpy.cu", name = "saxpy")]
pub fn saxpy_view(y: &mut CudaSlice<f32>, x: &CudaView<'_, f32>, a: f32, n: i32);

#[allow(dead_code)]
fn launch(
    stream: &Arc<CudaStream>,
    y: &mut CudaSlice<f32>,
    x: &CudaSlice<f32>,
) -> Result<(), cudacheck::Error> {
    let n = y.len() as i32;
    // SAFETY: saxpy touches y[i] and x[i] for i < n only, and the requirements check the lengths.
    unsafe { saxpy(stream, (n as u32).div_ceil(256), y, x, 2.0, n)? };
    let view = x.slice(..);
    // SAFETY: as above.
    unsafe {
        saxpy_view(
            stream,
            ((n as u32).div_ceil(128), cudacheck::block!(128)),
            y,
            &view,
            2.0,
            n,
        )
    }
}

fn main() {}
