//! NVRTC tier: files written for nvcc compile unchanged. Each source is small and self-written,
//! reproducing one construct the kernel libraries of real projects use (host launchers beside
//! their kernels, host `constexpr` helpers, C and C++ library includes, nvcc's implicit
//! includes), and one that cannot compile, whose error names the construct and the fix.
//!
//! Every case also runs under each other NVRTC release of the matrix (`CUDACHECK_NVRTC_MATRIX`,
//! `nvrtc_compat_cases_under_every_release_of_the_matrix`), and no compile may draw a warning
//! from cudacheck's own headers.

use cudacheck::nvrtc::{compile, CompileError, CompileOptions, Compiled, CudaSource, Severity};
use cudacheck_core::cubin::read_cubin;
use cudacheck_tests::matrix::{under_every_other_release, warnings_from_our_headers};
use cudacheck_tests::nvrtc_or_skip;

fn build(name: &str, text: &str) -> Result<Compiled, CompileError> {
    let result = compile(
        &CudaSource::from_str(name, text),
        &CompileOptions::new("sm_90".parse().unwrap()),
    );
    if let Ok(c) = &result {
        let ours = warnings_from_our_headers(&c.warnings);
        assert!(
            ours.is_empty(),
            "{name}: warnings from our headers: {ours:#?}"
        );
    }
    result
}

fn kernel_symbols(c: &Compiled) -> Vec<String> {
    let mut s: Vec<String> = read_cubin(&c.cubin)
        .unwrap()
        .kernels
        .into_iter()
        .map(|k| k.symbol)
        .collect();
    s.sort();
    s
}

#[test]
fn nvrtc_host_launcher_next_to_its_kernel() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "#include <cuda_runtime.h>\n\
               extern \"C\" __global__ void scale(float* x, int n) {\n\
                   int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f;\n\
               }\n\
               extern \"C\" void launch_scale(float* x, int n, cudaStream_t s) {\n\
                   scale<<<(n + 255) / 256, 256, 0, s>>>(x, n);\n\
                   cudaGetLastError();\n\
               }\n";
    let c = build("launcher.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["scale"]);
}

#[test]
fn nvrtc_template_kernel_launched_only_from_host_is_instantiated() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "template <int N> __global__ void fill(int* x) { x[threadIdx.x] = N; }\n\
               template <int N> static void run(int* x) { fill<N><<<1, 32>>>(x); }\n\
               void pick(int* x, int w) { if (w == 4) run<4>(x); else run<8>(x); }\n";
    let c = build("instantiate.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z4fillILi4EEvPi", "_Z4fillILi8EEvPi"]);
}

#[test]
fn nvrtc_host_constexpr_helper_called_from_device_code() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }\n\
               extern \"C\" __global__ void k(int* x) { x[0] = ceil_div(x[1], 32); }\n";
    let c = build("constexpr.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["k"]);
}

#[test]
fn nvrtc_c_and_cpp_library_includes_resolve() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "#include <stdlib.h>\n#include <cstdlib>\n#include <cuda.h>\n\
               #include <cuda_runtime.h>\n#include <cuda_runtime_api.h>\n#include <algorithm>\n\
               #include <cstdint>\n#include <cstring>\n#include <type_traits>\n#include <limits>\n\
               #include <utility>\n#include <vector>\n#include <mutex>\n\
               extern \"C\" __global__ void k(float* x, std::uint32_t n) {\n\
                   static_assert(std::is_same_v<std::int64_t, int64_t>);\n\
                   float a = x[0], b = x[1]; std::swap(a, b);\n\
                   x[2] = std::min(a, b) + std::max(a, b) + std::numeric_limits<float>::epsilon();\n\
                   x[3] = CUDA_VERSION >= 12000 ? 1.0f : 0.0f;\n\
               }\n";
    let c = build("includes.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["k"]);
}

