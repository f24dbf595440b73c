//! The CUDA source model, on the shapes real kernel files take.

use cudacheck_core::source::{
    parse_source, CudaType, KernelDecl, Scalar, SourceError, SourceModel, TemplateParamKind,
};

fn parse(text: &str) -> SourceModel {
    parse_source(text, "test.cu").expect("the source parses")
}

fn kernel<'m>(m: &'m SourceModel, name: &str) -> &'m KernelDecl {
    m.kernel(name).unwrap_or_else(|| {
        panic!(
            "kernel `{name}` not found; have {:?}",
            m.kernel_names().collect::<Vec<_>>()
        )
    })
}

fn ptr(pointee: CudaType, pointee_const: bool, restrict: bool, const_pointer: bool) -> CudaType {
    CudaType::Pointer {
        pointee: Box::new(pointee),
        pointee_const,
        restrict,
        const_pointer,
    }
}

const F32: CudaType = CudaType::Scalar(Scalar::Float);

#[test]
fn saxpy_extern_c() {
    let m = parse(
        "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x, float* y, int n)\n{\n  int i = blockIdx.x;\n}\n",
    );
    assert_eq!(m.kernel_names().collect::<Vec<_>>(), ["saxpy"]);
    let k = kernel(&m, "saxpy");
    assert!(k.extern_c);
    assert!(k.is_definition);
    assert!(!k.is_template());
    let names: Vec<_> = k
        .params
        .iter()
        .map(|p| p.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, ["a", "x", "y", "n"]);
    assert_eq!(k.params[0].ty, F32);
    assert_eq!(k.params[1].ty, ptr(F32, true, true, false));
    assert_eq!(k.params[2].ty, ptr(F32, false, false, false));
    assert_eq!(k.params[3].ty, CudaType::Scalar(Scalar::Int));
    assert_eq!(k.params[1].ty.to_string(), "const float* __restrict__");
    assert_eq!(
        k.declaration_text,
        "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x, float* y, int n)"
    );
    let body = k.body_range.clone().unwrap();
    assert!(m.file_name == "test.cu");
    assert_eq!(&"extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x, float* y, int n)\n{\n  int i = blockIdx.x;\n}\n"[body], "{\n  int i = blockIdx.x;\n}");
    assert!(m.errors.is_empty(), "{:?}", m.errors);
}

#[test]
fn template_kernel() {
    let m =
        parse("template<typename T> __global__ void scale(T* out, const T* in, T s, int n) {}\n");
    let k = kernel(&m, "scale");
    assert!(!k.extern_c);
    assert!(k.is_template());
    assert_eq!(k.template_params.len(), 1);
    assert_eq!(k.template_params[0].name, "T");
    assert_eq!(k.template_params[0].kind, TemplateParamKind::Type);
    let t = || CudaType::Named("T".into());
    assert_eq!(k.params[0].ty, ptr(t(), false, false, false));
    assert_eq!(k.params[1].ty, ptr(t(), true, false, false));
    assert_eq!(k.params[2].ty, t());
    assert!(k
        .declaration_text
        .starts_with("template<typename T> __global__ void scale("));
}

#[test]
fn template_value_params_defaults_and_instantiations() {
    let m = parse(
        "template<typename T, int BLOCK = 256> __global__ void r(T* x) {}\n\
         template __global__ void r<float, 128>(float*);\n",
    );
    let k = kernel(&m, "r");
    assert_eq!(k.template_params[1].name, "BLOCK");
    assert_eq!(
        k.template_params[1].kind,
        TemplateParamKind::Value("int".into())
    );
    assert_eq!(k.template_params[1].default.as_deref(), Some("256"));
    assert_eq!(k.explicit_instantiations, ["float, 128"]);
    assert_eq!(
        m.kernels.len(),
        1,
        "an instantiation is not a second kernel"
    );
}

