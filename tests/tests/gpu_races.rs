//! GPU tier: shared-memory races and barrier errors. Every kernel of
//! `tests/cuda/races/planted.cu` has one planted race or barrier error; a race-checked launch
//! must report it as `Error::SharedRace` / `Error::BarrierMisuse`, and the report must be exact:
//! both lines are the marked ones, and the element is one that each named thread really touches
//! at its line (computed here from the kernel's index expressions, independently of the
//! checker).
//! Every kernel of `tests/cuda/races/correct.cu` must give no report and outputs bit-identical
//! to the plain build's. After each report, a correct kernel runs race-checked in the same
//! context and matches the plain build: the context stays healthy.

use std::collections::BTreeMap;
use std::sync::Arc;

use cudacheck::cudarc::driver::CudaStream;
use cudacheck::nvrtc::CudaSource;
use cudacheck::{BarrierMisuseKind, Error, Kernel};
use cudacheck_tests::{chain, gpu_or_skip, repo_root};

const N: usize = 1024;

struct Planted {
    name: String,
    grid: u32,
    block: u32,
    shared: u32,
    /// Marker (`RACE-1`, `BARRIER-2`, ...) to its 1-based line.
    markers: BTreeMap<String, u32>,
}

fn source(file: &str) -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/races").join(file)).unwrap()
}

/// Each kernel of a file with its `// launch:` line and the markers in its body.
fn kernels(file: &str) -> Vec<Planted> {
    let src = source(file);
    let lines: Vec<&str> = src.text.lines().collect();
    let mut out: Vec<Planted> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("extern \"C\" __global__ void ") {
            let name = rest.split('(').next().unwrap().trim().to_string();
            let launch = lines[k - 1];
            assert!(launch.starts_with("// launch:"), "{name}: no launch line");
            let field = |f: &str| -> u32 {
                launch
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{f}=")))
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            out.push(Planted {
                name,
                grid: field("grid"),
                block: field("block"),
                shared: field("shared"),
                markers: BTreeMap::new(),
            });
        }
        if let (Some(p), Some(at)) = (out.last_mut(), l.find("// RACE-").or(l.find("// BARRIER-")))
        {
            let m = l[at + 3..].trim().to_string();
            p.markers.insert(m, k as u32 + 1);
        }
    }
    out
}

fn inputs() -> Vec<f32> {
    (0..N).map(|i| i as f32 * 0.5 + 1.0).collect()
}

/// Runs `name` once with the given race checking; the output, or the error.
fn run(s: &Arc<CudaStream>, file: &str, p: &Planted, races: bool) -> Result<Vec<f32>, Error> {
    let k = Kernel::new(source(file), &p.name)
        .instrument(races)
        .races(races)
        .sync(true)
        .build();
    let input = cudacheck::alloc_copy(s, &inputs()).unwrap();
    let mut out = cudacheck::alloc_copy(s, &vec![f32::NAN; N]).unwrap();
    unsafe {
        k.launch(s)
            .grid(p.grid)
            .block(p.block)
            .shared_bytes(p.shared)
            .arg_mut(&mut out)
            .arg(&input)
            .arg(&(N as i32))
            .run()
    }?;
    Ok(s.clone_dtoh(&out).unwrap())
}

