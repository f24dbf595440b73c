//! NVRTC tier: bounds checking on what NVRTC really compiles. Every kernel of `kernels/`, of the
//! planted bugs of the GPU tier and of `tests/cuda/forms.cu` (macro-generated, helper-indexed,
//! templated, `float4`, aligned dynamic shared) is compiled to PTX, instrumented and assembled
//! by nvJitLink; each kernel takes one hidden length per parameter plus the record, keeps the
//! plain build's parameter layout in front of them, and has every access checked. Needs NVRTC
//! and nvJitLink, no GPU.

use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions, CudaSource};
use cudacheck_core::cubin::read_cubin;
use cudacheck_core::instrument::{
    hidden_params, instrument_ptx, instrument_ptx_with, InstrumentOptions, SkipReason, Target,
};
use cudacheck_core::Arch;
use cudacheck_tests::{kernel_files, nvrtc_or_skip, repo_root};

fn sources() -> Vec<CudaSource> {
    let mut v: Vec<CudaSource> = kernel_files()
        .iter()
        .map(|f| CudaSource::from_file(repo_root().join("kernels").join(f)).unwrap())
        .collect();
    assert!(v.len() >= 10, "kernels/ should hold 10 files");
    for f in [
        "tests/cuda/planted/bugs.cu",
        "tests/cuda/forms.cu",
        "tests/cuda/planted/misaligned.cu",
    ] {
        v.push(CudaSource::from_file(repo_root().join(f)).unwrap());
    }
    v
}

fn ptx_of(src: &CudaSource, arch: Arch) -> (Vec<u8>, String) {
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let out = compile(src, &opts).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    (out.cubin, out.ptx.expect("asked for PTX"))
}

#[test]
fn nvrtc_every_kernel_is_checked_assembles_and_keeps_its_parameters() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut kernels = 0;
    for arch in ["sm_80", "sm_90"] {
        let arch: Arch = arch.parse().unwrap();
        for src in sources() {
            let (plain_cubin, ptx) = ptx_of(&src, arch);
            let inst = instrument_ptx(&ptx).unwrap_or_else(|e| panic!("{}: {e}", src.name));
            let checked = assemble_ptx(&inst.ptx, arch, &src.name)
                .unwrap_or_else(|e| panic!("{} ({}): {e}", src.name, arch.sm_name()));
            let plain = read_cubin(&plain_cubin).unwrap();
            let checked = read_cubin(&checked.cubin).unwrap();
            assert_eq!(plain.kernels.len(), inst.kernels.len(), "{}", src.name);
            for k in &inst.kernels {
                let p = plain.kernel(&k.symbol).expect("plain kernel");
                let c = checked.kernel(&k.symbol).expect("checked kernel");
                let n = p.params.len();
                assert_eq!(k.num_params as usize, n, "{}", k.name);
                assert_eq!(c.params.len(), n + hidden_params(n), "{}", k.name);
                assert_eq!(
                    &c.params[..n],
                    &p.params[..],
                    "{}: user params moved",
                    k.name
                );
                assert!(
                    c.params[n..].iter().all(|q| q.size == 8),
                    "{}: hidden params are 8 bytes",
                    k.name
                );
                assert!(
                    k.coverage.is_complete(),
                    "{} in {}: {:?}",
                    k.name,
                    src.name,
                    k.coverage.unchecked
                );
                assert!(
                    k.coverage.checked + k.coverage.proven > 0,
                    "{}: nothing checked",
                    k.name
                );
                kernels += 1;
            }
        }
    }
    assert!(kernels >= 2 * 35, "{kernels}");
}

/// Each form of `forms.cu` is reached: the site of the fault the GPU test plants is a checked
/// site on the marked line, against the right buffer.
#[test]
fn nvrtc_forms_have_checked_sites_on_their_lines() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource::from_file(repo_root().join("tests/cuda/forms.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, "sm_90".parse().unwrap());
    let inst = instrument_ptx(&ptx).unwrap();
    let line_of = |mark: &str| {
        1 + src
            .text
            .lines()
            .position(|l| l.contains(&format!("SITE({mark})")))
            .unwrap_or_else(|| panic!("no SITE({mark})")) as u32
    };
    let sites_on = |kernel: &str, line: u32| {
        let k = inst
            .kernels
            .iter()
            .find(|k| k.name == kernel)
            .unwrap_or_else(|| panic!("no kernel {kernel}"));
        k.sites
            .iter()
            .filter(|s| s.loc.as_ref().is_some_and(|l| l.line == line))
            .cloned()
            .collect::<Vec<_>>()
    };
    // Macro-generated: NVRTC's line information puts the expanded body on the invocation line.
    let s = sites_on("uneg_f32", line_of("uneg_f32"));
    assert!(
        s.iter()
            .any(|s| matches!(&s.target, Target::OneOf(t) if t.len() == 2)),
        "`inp ? inp : out` is checked against whichever it holds: {s:?}"
    );
    assert!(s.iter().any(|s| s.target == Target::Param(4)), "{s:?}");
    // A helper two calls deep: the site is in the helper, inlined into `gather`.
    let s = sites_on("gather", line_of("load_at"));
    assert!(
        s.iter()
            .any(|s| s.target == Target::Param(0) && s.inlined_at.is_some()),
        "{s:?}"
    );
    // The strided-index helper reads `info`: parameter 2.
    let s = sites_on("uneg_f32", line_of("strided_helper"));
    assert!(s.iter().any(|s| s.target == Target::Param(2)), "{s:?}");
    // float4: a 16-byte access.
    let s = sites_on("copy_vec4", line_of("copy_vec4"));
    assert!(
        s.iter()
            .any(|s| s.bytes == 16 && s.target == Target::Param(0)),
        "{s:?}"
    );
    // Both template instantiations.
    for k in ["axpy<float>", "axpy<double>"] {
        assert!(!sites_on(k, line_of("axpy")).is_empty(), "{k}");
    }
    // Aligned dynamic shared memory, by its name.
    let s = sites_on("reverse_block", line_of("reverse_block"));
    assert!(
        s.iter().any(|s| s.target == Target::Var("smem".into())),
        "{s:?}"
    );
    // `ldmatrix` in inline assembly: one 16-byte row per lane of the dynamic shared tile.
    for mark in ["ldmatrix", "ldmatrix_x2"] {
        let s = sites_on("ldmatrix_rows", line_of(mark));
        assert!(
            s.iter()
                .any(|s| s.bytes == 16 && s.target == Target::Var("tile".into())),
            "{mark}: {s:?}"
        );
    }
}

/// What cannot be checked is listed with the line and the reason, never dropped.
#[test]
fn nvrtc_unchecked_accesses_are_listed_with_reasons() {
    if !nvrtc_or_skip() {
        return;
    }
    let text = r#"
__device__ __noinline__ float far_away(const float* p, int i) { return p[i]; }
extern "C" __global__ void k(float** table, float* out, int n)
{
    int i = threadIdx.x;
    float* row = table[i];
    out[i] = row[0] + far_away(out, n);
}
"#;
    let src = CudaSource::from_str("unchecked.cu", text);
    let (_, ptx) = ptx_of(&src, "sm_90".parse().unwrap());
    let inst = instrument_ptx(&ptx).unwrap();
    let k = &inst.kernels[0];
    let reasons: Vec<&SkipReason> = k.coverage.unchecked.iter().map(|u| &u.reason).collect();
    assert!(reasons.contains(&&SkipReason::LoadedPointer), "{reasons:?}");
    assert!(
        reasons.iter().any(
            |r| matches!(r, SkipReason::NotInlined { function } if function.contains("far_away"))
        ),
        "{reasons:?}"
    );
    // `table[i]` and `out[i]` are still checked.
    assert!(k.coverage.checked >= 2, "{:?}", k.coverage);
    assert!(k
        .coverage
        .unchecked
        .iter()
        .all(|u| u.loc.as_ref().is_some_and(|l| l.line > 0)));
}

/// With the block it is launched with (16 x 16), matmul's shared tiles `as[threadIdx.y][kk]`
/// and `bs[kk][threadIdx.x]` are proven in bounds: no check is emitted for them, only for the
/// parameter buffers, and the result still assembles.
#[test]
fn nvrtc_matmul_tiles_are_proven_with_its_block() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("kernels/matmul.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let before = instrument_ptx(&ptx).unwrap();
    let opts = InstrumentOptions::new().block([16, 16, 1]);
    let after = instrument_ptx_with(&ptx, &opts).unwrap();
    let (b, a) = (&before.kernels[0], &after.kernels[0]);
    assert!(a.coverage.is_complete(), "{:?}", a.coverage);
    assert_eq!(
        a.coverage.checked + a.coverage.proven,
        b.coverage.checked + b.coverage.proven,
        "every access is still accounted for"
    );
    assert!(
        a.sites.iter().all(|s| matches!(s.target, Target::Param(_))),
        "a shared access is still checked: {:?}",
        a.sites
    );
    assert!(
        a.coverage.checked < b.coverage.checked,
        "{:?} vs {:?}",
        a.coverage,
        b.coverage
    );
    assemble_ptx(&after.ptx, arch, &src.name).unwrap_or_else(|e| panic!("{e}"));
}

/// The launch shape each kernel of `kernels/` is benchmarked with (examples/bench_instrument.rs).
fn bench_shape(file: &str) -> InstrumentOptions {
    let o = InstrumentOptions::new();
    match file {
        "matmul.cu" => o.block([16, 16, 1]),
        "stencil2d.cu" | "transpose.cu" => o.block([32, 8, 1]),
        "reduce.cu" => o.block([256, 1, 1]).dynamic_shared_bytes(1024),
        "nbody.cu" | "window_median.cu" => o.block([128, 1, 1]),
        _ => o.block([256, 1, 1]),
    }
}

/// Every kernel of `kernels/` with its benchmark's launch shape still assembles with complete
/// coverage; prints, per kernel, the run-time checks and ptxas's registers without and with the
/// shape (`--nocapture` to read them).
#[test]
fn nvrtc_kernels_with_their_launch_shape_assemble_and_check_less() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    println!(
        "kernel: run-time checks before (per access, no shape) -> now (with shape and groups), \
         proven, grouped accesses in groups; registers plain / before / now"
    );
    for f in kernel_files() {
        let src = CudaSource::from_file(repo_root().join("kernels").join(&f)).unwrap();
        let (plain_cubin, ptx) = ptx_of(&src, arch);
        let before = instrument_ptx(&ptx).unwrap();
        let after = instrument_ptx_with(&ptx, &bench_shape(&f)).unwrap();
        let regs = |cubin: &[u8], sym: &str| {
            read_cubin(cubin)
                .unwrap()
                .kernel(sym)
                .map_or(0, |k| k.registers)
        };
        let cb = assemble_ptx(&before.ptx, arch, &src.name).unwrap().cubin;
        let ca = assemble_ptx(&after.ptx, arch, &src.name)
            .unwrap_or_else(|e| panic!("{f}: {e}"))
            .cubin;
        for (b, a) in before.kernels.iter().zip(&after.kernels) {
            assert!(a.coverage.is_complete(), "{}: {:?}", a.name, a.coverage);
            assert!(a.coverage.checked <= b.coverage.checked, "{}", a.name);
            let c = &a.coverage;
            println!(
                "{}: {} -> {}, {} proven, {} in {} groups; registers {} / {} / {}",
                a.name,
                b.coverage.checked,
                c.checked - c.grouped + c.group_checks,
                c.proven,
                c.grouped,
                c.group_checks,
                regs(&plain_cubin, &a.symbol),
                regs(&cb, &a.symbol),
                regs(&ca, &a.symbol),
            );
        }
    }
}

