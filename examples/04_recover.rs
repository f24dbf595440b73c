//! A long-running program surviving a device fault: a failed device `assert` poisons the
//! context, cudacheck says so on every later call, and `cudacheck::recover` resets it.
//!
//! `cargo run -p cudacheck-examples --example 04_recover`

use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel, SyncMode};
use cudacheck_examples::{report, stream_or_exit};

const SRC: &str = r#"
#include <assert.h>
extern "C" __global__ void check_positive(const float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(v[i] > 0.0f);
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut stream = stream_or_exit();
    let k = Kernel::new(CudaSource::from_str("check.cu", SRC), "check_positive")
        .sync(SyncMode::Always)
        .build();
    for (round, bad) in [false, true, false].into_iter().enumerate() {
        let data: Vec<f32> = (0..1024)
            .map(|i| if bad && i == 500 { -1.0 } else { 1.0 })
            .collect();
        let v = cudacheck::alloc_copy(&stream, &data)?;
        // SAFETY: the kernel reads v[i] for i < n only.
        let r = unsafe {
            k.launch(&stream)
                .grid(4)
                .block(256)
                .arg(&v)
                .arg(&1024i32)
                .run()
        };
        match r {
            Ok(()) => println!("round {round}: all positive"),
            Err(e @ Error::Fault { .. }) => {
                println!("round {round}: {}", report(&e));
                // Every later call on this context is refused, naming the fault.
                if let Err(again) = cudacheck::check(&stream) {
                    println!("then: {again}");
                }
                drop(v); // old buffers go before the reset
                stream = cudacheck::recover(&stream)?;
                println!("recovered: a fresh context on the same device");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
