//! First launch in a fresh process, with a cold module cache, a warm one, and (for scale) a
//! launch of a module that is already loaded.
//!
//! Each measurement is a new child process (this binary with `--child CASE`), as a program
//! starting up is: the child creates its CUDA context, then times from just before building
//! the kernel to the end of its first finished launch (NVRTC or the cache, module load, launch,
//! synchronize), then a second launch of the same, now loaded, kernel. Cold: the cache
//! directory is emptied before each child. Warm: it holds the entry from an earlier child.
//!
//! Two cases: `small` is `kernels/saxpy.cu`; `headers` is a source of our own that includes
//! `<cuda_fp16.h>`, `<cuda_bf16.h>` and several `<cuda/std/...>` headers, as library kernels
//! do (their parse dominates its compile).
//!
//! `cargo run --release -p cudacheck-examples --example bench_cache -- out.json out.md`
//! (each path ending in `.json` gets JSON, any other gets a markdown table). The cache is a
//! fresh directory under the system temporary directory, removed at the end; set
//! `CUDACHECK_BENCH_CACHE_DIR` to put it elsewhere.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cudacheck::nvrtc::CudaSource;
use cudacheck::{InstrumentMode, Kernel, SyncMode};
use cudacheck_examples::{kernel, report, stream_or_exit};

const COLD_RUNS: usize = 5;
const WARM_RUNS: usize = 10;
const N: usize = 1 << 16;

/// Written for this benchmark: half and bfloat16 inputs, libcu++ traits and limits.
const HEADERS_SRC: &str = r#"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

template <typename T>
struct Widen {
    using type = cuda::std::conditional_t<
        cuda::std::is_same_v<T, __half> || cuda::std::is_same_v<T, __nv_bfloat16>, float, T>;
};

template <typename T>
__device__ typename Widen<T>::type widen(T v) { return static_cast<typename Widen<T>::type>(v); }

extern "C" __global__ void mix(float* __restrict__ out, const __half* __restrict__ h,
                               const __nv_bfloat16* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        auto pair = cuda::std::make_pair(widen(h[i]), widen(b[i]));
        float lo = cuda::std::numeric_limits<float>::lowest();
        out[i] = fmaxf(pair.first + pair.second, lo) + static_cast<float>(cuda::std::int32_t{0});
    }
}
"#;

#[derive(Clone, Copy)]
enum Case {
    Small,
    Headers,
}

impl Case {
    const ALL: [Case; 2] = [Case::Small, Case::Headers];

