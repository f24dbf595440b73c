//! The benchmark set: 46 kernels of `bench/kernels/` written in the styles
//! real CUDA code uses (guarded stencils and convolutions, gathers and scatters through index
//! buffers, CSR SpMV, row normalizations, vectorized `float4` / `half2` elementwise,
//! macro-generated strided ops, reductions, scan, histogram, tiled matmul, transpose, attention
//! on small tiles, templated kernels, grid-stride loops, dynamic shared memory; and, added
//! before any tuning, column and strided loops with runtime trip counts, channels-last
//! depthwise convolutions with unrolled windows, segment sums and scatter-adds with atomics, a
//! z-marching stencil, block-per-row RMSnorm and softmax), each at a size that fills an H100,
//! plain versus bounds-checked.
//!
//! For each kernel:
//! - deterministic pseudo-random inputs are uploaded; before every launch each output is reset
//!   from a device copy of its initial contents: poison (NaN, or all ones for integers) for
//!   outputs the kernel overwrites, zeros for those it accumulates into with atomics;
//! - one plain and one bounds-checked launch, outputs compared bit for bit (a mismatch is
//!   reported, and makes the exit status 1);
//! - after warm-up, 30 launches of each build timed with CUDA events around the kernel alone
//!   ([`Launch::kernel_events`](cudacheck::Launch::kernel_events)): the medians are reported;
//! - [`Kernel::coverage`] of the bounds-checked build: accesses checked on the device, checked
//!   once on the host, proven in bounds, and left unchecked.
//!
//! Prints a table, the geometric-mean and the worst slowdown, and writes them to every path
//! given (`.json` gets JSON, anything else markdown), with the date (UTC) and device.
//!
//! ```sh
//! cargo run --release -p cudacheck-examples --example bench_set -- out.json out.md
//! # each plain kernel once (to time under compute-sanitizer --tool memcheck), or each
//! # bounds-checked kernel once (its checks and versioned loops under memcheck):
//! ... --example bench_set -- --plain-only
//! ... --example bench_set -- --checked-only
//! # no GPU: build every kernel plain and bounds-checked for sm_90, report coverage
//! ... --example bench_set -- --dry-run --arch sm_90 out.json out.md
//! ```
//!
//! `--races`: the checked launches are race-checked as well as bounds-checked, and
//! a second table gives each kernel's race coverage. `--plain-timed`: only the plain launches,
//! timed, `CUDACHECK_BENCH_RUNS` times (default 30): the run to make under
//! `compute-sanitizer --tool racecheck` (`scripts/race-compare.py` puts the two side by side).
//!
//! `--only SUBSTRING[,SUBSTRING...]` keeps the kernels whose name contains one of them. The kernel files are read from
//! `bench/kernels/` of `CUDACHECK_REPO`, or of the checkout the example was built in.
//!
//! `--set styles`: the second set instead, 30 kernels of `bench/styles/` in styles the first
//! lacks (see its README), each in one of two halves fixed before any tuning, `tune` and
//! `held-out` (`--half tune` or `--half held-out` keeps one); the report adds each half's
//! geometric mean and worst, and seven kernels check the plain output against a CPU reference
//! or a property. `--planted` (styles set): each kernel's planted twin (its file built with
//! `PLANTED` defined) launched bounds-checked only, which must fail with
//! [`Error::OutOfBounds`] naming the buffer the spec names; then the kernel itself, plain and
//! bounds-checked, must succeed alike; exit status 1 on any miss. The styles set's dry run
//! also builds each kernel race-checked and its planted twin.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Instant;

use cudacheck::core::Arch;
use cudacheck::cudarc::driver::{
    sys::CUevent_flags, CudaEvent, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use cudacheck::{Coverage, DriverError, Error, Kernel};
use cudacheck_examples::{bench_kernel, median, report, stream_or_exit, utc_now, write_outputs};
use half::f16;

const RUNS: usize = 30;

/// `--races`: the checked launches are race-checked too (bounds and races).
static RACES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn races() -> bool {
    RACES.load(std::sync::atomic::Ordering::Relaxed)
}

/// `--plain-timed`: only the plain launches, timed (to run under `compute-sanitizer`, whose
/// slowdown is then the plain time under it over the plain time without).
static PLAIN_TIMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Timed runs per build: `CUDACHECK_BENCH_RUNS`, else 30.
fn runs() -> usize {
    std::env::var("CUDACHECK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(RUNS)
}
const WARMUP: usize = 3;

type BoxError = Box<dyn StdError>;
type Events<'e> = Option<(&'e CudaEvent, &'e CudaEvent)>;

/// What a case's closure is asked to do.
enum Op<'e> {
    /// Reset the outputs, then launch (bounds-checked or not, with kernel events or not).
    Launch(bool, Events<'e>),
    /// Read every output back, as bytes, in order.
    Read,
}

type RunFn = Box<dyn for<'e> FnMut(Op<'e>) -> Result<Vec<u8>, Error>>;

/// Checks the plain launch's output bytes (in [`Op::Read`]'s order) against a CPU reference
/// or a property they must have.
type CheckFn = Box<dyn Fn(&[u8]) -> Result<(), String>>;

/// A case ready to run on the GPU: its buffers uploaded.
struct Bench {
    size: String,
    run: RunFn,
    check: Option<CheckFn>,
}

impl Bench {
    /// With the plain output checked by `f` (a kernel that computes something else fails).
    fn checked_by(mut self, f: impl Fn(&[u8]) -> Result<(), String> + 'static) -> Bench {
        self.check = Some(Box::new(f));
        self
    }
}

type Setup = fn(&Arc<CudaStream>, &Kernel, &Spec) -> Result<Bench, BoxError>;

/// One kernel of the set: what the dry run needs (no GPU), and how to set it up on one.
struct Spec {
    name: &'static str,
    style: &'static str,
    file: &'static str,
    /// The kernel's name, or a name expression for a templated one.
    kernel: &'static str,
    block: (u32, u32, u32),
    shared: u32,
    setup: Setup,
    /// Kernels of the styles set (`--set styles`): their half and planted twin.
    styled: Option<Styled>,
}

/// Which half of the styles set a kernel is in, fixed before any analysis was tuned on it
/// (`bench/styles/README.md`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Half {
    /// May be looked at while tuning analyses.
    Tune,
    /// Measured only: never looked at while tuning.
    HeldOut,
}

impl Half {
    fn name(self) -> &'static str {
        match self {
            Half::Tune => "tune",
            Half::HeldOut => "held-out",
        }
    }
}

/// A styles-set kernel's half, and the buffer its planted twin (its file built with
/// `PLANTED` defined) reads or writes out of bounds: `name`, or `name[index]` where every
/// faulting thread has the same index, which the report must then give too.
#[derive(Clone, Copy)]
struct Styled {
    half: Half,
    planted: &'static str,
}

impl Styled {
    /// The planted buffer's name and, when the spec gives it, the index.
    fn planted_at(&self) -> (&'static str, Option<i64>) {
        match self.planted.split_once('[') {
            Some((name, i)) => (name, i.trim_end_matches(']').parse().ok()),
            None => (self.planted, None),
        }
    }
}

// ---- Data ---------------------------------------------------------------------------------------

/// A xorshift generator: deterministic inputs, a different stream per seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// In [-1, 1).
    fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    /// In [0, n).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
    fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
    fn halves(&mut self, n: usize) -> Vec<f16> {
        (0..n).map(|_| f16::from_f32(self.f32())).collect()
    }
    fn ints(&mut self, n: usize, below: u64) -> Vec<i32> {
        (0..n).map(|_| self.below(below) as i32).collect()
    }
    fn perm(&mut self, n: usize) -> Vec<i64> {
        let mut p: Vec<i64> = (0..n as i64).collect();
        for i in (1..n).rev() {
            p.swap(i, self.below(i as u64 + 1) as usize);
        }
        p
    }
}

fn up<T: DeviceRepr>(s: &Arc<CudaStream>, v: &[T]) -> Result<CudaSlice<T>, Error> {
    cudacheck::alloc_copy(s, v)
}

/// The value an output holds before the kernel writes it: NaN, or all ones.
trait Poison: DeviceRepr + Copy {
    const POISON: Self;
}

impl Poison for f32 {
    const POISON: f32 = f32::NAN;
}
impl Poison for f16 {
    const POISON: f16 = f16::NAN;
}
impl Poison for i32 {
    const POISON: i32 = -1;
}
impl Poison for u32 {
    const POISON: u32 = u32::MAX;
}
impl Poison for u8 {
    const POISON: u8 = u8::MAX;
}
impl Poison for i8 {
    const POISON: i8 = -1;
}
impl Poison for i64 {
    const POISON: i64 = -1;
}

