//! Compile `kernels/saxpy.cu` for the GPU at hand and launch it, checked.
//!
//! `cargo run -p cudacheck-examples --example 01_compile_and_launch`

use cudacheck::Kernel;
use cudacheck_examples::{kernel, report, stream_or_exit};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = stream_or_exit();
    // Nothing is compiled yet: the first launch compiles for this device's exact sm_XY.
    let saxpy = Kernel::new(kernel("saxpy.cu")?, "saxpy").build();

    let n = 1_000_000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = cudacheck::alloc_copy(&stream, &x)?;
    let mut dy = cudacheck::alloc_copy(&stream, &vec![1.0f32; n])?;

    // SAFETY: saxpy reads x[i] and writes y[i] only for i < n, and both hold n elements.
    let launched = unsafe {
        saxpy
            .launch(&stream)
            .grid((n as u32).div_ceil(256))
            .block(cudacheck::block!(256))
            .arg_mut(&mut dy)
            .arg(&dx)
            .arg(&2.0f32)
            .arg(&(n as i32))
            .run()
    };
    if let Err(e) = launched {
        eprintln!("{}", report(&e));
        std::process::exit(1);
    }
    let y = stream.clone_dtoh(&dy)?;
    assert!((0..n).all(|i| y[i] == 2.0 * x[i] + 1.0));
    println!(
        "saxpy of {n} elements: y[12345] = {} (2 x 12345 + 1)",
        y[12345]
    );

    let info = saxpy.load(&stream)?;
    println!(
        "compiled for {}: {} registers per thread, {} bytes static shared; at most {} threads per block on {}",
        info.arch,
        info.attributes.num_regs,
        info.attributes.shared_size_bytes,
        info.max_threads_per_block,
        info.limits.origin
    );
    Ok(())
}
