//! Launch mistakes caught before anything reaches the GPU, each with the limit, the value
//! asked for, the value allowed and the fix. The context stays healthy throughout.
//!
//! `cargo run -p cudacheck-examples --example 03_bad_config`

use cudacheck::Kernel;
use cudacheck_examples::{kernel, report, stream_or_exit};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = stream_or_exit();
    let saxpy = Kernel::new(kernel("saxpy.cu")?, "saxpy").build();
    let n = 4096usize;
    let x = cudacheck::alloc_zeros::<f32>(&stream, n)?;
    let mut y = cudacheck::alloc_zeros::<f32>(&stream, n)?;
    let a = 2.0f32;
    let count = n as i32;

    // SAFETY (all launches): saxpy touches x[i], y[i] for i < n only; none of these launches
    // gets past validation anyway.
    // One statement per launch: a launch borrows its buffers until the end of its statement.
    let mut attempts = Vec::new();
    let result = unsafe {
        saxpy
            .launch(&stream)
            .grid(2)
            .block((32, 64, 1))
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&a)
            .arg(&count)
            .run()
    };
    attempts.push(("a block of 2048 threads", result));
    let result = unsafe {
        saxpy
            .launch(&stream)
            .grid((1, 70_000, 1))
            .block(256)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&a)
            .arg(&count)
            .run()
    };
    attempts.push(("a grid of 70000 along y", result));
    let result = unsafe {
        saxpy
            .launch(&stream)
            .grid(16)
            .block(0)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&a)
            .arg(&count)
            .run()
    };
    attempts.push(("a zero-sized block", result));
    let result = unsafe {
        saxpy
            .launch(&stream)
            .grid(16)
            .block(256)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&a)
            .run()
    };
    attempts.push(("a missing argument", result));
    let result = unsafe {
        saxpy
            .launch(&stream)
            .grid(16)
            .block(256)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&2.0f64)
            .arg(&count)
            .run()
    };
    attempts.push(("a double where the kernel takes a float", result));
    let result = unsafe {
        saxpy
            .launch(&stream)
            .grid(16)
            .block(256)
            .shared_bytes(1 << 20)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&a)
            .arg(&count)
            .run()
    };
    attempts.push(("shared memory beyond the opt-in maximum", result));
    for (what, result) in attempts {
        match result {
            Ok(()) => println!("{what}: accepted?!"),
            Err(e) => println!("{what}:\n  {}\n", report(&e)),
        }
    }
    // Rejected launches never touched the context.
    cudacheck::check(&stream)?;
    println!("the context is still healthy");
    Ok(())
}