/// An output buffer and the device copy of its initial contents, restored before each launch.
struct Out<T> {
    d: CudaSlice<T>,
    init: CudaSlice<T>,
}

impl<T: DeviceRepr> Out<T> {
    fn poisoned(s: &Arc<CudaStream>, len: usize) -> Result<Out<T>, Error>
    where
        T: Poison,
    {
        let v = vec![T::POISON; len];
        Ok(Out {
            d: up(s, &v)?,
            init: up(s, &v)?,
        })
    }

    /// For outputs the kernel updates in place: `init` restored before each launch.
    fn from_host(s: &Arc<CudaStream>, init: &[T]) -> Result<Out<T>, Error> {
        Ok(Out {
            d: up(s, init)?,
            init: up(s, init)?,
        })
    }

    /// For outputs the kernel accumulates into (atomics).
    fn zeroed(s: &Arc<CudaStream>, len: usize) -> Result<Out<T>, Error>
    where
        T: ValidAsZeroBits,
    {
        Ok(Out {
            d: cudacheck::alloc_zeros(s, len)?,
            init: cudacheck::alloc_zeros(s, len)?,
        })
    }

    fn reset(&mut self, s: &Arc<CudaStream>) -> Result<(), Error> {
        s.memcpy_dtod(&self.init, &mut self.d)
            .map_err(|e| Error::from(DriverError::from_cudarc("cuMemcpyDtoDAsync", e)))
    }

    fn bytes(&self, s: &Arc<CudaStream>) -> Result<Vec<u8>, Error> {
        let v = s
            .clone_dtoh(&self.d)
            .map_err(|e| Error::from(DriverError::from_cudarc("cuMemcpyDtoH", e)))?;
        // SAFETY: `T: DeviceRepr` is plain data (no padding in the types used here: f32, f16,
        // i32, u32); the bytes are read within the vector's allocation.
        let b = unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(&v[..]))
        };
        Ok(b.to_vec())
    }
}

fn div(a: usize, b: usize) -> u32 {
    a.div_ceil(b) as u32
}

/// `Ok` of a [`Bench`] whose closure owns the kernel, the stream, the inputs (moved in by the
/// arguments' expression) and the outputs listed, resets the outputs before each launch and
/// launches with the spec's block and dynamic shared memory.
macro_rules! bench {
    ($s:expr, $k:expr, $sp:expr, $size:expr, grid: $grid:expr, outs: [$($o:ident),*],
     |$l:ident| $args:expr) => {{
        let (s, k) = (Arc::clone($s), $k.clone());
        let (grid, block, shared) = ($grid, $sp.block, $sp.shared);
        $(let mut $o = $o;)*
        Ok(Bench {
            size: $size,
            check: None,
            run: Box::new(move |op: Op<'_>| match op {
                Op::Launch(on, ev) => {
                    $($o.reset(&s)?;)*
                    let mut launch = k.launch(&s);
                    launch.instrument(on).grid(grid).block(block).shared_bytes(shared);
                    if races() {
                        launch.races(on);
                    }
                    if let Some((a, b)) = ev {
                        launch.kernel_events(a, b);
                    }
                    let $l = &mut launch;
                    // SAFETY: every buffer is sized for the grid and the arguments given with
                    // it, as the comments in bench/kernels/*.cu describe.
                    unsafe { $args.run() }?;
                    Ok(Vec::new())
                }
                Op::Read => {
                    let mut v = Vec::new();
                    $(v.extend($o.bytes(&s)?);)*
                    Ok(v)
                }
            }),
        })
    }};
}

#[path = "bench_set/styles.rs"]
mod styles;

const E: &str = "kernels/elementwise.cu";
const ST: &str = "kernels/stencil.cu";
const G: &str = "kernels/gather.cu";
const N: &str = "kernels/norm.cu";
const R: &str = "kernels/reduce.cu";
const L: &str = "kernels/linalg.cu";
const LP: &str = "kernels/loops2.cu";

/// `size_t` arguments and the dims/strides buffers of the macro-generated kernels.
fn info(s: &Arc<CudaStream>, v: &[usize]) -> Result<CudaSlice<u64>, Error> {
    up(s, &v.iter().map(|&x| x as u64).collect::<Vec<_>>())
}

/// A CSR matrix with 4 to 27 entries a row (16 on average) at random columns.
struct Csr {
    row_ptr: Vec<i32>,
    col: Vec<i32>,
    val: Vec<f32>,
}

fn csr(rows: usize, cols: usize, seed: u64) -> Csr {
    let mut r = Rng::new(seed);
    let mut row_ptr = Vec::with_capacity(rows + 1);
    let (mut col, mut val) = (Vec::new(), Vec::new());
    row_ptr.push(0);
    for _ in 0..rows {
        let nnz = 4 + r.below(24) as usize;
        for _ in 0..nnz {
            col.push(r.below(cols as u64) as i32);
            val.push(r.f32());
        }
        row_ptr.push(col.len() as i32);
    }
    Csr { row_ptr, col, val }
}