/// The flat elements thread `t` touches at a marked line of each planted kernel (the index
/// expressions of `planted.cu`, written out again here).
fn touched(kernel: &str, marker: &str, t: u64) -> Vec<u64> {
    let one = marker == "RACE-1";
    let (tx, ty) = (t % 16, t / 16);
    match (kernel, one) {
        ("race_raw_across_warps", true) => vec![t],
        ("race_raw_across_warps", false) => vec![(t + 64) % 128],
        ("race_raw_in_warp", true) => vec![t],
        ("race_raw_in_warp", false) => vec![t ^ 1],
        ("race_war_shift", true) => vec![t + 1],
        ("race_war_shift", false) => vec![t],
        ("race_waw_pairs", _) => vec![t / 2],
        ("race_reduce_no_barrier", _) => [64, 32, 16, 8, 4, 2, 1]
            .iter()
            .filter(|&&s| t < s)
            .flat_map(|&s| [t, t + s])
            .collect(),
        ("race_reduce_warp_unsynced", true) if t < 2 => vec![t, t + 2],
        ("race_reduce_warp_unsynced", false) if t < 1 => vec![t, t + 1],
        ("race_double_buffer", true) => vec![t],
        ("race_double_buffer", false) => (0..4).map(|k| (k % 2) * 128 + (t + 1) % 128).collect(),
        ("race_transpose_no_barrier", true) => vec![ty * 17 + tx],
        ("race_transpose_no_barrier", false) => vec![tx * 17 + ty],
        ("race_dynamic_neighbour", true) => vec![t],
        ("race_dynamic_neighbour", false) => vec![(t + 1) % 128, t],
        ("race_stencil", true) => vec![t],
        ("race_stencil", false) => {
            let mut v = vec![t];
            if t > 0 {
                v.push(t - 1);
            }
            if t < 127 {
                v.push(t + 1);
            }
            v
        }
        ("race_atomic_vs_plain", true) if t % 2 == 1 => vec![0],
        ("race_atomic_vs_plain", false) if t == 0 => vec![0],
        ("race_barrier_misplaced", true) => vec![t],
        ("race_barrier_misplaced", false) => vec![127 - t],
        ("race_histogram_plain", _) => vec![t % 8],
        ("race_second_round", true) => vec![(t + 1) % 128],
        ("race_second_round", false) => vec![t],
        _ => Vec::new(),
    }
}

fn linear(t: cudacheck_core::Dim3, block: u32) -> u64 {
    u64::from(t.x) + u64::from(t.y) * u64::from(block)
}

/// A correct kernel, race-checked, matches its plain build: the context is healthy.
fn healthy(s: &Arc<CudaStream>, after: &str) {
    let ok = kernels("correct.cu");
    let k = ok.iter().find(|k| k.name == "ok_transpose_padded").unwrap();
    let checked = run(s, "correct.cu", k, true)
        .unwrap_or_else(|e| panic!("after {after}: the next launch failed: {}", chain(&e)));
    let plain = run(s, "correct.cu", k, false).unwrap();
    assert_eq!(
        checked.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
        plain.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
        "after {after}"
    );
}

