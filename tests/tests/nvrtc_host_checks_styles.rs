//! NVRTC tier: the host checks of the styles set's `tune` half (`bench/styles/README.md`),
//! evaluated with no GPU for the very arguments, grids and blocks `examples/bench_set.rs --set
//! styles` launches them with (`examples/bench_set/styles.rs`). Every one of those launches is
//! in bounds (the benchmark compares its outputs bit for bit and, for most, with a CPU
//! reference), so a host check that fails for one is too conservative: the launch then runs
//! the slower build with that access checked on the device. Each failing check is printed
//! with its expression and the interval the host computes for it.
//!
//! Only `tune` kernels are here: the `held-out` half is measured, never tuned on.

use std::sync::Arc;

use cudacheck::nvrtc::CudaSource;
use cudacheck::Kernel;
use cudacheck_core::instrument::{InstrumentedKernel, Target};
use cudacheck_core::Arch;
use cudacheck_tests::host_checks::{failing, failing_set, Arg};
use cudacheck_tests::{nvrtc_or_skip, repo_root};

/// One benchmark launch of a `tune` kernel, as `styles.rs` makes it.
struct Launch {
    file: &'static str,
    kernel: &'static str,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<Arg>,
    /// The parameter the planted twin (the file built with `PLANTED` defined) overruns.
    planted: u32,
    /// How many host checks may still fail for this launch (see [`launches`]).
    remaining: usize,
}

/// A grid of 16 blocks per SM of an H100, as `styles.rs`'s grid-stride launches use.
const STRIDE_GRID: u32 = 132 * 16;

fn div(a: u64, b: u64) -> u32 {
    u32::try_from(a.div_ceil(b)).unwrap()
}