#[allow(clippy::too_many_lines)]
fn specs() -> Vec<Spec> {
    vec![
        // ---- elementwise ----
        Spec {
            name: "add_mul_f32x4",
            style: "vectorized float4, scalar tail",
            file: E,
            kernel: "add_mul_f32x4",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = (64 << 20) + 3;
                let mut r = Rng::new(1);
                let (a, b) = (up(s, &r.floats(n))?, up(s, &r.floats(n))?);
                let out = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} floats"), grid: div(n / 4, 256), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&a).arg(&b).arg(&0.75f32).arg(&(n as i32)))
            },
        },
        Spec {
            name: "bias_gelu_h2",
            style: "vectorized half2, broadcast bias",
            file: E,
            kernel: "bias_gelu_h2",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (16384usize, 4096usize);
                let mut r = Rng::new(2);
                let x = up(s, &r.halves(rows * cols))?;
                let bias = up(s, &r.halves(cols))?;
                let out = Out::<f16>::poisoned(s, rows * cols)?;
                let n2 = rows * cols / 2;
                bench!(s, k, sp, format!("{rows} x {cols} halves"), grid: div(n2, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&bias).arg(&(n2 as i32))
                        .arg(&(cols as i32 / 2)))
            },
        },
        Spec {
            name: "usilu_f32 (strided)",
            style: "macro UNARY_OP, get_strided_index, transposed view",
            file: E,
            kernel: "usilu_f32",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                // A [4096, 8192] view of a [8192, 4096] buffer: strides (1, 4096).
                let (d0, d1) = (4096usize, 8192usize);
                let n = d0 * d1;
                let x = up(s, &Rng::new(3).floats(n))?;
                let inf = info(s, &[d0, d1, 1, d0])?;
                let out = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{d0} x {d1} floats, transposed"),
                    grid: div(n, 256), outs: [out],
                    |l| l.arg(&n).arg(&2usize).arg(&inf).arg(&x).arg_mut(&mut out.d))
            },
        },
        Spec {
            name: "uexp_f32",
            style: "macro UNARY_OP, contiguous path",
            file: E,
            kernel: "uexp_f32",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (d0, d1) = (8192usize, 8192usize);
                let n = d0 * d1;
                let x = up(s, &Rng::new(4).floats(n))?;
                let inf = info(s, &[d0, d1, d1, 1])?;
                let out = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{d0} x {d1} floats"), grid: div(n, 256),
                    outs: [out],
                    |l| l.arg(&n).arg(&2usize).arg(&inf).arg(&x).arg_mut(&mut out.d))
            },
        },
        Spec {
            name: "usqrt_f16",
            style: "macro UNARY_OP on __half, grid smaller than the data",
            file: E,
            kernel: "usqrt_f16",
            block: (512, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = 64usize << 20;
                let x = up(s, &Rng::new(5).halves(n))?;
                let inf = info(s, &[n, 1])?;
                let out = Out::<f16>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} halves"), grid: 132 * 16, outs: [out],
                    |l| l.arg(&n).arg(&1usize).arg(&inf).arg(&x).arg_mut(&mut out.d))
            },
        },
        Spec {
            name: "badd_f32 (broadcast)",
            style: "macro BINARY_OP, stride-0 broadcast",
            file: E,
            kernel: "badd_f32",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (d0, d1) = (8192usize, 8192usize);
                let n = d0 * d1;
                let mut r = Rng::new(6);
                let (a, b) = (up(s, &r.floats(n))?, up(s, &r.floats(d1))?);
                // dims, then lhs strides (contiguous), then rhs strides (a row, broadcast).
                let inf = info(s, &[d0, d1, d1, 1, 0, 1])?;
                let out = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{d0} x {d1} + 1 x {d1}"), grid: div(n, 256),
                    outs: [out],
                    |l| l.arg(&n).arg(&2usize).arg(&inf).arg(&a).arg(&b).arg_mut(&mut out.d))
            },
        },
        Spec {
            name: "axpby_grid_stride",
            style: "grid-stride loop, 64-bit index",
            file: E,
            kernel: "axpby_grid_stride",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = 64usize << 20;
                let mut r = Rng::new(7);
                let (x, y0) = (up(s, &r.floats(n))?, up(s, &r.floats(n))?);
                let out = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} floats"), grid: 132 * 8, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&y0).arg(&1.5f32).arg(&-0.5f32)
                        .arg(&(n as i64)))
            },
        },
        Spec {
            name: "cast_scale<float, __half, 4>",
            style: "templated, unrolled by a template parameter",
            file: E,
            kernel: "cast_scale<float, __half, 4>",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = (64usize << 20) + 100;
                let x = up(s, &Rng::new(8).floats(n))?;
                let out = Out::<f16>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} floats"), grid: div(n, 256 * 4), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&3.0f32).arg(&(n as i32)))
            },
        },
        // ---- stencils and convolutions ----
        Spec {
            name: "conv3x3_guarded",
            style: "guarded 3x3 convolution, nested dy/dx loops",
            file: ST,
            kernel: "conv3x3_guarded",
            block: (32, 8, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (c, h, w) = (16usize, 2048usize, 2048usize);
                let mut r = Rng::new(9);
                let (x, wt) = (up(s, &r.floats(c * h * w))?, up(s, &r.floats(c * 9))?);
                let out = Out::<f32>::poisoned(s, c * h * w)?;
                bench!(s, k, sp, format!("{c} x {h} x {w}"),
                    grid: (div(w, 32), div(h, 8), c as u32), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&wt).arg(&(c as i32))
                        .arg(&(h as i32)).arg(&(w as i32)))
            },
        },
        Spec {
            name: "conv1d_depthwise",
            style: "guarded 1-D convolution, fixed 7-tap loop",
            file: ST,
            kernel: "conv1d_depthwise",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (c, len) = (256usize, 256usize << 10);
                let mut r = Rng::new(10);
                let x = up(s, &r.floats(c * len))?;
                let (wt, bias) = (up(s, &r.floats(c * 7))?, up(s, &r.floats(c))?);
                let out = Out::<f32>::poisoned(s, c * len)?;
                bench!(s, k, sp, format!("{c} x {len}"), grid: (div(len, 256), c as u32, 1),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&wt).arg(&bias).arg(&(c as i32))
                        .arg(&(len as i32)))
            },
        },
        Spec {
            name: "stencil7_3d",
            style: "3-D 7-point stencil, interior guard, z loop",
            file: ST,
            kernel: "stencil7_3d",
            block: (32, 8, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (nx, ny, nz) = (512usize, 512usize, 256usize);
                let x = up(s, &Rng::new(11).floats(nx * ny * nz))?;
                let out = Out::<f32>::poisoned(s, nx * ny * nz)?;
                bench!(s, k, sp, format!("{nx} x {ny} x {nz}"),
                    grid: (div(nx, 32), div(ny, 8), 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(nx as i32)).arg(&(ny as i32))
                        .arg(&(nz as i32)).arg(&0.4f32).arg(&0.1f32))
            },
        },
        Spec {
            name: "blur5x5_tiled",
            style: "shared-memory tile with halo, clamped loads",
            file: ST,
            kernel: "blur5x5_tiled",
            block: (32, 8, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (h, w) = (8190usize, 8190usize);
                let x = up(s, &Rng::new(12).floats(h * w))?;
                let out = Out::<f32>::poisoned(s, h * w)?;
                bench!(s, k, sp, format!("{h} x {w}"), grid: (div(w, 32), div(h, 8), 1),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(h as i32)).arg(&(w as i32)))
            },
        },
        Spec {
            name: "maxpool2x2_nchw",
            style: "2x2 pooling, odd edges guarded",
            file: ST,
            kernel: "maxpool2x2_nchw",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (p, h, w) = (64usize, 1023usize, 1023usize);
                let x = up(s, &Rng::new(13).floats(p * h * w))?;
                let on = p * h.div_ceil(2) * w.div_ceil(2);
                let out = Out::<f32>::poisoned(s, on)?;
                bench!(s, k, sp, format!("{p} x {h} x {w}"), grid: div(on, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(p as i32)).arg(&(h as i32))
                        .arg(&(w as i32)))
            },
        },
        // ---- gather, scatter, sparse ----
        Spec {
            name: "embedding_gather",
            style: "gather rows through an index buffer",
            file: G,
            kernel: "embedding_gather",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (vocab, rows, dim) = (32768usize, 65536usize, 1024usize);
                let mut r = Rng::new(14);
                let table = up(s, &r.floats(vocab * dim))?;
                let ids = up(s, &r.ints(rows, vocab as u64))?;
                let out = Out::<f32>::poisoned(s, rows * dim)?;
                bench!(s, k, sp, format!("{rows} rows of {dim} from {vocab}"),
                    grid: rows as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&table).arg(&ids).arg(&(rows as i32))
                        .arg(&(dim as i32)))
            },
        },
        Spec {
            name: "scatter_rows",
            style: "scatter through a permutation (int64 indices)",
            file: G,
            kernel: "scatter_rows",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, dim) = (65536usize, 1024usize);
                let mut r = Rng::new(15);
                let x = up(s, &r.floats(rows * dim))?;
                let perm = up(s, &r.perm(rows))?;
                let out = Out::<f32>::poisoned(s, rows * dim)?;
                bench!(s, k, sp, format!("{rows} x {dim}"), grid: div(rows * dim, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&perm).arg(&(rows as i32))
                        .arg(&(dim as i32)))
            },
        },
        Spec {
            name: "scatter_add_i32",
            style: "scatter-add through an index buffer, global atomics",
            file: G,
            kernel: "scatter_add_i32",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (n, bins) = (64usize << 20, 1usize << 20);
                let mut r = Rng::new(16);
                let (idx, val) = (up(s, &r.ints(n, bins as u64))?, up(s, &r.ints(n, 100))?);
                let out = Out::<i32>::zeroed(s, bins)?;
                bench!(s, k, sp, format!("{n} into {bins}"), grid: div(n, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&idx).arg(&val).arg(&(n as i32)))
            },
        },
        Spec {
            name: "gather_axis1",
            style: "gather along an axis (torch.gather), 2-D grid",
            file: G,
            kernel: "gather_axis1",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, src_cols, out_cols) = (8192usize, 8192usize, 4096usize);
                let mut r = Rng::new(17);
                let src = up(s, &r.floats(rows * src_cols))?;
                let index: Vec<u32> = (0..rows * out_cols)
                    .map(|_| r.below(src_cols as u64) as u32)
                    .collect();
                let index = up(s, &index)?;
                let out = Out::<f32>::poisoned(s, rows * out_cols)?;
                bench!(s, k, sp, format!("{rows} x {out_cols} from {rows} x {src_cols}"),
                    grid: (div(out_cols, 256), rows as u32, 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&src).arg(&index).arg(&(rows as i32))
                        .arg(&(src_cols as i32)).arg(&(out_cols as i32)))
            },
        },
        Spec {
            name: "spmv_csr_scalar",
            style: "CSR SpMV, a thread per row",
            file: G,
            kernel: "spmv_csr_scalar",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let rows = 2usize << 20;
                let m = csr(rows, rows, 18);
                let nnz = m.col.len();
                let (rp, ci, va) = (up(s, &m.row_ptr)?, up(s, &m.col)?, up(s, &m.val)?);
                let x = up(s, &Rng::new(19).floats(rows))?;
                let out = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} rows, {nnz} nonzeros"),
                    grid: div(rows, 256), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&rp).arg(&ci).arg(&va).arg(&x)
                        .arg(&(rows as i32)))
            },
        },
        Spec {
            name: "spmv_csr_warp",
            style: "CSR SpMV, a warp per row, shuffle reduction",
            file: G,
            kernel: "spmv_csr_warp",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let rows = 2usize << 20;
                let m = csr(rows, rows, 18);
                let nnz = m.col.len();
                let (rp, ci, va) = (up(s, &m.row_ptr)?, up(s, &m.col)?, up(s, &m.val)?);
                let x = up(s, &Rng::new(19).floats(rows))?;
                let out = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} rows, {nnz} nonzeros"),
                    grid: div(rows * 32, 256), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&rp).arg(&ci).arg(&va).arg(&x)
                        .arg(&(rows as i32)))
            },
        },
        // ---- row normalizations ----
        Spec {
            name: "layernorm_rows",
            style: "layernorm, a block per row, shuffles + shared",
            file: N,
            kernel: "layernorm_rows",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (16384usize, 4096usize);
                let mut r = Rng::new(20);
                let x = up(s, &r.floats(rows * cols))?;
                let (g, b) = (up(s, &r.floats(cols))?, up(s, &r.floats(cols))?);
                let out = Out::<f32>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: rows as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&g).arg(&b).arg(&(rows as i32))
                        .arg(&(cols as i32)).arg(&1e-5f32))
            },
        },
        Spec {
            name: "rmsnorm_warp",
            style: "RMSnorm, a warp per row",
            file: N,
            kernel: "rmsnorm_warp",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (65536usize, 1024usize);
                let mut r = Rng::new(21);
                let (x, w) = (up(s, &r.floats(rows * cols))?, up(s, &r.floats(cols))?);
                let out = Out::<f32>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: div(rows, 8),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&w).arg(&(rows as i32))
                        .arg(&(cols as i32)).arg(&1e-6f32))
            },
        },
        Spec {
            name: "softmax_warp_online",
            style: "softmax, a warp per row, online max/sum",
            file: N,
            kernel: "softmax_warp_online",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (65536usize, 1024usize);
                let x = up(s, &Rng::new(22).floats(rows * cols))?;
                let out = Out::<f32>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: div(rows, 8),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        Spec {
            name: "softmax_smem_row",
            style: "softmax, row cached in dynamic shared memory",
            file: N,
            kernel: "softmax_smem_row",
            block: (256, 1, 1),
            shared: 4096 * 4,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (16384usize, 4096usize);
                let x = up(s, &Rng::new(23).floats(rows * cols))?;
                let out = Out::<f32>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: rows as u32,
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        // ---- reductions, scan, histogram ----
        Spec {
            name: "block_reduce_sum<256>",
            style: "templated tree reduction, static shared",
            file: R,
            kernel: "block_reduce_sum<256>",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = 64usize << 20;
                let x = up(s, &Rng::new(24).floats(n))?;
                let blocks = n.div_ceil(512);
                let out = Out::<f32>::poisoned(s, blocks)?;
                bench!(s, k, sp, format!("{n} floats"), grid: blocks as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(n as i32)))
            },
        },
        Spec {
            name: "absmax_warp",
            style: "warp-shuffle reduction over a grid-stride loop",
            file: R,
            kernel: "absmax_warp",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = 64usize << 20;
                let x = up(s, &Rng::new(25).floats(n))?;
                let blocks = 132 * 8;
                let out = Out::<f32>::poisoned(s, blocks)?;
                bench!(s, k, sp, format!("{n} floats"), grid: blocks as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(n as i32)))
            },
        },
        Spec {
            name: "scan_block_inclusive",
            style: "block-wide inclusive scan, warp shuffles",
            file: R,
            kernel: "scan_block_inclusive",
            block: (1024, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = (64usize << 20) + 17;
                let x = up(s, &Rng::new(26).ints(n, 16))?;
                let blocks = n.div_ceil(1024);
                let out = Out::<i32>::poisoned(s, n)?;
                let sums = Out::<i32>::poisoned(s, blocks)?;
                bench!(s, k, sp, format!("{n} ints"), grid: blocks as u32,
                    outs: [out, sums],
                    |l| l.arg_mut(&mut out.d).arg_mut(&mut sums.d).arg(&x).arg(&(n as i32)))
            },
        },
        Spec {
            name: "row_dot_dynsmem",
            style: "row dot products, dynamic shared scratch",
            file: R,
            kernel: "row_dot_dynsmem",
            block: (256, 1, 1),
            shared: 256 * 4,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (16384usize, 4096usize);
                let mut r = Rng::new(27);
                let (a, b) = (
                    up(s, &r.floats(rows * cols))?,
                    up(s, &r.floats(rows * cols))?,
                );
                let out = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: rows as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&a).arg(&b).arg(&(rows as i32))
                        .arg(&(cols as i32)))
            },
        },
        Spec {
            name: "histogram256_shared",
            style: "histogram, shared + global atomics, uchar4 loads",
            file: R,
            kernel: "histogram256_shared",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let n = (256usize << 20) + 3;
                let mut r = Rng::new(28);
                let bytes: Vec<u8> = (0..n).map(|_| (r.next() >> 56) as u8).collect();
                let d = up(s, &bytes)?;
                drop(bytes);
                let out = Out::<u32>::zeroed(s, 256)?;
                bench!(s, k, sp, format!("{n} bytes"), grid: 132 * 8, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&d).arg(&n))
            },
        },
        // ---- dense linear algebra, attention ----
        Spec {
            name: "sgemm_tiled_4x4",
            style: "tiled matmul, 4x4 per thread, guarded edges",
            file: L,
            kernel: "sgemm_tiled_4x4",
            block: (16, 16, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (m, n, kk) = (4000usize, 4000usize, 1000usize);
                let mut r = Rng::new(29);
                let (a, b) = (up(s, &r.floats(m * kk))?, up(s, &r.floats(kk * n))?);
                let c0 = up(s, &r.floats(m * n))?;
                let out = Out::<f32>::poisoned(s, m * n)?;
                bench!(s, k, sp, format!("{m} x {kk} times {kk} x {n}"),
                    grid: (div(n, 64), div(m, 64), 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&a).arg(&b).arg(&c0).arg(&(m as i32))
                        .arg(&(n as i32)).arg(&(kk as i32)).arg(&1.0f32).arg(&0.5f32))
            },
        },
        Spec {
            name: "transpose_padded",
            style: "transpose through a padded shared tile",
            file: L,
            kernel: "transpose_padded",
            block: (32, 8, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (8192usize, 6000usize);
                let x = up(s, &Rng::new(30).floats(rows * cols))?;
                let out = Out::<f32>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"),
                    grid: (div(cols, 32), div(rows, 32), 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        Spec {
            name: "gemv_batched_h2",
            style: "batched GEMV, half2 loads, a warp per row",
            file: L,
            kernel: "gemv_batched_h2",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (batch, rows, cols) = (32usize, 4096usize, 2048usize);
                let mut r = Rng::new(31);
                let a = up(s, &r.halves(batch * rows * cols))?;
                let x = up(s, &r.halves(batch * cols))?;
                let out = Out::<f32>::poisoned(s, batch * rows)?;
                bench!(s, k, sp, format!("{batch} x {rows} x {cols} halves"),
                    grid: div(batch * rows * 32, 256), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&a).arg(&x).arg(&(batch as i32))
                        .arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        Spec {
            name: "attention_small_tiles",
            style: "causal attention, 64-query tiles, K/V in shared",
            file: L,
            kernel: "attention_small_tiles",
            block: (64, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (bh, seq, hd) = (64usize, 2048usize, 64usize);
                let mut r = Rng::new(32);
                let q = up(s, &r.floats(bh * seq * hd))?;
                let kk = up(s, &r.floats(bh * seq * hd))?;
                let v = up(s, &r.floats(bh * seq * hd))?;
                let out = Out::<f32>::poisoned(s, bh * seq * hd)?;
                bench!(s, k, sp, format!("{bh} heads x {seq} x {hd}"),
                    grid: (div(seq, 64), bh as u32, 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&q).arg(&kk).arg(&v).arg(&(seq as i32))
                        .arg(&0.125f32).arg(&1i32))
            },
        },
        // ---- loops: column, strided, windowed, segmented and atomic ----
        Spec {
            name: "col_sum",
            style: "column reduction, a thread per column, loop over rows",
            file: LP,
            kernel: "col_sum",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (512usize, 131072usize);
                let x = up(s, &Rng::new(33).floats(rows * cols))?;
                let out = Out::<f32>::poisoned(s, cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: div(cols, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        Spec {
            name: "row_mean_pitched",
            style: "row reduction over a pitched matrix, block-stride loop, shared tree",
            file: LP,
            kernel: "row_mean_pitched",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols, ld) = (16384usize, 4000usize, 4096usize);
                let x = up(s, &Rng::new(34).floats(rows * ld))?;
                let out = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} x {cols}, pitch {ld}"), grid: rows as u32,
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(rows as i32)).arg(&(cols as i32))
                        .arg(&(ld as i32)))
            },
        },
        Spec {
            name: "strided_scale_copy",
            style: "strided copy, pointers bumped by runtime 64-bit strides, runtime trip count",
            file: LP,
            kernel: "strided_scale_copy",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                // Lanes of a pitched [iters, in_stride] input into a packed [iters, lanes] output.
                let (lanes, iters, in_stride) = (65000usize, 1024usize, 65536usize);
                let x = up(s, &Rng::new(35).floats(iters * in_stride))?;
                let out = Out::<f32>::poisoned(s, iters * lanes)?;
                bench!(s, k, sp, format!("{iters} x {lanes} of {iters} x {in_stride}"),
                    grid: div(lanes, 256), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(lanes as i64))
                        .arg(&(in_stride as i64)).arg(&(lanes as i32)).arg(&(iters as i32))
                        .arg(&0.5f32))
            },
        },
        Spec {
            name: "dwconv3x3_nhwc",
            style: "depthwise 3x3, channels last (NHWC), unrolled guarded window",
            file: LP,
            kernel: "dwconv3x3_nhwc",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (n, h, w, c) = (16usize, 112usize, 112usize, 128usize);
                let mut r = Rng::new(36);
                let x = up(s, &r.floats(n * h * w * c))?;
                let (wt, bias) = (up(s, &r.floats(9 * c))?, up(s, &r.floats(c))?);
                let out = Out::<f32>::poisoned(s, n * h * w * c)?;
                bench!(s, k, sp, format!("{n} x {h} x {w} x {c}"),
                    grid: (div(w * c, 256), (n * h) as u32, 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&wt).arg(&bias).arg(&(h as i32))
                        .arg(&(w as i32)).arg(&(c as i32)))
            },
        },
        Spec {
            name: "dwconv_nhwc_relu6<5>",
            style: "depthwise 5x5, NHWC, templated unrolled window, runtime stride, ReLU6",
            file: LP,
            kernel: "dwconv_nhwc_relu6<5>",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (n, h, w, c, stride) = (16usize, 112usize, 112usize, 192usize, 1usize);
                let (oh, ow) = ((h - 1) / stride + 1, (w - 1) / stride + 1);
                let mut r = Rng::new(37);
                let x = up(s, &r.floats(n * h * w * c))?;
                let (wt, bias) = (up(s, &r.floats(25 * c))?, up(s, &r.floats(c))?);
                let total = n * oh * ow * c;
                let out = Out::<f32>::poisoned(s, total)?;
                bench!(s, k, sp, format!("{n} x {h} x {w} x {c}"), grid: div(total, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&wt).arg(&bias).arg(&(n as i32))
                        .arg(&(h as i32)).arg(&(w as i32)).arg(&(c as i32)).arg(&(oh as i32))
                        .arg(&(ow as i32)).arg(&(stride as i32)))
            },
        },
        Spec {
            name: "conv1d_ncl",
            style: "1-D convolution (NCL), runtime window, dilation and padding",
            file: LP,
            kernel: "conv1d_ncl",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (b, ci, co, len) = (4usize, 64usize, 64usize, 8192usize);
                let (ks, stride, pad, dil) = (7usize, 1usize, 6usize, 2usize);
                let l_out = (len + 2 * pad - dil * (ks - 1) - 1) / stride + 1;
                let mut r = Rng::new(38);
                let (x, wt) = (
                    up(s, &r.floats(b * ci * len))?,
                    up(s, &r.floats(co * ci * ks))?,
                );
                let out = Out::<f32>::poisoned(s, b * co * l_out)?;
                bench!(s, k, sp, format!("{b} x {ci} x {len} -> {co} channels, {ks} taps"),
                    grid: div(b * co * l_out, 256), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&wt).arg(&(b as i32))
                        .arg(&(ci as i32)).arg(&(co as i32)).arg(&(len as i32))
                        .arg(&(l_out as i32)).arg(&(ks as i32)).arg(&(stride as i32))
                        .arg(&(pad as i32)).arg(&(dil as i32)))
            },
        },
        Spec {
            name: "segment_sum_rows",
            style: "segment sum over CSR offsets, data-dependent trip count",
            file: LP,
            kernel: "segment_sum_rows",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                // 0 to 31 rows a segment (empty ones included).
                let (segments, dim) = (16384usize, 256usize);
                let mut r = Rng::new(39);
                let mut offsets = vec![0i32];
                for _ in 0..segments {
                    let last = *offsets.last().unwrap_or(&0);
                    offsets.push(last + r.below(32) as i32);
                }
                let rows = offsets[segments] as usize;
                let x = up(s, &r.floats(rows * dim))?;
                let offsets = up(s, &offsets)?;
                let out = Out::<f32>::poisoned(s, segments * dim)?;
                bench!(s, k, sp, format!("{rows} x {dim} into {segments} segments"),
                    grid: (div(dim, 256), segments as u32, 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&offsets).arg(&(segments as i32))
                        .arg(&(dim as i32)))
            },
        },
        Spec {
            name: "index_add_rows_i32",
            style: "row scatter-add through an index buffer, atomics in a block-stride loop",
            file: LP,
            kernel: "index_add_rows_i32",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, dim, dst_rows) = (262144usize, 256usize, 8192usize);
                let mut r = Rng::new(40);
                let src = up(s, &r.ints(rows * dim, 1000))?;
                let idx = up(s, &r.ints(rows, dst_rows as u64))?;
                let out = Out::<i32>::zeroed(s, dst_rows * dim)?;
                bench!(s, k, sp, format!("{rows} x {dim} into {dst_rows} rows"),
                    grid: rows as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&src).arg(&idx).arg(&(rows as i32))
                        .arg(&(dim as i32)))
            },
        },
        Spec {
            name: "histogram_range",
            style: "histogram, runtime chunk per thread, bins in dynamic shared, atomics",
            file: LP,
            kernel: "histogram_range",
            block: (256, 1, 1),
            shared: 1000 * 4,
            styled: None,
            setup: |s, k, sp| {
                // One shared word a bin.
                let nbins = sp.shared as usize / 4;
                let (n, per_thread) = ((64usize << 20) + 5, 16usize);
                let x = up(s, &Rng::new(41).floats(n))?;
                let out = Out::<u32>::zeroed(s, nbins)?;
                bench!(s, k, sp, format!("{n} floats into {nbins} bins"),
                    grid: div(n, 256 * per_thread), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(n as i32)).arg(&(per_thread as i32))
                        .arg(&(nbins as i32)).arg(&-1.0f32).arg(&1.0f32))
            },
        },
        Spec {
            name: "batched_matvec",
            style: "many small mat-vecs, a thread per row, loop over k",
            file: LP,
            kernel: "batched_matvec",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (batch, m, kk) = (16384usize, 32usize, 128usize);
                let mut r = Rng::new(42);
                let (a, x) = (
                    up(s, &r.floats(batch * m * kk))?,
                    up(s, &r.floats(batch * kk))?,
                );
                let out = Out::<f32>::poisoned(s, batch * m)?;
                bench!(s, k, sp, format!("{batch} x ({m} x {kk})"), grid: div(batch * m, 256),
                    outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&a).arg(&x).arg(&(batch as i32))
                        .arg(&(m as i32)).arg(&(kk as i32)))
            },
        },
        Spec {
            name: "stencil13_zqueue",
            style: "3-D 13-point stencil, z march with a register queue",
            file: LP,
            kernel: "stencil13_zqueue",
            block: (32, 8, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (nx, ny, nz) = (512usize, 512usize, 256usize);
                let x = up(s, &Rng::new(43).floats(nx * ny * nz))?;
                let out = Out::<f32>::poisoned(s, nx * ny * nz)?;
                bench!(s, k, sp, format!("{nx} x {ny} x {nz}"),
                    grid: (div(nx, 32), div(ny, 8), 1), outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(nx as i32)).arg(&(ny as i32))
                        .arg(&(nz as i32)).arg(&0.4f32).arg(&0.1f32).arg(&-0.05f32))
            },
        },
        Spec {
            name: "rmsnorm_block_f16",
            style: "RMSnorm as candle writes it, a block per row, macro-stamped template, half",
            file: LP,
            kernel: "rmsnorm_block_f16",
            block: (1024, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (16384usize, 4096usize);
                let mut r = Rng::new(44);
                let (x, alpha) = (up(s, &r.halves(rows * cols))?, up(s, &r.halves(cols))?);
                let out = Out::<f16>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols} halves"), grid: rows as u32,
                    outs: [out],
                    |l| l.arg(&x).arg_mut(&mut out.d).arg(&alpha).arg(&(cols as i32))
                        .arg(&1e-6f32))
            },
        },
        Spec {
            name: "softmax_rows_3pass",
            style: "softmax over vocabulary-long rows, a block per row, three passes",
            file: LP,
            kernel: "softmax_rows_3pass",
            block: (512, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                let (rows, cols) = (2048usize, 32000usize);
                let x = up(s, &Rng::new(45).floats(rows * cols))?;
                let out = Out::<f32>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: rows as u32, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        Spec {
            name: "strided_affine_f16",
            style: "macro-stamped template<T, UNROLL> strided loop, half, runtime trip count",
            file: LP,
            kernel: "strided_affine_f16",
            block: (256, 1, 1),
            shared: 0,
            styled: None,
            setup: |s, k, sp| {
                // Every other element from the second on (x[1::2]).
                let (n, offset, step) = ((64usize << 20) + 7, 1usize, 2usize);
                let x = up(s, &Rng::new(46).halves(offset + n * step))?;
                let out = Out::<f16>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} of {} halves", offset + n * step),
                    grid: 132 * 4, outs: [out],
                    |l| l.arg_mut(&mut out.d).arg(&x).arg(&n).arg(&offset).arg(&step)
                        .arg(&1.5f32).arg(&0.25f32))
            },
        },
    ]
}

