//! NVRTC tier: whole programs compile unchanged. The fixtures in `tests/wholeprog/` are
//! self-written in the shape of benchmark programs and course exercises (a host `main` with
//! `cudaMalloc`/`cudaMemcpy`, several versions of one kernel, a `common.h` of host utilities
//! with a cuBLAS handle and a timer, `<time.h>`, `<unistd.h>`, `<omp.h>`, cooperative
//! groups): what is host code follows from what device code uses, as in nvcc's device pass,
//! and a header NVRTC cannot find is named when device code needs it.

use std::path::{Path, PathBuf};

use cudacheck::nvrtc::{compile, CompileError, CompileOptions, Compiled, CudaSource, Severity};
use cudacheck_core::cubin::{parse_ptxas_info, read_cubin};
use cudacheck_tests::{nvrtc_or_skip, repo_root};

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/wholeprog").join(name)
}

fn options() -> CompileOptions {
    CompileOptions {
        ptxas_verbose: true,
        ..CompileOptions::new("sm_90".parse().unwrap())
    }
}

fn build_file(path: &Path) -> Result<Compiled, CompileError> {
    compile(&CudaSource::from_file(path).unwrap(), &options())
}

fn build_str(name: &str, text: &str) -> Result<Compiled, CompileError> {
    compile(&CudaSource::from_str(name, text), &options())
}

/// Every kernel's (symbol, registers), checking each against ptxas's own report of the compile.
fn kernels(c: &Compiled) -> Vec<(String, u32)> {
    let ptxas = parse_ptxas_info(&c.log).unwrap();
    let mut out: Vec<(String, u32)> = read_cubin(&c.cubin)
        .unwrap()
        .kernels
        .into_iter()
        .map(|k| {
            let p = ptxas.iter().find(|p| p.name == k.symbol).unwrap();
            assert_eq!(k.registers, p.registers, "{}", k.symbol);
            assert_eq!(k.static_shared_bytes, p.static_shared_bytes, "{}", k.symbol);
            (k.symbol, k.registers)
        })
        .collect();
    out.sort();
    out
}

fn remarks(c: &Compiled) -> Vec<&str> {
    c.warnings
        .iter()
        .filter(|d| d.severity == Severity::Remark)
        .map(|d| d.message.as_str())
        .collect()
}

#[test]
fn nvrtc_whole_program_compiles_every_kernel_version() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = build_file(&fixture("softmax.cu")).unwrap_or_else(|e| panic!("{e}"));
    let found = kernels(&c);
    let names: Vec<&str> = found.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "_Z15softmax_kernel1PfPKfii",
            "_Z15softmax_kernel2PfPKfii",
            "_Z15softmax_kernel3PfPKfii",
            "_Z15softmax_kernel4ILi4EEvPfPKfii",
            "_Z15softmax_kernel4ILi8EEvPfPKfii",
        ]
    );
    for (symbol, registers) in &found {
        assert!(*registers > 0, "{symbol}: {registers} registers");
    }
    // `<unistd.h>` and `<omp.h>` are host headers no CUDA include directory has: compiled as
    // empty, since only `main` and the CPU reference (set aside) use them, and said so.
    for header in ["<unistd.h>", "<omp.h>"] {
        assert!(
            remarks(&c).iter().any(|r| r.contains(header)),
            "{header}: {:#?}",
            c.warnings
        );
    }
}

#[test]
fn nvrtc_header_device_code_needs_is_named_with_the_fix() {
    if !nvrtc_or_skip() {
        return;
    }
    let e = build_file(&fixture("missing_device_header.cu")).unwrap_err();
    let CompileError::Failed { diagnostics, .. } = &e else {
        panic!("{e}")
    };
    let tile = diagnostics
        .iter()
        .find(|d| d.is_error() && d.message.contains("TILE_ROWS"))
        .unwrap_or_else(|| panic!("{e}"));
    let help = tile.notes.join("\n");
    assert!(help.contains("`<tile_config.h>`"), "{help}");
    assert!(help.contains("-I"), "{help}");
    // The host-only `<time.h>` is no suspect: it is found (a compatibility header) or compiled
    // as empty without being blamed for the kernel's names.
    assert!(!help.contains("`<time.h>`"), "{help}");
}