#[test]
fn nvrtc_infinity_without_any_include() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "extern \"C\" __global__ void k(float* x) {\n\
                   x[0] = INFINITY; x[1] = -NAN; x[2] = M_PI; x[3] = std::sqrt(x[4]);\n\
               }\n";
    let c = build("implicit.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["k"]);
    // Mixing with CCCL's <cuda/std/cmath>, which defines INFINITY too, stays silent.
    let src = format!("#include <cuda/std/cmath>\n{src}");
    let c = build("implicit_cccl.cu", &src).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.warnings.is_empty(), "{:#?}", c.warnings);
}

#[test]
fn nvrtc_device_runtime_api_without_any_include() {
    if !nvrtc_or_skip() {
        return;
    }
    // nvcc's implicit <cuda_runtime.h> declares the device runtime's functions for device code
    // (NVIDIA's graphConditionalNodes sample calls cudaGraphSetConditional with no include of
    // its own); NVRTC's <cuda_runtime.h> leaves them out, cudacheck's implicit header does not.
    let src = "__global__ void set(cudaGraphConditionalHandle h, const int* v) {\n\
                   if (threadIdx.x == 0) cudaGraphSetConditional(h, *v);\n\
               }\n\
               __global__ void wait() { cudaGridDependencySynchronize(); }\n";
    let c = build("devrt.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        kernel_symbols(&c),
        ["_Z3setyPKi", "_Z4waitv"],
        "both kernels compiled"
    );
    // The toolkit's internal headers it reaches (crt/host_defines.h) do not warn either.
    assert!(c.warnings.is_empty(), "{:#?}", c.warnings);
}

#[test]
fn nvrtc_host_code_that_cannot_be_set_aside_names_construct_and_fix() {
    if !nvrtc_or_skip() {
        return;
    }
    // A vector in a kernel: host-only, and nothing host-only can be set aside inside a kernel.
    let src = "#include <vector>\n\
               extern \"C\" __global__ void k(float* x) { std::vector<float> v; x[0] = 1; }\n";
    let e = build("vector.cu", src).unwrap_err();
    let CompileError::Failed { diagnostics, .. } = &e else {
        panic!("expected a compile failure, got {e}");
    };
    let d = diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert_eq!((d.line, d.file.as_str()), (Some(2), "vector.cu"));
    let text = e.to_string();
    assert!(text.contains("`std::vector`"), "{text}");
    assert!(text.contains("host-only"), "{text}");
    assert!(
        text.contains("Pass the kernel a pointer and a length"),
        "{text}"
    );
}

#[test]
fn nvrtc_device_code_calling_host_code_names_the_fix() {
    if !nvrtc_or_skip() {
        return;
    }
    // Device code calls a host helper that uses the runtime API: nvcc rejects the call too.
    let src = "int device_count() { int n = 0; cudaGetDeviceCount(&n); return n; }\n\
               extern \"C\" __global__ void k(int* x) { x[0] = device_count(); }\n";
    let e = build("host_call.cu", src).unwrap_err();
    let CompileError::Failed { diagnostics, .. } = &e else {
        panic!("expected a compile failure, got {e}");
    };
    let d = diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert_eq!(d.line, Some(2), "the error is at the device call: {e}");
    let text = e.to_string();
    assert!(
        text.contains("`device_count` (line 1) is host code"),
        "{text}"
    );
    assert!(text.contains("`__device__` function"), "{text}");
}

