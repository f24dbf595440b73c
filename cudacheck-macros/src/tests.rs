//! The whole pipeline on the trybuild fixtures, outside a compiler: what the errors say, and
//! what the wrapper calls. (The trybuild suite in `tests/ui` checks where the carets land.)

use quote::quote;

use crate::expand_attribute;

/// Runs the attribute; `Err` holds every error message, `Ok` the expansion as text.
fn run(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> Result<String, Vec<String>> {
    let out = expand_attribute(args, item).to_string();
    // `compile_error!` invocations carry the messages as string literals.
    let errors: Vec<String> = out
        .split(":: core :: compile_error ! {")
        .skip(1)
        .filter_map(|s| syn::parse_str::<syn::LitStr>(s.split('}').next()?.trim()).ok())
        .map(|l| l.value())
        .collect();
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn fixture(name: &str) -> String {
    format!("../tests/ui/cuda/{name}")
}

#[test]
fn a_matching_declaration_expands_to_a_launch() {
    let file = fixture("saxpy.cu");
    let out = run(
        quote!(file = #file, block = 256),
        quote!(
            pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);
        ),
    )
    .unwrap();
    assert!(out.contains("include_str !"), "{out}");
    assert!(out.contains("arg_mut (y)"), "{out}");
    assert!(out.contains("arg (& a)"), "{out}");
    assert!(out.contains("MutPtr"), "{out}");
    assert!(out.contains("elem : \"float\""), "{out}");
    assert!(
        out.contains("launch . block ((256u32 , 1u32 , 1u32))"),
        "{out}"
    );
    assert!(
        out.contains("grid : impl :: core :: convert :: Into < :: cudacheck :: Grid >"),
        "{out}"
    );
}

#[test]
fn every_signature_mismatch_is_reported_with_the_cuda_declaration() {
    let file = fixture("saxpy.cu");
    let errors = run(
        quote!(file = #file),
        quote!(
            fn saxpy(y: &CudaSlice<f32>, x: &CudaSlice<f64>, a: f64, n: i32);
        ),
    )
    .unwrap_err();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors[0].starts_with("mismatched mutability"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("expected `&CudaSlice<f32>` or `&CudaView<f32>`"),
        "{}",
        errors[1]
    );
    assert!(
        errors[1].contains("note: ../tests/ui/cuda/saxpy.cu:2: `const float* __restrict__ x`"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2].contains("expected `f32`, found `f64`"),
        "{}",
        errors[2]
    );
}

#[test]
fn a_missing_kernel_lists_the_file_and_suggests() {
    let file = fixture("saxpy.cu");
    let errors = run(
        quote!(file = #file, name = "saxpi"),
        quote!(
            fn k(a: f32);
        ),
    )
    .unwrap_err();
    assert!(errors[0].contains("no kernel `saxpi`"), "{}", errors[0]);
    assert!(errors[0].contains("did you mean `saxpy`?"), "{}", errors[0]);
    assert!(
        errors[0].contains("the file defines one kernel: `saxpy`"),
        "{}",
        errors[0]
    );
}

#[test]
fn template_arguments_are_substituted_and_counted() {
    let file = fixture("scale.cu");
    let ok = run(
        quote!(file = #file, name = "scale<__half>"),
        quote!(
            fn scale_h(out: &mut CudaSlice<half::f16>, inp: &CudaSlice<f16>, f: f32, n: i32);
        ),
    );
    assert!(ok.is_ok(), "{ok:?}");
    let errors = run(
        quote!(file = #file, name = "scale<float, int>"),
        quote!(
            fn s(out: &mut CudaSlice<f32>, inp: &CudaSlice<f32>, f: f32, n: i32);
        ),
    )
    .unwrap_err();
    assert!(
        errors[0].contains("takes 1 template argument (`T`), but the name gives 2"),
        "{}",
        errors[0]
    );
    let errors = run(
        quote!(file = #file, name = "scale"),
        quote!(
            fn s(out: &mut CudaSlice<f32>, inp: &CudaSlice<f32>, f: f32, n: i32);
        ),
    )
    .unwrap_err();
    assert!(
        errors[0].contains("the file instantiates `scale<float>`, `scale<__half>`"),
        "{}",
        errors[0]
    );
}

#[test]
fn macro_generated_kernels_are_accepted_for_the_runtime_to_check() {
    let file = fixture("generated.cu");
    let out = run(
        quote!(file = #file),
        quote!(
            fn add_float(out: &mut CudaSlice<f32>, a: &CudaSlice<f32>, b: &CudaSlice<f32>, n: i32);
        ),
    )
    .unwrap();
    // The element types come from the Rust declaration: there is no CUDA one to read.
    assert!(out.contains("elem : \"f32\""), "{out}");
}

#[test]
fn structs_by_value_get_a_layout_assertion() {
    let file = fixture("particles.cu");
    let out = run(
        quote!(file = #file),
        quote!(
            fn integrate(particles: &mut CudaSlice<Particle>, p: Params, n: i32);
        ),
    )
    .unwrap();
    // Params: float, int, double -> 16 bytes aligned to 8; Particle: 4 floats -> 16/4.
    assert!(out.contains("size_of :: < Params > () == 16usize"), "{out}");
    assert!(out.contains("align_of :: < Params > () == 8usize"), "{out}");
    assert!(
        out.contains("size_of :: < Particle > () == 16usize"),
        "{out}"
    );
}

#[test]
fn literal_configurations_use_the_validators_words() {
    let file = fixture("bounds.cu");
    let errors = run(
        quote!(file = #file, name = "bounded", block = 256),
        quote!(
            fn b(out: &mut CudaSlice<f32>, n: i32);
        ),
    )
    .unwrap_err();
    assert!(errors[0].contains("__launch_bounds__(128)"), "{errors:?}");
    let errors = run(
        quote!(file = #file, name = "hoard"),
        quote!(
            fn h(out: &mut CudaSlice<f32>, n: i32);
        ),
    )
    .unwrap_err();
    assert!(
        errors[0].contains("65536 bytes of static __shared__ memory"),
        "{errors:?}"
    );
    let errors = run(
        quote!(file = #file, name = "bounded", arch = "sm_90", block = (32, 64, 1)),
        quote!(
            fn b(out: &mut CudaSlice<f32>, n: i32);
        ),
    )
    .unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("block (32, 64, 1) has 2048 threads; sm_90 allows at most 1024")),
        "{errors:?}"
    );
}

#[test]
fn the_stub_keeps_the_signature() {
    let errors_and_stub = expand_attribute(
        quote!(threads = 256),
        quote!(
            pub fn k(a: f32);
        ),
    )
    .to_string();
    assert!(
        errors_and_stub.contains("compile_error"),
        "{errors_and_stub}"
    );
    assert!(
        errors_and_stub.contains("pub unsafe fn k"),
        "{errors_and_stub}"
    );
    assert!(errors_and_stub
        .contains("dims : impl :: core :: convert :: Into < :: cudacheck :: LaunchDims >"));
}
