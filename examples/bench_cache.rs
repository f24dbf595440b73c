//! First launch in a fresh process, with a cold module cache, a warm one, and (for scale) a
//! launch of a module that is already loaded.
//!
//! Each measurement is a new child process (this binary with `--child CASE`), as a program
//! starting up is: the child creates its CUDA context, then times from just before building
//! the kernel to the end of its first finished launch (NVRTC or the cache, module load, launch,
//! synchronize), then a second launch of the same, now loaded, kernel. Cold: the cache
//! directory is emptied before each child. Warm: it holds the entry from an earlier child.
//!
//! Four cases: `small` is `kernels/saxpy.cu`; `headers` is a source of our own that includes
//! `<cuda_fp16.h>`, `<cuda_bf16.h>` and several `<cuda/std/...>` headers, as library kernels
//! do (their parse dominates its compile); `checked` is saxpy's bounds-checked build for its
//! launch shape (NVRTC to PTX, the rewrite, nvJitLink), what a debug build launches; `multi`
//! is one kernel of a five-kernel file of our own.
//!
//! `cargo run --release -p cudacheck-examples --example bench_cache -- out.json out.md`
//! (each path ending in `.json` gets JSON, any other gets a markdown table). The cache is a
//! fresh directory under the system temporary directory, removed at the end; set
//! `CUDACHECK_BENCH_CACHE_DIR` to put it elsewhere.
//!
//! `--cpu` (first argument) needs no GPU: each child builds the kernel for sm_90 with
//! [`Kernel::check_offline`] / [`Kernel::check_offline_checked`], the same compile path as a
//! first launch, and the time is from just before building the kernel to the CUBIN in hand
//! (everything a first launch does except loading the module and launching). Its table also
//! says whether the child loaded libnvrtc or libnvJitLink. `CUDACHECK_BENCH_RUNS=COLD,WARM`
//! sets the number of children per row (default 5,10; `--cpu`: 3,41).
//!
//! `--sequence` (after `--cpu`, if given) runs fresh processes in a row on one emptied cache,
//! cold then three warm ones, and reports the median per position: the first warm process
//! (the one a user sees after a compile) against the third. `--full-lookup` after it removes
//! the manifests before each warm process, so each keys its module by the full header lookup
//! (as after a change to a header of the project), from the toolkit scans the compiling
//! process kept. On the GPU machine (release build, from the repository
//! root, with NVRTC set up):
//!
//! ```text
//! CUDACHECK_BENCH_RUNS=5 target/release/examples/bench_cache --sequence seq.json seq.md
//! CUDACHECK_BENCH_RUNS=5 target/release/examples/bench_cache --sequence --full-lookup full.json full.md
//! ```
//!
//! and without a GPU the same with `--cpu` first (`results/warm_start_cpu.md`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cudacheck::core::Arch;
use cudacheck::nvrtc::CudaSource;
use cudacheck::Kernel;
use cudacheck_examples::{kernel, report, stream_or_exit, write_outputs};

const N: usize = 1 << 16;
const BLOCK: u32 = 256;
/// The architecture `--cpu` children compile for (the H100 the GPU runs use).
const CPU_ARCH: Arch = Arch::new(9, 0);

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

/// Written for this benchmark: five kernels in one file, of which a program launches one
/// (`axpy`, the third), as a library's kernel file is used.
const MULTI_SRC: &str = r#"
#include <cuda_fp16.h>

extern "C" __global__ void fill(float* out, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}

extern "C" __global__ void scale_half(__half* out, const __half* in, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2half(__half2float(in[i]) * s);
}

extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void row_sum(float* out, const float* in, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += in[r * cols + c];
    out[r] = s;
}

extern "C" __global__ void relu(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaxf(x[i], 0.0f);
}
"#;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Small,
    Headers,
    Checked,
    /// One kernel of a five-kernel file.
    Multi,
}

impl Case {
    const ALL: [Case; 4] = [Case::Small, Case::Headers, Case::Checked, Case::Multi];

    fn name(self) -> &'static str {
        match self {
            Case::Small => "small",
            Case::Headers => "headers",
            Case::Checked => "checked",
            Case::Multi => "multi",
        }
    }

    fn parse(s: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == s)
    }

    /// The kernel as a program would declare it.
    fn kernel(self) -> Result<Kernel, Box<dyn std::error::Error>> {
        Ok(match self {
            Case::Small => Kernel::new(kernel("saxpy.cu")?, "saxpy").instrument(false),
            Case::Headers => {
                Kernel::new(CudaSource::from_str("mix.cu", HEADERS_SRC), "mix").instrument(false)
            }
            Case::Checked => Kernel::new(kernel("saxpy.cu")?, "saxpy").instrument(true),
            Case::Multi => {
                Kernel::new(CudaSource::from_str("five.cu", MULTI_SRC), "axpy").instrument(false)
            }
        }
        .build())
    }
}