/// nbody's unrolled loop reads `pos[j + u]` for `u` in 0..16 through one register at constant
/// offsets: one group, one range check, each load still with its own check on the slow path.
#[test]
fn nvrtc_nbody_unrolled_loads_form_one_group() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("kernels/nbody.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let out = instrument_ptx_with(&ptx, &InstrumentOptions::new().block([128, 1, 1])).unwrap();
    let c = &out.kernels[0].coverage;
    assert!(c.is_complete(), "{c:?}");
    // The 16 loads of the unrolled loop, and the 4 of the remainder loop NVVM unrolls by 4.
    assert_eq!((c.grouped, c.group_checks), (20, 2), "{c:?}");
    // One out-of-line copy holds all 16 loads of the unrolled body, each behind its check.
    let sixteen = out.ptx.split("\n$__cc_slow").skip(1).any(|copy| {
        let copy = &copy[..copy.find("bra $__cc_join").unwrap_or(copy.len())];
        copy.matches("ld.global.nc.v4.f32").count() == 16
            && copy.matches("bra $__cc_cold").count() == 16
    });
    assert!(sixteen, "no group of the 16 unrolled loads");
    assemble_ptx(&out.ptx, arch, &src.name).unwrap_or_else(|e| panic!("{e}"));
}

/// The body of `entry` in `ptx`.
fn entry_body<'p>(ptx: &'p str, entry: &str) -> &'p str {
    let start = ptx
        .find(&format!(".entry {entry}("))
        .unwrap_or_else(|| panic!("no entry {entry}"));
    let rest = &ptx[start..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// Kernels with a loop and no barrier or warp collective are split into a fast copy whose
/// failed checks leave for a slow copy (instrument/fast.rs): the fast copy has no way back
/// from a cold path, the slow copy is the whole checked body, and both assemble. A kernel
/// with a barrier keeps one body.
#[test]
fn nvrtc_loop_kernels_get_a_fast_copy_that_leaves_on_a_failed_check() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("tests/cuda/forms.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let inst = instrument_ptx(&ptx).unwrap();
    let body = entry_body(&inst.ptx, "window_sum");
    let (fast, slow) = body
        .split_once("the slow copy, entered only from a failed check")
        .expect("window_sum is split");
    let leaves: Vec<&str> = fast
        .lines()
        .filter(|l| l.trim_start().starts_with("@%__cc_p bra"))
        .collect();
    assert!(!leaves.is_empty(), "{fast}");
    for l in &leaves {
        assert!(
            l.trim_end().ends_with("__s;"),
            "leaves for the slow copy: {l}"
        );
    }
    assert!(
        !fast.contains("$__cc_cont"),
        "no way back in the fast copy: {fast}"
    );
    assert!(
        !fast
            .lines()
            .any(|l| l.trim().starts_with("$__cc_cold") && l.trim().ends_with(':')),
        "no cold block in the fast copy"
    );
    assert!(
        slow.contains("$__cc_cold") && slow.contains("ld.global"),
        "{slow}"
    );
    assert!(!entry_body(&inst.ptx, "reverse_block").contains("slow copy"));
    assemble_ptx(&inst.ptx, arch, &src.name).expect("split kernels assemble");
    // And with launch-shape facts, as a launch builds it.
    let shaped = instrument_ptx_with(
        &ptx,
        &InstrumentOptions::new()
            .block([256, 1, 1])
            .dynamic_shared_bytes(1024),
    )
    .unwrap();
    assemble_ptx(&shaped.ptx, arch, &src.name).expect("assembles with a shape");
}

/// Accesses the kernel's own guard keeps in bounds (`if (i < n) out[i]`) get no
/// device check in the build a launch tries first; the launch checks them once on the host
/// (`cudacheck_core::instrument::guard`). Every access is still counted once, and the host
/// checks hold for the benchmark's arguments but not for a `n` one past the buffer (the
/// planted bug: that launch runs the fully checked build). `--nocapture` lists them.
#[test]
fn nvrtc_guarded_accesses_are_checked_on_the_host() {
    use cudacheck_core::instrument::LaunchValues;
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let mut by_name = std::collections::BTreeMap::new();
    for f in kernel_files() {
        let src = CudaSource::from_file(repo_root().join("kernels").join(&f)).unwrap();
        let (_, ptx) = ptx_of(&src, arch);
        let full = instrument_ptx_with(&ptx, &bench_shape(&f)).unwrap();
        let host = instrument_ptx_with(&ptx, &bench_shape(&f).host_checks(true)).unwrap();
        assemble_ptx(&host.ptx, arch, &src.name).unwrap_or_else(|e| panic!("{f}: {e}"));
        for (a, b) in full.kernels.iter().zip(&host.kernels) {
            let (ca, cb) = (&a.coverage, &b.coverage);
            assert!(cb.is_complete(), "{}", b.name);
            assert!(a.host_checks.is_empty());
            assert_eq!(
                ca.checked + ca.proven,
                cb.checked + cb.proven + cb.host_checked,
                "{}: every access counted once",
                b.name
            );
            assert_eq!(cb.host_checked as usize, b.host_checks.len());
            println!(
                "{}: {} device checks -> {}, {} checked on the host:",
                b.name, ca.checked, cb.checked, cb.host_checked
            );
            for h in &b.host_checks {
                let at = h.loc.as_ref().map_or_else(String::new, |l| l.to_string());
                println!(
                    "    {at}: {} of {} bytes, parameter {}",
                    h.kind, h.bytes, h.param
                );
            }
            by_name.insert(b.name.clone(), b.clone());
        }
    }
    for (k, n) in [
        ("reduce_sum", 3),
        ("softmax_rows", 4),
        ("transpose", 8),
        ("saxpy", 3),
    ] {
        assert!(
            by_name[k].coverage.host_checked >= n,
            "{k}: {:?}",
            by_name[k].coverage
        );
    }
    let holds =
        |k: &str, grid: [u32; 3], block: [u32; 3], scalars: &[Option<(u64, u32)>], lens: &[u64]| {
            by_name[k].host_checks_hold(&LaunchValues {
                grid,
                block,
                scalars,
                lens,
            })
        };
    let m = u64::MAX;
    // reduce_sum(partial, in, n) as the benchmark launches it: 2^26 floats, 512 per block.
    let n: u64 = 1 << 26;
    let blocks = n.div_ceil(512) as u32;
    let args = |n: u64| [None, None, Some((n, 4))];
    let lens = [u64::from(blocks) * 4, (1 << 26) * 4, m];
    assert!(holds(
        "reduce_sum",
        [blocks, 1, 1],
        [256, 1, 1],
        &args(n),
        &lens
    ));
    // `n` one past `in` with a grid that covers it (the planted bug); with the benchmark's
    // grid no thread reaches element n, and the host check rightly holds.
    assert!(holds(
        "reduce_sum",
        [blocks, 1, 1],
        [256, 1, 1],
        &args(n + 1),
        &lens
    ));
    let lens1 = [u64::from(blocks + 1) * 4, (1 << 26) * 4, m];
    assert!(!holds(
        "reduce_sum",
        [blocks + 1, 1, 1],
        [256, 1, 1],
        &args(n + 1),
        &lens1
    ));
    assert!(holds(
        "reduce_sum",
        [blocks + 1, 1, 1],
        [256, 1, 1],
        &args(n),
        &lens1
    ));
    // One block too many: `partial[blockIdx.x]` is past its buffer.
    assert!(!holds(
        "reduce_sum",
        [blocks + 1, 1, 1],
        [256, 1, 1],
        &args(n),
        &lens
    ));
    // saxpy(y, x, a, n)
    let a = Some((1.5f32.to_bits() as u64, 4));
    let sx = |n: u64| [None, None, a, Some((n, 4))];
    let lens = [4 << 20, 4 << 20, m, m];
    assert!(holds(
        "saxpy",
        [4096, 1, 1],
        [256, 1, 1],
        &sx(1 << 20),
        &lens
    ));
    assert!(!holds(
        "saxpy",
        [4097, 1, 1],
        [256, 1, 1],
        &sx((1 << 20) + 1),
        &lens
    ));
    assert!(holds(
        "saxpy",
        [4097, 1, 1],
        [256, 1, 1],
        &sx(1 << 20),
        &lens
    ));
    // transpose(out, in, rows, cols), 8192 x 8192, block (32, 8), grid (256, 256).
    let tr = |r: u64, c: u64| [None, None, Some((r, 4)), Some((c, 4))];
    let lens = [4 << 26, 4 << 26, m, m];
    assert!(holds(
        "transpose",
        [256, 256, 1],
        [32, 8, 1],
        &tr(8192, 8192),
        &lens
    ));
    assert!(!holds(
        "transpose",
        [256, 256, 1],
        [32, 8, 1],
        &tr(8192, 8193),
        &lens
    ));
    // softmax_rows(out, in, rows, cols), 16384 x 4096, one block per row.
    let sm = |r: u64, c: u64| [None, None, Some((r, 4)), Some((c, 4))];
    let lens = [4 << 26, 4 << 26, m, m];
    assert!(holds(
        "softmax_rows",
        [16384, 1, 1],
        [256, 1, 1],
        &sm(16384, 4096),
        &lens
    ));
    assert!(!holds(
        "softmax_rows",
        [16384, 1, 1],
        [256, 1, 1],
        &sm(16384, 4097),
        &lens
    ));
    // cols near i32::MAX: the loop's `c += blockDim.x` could wrap negative.
    assert!(!holds(
        "softmax_rows",
        [1, 1, 1],
        [256, 1, 1],
        &sm(1, (i32::MAX - 10) as u64),
        &[m, m, m, m]
    ));
}

/// Candle's rope kernels once differed plain vs checked: `x * c - y * s` is a `mul.f32`
/// and a `sub.f32` without rounding modifiers, which ptxas contracts into an FMA with one of
/// the products *in the same basic block*. Checks between a multiply and the subtract it feeds
/// made ptxas pick the other product (a last-bit difference). In the checked build every such
/// multiply sits right before its add or subtract, with no label or branch between
/// (instrument/contract.rs). The `__ldg` read (`ld.global.nc` on a generic address) is checked,
/// and nothing is left unchecked.
#[test]
fn nvrtc_checks_do_not_split_a_multiply_from_the_add_it_may_fuse_into() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("tests/cuda/forms.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let inst = instrument_ptx(&ptx).unwrap();
    for (entry, ty) in [("rotate_f32", "f32"), ("rotate_f64", "f64")] {
        let k = inst.kernel(entry).unwrap();
        assert!(k.coverage.unchecked.is_empty(), "{entry}: {:?}", k.coverage);
        assert!(k.coverage.checked >= 6, "{entry}: {:?}", k.coverage);
        let body = entry_body(&inst.ptx, entry);
        let lines: Vec<&str> = body
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with(".loc") && !l.starts_with("//"))
            .collect();
        let mul = format!("mul.{ty}");
        let mut pairs = 0;
        for (a, l) in lines.iter().enumerate() {
            if !l.starts_with(&mul) {
                continue;
            }
            let dest = l[mul.len()..].trim().split(',').next().unwrap().trim();
            let Some(u) = lines[a + 1..].iter().position(|m| {
                (m.starts_with(&format!("sub.{ty}")) || m.starts_with(&format!("add.{ty}")))
                    && m.contains(&format!("{dest},")) | m.ends_with(&format!("{dest};"))
            }) else {
                continue;
            };
            let between = &lines[a + 1..a + 1 + u];
            assert!(
                between
                    .iter()
                    .all(|m| m.starts_with(&mul) && !m.contains("bra") && !m.ends_with(':')),
                "{entry}: `{l}` is split from its add by {between:#?}"
            );
            pairs += 1;
        }
        assert!(pairs >= 1, "{entry}: no multiply feeding an add: {body}");
        // The `__ldg` read: inline assembly `ld.global.nc` right after its check.
        let ldg = lines
            .iter()
            .position(|l| l.starts_with("ld.global.nc"))
            .unwrap_or_else(|| panic!("{entry}: no ld.global.nc in {body}"));
        assert!(
            lines[..ldg]
                .iter()
                .rev()
                .take(3)
                .any(|l| l.starts_with("@%__cc_p bra")),
            "{entry}: the __ldg read is not checked: {:#?}",
            &lines[ldg.saturating_sub(6)..=ldg]
        );
    }
    assemble_ptx(&inst.ptx, arch, &src.name).expect("assembles");
}

