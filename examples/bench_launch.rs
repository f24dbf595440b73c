//! Launch overhead: a raw cudarc launch vs a cudacheck launch in release mode
//! (`.sync(false)`, configuration memoized) vs a debug-mode launch (synchronize each), side
//! by side, on an empty kernel and on a two-argument kernel; and a release launch of the
//! function cudarc loaded, through `Kernel::from_function`.
//!
//! Each mode runs `ROUNDS` rounds of `LAUNCHES` launches, the modes' rounds interleaved (in
//! reverse order every other round, so that no mode always follows the same one); only
//! the launch calls are timed, in batches of `BATCH` with the stream synchronized between
//! batches outside the clock, so the figure is the host-side cost of a launch, not the GPU's
//! throughput. The reported figure is the median over rounds of the per-launch time. A
//! counting global allocator reports heap allocations per launch.
//!
//! `cargo run --release -p cudacheck-examples --example bench_launch -- out.json out.md`
//! (each path ending in `.json` gets JSON, any other gets a markdown table).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cudacheck::cudarc::driver::{sys, LaunchConfig as RawLaunchConfig, PushKernelArg};
use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck::Kernel;
use cudacheck_examples::{stream_or_exit, write_outputs};
use cudarc::nvrtc::Ptx;

/// Counts every allocation (and reallocation) made through the global allocator.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the counter is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ROUNDS: usize = 30;
const LAUNCHES: usize = 10_000;
/// Debug mode waits for each launch; fewer launches keep the run short.
const DEBUG_LAUNCHES: usize = 1_000;

/// A release launch (`.sync(false)`) of the function cudarc loaded, through
/// `Kernel::from_function`.
const APP_MODE: &str = "cudacheck release, loaded by cudarc";

const SRC: &str = r#"
extern "C" __global__ void empty() {}
extern "C" __global__ void touch(float* p, int n) {
    if (n < 0) p[0] = 1.0f;
}
"#;

struct Row {
    kernel: &'static str,
    mode: &'static str,
    launches: usize,
    median_ns: f64,
    min_ns: f64,
    allocs_per_launch: f64,
}

/// Launches between two synchronizations: well under the driver's queue depth, so that a
/// launch never waits for the GPU and the timing is the host-side cost of enqueuing.
const BATCH: usize = 200;

/// One benchmarked way of launching.
struct Mode<'f> {
    kernel: &'static str,
    name: &'static str,
    launches: usize,
    /// Whether each launch waits for the GPU itself (debug mode): then the batch is timed
    /// whole, GPU time included.
    launch: Box<dyn FnMut() + 'f>,
    per_launch_ns: Vec<f64>,
    allocs: u64,
}

/// One round of `m`: `m.launches` launches in batches of [`BATCH`], timing only the launch
/// calls (the synchronization between batches is outside the clock).
fn round(m: &mut Mode<'_>, sync: &dyn Fn()) {
    let mut ns = 0u128;
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let mut done = 0;
    while done < m.launches {
        let k = BATCH.min(m.launches - done);
        let t = Instant::now();
        for _ in 0..k {
            (m.launch)();
        }
        ns += t.elapsed().as_nanos();
        sync();
        done += k;
    }
    m.allocs += ALLOCS.load(Ordering::Relaxed) - a0;
    m.per_launch_ns.push(ns as f64 / m.launches as f64);
}

