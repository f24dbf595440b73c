//! NVRTC tier: the module cache under `nvrtc::compile` and `Kernel`, with real compiles.
//!
//! Each test uses its own cache directory ([`CacheMode::In`]), so tests running in parallel
//! never share entries; the `Kernel` test sets `CUDACHECK_CACHE_DIR` in a child process, as a
//! user would.

use std::path::{Path, PathBuf};

use cudacheck::cache::{CacheMode, ModuleCache};
use cudacheck::nvrtc::{compile, CompileError, CompileOptions, Compiled, CudaSource};
use cudacheck::Kernel;
use cudacheck_core::Arch;
use cudacheck_tests::{kernel_source, nvrtc_or_skip, run_in_child};

const SM_90: Arch = Arch::new(9, 0);

fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cudacheck-nvrtc-cache-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn opts_in(dir: &Path) -> CompileOptions {
    CompileOptions {
        cache: CacheMode::In(ModuleCache::at(dir, 1 << 30)),
        ptxas_verbose: true,
        ..CompileOptions::new(SM_90)
    }
}

fn entries(dir: &Path) -> usize {
    ModuleCache::at(dir, 1 << 30).info().unwrap().entries as usize
}

/// Whether two compiles gave the same module: CUBIN, PTX, lowered names and log, the log
/// without ptxas's "Compile time = ..." lines (a fresh compile's own timing; a hit repeats the
/// stored one).
fn assert_same_module(a: &Compiled, b: &Compiled, what: &str) {
    let log = |c: &Compiled| -> String {
        c.log
            .lines()
            .filter(|l| !l.contains("Compile time"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        a.cubin == b.cubin,
        "{what}: CUBINs differ ({} and {} bytes)",
        a.cubin.len(),
        b.cubin.len()
    );
    assert_eq!(a.ptx, b.ptx, "{what}: PTX");
    assert_eq!(a.lowered_names, b.lowered_names, "{what}: lowered names");
    assert_eq!(log(a), log(b), "{what}: log");
}

#[test]
fn nvrtc_cache_hit_returns_what_the_compile_returned() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("hit");
    let src = kernel_source("scale.cu");
    let opts = CompileOptions {
        name_expressions: vec!["scale<float>".into()],
        ptx: true,
        ..opts_in(&dir)
    };
    let cold = compile(&src, &opts).unwrap();
    assert_eq!(entries(&dir), 1);
    let warm = compile(&src, &opts).unwrap();
    // A hit is the stored compile itself, timing lines and all.
    assert_eq!(warm.log, cold.log);
    assert_same_module(&warm, &cold, "warm against cold");
    assert_eq!(warm.warnings, cold.warnings);
    let uncached = compile(
        &src,
        &CompileOptions {
            cache: CacheMode::Off,
            ..opts.clone()
        },
    )
    .unwrap();
    assert_same_module(&warm, &uncached, "warm against uncached");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cache_failed_compile_answers_with_the_same_errors() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("failed");
    let src = CudaSource::from_str("bad.cu", "__global__ void k(float* p) { p[0] = q; }\n");
    let cold = compile(&src, &opts_in(&dir)).unwrap_err();
    let warm = compile(&src, &opts_in(&dir)).unwrap_err();
    assert!(matches!(warm, CompileError::Failed { .. }), "{warm}");
    assert_eq!(warm.to_string(), cold.to_string());
    assert!(
        warm.to_string().contains("identifier \"q\" is undefined"),
        "{warm}"
    );
    assert_eq!(entries(&dir), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cache_options_and_variant_are_in_the_key() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("variant");
    let src = kernel_source("saxpy.cu");
    let base = opts_in(&dir);
    compile(&src, &base).unwrap();
    let others = [
        CompileOptions {
            cache_variant: b"instrumented 256x1x1".to_vec(),
            ..base.clone()
        },
        CompileOptions {
            max_registers: Some(16),
            ..base.clone()
        },
        CompileOptions {
            arch: Arch::new(8, 0),
            ..base.clone()
        },
        CompileOptions {
            defines: vec![("UNUSED".into(), None)],
            ..base.clone()
        },
    ];
    for (i, opts) in others.iter().enumerate() {
        let out = compile(&src, opts).unwrap();
        assert_eq!(out.arch, opts.arch);
        assert_eq!(entries(&dir), i + 2, "{opts:?} has a key of its own");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cache_corrupted_entry_is_recompiled_and_replaced() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("corrupt");
    let src = kernel_source("reduce.cu");
    let cold = compile(&src, &opts_in(&dir)).unwrap();
    let file = std::fs::read_dir(dir.join("v1"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "entry"))
        .expect("an entry");
    let mut bytes = std::fs::read(&file).unwrap();
    // Inside the CUBIN: a flipped bit there would be a wrong module if it were trusted.
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let again = compile(&src, &opts_in(&dir)).unwrap();
    assert_same_module(&again, &cold, "recompiled");
    // The entry was written again, whole.
    assert_ne!(std::fs::read(&file).unwrap(), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cache_changed_header_recompiles() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("header");
    let src_dir = fresh_dir("header-src");
    std::fs::write(
        src_dir.join("k.cu"),
        "#include <cuda_fp16.h>\n#include \"name.cuh\"\n\
         extern \"C\" __global__ void KERNEL(__half* p) { p[0] = __float2half(1.0f); }\n",
    )
    .unwrap();
    let src = CudaSource::from_file(src_dir.join("k.cu")).unwrap();
    std::fs::write(src_dir.join("name.cuh"), "#define KERNEL first\n").unwrap();
    let first = compile(&src, &opts_in(&dir)).unwrap();
    assert!(first.cubin.windows(5).any(|w| w == b"first"));
    std::fs::write(src_dir.join("name.cuh"), "#define KERNEL second\n").unwrap();
    let second = compile(&src, &opts_in(&dir)).unwrap();
    assert!(second.cubin.windows(6).any(|w| w == b"second"));
    assert!(!second.cubin.windows(5).any(|w| w == b"first"));
    assert_eq!(entries(&dir), 2);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&src_dir);
}

#[test]
fn nvrtc_cache_threads_compiling_one_source_all_get_the_module() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("threads");
    let src = kernel_source("histogram.cu");
    let reference = compile(
        &src,
        &CompileOptions {
            cache: CacheMode::Off,
            ..opts_in(&dir)
        },
    )
    .unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| compile(&src, &opts_in(&dir)).unwrap()))
            .collect();
        for h in handles {
            assert_same_module(&h.join().unwrap(), &reference, "a thread's");
        }
    });
    assert_eq!(entries(&dir), 1);
    let key_file_ok = std::fs::read_dir(dir.join("v1")).unwrap().count();
    assert_eq!(key_file_ok, 1, "no temporary files left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run in a child process by the test below, with `CUDACHECK_CACHE_DIR` set.
#[test]
fn nvrtc_cache_child_kernel_check_offline() {
    // The parent checked for NVRTC; asking again here would load it.
    if std::env::var_os("CUDACHECK_CACHE_TEST_CHILD").is_none() {
        return;
    }
    let k = Kernel::new(kernel_source("saxpy.cu"), "saxpy").build();
    let checked = k.check_offline(SM_90).expect("saxpy compiles");
    println!("registers={}", checked.resources.registers);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    println!("nvrtc_loaded={}", maps.contains("libnvrtc"));
}

#[test]
fn nvrtc_cache_kernel_compiles_through_the_environment_cache() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("kernel");
    let dir_s = dir.display().to_string();
    let vars = [
        ("CUDACHECK_CACHE_DIR", dir_s.as_str()),
        ("CUDACHECK_CACHE_TEST_CHILD", "1"),
    ];
    let (ok, cold) = run_in_child("nvrtc_cache_child_kernel_check_offline", &vars);
    assert!(ok, "{cold}");
    assert_eq!(entries(&dir), 1, "{cold}");
    let (ok, warm) = run_in_child("nvrtc_cache_child_kernel_check_offline", &vars);
    assert!(ok, "{warm}");
    let regs = |t: &str| -> Option<String> {
        // `--nocapture` prints it after "test NAME ... " on the same line.
        t.split("registers=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(String::from)
    };
    assert!(regs(&cold).is_some(), "{cold}");
    assert_eq!(regs(&warm), regs(&cold));
    // A process whose kernels all come from the cache does not load NVRTC (tens of ms).
    assert!(cold.contains("nvrtc_loaded=true"), "{cold}");
    assert!(warm.contains("nvrtc_loaded=false"), "{warm}");
    assert_eq!(entries(&dir), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
