//! NVRTC tier: compiling real CUDA sources with the NVRTC that discovery finds.
//!
//! Each test starts with [`nvrtc_or_skip`]: without NVRTC it prints why and passes, unless
//! `CUDACHECK_REQUIRE_NVRTC=1` (CI), where a missing NVRTC is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use cudacheck::nvrtc::{
    compile, doctor_report, nvrtc, CompileError, CompileOptions, Compiled, CudaSource, Severity,
};
use cudacheck_core::Arch;
use cudacheck_tests::nvrtc_or_skip;

fn arch(s: &str) -> Arch {
    s.parse().expect("a valid arch literal")
}

const SAXPY: &str = r#"extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn compile_ok(name: &str, text: &str, opts: &CompileOptions) -> Compiled {
    match compile(&CudaSource::from_str(name, text), opts) {
        Ok(c) => c,
        Err(e) => panic!("`{name}` should compile:\n{e}"),
    }
}

/// ELF class 64, EM_CUDA (190), and the SM number in e_flags bits 8..16.
fn assert_cubin_for(cubin: &[u8], sm: u32) {
    assert!(cubin.len() > 64, "CUBIN too small: {} bytes", cubin.len());
    assert_eq!(&cubin[..4], b"\x7fELF");
    assert_eq!(cubin[4], 2, "not ELF64");
    assert_eq!(
        u16::from_le_bytes([cubin[18], cubin[19]]),
        190,
        "not EM_CUDA"
    );
    let flags = u32::from_le_bytes([cubin[48], cubin[49], cubin[50], cubin[51]]);
    assert_eq!((flags >> 8) & 0xff, sm, "e_flags {flags:#x}");
}

#[test]
fn nvrtc_saxpy_compiles_to_a_cubin_for_each_arch() {
    if !nvrtc_or_skip() {
        return;
    }
    // NVRTC 13 dropped sm_70 (Volta); sm_75 is its oldest target (see the next test).
    for (name, sm) in [("sm_75", 75), ("sm_80", 80), ("sm_90", 90)] {
        let out = compile_ok("saxpy.cu", SAXPY, &CompileOptions::new(arch(name)));
        assert_cubin_for(&out.cubin, sm);
        assert!(
            out.cubin.windows(5).any(|w| w == b"saxpy"),
            "{name}: no saxpy symbol"
        );
        assert_eq!(out.arch, arch(name));
        assert!(out.ptx.is_none());
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    }
}

#[test]
fn nvrtc_arch_nvrtc_dropped_is_unsupported_arch_listing_the_supported() {
    if !nvrtc_or_skip() {
        return;
    }
    let n = nvrtc().expect("checked above");
    if n.supports("sm_70") {
        println!("skipped: this NVRTC ({:?}) still supports sm_70", n.version);
        return;
    }
    let err = compile(
        &CudaSource::from_str("saxpy.cu", SAXPY),
        &CompileOptions::new(arch("sm_70")),
    )
    .unwrap_err();
    let CompileError::UnsupportedArch {
        arch: a, supported, ..
    } = &err
    else {
        panic!("expected UnsupportedArch, got {err:?}");
    };
    assert_eq!(*a, arch("sm_70"));
    assert!(supported.contains(&"sm_90".to_string()), "{supported:?}");
    let text = err.to_string();
    assert!(text.contains("cannot generate code for sm_70"), "{text}");
    assert!(text.contains("sm_75, sm_80"), "{text}");
}

#[test]
fn nvrtc_syntax_error_is_a_diagnostic_at_the_right_place() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "__global__ void k(float* y) {\n    float x = 1.0f;\n    y[0] = foo + x;\n}\n";
    let err = compile(
        &CudaSource::from_str("kernels/x.cu", src),
        &CompileOptions::new(arch("sm_90")),
    )
    .unwrap_err();
    let CompileError::Failed {
        source_name,
        diagnostics,
        log,
    } = &err
    else {
        panic!("expected Failed, got {err:?}");
    };
    assert_eq!(source_name, "kernels/x.cu");
    assert!(log.contains("identifier \"foo\" is undefined"), "{log}");
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    let d = &diagnostics[0];
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.file, "kernels/x.cu");
    assert_eq!((d.line, d.column), (Some(3), Some(12)));
    assert_eq!(d.message, "identifier \"foo\" is undefined");
    let text = err.to_string();
    let want = "error: identifier \"foo\" is undefined\n --> kernels/x.cu:3:12\n  |\n3 |     y[0] = foo + x;\n  |            ^";
    assert!(text.starts_with(want), "got:\n{text}\nwant:\n{want}");
    assert!(
        text.ends_with("error: could not compile `x.cu` (1 error)"),
        "{text}"
    );
}

