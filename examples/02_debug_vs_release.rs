//! What a device fault looks like in each sync mode.
//!
//! - `.sync(false)` (release builds): the launch returns at once; the fault surfaces at a
//!   later call, which names the recent launches that may have caused it.
//! - `.sync(true)` (debug builds, or `CUDACHECK_SYNC=1`): cudacheck waits after each
//!   launch, so the fault names its launch exactly, with the Rust line that made it.
//!
//! - bounds checking (the default for debug builds, `.instrument(true)` here): the bad write
//!   is skipped, the launch returns `Error::OutOfBounds` naming the buffer, index, thread and
//!   source line, and the context stays usable: the next launch works.
//!
//! Each mode runs in a child process: a device fault leaves CUDA unusable for the rest of the
//! process that raised it.
//!
//! `cargo run -p cudacheck-examples --example 02_debug_vs_release`

use cudacheck::nvrtc::CudaSource;
use cudacheck::Kernel;
use cudacheck_examples::{report, stream_or_exit};

const SRC: &str = r#"
extern "C" __global__ void fill(float* out, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}
// The bug: no bound check, and an index far past the buffer.
extern "C" __global__ void buggy(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i + (1ll << 38)] = 1.0f;
}
"#;

fn run(sync: bool, checked: bool) -> Result<(), Box<dyn std::error::Error>> {
    let stream = stream_or_exit();
    let src = CudaSource::from_str("example.cu", SRC);
    // Without bounds checking the bad write reaches the device and faults there.
    let fill = Kernel::new(src.clone(), "fill").sync(sync).build();
    let buggy = Kernel::new(src, "buggy")
        .sync(sync)
        .instrument(checked)
        .build();
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 256)?;

    let mut attempt = || -> Result<(), cudacheck::Error> {
        // SAFETY: `fill` stays inside `out`; `buggy` does not, on purpose: its write faults
        // on the device, which is what this example shows cudacheck reporting.
        unsafe {
            fill.launch(&stream)
                .grid(1)
                .block(256)
                .arg_mut(&mut out)
                .arg(&1.0f32)
                .arg(&256i32)
                .run()?;
            buggy
                .launch(&stream)
                .grid(1)
                .block(256)
                .arg_mut(&mut out)
                .arg(&256i32)
                .run()?;
            fill.launch(&stream)
                .grid(1)
                .block(256)
                .arg_mut(&mut out)
                .arg(&2.0f32)
                .arg(&256i32)
                .run()?;
        }
        cudacheck::synchronize(&stream)
    };
    let label = if checked {
        "bounds-checked".to_string()
    } else {
        format!("sync({sync})")
    };
    match attempt() {
        Ok(()) => println!("{label}: no fault?"),
        Err(e) => println!("{label}:\n{}\n", report(&e)),
    }
    if checked {
        // The write was dropped on the device: the context is healthy and work goes on.
        // SAFETY: `fill` stays inside `out`.
        unsafe {
            fill.launch(&stream)
                .grid(1)
                .block(256)
                .arg_mut(&mut out)
                .arg(&3.0f32)
                .arg(&256i32)
                .run()?;
        }
        let host = stream.clone_dtoh(&out)?;
        assert!(host.iter().all(|&v| v == 3.0));
        println!(
            "bounds-checked: the next launch on the same context worked (out[0] = {})\n",
            host[0]
        );
    }
    Ok(())
}

/// A device fault poisons the process for CUDA, so each mode runs in its own child process.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("never") => run(false, false),
        Some("always") => run(true, false),
        Some("checked") => run(true, true),
        _ => {
            for mode in ["never", "always", "checked"] {
                let status = std::process::Command::new(std::env::current_exe()?)
                    .arg(mode)
                    .status()?;
                if !status.success() {
                    return Err(format!("the {mode} run failed: {status}").into());
                }
            }
            Ok(())
        }
    }
}
