//! NVRTC tier: race checking on what NVRTC really compiles. Every kernel of
//! `kernels/`, of the benchmark set (`bench/kernels/`) and of the planted and correct race
//! kernels (`tests/cuda/races/`) is compiled to PTX, bounds-instrumented, race-instrumented and
//! assembled by nvJitLink, for sm_80 and sm_90; the planted and correct kernels are race-checked
//! in full, each check on the line the source marks; the coverage `Kernel` reports for a
//! launch shape is that of the shape's build. Needs NVRTC and nvJitLink, no GPU.

use std::collections::BTreeSet;

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck::Kernel;
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
use cudacheck_core::race::{race_ptx, RaceOptions, RaceSiteKind};
use cudacheck_core::Arch;
use cudacheck_tests::{
    kernel_files, nvrtc_or_skip, race_build, race_launches, repo_root, RaceLaunch,
};

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

/// A barrier report shows its calls with a caret under the column (`BarrierCall::column`):
/// every barrier site's column is that of the `__syncthreads`/`__syncwarp` call on its line.
#[test]
fn nvrtc_barrier_sites_point_at_the_call() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("tests/cuda/races/planted.cu");
    let r = race_build(&src, "sm_90".parse().unwrap(), 512);
    let lines: Vec<&str> = src.text.lines().collect();
    let mut seen = 0;
    for k in &r.kernels {
        let barriers = k
            .sites
            .iter()
            .filter(|s| matches!(s.kind, RaceSiteKind::Barrier | RaceSiteKind::WarpSync));
        for s in barriers {
            let l = s.loc.as_ref().expect("a barrier with line information");
            let at = lines[l.line as usize - 1].get(l.column as usize - 1..);
            assert!(
                at.is_some_and(|t| t.starts_with("__sync")),
                "{}: {:?} at {}:{} points at {at:?}",
                k.name,
                s.kind,
                l.line,
                l.column
            );
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} barrier sites");
}

/// `Kernel::race_coverage_for` answers for the build a launch of that shape runs: the race
/// rewrite of the bounds-checked build specialised for the block and dynamic shared memory
/// (made here by hand from the core API), and `Kernel::coverage_for` the bounds coverage of
/// that build, which proves accesses the shapeless build must check.
#[test]
fn nvrtc_coverage_for_a_launch_shape_is_that_of_its_build() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let mut more_proven = 0;
    for path in ["tests/cuda/races/planted.cu", "tests/cuda/races/correct.cu"] {
        let src = file(path);
        let opts = CompileOptions {
            ptx: true,
            ..CompileOptions::new(arch)
        };
        let ptx = compile(&src, &opts).unwrap().ptx.unwrap();
        for RaceLaunch {
            name,
            block,
            shared,
            ..
        } in race_launches(&src)
        {
            let by_hand = {
                let inst = instrument_ptx_with(
                    &ptx,
                    &InstrumentOptions::new()
                        .block([block, 1, 1])
                        .dynamic_shared_bytes(shared)
                        .host_checks(true),
                )
                .unwrap();
                let r =
                    race_ptx(&inst.ptx, &RaceOptions::new(shared).block([block, 1, 1])).unwrap();
                let bounds = inst.kernel(&name).unwrap().coverage.clone();
                (bounds, r.kernel(&name).unwrap().coverage.clone())
            };
            let k = Kernel::new(src.clone(), &name).build();
            let races = k.race_coverage_for(block, shared).unwrap();
            assert_eq!(races.as_ref(), Some(&by_hand.1), "{path}: {name}");
            assert!(races.unwrap().is_complete(), "{path}: {name}");
            let bounds = k.coverage_for(block, shared).unwrap().unwrap();
            assert_eq!(bounds, by_hand.0, "{path}: {name}");
            if bounds.proven > k.coverage().unwrap().unwrap().proven {
                more_proven += 1;
            }
        }
    }
    assert!(
        more_proven >= 10,
        "only {more_proven} kernels prove more with their launch shape"
    );
}