#[test]
fn nvrtc_every_error_is_reported_not_only_the_first() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "__device__ void f(float* p, float q) {}\n__global__ void k(int* p) {\n    f(p);\n    undefined_thing = 1;\n}\n";
    let err = compile(
        &CudaSource::from_str("two.cu", src),
        &CompileOptions::new(arch("sm_90")),
    )
    .unwrap_err();
    let CompileError::Failed { diagnostics, .. } = &err else {
        panic!("expected Failed, got {err:?}");
    };
    let lines: Vec<Option<u32>> = diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(lines, [Some(3), Some(3), Some(4)], "{diagnostics:#?}");
    assert!(err.to_string().ends_with("(3 errors)"), "{err}");
}

#[test]
fn nvrtc_warning_is_captured_on_success() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "__global__ void k(float* y) {\n    int unused = 3;\n    y[0] = 1.0f;\n}\n";
    let out = compile_ok("w.cu", src, &CompileOptions::new(arch("sm_90")));
    assert_eq!(out.warnings.len(), 1, "{:#?}", out.warnings);
    let w = &out.warnings[0];
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!((w.line, w.column), (Some(2), Some(9)));
    assert_eq!(w.code.as_deref(), Some("177-D"));
    assert!(
        w.message
            .contains("\"unused\" was declared but never referenced"),
        "{w}"
    );
    assert!(
        w.to_string()
            .starts_with("warning[177-D]: variable \"unused\""),
        "{w}"
    );
}

#[test]
fn nvrtc_cuda_headers_resolve_without_configuration() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = r#"#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/limits>
#include <cuda/std/cstdint>
__global__ void k(__half* h, __nv_bfloat16* b, float* f, cuda::std::uint64_t* u) {
    h[0] = __float2half(f[0]);
    b[0] = __float2bfloat16(f[1]);
    f[2] = cuda::std::numeric_limits<float>::max();
    u[0] = cuda::std::numeric_limits<cuda::std::uint64_t>::max();
}
"#;
    compile_ok("halves.cu", src, &CompileOptions::new(arch("sm_90")));
}

/// Each C library header alone, with what a kernel typically uses from it.
#[test]
fn nvrtc_each_libc_header_compiles_unchanged() {
    if !nvrtc_or_skip() {
        return;
    }
    let cases = [
        ("stdint.h", "uint32_t a = UINT32_MAX; int64_t b = INT64_MIN; y[0] = a + b + INT8_C(1);"),
        ("cstdint", "std::uint8_t a = 255; std::int16_t b = INT16_MAX; y[0] = a + b;"),
        ("math.h", "y[0] = (float)M_PI + M_E + M_SQRT2 + M_LN2 + INFINITY + sqrtf(y[1]) + (isnan(NAN) ? 1 : 0);"),
        ("cmath", "y[0] = std::sqrt(y[1]) + std::fabs(y[2]) + std::isnan(y[3]) + (float)M_PI + HUGE_VALF;"),
        ("float.h", "y[0] = FLT_MAX + FLT_MIN + FLT_EPSILON; double d = DBL_MAX + DBL_EPSILON; y[1] = (float)d;"),
        ("cfloat", "y[0] = FLT_MAX - FLT_EPSILON;"),
        ("limits.h", "int i = INT_MAX; unsigned u = UINT_MAX; long long l = LLONG_MIN; y[0] = i + u + l + CHAR_BIT;"),
        ("climits", "y[0] = INT_MIN + SHRT_MAX + UCHAR_MAX;"),
        ("assert.h", "assert(y != nullptr); y[0] = 1.0f;"),
        ("cassert", "assert(y != nullptr); y[0] = 1.0f;"),
        ("stddef.h", "struct S { int a; float b; }; size_t o = offsetof(S, b); ptrdiff_t d = 0; y[0] = o + d + (y == NULL);"),
        ("cstddef", "std::size_t s = sizeof(float); std::ptrdiff_t d = 1; std::nullptr_t n = nullptr; y[0] = s + d + (n == nullptr);"),
        ("stdio.h", "printf(\"%f\\n\", y[0]);"),
        ("cstdio", "std::printf(\"%f\\n\", y[0]);"),
    ];
    let opts = CompileOptions::new(arch("sm_90"));
    for (header, body) in cases {
        let src = format!("#include <{header}>\n__global__ void k(float* y) {{\n    {body}\n}}\n");
        let out = compile_ok(&format!("{header}.cu"), &src, &opts);
        assert!(
            out.warnings.iter().all(|w| w.severity != Severity::Warning),
            "<{header}>: {:#?}",
            out.warnings
        );
    }
}