/// The launches of the `tune` kernels whose host checks the H100 run of the set found failing,
/// with how many still fail and why (each cause is in the expression the analysis builds,
/// `instrument/guard.rs`, not in its evaluation).
fn launches() -> Vec<Launch> {
    use Arg::*;
    let x1 = |g: u32| [g, 1, 1];
    let b256 = [256, 1, 1];
    let mut v = Vec::new();
    {
        let (c, h, w, k, pad) = (128u64, 224u64, 224u64, 3u64, 1u64);
        let (oh, ow) = (h + 2 * pad - k + 1, w + 2 * pad - k + 1);
        let d = [c, h, w, k, pad, 1, oh, ow].map(|x| I32(x as i32));
        let mut args = vec![Buf(4 * c * h * w), Buf(4 * c * k * k * oh * ow)];
        args.extend(d);
        // 4 of 7 fixed (the inner loop over `j`, K = 3, is unrolled by four after a test
        // `K - 1 <u 3` that skips the unrolled part, whose count `(K - K % 4) / 4` is 0: the
        // expression carries the test, which fails for K = 3, so the part is not entered).
        // 3 remain: the remainder part's reads are guarded by `w >= 0 && w < W` of `w = w0 +
        // j`, a sum the address splits otherwise (`(base + w0) + (i * W + j)`), so the guard
        // does not bound it and padding's `w0 = -1` seems to read before the plane.
        v.push(Launch {
            file: "conv.cu",
            kernel: "im2col_bump",
            grid: x1(STRIDE_GRID),
            block: b256,
            args,
            planted: 0,
            remaining: 3,
        });
    }
    {
        let (n, hw, c) = (32u64, 223 * 223u64, 96u64);
        // 12 of 16 fixed (the remainder loop before the unrolled `k` loop, `for k = ty; k <
        // 32; k += 8`, runs `((31 - ty) / 8 + 1) & 3` = 0 times for every thread of an 8-row
        // block; after it, a count of 0 stands for the loop not entered, `Quot`'s
        // `zero_skips`). 4 remain: the unrolled loop's reads of `in` are guarded by `hw <
        // HW` of a sibling counter (`hw + 24`, narrowed from 64 bits) that the expression
        // does not relate to the address's counter, so the last tile seems to read past the
        // input.
        v.push(Launch {
            file: "conv.cu",
            kernel: "nhwc_to_nchw_u8",
            grid: [div(hw, 32), div(c, 32), n as u32],
            block: [32, 8, 1],
            args: vec![
                Buf(n * hw * c),
                Buf(n * hw * c),
                I32(hw as i32),
                I32(c as i32),
            ],
            planted: 0,
            remaining: 4,
        });
    }
    {
        let (nc, h, w) = (1024u64, 257u64, 257u64);
        let (oh, ow) = ((h - 1) / 2 + 1, (w - 1) / 2 + 1);
        let m = nc * oh * ow;
        let mut args = vec![Buf(4 * nc * h * w), Buf(4 * m), Buf(8 * m)];
        args.extend([nc, h, w, oh, ow].map(|x| I32(x as i32)));
        // 2 of 3 fixed (the window's rows split by their clamped start). 1 remains: the third
        // column of the unrolled window (`ws + 2`) is read under a test of the remainder count
        // the expression does not carry, so the last plane's last window seems to read one
        // element past the input.
        v.push(Launch {
            file: "window.cu",
            kernel: "maxpool3s2_argmax",
            grid: x1(div(m, 256)),
            block: b256,
            args,
            planted: 0,
            remaining: 1,
        });
    }
    {
        let (n, c, h, w, oh, ow) = (16u64, 32u64, 128u64, 128u64, 256u64, 256u64);
        let mut args = vec![
            Buf(4 * n * c * h * w),
            Buf(4 * n * oh * ow * 2),
            Buf(4 * n * c * oh * ow),
        ];
        args.extend([n, c, h, w, oh, ow].map(|x| I32(x as i32)));
        // All 15 remain, and rightly: `x1 = x0 + 1` with `x0 = (int)floorf(ix)` from the
        // grid's data; NVVM compiles `x1 >= 0` as `x0 > -2`, so `x0 = INT_MAX` (a huge grid
        // value saturates the conversion) passes both tests with `x1` wrapped to INT_MIN and
        // reads far outside the plane. The host cannot exclude it; the device must check.
        v.push(Launch {
            file: "window.cu",
            kernel: "grid_sample_bilinear",
            grid: x1(div(n * oh * ow, 256)),
            block: b256,
            args,
            planted: 0,
            remaining: 15,
        });
    }
    {
        let n = 1u64 << 26;
        // 2 of 7 fixed (the remainder loop's count, `(trip + 1) & 3` per thread, by -1). 5
        // remain: the mask word `mask[i >> 5]` is `(i >> 3) & ~3` of a counter the analysis
        // cannot describe (NVVM steps it through a chain of temporaries in the unrolled
        // loop), so only the mask's bits bound it.
        v.push(Launch {
            file: "quant.cu",
            kernel: "apply_bitmask",
            grid: x1(STRIDE_GRID),
            block: b256,
            args: vec![
                Buf(4 * n),
                Buf(4 * (n / 32)),
                Buf(4 * n),
                F32(1.25),
                I64(n as i64),
            ],
            planted: 1,
            remaining: 5,
        });
    }
    {
        let (n, nnz) = (4u64 << 20, 32u64 << 20);
        // 3 of 4 fixed (the grid-stride counter stepped through a sign extension and a
        // truncation, `cvt.s64.s32` then `cvt.u32.u64`, is a counter all the same). 1
        // remains, and rightly: the atomic's `y[r]` is data-dependent (`r` from `row[]`,
        // known only as `>= 0`).
        v.push(Launch {
            file: "sparse.cu",
            kernel: "spmv_coo_atomic",
            grid: x1(STRIDE_GRID),
            block: b256,
            args: vec![
                Buf(4 * nnz),
                Buf(4 * nnz),
                Buf(4 * nnz),
                Buf(4 * n),
                Buf(4 * n),
                I32(nnz as i32),
            ],
            planted: 0,
            remaining: 1,
        });
    }
    {
        let (nq, nk) = (8192u64, 2048u64);
        // 1 remains: the second copy of the unrolled key loop prefetches `k[(j + 2) * 32 +
        // lane]` under `j + 2 < nk`, a test of the counter after its update, which the
        // expression (built from the address before the update) does not carry.
        v.push(Launch {
            file: "rows.cu",
            kernel: "attn_row_online_f16",
            grid: x1(div(nq, 8)),
            block: b256,
            args: vec![
                Buf(2 * nq * 64),
                Buf(2 * nk * 64),
                Buf(2 * nk * 64),
                Buf(2 * nq * 64),
                I32(nq as i32),
                I32(nk as i32),
                F32(0.125),
            ],
            planted: 1,
            remaining: 1,
        });
    }
    {
        let n = 8u64 << 20;
        // All 16 fixed: as `spmv_coo_atomic`, the counter stepped through a sign extension
        // and a truncation, by `mad.lo` of `ntid.x` and a copy of `nctaid.x` made in the loop.
        v.push(Launch {
            file: "rows.cu",
            kernel: "particles_step_aos",
            grid: x1(STRIDE_GRID),
            block: b256,
            args: vec![Buf(32 * n), Buf(32 * n), F32(0.01), I32(n as i32)],
            planted: 0,
            remaining: 0,
        });
    }
    v
}

