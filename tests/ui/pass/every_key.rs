// Every key at once, with inline source: arch-checked literals, defines, includes, registers,
// dynamic shared memory, a cluster, requirements and instrumentation.
use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};

#[checked_kernel(
    source = r#"
        extern "C" __global__ void tile_sum(float* out, const float* in, unsigned n)
        {
            extern __shared__ float tile[];
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            tile[threadIdx.x] = i < n ? in[i] * SCALE : 0.0f;
            __syncthreads();
            if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
        }
    "#,
    name = "tile_sum",
    arch = "sm_90",
    include = ["ui/cuda"],
    define = ["SCALE=2.0f"],
    defines(UNUSED = 1, FLAG),
    max_registers = 64,
    block = (16, 16),
    grid = (8, 1, 1),
    shared = 16 * 16 * 4,
    cluster = (2, 1, 1),
    requires(input.len() >= n as usize, out.len() >= 8),
    instrument = false,
    races = false,
    init = false
)]
pub fn tile_sum(out: &mut CudaSlice<f32>, input: &CudaSlice<f32>, n: u32);

#[allow(dead_code)]
fn launch(
    stream: &Arc<CudaStream>,
    out: &mut CudaSlice<f32>,
    input: &CudaSlice<f32>,
) -> Result<(), cudacheck::Error> {
    let n = input.len() as u32;
    // SAFETY: tile_sum reads in[i] for i < n and writes out[blockIdx.x] for 8 blocks.
    unsafe { tile_sum(stream, out, input, n) }
}

fn main() {}