#[test]
fn nvrtc_host_globals_types_and_classes_of_a_missing_library_are_set_aside() {
    if !nvrtc_or_skip() {
        return;
    }
    // A program's host state in a library's types (`cufftHandle`, NVRTC has no `<cufft.h>`):
    // globals, a `typedef struct`, a class wrapping the handle, a function returning a pointer.
    let src = "#include <cufft.h>\n\
               #include <sys/time.h>\n\
               cufftHandle plan;\n\
               static cufftComplex* spectrum = NULL;\n\
               typedef struct { cufftHandle plan; int n; } FftJob;\n\
               class Fft {\n\
                 cufftHandle h_;\n\
               public:\n\
                 explicit Fft(int n) { cufftPlan1d(&h_, n, CUFFT_C2C, 1); }\n\
                 ~Fft() { cufftDestroy(h_); }\n\
               };\n\
               double now() { timeval t; gettimeofday(&t, 0); return t.tv_sec + 1e-6 * t.tv_usec; }\n\
               float* host_buffer(int n) { return new float[n]; }\n\
               __global__ void scale(float2* x, float s, int n) {\n\
                 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 if (i < n) { x[i].x *= s; x[i].y *= s; }\n\
               }\n\
               int main() { Fft f(1024); FftJob j = {plan, 1024}; float* b = host_buffer(j.n);\n\
                 scale<<<4, 256>>>((float2*)spectrum, 1.0f / j.n, j.n); delete[] b; return now() > 0; }\n";
    let c = build_str("fft_program.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernels(&c).len(), 1);
}

#[test]
fn nvrtc_device_code_using_a_missing_librarys_type_names_the_header() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "#include <cufft.h>\n\
               __global__ void scale(cufftComplex* x, float s) { x[threadIdx.x].x *= s; }\n";
    match build_str("fft_kernel.cu", src) {
        // A toolkit with cuFFT's headers (`/usr/local/cuda/include`): found, so nothing was
        // compiled as empty.
        Ok(c) => assert!(
            !remarks(&c).iter().any(|r| r.contains("cufft.h")),
            "{:#?}",
            c.warnings
        ),
        // NVRTC's wheel alone has no `<cufft.h>`: the error names it and the fix.
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("`<cufft.h>`"), "{text}");
            assert!(text.contains("-I DIR"), "{text}");
        }
    }
}

#[test]
fn nvrtc_warnings_from_compatibility_headers_do_not_reach_the_user() {
    if !nvrtc_or_skip() {
        return;
    }
    // The program itself warns of nothing; what NVRTC would say of the compatibility headers
    // and of the kernel references appended after the last line (an unused `static`
    // function) is cudacheck's, not the user's.
    let c = build_file(&fixture("softmax.cu")).unwrap_or_else(|e| panic!("{e}"));
    let warnings: Vec<String> = c
        .warnings
        .iter()
        .filter(|d| d.severity != Severity::Remark)
        .map(|d| d.to_string())
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
}

#[test]
fn nvrtc_thread_entries_and_stream_callbacks_are_host_code() {
    if !nvrtc_or_skip() {
        return;
    }
    // The thread entry (`THREAD_ENTRY feed(void*)`, a macro whose Windows definition names
    // `WINAPI`) and the `CUDART_CB` callback call the runtime API and use `<pthread.h>`'s types,
    // which NVRTC does not have: set aside, both kernels compiled.
    let c = build_file(&fixture("threads.cu")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = kernels(&c).into_iter().map(|(s, _)| s).collect();
    assert_eq!(names, ["_Z5scalePffi", "_Z6offsetPffi"]);
    assert!(
        remarks(&c).iter().any(|r| r.contains("<pthread.h>")),
        "{:#?}",
        c.warnings
    );
}