#[test]
fn nvrtc_wmma_through_mma_h() {
    if !nvrtc_or_skip() {
        return;
    }
    // `<mma.h>` includes the toolkit's `crt/mma.h` (nvidia-cuda-crt, installed beside NVRTC).
    let src = r#"#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void tile16(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
"#;
    let c = build("wmma.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["tile16"]);
}

#[test]
fn nvrtc_stream_templates_named_in_host_only_declarations() {
    if !nvrtc_or_skip() {
        return;
    }
    // Thrust-style: a header names std::basic_ostream in a host-only operator<< declaration;
    // a host helper formats with std::ostringstream and is set aside.
    let src = r#"#include <ostream>
#include <sstream>
#include <string>
template <class T> struct boxed { T v; };
template <class C, class Tr, class T>
std::basic_ostream<C, Tr>& operator<<(std::basic_ostream<C, Tr>& os, const boxed<T>& b);
std::ostream& describe(std::ostream& os, int n);
extern "C" __global__ void twice(boxed<float>* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i].v *= 2.0f;
}
"#;
    let c = build("streams.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["twice"]);
}

#[test]
fn nvrtc_dispatch_through_host_helpers_and_a_headers_launcher_macro() {
    if !nvrtc_or_skip() {
        return;
    }
    // The shape of ggml-derived `mmq` instance files: a launcher template, a host function
    // that picks its specialization, and the entry point defined by a macro of the header.
    let dir = std::env::temp_dir().join(format!("cudacheck-dispatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("entry.cuh"),
        "#pragma once\n\
         #define DEFINE_ENTRY(suffix, launch) \\\n\
           extern \"C\" void entry_##suffix(float* out, int x, void* stream) { \\\n\
             launch(out, x, (cudaStream_t)stream); \\\n\
           }\n",
    )
    .unwrap();
    let file = dir.join("dispatch.cu");
    std::fs::write(
        &file,
        "#include \"entry.cuh\"\n\
         template <int X> __global__ void mm(float* out) { out[threadIdx.x] = X; }\n\
         template <int X> static void instantiate(float* out, cudaStream_t s) {\n\
             mm<X><<<1, 32, 0, s>>>(out);\n\
         }\n\
         static void launch_case(float* out, int x, cudaStream_t s) {\n\
             switch (x) { case 8: instantiate<8>(out, s); break; default: instantiate<16>(out, s); }\n\
         }\n\
         DEFINE_ENTRY(f32, launch_case)\n",
    )
    .unwrap();
    let source = CudaSource::from_file(&file).unwrap();
    let result = compile(&source, &CompileOptions::new("sm_90".parse().unwrap()));
    let _ = std::fs::remove_dir_all(&dir);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z2mmILi16EEvPf", "_Z2mmILi8EEvPf"]);
}

/// The remarks a compile made about library includes it set aside: `(line, message)`.
fn set_aside_remarks(c: &Compiled) -> Vec<(Option<u32>, String)> {
    c.warnings
        .iter()
        .filter(|d| d.message.contains("set aside"))
        .map(|d| (d.line, d.message.clone()))
        .collect()
}

#[test]
fn nvrtc_thrust_used_only_by_host_code_is_set_aside() {
    if !nvrtc_or_skip() {
        return;
    }
    // The shape of MoE kernel files: Thrust's scan in a host function beside the kernels.
    let src = "#include <cuda_runtime.h>\n\
               #include <thrust/device_ptr.h>\n\
               #include <thrust/scan.h>\n\
               #include <thrust/execution_policy.h>\n\
               __global__ void count(const int* ids, int* counts, int n) {\n\
                   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                   if (i < n) atomicAdd(&counts[ids[i]], 1);\n\
               }\n\
               void offsets(const int* ids, int* counts, int* offs, int n, int e, cudaStream_t s) {\n\
                   count<<<(n + 255) / 256, 256, 0, s>>>(ids, counts, n);\n\
                   thrust::device_ptr<const int> c(counts);\n\
                   thrust::device_ptr<int> o(offs);\n\
                   thrust::inclusive_scan(thrust::cuda::par.on(s), c, c + e, o + 1);\n\
               }\n";
    let c = build("moe_offsets.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z5countPKiPii"]);
    let remarks = set_aside_remarks(&c);
    let lines: Vec<Option<u32>> = remarks.iter().map(|(l, _)| *l).collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| matches!(l, Some(2..=4))),
        "{remarks:?}"
    );
    assert!(
        remarks.iter().all(|(_, m)| m.contains("`thrust`")),
        "{remarks:?}"
    );
    // `<cuda_runtime.h>` compiles and is kept.
    assert!(
        !remarks.iter().any(|(_, m)| m.contains("cuda_runtime")),
        "{remarks:?}"
    );
    // A second compile (from the module cache, when it is on) says the same.
    let again = build("moe_offsets.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set_aside_remarks(&again), remarks);
}

