//! The tests every compat fixture runs (included by path from each fixture's test file): the
//! fixtures differ only in how their Cargo.toml asks cudarc for its features, which is what
//! they test. Tiers by test name, as in the main suite: pure, `nvrtc_`, `gpu_`.

use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::core::validate::{validate, LaunchConfig, ValidateOptions};
use cudacheck::core::{limits::ArchLimits, Arch, Dim3, KernelResources};
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};
use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};

/// The macro's generated code names only `::cudacheck::...` paths: it must build in a crate
/// whose cudarc features are not cudacheck's.
#[checked_kernel(file = "../saxpy.cu", block = 256, requires(y.len() >= n as usize, x.len() >= n as usize))]
pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

pub const SAXPY_CU: &str = include_str!("saxpy.cu");

/// The pure and NVRTC tests every fixture runs, as `#[test]` functions of the fixture.
macro_rules! fixture_tests {
    () => {
        #[test]
        fn pure_validation_names_the_limit() {
            common::pure_validation_names_the_limit();
        }

        #[test]
        fn nvrtc_compiles_with_cudachecks_own_nvrtc() {
            common::nvrtc_compiles_with_cudachecks_own_nvrtc();
        }
    };
}
pub(crate) use fixture_tests;

/// Pure: a block of 2048 threads is refused with the limit's name, no NVRTC, no GPU.
pub fn pure_validation_names_the_limit() {
    let limits = ArchLimits::for_arch(Arch::new(9, 0));
    let cfg = LaunchConfig::new(Dim3::x(1), Dim3::x(2048));
    let violations = validate(
        &KernelResources::default(),
        &cfg,
        &limits,
        &ValidateOptions::default(),
    )
    .expect_err("2048 threads per block is over every GPU's limit");
    let text = violations
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("2048 threads"), "{text}");
    assert!(text.contains("1024"), "{text}");
}

/// NVRTC: cudacheck finds NVRTC (its own discovery, whatever cudarc's linking mode) and
/// compiles the kernel for sm_90 into a CUBIN and PTX.
pub fn nvrtc_compiles_with_cudachecks_own_nvrtc() {
    let src = CudaSource::from_str("saxpy.cu", SAXPY_CU);
    let mut opts = CompileOptions::new(Arch::new(9, 0));
    opts.ptx = true;
    let out = match compile(&src, &opts) {
        Ok(out) => out,
        Err(e) => panic!("NVRTC is required for this tier (scripts/setup-cuda.sh): {e}"),
    };
    assert!(out.cubin.starts_with(b"\x7fELF"));
    assert!(out.ptx.as_deref().unwrap_or("").contains(".entry saxpy"));
}

/// A stream on device 0, or why this tier is skipped.
pub fn gpu_stream(test: &str) -> Option<Arc<CudaStream>> {
    match cudacheck::default_stream(0) {
        Ok(s) => Some(s),
        Err(e) => {
            // Where a GPU is expected (scripts/gpu-run.sh sets this), its absence fails.
            if std::env::var("CUDACHECK_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("CUDACHECK_REQUIRE_GPU=1 but no GPU is usable: {e}");
            }
            println!("test {test} ... skipped (GPU tier): {e}");
            None
        }
    }
}

/// GPU: a checked launch of `saxpy` on `stream`, into buffers the caller may share with raw
/// cudarc launches; checks the output against the CPU and a bad block being refused.
pub fn gpu_checked_saxpy(
    stream: &Arc<CudaStream>,
    y: &mut CudaSlice<f32>,
    x: &CudaSlice<f32>,
    a: f32,
    n: usize,
) -> Result<(), cudacheck::Error> {
    // SAFETY: saxpy touches x[i], y[i] for i < n; `requires` checks both lengths.
    unsafe { saxpy(stream, (n as u32).div_ceil(256), y, x, a, n as i32) }
}

/// GPU: a launch with 2048 threads per block is a typed error naming the limit.
pub fn gpu_bad_block_is_typed(stream: &Arc<CudaStream>) {
    let kernel =
        cudacheck::Kernel::new(CudaSource::from_str("saxpy.cu", SAXPY_CU), "saxpy").build();
    let mut y = stream.alloc_zeros::<f32>(16).expect("alloc");
    let x = stream.alloc_zeros::<f32>(16).expect("alloc");
    // SAFETY: the launch is refused before the driver sees it (2048 threads per block).
    let e = unsafe {
        kernel
            .launch(stream)
            .grid(1)
            .block(2048)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&1.0f32)
            .arg(&16i32)
            .run()
    }
    .expect_err("2048 threads must be refused");
    let text = e.to_string();
    assert!(text.contains("2048 threads"), "{text}");
    assert!(text.contains("at most 1024"), "{text}");
}
