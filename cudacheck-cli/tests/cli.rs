//! NVRTC tier: the `cudacheck` command, run as a user runs it, on good and bad input.
//! Every test is named `nvrtc_cli_*` (scripts/test.sh selects tiers by name).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cudacheck_tests::nvrtc_or_skip;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn cudacheck(args: &[&str]) -> (i32, String, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("cudacheck runs");
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cudacheck-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn nvrtc_cli_checks_every_kernel_in_kernels_dir_cleanly() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, err) = cudacheck(&["check", "kernels", "--arch", "sm_90"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("kernel `matmul_tiled`"), "{out}");
    assert!(out.contains("kernel `scale<float>`"), "{out}");
    assert!(
        out.contains("registers        79 per thread"),
        "nbody: {out}"
    );
    assert!(
        out.contains("max block        768 threads (set by its 79 registers per thread)"),
        "{out}"
    );
    assert!(out.contains("104 B stack frame"), "window_median: {out}");
    assert!(
        out.contains("summary: 11 kernel(s) in 10 file(s) checked for sm_90: 0 with violations, 0 file(s) with errors"),
        "{out}"
    );
}

#[test]
fn nvrtc_cli_reports_a_block_too_large_with_limit_and_fix_and_exits_1() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, _) = cudacheck(&[
        "check",
        "kernels/saxpy.cu",
        "--arch",
        "sm_80",
        "--block",
        "2048",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("2048 threads"), "{out}");
    assert!(out.contains("sm_80 allows at most 1024"), "{out}");
    assert!(
        out.contains("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        "{out}"
    );
    assert!(out.contains("1 with violations"), "{out}");
}

#[test]
fn nvrtc_cli_reports_launch_bounds_and_register_limits() {
    if !nvrtc_or_skip() {
        return;
    }
    // matmul_tiled has __launch_bounds__(256); nbody's 79 registers allow at most 768 threads.
    let (code, out, _) = cudacheck(&[
        "check",
        "kernels/matmul.cu",
        "kernels/nbody.cu",
        "--block",
        "1024",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("__launch_bounds__"), "{out}");
    assert!(
        out.contains("79 registers per thread x 1024 threads"),
        "{out}"
    );
    assert!(out.contains("2 with violations"), "{out}");
}

#[test]
fn nvrtc_cli_zero_and_overflowing_blocks_are_violations_not_crashes() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, err) = cudacheck(&["check", "kernels/saxpy.cu", "--block", "0"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("block (0, 1, 1) is 0 along x") && out.contains("at least 1"),
        "{out}"
    );
    let (code, out, err) = cudacheck(&[
        "check",
        "kernels/saxpy.cu",
        "--block",
        "4294967295,4294967295,4294967295",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    // x*y*z is computed in 64 bits (and beyond): the message names the real product's size.
    assert!(out.contains("at most 1024"), "{out}");
    let (code, out, err) = cudacheck(&[
        "check",
        "kernels/saxpy.cu",
        "--grid",
        "1,70000,1",
        "--block",
        "256",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("70000") && out.contains("65535"), "{out}");
}

#[test]
fn nvrtc_cli_bad_input_is_a_clear_error_with_exit_2() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, _, err) = cudacheck(&["check", "no/such/file.cu"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no/such/file.cu: no such file or directory"),
        "{err}"
    );

    let empty_dir = temp_file("placeholder.txt", b"x")
        .parent()
        .unwrap()
        .to_path_buf();
    let (code, _, err) = cudacheck(&["check", empty_dir.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("no `.cu` or `.ptx` files"), "{err}");

    let empty = temp_file("empty.cu", b"");
    let (code, out, _) = cudacheck(&["check", empty.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no kernels"), "{out}");

    let garbage = temp_file(
        "garbage.cu",
        &[0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0x00, 0x80, 0x81],
    );
    let (code, out, _) = cudacheck(&["check", garbage.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("UTF-8"), "{out}");

    let latin1 = temp_file(
        "latin1.cu",
        b"// caf\xe9\nextern \"C\" __global__ void k() {}\n",
    );
    let (code, out, _) = cudacheck(&["check", latin1.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("UTF-8"), "{out}");

    let (code, _, err) = cudacheck(&["check", "kernels", "--arch", "sm_35"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("sm_70") && err.contains("sm_90"),
        "lists supported arches: {err}"
    );
    let (code, _, err) = cudacheck(&["check", "kernels", "--arch", "hopper"]);
    assert_eq!(code, 2);
    assert!(err.contains("not an architecture name"), "{err}");
    let (code, _, err) = cudacheck(&["check", "kernels", "--block", "16,-1"]);
    assert_eq!(code, 2);
    assert!(err.contains("whole number"), "{err}");
}

#[test]
fn nvrtc_cli_sm_70_is_refused_by_nvrtc_13_with_the_supported_list() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, _) = cudacheck(&["check", "kernels/saxpy.cu", "--arch", "sm_70"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("sm_75"),
        "names what this NVRTC supports: {out}"
    );
    assert!(
        out.contains("nvidia-cuda-nvrtc-cu12"),
        "says where sm_70 is: {out}"
    );
    // ... and with NVRTC 12 it works (scripts/setup-cuda.sh installs it beside 13).
    let Some(lib12) = std::env::var_os("CUDACHECK_NVRTC12") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
        .args(["check", "kernels/saxpy.cu", "--arch", "sm_70"])
        .current_dir(repo())
        .env("CUDACHECK_NVRTC", lib12)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("(NVRTC 12.9)") && text.contains("kernel `saxpy`"),
        "{text}"
    );
}

#[test]
fn nvrtc_cli_syntax_errors_render_like_rustc() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, _) = cudacheck(&["check", data("syntax_error.cu").to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("error: identifier \"undefined_name\" is undefined"),
        "{out}"
    );
    assert!(out.contains("syntax_error.cu:4:12"), "file:line:col: {out}");
    assert!(
        out.contains("4 |     y[i] = undefined_name + 1;"),
        "source line: {out}"
    );
    assert!(
        out.contains("|            ^"),
        "caret under the name: {out}"
    );
}

#[test]
fn nvrtc_cli_third_party_style_sources_compile_unchanged() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, err) = cudacheck(&["check", data("third_party_style.cu").to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("kernel `gelu_half`") && out.contains("kernel `scale_bf16`"),
        "{out}"
    );
}

#[test]
fn nvrtc_cli_defines_and_include_dirs_reach_nvrtc() {
    if !nvrtc_or_skip() {
        return;
    }
    let file = data("needs_flags.cu");
    let (code, out, _) = cudacheck(&["check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "fails without -D/-I: {out}");
    let inc = data("inc");
    let (code, out, err) = cudacheck(&[
        "check",
        file.to_str().unwrap(),
        "-D",
        "TILE=64",
        "-DHEADER_CONST=2.0f",
        "-I",
        inc.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("shared (static)  256 B"),
        "TILE=64 floats: {out}"
    );
}

#[test]
fn nvrtc_cli_json_output_is_machine_readable() {
    if !nvrtc_or_skip() {
        return;
    }
    let (code, out, _) = cudacheck(&["check", "kernels/matmul.cu", "--json", "--block", "16,16"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let k = &v["files"][0]["kernels"][0];
    assert_eq!(k["name"], "matmul_tiled");
    assert_eq!(k["resources"]["max_threads_per_block"], 256);
    assert_eq!(k["occupancy"]["blocks_per_sm"], 8);
    assert_eq!(v["kernels_with_violations"], 0);
}

#[test]
fn nvrtc_cli_missing_nvrtc_is_explained_not_a_panic() {
    // Runs without NVRTC on purpose: the simulation is the environment variable.
    let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
        .args(["check", "kernels"])
        .current_dir(repo())
        .env("CUDACHECK_NVRTC", "none")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("CUDACHECK_NVRTC"), "{err}");
    assert!(
        err.to_lowercase().contains("pip install nvidia-cuda-nvrtc"),
        "says how to install: {err}"
    );
}

#[test]
fn nvrtc_cli_instrument_reports_coverage_from_an_assembled_build() {
    let (code, out, err) = cudacheck(&["instrument", "kernels/saxpy.cu"]);
    assert_eq!(code, 0, "{err}");
    // saxpy's three accesses sit behind its `if (i < n)`: each launch checks them on the host
    // (`n` against the buffers' lengths), and the device build it tries first has no check.
    assert!(
        out.contains(
            "kernel `saxpy`: 0 accesses checked, 3 checked on the host, none left unchecked"
        ),
        "{out}"
    );
    let (code, out, err) = cudacheck(&["instrument", "--ptx", "kernels/saxpy.cu"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".param .u64 __cc_rec"), "hidden params: {out}");
    let (code, _, err) = cudacheck(&["instrument", "no/such.cu"]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such.cu"), "{err}");
}

#[test]
fn nvrtc_cli_instrument_for_a_launch_shape_proves_what_the_shape_bounds() {
    // reduce_sum indexes its dynamic shared array by threadIdx.x: in bounds for a launch with
    // a 256-thread block and 1 KiB of dynamic shared memory, unknown without them.
    let proven = |args: &[&str]| {
        let mut all = vec!["instrument", "--json"];
        all.extend_from_slice(args);
        all.push("kernels/reduce.cu");
        let (code, out, err) = cudacheck(&all);
        assert_eq!(code, 0, "{err}{out}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let k = &v["files"][0]["kernels"][0];
        assert_eq!(k["unchecked"].as_array().unwrap().len(), 0, "{k}");
        k["proven"].as_u64().unwrap()
    };
    let none = proven(&[]);
    let shaped = proven(&["--block", "256", "--dynamic-smem", "1024"]);
    assert!(shaped > none, "shape facts prove more: {shaped} vs {none}");
    // A block too small for the shared array's use proves less than the right one.
    let small = proven(&["--block", "256", "--dynamic-smem", "16"]);
    assert!(small < shaped, "{small} vs {shaped}");
    let (code, _, err) = cudacheck(&["instrument", "--block", "abc", "kernels/reduce.cu"]);
    assert_eq!(code, 2, "a bad --block is a usage error: {err}");
    let (code, _, err) = cudacheck(&["instrument", "--block", "0", "kernels/reduce.cu"]);
    assert_eq!(code, 2, "an empty block is refused: {err}");
    assert!(err.contains("at least one thread"), "{err}");
}

#[test]
fn nvrtc_cli_instrument_json_lists_every_kernel_and_what_is_unchecked() {
    let dir = std::env::temp_dir().join(format!("cudacheck-cli-inst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("k.cu");
    std::fs::write(
        &file,
        r#"__device__ __noinline__ void far(float* p, int i) { p[i] = 1.0f; }
template <typename T> __global__ void scale(T* x, int n) { if (threadIdx.x < n) x[threadIdx.x] *= 2; }
template __global__ void scale<float>(float*, int);
extern "C" __global__ void k(float** t, float* out, int i) { out[0] = t[0][1]; far(out, i); }
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = cudacheck(&["instrument", "--json", "--arch", "sm_80", path]);
    assert_eq!(code, 0, "{err}{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let kernels = v["files"][0]["kernels"].as_array().expect("kernels");
    let by_name = |n: &str| kernels.iter().find(|k| k["name"] == n).cloned();
    let scale = by_name("scale<float>").expect("template instantiation listed");
    assert_eq!(scale["unchecked"].as_array().unwrap().len(), 0, "{scale}");
    assert!(scale["checked"].as_u64().unwrap() >= 2, "{scale}");
    let k = by_name("k").expect("k listed");
    let unchecked = k["unchecked"].as_array().unwrap();
    assert!(
        unchecked
            .iter()
            .any(|u| u["reason"].as_str().unwrap().contains("loaded from memory")),
        "{k}"
    );
    assert!(
        unchecked
            .iter()
            .any(|u| u["reason"].as_str().unwrap().contains("`far`") && u["line"] == 1),
        "{k}"
    );
    // A file that does not compile: exit 2 and its error in the JSON.
    std::fs::write(&file, "__global__ void broken( {").unwrap();
    let (code, out, _) = cudacheck(&["instrument", "--json", path]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["files"][0]["error"].as_str().is_some(), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cli_a_host_only_file_is_not_an_error_but_uninstantiated_templates_are() {
    if !nvrtc_or_skip() {
        return;
    }
    // CUDA-graph capture helpers live in `.cu` files with no device code at all.
    // Its own directory: `temp_file`'s must hold no `.cu` file for the bad-input test.
    let dir = std::env::temp_dir().join(format!("cudacheck-cli-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let host = write(
        "graph_helpers.cu",
        b"#include <cuda_runtime.h>\n\
          extern \"C\" int capture(cudaStream_t s, cudaGraph_t* g) {\n\
              return (int)cudaStreamEndCapture(s, g);\n\
          }\n",
    );
    let (code, out, err) = cudacheck(&["check", host.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let file = &v["files"][0];
    assert!(file["error"].is_null(), "{out}");
    assert!(
        file["note"].as_str().unwrap().contains("host code only"),
        "{out}"
    );
    // `instrument` says the same.
    let (code, out, err) = cudacheck(&["instrument", host.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["files"][0]["error"].is_null(), "{out}");
    assert!(
        v["files"][0]["note"]
            .as_str()
            .unwrap()
            .contains("host code only"),
        "{out}"
    );
    // A kernel template nothing instantiates is still reported: device code, nothing checked.
    let template = write(
        "never_instantiated.cu",
        b"template <int N> __global__ void k(float* x) { x[threadIdx.x] = N; }\n",
    );
    let (code, out, _) = cudacheck(&["check", template.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no kernels"), "{out}");
}

/// A PTX module (what a candle-style build script writes) is checked like a source: assembled
/// for the target by nvJitLink, with no NVRTC at all.
#[test]
fn nvrtc_cli_checks_and_instruments_ptx_modules_without_nvrtc() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch = cudacheck::core::Arch::new(9, 0);
    let ptx = cudacheck_tests::ptx::kernel_ptx("matmul.cu", arch, true, &[]);
    let path = temp_file("matmul.ptx", ptx.text.as_bytes());
    let p = path.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
            .args(args)
            .current_dir(repo())
            .env("CUDACHECK_NVRTC", "none")
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["check", p, "--arch", "sm_90"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("matmul_tiled"), "{out}");
    // 1024 threads break the kernel's __launch_bounds__(256), which the PTX keeps (.maxntid).
    let (code, out, err) = run(&["check", p, "--arch", "sm_90", "--block", "32,32"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("256"), "{out}");
    let (code, out, err) = run(&["instrument", p, "--arch", "sm_90", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let k = &v["files"][0]["kernels"][0];
    assert_eq!(k["name"], "matmul_tiled", "{out}");
    assert!(k["checked"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(k["unchecked"].as_array().unwrap().len(), 0, "{out}");
}

#[test]
fn nvrtc_cli_instrument_init_reports_what_is_init_checked() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("cudacheck-cli-init-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("i.cu");
    std::fs::write(
        &file,
        r#"extern "C" __global__ void gather(float* out, const float* in, const int* idx) {
    out[threadIdx.x] = in[idx[threadIdx.x]];
}
extern "C" __global__ void tiled(float* out, const float* in) {
    __shared__ float s[128];
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[127 - threadIdx.x];
}
extern "C" __global__ void bins(unsigned* h, const int* keys) {
    atomicAdd(&h[keys[threadIdx.x] & 7], 1u);
}
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = cudacheck(&["instrument", "--init", "--json", path]);
    assert_eq!(code, 0, "{err}{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let kernels = v["files"][0]["kernels"].as_array().expect("kernels");
    let by_name = |n: &str| kernels.iter().find(|k| k["name"] == n).cloned().unwrap();
    // Two global reads tested, one store marked.
    let g = by_name("gather");
    assert_eq!(
        (g["init"]["checked"].as_u64(), g["init"]["marked"].as_u64()),
        (Some(2), Some(1)),
        "{g}"
    );
    assert!(g["init"].get("not_checked").is_none(), "{g}");
    // A global read and a shared read tested; a shared store and a global store marked.
    let t = by_name("tiled");
    assert_eq!(
        (t["init"]["checked"].as_u64(), t["init"]["marked"].as_u64()),
        (Some(2), Some(2)),
        "{t}"
    );
    // The atomic reads (bins nobody zeroed are reported) and marks.
    let b = by_name("bins");
    assert_eq!(
        (b["init"]["checked"].as_u64(), b["init"]["marked"].as_u64()),
        (Some(2), Some(1)),
        "{b}"
    );
    // Without --init the JSON has no init entry.
    let (code, out, _) = cudacheck(&["instrument", "--json", path]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["files"][0]["kernels"][0].get("init").is_none(), "{v}");
    // Text: the same, for a person.
    let (code, out, err) = cudacheck(&["instrument", "--init", path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("kernel `gather`: 2 reads checked, 1 write marked"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cli_instrument_races_reports_what_is_race_checked() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("cudacheck-cli-races-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("r.cu");
    std::fs::write(
        &file,
        r#"extern "C" __global__ void tile_sum(float* out, const float* in) {
    __shared__ float s[256];
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x] + s[(threadIdx.x + 1) % 256];
}
extern "C" __global__ void named(float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = 1.0f;
    asm volatile("bar.sync 1, 64;");
    out[threadIdx.x] = s[63 - threadIdx.x];
}
extern "C" __global__ void no_shared(float* out) { out[threadIdx.x] = 1.0f; }
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = cudacheck(&["instrument", "--races", "--json", path]);
    assert_eq!(code, 0, "{err}{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let kernels = v["files"][0]["kernels"].as_array().expect("kernels");
    let by_name = |n: &str| kernels.iter().find(|k| k["name"] == n).cloned().unwrap();
    let t = by_name("tile_sum");
    assert_eq!(t["races"]["checked"], 3, "{t}");
    // The two reads after the barrier: nothing writes `s` there.
    assert_eq!(t["races"]["proven"], 2, "{t}");
    assert_eq!(t["races"]["barriers"], 1, "{t}");
    assert!(t["races"].get("not_checked").is_none(), "{t}");
    let n = by_name("named");
    let why = n["races"]["not_checked"].as_str().unwrap_or_default();
    assert!(why.contains("named barrier"), "{n}");
    assert_eq!(by_name("no_shared")["races"]["checked"], 0);
    // Text: the same, for a person.
    let (code, out, err) = cudacheck(&["instrument", "--races", path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("race checking"), "{out}");
    assert!(
        out.contains("kernel `tile_sum`: 3 shared accesses race-checked (2 of them cannot race"),
        "{out}"
    );
    assert!(
        out.contains("conflicts), 1 barrier, none left unchecked"),
        "{out}"
    );
    assert!(out.contains("kernel `named`: not race-checked: "), "{out}");
    // For one block shape, the write `s[threadIdx.x]` is proven thread-private, and the JSON
    // says which access and why.
    let (code, out, err) = cudacheck(&["instrument", "--races", "--json", "--block", "256", path]);
    assert_eq!(code, 0, "{err}{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let t = v["files"][0]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "tile_sum")
        .cloned()
        .unwrap();
    assert_eq!(t["races"]["proven"], 3, "{t}");
    assert_eq!(t["races"]["thread_private"], 1, "{t}");
    let proven = t["races"]["proven_accesses"].as_array().unwrap();
    assert_eq!(proven.len(), 3, "{t}");
    let private: Vec<_> = proven
        .iter()
        .filter(|p| p["why"] == "proven thread-private in its interval")
        .collect();
    assert_eq!(private.len(), 1, "{t}");
    assert_eq!(
        (private[0]["line"].as_u64(), private[0]["access"].as_str()),
        (Some(3), Some("write"))
    );
    let (code, out, err) = cudacheck(&["instrument", "--races", "--block", "256", path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("3 of them cannot race: nothing in their barrier interval conflicts or, for 1, they are proven thread-private in their interval"),
        "{out}"
    );
    // Without --races, no race fields.
    let (_, out, _) = cudacheck(&["instrument", "--json", path]);
    assert!(!out.contains("\"races\""), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
