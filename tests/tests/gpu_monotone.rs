//! GPU tier: loops whose offsets are monotone in the counter but not affine
//! (`tests/cuda/monotone.cu`), bounds-checked. Each kernel runs plain and bounds-checked into
//! poisoned outputs, which must be bit-identical and match a CPU reference; then its planted
//! twin (the file built with `PLANTED`), which reads one element past a buffer in its last
//! iterations, must be reported at that exact index, by a thread that makes that read, with
//! every faulting read counted; and the next launch on the context must work. Where the
//! access's check is hoisted before its loop (`version/monotone.rs`), the failed range check
//! there sends the thread to the checked loop, which names the access.

use std::sync::Arc;

use cudacheck::core::instrument::FaultKind;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel};
use cudacheck_tests::{gpu_or_skip, repo_root};

fn source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/monotone.cu")).unwrap()
}

fn kernel(name: &str, planted: bool) -> Kernel {
    let b = Kernel::new(source(), name).sync(true);
    let b = if planted {
        b.define("PLANTED", None)
    } else {
        b
    };
    b.build()
}

fn up<T: DeviceRepr + Clone>(s: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    cudacheck::alloc_copy(s, v).unwrap()
}

fn floats(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 1013) as f32 * 0.125 - 60.0)
        .collect()
}

/// Plain and bounds-checked outputs bit for bit, and the plain one against `want`.
fn same(name: &str, want: &[f32], mut run: impl FnMut(bool) -> Vec<f32>) {
    let (plain, checked) = (run(false), run(true));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&plain),
        bits(&checked),
        "{name}: plain and checked differ"
    );
    assert_eq!(bits(&plain), bits(want), "{name}: not the CPU reference");
}

/// What a planted twin must report: the buffer, the index (its length: one past), the
/// threads that make the bad read (global x indices) and how many bad reads there are.
fn expect_oob(
    name: &str,
    r: Result<(), Error>,
    (buffer, len): (&str, u64),
    threads: std::ops::Range<u64>,
    count: u32,
) {
    let e = r.expect_err(name);
    let text = e.to_string();
    let Error::OutOfBounds(o) = &e else {
        panic!("{name}: expected OutOfBounds, got {text}")
    };
    assert_eq!(o.buffer, buffer, "{text}");
    assert_eq!(o.index, len as i64, "{text}");
    assert_eq!(o.len, len, "{text}");
    assert_eq!(o.access, FaultKind::Read, "{text}");
    let t = u64::from(o.block.x) * u64::from(BLOCK) + u64::from(o.thread.x);
    assert!(
        threads.contains(&t),
        "{name}: thread {t} does not make the bad read: {text}"
    );
    assert_eq!(o.count, count, "{name}: {text}");
    assert!(text.contains("the context is still usable"), "{text}");
    println!("{name}:\n{text}\n");
}

/// `k(x, y, n[, extra])` over `grid` blocks of [`BLOCK`], bounds-checked when `on`.
#[allow(clippy::too_many_arguments)]
fn run_xy(
    s: &Arc<CudaStream>,
    k: &Kernel,
    grid: u32,
    on: bool,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    n: usize,
    extra: Option<i32>,
) -> Result<(), Error> {
    let n = n as i32;
    let mut launch = k.launch(s);
    let mut l = launch
        .grid(grid)
        .block(BLOCK)
        .instrument(on)
        .arg(x)
        .arg_mut(y)
        .arg(&n);
    if let Some(e) = &extra {
        l = l.arg(e);
    }
    // SAFETY: the kernels of `tests/cuda/monotone.cu` taking `(x, y, n[, extra])`, with
    // buffers of the lengths they read and write.
    unsafe { l.run() }
}

const BLOCK: u32 = 256;