#[test]
fn nvrtc_a_library_that_device_code_names_is_not_set_aside() {
    if !nvrtc_or_skip() {
        return;
    }
    // Device code calls Thrust itself: setting the include aside would only trade NVRTC's
    // error inside Thrust for "namespace thrust is undefined"; the error stays Thrust's.
    let src = "#include <thrust/scan.h>\n\
               #include <thrust/execution_policy.h>\n\
               __global__ void scan(const int* a, int* b, int n) {\n\
                   thrust::inclusive_scan(thrust::seq, a, a + n, b);\n\
               }\n";
    let e = build("device_thrust.cu", src).expect_err("Thrust under NVRTC does not compile");
    let CompileError::Failed { diagnostics, .. } = e else {
        panic!("{e}")
    };
    assert!(
        !diagnostics.iter().any(|d| d.message.contains("set aside")),
        "{diagnostics:#?}"
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d.is_error() && d.file.contains("thrust")),
        "the error is still the one inside Thrust: {diagnostics:#?}"
    );
}

#[test]
fn nvrtc_missing_headers_of_host_bindings_are_set_aside_and_device_ones_are_not() {
    if !nvrtc_or_skip() {
        return;
    }
    // A binding file: the framework's header only the host wrapper needs.
    let src = "#include <torch/extension.h>\n\
               __global__ void twice(float* x, int n) {\n\
                   int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f;\n\
               }\n\
               void twice_op(torch::Tensor x) {\n\
                   int n = x.numel();\n\
                   twice<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), n);\n\
               }\n";
    let c = build("binding.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z5twicePfi"]);
    let remarks: Vec<(Option<u32>, &str)> = c
        .warnings
        .iter()
        .filter(|d| d.severity == Severity::Remark)
        .map(|d| (d.line, d.message.as_str()))
        .collect();
    assert_eq!(remarks.len(), 1, "{remarks:?}");
    assert_eq!(remarks[0].0, Some(1));
    assert!(
        remarks[0]
            .1
            .contains("`#include <torch/extension.h>`: NVRTC cannot find this header"),
        "{remarks:?}"
    );

    // A missing header whose names the kernel uses: the kernel's error names the header and
    // the fix.
    let src = "#include <mathlib/fast.h>\n\
               __global__ void k(float* x) { x[threadIdx.x] = mathlib::fast_exp(x[threadIdx.x]); }\n";
    let e = build("device_lib.cu", src).expect_err("the header is missing");
    let CompileError::Failed { diagnostics, .. } = e else {
        panic!("{e}")
    };
    let named = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .flat_map(|d| &d.notes)
        .any(|n| n.contains("`<mathlib/fast.h>`") && n.contains("-I DIR"));
    assert!(named, "{diagnostics:#?}");
}