/// The bounds-checked build of `l`'s kernel for its block, made offline as its first launch
/// would make it.
fn build(l: &Launch, arch: Arch, planted: bool) -> InstrumentedKernel {
    let src = CudaSource::from_file(repo_root().join("bench/styles").join(l.file)).unwrap();
    let mut k = Kernel::new(src, l.kernel).arch(arch);
    if planted {
        k = k.define("PLANTED", None);
    }
    let k = k.build();
    let built = k
        .check_offline_checked(arch, (l.block[0], l.block[1], l.block[2]), 0)
        .unwrap_or_else(|e| panic!("{}: {e}", l.kernel));
    Arc::unwrap_or_clone(built.checked.expect("a bounds-checked build"))
}

/// Each kernel's failing host checks for its benchmark launch, printed (run with
/// `--nocapture` to read them).
fn report(arch: Arch) -> Vec<(&'static str, Vec<String>)> {
    launches()
        .iter()
        .map(|l| {
            let ik = build(l, arch, false);
            let f = failing(&ik, l.grid, l.block, &l.args);
            println!(
                "{}: {} of {} host checks fail",
                l.kernel,
                f.len(),
                ik.host_checks.len()
            );
            for line in &f {
                println!("  {line}");
            }
            (l.kernel, f)
        })
        .collect()
}

#[test]
fn nvrtc_host_checks_styles_tune_launches() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let launches = launches();
    for (l, (kernel, f)) in launches.iter().zip(report(arch)) {
        assert!(
            f.len() <= l.remaining,
            "{kernel}: {} host checks fail, at most {} expected",
            f.len(),
            l.remaining
        );
    }
}

/// Each launch with the kernel's planted twin (`PLANTED`), which overruns one buffer for
/// these very arguments: a host check on that buffer fails, so the launch runs the build that
/// checks it on the device (or every access to it is checked on the device: `sites` counts
/// those, host-checked accesses have no site).
#[test]
fn nvrtc_host_checks_styles_tune_planted_twins_are_not_passed() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    for l in launches() {
        let twin = build(&l, arch, true);
        let f = failing(&twin, l.grid, l.block, &l.args);
        let on_buffer = format!("param {} ", l.planted);
        let sites = twin
            .sites
            .iter()
            .filter(|s| s.target == Target::Param(l.planted))
            .count();
        let hosted = twin
            .host_checks
            .iter()
            .filter(|c| c.param == l.planted)
            .count();
        println!(
            "{} (planted): {sites} sites on param {}, {hosted} host checks, {} failing",
            l.kernel,
            l.planted,
            f.len()
        );
        assert!(
            f.iter().any(|x| x.contains(&on_buffer)) || (sites > 0 && hosted == 0),
            "{}: the planted twin's launch passes every host check on parameter {}",
            l.kernel,
            l.planted
        );
    }
}

/// The build each launch runs when some of its host checks fail: those accesses checked on
/// the device (`InstrumentOptions::on_device`). Printed per kernel: how many fail, and that
/// build's device checks, those hoisted before a versioned loop, and the versioned loops.
/// `apply_bitmask`'s mask words (`(i >> 3) & ~3` of a 64-bit grid-stride counter, monotone,
/// not affine) are hoisted with the rest of its unrolled loop: only its remainder loop's three
/// accesses keep their checks.
#[test]
fn nvrtc_host_checks_styles_tune_device_builds_are_versioned() {
    if !nvrtc_or_skip() {
        return;
    }
    use cudacheck::nvrtc::{compile, CompileOptions};
    use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
    let arch: Arch = "sm_90".parse().unwrap();
    for l in launches() {
        let src = CudaSource::from_file(repo_root().join("bench/styles").join(l.file)).unwrap();
        let opts = CompileOptions {
            ptx: true,
            ..CompileOptions::new(arch)
        };
        let ptx = compile(&src, &opts).unwrap().ptx.unwrap();
        let shape = InstrumentOptions::new().host_checks(true).block(l.block);
        let host = instrument_ptx_with(&ptx, &shape).unwrap();
        let k = host.kernels.iter().find(|k| k.name == l.kernel).unwrap();
        let set = failing_set(k, l.grid, l.block, &l.args);
        let device = instrument_ptx_with(&ptx, &shape.on_device(set)).unwrap();
        let c = &device
            .kernels
            .iter()
            .find(|k| k.name == l.kernel)
            .unwrap()
            .coverage;
        println!(
            "{}: {} host checks fail; device build: {} device checks, {} hoisted, {} versioned loops",
            l.kernel,
            set.len(),
            c.checked,
            c.hoisted,
            c.versioned_loops
        );
        if l.kernel == "apply_bitmask" {
            assert!(c.checked - c.hoisted <= 3, "{c:?}");
        }
    }
}
