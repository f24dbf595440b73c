use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

#[repr(C)]
pub struct Particle {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub mass: f32,
}

#[checked_kernel(file = "ui/cuda/particles.cu")]
pub fn integrate(particles: &mut CudaSlice<Particle>, p: f64, n: i32);

fn main() {}
