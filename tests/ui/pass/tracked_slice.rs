// Buffers whose unwritten memory init checking follows (`cudacheck::alloc_uninit`) are
// parameters as `CudaSlice` is: `&TrackedSlice<T>` for `const T*`, `&mut TrackedSlice<T>` for
// `T*`, with `requires` reading their length through the slice.
use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaStream;
use cudacheck::TrackedSlice;

#[checked_kernel(
    file = "ui/cuda/saxpy.cu",
    block = 256,
    init,
    requires(x.len() >= n as usize, y.len() >= n as usize)
)]
pub fn saxpy(y: &mut TrackedSlice<f32>, x: &TrackedSlice<f32>, a: f32, n: i32);

#[allow(dead_code)]
fn launch(stream: &Arc<CudaStream>, n: usize) -> Result<(), cudacheck::Error> {
    let mut y = cudacheck::alloc_uninit::<f32>(stream, n)?;
    let mut x = cudacheck::alloc_uninit::<f32>(stream, n)?;
    x.copy_from(0, &vec![1.0; n])?;
    y.memset_zeros(0..n)?;
    // SAFETY: saxpy touches y[i] and x[i] for i < n, and both hold n elements.
    unsafe { saxpy(stream, (n as u32).div_ceil(256), &mut y, &x, 2.0, n as i32) }
}

fn main() {}
