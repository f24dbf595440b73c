//! NVRTC tier: race checking (issue 24) on what NVRTC really compiles. Every kernel of
//! `kernels/`, of the benchmark set (`bench/kernels/`) and of the planted and correct race
//! kernels (`tests/cuda/races/`) is compiled to PTX, bounds-instrumented, race-instrumented and
//! assembled by nvJitLink, for sm_80 and sm_90; the planted and correct kernels are race-checked
//! in full, each check on the line the source marks. Needs NVRTC and nvJitLink, no GPU.

use std::collections::BTreeSet;

use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions, CudaSource};
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
use cudacheck_core::race::{race_ptx, RaceOptions, RacePtx, RaceSiteKind};
use cudacheck_core::Arch;
use cudacheck_tests::{kernel_files, nvrtc_or_skip, repo_root};

fn race_build(src: &CudaSource, arch: Arch, dynamic: u32) -> RacePtx {
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let out = compile(src, &opts).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    let ptx = out.ptx.expect("asked for PTX");
    let inst = instrument_ptx_with(&ptx, &InstrumentOptions::new().host_checks(true))
        .unwrap_or_else(|e| panic!("{}: {e}", src.name));
    let r = race_ptx(&inst.ptx, &RaceOptions::new(dynamic))
        .unwrap_or_else(|e| panic!("{}: {e}", src.name));
    assemble_ptx(&r.ptx, arch, &src.name)
        .unwrap_or_else(|e| panic!("{} ({}): {e}", src.name, arch.sm_name()));
    r
}

fn file(path: &str) -> CudaSource {
    CudaSource::from_file(repo_root().join(path)).unwrap()
}

#[test]
fn nvrtc_race_checked_builds_assemble_for_every_kernel() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut files: Vec<String> = kernel_files()
        .iter()
        .map(|f| format!("kernels/{f}"))
        .collect();
    for e in std::fs::read_dir(repo_root().join("bench/kernels")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "cu") {
            files.push(format!(
                "bench/kernels/{}",
                p.file_name().unwrap().to_str().unwrap()
            ));
        }
    }
    files.sort();
    assert!(files.len() >= 16, "{files:?}");
    let (mut shared_kernels, mut checked) = (0, 0);
    for arch in ["sm_80", "sm_90"] {
        let arch: Arch = arch.parse().unwrap();
        for f in &files {
            let r = race_build(&file(f), arch, 0);
            for k in &r.kernels {
                if k.coverage.checked > 0 {
                    shared_kernels += 1;
                    checked += k.coverage.checked;
                    assert!(k.shadow, "{f}: {} has race checks but no shadow", k.name);
                }
                // Every kernel of ours is race-checkable: none synchronizes in a way the
                // checker does not model.
                assert!(
                    k.coverage.not_checked.is_none(),
                    "{f}: {}: {:?}",
                    k.name,
                    k.coverage.not_checked
                );
            }
        }
    }
    assert!(
        shared_kernels >= 20,
        "{shared_kernels} kernels with shared accesses"
    );
    println!("{shared_kernels} kernel builds with {checked} race-checked shared accesses");
}

/// The lines of `path` carrying `marker` (1-based).
fn marked(src: &CudaSource, marker: &str) -> BTreeSet<u32> {
    src.text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker))
        .map(|(k, _)| k as u32 + 1)
        .collect()
}

#[test]
fn nvrtc_planted_and_correct_race_kernels_are_checked_in_full_on_their_lines() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    for (path, dynamic) in [
        ("tests/cuda/races/planted.cu", 512),
        ("tests/cuda/races/correct.cu", 512),
    ] {
        let src = file(path);
        let r = race_build(&src, arch, dynamic);
        assert!(r.kernels.len() >= 14, "{path}: {} kernels", r.kernels.len());
        let lines = |kind: RaceSiteKind| -> BTreeSet<u32> {
            r.kernels
                .iter()
                .flat_map(|k| &k.sites)
                .filter(|s| s.kind == kind)
                .filter_map(|s| s.loc.as_ref().map(|l| l.line))
                .collect()
        };
        for k in &r.kernels {
            assert!(
                k.coverage.is_complete(),
                "{path}: {}: {:?}",
                k.name,
                k.coverage
            );
            assert!(k.shadow, "{path}: {}", k.name);
            // Every site names its array (none goes through a pointer the checker cannot
            // follow back).
            for s in k.sites.iter().filter(|s| s.bytes > 0) {
                assert!(s.array.is_some(), "{path}: {}: site {s:?}", k.name);
            }
        }
        let accesses: BTreeSet<u32> = [
            RaceSiteKind::Read,
            RaceSiteKind::Write,
            RaceSiteKind::Atomic,
        ]
        .into_iter()
        .flat_map(lines)
        .collect();
        for l in marked(&src, "// RACE-") {
            assert!(
                accesses.contains(&l),
                "{path}: no race-checked access on line {l}"
            );
        }
        let barriers = lines(RaceSiteKind::Barrier);
        let warp = lines(RaceSiteKind::WarpSync);
        for l in marked(&src, "// BARRIER-") {
            assert!(
                barriers.contains(&l) || warp.contains(&l),
                "{path}: no barrier check on line {l}"
            );
        }
        let arrays: BTreeSet<&str> = r
            .kernels
            .iter()
            .flat_map(|k| &k.sites)
            .filter_map(|s| s.array.as_deref())
            .collect();
        for a in ["s", "tile", "dyn", "buf"] {
            assert!(
                arrays.contains(a),
                "{path}: no access to `{a}` named: {arrays:?}"
            );
        }
    }
}
