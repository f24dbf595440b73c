use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[repr(C)]
pub struct Particle {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub mass: f32,
}

/// The right layout, but no `unsafe impl DeviceRepr`: cudarc's promise that the bytes mean the
/// same on the device is the user's to make.
#[repr(C)]
pub struct Params {
    pub dt: f32,
    pub steps: i32,
    pub damping: f64,
}

#[checked_kernel(file = "ui/cuda/particles.cu")]
pub fn integrate(particles: &mut CudaSlice<Particle>, p: Params, n: i32);

fn main() {}
