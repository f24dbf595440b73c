//! NVRTC tier: loop shapes whose host checks the launch evaluates (no GPU). For each, a
//! launch that stays in bounds passes every host check, and the same launch with a buffer one
//! element short, or the kernel's out-of-bounds twin (`OOB` defined), fails one.

use std::sync::Arc;

use cudacheck::nvrtc::CudaSource;
use cudacheck::Kernel;
use cudacheck_core::instrument::InstrumentedKernel;
use cudacheck_core::Arch;
use cudacheck_tests::host_checks::{failing, fails_on, Arg};
use cudacheck_tests::nvrtc_or_skip;

const SRC: &str = r#"
// A 64-bit grid-stride loop: NVVM unrolls it by four after a remainder loop that counts each
// thread's own first iterations (0 to 3) down to zero.
extern "C" __global__ void scale_stride64(const float* __restrict__ x, float* __restrict__ y,
                                          float a, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        y[i] = a * x[i];
}

// A window of three with stride two and padding one, clamped at both edges: the loop's start
// and its count both depend on the thread.
extern "C" __global__ void window3_clamped(const float* __restrict__ in, float* __restrict__ out,
                                           int n, int on)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= on) return;
    int s = 2 * o - 1;
#ifdef OOB
    int e = min(s + 3, n + 1);
#else
    int e = min(s + 3, n);
#endif
    s = max(s, 0);
    float m = -INFINITY;
    for (int i = s; i < e; ++i) m = fmaxf(m, in[i]);
    out[o] = m;
}

// A grid-stride loop over `int`s: NVVM widens the counter for the addresses, narrows it back
// and steps it (`mad.lo` of `ntid.x` and a copy of `nctaid.x` made in the loop).
struct Rec { float a, b, c, d, e, f, w; int live; };
extern "C" __global__ void scale_live_records(const Rec* __restrict__ in, Rec* __restrict__ out,
                                              float s, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef OOB
         i <= n;
#else
         i < n;
#endif
         i += blockDim.x * gridDim.x) {
        Rec r = in[i];
        if (r.live) {
            float k = r.w * rsqrtf(r.a * r.a + r.b * r.b + 1.0f);
            r.d += s * k * r.a;
            r.e += s * k * r.b;
            r.a += s * r.d;
            r.b += s * r.e;
        }
        out[i] = r;
    }
}
// The same counter stepped by a plain `add`, past a `continue`.
extern "C" __global__ void gather_skip(const int* __restrict__ idx, const float* __restrict__ v,
                                       float* __restrict__ y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef OOB
         i <= n;
#else
         i < n;
#endif
         i += blockDim.x * gridDim.x) {
        int r = idx[i];
        if (r < 0) continue;
        y[i] = v[i] * 2.0f;
    }
}

// A short loop of a launch's length: NVVM unrolls it by four, entered only after a test
// `K - 1 <u 3` fails, then runs the remainder; for `K < 4` the unrolled part counts 0.
extern "C" __global__ void row_taps(const float* __restrict__ in, float* __restrict__ out, int n, int K)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= n) return;
    float s = 0.0f;
    for (int j = 0; j < K; ++j) {
#ifdef OOB
        s += in[o * K + j + 1] * (float)(j + 1);
#else
        s += in[o * K + j] * (float)(j + 1);
#endif
    }
    out[o] = s;
}

// A block's rows stepping by eight over a stripe of 32: NVVM runs a remainder loop of each
// thread's `(31 - y) / 8 + 1` iterations modulo 4 first, which is 0 for a block of 8 rows,
// then the loop unrolled by four from where the remainder loop left the row.
extern "C" __global__ void stripe_rows(const float* __restrict__ in, float* __restrict__ out, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    for (int r = threadIdx.y; r < 32; r += 8) {
        int row = blockIdx.y * 32 + r;
#ifdef OOB
        out[(size_t)row * w + x] = 2.0f * in[(size_t)(row + 1) * w + x];
#else
        out[(size_t)row * w + x] = 2.0f * in[(size_t)row * w + x];
#endif
    }
}
"#;