#[test]
fn launch_bounds() {
    let m = parse(
        "__global__ void __launch_bounds__(256, 2) a(int n) {}\n\
         __global__ void __launch_bounds__(MAX_THREADS) b(int n) {}\n\
         __global__ void c(int n) {}\n",
    );
    let a = kernel(&m, "a").launch_bounds.clone().unwrap();
    assert_eq!(a.max_threads, "256");
    assert_eq!(a.max_threads_value, Some(256));
    assert_eq!(a.min_blocks.as_deref(), Some("2"));
    assert_eq!(a.min_blocks_value, Some(2));
    let b = kernel(&m, "b").launch_bounds.clone().unwrap();
    assert_eq!(b.max_threads, "MAX_THREADS");
    assert_eq!(b.max_threads_value, None);
    assert_eq!(b.min_blocks, None);
    assert_eq!(kernel(&m, "c").launch_bounds, None);
}

#[test]
fn namespaced_kernels() {
    let m = parse(
        "namespace ops { namespace detail {\n__global__ void relu(float* x, int n) {}\n} }\n\
         namespace a::b { __global__ void nested(); }\n\
         namespace { __global__ void hidden() {} }\n",
    );
    let k = kernel(&m, "relu");
    assert_eq!(k.namespace, ["ops", "detail"]);
    assert_eq!(k.qualified_name(), "ops::detail::relu");
    assert_eq!(
        m.kernel("ops::detail::relu").map(|k| k.name.as_str()),
        Some("relu")
    );
    assert_eq!(kernel(&m, "nested").namespace, ["a", "b"]);
    assert!(!kernel(&m, "nested").is_definition);
    assert_eq!(
        kernel(&m, "hidden").qualified_name(),
        "(anonymous namespace)::hidden"
    );
}

#[test]
fn kernels_inside_extern_c_block_and_declaration_then_definition() {
    let m = parse(
        "extern \"C\" {\n  __global__ void a(int n);\n  __global__ void b(int n) {}\n  __global__ void a(int n) { }\n}\n\
         extern \"C++\" __global__ void mangled(int n) {}\n",
    );
    assert_eq!(m.kernel_names().collect::<Vec<_>>(), ["a", "b", "mangled"]);
    assert!(kernel(&m, "a").extern_c);
    assert!(
        kernel(&m, "a").is_definition,
        "the definition replaces the declaration"
    );
    assert!(kernel(&m, "b").extern_c);
    assert!(!kernel(&m, "mangled").extern_c);
}

#[test]
fn qualifier_spellings_normalise() {
    let m = parse(
        "__global__ void q(const float* __restrict__ a, float const* b, const float * const c,\n\
         \x20 unsigned int d, unsigned e, long int f, signed g, long long h, unsigned long long i,\n\
         \x20 size_t j, std::size_t k, uint32_t l, int64_t m, unsigned char n, signed char o, char p,\n\
         \x20 const int* __restrict__ const* pp, void* v, const void* cv, short int s) {}\n",
    );
    let k = kernel(&m, "q");
    let ty = |name: &str| k.param(name).unwrap().ty.clone();
    assert_eq!(ty("a"), ptr(F32, true, true, false));
    assert_eq!(ty("b"), ptr(F32, true, false, false));
    assert_eq!(ty("c"), ptr(F32, true, false, true));
    assert!(k.param("c").unwrap().is_const);
    assert_eq!(ty("c").to_string(), "const float* const");
    assert_eq!(ty("d"), CudaType::Scalar(Scalar::UnsignedInt));
    assert_eq!(ty("e"), ty("d"), "`unsigned` is `unsigned int`");
    assert_eq!(ty("f"), CudaType::Scalar(Scalar::Long));
    assert_eq!(ty("g"), CudaType::Scalar(Scalar::Int));
    assert_eq!(ty("h"), CudaType::Scalar(Scalar::LongLong));
    assert_eq!(ty("i"), CudaType::Scalar(Scalar::UnsignedLongLong));
    assert_eq!(ty("j"), CudaType::Scalar(Scalar::SizeT));
    assert_eq!(ty("k"), CudaType::Scalar(Scalar::SizeT));
    assert_eq!(ty("l"), CudaType::Scalar(Scalar::Uint32));
    assert_eq!(ty("m"), CudaType::Scalar(Scalar::Int64));
    assert_eq!(ty("n"), CudaType::Scalar(Scalar::UnsignedChar));
    assert_eq!(ty("o"), CudaType::Scalar(Scalar::SignedChar));
    assert_eq!(ty("p"), CudaType::Scalar(Scalar::Char));
    assert_eq!(ty("pp").to_string(), "const int* const __restrict__*");
    assert_eq!(ty("v"), ptr(CudaType::Void, false, false, false));
    assert_eq!(ty("cv").to_string(), "const void*");
    assert_eq!(ty("s"), CudaType::Scalar(Scalar::Short));
    let rust: Vec<&str> = ["d", "f", "i", "j", "m", "p"]
        .iter()
        .map(|n| ty(n).as_scalar().unwrap().rust_equivalent())
        .collect();
    assert_eq!(rust, ["u32", "i64", "u64", "usize", "i64", "i8"]);
}

