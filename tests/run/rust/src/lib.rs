//! The Rust programs `cudacheck run` is tested on: plain cudarc, as a user's program would be
//! before anyone thought of cudacheck. Kernels come from `kernels/kernels.ptx` (generated from
//! `kernels/kernels.cu`, whose planted bad accesses carry `RUN-BUG(<case>)` markers).
//!
//! Conventions shared with the C++ programs (tests/run/cpp/common.cuh):
//! - `PROGRAM CASE` runs a case, `PROGRAM --list` prints the cases one a line;
//! - `correct` runs every scenario right, `bug_*` runs every scenario with one mistake planted;
//! - results go to stdout (bit patterns, hash, comparison with a CPU reference), the same bytes
//!   on every run; inputs are small integers so the GPU's arithmetic is exact;
//! - exit status 0 unless a CUDA call fails (then the error on stderr and 1). A launch refused
//!   for its configuration is expected in `bug_block_size` and printed on stdout.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

const PTX: &str = include_str!("../kernels/kernels.ptx");

/// Every case, in the order `--list` prints them.
pub const CASES: &[&str] = &[
    "correct",
    "bug_shape_too_long",
    "bug_view_stride",
    "bug_interior_below",
    "bug_block_size",
];

/// The program's whole behaviour; returns the exit status.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let case = match args.get(1).map(String::as_str) {
        Some("--list") if args.len() == 2 => {
            for c in CASES {
                println!("{c}");
            }
            return 0;
        }
        Some(c) if args.len() == 2 && CASES.contains(&c) => c,
        _ => {
            eprintln!(
                "usage: {} CASE (or --list); cases: {}",
                args[0],
                CASES.join(" ")
            );
            return 2;
        }
    };
    match run(case) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("a CUDA call failed: {e}");
            1
        }
    }
}

fn run(case: &str) -> Result<(), DriverError> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = ctx.load_module(Ptx::from_src(PTX))?;
    elementwise(&stream, &module, case == "bug_shape_too_long")?;
    strided_view(&stream, &module, case == "bug_view_stride")?;
    lagged_view(&stream, &module, case == "bug_interior_below")?;
    block_size(&stream, &module, case == "bug_block_size")?;
    Ok(())
}