fn mode<'f>(
    kernel: &'static str,
    name: &'static str,
    launches: usize,
    launch: Box<dyn FnMut() + 'f>,
) -> Mode<'f> {
    Mode {
        kernel,
        name,
        launches,
        launch,
        per_launch_ns: Vec::with_capacity(ROUNDS),
        allocs: 0,
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n.is_multiple_of(2) {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    } else {
        v[n / 2]
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let outputs: Vec<String> = std::env::args().skip(1).collect();
    let stream = stream_or_exit();
    let ctx = stream.context().clone();
    let (major, minor) = ctx.compute_capability()?;
    let arch = cudacheck::core::Arch::new(major as u32, minor as u32);
    let source = CudaSource::from_str("bench.cu", SRC);

    // Raw cudarc: the same CUBIN, loaded through cudarc's safe API.
    let compiled = compile(&source, &CompileOptions::new(arch))?;
    let module = ctx.load_module(Ptx::from_binary(compiled.cubin.clone()))?;
    let raw_empty = module.load_function("empty")?;
    let raw_touch = module.load_function("touch")?;

    let release_empty = Kernel::new(source.clone(), "empty").sync(false).build();
    let release_touch = Kernel::new(source.clone(), "touch").sync(false).build();
    let debug_empty = Kernel::new(source.clone(), "empty").sync(true).build();
    let debug_touch = Kernel::new(source, "touch").sync(true).build();
    // The functions cudarc loaded above, launched through cudacheck as a candle-style
    // application would (validated from the driver's attributes, no compile).
    let app_empty = Kernel::from_function(&ctx, raw_empty.clone(), "empty")?;
    let app_touch = Kernel::from_function(&ctx, raw_touch.clone(), "touch")?;
    let mut buf_app = cudacheck::alloc_zeros::<f32>(&stream, 256)?;

    let mut buf_raw = cudacheck::alloc_zeros::<f32>(&stream, 256)?;
    let mut buf_release = cudacheck::alloc_zeros::<f32>(&stream, 256)?;
    let mut buf_debug = cudacheck::alloc_zeros::<f32>(&stream, 256)?;
    let n = 256i32;
    let cfg = RawLaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let sync = || stream.synchronize().expect("synchronize");
    // SAFETY (every launch below): `empty` touches no memory; `touch` writes p[0] only when
    // n < 0, and n is 256; each buffer holds 256 floats.
    // The floor both sit on: the driver's own launch call, with no context check at all (this
    // thread's current context is the stream's: cudarc's first launch made it so), and with
    // the `cuCtxGetCurrent` that cudarc's and cudacheck's launches both make.
    let cu_stream = stream.cu_stream();
    let f_empty = raw_empty.cu_function();
    let driver_floor = move |check_current: bool| {
        // SAFETY: `empty` takes no parameters and touches no memory; the function belongs to
        // the stream's context, which is current on this thread.
        unsafe {
            if check_current {
                let mut cur = std::ptr::null_mut();
                let r = sys::cuCtxGetCurrent(&mut cur);
                assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            }
            let r = sys::cuLaunchKernel(
                f_empty,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                cu_stream,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        }
    };
    let mut modes = vec![
        mode(
            "empty",
            "driver: cuLaunchKernel alone",
            LAUNCHES,
            Box::new(move || driver_floor(false)),
        ),
        mode(
            "empty",
            "driver: cuCtxGetCurrent + cuLaunchKernel",
            LAUNCHES,
            Box::new(move || driver_floor(true)),
        ),
        mode(
            "empty",
            "raw cudarc",
            LAUNCHES,
            Box::new(|| unsafe {
                stream
                    .launch_builder(&raw_empty)
                    .launch(cfg)
                    .expect("launch");
            }),
        ),
        mode(
            "empty",
            "cudacheck release",
            LAUNCHES,
            Box::new(|| unsafe {
                release_empty
                    .launch(&stream)
                    .grid(1)
                    .block(32)
                    .run()
                    .expect("launch");
            }),
        ),
        mode(
            "empty",
            APP_MODE,
            LAUNCHES,
            Box::new(|| unsafe {
                app_empty
                    .launch(&stream)
                    .grid(1)
                    .block(32)
                    .sync(false)
                    .run()
                    .expect("launch");
            }),
        ),
        mode(
            "empty",
            "cudacheck debug (sync each)",
            DEBUG_LAUNCHES,
            Box::new(|| unsafe {
                debug_empty
                    .launch(&stream)
                    .grid(1)
                    .block(32)
                    .run()
                    .expect("launch");
            }),
        ),
        mode(
            "touch(p, n)",
            "raw cudarc",
            LAUNCHES,
            Box::new(|| unsafe {
                stream
                    .launch_builder(&raw_touch)
                    .arg(&mut buf_raw)
                    .arg(&n)
                    .launch(cfg)
                    .expect("launch");
            }),
        ),
        mode(
            "touch(p, n)",
            "cudacheck release",
            LAUNCHES,
            Box::new(|| unsafe {
                release_touch
                    .launch(&stream)
                    .grid(1)
                    .block(32)
                    .arg_mut(&mut buf_release)
                    .arg(&n)
                    .run()
                    .expect("launch");
            }),
        ),
        mode(
            "touch(p, n)",
            APP_MODE,
            LAUNCHES,
            Box::new(|| unsafe {
                app_touch
                    .launch(&stream)
                    .grid(1)
                    .block(32)
                    .sync(false)
                    .arg_mut(&mut buf_app)
                    .arg(&n)
                    .run()
                    .expect("launch");
            }),
        ),
        mode(
            "touch(p, n)",
            "cudacheck debug (sync each)",
            DEBUG_LAUNCHES,
            Box::new(|| unsafe {
                debug_touch
                    .launch(&stream)
                    .grid(1)
                    .block(32)
                    .arg_mut(&mut buf_debug)
                    .arg(&n)
                    .run()
                    .expect("launch");
            }),
        ),
    ];
    // Warm-up (compile, load, memoize), then the rounds, interleaved so that drift in clocks
    // or driver state spreads over all modes alike.
    for m in modes.iter_mut() {
        for _ in 0..1000 {
            (m.launch)();
        }
        sync();
    }
    // Odd rounds run the modes in reverse order: a mode's cost can depend on what ran just
    // before it (the driver's queue, the caches), and alternating the order (ABBA) gives
    // every mode each neighbour on both sides, so that no mode gains from its place.
    for r in 0..ROUNDS {
        if r % 2 == 0 {
            for m in modes.iter_mut() {
                round(m, &sync);
            }
        } else {
            for m in modes.iter_mut().rev() {
                round(m, &sync);
            }
        }
    }
    // Paired by round (the modes' rounds interleave, so round r of two modes ran minutes
    // apart at most): per kernel, cudacheck release's per-launch time minus raw cudarc's in
    // the same round. Their median, and in how many rounds cudacheck was the cheaper, say
    // more than the ratio of two medians when the difference is a percent of the launch.
    let paired: Vec<(&'static str, &'static str, Vec<f64>)> = ["empty", "touch(p, n)"]
        .into_iter()
        .flat_map(|kernel| ["cudacheck release", APP_MODE].map(|mode| (kernel, mode)))
        .filter_map(|(kernel, mode)| {
            let of = |mode: &str| {
                modes
                    .iter()
                    .find(|m| m.kernel == kernel && m.name == mode)
                    .map(|m| m.per_launch_ns.clone())
            };
            let (ours, raw) = (of(mode)?, of("raw cudarc")?);
            Some((
                kernel,
                mode,
                ours.iter().zip(&raw).map(|(a, b)| a - b).collect(),
            ))
        })
        .collect();
    let rows: Vec<Row> = modes
        .iter_mut()
        .map(|m| Row {
            kernel: m.kernel,
            mode: m.name,
            launches: m.launches,
            min_ns: m
                .per_launch_ns
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min),
            median_ns: median(&mut m.per_launch_ns),
            allocs_per_launch: m.allocs as f64 / (ROUNDS * m.launches) as f64,
        })
        .collect();
    drop(modes);

    // The raw cudarc median of the same kernel: what every row is compared with.
    let raw_ns = |kernel: &str| {
        rows.iter()
            .find(|x| x.kernel == kernel && x.mode == "raw cudarc")
            .map_or(f64::NAN, |x| x.median_ns)
    };
    let device = ctx.name()?;
    let mut md = format!(
        "Host-side launch cost on {device} ({arch}): median over {ROUNDS} interleaved rounds (order reversed every other round) of \
         the per-launch time, launches timed in batches of {BATCH} with the stream synchronized \
         between batches, outside the clock (debug mode includes its own wait for the GPU)\n\n\
         | kernel | mode | launches/round | median ns | min ns | vs raw | ratio | heap allocs/launch |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n"
    );
    for r in &rows {
        let raw = raw_ns(r.kernel);
        md.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:+.0} ns ({:+.1}%) | {:.3} | {:.3} |\n",
            r.kernel,
            r.mode,
            r.launches,
            r.median_ns,
            r.min_ns,
            r.median_ns - raw,
            (r.median_ns / raw - 1.0) * 100.0,
            r.median_ns / raw,
            r.allocs_per_launch
        ));
    }
    // The target: a release launch no dearer than raw cudarc, and no heap allocation.
    for r in rows.iter().filter(|r| r.mode == "cudacheck release") {
        let raw = raw_ns(r.kernel);
        let met = r.median_ns <= raw && r.allocs_per_launch == 0.0;
        md.push_str(&format!(
            "\n{}: cudacheck release / raw cudarc = {:.3}, {} heap allocations per launch: \
             target (ratio <= 1.00, 0 allocations) {}",
            r.kernel,
            r.median_ns / raw,
            r.allocs_per_launch,
            if met { "met" } else { "NOT met" }
        ));
    }
    // The target: a launch of a function the application loaded within 2% of raw.
    for r in rows.iter().filter(|r| r.mode == APP_MODE) {
        let ratio = r.median_ns / raw_ns(r.kernel);
        md.push_str(&format!(
            "\n{}: {APP_MODE} / raw cudarc = {ratio:.3}: target (within 2%, ratio <= 1.02) {}",
            r.kernel,
            if ratio <= 1.02 { "met" } else { "NOT met" }
        ));
    }
    for (kernel, mode, diffs) in &paired {
        let mut d = diffs.clone();
        let cheaper = d.iter().filter(|&&x| x <= 0.0).count();
        md.push_str(&format!(
            "\n{kernel}: {mode} - raw cudarc, paired by round: median {:+.0} ns, \
             min {:+.0} ns, max {:+.0} ns; cudacheck no dearer in {cheaper} of {} rounds",
            median(&mut d),
            d.iter().copied().fold(f64::INFINITY, f64::min),
            d.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            d.len()
        ));
    }
    md.push('\n');
    print!("{md}");
    let json = serde_json::json!({
        "device": device,
        "arch": arch.to_string(),
        "rounds": ROUNDS,
        "paired_release_minus_raw_ns": paired.iter().map(|(k, m, d)| serde_json::json!({
            "kernel": k,
            "mode": m,
            "per_round": d,
        })).collect::<Vec<_>>(),
        "rows": rows.iter().map(|r| serde_json::json!({
            "kernel": r.kernel,
            "mode": r.mode,
            "launches_per_round": r.launches,
            "median_ns_per_launch": r.median_ns,
            "min_ns_per_launch": r.min_ns,
            "ratio_vs_raw": r.median_ns / raw_ns(r.kernel),
            "heap_allocs_per_launch": r.allocs_per_launch,
        })).collect::<Vec<_>>(),
    });
    write_outputs(&outputs, &md, &json)?;
    Ok(())
}
