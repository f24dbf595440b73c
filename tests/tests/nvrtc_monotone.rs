//! NVRTC tier: loops whose offsets are monotone in the counter but not affine
//! (`tests/cuda/monotone.cu`: a bit mask's byte `i >> 3` in an unrolled 64-bit grid-stride
//! loop, taps clamped with `min`/`max`, a counter going down read as `j >> 1`, a group's first
//! element `i & ~3`) are versioned when their accesses are checked on the device: one range
//! check per access before the loop, from its first and last iteration
//! (`cudacheck-core/src/instrument/version/monotone.rs`), and a copy of the loop without
//! those checks. The GPU tier (`gpu_monotone.rs`) runs them, and their planted twins, which
//! must still be reported at the exact index.

use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions, CudaSource};
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions, InstrumentedPtx};
use cudacheck_core::Arch;
use cudacheck_tests::{nvrtc_or_skip, repo_root};

const KERNELS: [&str; 4] = ["mask_bytes", "box_clamp", "suffix_pairs", "quad_first"];

fn ptx(planted: bool, arch: Arch) -> (CudaSource, String) {
    let src = CudaSource::from_file(repo_root().join("tests/cuda/monotone.cu")).unwrap();
    let mut opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    if planted {
        opts.extra_options.push("-DPLANTED".to_string());
    }
    let out = compile(&src, &opts).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    (src, out.ptx.expect("asked for PTX"))
}

fn entry_body<'p>(ptx: &'p str, entry: &str) -> &'p str {
    let start = ptx
        .find(&format!(".entry {entry}("))
        .unwrap_or_else(|| panic!("no entry {entry}"));
    let rest = &ptx[start..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// The fast copies of a kernel's versioned loops (between `$__cc_vfast<n>:` and
/// `$__cc_vexit<n>:`).
fn fast_loops(body: &str) -> Vec<&str> {
    body.split("the loop without its hoisted checks")
        .skip(1)
        .map(|s| s.split("$__cc_vexit").next().unwrap())
        .collect()
}

/// Every access is checked on the device (as in the build a launch runs when its host checks
/// fail): each kernel's loop is versioned, its fast copy has no per-access check, and with
/// `keep_loop_checks` nothing is hoisted. Both builds assemble.
#[test]
fn nvrtc_monotone_offsets_are_hoisted_out_of_their_loops() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let device = InstrumentOptions::new();
    for planted in [false, true] {
        let (src, ptx) = ptx(planted, arch);
        let on = instrument_ptx_with(&ptx, &device).unwrap();
        let off = instrument_ptx_with(&ptx, &device.keep_loop_checks(true)).unwrap();
        for name in KERNELS {
            let k = on.kernels.iter().find(|k| k.name == name).unwrap();
            let c = &k.coverage;
            println!("{name} (planted: {planted}): {c:?}");
            assert!(c.is_complete(), "{name}: {c:?}");
            assert!(c.versioned_loops >= 1, "{name}: {c:?}");
            let body = entry_body(&on.ptx, &k.symbol);
            let fast = fast_loops(body);
            assert!(!fast.is_empty(), "{name} has a fast loop: {body}");
            for f in fast {
                assert!(f.contains("ld.global"), "{f}");
                assert!(
                    !f.contains("%__cc_p"),
                    "{name}: a check in the fast loop: {f}"
                );
            }
            let k = off.kernels.iter().find(|k| k.name == name).unwrap();
            assert_eq!((k.coverage.hoisted, k.coverage.versioned_loops), (0, 0));
        }
        assemble_ptx(&on.ptx, arch, &src.name).expect("versioned loops assemble");
        assemble_ptx(&off.ptx, arch, &src.name).expect("unversioned loops assemble");
    }
}

/// The device-checked accesses left inside loops (not hoisted), per kernel.
fn in_loop(out: &InstrumentedPtx, name: &str) -> u32 {
    let k = out.kernels.iter().find(|k| k.name == name).unwrap();
    k.coverage.checked - k.coverage.hoisted
}

