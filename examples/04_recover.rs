//! A long-running program surviving device faults.
//!
//! A failed device `assert` poisons the context; cudacheck then refuses every later call on
//! it, naming the fault and the launch. NVIDIA's driver keeps such faults for the life of the
//! process, so `cudacheck::recover` (which resets the context) usually answers
//! `Error::Unrecoverable`; the way to go on is to run each unit of risky GPU work in a child
//! process, as this example does: the supervisor survives every fault and starts the next
//! round in a fresh process.
//!
//! `cargo run -p cudacheck-examples --example 04_recover`

use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel};
use cudacheck_examples::{report, stream_or_exit};

const SRC: &str = r#"
#include <assert.h>
extern "C" __global__ void check_positive(const float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(v[i] > 0.0f);
}
"#;

/// Exit code of a worker whose device faulted.
const FAULTED: i32 = 3;

/// One round of work; `bad` plants a negative value, which trips the kernel's assert.
fn worker(round: usize, bad: bool) -> Result<(), Box<dyn std::error::Error>> {
    let stream = stream_or_exit();
    // Plain (not bounds-checked) on purpose: this example is about a fault that does reach the
    // driver. With bounds checking the assert would come back as Error::DeviceAssert instead,
    // without poisoning anything.
    let k = Kernel::new(CudaSource::from_str("check.cu", SRC), "check_positive")
        .sync(true)
        .instrument(false)
        .build();
    let data: Vec<f32> = (0..1024)
        .map(|i| if bad && i == 500 { -1.0 } else { 1.0 })
        .collect();
    let v = cudacheck::alloc_copy(&stream, &data)?;
    // SAFETY: the kernel reads v[i] for i < n only, and v holds n elements.
    let r = unsafe {
        k.launch(&stream)
            .grid(4)
            .block(256)
            .arg(&v)
            .arg(&1024i32)
            .run()
    };
    match r {
        Ok(()) => {
            println!("round {round}: all positive");
            Ok(())
        }
        Err(e @ Error::Fault { .. }) => {
            println!("round {round}: {}", report(&e));
            // Every later call on this context is refused, naming the fault.
            if let Err(again) = cudacheck::check(&stream) {
                println!("round {round}, next call: {again}");
            }
            drop(v); // old buffers go before a reset
            match cudacheck::recover(&stream) {
                Ok(_) => println!("round {round}: the driver allowed a reset"),
                Err(e) => println!("round {round}, recover: {e}"),
            }
            std::process::exit(FAULTED);
        }
        Err(e) => Err(e.into()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, cmd, round, bad] = args.as_slice() {
        if cmd == "worker" {
            return worker(round.parse()?, bad == "bad");
        }
    }
    // The supervisor: never touches the GPU itself, so no fault can stop it.
    for (round, bad) in [false, true, false].into_iter().enumerate() {
        let status = std::process::Command::new(std::env::current_exe()?)
            .args([
                "worker",
                &round.to_string(),
                if bad { "bad" } else { "good" },
            ])
            .status()?;
        match status.code() {
            Some(0) => {}
            Some(FAULTED) => {
                println!("supervisor: round {round} faulted; going on in a fresh process")
            }
            _ => return Err(format!("round {round} failed: {status}").into()),
        }
    }
    println!("supervisor: all rounds done");
    Ok(())
}