// ---- Reporting -----------------------------------------------------------------------------------

fn cov_json(c: Option<&Coverage>) -> serde_json::Value {
    match c {
        Some(c) => serde_json::json!({
            "checked": c.checked,
            "host_checked": c.host_checked,
            "proven": c.proven,
            "grouped": c.grouped,
            "group_checks": c.group_checks,
            "hoisted": c.hoisted,
            "versioned_loops": c.versioned_loops,
            "unchecked": c.unchecked.len(),
            "unchecked_sites": unchecked_list(c),
        }),
        None => serde_json::Value::Null,
    }
}

fn race_json(c: &cudacheck::core::race::RaceCoverage) -> serde_json::Value {
    serde_json::json!({
        "checked": c.checked,
        "barriers": c.barriers,
        "unchecked": c.unchecked.len(),
        "not_checked": c.not_checked,
    })
}

fn unchecked_list(c: &Coverage) -> Vec<String> {
    c.unchecked
        .iter()
        .map(|u| {
            let at = u.loc.as_ref().map_or("?".to_string(), |l| l.to_string());
            format!("{at}: {} ({})", u.instruction, u.reason)
        })
        .collect()
}

/// `checked / host-checked / proven`, the checked ones hoisted out of versioned loops in
/// parentheses.
fn cov_cell(c: Option<&Coverage>) -> (String, String) {
    match c {
        Some(c) => (
            if c.hoisted > 0 {
                format!(
                    "{} ({} hoisted) / {} / {}",
                    c.checked, c.hoisted, c.host_checked, c.proven
                )
            } else {
                format!("{} / {} / {}", c.checked, c.host_checked, c.proven)
            },
            c.unchecked.len().to_string(),
        ),
        None => ("?".into(), "?".into()),
    }
}