#[test]
fn gpu_planted_races_are_reported_exactly_and_the_context_lives() {
    let Some(s) = gpu_or_skip() else { return };
    let planted: Vec<Planted> = kernels("planted.cu")
        .into_iter()
        .filter(|p| p.name.starts_with("race_"))
        .collect();
    assert!(planted.len() >= 12, "{} planted races", planted.len());
    let mut failures = Vec::new();
    for p in &planted {
        let r = run(&s, "planted.cu", p, true);
        let e = match r {
            Err(Error::SharedRace(e)) => e,
            Err(other) => {
                failures.push(format!(
                    "{}: expected a race, got: {}",
                    p.name,
                    chain(&other)
                ));
                continue;
            }
            Ok(_) => {
                failures.push(format!("{}: no race reported", p.name));
                continue;
            }
        };
        let text = e.to_string();
        println!("{}:\n{text}\n", p.name);
        let marker_of = |line: u32| {
            p.markers
                .iter()
                .find(|(_, &l)| l == line)
                .map(|(m, _)| m.clone())
        };
        let expected_array = if p.name == "race_dynamic_neighbour" {
            "dyn"
        } else if p.name == "race_double_buffer" {
            "buf"
        } else if p.name == "race_transpose_no_barrier" {
            "tile"
        } else if p.name == "race_atomic_vs_plain" {
            "hits"
        } else if p.name == "race_histogram_plain" {
            "bins"
        } else {
            "s"
        };
        let mut why = Vec::new();
        if e.array != expected_array {
            why.push(format!("array `{}`, expected `{expected_array}`", e.array));
        }
        if !e.first.file.ends_with("planted.cu") || !e.second.file.ends_with("planted.cu") {
            why.push("file".to_string());
        }
        let t1 = linear(e.first.thread, p.block);
        let t2 = linear(e.second.thread, p.block);
        if t1 == t2 {
            why.push("both accesses by one thread".to_string());
        }
        for (a, t) in [(&e.first, t1), (&e.second, t2)] {
            match marker_of(a.line) {
                None => why.push(format!("line {} is not a marked line", a.line)),
                Some(m) if !touched(&p.name, &m, t).contains(&e.element) => why.push(format!(
                    "thread {t} does not touch element {} at {m} (line {})",
                    e.element, a.line
                )),
                Some(_) => {}
            }
        }
        let markers: Vec<u32> = p
            .markers
            .iter()
            .filter(|(m, _)| m.starts_with("RACE"))
            .map(|(_, &l)| l)
            .collect();
        let mut lines = vec![e.first.line, e.second.line];
        lines.sort_unstable();
        lines.dedup();
        let mut want = markers.clone();
        want.sort_unstable();
        if lines != want {
            why.push(format!("lines {lines:?}, marked {want:?}"));
        }
        if e.first.kind == cudacheck_core::race::AccessKind::Read
            && e.second.kind == cudacheck_core::race::AccessKind::Read
        {
            why.push("two reads".to_string());
        }
        if e.block.y != 0 || e.block.x >= p.grid {
            why.push(format!("block {}", e.block));
        }
        if !why.is_empty() {
            failures.push(format!("{}: {}\n{text}", p.name, why.join("; ")));
        }
        healthy(&s, &p.name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn gpu_planted_barrier_errors_are_reported() {
    let Some(s) = gpu_or_skip() else { return };
    let planted: Vec<Planted> = kernels("planted.cu")
        .into_iter()
        .filter(|p| p.name.starts_with("barrier_"))
        .collect();
    assert!(planted.len() >= 3);
    let mut failures = Vec::new();
    for p in &planted {
        let e = match run(&s, "planted.cu", p, true) {
            Err(Error::BarrierMisuse(e)) => e,
            Err(other) => {
                failures.push(format!(
                    "{}: expected a barrier error, got: {}",
                    p.name,
                    chain(&other)
                ));
                continue;
            }
            Ok(_) => {
                failures.push(format!("{}: nothing reported", p.name));
                continue;
            }
        };
        let text = e.to_string();
        println!("{}:\n{text}\n", p.name);
        let b1 = p.markers["BARRIER-1"];
        let t = linear(e.call.thread, p.block);
        let ok = match p.name.as_str() {
            "barrier_divergent_branches" | "barrier_conditional_then_unconditional" => {
                let b2 = p.markers["BARRIER-2"];
                let (t2, l2) = e
                    .other
                    .as_ref()
                    .map(|o| (linear(o.thread, p.block), o.line))
                    .unwrap_or((u64::MAX, 0));
                // Warp 0 waits at BARRIER-1, warp 1 at BARRIER-2, in both kernels.
                let side = |line: u32, t: u64| (line == b1 && t < 32) || (line == b2 && t >= 32);
                e.kind == BarrierMisuseKind::Divergent
                    && side(e.call.line, t)
                    && side(l2, t2)
                    && e.call.line != l2
            }
            _ => {
                e.kind == BarrierMisuseKind::WarpMask { mask: 0xffff }
                    && e.call.line == b1
                    && t % 32 >= 16
            }
        };
        if !ok {
            failures.push(format!("{}: inexact report\n{text}", p.name));
        }
        healthy(&s, &p.name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn gpu_correct_shared_memory_patterns_give_no_report_and_identical_outputs() {
    let Some(s) = gpu_or_skip() else { return };
    let ok = kernels("correct.cu");
    assert!(ok.len() >= 10);
    let mut failures = Vec::new();
    for p in &ok {
        let plain = run(&s, "correct.cu", p, false).unwrap();
        match run(&s, "correct.cu", p, true) {
            Ok(checked) => {
                let same = checked
                    .iter()
                    .zip(&plain)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                if !same {
                    failures.push(format!("{}: outputs differ from the plain build", p.name));
                }
            }
            Err(e) => failures.push(format!("{}: {}", p.name, chain(&e))),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
