//! Pure tests of setting host code aside (`source::set_aside_host_code`): what is blanked, what
//! is kept, that every kept character stays on its line and column, and which launched kernels
//! are named for NVRTC.

use cudacheck_core::source::{set_aside_host_code, HostDecision, KeptReason, SetAsideKind};

fn decision(src: &str, name: &str) -> HostDecision {
    let host = set_aside_host_code(src).unwrap();
    host.functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("`{name}` is not a host function: {:#?}", host.functions))
        .decision
        .clone()
}

/// (line, column) of the first occurrence of `needle`, columns in characters.
fn position(text: &str, needle: &str) -> (usize, usize) {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in {text}"));
    let line = text[..at].matches('\n').count() + 1;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..at].chars().count() + 1)
}

const LAUNCHER: &str = r#"#include <cstdio>
__global__ void scale(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.0f; }

extern "C" void launch_scale(float* x, int n, cudaStream_t s) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, n);  // é
}
__global__ void after(float* y) { y[0] = 1.0f; }
"#;

#[test]
fn a_launcher_is_blanked_and_every_other_character_keeps_its_place() {
    let host = set_aside_host_code(LAUNCHER).unwrap();
    assert_eq!(
        decision(LAUNCHER, "launch_scale"),
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
    assert!(!host.text.contains("launch_scale") && !host.text.contains("<<<"));
    assert_eq!(host.text.lines().count(), LAUNCHER.lines().count());
    for needle in [
        "__global__ void scale",
        "x[i] *= 2.0f",
        "__global__ void after",
        "y[0]",
    ] {
        assert_eq!(
            position(&host.text, needle),
            position(LAUNCHER, needle),
            "{needle}"
        );
    }
    // Nothing was launched that needs naming: `scale` is not a template.
    assert!(host.launched.is_empty());
    assert_eq!(host.appended_from_line, None);
}

#[test]
fn device_functions_and_kernels_are_never_host_functions() {
    let src = "__device__ float sq(float x) { return x * x; }\n\
               __host__ __device__ float cube(float x) { return x * x * x; }\n\
               __global__ void k(float* x) { x[0] = sq(x[0]) + cube(x[1]); }\n\
               static __device__ __forceinline__ int lane() { return threadIdx.x & 31; }\n";
    let host = set_aside_host_code(src).unwrap();
    assert!(host.functions.is_empty(), "{:#?}", host.functions);
    assert_eq!(host.text, src);
    assert!(!host.changed());
}

#[test]
fn a_constexpr_helper_device_code_calls_is_kept() {
    let src = "constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }\n\
               __global__ void k(int* x) { x[0] = ceil_div(x[1], 4); }\n";
    assert_eq!(
        decision(src, "ceil_div"),
        HostDecision::Kept(KeptReason::CalledFromDevice)
    );
    assert_eq!(set_aside_host_code(src).unwrap().text, src);
}

#[test]
fn a_helper_only_host_code_calls_is_set_aside_with_its_caller() {
    let src = "static int blocks_for(int n) { return (n + 255) / 256; }\n\
               __global__ void k(float* x) { x[0] = 1; }\n\
               void launch(float* x, int n) { k<<<blocks_for(n), 256>>>(x); }\n";
    assert_eq!(
        decision(src, "blocks_for"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
    assert_eq!(
        decision(src, "launch"),
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
}

#[test]
fn helpers_device_code_reaches_through_another_helper_are_kept() {
    let src = "constexpr int two() { return 2; }\n\
               constexpr int four() { return two() * two(); }\n\
               __global__ void k(int* x) { x[0] = four(); }\n";
    assert_eq!(
        decision(src, "two"),
        HostDecision::Kept(KeptReason::CalledFromDevice)
    );
}

#[test]
fn host_declarations_are_set_aside() {
    let src = "void launch(float* x, int n);\n__global__ void k(float* x) { x[0] = 1; }\n";
    assert_eq!(
        decision(src, "launch"),
        HostDecision::SetAside(SetAsideKind::Declaration)
    );
}

#[test]
fn macro_bodies_are_untouched_and_what_kernel_macros_name_is_kept() {
    let src = "int helper(int x) { return x + 1; }\n\
               int blocks(int n) { return n / 32; }\n\
               #define KERNEL(T) __global__ void k_##T(T* x) { x[0] = helper(1); }\n\
               #define LAUNCH(T) void launch_##T(T* x, int n) { k_##T<<<blocks(n), 1>>>(x); }\n\
               KERNEL(float)\n";
    let host = set_aside_host_code(src).unwrap();
    for define in [
        "#define KERNEL(T) __global__ void k_##T(T* x) { x[0] = helper(1); }",
        "#define LAUNCH(T) void launch_##T(T* x, int n) { k_##T<<<blocks(n), 1>>>(x); }",
    ] {
        assert!(host.text.contains(define), "{}", host.text);
    }
    assert_eq!(
        decision(src, "helper"),
        HostDecision::Kept(KeptReason::CalledFromDevice)
    );
    // A launcher macro is host code: what only it calls is host code too.
    assert_eq!(
        decision(src, "blocks"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
}

#[test]
fn a_macro_only_host_code_invokes_keeps_nothing_it_names() {
    // llm.c's `common.h`: a checking function and a macro of the same name, invoked by host
    // code only; the function names a library's status type NVRTC does not know.
    let src = "void cublasCheck(cublasStatus_t s, const char* f, int l) {\n\
                 if (s != CUBLAS_STATUS_SUCCESS) { printf(\"%s:%d\\n\", f, l); }\n\
               }\n\
               #define cublasCheck(s) { cublasCheck((s), __FILE__, __LINE__); }\n\
               #define SCALE 2.0f\n\
               __global__ void k(float* x) { x[0] = SCALE; }\n\
               void setup(cublasHandle_t h) { cublasCheck(cublasCreate(&h)); }\n";
    assert_eq!(
        decision(src, "cublasCheck"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
    let host = set_aside_host_code(src).unwrap();
    assert!(
        !host.text.contains("CUBLAS_STATUS_SUCCESS"),
        "{}",
        host.text
    );
    assert!(
        host.text.contains("#define cublasCheck(s)"),
        "{}",
        host.text
    );
}

#[test]
fn launches_through_nested_statement_macros_are_expanded() {
    let src = "template <typename T, int B> __global__ void g(T* x) { x[0] = B; }\n\
               #define BY_BLOCK(T, B) g<T, B><<<1, B>>>(x);\n\
               #define BY_TYPE(T) switch (b) { case 32: BY_BLOCK(T, 32); break; default: BY_BLOCK(T, 64); }\n\
               extern \"C\" void run(float* x, int b) { BY_TYPE(float); }\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.launched, ["g<float, 32>", "g<float, 64>"]);
}

#[test]
fn a_macro_that_may_mean_device_keeps_the_function_out_of_reach() {
    let src = "#define HOST_DEVICE __host__ __device__\n\
               HOST_DEVICE inline float half_of(float x) { return x / 2; }\n\
               __global__ void k(float* x) { x[0] = 1; }\n";
    let host = set_aside_host_code(src).unwrap();
    assert!(host.functions.is_empty(), "{:#?}", host.functions);
    assert_eq!(host.text, src);
}

#[test]
fn a_function_holding_a_define_is_set_aside_and_the_define_kept() {
    // A program's `main` defines a tolerance the code after it uses.
    let src = "void setup() {\n  int n = 0;\n#define BLOCK 256\n}\n__global__ void k(int* x) { x[0] = BLOCK; }\n";
    assert_eq!(
        decision(src, "setup"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
    let host = set_aside_host_code(src).unwrap();
    assert!(host.text.contains("\n#define BLOCK 256\n"), "{}", host.text);
    assert!(!host.text.contains("int n"), "{}", host.text);
    assert_eq!(
        position(&host.text, "__global__"),
        position(src, "__global__")
    );
    let balanced = "void setup(int* p) {\n#if FAST\n  p[0] = 1;\n#endif\n}\n";
    assert_eq!(
        decision(balanced, "setup"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
}

#[test]
fn a_launched_template_specialization_is_named_after_the_last_line() {
    let src = "template <typename T, int N> __global__ void k(T* x) { x[0] = N; }\n\
               void launch(float* x) { k<float, 4><<<1, 32>>>(x); }\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.launched, ["k<float, 4>"]);
    assert_eq!(host.appended_from_line, Some(3));
    let appended = &host.text[host.text_without_launched().len()..];
    assert!(appended.contains("(void)&k<float, 4>;"), "{appended}");
    assert_eq!(
        host.text_without_launched().lines().count(),
        src.lines().count()
    );
}

#[test]
fn a_launchers_template_parameters_are_bound_by_its_explicit_callers() {
    let src = "namespace q {\n\
               template <int X, bool B> __global__ void mm(float* x) { x[0] = X + B; }\n\
               template <int X> static void inst(float* x) {\n\
                   mm<X, false><<<1, 1>>>(x);\n\
                   mm<X, true><<<1, 1>>>(x);\n\
               }\n\
               void pick(float* x, int w) {\n\
                   switch (w) { case 8: inst<8>(x); break; case 16: inst<16>(x); break; }\n\
               }\n\
               }\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(
        host.launched,
        [
            "mm<8, false>",
            "mm<16, false>",
            "mm<8, true>",
            "mm<16, true>"
        ]
    );
    // They are named inside the launcher's namespace.
    assert!(
        host.text
            .contains("namespace q { __attribute__((unused)) static __device__ void"),
        "{}",
        host.text
    );
}

#[test]
fn launches_through_a_statement_macro_are_expanded() {
    let src = "template <int QK> __global__ void g(float* x) { x[0] = QK; }\n\
               #define LAUNCH_G(qk) g<qk><<<1, 1, 0, s>>>(x);\n\
               extern \"C\" void run(float* x, int t, cudaStream_t s) {\n\
                   switch (t) { case 0: { LAUNCH_G(32); break; } case 1: { LAUNCH_G(256); break; } }\n\
               }\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.launched, ["g<32>", "g<256>"]);
}

#[test]
fn a_launch_that_depends_on_a_local_is_reported_not_named() {
    let src = "template <int B> __global__ void k(float* x) { x[0] = B; }\n\
               void launch(float* x) { const int block = 128; k<block><<<1, block>>>(x); }\n";
    let host = set_aside_host_code(src).unwrap();
    assert!(host.launched.is_empty());
    assert_eq!(host.unresolved_launches.len(), 1);
    assert_eq!(host.unresolved_launches[0].kernel, "k<block>");
    assert_eq!(host.unresolved_launches[0].depends_on, ["block"]);
    assert_eq!(host.unresolved_launches[0].location.line, 2);
}

#[test]
fn an_invocation_that_defines_host_launchers_is_blanked_not_the_macro() {
    let src = "template <typename T> __global__ void k(T* x) { x[0] = T(1); }\n\
               #define LAUNCHER(tag, T) \\\n  extern \"C\" void launch_##tag(T* x) { k<T><<<1, 1>>>(x); }\n\
               LAUNCHER(f32, float)\n\
               LAUNCHER(f64, double)\n";
    let host = set_aside_host_code(src).unwrap();
    let kept = host.text_without_launched();
    assert!(kept.contains("#define LAUNCHER(tag, T)"), "{kept}");
    assert!(!kept.contains("LAUNCHER(f32"), "{kept}");
    assert_eq!(position(kept, "__global__"), position(src, "__global__"));
    assert_eq!(host.launched, ["k<float>", "k<double>"]);
    assert!(host.functions.iter().all(|f| f.name == "LAUNCHER"
        && f.decision == HostDecision::SetAside(SetAsideKind::MacroHostFunctions)));
}

#[test]
fn an_invocation_that_defines_kernels_is_left_alone() {
    let src =
        "#define UNARY(name, T) \\\n  extern \"C\" __global__ void name(T* x) { x[0] = T(1); }\n\
               UNARY(neg_f32, float)\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.text, src);
}

#[test]
fn a_kernel_after_a_macro_invocation_without_semicolon_stays_a_kernel() {
    // The parser folds `__global__` into the invocation before it; the kernel is still one.
    let src = "#define OP(T, N) extern \"C\" int count_##N(const T* x) { return 0; }\n\
               OP(float, f32)\n\
               __global__ void after(float* x) { x[0] = 1; }\n";
    let host = set_aside_host_code(src).unwrap();
    assert!(
        host.functions.iter().all(|f| f.name != "after"),
        "{:#?}",
        host.functions
    );
    assert!(host
        .text
        .contains("__global__ void after(float* x) { x[0] = 1; }"));
}

#[test]
fn a_function_doing_host_only_things_is_host_code_even_if_a_macro_names_it() {
    let src = "inline cudaError_t set_smem_once(const void* f, int v) {\n\
                 static std::mutex m; std::lock_guard<std::mutex> l(m);\n\
                 return cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, v);\n\
               }\n\
               #define SET_SMEM(F, V) set_smem_once(F, V)\n";
    assert_eq!(
        decision(src, "set_smem_once"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
}

#[test]
fn a_launch_that_deduces_template_arguments_names_the_deduced_kernel() {
    let src = "template <typename T> __global__ void scale(const T* __restrict__ in, T* out, int n) {}\n\
               template <typename T> void run(const void* in, void* out, int n) {\n\
                   scale<<<1, 32>>>(static_cast<const T*>(in), static_cast<T*>(out), n);\n\
               }\n\
               extern \"C\" void run_f32(const void* i, void* o, int n) { run<float>(i, o, n); }\n\
               extern \"C\" void run_direct(const double* i, double* o, int n) { scale<<<1, 32>>>(i, o, n); }\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.launched, ["scale<float>", "scale<double>"]);
}

#[test]
fn deduction_reads_file_scope_variables_and_temporaries_of_named_types() {
    // llm.c's `matmul_backward_bias.cu`: a kernel's `bool` parameter deduced from a
    // `std::bool_constant<...>{}` argument, its element type from a file-scope buffer. An
    // argument whose type cannot be read (`n * 2`) binds nothing, and `T` still comes from
    // the other arguments.
    let src = "template <typename Out, bool Atomic>\n\
               __global__ void bias(Out* out, const float* in, int n, std::bool_constant<Atomic>) {}\n\
               float* scratch;\n\
               void run(double* out, const float* in, int n) {\n\
                   bias<<<1, 32>>>(out, in, n * 2, std::bool_constant<false>{});\n\
                   bias<<<1, 32>>>(scratch, in, n, std::bool_constant<true>{});\n\
               }\n\
               void prototype(int scratch_len, unsigned* out);\n";
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.launched, ["bias<double, false>", "bias<float, true>"]);
    // A parameter only an unreadable argument could bind leaves that launch undeduced: it
    // names no instantiation, so NVRTC is never asked for a wrong one.
    let src = src.replace("(out, in, n * 2,", "(out + 1, in, n,");
    let host = set_aside_host_code(&src).unwrap();
    assert_eq!(host.launched, ["bias<float, true>"]);
}

#[test]
fn a_header_helper_the_including_file_names_is_kept() {
    let header = "constexpr int div_ceil(int a, int b) { return (a + b - 1) / b; }\n";
    let host = cudacheck_core::source::set_aside_host_code(header).unwrap();
    assert!(host.changed(), "alone, nothing in the header calls it");
    let used: std::collections::HashSet<String> = ["div_ceil".to_string()].into();
    let host = cudacheck_core::source::set_aside_host_code_in(header, &used).unwrap();
    assert_eq!(host.text, header);
}

/// Written in the style of ggml-derived `mmq` instance files: a launcher template, a host
/// function choosing its specialization by a switch, and the file's `extern "C"` entry point
/// defined by a macro of the header the file includes.
const DISPATCH: &str = r#"#include "launchers.cuh"
template <int X>
__global__ void mm(float* out) { out[threadIdx.x] = X; }

template <int X>
static void instantiate(float* out, cudaStream_t s) {
    mm<X><<<1, 32, 0, s>>>(out);
}

static void launch_case(float* out, int x, cudaStream_t s) {
    switch (x) {
    case 8: instantiate<8>(out, s); break;
    default: instantiate<16>(out, s); break;
    }
}

DEFINE_ENTRY(f32, launch_case)
"#;

const DISPATCH_HEADER: &str = r#"#pragma once
#define DEFINE_ENTRY(suffix, launch)                                  \
  extern "C" void entry_##suffix(float* out, int x, void* stream) {   \
    launch(out, x, (cudaStream_t)stream);                             \
  }
"#;

#[test]
fn a_function_calling_host_code_is_host_code_and_a_headers_host_macro_is_set_aside() {
    use cudacheck_core::source::set_aside_host_code_with;
    let host = set_aside_host_code_with(DISPATCH, &Default::default(), &[DISPATCH_HEADER]).unwrap();
    let decision = |name: &str| {
        host.functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("`{name}`: {:#?}", host.functions))
            .decision
            .clone()
    };
    assert_eq!(
        decision("instantiate"),
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
    // It launches nothing itself, and the macro invocation names it: it calls host code.
    assert_eq!(
        decision("launch_case"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
    assert!(!host.text.contains("launch_case") && !host.text.contains("DEFINE_ENTRY"));
    assert!(host.text.contains("__global__ void mm"));
    // Both specializations the switch binds are kernels of the file.
    assert!(
        host.launched.iter().any(|k| k == "mm<8>"),
        "{:?}",
        host.launched
    );
    assert!(
        host.launched.iter().any(|k| k == "mm<16>"),
        "{:?}",
        host.launched
    );

    // Without the header's macro the invocation stays (its expansion is unknown), and so does
    // the name it passes; `launch_case` is still host code, since it calls host code.
    let alone = set_aside_host_code(DISPATCH).unwrap();
    assert!(alone.text.contains("DEFINE_ENTRY(f32, launch_case)"));
}

#[test]
fn a_call_that_a_device_overload_may_take_keeps_the_caller() {
    // `helper(x)` may call the `__device__` overload: the caller is not proven host code.
    let src = r#"
__device__ int helper(int x) { return x + 1; }
void helper(float* p, cudaStream_t s) { cudaMemsetAsync(p, 0, 4, s); }
__global__ void k(int* o) { o[0] = twice(1); }
constexpr int twice(int x) { return helper(x) * 2; }
"#;
    assert_eq!(
        decision(src, "twice"),
        HostDecision::Kept(KeptReason::CalledFromDevice)
    );
}

/// A header's launcher template whose launches depend on its template parameters, under an
/// `if constexpr`, through a statement macro; the launcher's callers are in the file that
/// includes it, which calls it through a macro too.
const LAUNCHER_HEADER: &str = r#"#pragma once
namespace lib {
template <typename T, int N, bool Z> __global__ void body(T* x) { x[threadIdx.x] = N; }
}
#define LAUNCH_ONE(NN) lib::body<T, NN, Z><<<1, 32, 0, s>>>(x);
template <typename T,
          int W,      // width
          bool Z = false>
void run(T* x, cudaStream_t s) {
  constexpr int local = 3;
  if constexpr (Z) {
    LAUNCH_ONE(W)
  } else {
    LAUNCH_ONE(2 * W)
    lib::body<T, local, Z><<<1, 32, 0, s>>>(x);
  }
  cudaGetLastError();
}
"#;

const LAUNCHER_CALLER: &str = r#"#include "run.cuh"
#define CALL(T, W) run<T, W>(x, s);
extern "C" void entry_f32(float* x, cudaStream_t s) { CALL(float, 4) }
extern "C" void entry_i32(int* x, cudaStream_t s) { run<int, 8, true>(x, s); }
"#;

#[test]
fn a_headers_launcher_template_gets_a_shadow_its_callers_instantiate() {
    use cudacheck_core::source::{set_aside_host_code_for, set_aside_host_code_in, Unit};
    use std::collections::HashSet;

    let words: HashSet<String> = ["run", "entry_f32", "entry_i32"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let header = set_aside_host_code_in(LAUNCHER_HEADER, &words).unwrap();
    assert_eq!(
        header.functions[0].decision,
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
    assert_eq!(header.launchers.len(), 1, "{:#?}", header.launchers);
    assert_eq!(header.launchers[0].name, "run");
    assert!(header.launchers[0].namespace.is_empty());
    let appended: String = header
        .text
        .lines()
        .skip(header.appended_from_line.unwrap() as usize - 1)
        .collect::<Vec<_>>()
        .join("\n");
    // The parameter list as written, comment dropped; each launch under its branch; the launch
    // naming a local is left out; the block is guarded against a second inclusion.
    let shadow: String = appended
        .lines()
        .find(|l| l.contains("struct __cudacheck_launches_run"))
        .unwrap_or_else(|| panic!("{appended}"))
        .replace(' ', "");
    assert!(
        shadow.starts_with("template<typenameT,intW,boolZ=false>struct"),
        "{shadow}"
    );
    assert!(
        shadow.contains("ifconstexpr(Z){(void)&lib::body<T,W,Z>;}"),
        "{shadow}"
    );
    assert!(
        shadow.contains("ifconstexpr(!(Z)){(void)&lib::body<T,2*W,Z>;}"),
        "{shadow}"
    );
    assert!(!shadow.contains("local"), "{shadow}");
    assert!(
        appended.contains("#ifndef __CUDACHECK_APPENDED_"),
        "{appended}"
    );
    assert!(appended.trim_end().ends_with("#endif"), "{appended}");
    // Lines and columns of the header's own text stay.
    assert_eq!(
        header.text.lines().take(4).collect::<Vec<_>>(),
        LAUNCHER_HEADER.lines().take(4).collect::<Vec<_>>()
    );

    let main = set_aside_host_code_for(
        LAUNCHER_CALLER,
        &Unit {
            used_elsewhere: &HashSet::new(),
            headers: &[LAUNCHER_HEADER],
            launchers: &header.launchers,
            header: false,
        },
    )
    .unwrap();
    let refs: Vec<&str> = main
        .text
        .lines()
        .filter(|l| l.contains("__cudacheck_launched_"))
        .collect();
    assert_eq!(refs.len(), 2, "{}", main.text);
    for want in [
        "(void)&::__cudacheck_launches_run<float, 4>::refs;",
        "(void)&::__cudacheck_launches_run<int, 8, true>::refs;",
    ] {
        assert!(
            refs.iter().any(|r| r.contains(want)),
            "{want} not in {refs:?}"
        );
    }
    // The main file itself gets no shadows: nothing includes it.
    assert!(main.launchers.is_empty());
    // Without the header's launchers, the file names nothing.
    let alone = set_aside_host_code(LAUNCHER_CALLER).unwrap();
    assert!(
        !alone.text.contains("__cudacheck_launches_run"),
        "{}",
        alone.text
    );
}

#[test]
fn a_launcher_template_called_without_template_arguments_is_bound_by_deduction() {
    // `launch(input, ...)` deduces `T` from `input`'s declared type, as the call does.
    let src = r#"namespace lora {
template <typename T> __global__ void shrink(const T* in, T* out) { out[threadIdx.x] = in[threadIdx.x]; }
template <typename T>
int launch(const T* __restrict__ input, T* output, int n, cudaStream_t stream) {
  shrink<T><<<n, 32, 0, stream>>>(input, output);
  return (int)cudaGetLastError();
}
}
extern "C" int launch_f16(const __half* input, __half* output, int n, cudaStream_t s) {
  return lora::launch(input, output, n, s);
}
extern "C" int launch_f32(const float* input, float* output, int n, cudaStream_t s) {
  return lora::launch(input, output, n, s);
}
"#;
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(
        host.launched,
        ["shrink<__half>", "shrink<float>"],
        "{}",
        host.text
    );
    assert!(
        host.unresolved_launches.is_empty(),
        "{:?}",
        host.unresolved_launches
    );
}

#[test]
fn a_launchers_own_macro_and_constexpr_locals_are_followed() {
    // The launcher defines its launch macro and `#undef`s it; the block size is a `constexpr`
    // local. Both are the launcher's own, so it is set aside and its launches named.
    let src = r#"template <typename T, int D, int BR, int BC> __global__ void attn(T* o) { o[threadIdx.x] = D + BR + BC; }
template <typename T>
void attn_launch(void* o, int head_dim, cudaStream_t stream) {
  constexpr int BR = 8;
  constexpr int ROWS = BR * 2;
#define LAUNCH(DIM, BC) attn<T, DIM, ROWS, BC><<<1, 32 * BR, 0, stream>>>((T*)o)
  switch (head_dim) {
  case 64: LAUNCH(64, 64); break;
  default: LAUNCH(128, 32); break;
  }
#undef LAUNCH
}
extern "C" void attn_f32(void* o, int d, cudaStream_t s) { attn_launch<float>(o, d, s); }
"#;
    assert_eq!(
        decision(src, "attn_launch"),
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
    let host = set_aside_host_code(src).unwrap();
    let launched: Vec<String> = host.launched.iter().map(|k| k.replace(' ', "")).collect();
    assert_eq!(
        launched,
        ["attn<float,64,(8*2),64>", "attn<float,128,(8*2),32>"],
        "{}",
        host.text
    );

    // A macro the function defines but does not undefine may be used after it: the
    // definition stays where it is, the function goes.
    let leaks = src.replace("#undef LAUNCH\n", "");
    assert_eq!(
        decision(&leaks, "attn_launch"),
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
    let host = set_aside_host_code(&leaks).unwrap();
    assert!(
        host.text.contains("#define LAUNCH(DIM, BC)"),
        "{}",
        host.text
    );
}

#[test]
fn an_exception_class_only_host_code_names_is_set_aside() {
    // flashinfer's shape: an exception class built with a string stream, thrown from a
    // checking macro that only host code uses. "CUDA Error" in a string names nothing.
    let src = r#"#include <sstream>
#define LIB_ERROR(msg) throw lib::Error(__FILE__, msg)
#define LIB_CHECK(c, msg) if (!(c)) { LIB_ERROR(msg); }
namespace lib {
class Error : public std::exception {
  std::string message_;
public:
  Error(const std::string& file, const std::string& m) {
    std::ostringstream oss; oss << file << ": " << m; message_ = oss.str();
  }
  const char* what() const noexcept override { return message_.c_str(); }
};
struct Pair { float a, b; };
}
__global__ void k(lib::Pair* p) { p[threadIdx.x].a = 1.0f; }
"#;
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(
        decision(src, "Error"),
        HostDecision::SetAside(SetAsideKind::HostClass)
    );
    assert!(!host.text.contains("ostringstream"), "{}", host.text);
    assert!(
        host.text.contains("struct Pair { float a, b; };"),
        "{}",
        host.text
    );
    assert_eq!(
        position(&host.text, "__global__"),
        position(src, "__global__"),
        "lines and columns kept"
    );

    // Device code naming the class (nvcc would reject it, but it is not provably host code
    // here) keeps it.
    let named = src.replace(
        "__global__ void k(lib::Pair* p)",
        "__global__ void k(lib::Pair* p, lib::Error* e)",
    );
    let host = set_aside_host_code(&named).unwrap();
    assert!(host.text.contains("class Error"), "{}", host.text);
}

#[test]
fn a_platform_struct_with_all_caps_member_types_is_host_code() {
    // NVIDIA's samples' `multithreading.h`: one struct per platform, the Windows one of
    // `CRITICAL_SECTION` and `HANDLE` fields. An all-caps type in front of a data member is
    // a type, not an annotation standing for `__device__`: both definitions go.
    let src = r#"#if defined(_WIN32)
#include <windows.h>
struct Barrier { CRITICAL_SECTION cs; HANDLE event; int count; };
#else
#include <pthread.h>
struct Barrier { pthread_mutex_t mutex; pthread_cond_t cond; int count; };
#endif
Barrier make_barrier(int n);
Barrier the_barrier;
__global__ void k(int* d) { d[threadIdx.x] += 1; }
"#;
    let host = set_aside_host_code(src).unwrap();
    assert!(!host.text.contains("pthread_mutex_t"), "{}", host.text);
    assert!(!host.text.contains("CRITICAL_SECTION"), "{}", host.text);
    assert!(host.text.contains("__global__ void k"), "{}", host.text);

    // A member function behind an all-caps word still keeps its class: the word may stand
    // for `__device__`.
    let annotated = src.replace(
        "int count; };\n#else",
        "int count; HD int get() const; };\n#else",
    );
    assert_ne!(annotated, src);
    let host = set_aside_host_code(&annotated).unwrap();
    assert!(host.text.contains("HD int get()"), "{}", host.text);
}

#[test]
fn functions_marked_host_alone_are_set_aside_wherever_they_are() {
    let src = r#"struct fastdiv {
  unsigned d, m;
  __host__ __device__ fastdiv() : d(0), m(0) {}
  __host__ fastdiv(unsigned d) : d(d) { m = 0x80000000u / d; }
  __host__ constexpr unsigned twice() const { return 2 * d; }
  template <typename T> __host__ void fill(T* p) { p[0] = d; }
  __device__ unsigned div(unsigned n) const { return __umulhi(n, m); }
};
__host__ fastdiv make(unsigned d);
__global__ void k(const fastdiv* f, unsigned* out) { out[threadIdx.x] = f->div(threadIdx.x); }
"#;
    let host = set_aside_host_code(src).unwrap();
    let set_aside: Vec<&str> = host
        .functions
        .iter()
        .filter(|f| matches!(f.decision, HostDecision::SetAside(_)))
        .map(|f| f.name.as_str())
        .collect();
    assert!(set_aside.contains(&"fastdiv"), "{set_aside:?}");
    assert!(set_aside.contains(&"fill"), "{set_aside:?}");
    assert!(set_aside.contains(&"make"), "{set_aside:?}");
    assert!(!host.text.contains("0x80000000u"), "{}", host.text);
    assert!(!host.text.contains("p[0] = d"), "{}", host.text);
    // Kept: host-and-device, device, and `constexpr` (device code may call it under nvcc's
    // relaxed constexpr).
    assert!(host
        .text
        .contains("__host__ __device__ fastdiv() : d(0), m(0) {}"));
    assert!(host.text.contains("__host__ constexpr unsigned twice()"));
    assert!(host.text.contains("__device__ unsigned div(unsigned n)"));
    assert_eq!(host.text.lines().count(), src.lines().count());
}

/// A whole program's `common.h`, in the style of benchmark programs: device helpers beside
/// host utilities, host state in a library's types, and a checking macro only host code uses.
const PROGRAM_HEADER: &str = r#"#include <cublas_v2.h>
#define CHECK(e) check_cuda((e), __FILE__, __LINE__)
extern cudaDeviceProp props;
static cublasHandle_t blas;
typedef struct { cublasHandle_t handle; int repeats; } Bench;
struct Timer { timespec t0; void start() { clock_gettime(CLOCK_MONOTONIC, &t0); } };
__device__ float warp_sum(float v) { return v + __shfl_xor_sync(0xffffffffu, v, 1); }
constexpr int div_up(int a, int b) { return (a + b - 1) / b; }
void check_cuda(cudaError_t e, const char* f, int l) { if (e) { printf("%s:%d\n", f, l); } }
float* random_floats(size_t n) { float* p = (float*)malloc(n * 4); return p; }
"#;

const PROGRAM_MAIN: &str = r#"#include "common.h"
__global__ void sum_rows(float* out, const float* in, int n) {
    out[blockIdx.x] = warp_sum(in[blockIdx.x * n + threadIdx.x]) * div_up(n, 32);
}
int main() {
    Timer t; t.start();
    float* h = random_floats(1024);
    float* d; CHECK(cudaMalloc(&d, 4096));
    sum_rows<<<32, 32>>>(d, d, 32);
    return 0;
}
"#;

#[test]
fn a_whole_programs_host_code_is_set_aside_through_its_headers() {
    use cudacheck_core::source::set_aside_host_code_unit;
    let unit = set_aside_host_code_unit(PROGRAM_MAIN, &[PROGRAM_HEADER]);
    let header = unit.headers[0].as_ref().unwrap();
    let decided = |h: &cudacheck_core::source::HostCode, name: &str| {
        h.functions
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.decision.clone())
    };
    for (name, kind) in [
        ("check_cuda", SetAsideKind::HostOnly),
        ("random_floats", SetAsideKind::HostOnly),
        ("props", SetAsideKind::HostVariable),
        ("blas", SetAsideKind::HostVariable),
        ("Bench", SetAsideKind::HostType),
        ("Timer", SetAsideKind::HostClass),
    ] {
        assert_eq!(
            decided(header, name),
            Some(HostDecision::SetAside(kind)),
            "{name}: {:#?}",
            header.functions
        );
    }
    // What the kernel of the other file uses stays: the device helper, and the host
    // `constexpr` helper (device code's under nvcc's relaxed constexpr).
    assert_eq!(
        decided(header, "div_up"),
        Some(HostDecision::Kept(KeptReason::CalledFromDevice))
    );
    assert!(header.text.contains("__device__ float warp_sum"));
    // The macro stays (directives are never blanked), its function goes.
    assert!(header.text.contains("#define CHECK(e)"), "{}", header.text);
    assert!(!header.text.contains("clock_gettime"), "{}", header.text);
    assert_eq!(header.text.lines().count(), PROGRAM_HEADER.lines().count());
    let main = unit.main.as_ref().unwrap();
    assert_eq!(
        decided(main, "main"),
        Some(HostDecision::SetAside(SetAsideKind::Launcher))
    );
}

#[test]
fn members_defined_outside_a_host_class_go_with_it_and_its_instantiations_bind_launches() {
    // cuda-samples' estimator style: a class template whose member launches a kernel
    // template, defined outside the class, explicitly instantiated for two types.
    let src = r#"#include <string>
using std::string;
template <typename T> __global__ void fill(T* x) { x[threadIdx.x] = T(1); }
template <typename Real> class Estimator {
public:
    Real operator()();
private:
    string name_;
};
template <typename Real> Real Estimator<Real>::operator()() {
    Real* d; cudaMalloc(&d, 128);
    fill<Real><<<1, 32>>>(d);
    return Real(0);
}
template class Estimator<float>;
template class Estimator<double>;
"#;
    let host = set_aside_host_code(src).unwrap();
    let mut launched = host.launched.clone();
    launched.sort();
    assert_eq!(launched, ["fill<double>", "fill<float>"]);
    for gone in [
        "class Estimator",
        "using std::string",
        "template class Estimator<float>",
    ] {
        assert!(!host.text.contains(gone), "{gone}: {}", host.text);
    }
    assert!(host.text.contains("__global__ void fill"));
}

#[test]
fn a_kernel_whose_address_host_code_takes_is_instantiated_with_the_types_it_names() {
    // A cooperative launch names the specialization without `<<<`; the type it names is
    // device code's from then on, though only `main` spelled it.
    let src = r#"typedef double real_t;
template <typename T> __global__ void reduce_all(T* x) { x[0] = T(0); }
int main() {
    real_t* d; void* args[] = {&d};
    cudaLaunchCooperativeKernel((void*)reduce_all<real_t>, 1, 32, args, 0, 0);
    return 0;
}
"#;
    let host = set_aside_host_code(src).unwrap();
    assert_eq!(host.launched, ["reduce_all<real_t>"]);
    assert!(
        host.text.contains("typedef double real_t;"),
        "{}",
        host.text
    );
}

#[test]
fn a_local_that_shares_a_host_name_is_no_use_of_it() {
    // cuRAND's device code names its parameters `vector`; a program's `using std::vector;`
    // for its host code is not what they use.
    let src = "#include <vector>\n\
               using std::vector;\n\
               __device__ void copy(unsigned* vector, const unsigned* from, int n) {\n\
                   for (int i = 0; i < n; i++) vector[i] = from[i];\n\
               }\n\
               int main() { vector<int> v(4); return v.size(); }\n";
    assert_eq!(
        decision(src, "vector"),
        HostDecision::SetAside(SetAsideKind::HostType)
    );
}

#[test]
fn a_using_directive_stays() {
    // candle's WMMA kernels: `using namespace nvcuda::wmma;` brings in what the kernels use
    // unqualified; a directive is no declaration device code could name.
    let src = "#include <mma.h>\n\
               using namespace nvcuda::wmma;\n\
               using std::vector;\n\
               __global__ void k(float* c) { fragment<accumulator, 16, 16, 16, float> f; fill_fragment(f, 0.0f); }\n";
    let host = set_aside_host_code(src).unwrap();
    assert!(
        host.text.contains("using namespace nvcuda::wmma;"),
        "{}",
        host.text
    );
    assert!(!host.text.contains("using std::vector;"), "{}", host.text);
}

/// `multithreading.h`'s shape (NVIDIA's samples): a thread entry's return type is a macro
/// defined once for Windows and once for POSIX.
const THREAD_ENTRY: &str = "#if defined(WIN32) || defined(_WIN32) || defined(WIN64) || defined(_WIN64)\n\
                            #include <windows.h>\n\
                            #define THREADPROC unsigned WINAPI\n\
                            #else\n\
                            #include <pthread.h>\n\
                            #define THREADPROC void *\n\
                            #endif\n\
                            __global__ void inc(int* d) { d[threadIdx.x]++; }\n\
                            THREADPROC worker(void* arg) { cudaSetDevice(0); inc<<<1, 32>>>((int*)arg); return 0; }\n";

#[test]
fn a_definition_for_another_platform_makes_no_macro_an_annotation() {
    // The Windows `#define` names `WINAPI`, which no file of the unit defines; nvcc's device
    // pass on Linux never reads it, so `THREADPROC` is `void *` and `worker` is host code.
    assert_eq!(
        decision(THREAD_ENTRY, "worker"),
        HostDecision::SetAside(SetAsideKind::Launcher)
    );
    let host = set_aside_host_code(THREAD_ENTRY).unwrap();
    assert!(!host.text.contains("cudaSetDevice"), "{}", host.text);
}

#[test]
fn a_macro_of_a_condition_that_may_hold_stays_a_possible_annotation() {
    // `USE_DEVICE` may be defined on the command line: either `#define` may be the one
    // compiled, and one of them is `__device__`.
    let src = THREAD_ENTRY
        .replace(
            "#if defined(WIN32) || defined(_WIN32) || defined(WIN64) || defined(_WIN64)",
            "#if defined(USE_DEVICE) || defined(_WIN32)",
        )
        .replace("unsigned WINAPI", "__device__ int");
    let host = set_aside_host_code(&src).unwrap();
    assert!(
        host.functions.iter().all(|f| f.name != "worker"),
        "{:#?}",
        host.functions
    );
    assert!(host.text.contains("cudaSetDevice"), "{}", host.text);
}

#[test]
fn a_stream_callback_with_the_toolkits_calling_convention_is_host_code() {
    // `CUDART_CB` is defined by CUDA's `driver_types.h` (`__stdcall` on Windows, empty
    // elsewhere), not by the unit: it is no device annotation.
    let src = "__global__ void inc(int* d) { d[threadIdx.x]++; }\n\
               void CUDART_CB done(cudaStream_t s, cudaError_t status, void* data) { printf(\"%d\", (int)status); }\n";
    assert_eq!(
        decision(src, "done"),
        HostDecision::SetAside(SetAsideKind::HostOnly)
    );
}