/// The mask kernel of the styles set's `tune` half (`apply_bitmask`: `mask[i >> 5]` of a
/// 64-bit grid-stride counter, unrolled by four), checked on the device: every access of its
/// unrolled loop is hoisted; only the remainder loop's (at most three iterations) keep
/// their checks.
#[test]
fn nvrtc_the_styles_bit_mask_is_hoisted() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("bench/styles/quant.cu")).unwrap();
    let opts = CompileOptions {
        ptx: true,
        name_expressions: vec![],
        ..CompileOptions::new(arch)
    };
    let out = compile(&src, &opts).unwrap();
    let ptx = out.ptx.unwrap();
    let device = InstrumentOptions::new().block([256, 1, 1]);
    let on = instrument_ptx_with(&ptx, &device).unwrap();
    let k = on
        .kernels
        .iter()
        .find(|k| k.name == "apply_bitmask")
        .unwrap();
    println!("apply_bitmask: {:?}", k.coverage);
    // 15 accesses: the remainder loop's three (mask, x, out) and the unrolled loop's twelve.
    assert_eq!(k.coverage.checked, 15, "{:?}", k.coverage);
    assert_eq!(in_loop(&on, "apply_bitmask"), 3, "{:?}", k.coverage);
    let body = entry_body(&on.ptx, &k.symbol);
    for f in fast_loops(body) {
        assert!(!f.contains("%__cc_p"), "a check in the fast loop: {f}");
    }
    assemble_ptx(&on.ptx, arch, &src.name).expect("assembles");
}

/// The launches `gpu_monotone.rs` makes, as the runtime builds for them: the host-checked
/// build of the launch's block, and, where some of its host checks fail for the launch's
/// values, the build that checks those on the device. Printed per kernel and twin: the host
/// checks that fail, and the coverage. For the healthy kernels, every device check is hoisted
/// but a remainder loop's (at most three iterations); each planted twin's overrun is checked
/// on the device.
#[test]
fn nvrtc_the_gpu_tests_launches_keep_no_check_in_their_loops() {
    if !nvrtc_or_skip() {
        return;
    }
    use cudacheck_tests::host_checks::{failing_set, Arg::*};
    let arch: Arch = "sm_90".parse().unwrap();
    // (kernel, grid, args, the planted buffer, device checks a healthy launch may leave
    // unhoisted: an unrolled loop's remainder's).
    let n = (1u64 << 20) + 8 * 37;
    let launches: [(
        &str,
        u32,
        Vec<cudacheck_tests::host_checks::Arg>,
        usize,
        u32,
    ); 4] = [
        (
            "mask_bytes",
            264,
            vec![Buf(4 * n), Buf(n / 8), Buf(4 * n), I64(n as i64)],
            1,
            1,
        ),
        (
            "box_clamp",
            391,
            vec![Buf(400_000), Buf(400_000), I32(100_000), I32(4)],
            0,
            0,
        ),
        (
            "suffix_pairs",
            12,
            vec![Buf(6000), Buf(12_000), I32(3000)],
            0,
            1,
        ),
        (
            "quad_first",
            132,
            vec![Buf(800_000), Buf(800_000), I32(200_000)],
            0,
            0,
        ),
    ];
    for planted in [false, true] {
        let (_, ptx) = ptx(planted, arch);
        let shape = InstrumentOptions::new()
            .host_checks(true)
            .block([256, 1, 1]);
        let host = instrument_ptx_with(&ptx, &shape).unwrap();
        for (name, grid, args, bad, in_loops) in &launches {
            let k = host.kernels.iter().find(|k| k.name == *name).unwrap();
            let failing = failing_set(k, [*grid, 1, 1], [256, 1, 1], args);
            let failing_on_bad = k
                .host_checks
                .iter()
                .enumerate()
                .filter(|(i, c)| failing.contains(*i) && c.param == *bad as u32)
                .count();
            let build = instrument_ptx_with(&ptx, &shape.on_device(failing)).unwrap();
            let kb = build.kernels.iter().find(|k| k.name == *name).unwrap();
            let c = &kb.coverage;
            println!(
                "{name} (planted: {planted}): {} host checks fail ({failing_on_bad} on the planted buffer); {c:?}",
                failing.len()
            );
            let left = c.checked - c.hoisted;
            if planted {
                let sites = kb
                    .sites
                    .iter()
                    .filter(|s| s.target == cudacheck_core::instrument::Target::Param(*bad as u32))
                    .count();
                assert!(
                    sites > 0,
                    "{name}: the overrun buffer is checked on the device"
                );
            } else {
                assert!(
                    left <= *in_loops,
                    "{name}: {left} device checks in loops: {c:?}"
                );
            }
            assemble_ptx(&build.ptx, arch, name).expect("assembles");
        }
    }
}
