//! Bounds checking's cost: every kernel of `kernels/` at a size that fills the chip, plain
//! versus bounds-checked.
//!
//! For each kernel, after warm-up, 30 runs of each of:
//! - **plain kernel**: the plain build, timed with CUDA events around the kernel alone;
//! - **checked kernel**: the instrumented build, CUDA events around the kernel alone
//!   ([`Launch::kernel_events`](cudacheck::Launch::kernel_events)), without the upload,
//!   synchronization and readback of the checked launch;
//! - **checked launch**: the whole checked launch (`run()` returning, record read), wall clock,
//!   next to the plain launch plus a synchronize, wall clock.
//!
//! Prints a table of medians and the geometric-mean slowdown of the kernels, and writes it to
//! every path given (`.json` gets JSON, anything else markdown), with the date (UTC) and device.
//!
//! `cargo run --release -p cudacheck-examples --example bench_instrument -- out.json out.md`
//!
//! `--plain-only` runs each plain kernel once and exits: the mode to time under
//! `compute-sanitizer --tool memcheck` against a run without it.

use std::sync::Arc;
use std::time::Instant;

use cudacheck::cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice, CudaStream, DeviceRepr};
use cudacheck::{Error, Kernel};
use cudacheck_examples::{kernel, median, report, stream_or_exit, utc_now, write_outputs};

const RUNS: usize = 30;
const WARMUP: usize = 3;

type Events<'e> = Option<(&'e CudaEvent, &'e CudaEvent)>;
/// One launch of a case: bounds-checked or not, with kernel events or not.
type LaunchFn<'s> = Box<dyn for<'e> FnMut(bool, Events<'e>) -> Result<(), Error> + 's>;

struct Case<'s> {
    name: &'static str,
    size: String,
    launch: LaunchFn<'s>,
}

fn up<T: DeviceRepr + Clone>(s: &Arc<CudaStream>, v: &[T]) -> Result<CudaSlice<T>, Error> {
    cudacheck::alloc_copy(s, v)
}

/// Deterministic data in [-1, 1): the values do not matter for timing, only that they are
/// ordinary numbers.
fn data(n: usize) -> Vec<f32> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn k(file: &str, name: &str) -> Result<Kernel, Box<dyn std::error::Error>> {
    Ok(Kernel::new(kernel(file)?, name).sync(false).build())
}

fn div(a: usize, b: usize) -> u32 {
    a.div_ceil(b) as u32
}

macro_rules! launch {
    ($kern:expr, $s:expr, $on:expr, $ev:expr, |$l:ident| $body:expr) => {{
        let mut launch = $kern.launch($s);
        launch.instrument($on);
        if let Some((a, b)) = $ev {
            launch.kernel_events(a, b);
        }
        let $l = &mut launch;
        // SAFETY: every kernel here is launched with buffers sized for its grid, as in
        // tests/tests/gpu_instrument.rs.
        unsafe { $body.run() }
    }};
}