#[test]
fn half_and_bfloat16_params() {
    let m = parse(
        "#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\n\
         __global__ void h(__half* a, const __nv_bfloat16* b, half c, nv_bfloat16 d, __half2 e) {}\n",
    );
    assert_eq!(m.includes, ["cuda_fp16.h", "cuda_bf16.h"]);
    let k = kernel(&m, "h");
    let half = CudaType::Scalar(Scalar::Half);
    let bf16 = CudaType::Scalar(Scalar::BFloat16);
    assert_eq!(k.params[0].ty, ptr(half.clone(), false, false, false));
    assert_eq!(k.params[1].ty, ptr(bf16.clone(), true, false, false));
    assert_eq!(k.params[2].ty, half);
    assert_eq!(k.params[3].ty, bf16);
    assert_eq!(k.params[0].ty.to_string(), "__half*");
    assert_eq!(Scalar::Half.rust_equivalent(), "half::f16");
    assert_eq!(Scalar::BFloat16.rust_equivalent(), "half::bf16");
    assert_eq!(k.params[4].ty, CudaType::Named("__half2".into()));
    assert_eq!(k.params[4].ty.size_align(), Some((4, 4)));
}

#[test]
fn struct_by_value_size() {
    let m = parse(
        "struct Params { float scale; double bias; int n; char flag; };\n\
         typedef struct { float4 v; int k; } Packed;\n\
         struct Outer { Params p; float2 f; int arr[3]; };\n\
         template<typename T> struct Generic { T x; };\n\
         struct Bits { int a : 3; };\n\
         __global__ void use(Params p, Packed q, struct Outer o) {}\n",
    );
    let size = |n: &str| m.struct_named(n).unwrap().size_align(&m);
    // float@0, double@8, int@16, char@20 -> 21, rounded to 8.
    assert_eq!(size("Params"), Some((24, 8)));
    // float4@0 (16-aligned), int@16 -> 20, rounded to 16.
    assert_eq!(size("Packed"), Some((32, 16)));
    // Params@0 (24), float2@24, int[3]@32 -> 44, rounded to 8.
    assert_eq!(size("Outer"), Some((48, 8)));
    assert_eq!(size("Bits"), None, "bit-fields are not laid out");
    assert!(
        m.struct_named("Generic").is_none(),
        "a template has no single layout"
    );
    let params = m.struct_named("Params").unwrap();
    assert_eq!(
        params.fields[1],
        ("bias".to_owned(), CudaType::Scalar(Scalar::Double))
    );
    let k = kernel(&m, "use");
    assert_eq!(k.params[0].ty, CudaType::Named("Params".into()));
    assert_eq!(k.params[2].ty, CudaType::Named("Outer".into()));
}

