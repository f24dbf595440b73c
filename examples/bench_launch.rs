//! Launch overhead: a raw cudarc launch vs a cudacheck launch in release mode
//! (`SyncMode::Never`, configuration memoized) vs a debug-mode launch (synchronize each), side
//! by side, on an empty kernel and on a two-argument kernel.
//!
//! Each mode runs `ROUNDS` rounds of `LAUNCHES` launches (the stream is synchronized at the end
//! of each round, inside the timing); the reported figure is the median over rounds of the
//! per-launch time. A counting global allocator reports heap allocations per launch.
//!
//! `cargo run --release -p cudacheck-examples --example bench_launch -- out.json out.md`
//! (each path ending in `.json` gets JSON, any other gets a markdown table).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cudacheck::cudarc::driver::{LaunchConfig as RawLaunchConfig, PushKernelArg};
use cudacheck::cudarc::nvrtc::Ptx;
use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck::{Kernel, SyncMode};
use cudacheck_examples::stream_or_exit;

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

const ROUNDS: usize = 20;
const LAUNCHES: usize = 10_000;
/// Debug mode waits for each launch; fewer launches keep the run short.
const DEBUG_LAUNCHES: usize = 1_000;

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

/// Runs `f` (one launch) `ROUNDS x n` times; returns (median ns, min ns, allocs per launch).
fn measure(n: usize, sync: &dyn Fn(), mut f: impl FnMut()) -> (f64, f64, f64) {
    for _ in 0..n.min(1000) {
        f(); // warm-up: compile, load, memoize
    }
    sync();
    let mut per_launch = Vec::with_capacity(ROUNDS);
    let mut allocs = 0u64;
    for _ in 0..ROUNDS {
        let a0 = ALLOCS.load(Ordering::Relaxed);
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        sync();
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        allocs += ALLOCS.load(Ordering::Relaxed) - a0;
        per_launch.push(ns);
    }
    per_launch.sort_by(|a, b| a.total_cmp(b));
    let median = (per_launch[ROUNDS / 2 - 1] + per_launch[ROUNDS / 2]) / 2.0;
    (median, per_launch[0], allocs as f64 / (ROUNDS * n) as f64)
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

    let release_empty = Kernel::new(source.clone(), "empty")
        .sync(SyncMode::Never)
        .build();
    let release_touch = Kernel::new(source.clone(), "touch")
        .sync(SyncMode::Never)
        .build();
    let debug_empty = Kernel::new(source.clone(), "empty")
        .sync(SyncMode::Always)
        .build();
    let debug_touch = Kernel::new(source, "touch").sync(SyncMode::Always).build();

    let mut buf = cudacheck::alloc_zeros::<f32>(&stream, 256)?;
    let n = 256i32;
    let cfg = RawLaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let sync = || stream.synchronize().expect("synchronize");
    let mut rows = Vec::new();
    let mut row =
        |kernel, mode, launches, (median_ns, min_ns, allocs_per_launch): (f64, f64, f64)| {
            rows.push(Row {
                kernel,
                mode,
                launches,
                median_ns,
                min_ns,
                allocs_per_launch,
            })
        };

    // SAFETY (every launch below): `empty` touches no memory; `touch` writes p[0] only when
    // n < 0, and n is 256; `buf` holds 256 floats.
    row(
        "empty",
        "raw cudarc",
        LAUNCHES,
        measure(LAUNCHES, &sync, || unsafe {
            stream
                .launch_builder(&raw_empty)
                .launch(cfg)
                .expect("launch");
        }),
    );
    row(
        "empty",
        "cudacheck release",
        LAUNCHES,
        measure(LAUNCHES, &sync, || unsafe {
            release_empty
                .launch(&stream)
                .grid(1)
                .block(32)
                .run()
                .expect("launch");
        }),
    );
    row(
        "empty",
        "cudacheck debug (sync each)",
        DEBUG_LAUNCHES,
        measure(DEBUG_LAUNCHES, &sync, || unsafe {
            debug_empty
                .launch(&stream)
                .grid(1)
                .block(32)
                .run()
                .expect("launch");
        }),
    );
    row(
        "touch(p, n)",
        "raw cudarc",
        LAUNCHES,
        measure(LAUNCHES, &sync, || unsafe {
            stream
                .launch_builder(&raw_touch)
                .arg(&mut buf)
                .arg(&n)
                .launch(cfg)
                .expect("launch");
        }),
    );
    row(
        "touch(p, n)",
        "cudacheck release",
        LAUNCHES,
        measure(LAUNCHES, &sync, || unsafe {
            release_touch
                .launch(&stream)
                .grid(1)
                .block(32)
                .arg_mut(&mut buf)
                .arg(&n)
                .run()
                .expect("launch");
        }),
    );
    row(
        "touch(p, n)",
        "cudacheck debug (sync each)",
        DEBUG_LAUNCHES,
        measure(DEBUG_LAUNCHES, &sync, || unsafe {
            debug_touch
                .launch(&stream)
                .grid(1)
                .block(32)
                .arg_mut(&mut buf)
                .arg(&n)
                .run()
                .expect("launch");
        }),
    );

    let device = ctx.name()?;
    let mut md = format!(
        "Launch overhead on {device} ({arch}), median of {ROUNDS} rounds, per launch \
         (stream synchronized at the end of each round)\n\n\
         | kernel | mode | launches/round | median ns | min ns | vs raw | heap allocs/launch |\n\
         |---|---|---:|---:|---:|---:|---:|\n"
    );
    for r in &rows {
        let raw = rows
            .iter()
            .find(|x| x.kernel == r.kernel && x.mode == "raw cudarc")
            .map_or(r.median_ns, |x| x.median_ns);
        md.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:+.0} ns ({:+.1}%) | {:.3} |\n",
            r.kernel,
            r.mode,
            r.launches,
            r.median_ns,
            r.min_ns,
            r.median_ns - raw,
            (r.median_ns / raw - 1.0) * 100.0,
            r.allocs_per_launch
        ));
    }
    print!("{md}");
    let json = serde_json::json!({
        "device": device,
        "arch": arch.to_string(),
        "rounds": ROUNDS,
        "rows": rows.iter().map(|r| serde_json::json!({
            "kernel": r.kernel,
            "mode": r.mode,
            "launches_per_round": r.launches,
            "median_ns_per_launch": r.median_ns,
            "min_ns_per_launch": r.min_ns,
            "heap_allocs_per_launch": r.allocs_per_launch,
        })).collect::<Vec<_>>(),
    });
    for path in outputs {
        let text = if path.ends_with(".json") {
            serde_json::to_string_pretty(&json)?
        } else {
            md.clone()
        };
        std::fs::write(&path, text)?;
        println!("wrote {path}");
    }
    Ok(())
}
