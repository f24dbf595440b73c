//! The assembler tier of `instrument/contract.rs`: `ptxas` itself must contract the same
//! multiply/add pairs into FMAs in the checked build as in the plain one, for every kind of
//! instruction that may lie between a multiply and its add (those `ptxas` ends a block at,
//! and those it does not), so that bounds checking leaves a healthy launch's results
//! bit-identical.
//!
//! Each case is a kernel `mul; <instruction>; ld.global; add`: the load gets a device check
//! (a branch), the plain and the checked PTX are assembled with `ptxas -arch=sm_90` and
//! disassembled with `nvdisasm`, and the kernels' floating-point instructions (`FFMA`,
//! `FMUL`, `FADD`, with which operands they negate) must be the same.
//!
//! Needs `ptxas` and `nvdisasm` (a CUDA toolkit, or the `nvidia-cuda-nvcc` and
//! `nvidia-cuda-nvdisasm` wheels): `CUDACHECK_PTXAS` and `CUDACHECK_NVDISASM` name them,
//! else `PATH` or `$CUDA_HOME/bin`. Without them each test prints a line starting
//! `skipped (assembler tier): ` and passes, unless `CUDACHECK_REQUIRE_PTXAS=1`, where a
//! missing tool is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudacheck_core::instrument::instrument_ptx;

const SKIP_PREFIX: &str = "skipped (assembler tier): ";

/// The tool `name`: the path `var` gives, else the first on `PATH` or in `$CUDA_HOME/bin`.
fn tool(name: &str, var: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(var) {
        return Ok(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(h) = std::env::var_os("CUDA_HOME") {
        dirs.push(Path::new(&h).join("bin"));
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no `{name}`: set {var}, or put it on PATH"))
}

/// `ptxas` and `nvdisasm`, or `None` (after printing why).
///
/// # Panics
/// When `CUDACHECK_REQUIRE_PTXAS=1` and a tool is missing.
fn tools_or_skip() -> Option<(PathBuf, PathBuf)> {
    match (
        tool("ptxas", "CUDACHECK_PTXAS"),
        tool("nvdisasm", "CUDACHECK_NVDISASM"),
    ) {
        (Ok(a), Ok(d)) => Some((a, d)),
        (Err(e), _) | (_, Err(e)) => {
            if std::env::var("CUDACHECK_REQUIRE_PTXAS").as_deref() == Ok("1") {
                panic!("CUDACHECK_REQUIRE_PTXAS=1 but {e}");
            }
            println!("{SKIP_PREFIX}{e}");
            None
        }
    }
}

/// The floating-point arithmetic of `ptx`'s kernel as `ptxas -arch=sm_90` compiles it: one
/// entry per `FFMA`/`FMUL`/`FADD` (with its modifiers) on the kernel's own path, written with
/// the sign of its product and which operands it negates (`FFMA -a*b+c`), so that register
/// numbers and order do not matter.
fn fp_sass(ptxas: &Path, nvdisasm: &Path, ptx: &str) -> Vec<String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let base = std::env::temp_dir().join(format!("cudacheck-contract-{}-{n}", std::process::id()));
    let (src, cubin) = (base.with_extension("ptx"), base.with_extension("cubin"));
    std::fs::write(&src, ptx).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch=sm_90", "-O3", "-o"])
        .arg(&cubin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ptxas: {}\n{ptx}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(nvdisasm)
        .arg("-c")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvdisasm: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&cubin);
    let mut fp = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        // `/*0160*/  @!P0 FMUL R5, R8.reuse, 16777216 ;`
        let Some((_, l)) = l.trim().strip_prefix("/*").and_then(|l| l.split_once("*/")) else {
            continue;
        };
        let l = l.trim().trim_end_matches(';').trim();
        // The kernel's own path ends at its first `EXIT`: after it come the failed checks'
        // cold blocks (where ptxas may copy the code that follows an access) and subroutines.
        if l == "EXIT" {
            break;
        }
        let l = match l.strip_prefix('@') {
            Some(g) => g.split_once(' ').map_or("", |(_, i)| i),
            None => l,
        };
        let Some((op, rest)) = l.split_once(' ') else {
            continue;
        };
        let neg: Vec<bool> = rest.split(',').map(|o| o.trim().starts_with('-')).collect();
        let minus = |k: usize| neg.get(k).copied().unwrap_or(false);
        let sign = |n: bool| if n { "-" } else { "" };
        fp.push(match op.split('.').next() {
            Some("FFMA") => format!("{op} {}a*b+{}c", sign(minus(1) != minus(2)), sign(minus(3))),
            Some("FMUL") => format!("{op} {}a*b", sign(minus(1) != minus(2))),
            Some("FADD") => {
                let (x, y) = (minus(1).min(minus(2)), minus(1).max(minus(2)));
                format!("{op} {}a+{}b", sign(x), sign(y))
            }
            _ => continue,
        });
    }
    fp.sort();
    fp
}

/// A kernel that loads its operands from `p`, runs `body` and stores what it computes, so
/// that `ptxas` keeps all of it.
fn kernel(body: &str) -> String {
    format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b16 %rs<20>;\n\t.reg .b32 %r<20>;\n\t.reg .f32 %f<20>;\n\t.reg .b64 %rd<20>;\n\t.reg .f64 %fd<20>;\n\t.shared .align 8 .b8 sm[64];\n\tld.param.u64 %rd1, [p];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.f32 %f1, [%rd2];\n\tld.global.f32 %f2, [%rd2+4];\n\tld.global.f32 %f4, [%rd2+12];\n\tld.global.f32 %f5, [%rd2+16];\n\tld.global.f32 %f8, [%rd2+20];\n\tld.global.f32 %f9, [%rd2+24];\n\tld.global.f64 %fd1, [%rd2+32];\n\tld.global.f64 %fd2, [%rd2+40];\n\tld.global.u64 %rd3, [%rd2+48];\n\tld.global.u64 %rd4, [%rd2+56];\n\tld.global.u32 %r1, [%rd2+64];\n\tld.global.u32 %r2, [%rd2+68];\n\tld.global.u16 %rs1, [%rd2+72];\n\tld.global.u16 %rs2, [%rd2+74];\n\tsetp.gt.f32 %p1, %f4, %f5;\n{body}\n\tst.global.f32 [%rd2+80], %f7;\n\tst.global.f32 [%rd2+84], %f10;\n\tst.global.f64 [%rd2+88], %fd10;\n\tst.global.u64 [%rd2+96], %rd10;\n\tst.global.u32 [%rd2+104], %r10;\n\tst.global.u16 [%rd2+108], %rs10;\n\tret;\n}}\n"
    )
}