fn kernel_of(sp: &Spec, arch: Option<Arch>) -> Result<Kernel, BoxError> {
    build_kernel(sp, arch, false)
}

/// The kernel, or with `planted` its planted twin (its file built with `PLANTED` defined).
fn build_kernel(sp: &Spec, arch: Option<Arch>, planted: bool) -> Result<Kernel, BoxError> {
    let mut b = Kernel::new(bench_kernel(sp.file)?, sp.kernel).sync(false);
    if let Some(a) = arch {
        b = b.arch(a);
    }
    if planted {
        b = b.define("PLANTED", None);
    }
    Ok(b.build())
}

// ---- Dry run ----------------------------------------------------------------------------------------

struct DryRow {
    coverage: Option<Coverage>,
    /// The build for the spec's launch shape (what a launch of that shape runs).
    shape: Option<Coverage>,
    symbol: String,
    /// The planted twin built (styles set).
    twin: bool,
    /// The race-checked build's coverage (styles set, or `--races`).
    races: Option<cudacheck::core::race::RaceCoverage>,
    failure: Option<String>,
}

fn dry_one(sp: &Spec, arch: Arch) -> DryRow {
    let mut r = DryRow {
        coverage: None,
        shape: None,
        symbol: String::new(),
        twin: false,
        races: None,
        failure: None,
    };
    let res = (|| -> Result<(), BoxError> {
        let k = kernel_of(sp, Some(arch))?;
        let plain = k.check_offline(arch)?;
        r.symbol = plain.symbol;
        let checked = k.check_offline_checked(arch, sp.block, sp.shared)?;
        r.shape = checked.checked.map(|c| c.coverage.clone());
        r.coverage = k.coverage()?;
        if r.coverage.is_none() {
            return Err(format!("no kernel `{}` in the bounds-checked PTX", sp.kernel).into());
        }
        if races() || sp.styled.is_some() {
            // The race-checked build of the launch shape.
            r.races = Some(
                k.race_coverage_for(sp.block, sp.shared)?
                    .ok_or_else(|| format!("no kernel `{}` in the race-checked PTX", sp.kernel))?,
            );
        }
        if sp.styled.is_some() {
            // The planted twin builds, bounds-checked for the launch shape, too.
            let twin = build_kernel(sp, Some(arch), true)?;
            twin.check_offline_checked(arch, sp.block, sp.shared)?;
            r.twin = true;
        }
        Ok(())
    })();
    if let Err(e) = res {
        r.failure = Some(report(e.as_ref()));
    }
    r
}

