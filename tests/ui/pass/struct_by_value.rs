// A `#[repr(C)]` struct by value and a buffer of structs, layout-checked at compile time.
use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Particle {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub mass: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Params {
    pub dt: f32,
    pub steps: i32,
    pub damping: f64,
}

// SAFETY: plain `#[repr(C)]` data with the CUDA struct's layout (checked by the macro).
unsafe impl DeviceRepr for Params {}

#[checked_kernel(file = "ui/cuda/particles.cu", block = 128)]
pub fn integrate(particles: &mut CudaSlice<Particle>, p: Params, n: i32);

#[allow(dead_code)]
fn launch(
    stream: &Arc<CudaStream>,
    particles: &mut CudaSlice<Particle>,
) -> Result<(), cudacheck::Error> {
    let n = particles.len() as i32;
    let p = Params {
        dt: 0.01,
        steps: 1,
        damping: 0.5,
    };
    // SAFETY: integrate touches particles[i] for i < n only.
    unsafe { integrate(stream, (n as u32).div_ceil(128), particles, p, n) }
}

fn main() {}