fn arch() -> Arch {
    "sm_90".parse().unwrap()
}

fn build(name: &str, block: [u32; 3], oob: bool) -> InstrumentedKernel {
    let mut k = Kernel::new(CudaSource::from_str("shapes.cu", SRC), name).arch(arch());
    if oob {
        k = k.define("OOB", None);
    }
    let built = k
        .build()
        .check_offline_checked(arch(), (block[0], block[1], block[2]), 0)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let ik = Arc::unwrap_or_clone(built.checked.expect("a bounds-checked build"));
    assert!(
        !ik.host_checks.is_empty(),
        "{name}: nothing checked on the host"
    );
    ik
}

#[test]
fn nvrtc_host_checks_remainder_loop_of_a_64_bit_grid_stride_loop() {
    if !nvrtc_or_skip() {
        return;
    }
    let (grid, block) = ([2, 1, 1], [64, 1, 1]);
    let ik = build("scale_stride64", block, false);
    // 300 elements over 128 threads: the remainder loop runs 2 or 3 iterations per thread.
    for n in [300u64, 128, 5] {
        let args = [
            Arg::Buf(4 * n),
            Arg::Buf(4 * n),
            Arg::F32(2.0),
            Arg::I64(n as i64),
        ];
        let f = failing(&ik, grid, block, &args);
        assert!(f.is_empty(), "n = {n}: {f:#?}");
    }
    // The input one element short: the last thread's last remainder iteration reads past it.
    let n = 300u64;
    let short = [
        Arg::Buf(4 * n - 4),
        Arg::Buf(4 * n),
        Arg::F32(2.0),
        Arg::I64(n as i64),
    ];
    let f = failing(&ik, grid, block, &short);
    assert!(fails_on(&f, 0), "a short input passes: {f:#?}");
}

#[test]
fn nvrtc_host_checks_window_clamped_at_both_edges() {
    if !nvrtc_or_skip() {
        return;
    }
    let block = [64, 1, 1];
    let ik = build("window3_clamped", block, false);
    // An input of `n` floats, an output of one per window.
    let args = |n: u64| {
        let on = (n - 1) / 2 + 1;
        [
            Arg::Buf(4 * n),
            Arg::Buf(4 * on),
            Arg::I32(n as i32),
            Arg::I32(on as i32),
        ]
    };
    for (n, grid) in [(255u64, 2u32), (256, 2), (1001, 8)] {
        let args = args(n);
        let f = failing(&ik, [grid, 1, 1], block, &args);
        assert!(f.is_empty(), "n = {n}: {f:#?}");
        // The input one element short.
        let mut short = args;
        short[0] = Arg::Buf(4 * n - 4);
        let f = failing(&ik, [grid, 1, 1], block, &short);
        assert!(fails_on(&f, 0), "n = {n}: a short input passes");
    }
    // The twin whose window ends one past the input.
    let twin = build("window3_clamped", block, true);
    let f = failing(&twin, [2, 1, 1], block, &args(255));
    assert!(fails_on(&f, 0), "the out-of-bounds twin passes");
}