fn cases(s: &Arc<CudaStream>) -> Result<Vec<Case<'_>>, Box<dyn std::error::Error>> {
    let mut v: Vec<Case<'_>> = Vec::new();

    let n = 64 << 20;
    let x = up(s, &data(n))?;
    let mut y = up(s, &data(n))?;
    let kern = k("saxpy.cu", "saxpy")?;
    v.push(Case {
        name: "saxpy",
        size: format!("{n} floats"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(div(n, 256))
                .block(256)
                .arg_mut(&mut y)
                .arg(&x)
                .arg(&1.5f32)
                .arg(&(n as i32)))
        }),
    });

    let x = up(s, &data(n))?;
    let mut out = up(s, &vec![0.0f32; n])?;
    let kern = k("scale.cu", "scale<float>")?;
    v.push(Case {
        name: "scale<float>",
        size: format!("{n} floats"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(div(n, 256))
                .block(256)
                .arg_mut(&mut out)
                .arg(&x)
                .arg(&0.5f32)
                .arg(&(n as i32)))
        }),
    });

    let m = 2048usize;
    let (a, b) = (up(s, &data(m * m))?, up(s, &data(m * m))?);
    let mut c = up(s, &vec![0.0f32; m * m])?;
    let kern = k("matmul.cu", "matmul_tiled")?;
    v.push(Case {
        name: "matmul_tiled",
        size: format!("{m} x {m}"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid((div(m, 16), div(m, 16), 1))
                .block((16, 16, 1))
                .arg_mut(&mut c)
                .arg(&a)
                .arg(&b)
                .arg(&(m as i32))
                .arg(&(m as i32))
                .arg(&(m as i32)))
        }),
    });

    let w = 8192usize;
    let inp = up(s, &data(w * w))?;
    let mut out = up(s, &vec![0.0f32; w * w])?;
    let kern = k("stencil2d.cu", "stencil2d")?;
    v.push(Case {
        name: "stencil2d",
        size: format!("{w} x {w}"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid((div(w, 32), div(w, 8), 1))
                .block((32, 8, 1))
                .arg_mut(&mut out)
                .arg(&inp)
                .arg(&(w as i32))
                .arg(&(w as i32)))
        }),
    });

    let inp = up(s, &data(w * w))?;
    let mut out = up(s, &vec![0.0f32; w * w])?;
    let kern = k("transpose.cu", "transpose")?;
    v.push(Case {
        name: "transpose",
        size: format!("{w} x {w}"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid((div(w, 32), div(w, 32), 1))
                .block((32, 8, 1))
                .arg_mut(&mut out)
                .arg(&inp)
                .arg(&(w as i32))
                .arg(&(w as i32)))
        }),
    });

    let nh = 256 << 20;
    let bytes: Vec<u8> = (0..nh)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761) as u8)
        .collect();
    let d = up(s, &bytes)?;
    drop(bytes);
    let mut bins = up(s, &vec![0u32; 256])?;
    let kern = k("histogram.cu", "histogram256")?;
    v.push(Case {
        name: "histogram256",
        size: format!("{nh} bytes"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(132 * 8)
                .block(256)
                .arg_mut(&mut bins)
                .arg(&d)
                .arg(&nh))
        }),
    });

    let (rows, cols) = (16384usize, 4096usize);
    let inp = up(s, &data(rows * cols))?;
    let mut out = up(s, &vec![0.0f32; rows * cols])?;
    let kern = k("softmax.cu", "softmax_rows")?;
    v.push(Case {
        name: "softmax_rows",
        size: format!("{rows} x {cols}"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(rows as u32)
                .block(256)
                .arg_mut(&mut out)
                .arg(&inp)
                .arg(&(rows as i32))
                .arg(&(cols as i32)))
        }),
    });

    let nr = 64 << 20;
    let inp = up(s, &data(nr))?;
    let blocks = nr.div_ceil(512);
    let mut partial = up(s, &vec![0.0f32; blocks])?;
    let kern = k("reduce.cu", "reduce_sum")?;
    v.push(Case {
        name: "reduce_sum",
        size: format!("{nr} floats"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(blocks as u32)
                .block(256)
                .shared_bytes(1024)
                .arg_mut(&mut partial)
                .arg(&inp)
                .arg(&(nr as i32)))
        }),
    });

    let nb = 64 << 10;
    let pos: Vec<[f32; 4]> = data(nb * 4)
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3].abs() + 0.1])
        .collect();
    let pos = up(s, &pos)?;
    let mut acc = up(s, &vec![[0.0f32; 4]; nb])?;
    let kern = k("nbody.cu", "nbody_accel")?;
    v.push(Case {
        name: "nbody_accel",
        size: format!("{nb} bodies"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(div(nb, 128))
                .block(128)
                .arg_mut(&mut acc)
                .arg(&pos)
                .arg(&(nb as i32))
                .arg(&0.01f32))
        }),
    });

    let nw = 16 << 20;
    let inp = up(s, &data(nw))?;
    let mut out = up(s, &vec![0.0f32; nw])?;
    let kern = k("window_median.cu", "window_median")?;
    v.push(Case {
        name: "window_median",
        size: format!("{nw} floats"),
        launch: Box::new(move |on, ev| {
            launch!(kern, s, on, ev, |l| l
                .grid(div(nw, 128))
                .block(128)
                .arg_mut(&mut out)
                .arg(&inp)
                .arg(&(nw as i32)))
        }),
    });
    Ok(v)
}

struct Row {
    name: &'static str,
    size: String,
    plain_ms: f64,
    checked_ms: f64,
    plain_launch_us: f64,
    checked_launch_us: f64,
}