/// Neighbourhood guards as NVVM compiles them: `yy >= 0 && xx >= 0` becomes one sign test of
/// `yy | xx`, `xx < w` a test of `x + 1`, and the address arithmetic is hoisted above the
/// guard; a pooling kernel's bound is computed from parameters and its indices are quotients
/// and remainders. The benchmark set's convolutions and pooling (`bench/kernels/stencil.cu`)
/// get no device check,
/// their host checks hold for the benchmark's launch, and fail for a launch whose width or
/// grid reaches past the buffers (that launch runs the fully checked build).
#[test]
fn nvrtc_neighbourhood_guards_are_checked_on_the_host() {
    use cudacheck_core::instrument::LaunchValues;
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("bench/kernels/stencil.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let m = u64::MAX;
    let some = |v: u64| Some((v, 4u32));
    // (kernel, block, [(grid, scalars, lens, holds)])
    type Launch = ([u32; 3], Vec<Option<(u64, u32)>>, Vec<u64>, bool);
    let (c, h, w) = (16u64, 2048u64, 2048u64);
    let conv3 = |w_arg: u64, grid_z: u32, holds: bool| -> Launch {
        (
            [64, 256, grid_z],
            vec![None, None, None, some(c), some(h), some(w_arg)],
            vec![c * h * w * 4, c * h * w * 4, c * 9 * 4, m, m, m],
            holds,
        )
    };
    let (ch, len) = (256u64, 256u64 << 10);
    let conv1 = |grid_y: u32, len_arg: u64, holds: bool| -> Launch {
        (
            [(len / 256) as u32, grid_y, 1],
            vec![None, None, None, None, some(ch), some(len_arg)],
            vec![ch * len * 4, ch * len * 4, ch * 7 * 4, ch * 4, m, m],
            holds,
        )
    };
    // maxpool2x2_nchw(out, in, planes, h, w): `i < planes * ((h + 1) / 2) * ((w + 1) / 2)`,
    // then `i % ow`, `(i / ow) % oh`, `i / (ow * oh)`: a bound computed from parameters and
    // indices from quotients and remainders.
    let (p, ph, pw) = (64u64, 1023u64, 1023u64);
    let outs = p * ph.div_ceil(2) * pw.div_ceil(2);
    let pool = |in_len: u64, holds: bool| -> Launch {
        (
            [outs.div_ceil(256) as u32, 1, 1],
            vec![None, None, some(p), some(ph), some(pw)],
            vec![outs * 4, in_len, m, m, m],
            holds,
        )
    };
    let cases: [(&str, [u32; 3], Vec<Launch>); 3] = [
        (
            "conv3x3_guarded",
            [32, 8, 1],
            vec![
                conv3(w, 16, true),
                conv3(w + 1, 16, false),
                // More channels launched than `channels`: the guard returns early.
                conv3(w, 17, true),
            ],
        ),
        (
            "conv1d_depthwise",
            [256, 1, 1],
            vec![
                conv1(ch as u32, len, true),
                conv1(ch as u32 + 1, len, false),
                conv1(ch as u32, len + 1, false),
            ],
        ),
        (
            "maxpool2x2_nchw",
            [256, 1, 1],
            vec![
                pool(p * ph * pw * 4, true),
                pool(p * ph * pw * 4 - 4, false),
            ],
        ),
    ];
    for (name, block, launches) in cases {
        let host = instrument_ptx_with(
            &ptx,
            &InstrumentOptions::new().block(block).host_checks(true),
        )
        .unwrap();
        assemble_ptx(&host.ptx, arch, &src.name).unwrap();
        let k = host.kernels.iter().find(|k| k.name == name).unwrap();
        assert!(k.coverage.is_complete(), "{name}");
        assert_eq!(k.coverage.checked, 0, "{name}: {:?}", k.coverage);
        assert!(k.coverage.host_checked >= 5, "{name}: {:?}", k.coverage);
        for (grid, scalars, lens, expect) in launches {
            let v = LaunchValues {
                grid,
                block,
                scalars: &scalars,
                lens: &lens,
            };
            let failing: Vec<_> = k
                .host_checks
                .iter()
                .filter(|h| !h.holds(&v))
                .filter_map(|h| h.loc.as_ref().map(|l| l.line))
                .collect();
            assert_eq!(
                failing.is_empty(),
                expect,
                "{name} grid {grid:?} scalars {scalars:?}: failing at lines {failing:?}"
            );
        }
    }
}

/// A launch that fails some host checks runs a build checking exactly those on the device.
/// `badd_f32` (`bench/kernels/elementwise.cu`, candle's broadcasting binary op) reads `rhs`
/// through `i` on its contiguous path and through a strided index otherwise; with a broadcast
/// `rhs` of one row, the contiguous path's host check on `rhs` fails (it is not taken at run
/// time, but nothing on the host knows that), and only those accesses go back to the device.
#[test]
fn nvrtc_failing_host_checks_alone_are_checked_on_the_device() {
    use cudacheck_core::instrument::{HostCheckSet, LaunchValues};
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("bench/kernels/elementwise.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let shape = InstrumentOptions::new()
        .block([256, 1, 1])
        .host_checks(true);
    let base = instrument_ptx_with(&ptx, &shape).unwrap();
    let k = base.kernels.iter().find(|k| k.name == "badd_f32").unwrap();
    let (n, d1) = (8192u64 * 8192, 8192u64);
    let m = u64::MAX;
    let scalars = [Some((n, 8)), Some((2, 8)), None, None, None, None];
    let lens = [m, m, 6 * 8, n * 4, d1 * 4, n * 4];
    let v = LaunchValues {
        grid: [(n / 256) as u32, 1, 1],
        block: [256, 1, 1],
        scalars: &scalars,
        lens: &lens,
    };
    let failing = k.failing_host_checks(&v).expect("fewer than 256");
    assert!(!failing.is_empty() && failing.len() < k.host_checks.len());
    for (pos, h) in k.host_checks.iter().enumerate() {
        assert_eq!(failing.contains(pos), !h.holds(&v));
        if failing.contains(pos) {
            assert_eq!(h.param, 4, "only reads of the broadcast rhs fail: {h:?}");
        }
    }
    // Every lens fits when rhs is as long as the output: nothing fails.
    let full = [m, m, 6 * 8, n * 4, n * 4, n * 4];
    let all = LaunchValues { lens: &full, ..v };
    assert_eq!(k.failing_host_checks(&all), Some(HostCheckSet::new()));

    let variant = instrument_ptx_with(&ptx, &shape.on_device(failing)).unwrap();
    assemble_ptx(&variant.ptx, arch, &src.name).unwrap();
    let kv = variant
        .kernels
        .iter()
        .find(|k| k.name == "badd_f32")
        .unwrap();
    let (c, cv) = (&k.coverage, &kv.coverage);
    assert_eq!(cv.host_checked + failing.len() as u32, c.host_checked);
    assert_eq!(cv.checked, c.checked + failing.len() as u32);
    assert!(cv.is_complete());
    // The build left lists the host checks that held, in order, and they hold.
    let kept: Vec<_> = k
        .host_checks
        .iter()
        .enumerate()
        .filter(|(p, _)| !failing.contains(*p))
        .map(|(_, h)| h.clone())
        .collect();
    assert_eq!(kv.host_checks, kept);
    assert!(kv.host_checks_hold(&v));
}

/// Fixed-size shared arrays under the user's guards and loops (a tiled blur's halo loads
/// through `for (ty = threadIdx.y; ty < 12; ty += blockDim.y)`, a tree reduction's
/// `if (tid < stride) s[tid] += s[tid + stride]`): checked once on the host against the
/// array's size, which the PTX states, so no launch length is needed. With the benchmark's
/// block they hold and no device check is left; with a block taller than the tile, or wider
/// than the reduction's array, they fail (that launch runs a build checking them).
#[test]
fn nvrtc_shared_tiles_are_checked_on_the_host() {
    use cudacheck_core::instrument::LaunchValues;
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let m = u64::MAX;
    let some = |v: u64| Some((v, 4u32));
    let n = 1u64 << 20;
    let (h, w) = (8190u64, 8190u64);
    // (file, kernel, [(block, grid, scalars, lens, holds)])
    type Case = ([u32; 3], [u32; 3], Vec<Option<(u64, u32)>>, Vec<u64>, bool);
    let blur = |block: [u32; 3], holds: bool| -> Case {
        (
            block,
            [w.div_ceil(32) as u32, h.div_ceil(8) as u32, 1],
            vec![None, None, some(h), some(w)],
            vec![h * w * 4, h * w * 4, m, m],
            holds,
        )
    };
    let reduce = |block: [u32; 3], holds: bool| -> Case {
        let blocks = (n / 512) as u32;
        (
            block,
            [blocks, 1, 1],
            vec![None, None, some(n)],
            vec![u64::from(blocks) * 4, n * 4, m],
            holds,
        )
    };
    let cases = [
        (
            "stencil.cu",
            "blur5x5_tiled",
            vec![blur([32, 8, 1], true), blur([32, 16, 1], false)],
        ),
        (
            "reduce.cu",
            "block_reduce_sum<256>",
            vec![reduce([256, 1, 1], true), reduce([512, 1, 1], false)],
        ),
    ];
    for (file, name, launches) in cases {
        let src = CudaSource::from_file(repo_root().join("bench/kernels").join(file)).unwrap();
        let (_, ptx) = ptx_of(&src, arch);
        for (block, grid, scalars, lens, expect) in launches {
            let opts = InstrumentOptions::new().block(block).host_checks(true);
            let out = instrument_ptx_with(&ptx, &opts).unwrap();
            assemble_ptx(&out.ptx, arch, &src.name).unwrap();
            let k = out.kernels.iter().find(|k| k.name == name).unwrap();
            assert!(k.coverage.is_complete(), "{name}");
            assert!(
                k.host_checks.iter().any(|h| h.array_bytes.is_some()),
                "{name}"
            );
            if expect {
                assert_eq!(k.coverage.checked, 0, "{name}: {:?}", k.coverage);
            }
            let v = LaunchValues {
                grid,
                block,
                scalars: &scalars,
                lens: &lens,
            };
            assert_eq!(k.host_checks_hold(&v), expect, "{name} block {block:?}");
        }
    }
}

/// The `ldmatrix` check in each address form (a 32-bit register, a register plus an offset, a
/// symbol plus an offset, a generic 64-bit pointer; `x4`, `x2.trans`, a predicated `x1`,
/// `x4.trans`): hand-written PTX, since CUDA
/// code reaches `ldmatrix` only through inline assembly on a register. Each check and redirect
/// must assemble, for sm_80 and sm_90, with every row checked.
#[test]
fn nvrtc_ldmatrix_redirects_assemble_in_every_address_form() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.shared .align 16 .b8 tile[1024];\n.extern .shared .align 16 .b8 smem[];\n.visible .entry k(.param .u64 k_param_0)\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<40>;\n\t.reg .b64 %rd<40>;\n\tmov.u32 %r1, %tid.x;\n\tmov.u64 %rd1, smem;\n\tcvta.shared.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r1, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tcvta.to.shared.u64 %rd5, %rd4;\n\tcvt.u32.u64 %r2, %rd5;\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r2];\n\tmov.u32 %r3, tile;\n\tshl.b32 %r4, %r1, 4;\n\tadd.s32 %r5, %r3, %r4;\n\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r14, %r15}, [%r5+32];\n\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r16}, [smem+40];\n\tmov.u64 %rd10, tile;\n\tcvta.shared.u64 %rd11, %rd10;\n\tadd.s64 %rd12, %rd11, %rd3;\n\tldmatrix.sync.aligned.m8n8.x4.trans.b16 {%r20, %r21, %r22, %r23}, [%rd12];\n\tadd.s32 %r17, %r10, %r14;\n\tadd.s32 %r18, %r17, %r16;\n\tadd.s32 %r18, %r18, %r20;\n\tld.param.u64 %rd6, [k_param_0];\n\tcvta.to.global.u64 %rd7, %rd6;\n\tmul.wide.u32 %rd8, %r1, 4;\n\tadd.s64 %rd9, %rd7, %rd8;\n\tst.global.u32 [%rd9], %r18;\n\tret;\n}\n";
    let inst = instrument_ptx(ptx).unwrap();
    let k = &inst.kernels[0];
    assert!(k.coverage.is_complete(), "{:?}", k.coverage);
    assert_eq!(
        k.coverage.checked, 5,
        "four rows and the store: {:?}",
        k.coverage
    );
    assert_eq!(inst.ptx.matches("[%__cc_a32]").count(), 3, "{}", inst.ptx);
    assert_eq!(inst.ptx.matches("[%__cc_a64]").count(), 1, "{}", inst.ptx);
    for arch in ["sm_80", "sm_90"] {
        let arch: Arch = arch.parse().unwrap();
        assemble_ptx(&inst.ptx, arch, "ldmatrix.ptx")
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", arch.sm_name(), inst.ptx));
    }
}