#[test]
fn nvrtc_host_checks_int_grid_stride_loop_narrowed_back_from_its_widening() {
    if !nvrtc_or_skip() {
        return;
    }
    let (grid, block) = ([4u32, 1, 1], [64u32, 1, 1]);
    // (kernel, bytes per element of each buffer; `gather_skip` takes three, the other two
    // and a float).
    let kernels: [(&str, [u64; 3]); 2] = [
        ("scale_live_records", [32, 32, 0]),
        ("gather_skip", [4, 4, 4]),
    ];
    for (name, widths) in kernels {
        let args = |n: u64, short: Option<usize>| -> Vec<Arg> {
            let len = |p: usize| widths[p] * n - if short == Some(p) { widths[p] } else { 0 };
            let mut a = vec![Arg::Buf(len(0)), Arg::Buf(len(1))];
            if name == "gather_skip" {
                a.push(Arg::Buf(len(2)));
            } else {
                a.push(Arg::F32(0.5));
            }
            a.push(Arg::I32(n as i32));
            a
        };
        let ik = build(name, block, false);
        // Fewer elements than threads, several per thread, and not a multiple of the grid.
        for n in [100u64, 256, 1000, 4099] {
            let f = failing(&ik, grid, block, &args(n, None));
            assert!(f.is_empty(), "{name}, n = {n}: {f:#?}");
            // Each buffer one element short.
            let bufs = if name == "gather_skip" { 3 } else { 2 };
            for p in 0..bufs {
                let f = failing(&ik, grid, block, &args(n, Some(p)));
                assert!(
                    fails_on(&f, p),
                    "{name}, n = {n}: buffer {p} one element short passes: {f:#?}"
                );
            }
        }
        // The twin that runs one index past the end.
        let twin = build(name, block, true);
        let f = failing(&twin, grid, block, &args(1000, None));
        assert!(fails_on(&f, 0), "{name}: the out-of-bounds twin passes");
    }
}

#[test]
fn nvrtc_host_checks_loop_unrolled_by_four_skipped_for_short_rows() {
    if !nvrtc_or_skip() {
        return;
    }
    let (grid, block) = ([4u32, 1, 1], [64u32, 1, 1]);
    let args = |n: u64, k: u64, short: Option<usize>| {
        let less = |p: usize| if short == Some(p) { 4 } else { 0 };
        [
            Arg::Buf(4 * n * k - less(0)),
            Arg::Buf(4 * n - less(1)),
            Arg::I32(n as i32),
            Arg::I32(k as i32),
        ]
    };
    let ik = build("row_taps", block, false);
    // Rows shorter than four skip the unrolled part (its count is 0); longer ones run it.
    for k in [1u64, 2, 3, 4, 7, 9] {
        let n = 200;
        let f = failing(&ik, grid, block, &args(n, k, None));
        assert!(f.is_empty(), "K = {k}: {f:#?}");
        for p in [0, 1] {
            let f = failing(&ik, grid, block, &args(n, k, Some(p)));
            assert!(
                fails_on(&f, p),
                "K = {k}: buffer {p} one element short passes: {f:#?}"
            );
        }
    }
    // The twin that reads one element further in every row.
    let twin = build("row_taps", block, true);
    for k in [3u64, 9] {
        let f = failing(&twin, grid, block, &args(200, k, None));
        assert!(fails_on(&f, 0), "K = {k}: the out-of-bounds twin passes");
    }
}

#[test]
fn nvrtc_host_checks_remainder_loop_that_no_thread_enters() {
    if !nvrtc_or_skip() {
        return;
    }
    let (w, stripes) = (200u64, 3u64);
    let args = |short: Option<usize>| {
        let len = |p: usize| 4 * 32 * stripes * w - if short == Some(p) { 4 } else { 0 };
        [Arg::Buf(len(0)), Arg::Buf(len(1)), Arg::I32(w as i32)]
    };
    // 8 rows: every thread's remainder count is 0 (the main loop starts from the row
    // itself). With 16 rows, 0 for some threads and 3 for others, the main loop's start and
    // count are bounded apart, too loosely to pass.
    let rows = 8u32;
    let (grid, block) = ([w.div_ceil(32) as u32, stripes as u32, 1], [32, rows, 1]);
    let ik = build("stripe_rows", block, false);
    let f = failing(&ik, grid, block, &args(None));
    assert!(f.is_empty(), "{rows} rows: {f:#?}");
    for p in [0, 1] {
        let f = failing(&ik, grid, block, &args(Some(p)));
        assert!(
            fails_on(&f, p),
            "{rows} rows: buffer {p} one element short passes: {f:#?}"
        );
    }
    // The twin that reads the next row: the last stripe's last row reads past the input.
    let twin = build("stripe_rows", block, true);
    let f = failing(&twin, grid, block, &args(None));
    assert!(
        fails_on(&f, 0),
        "{rows} rows: the out-of-bounds twin passes"
    );
}
