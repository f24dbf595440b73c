//! NVRTC tier: the toolkit's include directory passed with `-I` (a habit from nvcc command
//! lines) changes nothing. Its headers stay the toolkit's: every file of `kernels/` compiles
//! to the same kernels with the same resources with it as without it, and in about the same
//! time (`scale.cu`, which includes `<cuda_fp16.h>`, once ran past ten minutes, setting the
//! host code of the whole header set aside as if it were the project's).
//!
//! A large header set that really is the project's (the toolkit's headers copied without the
//! file that marks a toolkit directory) is read with bounded work too.

use std::path::{Path, PathBuf};

use cudacheck::cache::CacheMode;
use cudacheck::nvrtc::{compile, nvrtc, CompileOptions, CudaSource};
use cudacheck_core::cubin::read_cubin;
use cudacheck_core::Arch;
use cudacheck_tests::nvrtc_or_skip;

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

/// Each kernel's symbol, registers and static shared memory, from compiling `file` with
/// `include_dirs`, uncached (the cache would answer the second compile from the first).
fn resources(file: &Path, include_dirs: &[PathBuf]) -> Vec<(String, u32, u32)> {
    let source = CudaSource::from_file(file).expect("a kernels/ file reads");
    let opts = CompileOptions {
        include_dirs: include_dirs.to_vec(),
        cache: CacheMode::Off,
        ..CompileOptions::new(Arch::new(9, 0))
    };
    let out = compile(&source, &opts)
        .unwrap_or_else(|e| panic!("{} should compile: {e}", file.display()));
    let info = read_cubin(&out.cubin).expect("NVRTC's CUBIN reads");
    let mut k: Vec<(String, u32, u32)> = info
        .kernels
        .iter()
        .map(|k| (k.symbol.clone(), k.registers, k.static_shared_bytes))
        .collect();
    k.sort();
    k
}

#[test]
fn nvrtc_the_toolkit_include_dir_given_with_dash_i_changes_nothing() {
    if !nvrtc_or_skip() {
        return;
    }
    let toolkit = nvrtc().expect("NVRTC was found").include_dirs.clone();
    assert!(!toolkit.is_empty(), "discovery found no CUDA headers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(kernels_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "kernels/ holds {} files", files.len());
    for file in &files {
        let without = resources(file, &[]);
        let started = std::time::Instant::now();
        let with = resources(file, &toolkit);
        let took = started.elapsed();
        assert!(!without.is_empty(), "{}: no kernels", file.display());
        assert_eq!(with, without, "{}", file.display());
        // Not a timing target, a hang detector with an hour of slack for a slow machine.
        assert!(took.as_secs() < 120, "{}: {took:?}", file.display());
    }
}

#[test]
fn nvrtc_a_large_header_set_of_the_projects_is_read_with_bounded_work() {
    if !nvrtc_or_skip() {
        return;
    }
    let toolkit = nvrtc().expect("NVRTC was found").include_dirs.clone();
    let main = toolkit
        .iter()
        .find(|d| d.join("cuda_fp16.h").is_file())
        .expect("the toolkit has cuda_fp16.h");
    // The toolkit's headers as a project's own: the same files, without the one that marks a
    // toolkit directory, so each is scanned and its macros classified as project code is.
    let copy = tempfile::tempdir().unwrap();
    copy_tree(main, copy.path());
    std::fs::remove_file(copy.path().join("crt/host_defines.h")).ok();
    let file = kernels_dir().join("scale.cu");
    let started = std::time::Instant::now();
    let source = CudaSource::from_file(&file).unwrap();
    let opts = CompileOptions {
        include_dirs: vec![copy.path().to_path_buf()],
        cache: CacheMode::Off,
        ..CompileOptions::new(Arch::new(9, 0))
    };
    // It may compile or not (NVRTC now reads headers without `crt/host_defines.h`); what
    // matters is that preparing it ends.
    let _ = compile(&source, &opts);
    let took = started.elapsed();
    assert!(took.as_secs() < 300, "{took:?}");
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