#[test]
fn nvrtc_a_found_host_library_header_reached_through_another_is_set_aside() {
    if !nvrtc_or_skip() {
        return;
    }
    // cuBLAS in a full toolkit: the file includes `<cublas_v2.h>`, which includes
    // `cublas_api.h`, whose host API names types NVRTC does not declare. NVRTC finds the
    // headers (here a library directory outside the project, passed as a system include the
    // way the toolkit's is) and fails inside the second one.
    let lib = std::env::temp_dir().join(format!("cudacheck-hostlib-{}", std::process::id()));
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("fakeblas_v2.h"),
        "#pragma once\n#include \"fakeblas_api.h\"\n",
    )
    .unwrap();
    std::fs::write(
        lib.join("fakeblas_api.h"),
        "#pragma once\n\
         typedef struct { float x, y; } fakeComplex;\n\
         int fakeblasSetLogger(fakeLoggerHost_t callback);\n\
         int fakeblasSetMantissa(fakeMantissaControl control);\n",
    )
    .unwrap();
    let opts = CompileOptions {
        extra_options: vec![format!("-I{}", lib.display())],
        ..CompileOptions::new("sm_90".parse().unwrap())
    };
    let src = "#include <fakeblas_v2.h>\n\
               __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n\
               int main() { fakeblasSetLogger(0); twice<<<1, 32>>>(0); return 0; }\n";
    let c = compile(&CudaSource::from_str("blas.cu", src), &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z5twicePf"]);
    let remark = c
        .warnings
        .iter()
        .find(|d| d.severity == Severity::Remark && d.message.contains("fakeblas_v2.h"));
    assert!(
        remark.is_some_and(|d| d.line == Some(1)),
        "{:#?}",
        c.warnings
    );

    // Device code that uses the library's types still fails, and the error names the header.
    let src = "#include <fakeblas_v2.h>\n\
               __global__ void k(fakeComplex* z) { z[threadIdx.x].x = 0.0f; }\n";
    let e = compile(&CudaSource::from_str("blas_dev.cu", src), &opts)
        .expect_err("device code needs the header");
    let CompileError::Failed { diagnostics, .. } = e else {
        panic!("{e}")
    };
    let named = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .flat_map(|d| &d.notes)
        .any(|n| n.contains("fakeblas_v2.h"));
    assert!(named, "{diagnostics:#?}");
    std::fs::remove_dir_all(&lib).ok();
}

#[test]
fn nvrtc_a_headers_launcher_template_instantiates_what_its_callers_launch() {
    if !nvrtc_or_skip() {
        return;
    }
    // The shape of Marlin and paged-attention files: the launcher template and its launch
    // macro in a header, the file calling it with concrete arguments (through a macro too).
    let dir = std::env::temp_dir().join(format!("cudacheck-shadow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("run.cuh"),
        "#pragma once\n\
         #include <stdexcept>\n\
         namespace lib {\n\
         template <typename T, int N, bool Z> __global__ void body(T* x) { x[threadIdx.x] = N + Z; }\n\
         }\n\
         #define LAUNCH_ONE(NN) lib::body<T, NN, Z><<<1, 32, 0, s>>>(x);\n\
         template <typename T,\n\
                   int W,      // width\n\
                   bool Z = false>\n\
         void run(T* x, cudaStream_t s) {\n\
           if constexpr (Z) {\n\
             LAUNCH_ONE(W)\n\
           } else {\n\
             switch (W) { case 4: LAUNCH_ONE(2 * W) break; default: LAUNCH_ONE(W + 1) }\n\
           }\n\
           if (cudaGetLastError() != cudaSuccess) throw std::runtime_error(\"launch\");\n\
         }\n",
    )
    .unwrap();
    let file = dir.join("entry.cu");
    std::fs::write(
        &file,
        "#include \"run.cuh\"\n\
         #define CALL(T, W) run<T, W>(x, s);\n\
         extern \"C\" void entry_f32(float* x, cudaStream_t s) { CALL(float, 4) }\n\
         extern \"C\" void entry_i32(int* x, cudaStream_t s) { run<int, 8, true>(x, s); }\n",
    )
    .unwrap();
    let source = CudaSource::from_file(&file).unwrap();
    let result = compile(&source, &CompileOptions::new("sm_90".parse().unwrap()));
    let _ = std::fs::remove_dir_all(&dir);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    // What nvcc instantiates: run<float, 4> takes the else branch (both switch arms: 8 and
    // 5), run<int, 8, true> the `if constexpr` branch; never body<int, 16/9, true>.
    assert_eq!(
        kernel_symbols(&c),
        [
            "_ZN3lib4bodyIfLi5ELb0EEEvPT_",
            "_ZN3lib4bodyIfLi8ELb0EEEvPT_",
            "_ZN3lib4bodyIiLi8ELb1EEEvPT_"
        ]
    );
}

#[test]
fn nvrtc_layout_assertions_on_offsetof_are_set_aside_with_a_remark() {
    if !nvrtc_or_skip() {
        return;
    }
    // nvcc's host compiler has a constant `offsetof`; NVRTC has only the classic form.
    let src = "#include <cstddef>\n\
               struct Weight { const float* a; const float* b; int rank; float scale; };\n\
               static_assert(offsetof(Weight, rank) == 16,\n\
                             \"the host packs this layout\");\n\
               static_assert(sizeof(Weight) == 24, \"kept: NVRTC evaluates it\");\n\
               __global__ void scale(const Weight* w, float* out) {\n\
                   out[threadIdx.x] = w->scale * w->a[threadIdx.x];\n\
               }\n";
    let c = build("layout.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z5scalePK6WeightPf"]);
    let remarks = set_aside_remarks(&c);
    assert_eq!(remarks.len(), 1, "{remarks:?}");
    assert_eq!(remarks[0].0, Some(3));
    assert!(remarks[0].1.contains("offsetof"), "{remarks:?}");

    // A wrong `sizeof` assertion is still the user's error: only `offsetof` is set aside.
    let wrong = src.replace("sizeof(Weight) == 24", "sizeof(Weight) == 20");
    let e = build("layout_wrong.cu", &wrong).expect_err("the assertion fails");
    let CompileError::Failed { diagnostics, .. } = e else {
        panic!("{e}")
    };
    assert!(
        diagnostics
            .iter()
            .any(|d| d.is_error() && d.line == Some(5)),
        "{diagnostics:#?}"
    );
}

