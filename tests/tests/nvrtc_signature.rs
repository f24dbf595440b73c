//! NVRTC tier: a kernel the preprocessor generates cannot be checked by `#[checked_kernel]` at
//! compile time (the macro sees only `DEFINE_ADD(double)`), so the runtime checks the Rust
//! declaration against the compiled kernel's parameter table. `Kernel::check_offline` does that
//! with NVRTC alone, no GPU: a wrong declaration is a typed `SignatureMismatch`.
//!
//! NVRTC is required: run `eval "$(scripts/setup-cuda.sh)"` first. A missing NVRTC fails these
//! tests rather than skipping them.

use cudacheck::checked_kernel;
use cudacheck::core::Arch;
use cudacheck::cudarc::driver::CudaSlice;
use cudacheck::Error;

/// Right: `add_double(double* out, const double* a, const double* b, int n)`.
#[checked_kernel(file = "ui/cuda/generated.cu", block = 256)]
pub fn add_double(out: &mut CudaSlice<f64>, a: &CudaSlice<f64>, b: &CudaSlice<f64>, n: i32);

/// Wrong: `n` declared as `i64`, but the kernel's `int n` is 4 bytes.
#[checked_kernel(file = "ui/cuda/generated.cu", name = "add_double", block = 256)]
pub fn add_double_wide_n(out: &mut CudaSlice<f64>, a: &CudaSlice<f64>, b: &CudaSlice<f64>, n: i64);

/// Wrong: a parameter missing.
#[checked_kernel(file = "ui/cuda/generated.cu", name = "add_float", block = 256)]
pub fn add_float_short(out: &mut CudaSlice<f32>, a: &CudaSlice<f32>, b: &CudaSlice<f32>);

const SM_90: Arch = Arch::new(9, 0);

#[test]
fn nvrtc_a_correct_declaration_of_a_generated_kernel_passes() {
    if !cudacheck_tests::nvrtc_or_skip() {
        return;
    }
    let report = add_double::kernel()
        .check_offline(SM_90)
        .expect("add_double compiles and matches its declaration");
    assert_eq!(report.symbol, "add_double");
    // double*, const double*, const double*, int: three 8-byte pointers and a 4-byte int.
    let sizes: Vec<u32> = report.resources.params.iter().map(|p| p.size).collect();
    assert_eq!(sizes, [8, 8, 8, 4]);
}

#[test]
fn nvrtc_a_wrong_scalar_size_is_a_signature_mismatch() {
    if !cudacheck_tests::nvrtc_or_skip() {
        return;
    }
    let err = add_double_wide_n::kernel()
        .check_offline(SM_90)
        .expect_err("an i64 for `int n` must not pass");
    let Error::SignatureMismatch { kernel, detail } = &err else {
        panic!("expected SignatureMismatch, got {err:?}");
    };
    assert_eq!(kernel, "add_double");
    assert!(
        // No CUDA declaration to quote: the parameter is named in its Rust spelling.
        detail
            .contains("parameter 3 `i64 n` is 8 bytes in Rust but 4 bytes in the compiled kernel"),
        "{detail}"
    );
}

#[test]
fn nvrtc_a_missing_parameter_is_a_signature_mismatch() {
    if !cudacheck_tests::nvrtc_or_skip() {
        return;
    }
    let err = add_float_short::kernel()
        .check_offline(SM_90)
        .expect_err("three parameters for a four-parameter kernel must not pass");
    assert!(matches!(err, Error::SignatureMismatch { .. }), "{err:?}");
    assert!(
        err.to_string().contains(
            "Rust declares 3 parameters (f32* out, const f32* a, const f32* b) but the compiled \
             kernel has 4"
        ),
        "{err}"
    );
}