/// All of them together, beside CCCL's own NVRTC definitions, with the values pinned.
#[test]
fn nvrtc_libc_headers_agree_with_cccl_and_with_the_c_standard() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = r#"#include <cuda/std/cstdint>
#include <cuda/std/climits>
#include <cuda/std/cstddef>
#include <cuda/std/limits>
#include <stdint.h>
#include <cstdint>
#include <cmath>
#include <math.h>
#include <float.h>
#include <cfloat>
#include <limits.h>
#include <climits>
#include <assert.h>
#include <cassert>
#include <stddef.h>
#include <cstddef>
#include <stdio.h>
#include <cstdio>
#include <cuda_fp16.h>
static_assert(INT_MAX == 2147483647, "INT_MAX");
static_assert(UINT_MAX == 4294967295u, "UINT_MAX");
static_assert(LLONG_MAX == 9223372036854775807LL, "LLONG_MAX");
static_assert(CHAR_BIT == 8 && SCHAR_MIN == -128, "char");
static_assert(sizeof(int64_t) == 8 && sizeof(uint16_t) == 2, "stdint sizes");
static_assert(UINT32_MAX == 0xffffffffu && INT64_MIN < 0, "stdint limits");
static_assert(FLT_MAX == cuda::std::numeric_limits<float>::max(), "FLT_MAX");
static_assert(DBL_EPSILON == cuda::std::numeric_limits<double>::epsilon(), "DBL_EPSILON");
static_assert(FLT_MIN == cuda::std::numeric_limits<float>::min(), "FLT_MIN");
constexpr float inf = INFINITY;
static_assert(inf > FLT_MAX, "INFINITY");
constexpr float qnan = NAN;
static_assert(qnan != qnan, "NAN");
static_assert(M_PI > 3.14159265358979 && M_PI < 3.1415926535898, "M_PI");
__global__ void k(float* y) { y[0] = std::sqrt(y[1]) * (float)M_PI; }
"#;
    let out = compile_ok("all_libc.cu", src, &CompileOptions::new(arch("sm_90")));
    assert!(out.warnings.is_empty(), "{:#?}", out.warnings);
}

#[test]
fn nvrtc_ndebug_turns_assert_off() {
    if !nvrtc_or_skip() {
        return;
    }
    // With NDEBUG the argument is not even compiled, as in C; without it, it is.
    let body = "#include <cassert>\n__global__ void k(int* p) { assert(no_such_name > 0); }\n";
    let opts = CompileOptions {
        defines: vec![("NDEBUG".into(), None)],
        ..CompileOptions::new(arch("sm_90"))
    };
    compile_ok("nd.cu", body, &opts);
    let err = compile(
        &CudaSource::from_str("nd.cu", body),
        &CompileOptions::new(arch("sm_90")),
    )
    .unwrap_err();
    assert!(matches!(err, CompileError::Failed { .. }), "{err:?}");
}