/// A one-dimensional launch of `threads` threads, `block` per block.
fn linear(threads: usize, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(block), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A device buffer of `len` NaNs: what a kernel has not written cannot pass for a result.
fn poisoned(stream: &Arc<CudaStream>, len: usize) -> Result<CudaSlice<f32>, DriverError> {
    stream.clone_htod(&vec![f32::NAN; len])
}

/// `out = a + b` over a 20 x 50 shape. Planted: the element count of a shape with one element
/// too many (20 x 50 + 1): the thread of index 1000 reads a[1000] and b[1000] and writes
/// out[1000], each one past its buffer's end.
fn elementwise(
    stream: &Arc<CudaStream>,
    module: &Arc<CudaModule>,
    bug: bool,
) -> Result<(), DriverError> {
    let shape = [20usize, 50];
    let len: usize = shape.iter().product();
    let n = if bug { len + 1 } else { len };
    let a_h: Vec<f32> = (0..len).map(|i| (i % 89) as f32).collect();
    let b_h: Vec<f32> = (0..len).map(|i| ((i * 3) % 41) as f32).collect();
    let want: Vec<f32> = a_h.iter().zip(&b_h).map(|(a, b)| a + b).collect();
    let a = stream.clone_htod(&a_h)?;
    let b = stream.clone_htod(&b_h)?;
    let mut out = poisoned(stream, len)?;
    let add = module.load_function("add")?;
    let n_arg = n as i32;
    let mut launch = stream.launch_builder(&add);
    launch.arg(&a).arg(&b).arg(&mut out).arg(&n_arg);
    // SAFETY: `add` reads a[i], b[i] and writes out[i] for i < n; the three buffers hold `len`
    // f32s, and the argument types match the kernel's (const float*, const float*, float*,
    // int). In the planted case n = len + 1 overruns them on purpose: the program is the
    // test subject of a bounds checker.
    unsafe { launch.launch(linear(n, 256)) }?;
    print_result("add", &stream.clone_dtoh(&out)?, &want);
    Ok(())
}

/// Row sums of a window of a 16 x 32 matrix: the last 8 columns of every row, read through a
/// view that starts at the window's first column (`slice(first_col..)`) with the matrix's row
/// stride. Planted: first_col = 32 - 8 + 1 (one column too far right), so on the last row the
/// view's stride runs one element past the allocation (view index 15 * 32 + 7 = 487).
fn strided_view(
    stream: &Arc<CudaStream>,
    module: &Arc<CudaModule>,
    bug: bool,
) -> Result<(), DriverError> {
    let (rows, ld, cols) = (16usize, 32usize, 8usize);
    let m_h: Vec<f32> = (0..rows * ld).map(|i| (i % 53) as f32).collect();
    let want: Vec<f32> = (0..rows)
        .map(|r| m_h[r * ld + (ld - cols)..(r + 1) * ld].iter().sum())
        .collect();
    let m = stream.clone_htod(&m_h)?;
    let first_col = if bug { ld - cols + 1 } else { ld - cols };
    let window = m.slice(first_col..);
    let mut out = poisoned(stream, rows)?;
    let row_sums = module.load_function("row_sums")?;
    let (ld_arg, rows_arg, cols_arg) = (ld as i32, rows as i32, cols as i32);
    let mut launch = stream.launch_builder(&row_sums);
    launch
        .arg(&window)
        .arg(&ld_arg)
        .arg(&rows_arg)
        .arg(&cols_arg)
        .arg(&mut out);
    // SAFETY: row_sums reads window[r * ld + c] for r < rows, c < cols and writes out[r];
    // with first_col = ld - cols the last read is the matrix's last element. The planted
    // first_col reads one past it on purpose. Argument types match the kernel's.
    unsafe { launch.launch(linear(rows, 32)) }?;
    print_result("row_sums", &stream.clone_dtoh(&out)?, &want);
    Ok(())
}

/// out[i] = p[i] - p[i - LAG] over a view p that starts after LAG elements of history:
/// reading below the view's start is the kernel's contract. Planted: the view starts one
/// element early (LAG - 1), so thread 0 reads p[-LAG], one element below the allocation.
fn lagged_view(
    stream: &Arc<CudaStream>,
    module: &Arc<CudaModule>,
    bug: bool,
) -> Result<(), DriverError> {
    const LAG: usize = 3;
    let n = 1000usize;
    let h: Vec<f32> = (0..n + LAG).map(|i| ((i * 7) % 61) as f32).collect();
    let want: Vec<f32> = (0..n).map(|i| h[i + LAG] - h[i]).collect();
    let buf = stream.clone_htod(&h)?;
    let start = if bug { LAG - 1 } else { LAG };
    let p = buf.slice(start..);
    let mut out = poisoned(stream, n)?;
    let lag_diff = module.load_function("lag_diff")?;
    let (n_arg, lag_arg) = (n as i32, LAG as i32);
    let mut launch = stream.launch_builder(&lag_diff);
    launch.arg(&p).arg(&mut out).arg(&n_arg).arg(&lag_arg);
    // SAFETY: lag_diff reads p[i] and p[i - LAG] for i < n and writes out[i]; p has LAG
    // elements of its allocation before it and n after it. The planted start reads one
    // element below the allocation on purpose. Argument types match the kernel's.
    unsafe { launch.launch(linear(n, 128)) }?;
    print_result("lag_diff", &stream.clone_dtoh(&out)?, &want);
    Ok(())
}

/// x *= 2 over 4096 elements. Planted: a first launch with blocks of 2048 threads, which the
/// device refuses (1024 at most); the program prints the error and launches again with 256.
fn block_size(
    stream: &Arc<CudaStream>,
    module: &Arc<CudaModule>,
    bug: bool,
) -> Result<(), DriverError> {
    let n = 4096usize;
    let h: Vec<f32> = (0..n).map(|i| (i % 300) as f32).collect();
    let want: Vec<f32> = h.iter().map(|v| v * 2.0).collect();
    let mut x = stream.clone_htod(&h)?;
    let scale = module.load_function("scale")?;
    let (s_arg, n_arg) = (2.0f32, n as i32);
    if bug {
        let mut launch = stream.launch_builder(&scale);
        launch.arg(&mut x).arg(&s_arg).arg(&n_arg);
        // SAFETY: scale touches x[i] for i < n only; types match (float*, float, int).
        match unsafe { launch.launch(linear(n, 2048)) } {
            Ok(_) => println!("launch scale with blocks of 2048: accepted"),
            Err(e) => println!("launch scale with blocks of 2048 refused: {e:?}"),
        }
        // A refused launch ran nothing; an accepted one would show in the result below.
    }
    let mut launch = stream.launch_builder(&scale);
    launch.arg(&mut x).arg(&s_arg).arg(&n_arg);
    // SAFETY: as above.
    unsafe { launch.launch(linear(n, 256)) }?;
    print_result("scale", &stream.clone_dtoh(&x)?, &want);
    Ok(())
}

/// One line per result (length, FNV-1a of its bytes, first and last values as bit patterns),
/// then its comparison with the CPU reference, bit for bit.
fn print_result(name: &str, got: &[f32], want: &[f32]) {
    let bytes: Vec<u8> = got.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
    let hex = |vs: &[f32]| {
        vs.iter()
            .map(|v| format!(" {:08x}", v.to_bits()))
            .collect::<String>()
    };
    let tail = &got[got.len().saturating_sub(3)..];
    println!(
        "{name}: n={} fnv={:016x} head{} tail{}",
        got.len(),
        fnv1a(&bytes),
        hex(&got[..got.len().min(3)]),
        hex(tail)
    );
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| got[i].to_bits() != want[i].to_bits())
        .collect();
    match bad.first() {
        None => println!("check {name}: ok"),
        Some(&i) => println!(
            "check {name}: MISMATCH {} of {}, first at {i}: {:08x} expected {:08x}",
            bad.len(),
            got.len(),
            got[i].to_bits(),
            want[i].to_bits()
        ),
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}
