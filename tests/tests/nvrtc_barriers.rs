//! NVRTC tier: the barrier checks of race-checked builds on what NVRTC really compiles
//! (`tests/cuda/barriers/partial.cu`: a barrier only part of the block reaches, in each shape:
//! a branch, uneven trip counts, a `break`, `__syncthreads_or`, an early `return`, cooperative
//! groups; and half-warps at two barriers). Each kernel is bounds-instrumented,
//! race-instrumented and assembled by nvJitLink for sm_80 and sm_90: its barriers are
//! checked on the marked lines, its exits are recorded, and no aligned block barrier is left
//! (an aligned barrier hangs a warp whose lanes wait at two statements). Needs NVRTC and
//! nvJitLink, no GPU.

use std::collections::BTreeSet;

use cudacheck::nvrtc::CudaSource;
use cudacheck_core::race::RaceSiteKind;
use cudacheck_tests::{nvrtc_or_skip, race_build, repo_root};

fn source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/barriers/partial.cu")).unwrap()
}

/// Each kernel's name with the lines its markers (`BARRIER-1`, `EXIT-1`...) sit on.
fn marked_kernels(src: &CudaSource) -> Vec<(String, Vec<(String, u32)>)> {
    let mut out: Vec<(String, Vec<(String, u32)>)> = Vec::new();
    for (k, l) in src.text.lines().enumerate() {
        if let Some(rest) = l.strip_prefix("extern \"C\" __global__ void ") {
            out.push((rest.split('(').next().unwrap().to_string(), Vec::new()));
        }
        for m in ["BARRIER-1", "BARRIER-2", "EXIT-1"] {
            if l.contains(&format!("// {m}")) {
                out.last_mut()
                    .expect("a marker inside a kernel")
                    .1
                    .push((m.to_string(), k as u32 + 1));
            }
        }
    }
    out
}

/// The PTX text of kernel `name`'s body in a rewritten module.
fn body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let at = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no kernel {name}"));
    let rest = &ptx[at..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// Whether a PTX line is an aligned block barrier (`bar.sync`, `bar.red`, `barrier.*.aligned`).
fn aligned_block_barrier(line: &str) -> bool {
    let l = line.trim();
    let l = if l.starts_with('@') {
        l.split_once(char::is_whitespace)
            .map_or("", |(_, r)| r.trim())
    } else {
        l
    };
    l.starts_with("bar.sync")
        || l.starts_with("bar.red")
        || l.starts_with("bar.cta")
        || (l.starts_with("barrier.") && l.split_whitespace().next().unwrap().contains(".aligned"))
}

#[test]
fn nvrtc_partial_barriers_are_checked_on_their_lines_with_exits_recorded() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = source();
    let marked = marked_kernels(&src);
    assert_eq!(marked.len(), 7, "{marked:?}");
    for arch in ["sm_80", "sm_90"] {
        let r = race_build(&src, arch.parse().unwrap(), 0);
        for (name, markers) in &marked {
            let k = r
                .kernel(name)
                .unwrap_or_else(|| panic!("{arch}: no kernel {name}"));
            assert!(k.coverage.is_complete(), "{arch} {name}: {:?}", k.coverage);
            assert!(k.shadow, "{arch} {name}: no shadow");
            let lines = |kind: RaceSiteKind| -> BTreeSet<u32> {
                k.sites
                    .iter()
                    .filter(|s| s.kind == kind)
                    // A call inlined from a header (cooperative groups) is on the line it
                    // was inlined into.
                    .filter_map(|s| s.inlined_at.as_ref().or(s.loc.as_ref()).map(|l| l.line))
                    .collect()
            };
            let barriers = lines(RaceSiteKind::Barrier);
            for (m, line) in markers.iter().filter(|(m, _)| m.starts_with("BARRIER")) {
                assert!(
                    barriers.contains(line),
                    "{arch} {name}: {m} (line {line}) is no barrier site: {barriers:?}"
                );
            }
            // Every kernel here has a barrier, so each of its exits is recorded.
            let exits = k
                .sites
                .iter()
                .filter(|s| s.kind == RaceSiteKind::Exit)
                .count();
            assert!(exits >= 1, "{arch} {name}: no exit site");
            // An early `return` is a branch to the kernel's one `ret`: its exit site is the
            // branch, on the `return`'s line (where a report says the threads left).
            let src_lines: Vec<&str> = src.text.lines().collect();
            for (_, line) in markers.iter().filter(|(m, _)| m == "EXIT-1") {
                if src_lines[*line as usize - 1].contains("return") {
                    assert!(
                        lines(RaceSiteKind::Exit).contains(line),
                        "{arch} {name}: no exit site at the `return` (line {line}): {:?}",
                        lines(RaceSiteKind::Exit)
                    );
                }
            }
            let text = body(&r.ptx, name);
            let counting = text.matches("barrier.red.popc.u32 %__ccr_n, 0, 1;").count();
            assert_eq!(
                counting as u32, k.coverage.barriers,
                "{arch} {name}: one counting barrier per barrier site"
            );
            if let Some(l) = text.lines().find(|l| aligned_block_barrier(l)) {
                panic!("{arch} {name}: an aligned block barrier is left: `{l}`");
            }
        }
        // The two barrier statements of the half-warps stay two sites (the compiler did not
        // merge them, or the kernel would test nothing).
        let split = r.kernel("half_warps_two_barriers").unwrap();
        assert!(split.coverage.barriers >= 2, "{arch}: {:?}", split.coverage);
        // The user's `__syncthreads_or` runs after the counting barrier, non-aligned.
        let vote = body(&r.ptx, "any_negative_vote");
        assert!(
            vote.lines()
                .any(|l| l.trim_start().starts_with("barrier.red.or.pred")),
            "{arch}: `__syncthreads_or` lost"
        );
    }
}

/// The planted program of `cudacheck run` (tests/run/planned/barriers.cu) has kernels this
/// file does not; their race-checked build must at least be accepted whole: the rewrite's
/// input is the same NVRTC PTX shape. Here: its kernels' bodies, compiled without the host
/// program.
#[test]
fn nvrtc_the_planned_barrier_kernels_are_race_checked_in_full() {
    if !nvrtc_or_skip() {
        return;
    }
    let text = std::fs::read_to_string(repo_root().join("tests/run/planned/barriers.cu")).unwrap();
    // The kernels: from the first `__global__` to `template` (the host helpers start there).
    let start = text
        .find("// Correct: every thread")
        .expect("kernels start");
    let end = text.find("template <typename T>").expect("kernels end");
    let kernels = format!(
        "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n{}",
        &text[start..end]
    );
    let src = CudaSource {
        name: "barriers_kernels.cu".into(),
        text: kernels,
        dir: None,
    };
    let r = race_build(&src, "sm_90".parse().unwrap(), 0);
    assert_eq!(
        r.kernels.len(),
        7,
        "{:?}",
        r.kernels.iter().map(|k| &k.name).collect::<Vec<_>>()
    );
    for k in &r.kernels {
        assert!(k.coverage.is_complete(), "{}: {:?}", k.name, k.coverage);
        assert!(k.coverage.barriers >= 1, "{}: no barrier", k.name);
        assert!(
            k.sites.iter().any(|s| s.kind == RaceSiteKind::Exit),
            "{}: no exit site",
            k.name
        );
        if let Some(l) = body(&r.ptx, &k.symbol)
            .lines()
            .find(|l| aligned_block_barrier(l))
        {
            panic!("{}: an aligned block barrier is left: `{l}`", k.name);
        }
    }
}