fn measure(s: &Arc<CudaStream>, c: &mut Case<'_>) -> Result<Row, Box<dyn std::error::Error>> {
    let ctx = s.context();
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let kernel_ms =
        |on: bool, launch: &mut LaunchFn<'_>| -> Result<f64, Box<dyn std::error::Error>> {
            let mut t = Vec::with_capacity(RUNS);
            for i in 0..WARMUP + RUNS {
                launch(on, Some((&start, &end)))?;
                let ms = start.elapsed_ms(&end)?;
                if i >= WARMUP {
                    t.push(f64::from(ms));
                }
            }
            Ok(median(t))
        };
    let plain_ms = kernel_ms(false, &mut c.launch)?;
    let checked_ms = kernel_ms(true, &mut c.launch)?;
    let mut wall = |on: bool| -> Result<f64, Box<dyn std::error::Error>> {
        let mut t = Vec::with_capacity(RUNS);
        for i in 0..WARMUP + RUNS {
            let t0 = Instant::now();
            (c.launch)(on, None)?;
            // A checked launch has synchronized already; this makes the plain one comparable.
            cudacheck::synchronize(s)?;
            if i >= WARMUP {
                t.push(t0.elapsed().as_secs_f64() * 1e6);
            }
        }
        Ok(median(t))
    };
    let plain_launch_us = wall(false)?;
    let checked_launch_us = wall(true)?;
    Ok(Row {
        name: c.name,
        size: c.size.clone(),
        plain_ms,
        checked_ms,
        plain_launch_us,
        checked_launch_us,
    })
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_instrument failed: {}", report(e.as_ref()));
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plain_only = args.iter().any(|a| a == "--plain-only");
    let outputs: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let s = stream_or_exit();
    let mut cases = cases(&s)?;
    if plain_only {
        for c in &mut cases {
            let t0 = Instant::now();
            (c.launch)(false, None)?;
            cudacheck::synchronize(&s)?;
            println!(
                "{} ({}): {:.3} ms",
                c.name,
                c.size,
                t0.elapsed().as_secs_f64() * 1e3
            );
        }
        return Ok(());
    }
    let device = s.context().name()?;
    let date = utc_now();
    let mut rows = Vec::new();
    for c in &mut cases {
        let r = measure(&s, c)?;
        eprintln!(
            "{}: {:.3} ms plain, {:.3} ms checked",
            r.name, r.plain_ms, r.checked_ms
        );
        rows.push(r);
    }
    let ratios: Vec<f64> = rows.iter().map(|r| r.checked_ms / r.plain_ms).collect();
    let geomean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();

    let mut md = format!(
        "Bounds checking on {device}, {date}: medians of {RUNS} runs after {WARMUP} warm-up \
         runs. Kernel times are CUDA events around the kernel alone; launch times are wall \
         clock from the call to the synchronized result.\n\n\
         | kernel | size | plain kernel (ms) | checked kernel (ms) | slowdown | plain launch + sync (us) | checked launch (us) |\n\
         |---|---|---:|---:|---:|---:|---:|\n"
    );
    for (r, x) in rows.iter().zip(&ratios) {
        md.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} | {:.3}x | {:.0} | {:.0} |\n",
            r.name, r.size, r.plain_ms, r.checked_ms, x, r.plain_launch_us, r.checked_launch_us
        ));
    }
    md.push_str(&format!(
        "\nGeometric-mean slowdown of the kernels: {geomean:.3}x (target: at most 1.25x)\n"
    ));
    print!("{md}");
    let json = serde_json::json!({
        "device": device,
        "date_utc": date,
        "runs": RUNS,
        "warmup": WARMUP,
        "geomean_slowdown": geomean,
        "rows": rows.iter().zip(&ratios).map(|(r, x)| serde_json::json!({
            "kernel": r.name,
            "size": r.size,
            "plain_kernel_ms": r.plain_ms,
            "checked_kernel_ms": r.checked_ms,
            "slowdown": x,
            "plain_launch_sync_us": r.plain_launch_us,
            "checked_launch_us": r.checked_launch_us,
        })).collect::<Vec<_>>(),
    });
    write_outputs(&outputs, &md, &json)?;
    Ok(())
}