/// Misaligned wide accesses: each kernel lists the widest access per buffer
/// parameter (what the launch checks a buffer's address against); the fully device-checked
/// build tests a wide access's alignment with its bounds and assembles; a host check of a wide
/// access holds only when its offset is a multiple of its width for the launch's values.
#[test]
fn nvrtc_wide_accesses_are_checked_for_alignment() {
    if !nvrtc_or_skip() {
        return;
    }
    use cudacheck_core::instrument::LaunchValues;
    let arch = Arch::new(9, 0);
    let src = CudaSource::from_file(repo_root().join("tests/cuda/planted/misaligned.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let hosted = instrument_ptx_with(&ptx, &InstrumentOptions::new().host_checks(true)).unwrap();
    let widest = |name: &str| -> Vec<(u32, u32)> {
        let k = hosted.kernels.iter().find(|k| k.symbol == name).unwrap();
        k.widest.iter().map(|w| (w.param, w.bytes)).collect()
    };
    assert_eq!(widest("copy4"), [(0, 16), (1, 16)]);
    assert_eq!(widest("copy4_skewed"), [(0, 16), (1, 16)]);
    assert_eq!(widest("fill_half2"), [(0, 4)]);
    assert_eq!(widest("read8"), [(0, 8), (1, 8)]);
    // copy4_skewed's read at `in + skew`: held on the host for skew = 4 (16 bytes), not for
    // skew = 1, which then goes to the device check.
    let k = hosted
        .kernels
        .iter()
        .find(|k| k.symbol == "copy4_skewed")
        .unwrap();
    let values = |skew: u64| {
        let scalars = [None, None, Some((skew, 4)), Some((256u64, 4))];
        let lens = [4096u64, 4112, u64::MAX, u64::MAX];
        k.host_checks_hold(&LaunchValues {
            grid: [2, 1, 1],
            block: [128, 1, 1],
            scalars: &scalars,
            lens: &lens,
        })
    };
    assert!(values(4), "{:?}", k.host_checks);
    assert!(!values(1), "{:?}", k.host_checks);
    // On the device: the alignment test beside the bounds test, and it assembles.
    let device = instrument_ptx_with(&ptx, &InstrumentOptions::new().host_checks(false)).unwrap();
    for needle in [
        "and.b64 %__cc_m, ",
        "setp.ne.u64 %__cc_v, %__cc_m, 0;",
        "or.pred %__cc_p, %__cc_p, %__cc_v;",
    ] {
        assert!(device.ptx.contains(needle), "no `{needle}`");
    }
    assemble_ptx(&device.ptx, arch, &src.name).unwrap_or_else(|e| panic!("{e}"));
}

/// Loads and stores inside loops whose offsets are affine in the loop's counter and
/// launch values (`tests/cuda/loops.cu`: a column sum, a strided loop with a runtime trip
/// count, a 3-D stencil's z loop, a loop counting down) are checked once per launch on the
/// host over every iteration the loop's exit test allows (`guard.rs`, `Counted`), so the
/// loop runs without per-access device checks. The checks hold for buffers that fit exactly
/// and fail for one element less (that launch runs the build that checks on the device).
#[test]
fn nvrtc_loop_accesses_are_checked_once_over_every_iteration() {
    use cudacheck_core::instrument::{InstrumentedKernel, LaunchValues};
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("tests/cuda/loops.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let out = instrument_ptx_with(&ptx, &InstrumentOptions::new().host_checks(true)).unwrap();
    assemble_ptx(&out.ptx, arch, &src.name).unwrap();
    let k = |name: &str| -> &InstrumentedKernel {
        out.kernels.iter().find(|k| k.name == name).unwrap()
    };
    for kernel in &out.kernels {
        println!(
            "{}: {} device checks, {} on the host",
            kernel.name, kernel.coverage.checked, kernel.coverage.host_checked
        );
        assert!(kernel.coverage.is_complete(), "{}", kernel.name);
    }
    let holds = |name: &str,
                 grid: [u32; 3],
                 block: [u32; 3],
                 scalars: &[Option<(u64, u32)>],
                 lens: &[u64]| {
        let kernel = k(name);
        assert_eq!(
            kernel.coverage.checked, 0,
            "{name}: no device check left: {kernel:?}"
        );
        let v = LaunchValues {
            grid,
            block,
            scalars,
            lens,
        };
        for h in &kernel.host_checks {
            if std::env::var_os("CC_DEBUG").is_some() && !h.holds(&v) {
                println!("{name}: fails: {h:?}");
            }
        }
        kernel.host_checks_hold(&v)
    };

    // column_sum(in, out, rows, cols): 1000 rows, 300 columns, blocks of 128.
    let (rows, cols) = (1000u64, 300u64);
    let s = [None, None, Some((rows, 4)), Some((cols, 4))];
    let g = [3, 1, 1];
    let b = [128, 1, 1];
    assert!(holds("column_sum", g, b, &s, &[rows * cols * 4, cols * 4]));
    assert!(!holds(
        "column_sum",
        g,
        b,
        &s,
        &[rows * cols * 4 - 4, cols * 4]
    ));

    // strided_scale(x, count, stride, a): x[t + k * stride] for k < count, t < 64.
    let (count, stride) = (50u64, 64u64);
    let s = [None, Some((count, 4)), Some((stride, 4)), Some((0, 4))];
    let need = ((count - 1) * stride + 63 + 1) * 4;
    assert!(holds("strided_scale", [1, 1, 1], [64, 1, 1], &s, &[need]));
    assert!(!holds(
        "strided_scale",
        [1, 1, 1],
        [64, 1, 1],
        &s,
        &[need - 4]
    ));
    // One more iteration than the buffer holds.
    let s2 = [None, Some((count + 1, 4)), Some((stride, 4)), Some((0, 4))];
    assert!(!holds("strided_scale", [1, 1, 1], [64, 1, 1], &s2, &[need]));

    // z_column_diff(in, out, nx, ny, nz): 64 x 32 x 20, blocks of 32 x 8.
    let (nx, ny, nz) = (64u64, 32u64, 20u64);
    let s = [None, None, Some((nx, 4)), Some((ny, 4)), Some((nz, 4))];
    let vol = nx * ny * nz * 4;
    assert!(holds(
        "z_column_diff",
        [2, 4, 1],
        [32, 8, 1],
        &s,
        &[vol, vol]
    ));
    assert!(!holds(
        "z_column_diff",
        [2, 4, 1],
        [32, 8, 1],
        &s,
        &[vol, vol - 4]
    ));

    // bump_copy(out, in, ostride, istride, lanes, iters): the unrolled loop's pointers, merged
    // through copies (`mov`) at its bottom, and the remainder loop's, which starts from the
    // pointer the unrolled loop left, are all checked on the host.
    let bump = k("bump_copy");
    assert_eq!(bump.coverage.checked, 0, "{bump:?}");
    let (lanes, iters, stride) = (96u64, 41u64, 100u64);
    let s = [
        None,
        None,
        Some((stride, 8)),
        Some((stride, 8)),
        Some((lanes, 4)),
        Some((iters, 4)),
    ];
    let need = ((iters - 1) * stride + lanes) * 4;
    let v = |lens: &[u64]| {
        bump.host_checks_hold(&LaunchValues {
            grid: [1, 1, 1],
            block: [128, 1, 1],
            scalars: &s,
            lens,
        })
    };
    assert!(v(&[need, need]));
    assert!(!v(&[need, need - 4]));
    assert!(!v(&[need - 4, need]));

    // z_guarded_neighbours(out, in, n, nz): the neighbours at z - 1 and z + 1 are read only
    // for 0 < z < nz - 1, which the guards on the unrolled loop's counter say; a buffer one
    // element short fails, whatever the trip count's remainder.
    let zg = k("z_guarded_neighbours");
    // (One read of the remainder loop, through a pointer NVRTC rebuilds from the counter, is
    // checked on the device.)
    assert!(
        zg.coverage.checked <= 1 && zg.coverage.host_checked >= 20,
        "{:?}",
        zg.coverage
    );
    let n = 1000u64;
    for nz in [64u64, 67] {
        let s = [None, None, Some((n, 4)), Some((nz, 4))];
        let vol = n * nz * 4;
        let v = |lens: &[u64]| {
            zg.host_checks_hold(&LaunchValues {
                grid: [8, 1, 1],
                block: [128, 1, 1],
                scalars: &s,
                lens,
            })
        };
        if nz % 4 == 0 {
            assert!(v(&[vol, vol]), "nz = {nz}");
        }
        assert!(!v(&[vol, vol - 4]), "nz = {nz}");
        assert!(!v(&[vol - 4, vol]), "nz = {nz}");
    }

    // The planted loop bugs of the GPU tier (`tests/cuda/planted/bugs.cu`), with the GPU
    // test's launches: its good launch holds on the host, its bad ones do not.
    let bugs = CudaSource::from_file(repo_root().join("tests/cuda/planted/bugs.cu")).unwrap();
    let (_, bptx) = ptx_of(&bugs, arch);
    let bout = instrument_ptx_with(&bptx, &InstrumentOptions::new().host_checks(true)).unwrap();
    let bug = |name: &str,
               grid: [u32; 3],
               block: [u32; 3],
               scalars: &[Option<(u64, u32)>],
               lens: &[u64]| {
        let kernel = bout.kernels.iter().find(|k| k.name == name).unwrap();
        assert_eq!(kernel.coverage.checked, 0, "{name}: {kernel:?}");
        kernel.host_checks_hold(&LaunchValues {
            grid,
            block,
            scalars,
            lens,
        })
    };
    let (rows, cols) = (37u64, 64u64);
    let s = [None, None, Some((rows, 4)), Some((cols, 4))];
    let b = [64, 1, 1];
    assert!(bug(
        "loop_one_trip_too_many",
        [1, 1, 1],
        b,
        &s,
        &[cols * 4, (rows + 1) * cols * 4]
    ));
    let short = (rows * cols + cols - 1) * 4;
    assert!(!bug(
        "loop_one_trip_too_many",
        [1, 1, 1],
        b,
        &s,
        &[cols * 4, short]
    ));
    let s = |col: u64| [None, None, Some((rows, 4)), Some((cols, 4)), Some((col, 4))];
    let one = [1, 1, 1];
    assert!(bug(
        "loop_column_past_end",
        one,
        one,
        &s(cols - 1),
        &[4, rows * cols * 4]
    ));
    assert!(!bug(
        "loop_column_past_end",
        one,
        one,
        &s(cols),
        &[4, rows * cols * 4]
    ));

    // row_sum_backwards(in, out, cols): 40 rows of 77. NVRTC unrolls the count-down loop
    // with a trip count through `max`; the host checks are not yet exact for it (a launch
    // then runs the build that checks on the device), but a short buffer never passes.
    let s = [None, None, Some((77, 4))];
    assert!(!holds(
        "row_sum_backwards",
        [40, 1, 1],
        [32, 1, 1],
        &s,
        &[40 * 77 * 4 - 4, 40 * 4]
    ));
}

/// Whether a PTX line is an atomic or reduction of the user's code on global or generic memory
/// (not the cold blocks' own atomics on the fault record, not shared memory).
fn global_atomic(line: &str) -> bool {
    let t = line.trim_start();
    let t = t.strip_prefix('{').unwrap_or(t).trim_start();
    let t = if t.starts_with('@') {
        t.split_once(' ').map_or(t, |(_, r)| r.trim_start())
    } else {
        t
    };
    (t.starts_with("atom.") || t.starts_with("red."))
        && !t.contains(".shared")
        && !t.contains("[%__cc_r")
}

/// Atomics through a checked index (`tests/cuda/atomics.cu`; results/instrument_cost.md,
/// 2026-11-26): every global atomic's check redirects its address to the module's sink and
/// branches to the cold block after it, in every width NVRTC writes (2, 4, 8 and 16 bytes,
/// vector adds, CAS, exchange, an atomic in inline assembly), in the fast and slow copies of a
/// loop kernel, and with the launch-shape and host-check options a launch uses; no global
/// atomic has the branch before it any more; the shared-memory atomic keeps it. An atomic whose
/// result nothing reads is a reduction (`red`, `reduce.rs`). Every build assembles for sm_80
/// and sm_90, race-checked too.
#[test]
fn nvrtc_global_atomics_are_redirected_to_the_sink_in_every_width() {
    use cudacheck_core::instrument::SiteKind;
    use cudacheck_core::race::{race_ptx, RaceOptions};
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource::from_file(repo_root().join("tests/cuda/atomics.cu")).unwrap();
    for arch in ["sm_80", "sm_90"] {
        let arch: Arch = arch.parse().unwrap();
        let (_, ptx) = ptx_of(&src, arch);
        let shaped = InstrumentOptions::new()
            .block([256, 1, 1])
            .dynamic_shared_bytes(1024)
            .host_checks(true);
        for opts in [InstrumentOptions::new(), shaped] {
            let inst = instrument_ptx_with(&ptx, &opts).unwrap();
            assert_eq!(
                inst.ptx
                    .matches(".global .align 16 .b8 __cc_sink[16];")
                    .count(),
                1
            );
            let mut widths = std::collections::BTreeSet::new();
            for k in &inst.kernels {
                assert!(k.coverage.is_complete(), "{}: {:?}", k.name, k.coverage);
                let body = entry_body(&inst.ptx, &k.symbol);
                let lines: Vec<&str> = body.lines().collect();
                let mut redirected = 0;
                for (n, l) in lines.iter().enumerate() {
                    let prev = if n > 0 { lines[n - 1].trim() } else { "" };
                    let branched = prev.starts_with("@%__cc_p bra $__cc_cold");
                    if global_atomic(l) {
                        assert!(
                            !branched,
                            "{}: a branch before a global atomic:\n{prev}\n{l}",
                            k.name
                        );
                        if l.contains("[%__cc_a64") {
                            redirected += 1;
                            let next = lines[n + 1].trim();
                            assert!(
                                next.starts_with("@%__cc_p bra $__cc_cold"),
                                "{}: the cold block after the atomic:\n{l}\n{next}",
                                k.name
                            );
                            assert!(prev.starts_with("selp.b64 %__cc_a64, %__cc_a64, "));
                        }
                    }
                    if l.trim_start().starts_with("atom.shared") && k.name == "shared_hist" {
                        assert!(branched, "the shared atomic keeps its branch: {prev}\n{l}");
                    }
                }
                // Each device-checked global atomic site is redirected (at least once: the
                // fast and slow copies of a loop kernel have one each).
                let sites = k
                    .sites
                    .iter()
                    .filter(|s| s.kind == SiteKind::Atomic && matches!(s.target, Target::Param(_)))
                    .count();
                assert!(
                    redirected >= sites,
                    "{}: {redirected} redirected atomics for {sites} sites",
                    k.name
                );
                widths.extend(
                    k.sites
                        .iter()
                        .filter(|s| s.kind == SiteKind::Atomic)
                        .map(|s| s.bytes),
                );
                // An atomic whose result nothing reads is written as a reduction, as NVRTC's
                // own assembler makes it (`REDG`, not an `ATOMG` the thread waits for); one
                // whose old value is used stays an atomic.
                let kept_atomic = body
                    .lines()
                    .any(|l| global_atomic(l) && l.trim_start().starts_with("atom."));
                let reduced = body
                    .lines()
                    .any(|l| global_atomic(l) && l.trim_start().starts_with("red."));
                match k.name.as_str() {
                    "scatter_add_i32" | "scatter_add_f64_next" | "index_add_rows" => {
                        assert!(reduced && !kept_atomic, "{}:\n{body}", k.name);
                    }
                    "scatter_add_u64_old" => {
                        assert!(kept_atomic && !reduced, "{}:\n{body}", k.name);
                    }
                    _ => {}
                }
                if k.name == "index_add_rows" {
                    let (fast, slow) = body
                        .split_once("the slow copy, entered only from a failed check")
                        .expect("index_add_rows is split");
                    assert!(fast.contains("[%__cc_a64]") && slow.contains("[%__cc_a64]"));
                }
            }
            let want: &[u32] = if arch.major >= 9 {
                &[2, 4, 8, 16]
            } else {
                &[2, 4, 8]
            };
            for w in want {
                assert!(widths.contains(w), "no {w}-byte atomic: {widths:?}");
            }
            assemble_ptx(&inst.ptx, arch, &src.name)
                .unwrap_or_else(|e| panic!("{} ({}): {e}", src.name, arch.sm_name()));
            let raced = race_ptx(&inst.ptx, &RaceOptions::new(1024)).unwrap();
            assemble_ptx(&raced.ptx, arch, &src.name)
                .unwrap_or_else(|e| panic!("race-checked ({}): {e}", arch.sm_name()));
        }
    }
}

/// Loops whose bounds come from memory (CSR rows, a length per row, a warp's
/// lanes striding over a row) have no launch-time bound, so each thread checks the range of
/// every access of the loop once before it, on the device, and runs a copy of the loop without
/// those checks (`cudacheck_core::instrument::version`). The checked loop stays, entered when
/// the precheck fails; both assemble; `keep_loop_checks` turns it off.
#[test]
fn nvrtc_loops_with_bounds_from_memory_are_versioned() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let host = InstrumentOptions::new().host_checks(true);
    let bugs = CudaSource::from_file(repo_root().join("tests/cuda/planted/bugs.cu")).unwrap();
    let (_, ptx) = ptx_of(&bugs, arch);
    let on = instrument_ptx_with(&ptx, &host).unwrap();
    let off = instrument_ptx_with(&ptx, &host.keep_loop_checks(true)).unwrap();
    for name in ["csr_row_sum", "lane_stride_row"] {
        let k = on.kernels.iter().find(|k| k.name == name).unwrap();
        let c = &k.coverage;
        assert!(c.is_complete(), "{name}: {c:?}");
        assert!(c.versioned_loops >= 1, "{name}: {c:?}");
        // Every device check is hoisted but an unrolled loop's remainder's (at most three
        // iterations: not worth a precheck).
        assert!(
            c.hoisted > 0 && c.checked - c.hoisted <= 1,
            "{name}: the device checks are in a versioned loop: {c:?}"
        );
        let body = entry_body(&on.ptx, &k.symbol);
        let (before, fast) = body
            .split_once("the loop without its hoisted checks")
            .unwrap_or_else(|| panic!("{name} has a fast loop: {body}"));
        assert!(
            before.contains("the loop's hoisted checks")
                && before.contains("@!%__cc_hf bra $__cc_vfast"),
            "{before}"
        );
        let fast = fast.split("$__cc_vexit").next().unwrap();
        assert!(fast.contains("ld.global"), "{fast}");
        assert!(
            !fast.contains("%__cc_p"),
            "no per-access check in the fast loop: {fast}"
        );
        let k = off.kernels.iter().find(|k| k.name == name).unwrap();
        assert_eq!((k.coverage.hoisted, k.coverage.versioned_loops), (0, 0));
        assert!(!entry_body(&off.ptx, &k.symbol).contains("__cc_vfast"));
    }
    assemble_ptx(&on.ptx, arch, &bugs.name).expect("versioned loops assemble");
    assemble_ptx(&off.ptx, arch, &bugs.name).expect("unversioned loops assemble");

    // The benchmark set's loops of these shapes, written before versioning existed.
    let mut hoisted = Vec::new();
    for (file, names) in [
        ("loops2.cu", &["segment_sum_rows"][..]),
        ("gather.cu", &["spmv_csr_scalar", "spmv_csr_warp"][..]),
        ("linalg.cu", &["gemv_batched_h2"][..]),
        ("elementwise.cu", &["axpby_grid_stride"][..]),
    ] {
        let src = CudaSource::from_file(repo_root().join("bench/kernels").join(file)).unwrap();
        let (_, ptx) = ptx_of(&src, arch);
        let out = instrument_ptx_with(&ptx, &host).unwrap();
        assemble_ptx(&out.ptx, arch, &src.name).expect("assembles");
        for name in names {
            let k = out.kernels.iter().find(|k| k.name == *name).unwrap();
            assert!(k.coverage.is_complete());
            assert!(k.coverage.hoisted > 0, "{name}: {:?}", k.coverage);
            hoisted.push((*name, k.coverage.hoisted, k.coverage.checked));
        }
    }
    println!("hoisted / device-checked: {hoisted:?}");
    // A block-stride loop whose only device check is a global atomic's, redirected to the
    // sink with no branch before it: not worth a precheck, the check stays in the loop.
    let src = CudaSource::from_file(repo_root().join("bench/kernels/loops2.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let out = instrument_ptx_with(&ptx, &host).unwrap();
    let k = out
        .kernels
        .iter()
        .find(|k| k.name == "index_add_rows_i32")
        .unwrap();
    assert_eq!(
        (k.coverage.checked, k.coverage.hoisted),
        (1, 0),
        "{:?}",
        k.coverage
    );
    assert!(entry_body(&out.ptx, &k.symbol).contains("red.global.add.u32 [%__cc_a64]"));
}

/// Host checks that used to fail for launches that keep every access in bounds, and then ran
/// the build with device checks: a tile loader `for (l = tid; l < 1024; l += 256)` that NVVM,
/// not knowing the block, unrolls by four behind a prologue picking the main loop's start by
/// the remainder of the trip count (`sgemm_tiled_4x4`: its launch's block fixes the remainder
/// at 0, `HostExpr::Reached`; the loop's counter stepped through a copy is bounded by the
/// loop's exit test), and a bound chosen by `selp` (`attention_small_tiles`'s `kend = causal ?
/// min(seq, end) : seq`). With the benchmark's launches every host check holds and the
/// build checks nothing on the device; with a buffer one element short the checks fail.
#[test]
fn nvrtc_unrolled_tile_loaders_and_selected_bounds_are_checked_on_the_host() {
    use cudacheck_core::instrument::{HostCheckSet, LaunchValues};
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("bench/kernels/linalg.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let some = |x: u64| Some((x, 4));
    let (m, n, kk) = (4000u64, 4000u64, 1000u64);
    let (bh, seq, hd) = (64u64, 2048u64, 64u64);
    let att = bh * seq * hd * 4;
    type Launch = ([u32; 3], [u32; 3], Vec<Option<(u64, u32)>>, Vec<u64>);
    let sgemm = |a_len: u64| -> Launch {
        (
            [16, 16, 1],
            [63, 63, 1],
            vec![
                None,
                None,
                None,
                None,
                some(m),
                some(n),
                some(kk),
                some(0x3f80_0000),
                some(0x3f00_0000),
            ],
            vec![m * n * 4, a_len, kk * n * 4, m * n * 4, 0, 0, 0, 0, 0],
        )
    };
    let attention = |causal: u64, k_len: u64| -> Launch {
        (
            [64, 1, 1],
            [32, 64, 1],
            vec![
                None,
                None,
                None,
                None,
                some(seq),
                some(0x3e00_0000),
                some(causal),
            ],
            vec![att, att, k_len, att, 0, 0, 0],
        )
    };
    let cases: [(&str, Vec<(Launch, bool)>); 2] = [
        (
            "sgemm_tiled_4x4",
            vec![(sgemm(m * kk * 4), true), (sgemm(m * kk * 4 - 4), false)],
        ),
        (
            "attention_small_tiles",
            vec![
                (attention(1, att), true),
                (attention(0, att), true),
                (attention(1, att - 4), false),
            ],
        ),
    ];
    for (name, launches) in cases {
        for ((block, grid, scalars, lens), holds) in launches {
            let opts = InstrumentOptions::new().block(block).host_checks(true);
            let out = instrument_ptx_with(&ptx, &opts).unwrap();
            let k = out.kernels.iter().find(|k| k.name == name).unwrap();
            let v = LaunchValues {
                grid,
                block,
                scalars: &scalars,
                lens: &lens,
            };
            assert_eq!(k.host_checks_hold(&v), holds, "{name} {scalars:?} {lens:?}");
            if holds {
                // Every access is proven or host-checked: the launch runs a build without a
                // device check.
                assert_eq!(k.coverage.checked, 0, "{name}: {:?}", k.coverage);
                assert_eq!(
                    k.failing_host_checks(&v),
                    Some(HostCheckSet::new()),
                    "{name}"
                );
            }
        }
    }
}

/// A launch's checked build assembles its own kernel alone (`cudacheck_core::ptx_subset` of
/// the instrumented module): for every kernel of a file of many, what stays assembles, and the
/// CUBIN holds that kernel and no other kernel of the file.
#[test]
fn nvrtc_a_checked_build_assembles_its_kernel_alone() {
    let subset =
        |ptx: &str, symbol: &str| cudacheck_core::ptx_subset(ptx, symbol).unwrap().unwrap();
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join("bench/kernels/loops2.cu")).unwrap();
    let (_, ptx) = ptx_of(&src, arch);
    let inst = instrument_ptx_with(&ptx, &InstrumentOptions::new().host_checks(true)).unwrap();
    assert!(inst.kernels.len() > 5, "{}", inst.kernels.len());
    for k in &inst.kernels {
        let one = subset(&inst.ptx, &k.symbol);
        assert!(one.trim().len() < inst.ptx.trim().len(), "{}", k.name);
        assert!(one.matches(".entry ").count() == 1, "{}", k.name);
        let cubin = assemble_ptx(&one, arch, &src.name)
            .unwrap_or_else(|e| panic!("{}: {e}", k.name))
            .cubin;
        let info = read_cubin(&cubin).unwrap();
        let has = |s: &str| info.kernels.iter().any(|x| x.symbol == s);
        assert!(has(&k.symbol), "{}", k.name);
        for other in inst.kernels.iter().filter(|o| o.symbol != k.symbol) {
            assert!(
                !has(&other.symbol),
                "{}: {} assembled too",
                k.name,
                other.name
            );
        }
    }
}

/// A kernel whose inline assembly has its own label (not NVVM's `$` ones) inside a loop: the
/// checked body is split into its fast and slow copies (labels renamed where the reader finds
/// label statements and branch targets, `ir::edit::relabel`), and the result assembles.
#[test]
fn nvrtc_a_loop_with_inline_assembly_labels_is_split_and_assembles() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_str(
        "asm_labels.cu",
        r#"
extern "C" __global__ void asm_labels(const float* in, float* out, int n, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.f;
    for (int r = 0; r < reps; ++r) {
        float v = in[(i + r) % n];
        unsigned k;
        asm volatile("{\n\t.reg .pred p;\n\tmov.u32 %0, 0;\nSPIN:\n\tadd.u32 %0, %0, 1;\n\tsetp.lt.u32 p, %0, 3;\n\t@p bra SPIN;\n\t}" : "=r"(k));
        acc += v * (float)k;
    }
    out[i] = acc;
}
"#,
    );
    let (_, ptx) = ptx_of(&src, arch);
    assert!(ptx.contains("SPIN:"), "{ptx}");
    let inst = instrument_ptx(&ptx).unwrap();
    let k = &inst.kernels[0];
    assert!(k.coverage.is_complete(), "{:?}", k.coverage);
    assert!(k.coverage.checked > 0, "{:?}", k.coverage);
    // The slow copy has the user's label renamed beside the fast copy's own.
    assert!(
        inst.ptx.contains("the slow copy"),
        "not split:\n{}",
        inst.ptx
    );
    assert!(inst.ptx.contains("SPIN__s:") && inst.ptx.contains("bra SPIN__s;"));
    assert!(inst.ptx.contains("SPIN:") && inst.ptx.contains("bra SPIN;"));
    let cubin = assemble_ptx(&inst.ptx, arch, &src.name)
        .unwrap_or_else(|e| panic!("{e}\n{}", inst.ptx))
        .cubin;
    let info = read_cubin(&cubin).unwrap();
    assert!(info.kernels.iter().any(|x| x.symbol == "asm_labels"));
}