/// GPU children or `--cpu` children.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Gpu,
    Cpu,
}

impl Mode {
    fn child_flag(self) -> &'static str {
        match self {
            Mode::Gpu => "--child",
            Mode::Cpu => "--cpu-child",
        }
    }
}

/// What one child measured, in milliseconds (`--cpu`: no context or loaded launch).
struct Sample {
    context_ms: f64,
    first_launch_ms: f64,
    loaded_launch_ms: f64,
    /// `--sequence` on a GPU: the part of the first launch spent getting the CUBIN.
    cubin_ms: f64,
    process_ms: f64,
    /// `--cpu`: whether the child loaded libnvrtc / libnvJitLink.
    nvrtc_loaded: bool,
    nvjitlink_loaded: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(flag @ ("--child" | "--cpu-child")) = args.first().map(String::as_str) {
        let case = args
            .get(1)
            .and_then(|c| Case::parse(c))
            .ok_or("--child small|headers|checked")?;
        return if flag == "--child" {
            child(case)
        } else {
            cpu_child(case)
        };
    }
    let mode = if args.first().map(String::as_str) == Some("--cpu") {
        args.remove(0);
        Mode::Cpu
    } else {
        // Without a GPU the children could not launch: say so once, here.
        drop(stream_or_exit());
        Mode::Gpu
    };
    let dir = match std::env::var_os("CUDACHECK_BENCH_CACHE_DIR") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("cudacheck-bench-cache-{}", std::process::id())),
    };
    if args.first().map(String::as_str) == Some("--sequence") {
        args.remove(0);
        let full_lookup = args.first().map(String::as_str) == Some("--full-lookup");
        if full_lookup {
            args.remove(0);
        }
        return sequence(mode, &dir, full_lookup, &args);
    }
    let (cold_runs, warm_runs) = runs(mode)?;
    let mut rows = Vec::new();
    for case in Case::ALL {
        for (cache, runs) in [("cold", cold_runs), ("warm", warm_runs)] {
            let mut samples = Vec::new();
            if cache == "warm" {
                spawn(mode, case, &dir, false)?; // fills the cache
            }
            for _ in 0..runs {
                if cache == "cold" {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                samples.push(spawn(mode, case, &dir, false)?);
            }
            rows.push((case, cache, samples));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let of = |samples: &[Sample], f: fn(&Sample) -> f64| samples.iter().map(f).collect::<Vec<_>>();
    let mut md = match mode {
        Mode::Gpu => String::from(
            "| case | cache | runs | first launch, median (ms) | min (ms) | launch of a loaded module (ms) | context (ms) | whole process (ms) |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        ),
        Mode::Cpu => format!(
            "CPU only: fresh process to the CUBIN in hand ({}, the same compile path as a first launch, no module load)\n\n\
             | case | cache | runs | CUBIN in hand, median (ms) | min (ms) | max (ms) | whole process, median (ms) | loaded libnvrtc | loaded libnvJitLink |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
            CPU_ARCH.sm_name()
        ),
    };
    let mut json_rows = Vec::new();
    for (case, cache, samples) in &rows {
        let first = of(samples, |s| s.first_launch_ms);
        let min = first.iter().copied().fold(f64::INFINITY, f64::min);
        let max = first.iter().copied().fold(0.0, f64::max);
        let first_med = median(first);
        let loaded = median(of(samples, |s| s.loaded_launch_ms));
        let context = median(of(samples, |s| s.context_ms));
        let process = median(of(samples, |s| s.process_ms));
        let count = |f: fn(&Sample) -> bool| samples.iter().filter(|s| f(s)).count();
        let (nvrtc, jitlink) = (count(|s| s.nvrtc_loaded), count(|s| s.nvjitlink_loaded));
        md.push_str(&match mode {
            Mode::Gpu => format!(
                "| {} | {cache} | {} | {first_med:.3} | {min:.3} | {loaded:.3} | {context:.1} | {process:.1} |\n",
                case.name(),
                samples.len()
            ),
            Mode::Cpu => format!(
                "| {} | {cache} | {n} | {first_med:.3} | {min:.3} | {max:.3} | {process:.1} | {nvrtc} of {n} | {jitlink} of {n} |\n",
                case.name(),
                n = samples.len()
            ),
        });
        json_rows.push(serde_json::json!({
            "case": case.name(), "cache": cache, "runs": samples.len(),
            "first_launch_median_ms": first_med, "first_launch_min_ms": min,
            "first_launch_max_ms": max,
            "loaded_launch_median_ms": loaded, "context_median_ms": context,
            "process_median_ms": process,
            "children_that_loaded_nvrtc": nvrtc, "children_that_loaded_nvjitlink": jitlink,
        }));
    }
    for case in Case::ALL {
        let row = |cache: &str| rows.iter().find(|(c, m, _)| *c == case && *m == cache);
        let med = |cache: &str, f: fn(&Sample) -> f64| {
            row(cache).map_or(f64::NAN, |(_, _, s)| median(of(s, f)))
        };
        let (cold, warm) = (
            med("cold", |s| s.first_launch_ms),
            med("warm", |s| s.first_launch_ms),
        );
        md.push_str(&match mode {
            Mode::Gpu => format!(
                "\n{}: cold / warm = {:.0}x; warm first launch is {:.3} ms above a launch of the loaded module",
                case.name(),
                cold / warm,
                warm - med("warm", |s| s.loaded_launch_ms)
            ),
            Mode::Cpu => format!("\n{}: cold / warm = {:.0}x", case.name(), cold / warm),
        });
    }
    md.push('\n');
    print!("{md}");
    let json = serde_json::json!({
        "benchmark": "bench_cache",
        "mode": if mode == Mode::Cpu { "cpu" } else { "gpu" },
        "rows": json_rows,
    });
    write_outputs(&args, &md, &json)?;
    Ok(())
}

/// `--sequence`: fresh processes in a row on one cache directory, emptied first: the cold one,
/// then the first, second and third warm ones, `CUDACHECK_BENCH_RUNS` (default 7) times; the
/// median per position. What a user sees after a compile is the first warm one; it should
/// cost what the third does (everything later runs reuse is written by the compiling process).
/// `full_lookup`: the manifests are removed before each warm process.
fn sequence(
    mode: Mode,
    dir: &Path,
    full_lookup: bool,
    outputs: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::var("CUDACHECK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(7);
    const POSITIONS: [&str; 4] = ["cold", "warm 1", "warm 2", "warm 3"];
    let mut md = format!(
        "Fresh processes in a row on one cache ({}; median of {reps} sequences; ms to {}{})\n\n\
         | case | {} | warm 1 / warm 3 |\n| --- |{}\n",
        if mode == Mode::Cpu {
            "CPU only, sm_90"
        } else {
            "GPU"
        },
        if mode == Mode::Cpu {
            "the CUBIN in hand"
        } else {
            "the first finished launch"
        },
        if full_lookup {
            "; no manifest: each warm process looks its headers up in full"
        } else {
            ""
        },
        POSITIONS.join(" | "),
        " --- |".repeat(POSITIONS.len() + 1),
    );
    let mut json_rows = Vec::new();
    for case in Case::ALL {
        let mut by_position: Vec<Vec<f64>> = vec![Vec::new(); POSITIONS.len()];
        let mut cubin_by_position: Vec<Vec<f64>> = vec![Vec::new(); POSITIONS.len()];
        for _ in 0..reps {
            let _ = std::fs::remove_dir_all(dir);
            for (times, cubins) in by_position.iter_mut().zip(cubin_by_position.iter_mut()) {
                if full_lookup {
                    remove_manifests(dir);
                }
                let sample = spawn(mode, case, dir, true)?;
                times.push(sample.first_launch_ms);
                cubins.push(sample.cubin_ms);
            }
        }
        let med = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let medians: Vec<f64> = by_position.into_iter().map(med).collect();
        let cubins: Vec<f64> = cubin_by_position.into_iter().map(med).collect();
        // On a GPU each cell also says how much of it getting the CUBIN took.
        let cell = |i: usize| match mode {
            Mode::Gpu => format!("{:.3} (CUBIN {:.3})", medians[i], cubins[i]),
            Mode::Cpu => format!("{:.3}", medians[i]),
        };
        md.push_str(&format!(
            "| {} | {} | {:.2}x |\n",
            case.name(),
            (0..POSITIONS.len())
                .map(cell)
                .collect::<Vec<_>>()
                .join(" | "),
            medians[1] / medians[3]
        ));
        json_rows.push(serde_json::json!({
            "case": case.name(), "sequences": reps,
            "cold_ms": medians[0], "warm1_ms": medians[1], "warm2_ms": medians[2],
            "warm3_ms": medians[3], "cubin_ms": cubins,
        }));
    }
    let _ = std::fs::remove_dir_all(dir);
    print!("{md}");
    let json = serde_json::json!({
        "benchmark": "bench_cache --sequence",
        "full_lookup": full_lookup,
        "mode": if mode == Mode::Cpu { "cpu" } else { "gpu" },
        "rows": json_rows,
    });
    write_outputs(outputs, &md, &json)?;
    Ok(())
}

/// Removes the manifests of the cache in `dir` (`--full-lookup`); none there is fine.
fn remove_manifests(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir.join("v1")) else {
        return;
    };
    for e in entries.flatten() {
        if e.path().extension().is_some_and(|x| x == "manifest") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Children per row, cold and warm: `CUDACHECK_BENCH_RUNS=COLD,WARM`, else the mode's default.
fn runs(mode: Mode) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    let Ok(v) = std::env::var("CUDACHECK_BENCH_RUNS") else {
        return Ok(match mode {
            Mode::Gpu => (5, 10),
            Mode::Cpu => (3, 41),
        });
    };
    let parsed = v
        .split_once(',')
        .and_then(|(c, w)| Some((c.trim().parse().ok()?, w.trim().parse().ok()?)))
        .filter(|&(c, w): &(usize, usize)| c > 0 && w > 0);
    parsed.ok_or_else(|| format!("CUDACHECK_BENCH_RUNS=`{v}`: write COLD,WARM, e.g. 3,41").into())
}

/// Runs one child with the cache in `dir` and reads its measurements.
fn spawn(
    mode: Mode,
    case: Case,
    dir: &Path,
    split: bool,
) -> Result<Sample, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let out = Command::new(std::env::current_exe()?)
        .args([mode.child_flag(), case.name()])
        .env("CUDACHECK_CACHE_DIR", dir)
        .env_remove("CUDACHECK_CACHE")
        .env("CUDACHECK_BENCH_SPLIT", if split { "1" } else { "" })
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
    let flag = |name: &str| stdout.lines().any(|l| l == format!("{name}=true"));
    Ok(Sample {
        context_ms: field("context_ms")?,
        first_launch_ms: field("first_launch_ms")?,
        loaded_launch_ms: field("loaded_launch_ms")?,
        cubin_ms: field("cubin_ms").unwrap_or(0.0),
        process_ms,
        nvrtc_loaded: flag("nvrtc_loaded"),
        nvjitlink_loaded: flag("nvjitlink_loaded"),
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
    let grid = (N as u32).div_ceil(BLOCK);

    let launch = |k: &Kernel, out: &mut _| -> Result<f64, String> {
        let t = Instant::now();
        // A bounds-checked launch synchronizes whatever this says.
        let mut l = k.launch(&stream);
        l.grid(grid).block(BLOCK).sync(false);
        // SAFETY: both kernels touch element i of each buffer for i < n only, and every
        // buffer holds N = n elements.
        unsafe {
            match case {
                Case::Small | Case::Checked | Case::Multi => {
                    l.arg_mut(out).arg(&x).arg(&2.0f32).arg(&n).run()
                }
                Case::Headers => l.arg_mut(out).arg(&h).arg(&b).arg(&n).run(),
            }
        }
        .map_err(|e| report(&e))?;
        stream.synchronize().map_err(|e| e.to_string())?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };

    let t = Instant::now();
    let k = case.kernel()?;
    // `--sequence`: the CUBIN first (the cache's part), then the launch loads and runs it.
    let cubin_ms = if std::env::var_os("CUDACHECK_BENCH_SPLIT").is_some() {
        let (major, minor) = stream.context().compute_capability()?;
        let arch = Arch::new(major as u32, minor as u32);
        match case {
            Case::Checked => k.check_offline_checked(arch, BLOCK, 0),
            _ => k.check_offline(arch),
        }
        .map_err(|e| report(&e))?;
        t.elapsed().as_secs_f64() * 1e3
    } else {
        0.0
    };
    launch(&k, &mut out)?;
    let first_launch_ms = t.elapsed().as_secs_f64() * 1e3;
    let loaded_launch_ms = launch(&k, &mut out)?;

    let host = stream.clone_dtoh(&out)?;
    let expected = match case {
        Case::Small | Case::Checked | Case::Multi => 2.0f32 * 2.0,
        Case::Headers => 3.0,
    };
    if host.iter().any(|v| *v != expected) {
        return Err(format!("{}: wrong result, expected {expected}", case.name()).into());
    }
    println!("context_ms={context_ms}");
    println!("first_launch_ms={first_launch_ms}");
    println!("loaded_launch_ms={loaded_launch_ms}");
    println!("cubin_ms={cubin_ms}");
    Ok(())
}

/// One fresh process without a GPU: the kernel built for [`CPU_ARCH`] to its CUBIN, timed.
fn cpu_child(case: Case) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let k = case.kernel()?;
    let built = match case {
        Case::Small | Case::Headers | Case::Multi => k.check_offline(CPU_ARCH),
        Case::Checked => k.check_offline_checked(CPU_ARCH, BLOCK, 0),
    }
    .map_err(|e| report(&e))?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    if built.resources.params.is_empty() || (case == Case::Checked) != built.checked.is_some() {
        return Err(format!("{}: not the build asked for", case.name()).into());
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    println!("context_ms=0");
    println!("first_launch_ms={first_ms}");
    println!("loaded_launch_ms=0");
    println!("nvrtc_loaded={}", maps.contains("libnvrtc"));
    println!("nvjitlink_loaded={}", maps.contains("libnvJitLink"));
    Ok(())
}