/// Between a multiply and its add: what `ptxas` ends a block at (it fuses neither build's
/// pair) and what it does not (it fuses both).
const BETWEEN: &[&str] = &[
    // Expanded with branches of `ptxas`'s own.
    "div.rn.f32 %f10, %f4, %f5;",
    "div.rz.ftz.f32 %f10, %f4, %f5;",
    "div.rn.f64 %fd10, %fd1, %fd2;",
    "rcp.rn.f32 %f10, %f4;",
    "rcp.rn.f64 %fd10, %fd1;",
    "sqrt.rn.f32 %f10, %f4;",
    "sqrt.rn.f64 %fd10, %fd1;",
    "rsqrt.approx.f64 %fd10, %fd1;",
    "div.s32 %r10, %r1, %r2;",
    "rem.s32 %r10, %r1, 7;",
    "div.u16 %rs10, %rs1, %rs2;",
    "rem.s16 %rs10, %rs1, %rs2;",
    "div.u64 %rd10, %rd3, 8;",
    "rem.s64 %rd10, %rd3, %rd4;",
    // Fences.
    "membar.gl;",
    "fence.sc.gpu;",
    "fence.acq_rel.cta;",
    "@%p1 trap;",
    // Kept inline.
    "bar.sync 0;",
    "barrier.sync.aligned 0;",
    "bar.warp.sync -1;",
    "barrier.cluster.arrive;",
    "shfl.sync.bfly.b32 %r10, %r1, 1, 31, -1;",
    "red.global.add.f32 [%rd2+112], %f4;",
    "div.u32 %r10, %r1, %r2;",
    "rem.u32 %r10, %r1, %r2;",
    "div.approx.f32 %f10, %f4, %f5;",
    "div.full.f32 %f10, %f4, %f5;",
    "rcp.approx.ftz.f64 %fd10, %fd1;",
    "rsqrt.approx.ftz.f64 %fd10, %fd1;",
    "sqrt.approx.f32 %f10, %f4;",
    "ex2.approx.f32 %f10, %f4;",
    "fence.proxy.async;",
    // A nested scope, as `cuda_fp16.h` writes its conversions.
    "{\n\t.reg .b32 %t;\n\tmov.b32 %t, %r1;\n\tmov.b32 %r10, %t;\n\t}",
];

#[test]
fn ptxas_contracts_the_same_pairs_plain_and_checked_whatever_lies_between() {
    let Some((ptxas, nvdisasm)) = tools_or_skip() else {
        return;
    };
    let mut differ = Vec::new();
    for op in BETWEEN {
        let plain = kernel(&format!(
            "\tmul.f32 %f6, %f1, %f2;\n\t{op}\n\tld.global.f32 %f3, [%rd2+8];\n\tadd.f32 %f7, %f6, %f3;"
        ));
        let checked = instrument_ptx(&plain).unwrap_or_else(|e| panic!("{op}: {e}"));
        assert!(
            checked.kernels[0].coverage.checked >= 1,
            "{op}: the load between is not checked on the device"
        );
        let (a, b) = (
            fp_sass(&ptxas, &nvdisasm, &plain),
            fp_sass(&ptxas, &nvdisasm, &checked.ptx),
        );
        if a != b {
            differ.push(format!("`{op}`: plain {a:?}, checked {b:?}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// NVIDIA's BlackScholes sample (nvcc 13.0, `-O3`) in miniature: two products of the first
/// option, the second option's `S / X` (`div.rn.f32`), a checked load, and the subtraction.
/// Plain, `ptxas` fuses neither product (the division's branches lie between); the checked
/// build must not fuse one either.
#[test]
fn ptxas_fuses_no_product_across_a_division_in_the_checked_build_either() {
    let Some((ptxas, nvdisasm)) = tools_or_skip() else {
        return;
    };
    let plain = kernel(
        "\tmul.f32 %f6, %f1, %f2;\n\tmul.f32 %f11, %f4, %f5;\n\tdiv.rn.f32 %f10, %f8, %f9;\n\tld.global.f32 %f3, [%rd2+8];\n\tmul.f32 %f12, %f3, %f10;\n\tsub.f32 %f13, %f6, %f11;\n\tadd.f32 %f7, %f13, %f12;",
    );
    let checked = instrument_ptx(&plain).unwrap().ptx;
    let (a, b) = (
        fp_sass(&ptxas, &nvdisasm, &plain),
        fp_sass(&ptxas, &nvdisasm, &checked),
    );
    assert!(a.contains(&"FADD a+-b".to_string()), "plain: {a:?}");
    assert_eq!(a, b);
}
