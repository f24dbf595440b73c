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
use cudacheck_core::instrument::{HostCheck, InstrumentedKernel, LaunchValues, UNKNOWN_LEN};
use cudacheck_core::Arch;
use cudacheck_tests::{nvrtc_or_skip, repo_root};

/// One argument of a launch: a buffer of so many bytes, or a scalar's bits and size.
#[derive(Clone, Copy)]
enum Arg {
    Buf(u64),
    I32(i32),
    I64(i64),
    F32(f32),
}

/// One benchmark launch of a `tune` kernel, as `styles.rs` makes it.
struct Launch {
    file: &'static str,
    kernel: &'static str,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<Arg>,
}

/// A grid of 16 blocks per SM of an H100, as `styles.rs`'s grid-stride launches use.
const STRIDE_GRID: u32 = 132 * 16;

fn div(a: u64, b: u64) -> u32 {
    u32::try_from(a.div_ceil(b)).unwrap()
}

/// The launches of the `tune` kernels whose host checks the H100 run of the set found failing.
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
        v.push(Launch {
            file: "conv.cu",
            kernel: "im2col_bump",
            grid: x1(STRIDE_GRID),
            block: b256,
            args,
        });
    }
    {
        let (n, hw, c) = (32u64, 223 * 223u64, 96u64);
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
        });
    }
    {
        let (nc, h, w) = (1024u64, 257u64, 257u64);
        let (oh, ow) = ((h - 1) / 2 + 1, (w - 1) / 2 + 1);
        let m = nc * oh * ow;
        let mut args = vec![Buf(4 * nc * h * w), Buf(4 * m), Buf(8 * m)];
        args.extend([nc, h, w, oh, ow].map(|x| I32(x as i32)));
        v.push(Launch {
            file: "window.cu",
            kernel: "maxpool3s2_argmax",
            grid: x1(div(m, 256)),
            block: b256,
            args,
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
        v.push(Launch {
            file: "window.cu",
            kernel: "grid_sample_bilinear",
            grid: x1(div(n * oh * ow, 256)),
            block: b256,
            args,
        });
    }
    {
        let n = 1u64 << 26;
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
        });
    }
    {
        let (n, nnz) = (4u64 << 20, 32u64 << 20);
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
        });
    }
    {
        let (nq, nk) = (8192u64, 2048u64);
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
        });
    }
    {
        let n = 8u64 << 20;
        v.push(Launch {
            file: "rows.cu",
            kernel: "particles_step_aos",
            grid: x1(STRIDE_GRID),
            block: b256,
            args: vec![Buf(32 * n), Buf(32 * n), F32(0.01), I32(n as i32)],
        });
    }
    v
}

/// The bounds-checked build of `l`'s kernel for its block, made offline as its first launch
/// would make it.
fn build(l: &Launch, arch: Arch) -> InstrumentedKernel {
    let src = CudaSource::from_file(repo_root().join("bench/styles").join(l.file)).unwrap();
    let k = Kernel::new(src, l.kernel).arch(arch).build();
    let built = k
        .check_offline_checked(arch, (l.block[0], l.block[1], l.block[2]), 0)
        .unwrap_or_else(|e| panic!("{}: {e}", l.kernel));
    Arc::unwrap_or_clone(built.checked.expect("a bounds-checked build"))
}

/// `l`'s host checks that fail, each as a line: where, which buffer, and why.
fn failing(l: &Launch, ik: &InstrumentedKernel) -> Vec<String> {
    let scalars: Vec<Option<(u64, u32)>> = l
        .args
        .iter()
        .map(|a| match *a {
            Arg::Buf(_) => None,
            Arg::I32(x) => Some((u64::from(x as u32), 4)),
            Arg::I64(x) => Some((x as u64, 8)),
            Arg::F32(x) => Some((u64::from(x.to_bits()), 4)),
        })
        .collect();
    let lens: Vec<u64> = l
        .args
        .iter()
        .map(|a| match *a {
            Arg::Buf(n) => n,
            _ => UNKNOWN_LEN,
        })
        .collect();
    let v = LaunchValues {
        grid: l.grid,
        block: l.block,
        scalars: &scalars,
        lens: &lens,
    };
    assert_eq!(
        ik.num_params as usize,
        l.args.len(),
        "{}: arguments",
        l.kernel
    );
    ik.host_checks
        .iter()
        .filter(|c| !c.holds(&v))
        .map(|c| describe(c, &v))
        .collect()
}

fn describe(c: &HostCheck, v: &LaunchValues<'_>) -> String {
    let at = c
        .loc
        .as_ref()
        .map_or("?".into(), |l| format!("line {}", l.line));
    let len = c
        .array_bytes
        .unwrap_or_else(|| v.lens.get(c.param as usize).copied().unwrap_or(0));
    format!(
        "{at}: {:?} of {} bytes, param {} (len {len}): offset {} evaluates to {:?}",
        c.kind,
        c.bytes,
        c.param,
        c.offset,
        c.offset.interval(v)
    )
}

/// Each kernel's failing host checks for its benchmark launch, printed (run with
/// `--nocapture` to read them).
fn report(arch: Arch) -> Vec<(&'static str, Vec<String>)> {
    launches()
        .iter()
        .map(|l| {
            let ik = build(l, arch);
            let f = failing(l, &ik);
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
    let _ = report(arch);
}