#[test]
fn macro_generated_kernels() {
    let m = parse(
        "#define DEFINE_KERNEL(T) __global__ void add_##T(T* a) { a[0] = 1; }\n\
         #define NOT_A_KERNEL(x) ((x) + 1)\n\
         DEFINE_KERNEL(float)\n\
         DEFINE_KERNEL(int)\n\
         __global__ void plain(int n) {}\n",
    );
    assert_eq!(m.kernel_macros.len(), 1);
    let mk = &m.kernel_macros[0];
    assert_eq!(mk.name, "DEFINE_KERNEL");
    assert_eq!(mk.params, ["T"]);
    assert!(mk.function_like);
    assert_eq!((mk.location.line, mk.location.column), (1, 9));
    let args: Vec<_> = mk.invocations.iter().map(|i| i.args.clone()).collect();
    assert_eq!(args, [["float"], ["int"]]);
    assert_eq!(mk.invocations[0].generated_kernels, ["add_float"]);
    assert_eq!(mk.invocations[1].location.line, 4);
    assert!(m.generates_kernels_by_macro());
    assert_eq!(
        m.generated_by_macro("add_int")
            .map(|(m, _)| m.name.as_str()),
        Some("DEFINE_KERNEL")
    );
    assert_eq!(m.suggest("add_flaot"), Some("add_float"));
    assert!(
        m.kernel("plain").is_some(),
        "a kernel after the invocations is still found"
    );
}

/// An invocation without a semicolon whose first argument reads as a type
/// (`UNARY_OP(__half, ...)`), then another `#define`: the parser's recovery swallows the
/// directive in the whole-file tree; definitions still come out whole, with their line, and
/// the directive is no invocation.
#[test]
fn a_definition_after_a_type_like_invocation_is_found() {
    let m = parse(
        "#define UNARY_OP(TYPE, NAME, FN) \\\n\
         \x20   extern \"C\" __global__ void NAME(const TYPE* in, TYPE* out) { out[0] = FN; }\n\
         UNARY_OP(float, uexp_f32, expf(in[0]))\n\
         UNARY_OP(__half, usqrt_f16, hsqrt(in[0]))\n\
         \n\
         #define BINARY_OP(TYPE, NAME, FN) \\\n\
         \x20   extern \"C\" __global__ void NAME(const TYPE* a, TYPE* out) { out[0] = FN; }\n\
         BINARY_OP(float, badd_f32, a[0] + a[1])\n",
    );
    let names: Vec<_> = m.kernel_macros.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["UNARY_OP", "BINARY_OP"]);
    let lines = |k: usize| -> Vec<u32> {
        m.kernel_macros[k]
            .invocations
            .iter()
            .map(|i| i.location.line)
            .collect()
    };
    assert_eq!(lines(0), [3, 4]);
    assert_eq!(m.kernel_macros[1].location.line, 6);
    assert_eq!(lines(1), [8]);
    assert_eq!(
        m.kernel_macros[1].invocations[0].generated_kernels,
        ["badd_f32"]
    );
}

#[test]
fn kernel_prefix_macro() {
    let m = parse(
        "#define KERNEL extern \"C\" __global__\n\
         KERNEL void via_macro(float* x, int n) {}\n",
    );
    let k = kernel(&m, "via_macro");
    assert!(k.extern_c);
    assert_eq!(k.prefix_macro.as_deref(), Some("KERNEL"));
    assert_eq!(k.params[1].ty, CudaType::Scalar(Scalar::Int));
    assert!(!m.generates_kernels_by_macro());
}

