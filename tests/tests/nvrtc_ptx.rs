//! NVRTC tier: kernels made from PTX (`Kernel::from_ptx`), as candle-style crates ship them.
//! The PTX is this repository's kernels compiled by NVRTC; nvJitLink assembles it. No GPU.

use cudacheck::core::Arch;
use cudacheck::{Error, Kernel, PtxSource};
use cudacheck_tests::ptx::kernel_ptx;
use cudacheck_tests::{kernel_source, nvrtc_or_skip};

const SM90: Arch = Arch::new(9, 0);

#[test]
fn nvrtc_ptx_kernel_has_the_parameters_and_bounds_of_its_source() {
    if !nvrtc_or_skip() {
        return;
    }
    for (file, name) in [
        ("matmul.cu", "matmul_tiled"),
        ("nbody.cu", "nbody_accel"),
        ("saxpy.cu", "saxpy"),
    ] {
        let ptx = kernel_ptx(file, SM90, false, &[]);
        let from_ptx = Kernel::from_ptx(ptx, name)
            .build()
            .check_offline(SM90)
            .unwrap();
        let from_src = Kernel::new(kernel_source(file), name)
            .build()
            .check_offline(SM90)
            .unwrap();
        let (p, s) = (&from_ptx.resources, &from_src.resources);
        // Registers are ptxas's: nvJitLink's run on the PTX may allocate differently from the
        // one inside NVRTC (matmul_tiled: 40 against 32 with CUDA 13.0). Launches of the PTX
        // kernel are validated against the CUBIN they load, which is nvJitLink's.
        assert!(p.registers > 0, "{name}");
        assert_eq!(p.static_shared_bytes, s.static_shared_bytes, "{name}");
        assert_eq!(p.params, s.params, "{name}");
        assert_eq!(p.max_threads_per_block, s.max_threads_per_block, "{name}");
    }
}

#[test]
fn nvrtc_ptx_kernel_is_found_by_its_cpp_name() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = kernel_ptx("scale.cu", SM90, false, &[]);
    let k = Kernel::from_ptx(ptx, "scale<float>")
        .build()
        .check_offline(SM90)
        .unwrap();
    assert!(k.symbol.starts_with("_Z5scaleIfEv"), "{}", k.symbol);
    assert_eq!(k.resources.params.len(), 4);
}

#[test]
fn nvrtc_ptx_unknown_kernel_lists_the_modules_kernels() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = kernel_ptx("scale.cu", SM90, false, &[]);
    let e = Kernel::from_ptx(ptx, "scale<int>")
        .build()
        .check_offline(SM90)
        .unwrap_err();
    let Error::KernelNotFound { available, .. } = &e else {
        panic!("expected KernelNotFound, got {e}");
    };
    assert!(
        available.iter().any(|a| a == "scale<float>"),
        "{available:?}"
    );
    assert!(
        available.iter().any(|a| a == "scale<__half>"),
        "{available:?}"
    );
}

#[test]
fn nvrtc_ptx_kernel_is_fully_bounds_checked() {
    if !nvrtc_or_skip() {
        return;
    }
    for (file, name) in [
        ("saxpy.cu", "saxpy"),
        ("stencil2d.cu", "stencil2d"),
        ("histogram.cu", "histogram256"),
    ] {
        let ptx = kernel_ptx(file, SM90, true, &[]);
        let k = Kernel::from_ptx(ptx, name).arch(SM90).build();
        let cov = k
            .coverage()
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: no coverage"));
        assert!(cov.unchecked.is_empty(), "{name}: {:?}", cov.unchecked);
        assert!(
            cov.checked + cov.proven + cov.host_checked > 0,
            "{name}: {cov:?}"
        );
        // The checked build assembles too (its resources come from the rewritten PTX).
        let checked = k
            .check_offline_checked(SM90, (256u32, 1u32, 1u32), 0)
            .unwrap();
        assert!(checked.checked.is_some(), "{name}");
    }
}

#[test]
fn nvrtc_ptx_that_ptxas_rejects_is_a_typed_error_naming_the_module() {
    if !nvrtc_or_skip() {
        return;
    }
    let bad = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry k(.param .u64 k_param_0)\n{\n\tbogus.instruction %r1;\n\tret;\n}\n";
    let e = Kernel::from_ptx(PtxSource::from_str("bad.ptx", bad), "k")
        .build()
        .check_offline(SM90)
        .unwrap_err();
    assert!(matches!(e, Error::PtxBuild { .. }), "{e}");
    let text = cudacheck_tests::chain(&e);
    assert!(
        text.contains("could not build kernel `k` from the PTX of `bad.ptx` for sm_90"),
        "{text}"
    );
    assert!(text.contains("bogus"), "{text}");
}