    fn name(self) -> &'static str {
        match self {
            Case::Small => "small",
            Case::Headers => "headers",
        }
    }

    fn parse(s: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// What one child measured, in milliseconds.
struct Sample {
    context_ms: f64,
    first_launch_ms: f64,
    loaded_launch_ms: f64,
    process_ms: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let case = args
            .get(1)
            .and_then(|c| Case::parse(c))
            .ok_or("--child small|headers")?;
        return child(case);
    }
    // Without a GPU the children could not launch: say so once, here.
    drop(stream_or_exit());
    let dir = match std::env::var_os("CUDACHECK_BENCH_CACHE_DIR") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("cudacheck-bench-cache-{}", std::process::id())),
    };
    let mut rows = Vec::new();
    for case in Case::ALL {
        for (mode, runs) in [("cold", COLD_RUNS), ("warm", WARM_RUNS)] {
            let mut samples = Vec::new();
            if mode == "warm" {
                spawn(case, &dir)?; // fills the cache
            }
            for _ in 0..runs {
                if mode == "cold" {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                samples.push(spawn(case, &dir)?);
            }
            rows.push((case, mode, samples));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut md = String::from(
        "| case | cache | runs | first launch, median (ms) | min (ms) | launch of a loaded module (ms) | context (ms) | whole process (ms) |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let mut json_rows = Vec::new();
    for (case, mode, samples) in &rows {
        let mut first: Vec<f64> = samples.iter().map(|s| s.first_launch_ms).collect();
        let min = first.iter().copied().fold(f64::INFINITY, f64::min);
        let first_med = median(&mut first);
        let loaded = median(&mut samples.iter().map(|s| s.loaded_launch_ms).collect());
        let context = median(&mut samples.iter().map(|s| s.context_ms).collect());
        let process = median(&mut samples.iter().map(|s| s.process_ms).collect());
        md.push_str(&format!(
            "| {} | {mode} | {} | {first_med:.3} | {min:.3} | {loaded:.3} | {context:.1} | {process:.1} |\n",
            case.name(),
            samples.len()
        ));
        json_rows.push(serde_json::json!({
            "case": case.name(), "cache": mode, "runs": samples.len(),
            "first_launch_median_ms": first_med, "first_launch_min_ms": min,
            "loaded_launch_median_ms": loaded, "context_median_ms": context,
            "process_median_ms": process,
        }));
    }
    for case in Case::ALL {
        let med = |mode: &str| {
            rows.iter()
                .filter(|(c, m, _)| c.name() == case.name() && *m == mode)
                .map(|(_, _, s)| median(&mut s.iter().map(|s| s.first_launch_ms).collect()))
                .next()
                .unwrap_or(f64::NAN)
        };
        let loaded = rows
            .iter()
            .filter(|(c, m, _)| c.name() == case.name() && *m == "warm")
            .map(|(_, _, s)| median(&mut s.iter().map(|s| s.loaded_launch_ms).collect()))
            .next()
            .unwrap_or(f64::NAN);
        md.push_str(&format!(
            "\n{}: cold / warm = {:.0}x; warm first launch is {:.3} ms above a launch of the loaded module",
            case.name(),
            med("cold") / med("warm"),
            med("warm") - loaded
        ));
    }
    md.push('\n');
    print!("{md}");
    let json = serde_json::json!({ "benchmark": "bench_cache", "rows": json_rows });
    for path in &args {
        let text = if path.ends_with(".json") {
            serde_json::to_string_pretty(&json)?
        } else {
            md.clone()
        };
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// Runs one child with the cache in `dir` and reads its measurements.
fn spawn(case: Case, dir: &Path) -> Result<Sample, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", case.name()])
        .env("CUDACHECK_CACHE_DIR", dir)
        .env_remove("CUDACHECK_CACHE")
        .output()?;
    let process_ms = start.elapsed().as_secs_f64() * 1e3;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "child {} failed:\n{stdout}{}",
            case.name(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let field = |name: &str| -> Result<f64, Box<dyn std::error::Error>> {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .ok_or_else(|| format!("child printed no {name}: {stdout}").into())
    };
    Ok(Sample {
        context_ms: field("context_ms")?,
        first_launch_ms: field("first_launch_ms")?,
        loaded_launch_ms: field("loaded_launch_ms")?,
        process_ms,
    })
}

/// One fresh process: context, then the first launch timed, then a second one.
fn child(case: Case) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let stream = stream_or_exit();
    let context_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, N)?;
    let x = cudacheck::alloc_copy(&stream, &vec![1.0f32; N])?;
    let h = cudacheck::alloc_copy(&stream, &vec![half::f16::from_f32(1.0); N])?;
    let b = cudacheck::alloc_copy(&stream, &vec![half::bf16::from_f32(2.0); N])?;
    stream.synchronize()?;
    let n = N as i32;
    let grid = (N as u32).div_ceil(256);

    let launch = |k: &Kernel, out: &mut _| -> Result<f64, String> {
        let t = Instant::now();
        let l = k
            .launch(&stream)
            .grid(grid)
            .block(256)
            .sync(SyncMode::Never);
        // SAFETY: both kernels touch element i of each buffer for i < n only, and every
        // buffer holds N = n elements.
        unsafe {
            match case {
                Case::Small => l.arg_mut(out).arg(&x).arg(&2.0f32).arg(&n).run(),
                Case::Headers => l.arg_mut(out).arg(&h).arg(&b).arg(&n).run(),
            }
        }
        .map_err(|e| report(&e))?;
        stream.synchronize().map_err(|e| e.to_string())?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };

    let t = Instant::now();
    let k = match case {
        Case::Small => Kernel::new(kernel("saxpy.cu")?, "saxpy"),
        Case::Headers => Kernel::new(CudaSource::from_str("mix.cu", HEADERS_SRC), "mix"),
    }
    .instrument(InstrumentMode::Off)
    .build();
    launch(&k, &mut out)?;
    let first_launch_ms = t.elapsed().as_secs_f64() * 1e3;
    let loaded_launch_ms = launch(&k, &mut out)?;

    let host = stream.clone_dtoh(&out)?;
    let expected = match case {
        Case::Small => 2.0f32 * 2.0,
        Case::Headers => 3.0,
    };
    if host.iter().any(|v| *v != expected) {
        return Err(format!("{}: wrong result, expected {expected}", case.name()).into());
    }
    println!("context_ms={context_ms}");
    println!("first_launch_ms={first_launch_ms}");
    println!("loaded_launch_ms={loaded_launch_ms}");
    Ok(())
}
