//! `#[checked_kernel]`: typed launch wrappers for `kernels/saxpy.cu` and `kernels/matmul.cu`,
//! checked against a CPU reference.
//!
//! `cargo run -p cudacheck-examples --example 05_macro`
//!
//! The attribute reads the CUDA source at compile time: a wrong parameter type, a `const`
//! mismatch or a block of 2048 threads here fails `cargo build`, not the launch. With `arch`,
//! the build also compiles each kernel with NVRTC (once: the module cache keeps it, and the
//! first launch on an sm_90 GPU reuses it) and checks the block against its registers and
//! shared memory; where NVRTC is absent, it reads what `cudacheck prepare` recorded in
//! `examples/.cudacheck/`.

use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;
use cudacheck_examples::{report, stream_or_exit};

/// y = a * x + y, one thread per element, 256 threads per block.
#[checked_kernel(
    file = "../kernels/saxpy.cu",
    arch = "sm_90",
    block = 256,
    requires(y.len() >= n as usize, x.len() >= n as usize)
)]
fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

/// C = A * B with 16 x 16 shared-memory tiles (the kernel's `__launch_bounds__(TILE * TILE)`).
#[checked_kernel(
    file = "../kernels/matmul.cu",
    name = "matmul_tiled",
    arch = "sm_90",
    block = (16, 16, 1),
    requires(c.len() >= (m * n) as usize, a.len() >= (m * k) as usize, b.len() >= (k * n) as usize)
)]
fn matmul(c: &mut CudaSlice<f32>, a: &CudaSlice<f32>, b: &CudaSlice<f32>, m: i32, n: i32, k: i32);

fn main() {
    if let Err(e) = run() {
        eprintln!("{}", report(e.as_ref()));
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let stream = stream_or_exit();

    // saxpy
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let dx = cudacheck::alloc_copy(&stream, &x)?;
    let mut dy = cudacheck::alloc_copy(&stream, &y0)?;
    // SAFETY: saxpy touches x[i], y[i] for i < n only; `requires` checked both lengths.
    unsafe {
        saxpy(
            &stream,
            (n as u32).div_ceil(256),
            &mut dy,
            &dx,
            3.0,
            n as i32,
        )?
    };
    let y = stream.clone_dtoh(&dy)?;
    let bad = (0..n).filter(|&i| y[i] != 3.0 * x[i] + y0[i]).count();
    assert_eq!(
        bad, 0,
        "saxpy differs from the CPU reference at {bad} elements"
    );
    println!("saxpy: {n} elements equal the CPU reference");

    // matmul, with sizes that are not multiples of the tile to exercise the edges.
    let (m, k, nn) = (300usize, 200usize, 170usize);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..k * nn).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let da = cudacheck::alloc_copy(&stream, &a)?;
    let db = cudacheck::alloc_copy(&stream, &b)?;
    // Poison the output so a kernel that skips an element cannot pass by luck.
    let mut dc = cudacheck::alloc_copy(&stream, &vec![f32::NAN; m * nn])?;
    let grid = ((nn as u32).div_ceil(16), (m as u32).div_ceil(16), 1);
    // SAFETY: the kernel guards row < m, col < n and the k loop; `requires` checked the lengths.
    unsafe {
        matmul(
            &stream, grid, &mut dc, &da, &db, m as i32, nn as i32, k as i32,
        )?
    };
    let c = stream.clone_dtoh(&dc)?;
    let mut worst = 0.0f32;
    for i in 0..m {
        for j in 0..nn {
            let r: f32 = (0..k).map(|p| a[i * k + p] * b[p * nn + j]).sum();
            worst = worst.max((c[i * nn + j] - r).abs());
        }
    }
    // Small integers: every product and partial sum is exact in f32.
    assert_eq!(
        worst, 0.0,
        "matmul differs from the CPU reference by {worst}"
    );
    println!("matmul: {m} x {k} times {k} x {nn} equals the CPU reference exactly");
    Ok(())
}
