use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, DeviceRepr};

#[repr(C)]
pub struct Particle {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub mass: f32,
}

/// `Params` forgets the `double damping` field: 8 bytes instead of 16.
#[repr(C)]
pub struct Params {
    pub dt: f32,
    pub steps: i32,
}

// SAFETY: plain `#[repr(C)]` data.
unsafe impl DeviceRepr for Params {}

#[checked_kernel(file = "ui/cuda/particles.cu")]
pub fn integrate(particles: &mut CudaSlice<Particle>, p: Params, n: i32);

fn main() {}