#[test]
fn shared_arrays() {
    let m = parse(
        "__global__ void t(float* out) {\n\
         \x20 __shared__ float tile[32][33];\n\
         \x20 extern __shared__ float s[];\n\
         \x20 if (out) { __shared__ int counter; }\n\
         \x20 extern __shared__ __align__(16) unsigned char smem[];\n\
         \x20 float local[4];\n\
         }\n",
    );
    let k = kernel(&m, "t");
    let names: Vec<_> = k.shared_arrays.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["tile", "s", "counter", "smem"]);
    let tile = &k.shared_arrays[0];
    assert_eq!(tile.elem, F32);
    assert_eq!(tile.dims, [Some("32".to_owned()), Some("33".to_owned())]);
    assert!(!tile.is_extern);
    assert_eq!((tile.location.line, tile.location.column), (2, 20));
    let s = &k.shared_arrays[1];
    assert!(s.is_extern);
    assert_eq!(s.dims, [None]);
    assert!(k.shared_arrays[2].dims.is_empty());
    let smem = &k.shared_arrays[3];
    assert_eq!(smem.elem, CudaType::Scalar(Scalar::UnsignedChar));
    assert!(smem.is_extern);
    assert!(
        m.errors.is_empty(),
        "__align__ is understood: {:?}",
        m.errors
    );
}

#[test]
fn did_you_mean() {
    let m = parse(
        "extern \"C\" __global__ void saxpy(float a) {}\n__global__ void reduce_sum(float* x) {}\n",
    );
    assert_eq!(m.suggest("saxpi"), Some("saxpy"));
    assert_eq!(m.suggest("SAXPY"), Some("saxpy"));
    assert_eq!(m.suggest("reduce_summ"), Some("reduce_sum"));
    assert_eq!(
        m.suggest("saxpy"),
        None,
        "an existing name needs no suggestion"
    );
    assert_eq!(m.suggest("transpose"), None);
}

#[test]
fn syntax_error_in_one_function_keeps_the_others() {
    let m = parse(
        "__global__ void before(int n) {}\n\
         __global__ void broken(int n) {\n  int x = ;\n  foo(\n}\n\
         __global__ void after(float* out) { out[0] = 1.0f; }\n",
    );
    assert_eq!(
        m.kernel_names().collect::<Vec<_>>(),
        ["before", "broken", "after"]
    );
    assert!(!m.errors.is_empty());
    let first = &m.errors[0];
    assert_eq!(first.location.line, 3);
    assert_eq!(first.in_function.as_deref(), Some("broken"));
    assert!(first.message.starts_with("unexpected"), "{}", first.message);
    assert!(first.to_string().starts_with("3:"), "{first}");
    assert_eq!(
        kernel(&m, "after").params[0].ty,
        ptr(F32, false, false, false)
    );
}

#[test]
fn param_location_is_one_based() {
    let m = parse("// header\n__global__ void k(int a,\n\t\t\t\t  float* bé, // note\n                  double c) {}\n");
    let k = kernel(&m, "k");
    assert_eq!((k.location.line, k.location.column), (2, 17));
    let b = &k.params[1];
    assert_eq!(b.location.line, 3);
    assert_eq!(b.location.column, 7, "tabs count as one column");
    assert_eq!(b.text, "float* bé");
    let c = &k.params[2];
    assert_eq!((c.location.line, c.location.column), (4, 19));
    assert_eq!(k.params.len(), 3, "comments are not parameters");
}

#[test]
fn device_functions_are_not_kernels() {
    let m = parse(
        "__device__ float helper(float x) { return x; }\n\
         __host__ __device__ inline int both(int x) { return x; }\n\
         void host_fn(float* p) {}\n\
         __global__ void k(void) {}\n",
    );
    assert_eq!(m.kernel_names().collect::<Vec<_>>(), ["k"]);
    assert!(
        kernel(&m, "k").params.is_empty(),
        "`(void)` means no parameters"
    );
}