fn dry_run(specs: &[Spec], arch: Arch, outputs: &[&String]) -> Result<bool, BoxError> {
    let date = utc_now();
    let mut md = format!(
        "Benchmark set, dry run for {} ({date}): every kernel built plain and bounds-checked \
         with no GPU. Coverage is `Kernel::coverage` (checked on the device / checked once on \
         the host / proven in bounds); \"shape build\" is the build for the benchmark's launch \
         shape (block, dynamic shared memory).\n\n\
         | kernel | style | file | checked / host / proven | unchecked | shape build: checked / host / proven, unchecked | result |\n\
         |---|---|---|---:|---:|---:|---|\n",
        arch.sm_name()
    );
    let mut rows = Vec::new();
    let mut ok = true;
    let (mut total, mut incomplete) = (0usize, 0usize);
    for sp in specs {
        let t = Instant::now();
        let r = dry_one(sp, arch);
        let (cells, unchecked) = cov_cell(r.coverage.as_ref());
        let (scells, sunchecked) = cov_cell(r.shape.as_ref());
        let result = match &r.failure {
            Some(f) => {
                ok = false;
                format!("FAILED: {}", f.replace('\n', " "))
            }
            None if r.coverage.as_ref().is_some_and(|c| !c.is_complete()) => {
                incomplete += 1;
                "built; not fully checked".into()
            }
            None => {
                let mut t = "built".to_string();
                if let Some(c) = &r.races {
                    t.push_str(&format!(
                        "; race-checked: {} shared accesses, {} barriers",
                        c.checked, c.barriers
                    ));
                }
                if r.twin {
                    t.push_str("; planted twin built");
                }
                t
            }
        };
        total += 1;
        eprintln!(
            "{}: {result}; {cells}, unchecked {unchecked} ({:.1} s)",
            sp.name,
            t.elapsed().as_secs_f64()
        );
        md.push_str(&format!(
            "| {} | {} | {} | {cells} | {unchecked} | {scells}, {sunchecked} | {result} |\n",
            match sp.styled {
                Some(st) => format!("{} ({})", sp.name, st.half.name()),
                None => sp.name.to_string(),
            },
            sp.style,
            sp.file
        ));
        rows.push(serde_json::json!({
            "kernel": sp.name,
            "style": sp.style,
            "file": format!("bench/{}", sp.file),
            "symbol": r.symbol,
            "half": sp.styled.map(|st| st.half.name()),
            "planted_buffer": sp.styled.map(|st| st.planted),
            "planted_twin_built": r.twin,
            "races": r.races.as_ref().map(race_json),
            "block": [sp.block.0, sp.block.1, sp.block.2],
            "dynamic_shared_bytes": sp.shared,
            "coverage": cov_json(r.coverage.as_ref()),
            "shape_build_coverage": cov_json(r.shape.as_ref()),
            "failure": r.failure,
        }));
        if let Some(c) = &r.coverage {
            for u in unchecked_list(c) {
                md.push_str(&format!("|  | unchecked: {u} | | | | | |\n"));
            }
        }
    }
    md.push_str(&format!(
        "\n{total} kernels; {} built; {incomplete} not fully checked.\n",
        rows.iter().filter(|r| r["failure"].is_null()).count()
    ));
    print!("{md}");
    let json = serde_json::json!({
        "mode": "dry-run",
        "arch": arch.sm_name(),
        "date_utc": date,
        "rows": rows,
    });
    write_outputs(outputs, &md, &json)?;
    Ok(ok)
}

// ---- GPU run --------------------------------------------------------------------------------------

struct Row {
    name: &'static str,
    style: &'static str,
    /// The styles set's half.
    half: Option<Half>,
    /// Whether the plain output was checked against a CPU reference (or property), and passed.
    referenced: bool,
    size: String,
    plain_ms: f64,
    checked_ms: f64,
    coverage: Option<Coverage>,
    /// The most host checks one bounds-checked launch failed (`Kernel::failed_host_checks`):
    /// those accesses ran with device checks.
    failed_host_checks: usize,
    /// With `--races`: shared accesses race-checked, barriers checked, and why not when the
    /// kernel is not race-checked.
    races: Option<cudacheck::core::race::RaceCoverage>,
    /// Bytes of output compared, and those that differ (with the first differing offset).
    bytes: usize,
    differing: usize,
    first_difference: Option<usize>,
    failure: Option<String>,
}

