//! The missing `__syncthreads()`: a block-wise neighbour sum through shared memory, first
//! without the barrier between writing the tile and reading a neighbour's element, then with
//! it. Race-checked (`Launch::races(true)`; `CUDACHECK_RACES=1` does the same for every
//! kernel), the first launch returns `Error::SharedRace` naming the array, the element, both
//! threads and both source lines; the context stays healthy and the fixed kernel's sums match
//! the CPU's. Exits 1 if the race is not reported or the sums differ.
//!
//! `cargo run -p cudacheck-examples --example 06_races`

use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel};
use cudacheck_examples::{report, stream_or_exit};

const SOURCE: &str = r#"
extern "C" __global__ void neighbour_sum(float* out, const float* in, int n, int sync)
{
    __shared__ float tile[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? in[i] : 0.0f;
    if (sync) __syncthreads();
    float right = tile[(t + 1) % blockDim.x];
    if (i < n) out[i] = tile[t] + right;
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = stream_or_exit();
    let source = CudaSource {
        name: "neighbour_sum.cu".into(),
        text: SOURCE.into(),
        dir: None,
    };
    let kernel = Kernel::new(source, "neighbour_sum").build();
    let n = 4096usize;
    let host: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let input = cudacheck::alloc_copy(&stream, &host)?;
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, n)?;

    for sync in [0i32, 1] {
        // SAFETY: the kernel reads `in` and writes `out` below `n` only, and both hold `n`
        // floats; `tile` has one element per thread of the 256-thread block.
        let result = unsafe {
            kernel
                .launch(&stream)
                .grid((n as u32).div_ceil(256))
                .block(256)
                .races(true)
                .arg_mut(&mut out)
                .arg(&input)
                .arg(&(n as i32))
                .arg(&sync)
                .run()
        };
        match (sync, result) {
            (0, Err(Error::SharedRace(race))) => {
                println!("without the barrier:\n{race}\n");
            }
            (0, other) => {
                eprintln!("the missing barrier was not reported: {other:?}");
                std::process::exit(1);
            }
            (_, Ok(())) => {
                let got = stream.clone_dtoh(&out)?;
                let want: Vec<f32> = (0..n)
                    .map(|i| {
                        let right = if i % 256 == 255 { i - 255 } else { i + 1 };
                        host[i] + host[right]
                    })
                    .collect();
                if got != want {
                    eprintln!("with the barrier, the sums differ from the CPU's");
                    std::process::exit(1);
                }
                println!("with the barrier: no race, {n} sums equal to the CPU's");
            }
            (_, Err(e)) => {
                eprintln!("with the barrier: {}", report(&e));
                std::process::exit(1);
            }
        }
    }
    Ok(())
}