#[test]
fn kernels_in_every_preprocessor_branch() {
    let m = parse(
        "#ifdef USE_FAST\n__global__ void fast(int n) {}\n#elif defined(OTHER)\n__global__ void other(int n) {}\n#else\n__global__ void slow(int n) {}\n#endif\n\
         #if __CUDA_ARCH__ >= 800\n__global__ void ampere(int n) {}\n#endif\n",
    );
    assert_eq!(
        m.kernel_names().collect::<Vec<_>>(),
        ["fast", "other", "slow", "ampere"]
    );
}

#[test]
fn references_arrays_and_function_pointers_are_kept_for_rejection() {
    let m = parse("__global__ void r(int& a, const float& b, float arr[4], int (*fp)(int)) {}\n");
    let k = kernel(&m, "r");
    assert!(matches!(
        k.params[0].ty,
        CudaType::Reference {
            rvalue: false,
            referent_const: false,
            ..
        }
    ));
    assert_eq!(k.params[1].ty.to_string(), "const float&");
    assert_eq!(
        k.params[2].ty,
        CudaType::Array {
            elem: Box::new(F32),
            len: Some("4".into())
        }
    );
    assert!(matches!(k.params[3].ty, CudaType::Unknown(_)));
    assert_eq!(k.params[3].name.as_deref(), Some("fp"));
}

#[test]
fn nul_bytes_are_a_typed_error() {
    let err = parse_source("__global__ void k() {}\n\0\0", "bin.cubin").unwrap_err();
    assert!(
        matches!(
            err,
            SourceError::NulByte {
                byte_offset: 23,
                line: 2,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("bin.cubin:2: the file contains a NUL byte"),
        "{msg}"
    );
    assert!(msg.contains("not CUDA source text"), "{msg}");
}

#[test]
fn the_model_serialises() {
    let m = parse("extern \"C\" __global__ void saxpy(float a) {}\n");
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["kernels"][0]["name"], "saxpy");
    assert_eq!(json["kernels"][0]["params"][0]["ty"]["Scalar"], "Float");
}

/// Two versions of a loop header or of an opening `if (...) {` under `#ifdef` (a debug twin, a
/// tuning switch): every kernel of the file keeps its parameters' names, the ones after it too.
#[test]
fn conditionals_inside_bodies_keep_every_kernel_whole() {
    let m = parse(
        "extern \"C\" __global__ void gather_rows(const float* __restrict__ src,\n\
         \x20                                      float* __restrict__ dst, int rows, int cols)\n\
         {\n\
         \x20   long long total = (long long)rows * cols;\n\
         \x20   for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n\
         #ifdef WIDE_TAIL\n\
         \x20        i <= total;\n\
         #else\n\
         \x20        i < total;\n\
         #endif\n\
         \x20        i += (long long)blockDim.x * gridDim.x)\n\
         \x20       dst[i] = src[i];\n\
         }\n\
         \n\
         extern \"C\" __global__ void window_sum(const float* in, float* out, int n, int k)\n\
         {\n\
         \x20   int t = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   float acc = 0.0f;\n\
         #if K_INCLUSIVE\n\
         \x20   for (int j = 0; j <= k; ++j) {\n\
         #else\n\
         \x20   for (int j = 0; j < k; ++j) {\n\
         #endif\n\
         \x20       acc += in[t + j];\n\
         \x20   }\n\
         \x20   if (t < n) out[t] = acc;\n\
         }\n",
    );
    let names = |k: &str| -> Vec<Option<String>> {
        kernel(&m, k)
            .params
            .iter()
            .map(|p| p.name.clone())
            .collect()
    };
    let some = |v: &[&str]| v.iter().map(|s| Some((*s).to_owned())).collect::<Vec<_>>();
    assert_eq!(names("gather_rows"), some(&["src", "dst", "rows", "cols"]));
    assert_eq!(names("window_sum"), some(&["in", "out", "n", "k"]));
    // Line numbers are those of the file.
    assert_eq!(kernel(&m, "window_sum").location.line, 15);
}