impl Row {
    fn identical(&self) -> bool {
        self.failure.is_none() && self.differing == 0
    }
}

fn measure(s: &Arc<CudaStream>, sp: &Spec, row: &mut Row) -> Result<(), BoxError> {
    let k = kernel_of(sp, None)?;
    let mut b = (sp.setup)(s, &k, sp)?;
    row.size = b.size.clone();
    let timed_only = PLAIN_TIMED.load(std::sync::atomic::Ordering::Relaxed);
    // Differential: one plain, one bounds-checked launch.
    (b.run)(Op::Launch(false, None))?;
    if timed_only {
        let ctx = s.context();
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let mut t = Vec::new();
        for i in 0..WARMUP.min(1) + runs() {
            (b.run)(Op::Launch(false, Some((&start, &end))))?;
            if i >= WARMUP.min(1) {
                t.push(f64::from(start.elapsed_ms(&end)?));
            }
        }
        row.plain_ms = median(t);
        return Ok(());
    }
    let plain = (b.run)(Op::Read)?;
    if let Some(check) = &b.check {
        check(&plain).map_err(|e| format!("the plain output is wrong: {e}"))?;
        row.referenced = true;
    }
    (b.run)(Op::Launch(true, None))?;
    let checked = (b.run)(Op::Read)?;
    row.bytes = plain.len();
    row.differing = plain.iter().zip(&checked).filter(|(a, b)| a != b).count()
        + plain.len().abs_diff(checked.len());
    row.first_difference = plain
        .iter()
        .zip(&checked)
        .position(|(a, b)| a != b)
        .or((plain.len() != checked.len()).then(|| plain.len().min(checked.len())));
    drop((plain, checked));
    // Kernel times.
    let ctx = s.context();
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let mut kernel_ms = |on: bool| -> Result<f64, BoxError> {
        let mut t = Vec::with_capacity(runs());
        for i in 0..WARMUP + runs() {
            (b.run)(Op::Launch(on, Some((&start, &end))))?;
            let ms = start.elapsed_ms(&end)?;
            if i >= WARMUP {
                t.push(f64::from(ms));
            }
        }
        Ok(median(t))
    };
    row.plain_ms = kernel_ms(false)?;
    row.checked_ms = kernel_ms(true)?;
    row.coverage = k.coverage()?;
    row.failed_host_checks = k
        .failed_host_checks()
        .iter()
        .map(|set| set.len())
        .max()
        .unwrap_or(0);
    if races() {
        row.races = k.race_coverage()?;
    }
    Ok(())
}

fn gpu_run(specs: &[Spec], outputs: &[&String]) -> Result<bool, BoxError> {
    let s = stream_or_exit();
    let device = s.context().name()?;
    let date = utc_now();
    let mut rows = Vec::new();
    for sp in specs {
        let mut row = Row {
            name: sp.name,
            style: sp.style,
            half: sp.styled.map(|st| st.half),
            referenced: false,
            size: String::new(),
            plain_ms: f64::NAN,
            checked_ms: f64::NAN,
            coverage: None,
            failed_host_checks: 0,
            races: None,
            bytes: 0,
            differing: 0,
            first_difference: None,
            failure: None,
        };
        if let Err(e) = measure(&s, sp, &mut row) {
            row.failure = Some(report(e.as_ref()));
        }
        match &row.failure {
            Some(f) => eprintln!("{}: FAILED: {f}", row.name),
            None => eprintln!(
                "{}: {:.3} ms plain, {:.3} ms checked, {}",
                row.name,
                row.plain_ms,
                row.checked_ms,
                if row.differing == 0 {
                    "bit-identical".to_string()
                } else {
                    format!("{} of {} bytes differ", row.differing, row.bytes)
                }
            ),
        }
        rows.push(row);
    }
    let timed: Vec<(&Row, f64)> = rows
        .iter()
        .filter(|r| r.failure.is_none())
        .map(|r| (r, r.checked_ms / r.plain_ms))
        .collect();
    let (geomean, worst) = summary(&timed);
    let dir = specs
        .first()
        .map_or("", |sp| sp.file.split('/').next().unwrap_or(""));
    let mut md = format!(
        "Benchmark set on {device}, {date}: bounds checking's cost on {} kernels written in \
         the styles real code uses (bench/{dir}/). Kernel times are CUDA events around the \
         kernel alone, medians of {runs} runs after {WARMUP} warm-up runs. Coverage is \
         `Kernel::coverage` of the bounds-checked build: accesses checked on the device (of \
         them, hoisted: checked once per thread before their loop, which then runs without \
         their checks) / once on the host / proven in bounds, and left unchecked; \"host failed\" is how many of the \
         host checks the benchmark's own arguments failed (`Kernel::failed_host_checks`: those \
         accesses were checked on the device in the timed launches). Bit-identical: every \
         output byte of the bounds-checked launch equals the plain launch's (outputs poisoned \
         before each launch).\n\n\
         | kernel | style | size | plain (ms) | checked (ms) | slowdown | checked / host / proven | host failed | unchecked | bit-identical |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---|\n",
        rows.len(),
        runs = runs(),
    );
    for r in &rows {
        let (cells, unchecked) = cov_cell(r.coverage.as_ref());
        let same = match (&r.failure, r.first_difference) {
            (Some(f), _) => format!("FAILED: {}", f.replace('\n', " ")),
            (None, None) if r.referenced => "yes; plain output matches the CPU reference".into(),
            (None, None) => "yes".into(),
            (None, Some(at)) => format!(
                "**no**: {} of {} bytes differ, first at byte {at}",
                r.differing, r.bytes
            ),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3}x | {cells} | {} | {unchecked} | {same} |\n",
            match r.half {
                Some(h) => format!("{} ({})", r.name, h.name()),
                None => r.name.to_string(),
            },
            r.style,
            r.size,
            r.plain_ms,
            r.checked_ms,
            r.checked_ms / r.plain_ms,
            r.failed_host_checks,
        ));
    }
    if races() {
        // The measure: the kernels with race-checked shared accesses.
        let shared: Vec<f64> = timed
            .iter()
            .filter(|(r, _)| r.races.as_ref().is_some_and(|c| c.checked > 0))
            .map(|(_, x)| *x)
            .collect();
        let g = (shared.iter().map(|x| x.ln()).sum::<f64>() / shared.len().max(1) as f64).exp();
        md.push_str(&format!(
            "\nRace checking (`--races`: the checked launches are race- and bounds-checked). \
             Kernels with race-checked shared accesses: {}, geometric-mean slowdown {g:.3}x.\n\n\
             | kernel | shared accesses race-checked | barriers | unchecked | not race-checked because |\n\
             |---|---:|---:|---:|---|\n",
            shared.len()
        ));
        for r in &rows {
            if let Some(c) = &r.races {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    r.name,
                    c.checked,
                    c.barriers,
                    c.unchecked.len(),
                    c.not_checked.as_deref().unwrap_or("")
                ));
            }
        }
    }
    let mismatched = rows.iter().filter(|r| !r.identical()).count();
    md.push_str(&format!(
        "\nGeometric-mean slowdown: {geomean:.3}x over {} kernels; worst: {}. \
         {mismatched} kernel(s) failed or not bit-identical.\n",
        timed.len(),
        worst.map_or("none".into(), |(n, x)| format!("{n} at {x:.3}x"))
    ));
    let mut halves = serde_json::Map::new();
    for h in [Half::Tune, Half::HeldOut] {
        let part: Vec<(&Row, f64)> = timed
            .iter()
            .filter(|(r, _)| r.half == Some(h))
            .copied()
            .collect();
        if rows.iter().all(|r| r.half != Some(h)) {
            continue;
        }
        let (g, w) = summary(&part);
        md.push_str(&format!(
            "Half `{}`: geometric-mean slowdown {g:.3}x over {} kernels; worst: {}.\n",
            h.name(),
            part.len(),
            w.map_or("none".into(), |(n, x)| format!("{n} at {x:.3}x"))
        ));
        halves.insert(
            h.name().into(),
            serde_json::json!({
                "kernels": part.len(),
                "geomean_slowdown": g,
                "worst": w.map(|(n, x)| serde_json::json!({"kernel": n, "slowdown": x})),
            }),
        );
    }
    print!("{md}");
    let json = serde_json::json!({
        "device": device,
        "date_utc": date,
        "runs": runs(),
        "warmup": WARMUP,
        "geomean_slowdown": geomean,
        "worst": worst.map(|(n, x)| serde_json::json!({"kernel": n, "slowdown": x})),
        "halves": halves,
        "rows": rows.iter().map(|r| serde_json::json!({
            "kernel": r.name,
            "style": r.style,
            "half": r.half.map(Half::name),
            "plain_matches_reference": r.referenced,
            "size": r.size,
            "plain_kernel_ms": r.plain_ms,
            "checked_kernel_ms": r.checked_ms,
            "slowdown": r.checked_ms / r.plain_ms,
            "coverage": cov_json(r.coverage.as_ref()),
            "failed_host_checks": r.failed_host_checks,
            "races": r.races.as_ref().map(race_json),
            "bytes_compared": r.bytes,
            "bytes_differing": r.differing,
            "first_difference": r.first_difference,
            "bit_identical": r.identical(),
            "failure": r.failure,
        })).collect::<Vec<_>>(),
    });
    write_outputs(outputs, &md, &json)?;
    Ok(mismatched == 0)
}