#[test]
fn nvrtc_name_expressions_give_mangled_names() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "template <typename T>\n__global__ void scale(T* x, T a, int n) {\n    int i = threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n";
    let opts = CompileOptions {
        name_expressions: vec!["scale<float>".into(), "scale<double>".into()],
        ..CompileOptions::new(arch("sm_90"))
    };
    let out = compile_ok("scale.cu", src, &opts);
    assert_eq!(
        out.lowered_names,
        vec![
            (
                "scale<float>".to_string(),
                "_Z5scaleIfEvPT_S0_i".to_string()
            ),
            (
                "scale<double>".to_string(),
                "_Z5scaleIdEvPT_S0_i".to_string()
            ),
        ]
    );
    assert!(out.cubin.windows(19).any(|w| w == b"_Z5scaleIfEvPT_S0_i"));

    let bad = CompileOptions {
        name_expressions: vec!["scale<NoSuchType>".into()],
        ..CompileOptions::new(arch("sm_90"))
    };
    let err = compile(&CudaSource::from_str("scale.cu", src), &bad).unwrap_err();
    let CompileError::NameExpression { expr, message, .. } = &err else {
        panic!("expected NameExpression, got {err:?}");
    };
    assert_eq!(expr, "scale<NoSuchType>");
    assert!(message.contains("\"NoSuchType\" is undefined"), "{message}");
    assert!(err.to_string().contains("e.g. `saxpy<float>`"), "{err}");
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);
impl Scratch {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("cudacheck-it-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        Scratch(p)
    }
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().expect("has parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
        p
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn nvrtc_defines_and_include_dirs_work() {
    if !nvrtc_or_skip() {
        return;
    }
    let s = Scratch::new("incdirs");
    s.write("inc/params.cuh", "#define BLOCK 256\n");
    s.write("src/local.cuh", "#define LOCAL 2\n");
    let file = s.write(
        "src/k.cu",
        "#include <params.cuh>\n#include \"local.cuh\"\nstatic_assert(BLOCK == 256, \"BLOCK\");\nstatic_assert(SCALE == 3, \"SCALE\");\nstatic_assert(LOCAL == 2, \"LOCAL\");\n#ifndef FLAG\n#error FLAG missing\n#endif\n__global__ void k(float* y) { y[0] = SCALE * BLOCK * LOCAL; }\n",
    );
    let src = CudaSource::from_file(&file).expect("readable");
    let opts = CompileOptions {
        include_dirs: vec![s.0.join("inc")],
        defines: vec![("SCALE".into(), Some("3".into())), ("FLAG".into(), None)],
        ..CompileOptions::new(arch("sm_80"))
    };
    let out = compile(&src, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_cubin_for(&out.cubin, 80);
    // Without the include dir the header is missing: what uses its `BLOCK` fails, and the
    // error names the header.
    let err = compile(&src, &CompileOptions::new(arch("sm_80"))).unwrap_err();
    let CompileError::Failed { diagnostics, .. } = &err else {
        panic!("expected Failed, got {err:?}");
    };
    let block = diagnostics
        .iter()
        .find(|d| d.is_error() && d.message.contains("\"BLOCK\""))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(block.line, Some(3));
    assert!(block.notes.join("\n").contains("`<params.cuh>`"), "{err}");
}

#[test]
fn nvrtc_a_users_own_stdint_wins_over_ours() {
    if !nvrtc_or_skip() {
        return;
    }
    let s = Scratch::new("shadow");
    s.write("inc/stdint.h", "#define USERS_OWN_STDINT 1\n");
    let opts = CompileOptions {
        include_dirs: vec![s.0.join("inc")],
        ..CompileOptions::new(arch("sm_90"))
    };
    let src = "#include <stdint.h>\n#ifndef USERS_OWN_STDINT\n#error got cudacheck's\n#endif\n__global__ void k() {}\n";
    compile_ok("shadow.cu", src, &opts);
}

#[test]
fn nvrtc_ptx_and_ptxas_report_on_request() {
    if !nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions {
        ptx: true,
        ptxas_verbose: true,
        max_registers: Some(32),
        ..CompileOptions::new(arch("sm_90"))
    };
    let out = compile_ok("saxpy.cu", SAXPY, &opts);
    let ptx = out.ptx.as_deref().expect("PTX requested");
    assert!(ptx.contains(".target sm_90"), "{ptx}");
    assert!(ptx.contains(".entry saxpy"), "{ptx}");
    assert!(out.log.contains("ptxas info    : Used"), "{}", out.log);
    assert!(out.log.contains("registers"), "{}", out.log);
    // ptxas's report is not a warning.
    assert!(out.warnings.is_empty(), "{:#?}", out.warnings);
}

#[test]
fn nvrtc_bad_option_is_invalid_option() {
    if !nvrtc_or_skip() {
        return;
    }
    let opts = CompileOptions {
        extra_options: vec!["--no-such-flag".into()],
        ..CompileOptions::new(arch("sm_90"))
    };
    let err = compile(&CudaSource::from_str("saxpy.cu", SAXPY), &opts).unwrap_err();
    let CompileError::InvalidOption { message, options } = &err else {
        panic!("expected InvalidOption, got {err:?}");
    };
    assert_eq!(message, "unrecognized option --no-such-flag found");
    assert!(options.contains(&"--gpu-architecture=sm_90".to_string()));
    assert!(err.to_string().contains("--no-such-flag"), "{err}");
}

#[test]
fn nvrtc_empty_source_compiles_to_a_cubin_without_kernels() {
    if !nvrtc_or_skip() {
        return;
    }
    let out = compile_ok("empty.cu", "", &CompileOptions::new(arch("sm_90")));
    assert_cubin_for(&out.cubin, 90);
    assert!(
        !out.cubin.windows(6).any(|w| w == b".text."),
        "an empty file has no kernel code"
    );
}

#[test]
fn nvrtc_doctor_names_nvrtc_and_the_headers() {
    if !nvrtc_or_skip() {
        return;
    }
    let report = doctor_report();
    let n = report.nvrtc.as_ref().expect("NVRTC found above");
    assert!(n.version.0 >= 12, "{:?}", n.version);
    assert!(report
        .header_dirs
        .iter()
        .any(|d| d.has_cuda_fp16 && d.has_cuda_bf16));
    assert!(report.header_dirs.iter().any(|d| d.has_cuda_std));
    let text = report.to_string();
    println!("{text}");
    assert!(
        text.starts_with(&format!("NVRTC: {}.{} at ", n.version.0, n.version.1)),
        "{text}"
    );
    assert!(text.contains("cuda_fp16.h: yes"), "{text}");
    assert!(text.contains("CUDA driver: "), "{text}");
    // Which checks `cargo build` runs here.
    assert!(
        text.contains(&format!(
            "cargo build checks: a #[checked_kernel] with `arch` is compiled with NVRTC {}.{}",
            n.version.0, n.version.1
        )),
        "{text}"
    );
}

/// The child half of `nvrtc_absent_lists_every_place_searched`; run alone it does nothing
/// useful, hence ignored.
#[test]
#[ignore = "helper: run in a child process by nvrtc_absent_lists_every_place_searched"]
fn nvrtc_child_reports_absent_nvrtc() {
    let err = nvrtc().expect_err("CUDACHECK_NVRTC points nowhere");
    println!("CHILD-ERROR-BEGIN\n{err}\nCHILD-ERROR-END");
    let c = compile(
        &CudaSource::from_str("saxpy.cu", SAXPY),
        &CompileOptions::new(arch("sm_90")),
    );
    assert!(matches!(c, Err(CompileError::NvrtcNotFound(_))), "{c:?}");
    let doctor = doctor_report().to_string();
    assert!(
        doctor.contains("cargo build checks: no NVRTC, so a #[checked_kernel] with `arch` uses"),
        "{doctor}"
    );
}

#[test]
fn nvrtc_absent_lists_every_place_searched() {
    // Discovery is cached per process, so the absent case runs in a child process.
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args([
            "nvrtc_child_reports_absent_nvrtc",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("CUDACHECK_NVRTC", "/nonexistent/libnvrtc.so.13")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert!(
        stdout.contains("[$CUDACHECK_NVRTC] CUDACHECK_NVRTC=/nonexistent/libnvrtc.so.13: no such file or directory"),
        "{stdout}"
    );
    // The places not searched are listed by name, with the way to search them.
    for step in [
        "$CUDA_PATH",
        "$CUDA_HOME",
        "pip wheel",
        "/usr/local/cuda",
        "system loader",
    ] {
        assert!(stdout.contains(step), "missing {step}:\n{stdout}");
    }
    assert!(stdout.contains("Unset CUDACHECK_NVRTC"), "{stdout}");
    assert!(
        stdout.contains("pip install nvidia-cuda-nvrtc==13.0.*"),
        "{stdout}"
    );
}

/// The project-local NVRTC that scripts/setup-cuda.sh installs, if present.
fn project_nvrtc() -> Option<PathBuf> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cuda/py/nvidia/cu13/lib/libnvrtc.so.13");
    p.is_file().then_some(p)
}

#[test]
#[ignore = "helper: run in a child process by nvrtc_loads_by_full_path_without_ld_library_path"]
fn nvrtc_child_compiles_with_loader_path_unset() {
    assert!(std::env::var_os("LD_LIBRARY_PATH").is_none());
    let n = nvrtc().unwrap_or_else(|e| panic!("{e}"));
    println!("CHILD-FOUND-BY {:?} {}", n.found_by, n.path.display());
    let out = compile(
        &CudaSource::from_str("saxpy.cu", SAXPY),
        &CompileOptions::new(arch("sm_90")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_cubin_for(&out.cubin, 90);
}

#[test]
fn nvrtc_loads_by_full_path_without_ld_library_path() {
    if !nvrtc_or_skip() {
        return;
    }
    let Some(lib) = project_nvrtc() else {
        println!("skipped (NVRTC tier): no project-local .cuda install; run scripts/setup-cuda.sh");
        return;
    };
    let out = Command::new(std::env::current_exe().expect("test binary path"))
        .args([
            "nvrtc_child_compiles_with_loader_path_unset",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("CUDACHECK_NVRTC", &lib)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("CHILD-FOUND-BY EnvVar {}", lib.display())),
        "{stdout}"
    );
}
