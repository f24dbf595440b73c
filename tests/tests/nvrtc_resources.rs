//! NVRTC tier: for every kernel in `kernels/`, on sm_70, sm_75, sm_80 and sm_90, the resources
//! cudacheck reads from the CUBIN equal what ptxas itself reports with `-Xptxas -v` for the same
//! compile. CUDA 13's NVRTC no longer targets sm_70, so that one is compiled by NVRTC 12.9
//! (`CUDACHECK_NVRTC12`, installed by scripts/setup-cuda.sh) in a child process: NVRTC
//! discovery is once per process.

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck_core::cubin::{parse_ptxas_info, read_cubin};
use cudacheck_core::Arch;
use cudacheck_tests::{nvrtc_or_skip, repo_root};

const ARCHES: [&str; 3] = ["sm_75", "sm_80", "sm_90"];

fn kernel_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("kernels"))
        .expect("kernels/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    files
}

/// Compiles every kernel file for each arch and compares; returns how many kernels it compared.
fn compare_with_ptxas(arches: &[&str]) -> usize {
    let files = kernel_files();
    assert!(files.len() >= 8, "kernels/ should hold at least 8 kernels");
    let mut compared = 0;
    for arch in arches {
        let arch: Arch = arch.parse().unwrap();
        for path in &files {
            let source = CudaSource::from_file(path).unwrap();
            let opts = CompileOptions {
                ptxas_verbose: true,
                ..CompileOptions::new(arch)
            };
            let compiled = compile(&source, &opts)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", path.display()));
            let cubin = read_cubin(&compiled.cubin).unwrap();
            assert_eq!(cubin.arch, Some(arch), "{}", path.display());
            let ptxas = parse_ptxas_info(&compiled.log).unwrap();
            assert!(!cubin.kernels.is_empty(), "{}: no kernels", path.display());
            for k in &cubin.kernels {
                let p = ptxas
                    .iter()
                    .find(|p| p.name == k.symbol)
                    .unwrap_or_else(|| panic!("ptxas reported nothing for {}", k.symbol));
                let what = format!("{} `{}` on {arch}", path.display(), k.symbol);
                assert_eq!(k.registers, p.registers, "registers of {what}");
                assert_eq!(
                    k.static_shared_bytes, p.static_shared_bytes,
                    "static shared of {what}"
                );
                assert_eq!(k.local_bytes, p.stack_frame_bytes, "stack frame of {what}");
                // The CUBIN records no spills (see cubin::ptxas); merged values must be ptxas's.
                let mut merged = k.clone();
                p.merge_spills_into(&mut merged);
                assert_eq!(merged.spill_store_bytes, p.spill_store_bytes, "{what}");
                assert_eq!(merged.spill_load_bytes, p.spill_load_bytes, "{what}");
                compared += 1;
            }
        }
    }
    compared
}

#[test]
fn nvrtc_cubin_resources_equal_ptxas_report_for_every_kernel() {
    if !nvrtc_or_skip() {
        return;
    }
    // 11 kernels (scale.cu instantiates two) on 3 arches.
    assert_eq!(
        compare_with_ptxas(&ARCHES),
        33,
        "every kernel on every arch"
    );
}

/// Runs in the child process that `nvrtc_sm_70_resources_with_nvrtc_12` starts.
#[test]
#[ignore = "run by nvrtc_sm_70_resources_with_nvrtc_12 in a child process with NVRTC 12"]
fn nvrtc_child_sm_70_resources() {
    let n = cudacheck::nvrtc::nvrtc().expect("NVRTC 12 loads");
    assert_eq!(
        n.version.0, 12,
        "the child runs NVRTC 12, not {:?}",
        n.version
    );
    assert_eq!(compare_with_ptxas(&["sm_70"]), 11, "every kernel on sm_70");
}

#[test]
fn nvrtc_sm_70_resources_with_nvrtc_12() {
    let Some(lib12) = std::env::var_os("CUDACHECK_NVRTC12") else {
        if std::env::var("CUDACHECK_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("CUDACHECK_NVRTC12 is not set; scripts/setup-cuda.sh exports it");
        }
        println!("skipped (NVRTC tier): CUDACHECK_NVRTC12 not set; sm_70 needs NVRTC 12");
        return;
    };
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "nvrtc_child_sm_70_resources",
            "--nocapture",
        ])
        .env("CUDACHECK_NVRTC", lib12)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1 passed"),
        "the child ran the comparison: {text}"
    );
}

#[test]
fn nvrtc_register_cap_makes_a_kernel_spill_and_the_spills_are_reported() {
    if !nvrtc_or_skip() {
        return;
    }
    let source = CudaSource::from_file(repo_root().join("kernels/nbody.cu")).unwrap();
    let opts = CompileOptions {
        ptxas_verbose: true,
        max_registers: Some(24),
        ..CompileOptions::new("sm_90".parse().unwrap())
    };
    let compiled = compile(&source, &opts).unwrap();
    let cubin = read_cubin(&compiled.cubin).unwrap();
    let ptxas = parse_ptxas_info(&compiled.log).unwrap();
    let k = &cubin.kernels[0];
    let p = ptxas.iter().find(|p| p.name == k.symbol).unwrap();
    assert!(k.registers <= 24, "cap respected: {}", k.registers);
    assert_eq!(k.registers, p.registers);
    assert!(p.spill_store_bytes > 0, "a 24-register nbody must spill");
    assert_eq!(k.local_bytes, p.stack_frame_bytes);
}