/// `--planted`: each kernel's planted twin launched bounds-checked (never plain), which must
/// fail with [`Error::OutOfBounds`] naming the buffer its spec names at an index outside it;
/// then the kernel itself, plain and bounds-checked, which must succeed with bit-identical
/// outputs (the context is healthy after the fault).
fn planted_run(specs: &[Spec], outputs: &[&String]) -> Result<bool, BoxError> {
    let s = stream_or_exit();
    let device = s.context().name()?;
    let date = utc_now();
    let mut md = format!(
        "Planted bugs on {device}, {date}: each kernel's twin built with `PLANTED` defined, \
         launched bounds-checked; the report must name the planted buffer at an index outside \
         it, and the next launches (the kernel itself, plain and bounds-checked) must succeed \
         with bit-identical outputs.\n\n\
         | kernel | planted buffer | reported | next launch | result |\n|---|---|---|---|---|\n"
    );
    let (mut rows, mut missed) = (Vec::new(), 0usize);
    for sp in specs {
        let Some(st) = sp.styled else { continue };
        let (reported, named) = match planted_once(&s, sp) {
            Ok(Some(o)) => {
                let outside = o.index < 0 || o.index as u64 >= o.len;
                let text = format!("{}[{}] of {} ({:?})", o.buffer, o.index, o.len, o.access);
                let (buffer, index) = st.planted_at();
                let at = index.is_none_or(|i| i == o.index);
                (text, o.buffer == buffer && outside && at)
            }
            Ok(None) => ("no error".to_string(), false),
            Err(e) => (format!("another error: {}", report(e.as_ref())), false),
        };
        let healthy = healthy_after(&s, sp);
        let ok = named && healthy.is_ok();
        missed += usize::from(!ok);
        let next = healthy
            .as_ref()
            .map_or_else(|e| e.clone(), |()| "ok".to_string());
        eprintln!(
            "{}: planted {}: {reported}; next launch {next}",
            sp.name, st.planted
        );
        md.push_str(&format!(
            "| {} ({}) | {} | {} | {} | {} |\n",
            sp.name,
            st.half.name(),
            st.planted,
            reported.replace('\n', " "),
            next.replace('\n', " "),
            if ok { "named" } else { "**MISSED**" }
        ));
        rows.push(serde_json::json!({
            "kernel": sp.name,
            "half": st.half.name(),
            "planted_buffer": st.planted,
            "reported": reported,
            "named": named,
            "next_launch": next,
        }));
    }
    md.push_str(&format!(
        "\n{} planted kernels; {} named exactly with a healthy next launch; {missed} missed.\n",
        rows.len(),
        rows.len() - missed
    ));
    print!("{md}");
    let json = serde_json::json!({
        "mode": "planted",
        "device": device,
        "date_utc": date,
        "missed": missed,
        "rows": rows,
    });
    write_outputs(outputs, &md, &json)?;
    Ok(missed == 0)
}

/// The planted twin's bounds-checked launch: the out-of-bounds report, `None` when it
/// succeeded, or the other error it returned.
fn planted_once(
    s: &Arc<CudaStream>,
    sp: &Spec,
) -> Result<Option<Box<cudacheck::OutOfBounds>>, BoxError> {
    let k = build_kernel(sp, None, true)?;
    let mut b = (sp.setup)(s, &k, sp)?;
    let res = (b.run)(Op::Launch(true, None)).and_then(|_| cudacheck::synchronize(s));
    match res {
        Ok(()) => Ok(None),
        Err(Error::OutOfBounds(o)) => Ok(Some(o)),
        Err(e) => Err(e.into()),
    }
}

/// The kernel itself after its twin's fault: plain and bounds-checked launches succeed with
/// the same output bytes.
fn healthy_after(s: &Arc<CudaStream>, sp: &Spec) -> Result<(), String> {
    if cudacheck::is_poisoned(s) {
        return Err("the context is poisoned".into());
    }
    let run = || -> Result<bool, BoxError> {
        let k = kernel_of(sp, None)?;
        let mut b = (sp.setup)(s, &k, sp)?;
        (b.run)(Op::Launch(false, None))?;
        let plain = (b.run)(Op::Read)?;
        (b.run)(Op::Launch(true, None))?;
        Ok(plain == (b.run)(Op::Read)?)
    };
    match run() {
        Ok(true) => Ok(()),
        Ok(false) => Err("plain and bounds-checked outputs differ".into()),
        Err(e) => Err(report(e.as_ref())),
    }
}

/// The geometric-mean slowdown and the worst kernel of `timed` (kernel, checked / plain).
fn summary<'r>(timed: &[(&'r Row, f64)]) -> (f64, Option<(&'r str, f64)>) {
    let geomean = if timed.is_empty() {
        f64::NAN
    } else {
        (timed.iter().map(|(_, x)| x.ln()).sum::<f64>() / timed.len() as f64).exp()
    };
    let worst = timed
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, x)| (r.name, *x));
    (geomean, worst)
}

/// One launch of each kernel, plain (`--plain-only`) or bounds-checked (`--checked-only`): for
/// compute-sanitizer, which then sees every access the launch makes.
fn once(specs: &[Spec], checked: bool) -> Result<bool, BoxError> {
    let s = stream_or_exit();
    for sp in specs {
        let k = kernel_of(sp, None)?;
        let mut b = (sp.setup)(&s, &k, sp)?;
        let t0 = Instant::now();
        (b.run)(Op::Launch(checked, None))?;
        cudacheck::synchronize(&s)?;
        println!(
            "{} ({}): {:.3} ms",
            sp.name,
            b.size,
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(true)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("bench_set failed: {}", report(e.as_ref()));
            std::process::exit(1);
        }
    }
}

fn run() -> Result<bool, BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut arch = Arch::new(9, 0);
    let mut only: Option<&str> = None;
    let mut outputs = Vec::new();
    let mut it = args.iter();
    let (mut dry, mut once_as, mut planted) = (false, None, false);
    let (mut set, mut half) = ("kernels".to_string(), None);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--planted" => planted = true,
            "--set" => set = it.next().ok_or("--set needs a value")?.clone(),
            "--half" => {
                half = Some(match it.next().map(String::as_str) {
                    Some("tune") => Half::Tune,
                    Some("held-out") => Half::HeldOut,
                    _ => return Err("--half needs tune or held-out".into()),
                })
            }
            "--plain-only" => once_as = Some(false),
            "--checked-only" => once_as = Some(true),
            "--races" => RACES.store(true, std::sync::atomic::Ordering::Relaxed),
            "--plain-timed" => PLAIN_TIMED.store(true, std::sync::atomic::Ordering::Relaxed),
            "--dry-run" => dry = true,
            "--arch" => {
                let v = it.next().ok_or("--arch needs a value")?;
                arch = v.parse().map_err(|e| format!("--arch: {e}"))?;
            }
            "--only" => only = Some(it.next().ok_or("--only needs a value")?),
            s if s.starts_with("--") => return Err(format!("unknown option {s}").into()),
            _ => outputs.push(a),
        }
    }
    let mut specs = match set.as_str() {
        "kernels" => specs(),
        "styles" => styles::specs(),
        s => return Err(format!("--set: no set {s} (kernels or styles)").into()),
    };
    if let Some(h) = half {
        specs.retain(|sp| sp.styled.is_some_and(|st| st.half == h));
    }
    if let Some(o) = only {
        // Several substrings, comma-separated: kernels matching any.
        specs.retain(|sp| o.split(',').any(|part| sp.name.contains(part)));
    }
    if planted && !dry {
        planted_run(&specs, &outputs)
    } else if dry {
        dry_run(&specs, arch, &outputs)
    } else if let Some(checked) = once_as {
        once(&specs, checked)
    } else {
        gpu_run(&specs, &outputs)
    }
}