#[test]
fn gpu_monotone_loops_run_checked_and_name_their_planted_overruns() {
    let Some(s) = gpu_or_skip() else { return };
    let block = BLOCK;

    // A bit per element: `bits[i >> 3]` in an unrolled 64-bit grid-stride loop.
    let n = (1usize << 20) + 8 * 37;
    let l = n / 8;
    let x = floats(n);
    let b: Vec<u8> = (0..l).map(|i| (i * 37 + 11) as u8).collect();
    let want: Vec<f32> = (0..n)
        .map(|i| {
            if (b[i >> 3] >> (i & 7)) & 1 != 0 {
                x[i]
            } else {
                0.0
            }
        })
        .collect();
    let (dx, db) = (up(&s, &x), up(&s, &b));
    let k = kernel("mask_bytes", false);
    let grid = 132 * 2;
    same("mask_bytes", &want, |on| {
        let mut out = up(&s, &vec![f32::NAN; n]);
        unsafe {
            k.launch(&s)
                .grid(grid)
                .block(block)
                .instrument(on)
                .arg(&dx)
                .arg(&db)
                .arg_mut(&mut out)
                .arg(&(n as i64))
                .run()
        }
        .unwrap();
        s.clone_dtoh(&out).unwrap()
    });
    let k = kernel("mask_bytes", true);
    let mut out = up(&s, &vec![0.0f32; n]);
    let r = unsafe {
        k.launch(&s)
            .grid(grid)
            .block(block)
            .instrument(true)
            .arg(&dx)
            .arg(&db)
            .arg_mut(&mut out)
            .arg(&(n as i64))
            .run()
    };
    // `bits[(i >> 3) + 1]`: the last byte's eight elements read one past.
    let stride = u64::from(grid * block);
    let last = (n as u64 - 8)..(n as u64);
    let threads = (last.start % stride)..(last.start % stride + 8);
    expect_oob("mask_bytes", r, ("bits", l as u64), threads, 8);

    // Taps clamped to the row: `x[min(max(i + k, 0), n - 1)]`.
    let (n, rad) = (100_000usize, 4i32);
    let x = floats(n);
    let want: Vec<f32> = (0..n as i32)
        .map(|i| {
            (-rad..=rad).fold(0.0f32, |acc, k| {
                acc + x[(i + k).max(0).min(n as i32 - 1) as usize]
            })
        })
        .collect();
    let dx = up(&s, &x);
    let grid = (n as u32).div_ceil(block);
    let k = kernel("box_clamp", false);
    same("box_clamp", &want, |on| {
        let mut y = up(&s, &vec![f32::NAN; n]);
        run_xy(&s, &k, grid, on, &dx, &mut y, n, Some(rad)).unwrap();
        s.clone_dtoh(&y).unwrap()
    });
    let k = kernel("box_clamp", true);
    let mut y = up(&s, &vec![0.0f32; n]);
    let r = run_xy(&s, &k, grid, true, &dx, &mut y, n, Some(rad));
    // `min(.., n)`: thread `n - d` reads `x[n]` for `d` of its taps.
    let r2 = rad as u32;
    expect_oob(
        "box_clamp",
        r,
        ("x", n as u64),
        (n as u64 - u64::from(r2))..n as u64,
        r2 * (r2 + 1) / 2,
    );

    // A counter going down: `x[j >> 1]` for `j` from `m - 1` to the thread's index.
    let m = 3000usize;
    let x = floats(m / 2);
    let want: Vec<f32> = (0..m)
        .map(|t| (t..m).rev().fold(0.0f32, |acc, j| acc + x[j >> 1]))
        .collect();
    let dx = up(&s, &x);
    let grid = (m as u32).div_ceil(block);
    let k = kernel("suffix_pairs", false);
    same("suffix_pairs", &want, |on| {
        let mut y = up(&s, &vec![f32::NAN; m]);
        run_xy(&s, &k, grid, on, &dx, &mut y, m, None).unwrap();
        s.clone_dtoh(&y).unwrap()
    });
    let k = kernel("suffix_pairs", true);
    let mut y = up(&s, &vec![0.0f32; m]);
    let r = run_xy(&s, &k, grid, true, &dx, &mut y, m, None);
    // `x[(j + 2) >> 1]` is `x[m / 2]` for `j = m - 2, m - 1`: twice per thread, once for the
    // last.
    expect_oob(
        "suffix_pairs",
        r,
        ("x", (m / 2) as u64),
        0..m as u64,
        2 * (m as u32 - 1) + 1,
    );

    // The first of each group of four: `x[i & ~3]`.
    let n = 4 * 50_000usize;
    let x = floats(n);
    let want: Vec<f32> = (0..n).map(|i| x[i & !3]).collect();
    let dx = up(&s, &x);
    let grid = 132u32;
    let k = kernel("quad_first", false);
    same("quad_first", &want, |on| {
        let mut y = up(&s, &vec![f32::NAN; n]);
        run_xy(&s, &k, grid, on, &dx, &mut y, n, None).unwrap();
        s.clone_dtoh(&y).unwrap()
    });
    let k = kernel("quad_first", true);
    let mut y = up(&s, &vec![0.0f32; n]);
    let r = run_xy(&s, &k, grid, true, &dx, &mut y, n, None);
    let stride = u64::from(grid * block);
    let first = n as u64 - 4;
    expect_oob(
        "quad_first",
        r,
        ("x", n as u64),
        (first % stride)..(first % stride + 4),
        4,
    );

    // The context is healthy: the kernel runs again and gives the reference.
    assert!(!cudacheck::is_poisoned(&s));
    let k = kernel("quad_first", false);
    let mut y = up(&s, &vec![f32::NAN; n]);
    run_xy(&s, &k, grid, true, &dx, &mut y, n, None).unwrap();
    let got = s.clone_dtoh(&y).unwrap();
    assert!(got
        .iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}