#[test]
fn nvrtc_host_classes_and_host_only_members_are_left_out_as_nvccs_device_pass_does() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = "#include <exception>\n\
               #include <sstream>\n\
               #include <string>\n\
               #define CHECK(c, m) if (!(c)) throw lib::Error(m)\n\
               namespace lib {\n\
               class Error : public std::exception {\n\
                 std::string msg_;\n\
               public:\n\
                 explicit Error(const std::string& m) { std::ostringstream o; o << \"lib: \" << m; msg_ = o.str(); }\n\
                 const char* what() const noexcept override { return msg_.c_str(); }\n\
               };\n\
               struct fastdiv {\n\
                 unsigned d, m;\n\
                 __host__ __device__ fastdiv() : d(1), m(0) {}\n\
                 __host__ fastdiv(unsigned d) : d(d), m(0x80000000u / d) { CHECK(d != 0, \"zero\"); }\n\
                 __device__ unsigned div(unsigned n) const { return __umulhi(n, m) >> 0; }\n\
               };\n\
               }\n\
               __global__ void divide(lib::fastdiv f, unsigned* out) { out[threadIdx.x] = f.div(threadIdx.x); }\n";
    let c = build("host_classes.cu", src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel_symbols(&c), ["_Z6divideN3lib7fastdivEPj"]);
}

#[test]
fn nvrtc_a_missing_header_the_kernel_needs_is_named_with_the_fix() {
    if !nvrtc_or_skip() {
        return;
    }
    // A project header missing from the include path defines what the kernel uses (`BLOCK`):
    // compiled as empty, the kernel fails, and its error names the header and the fix.
    let src = "#include <params.cuh>\n__global__ void k(float* y) { y[0] = BLOCK; }\n";
    let e = build("params_user.cu", src).expect_err("the header is missing");
    let CompileError::Failed { diagnostics, .. } = e else {
        panic!("{e}")
    };
    let block = diagnostics
        .iter()
        .find(|d| d.is_error() && d.message.contains("\"BLOCK\""))
        .unwrap_or_else(|| panic!("{diagnostics:#?}"));
    assert_eq!(block.line, Some(2));
    let help = block.notes.join("\n");
    assert!(
        help.contains("`<params.cuh>` (not found, params_user.cu:1)"),
        "{help}"
    );
    assert!(help.contains("-I DIR"), "{help}");
}

/// The name of the test below, which the child runs leave out.
const MATRIX_TEST: &str = "nvrtc_compat_cases_under_every_release_of_the_matrix";

#[test]
fn nvrtc_compat_cases_under_every_release_of_the_matrix() {
    under_every_other_release(&["nvrtc_", "--skip", MATRIX_TEST, "--test-threads=2"]);
}
