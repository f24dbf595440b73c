//! NVRTC tier: the module cache under `nvrtc::compile` and `Kernel`, with real compiles.
//!
//! Each test uses its own cache directory ([`CacheMode::In`]), so tests running in parallel
//! never share entries; the `Kernel` tests set `CUDACHECK_CACHE_DIR` in a child process, as a
//! user would. Tests that read the process's counts ([`stats`]: NVRTC compiles, nvJitLink
//! assemblies, hits) run their body in a child process, where no other test counts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cudacheck::cache::{stats, CacheMode, ModuleCache};
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
    // The help notes a fresh compile adds come back from the cache too. (The kernel uses the
    // missing header's library: one only host code could use would be set aside.)
    let src = CudaSource::from_str(
        "missing.cu",
        "#include <mathlib/fast.h>\n\
         __global__ void k(float* x) { x[0] = mathlib::fast_exp(x[0]); }\n",
    );
    let notes = |e: &CompileError| match e {
        CompileError::Failed { diagnostics, .. } => diagnostics
            .iter()
            .flat_map(|d| d.notes.clone())
            .collect::<Vec<_>>(),
        other => panic!("expected Failed, got {other}"),
    };
    let cold = compile(&src, &opts_in(&dir)).unwrap_err();
    let warm = compile(&src, &opts_in(&dir)).unwrap_err();
    assert!(
        notes(&cold).iter().any(|n| n.starts_with("help:")),
        "{:?}",
        notes(&cold)
    );
    assert_eq!(notes(&warm), notes(&cold));
    assert_eq!(entries(&dir), 2);
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
    let temporary = std::fs::read_dir(dir.join("v1"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
        .count();
    assert_eq!(temporary, 0, "no temporary files left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run in a child process by the test below, with `CUDACHECK_CACHE_DIR` set.
#[test]
fn nvrtc_cache_child_kernel_check_offline() {
    // The parent checked for NVRTC; asking again here would load it.
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let k = Kernel::new(kernel_source("saxpy.cu"), "saxpy").build();
    let checked = k.check_offline(SM_90).expect("saxpy compiles");
    println!("registers={}", checked.resources.registers);
    println!("nvrtc_compiles={}", stats().nvrtc_compiles);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    println!("nvrtc_loaded={}", maps.contains("libnvrtc"));
    println!("child finished");
}

#[test]
fn nvrtc_cache_kernel_compiles_through_the_environment_cache() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("kernel");
    let dir_s = dir.display().to_string();
    let vars = [("CUDACHECK_CACHE_DIR", dir_s.as_str()), (CHILD, "1")];
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

/// How long a test leaves its files alone before a manifest trusts their stamps (cudacheck's
/// settle time is 2 s: a stamp younger than that, relative to the lookup, is not recorded).
const SETTLE: Duration = Duration::from_millis(2_100);

/// Set in the child processes the tests below start.
const CHILD: &str = "CUDACHECK_CACHE_TEST_CHILD";

/// The cache directory a child was given.
fn child_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CUDACHECK_CACHE_DIR").expect("the parent sets it"))
}

/// Runs the test `child` in a process of its own with a fresh cache directory and `vars`:
/// its counts (`cudacheck::cache::stats`) are then its alone. Returns the child's output.
fn run_child(child: &str, tag: &str, vars: &[(&str, &str)]) -> String {
    let dir = fresh_dir(tag);
    let dir_s = dir.display().to_string();
    let mut all = vec![("CUDACHECK_CACHE_DIR", dir_s.as_str()), (CHILD, "1")];
    all.extend_from_slice(vars);
    let (ok, out) = run_in_child(child, &all);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "{out}");
    assert!(
        out.contains("child finished"),
        "the child did not run:\n{out}"
    );
    out
}

fn manifests(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("v1"))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "manifest"))
                .count()
        })
        .unwrap_or(0)
}

/// How a child changes the header after the warm start.
#[derive(Clone, Copy, Debug)]
enum HeaderChange {
    /// New content of the same size (a new modification time).
    SameSize,
    /// New content of the same size, the modification time set back to the old one.
    SameSizeAndTime,
    /// A header of the same name appears in an include directory searched earlier.
    Shadowed,
}

/// The child of the three tests below: a warm start answered through a manifest, then a
/// header changed so that only a stamp can tell; the next compile must see the change.
#[test]
fn nvrtc_cache_child_header_change() {
    let Some(change) = std::env::var("CUDACHECK_CACHE_TEST_CHANGE").ok() else {
        return;
    };
    let change = match change.as_str() {
        "same-size" => HeaderChange::SameSize,
        "same-size-and-time" => HeaderChange::SameSizeAndTime,
        "shadowed" => HeaderChange::Shadowed,
        other => panic!("unknown change {other}"),
    };
    let dir = child_dir();
    let src_dir = dir.join("src");
    let (early, late) = (src_dir.join("early"), src_dir.join("late"));
    std::fs::create_dir_all(&early).unwrap();
    std::fs::create_dir_all(&late).unwrap();
    std::fs::write(
        src_dir.join("k.cu"),
        "#include <name.cuh>\nextern \"C\" __global__ void KERNEL(float* p) { p[0] = 1.0f; }\n",
    )
    .unwrap();
    let header = late.join("name.cuh");
    std::fs::write(&header, "#define KERNEL first\n").unwrap();
    let src = CudaSource::from_file(src_dir.join("k.cu")).unwrap();
    let opts = CompileOptions {
        include_dirs: vec![early.clone(), late.clone()],
        ..opts_in(&dir)
    };
    std::thread::sleep(SETTLE);

    let s0 = stats();
    let cold = compile(&src, &opts).unwrap();
    assert!(cold.cubin.windows(5).any(|w| w == b"first"));
    assert_eq!(stats().nvrtc_compiles, s0.nvrtc_compiles + 1);
    assert_eq!(
        manifests(&dir),
        1,
        "settled headers: the lookup is recorded"
    );
    let warm = compile(&src, &opts).unwrap();
    let s1 = stats();
    assert_eq!(s1.nvrtc_compiles, s0.nvrtc_compiles + 1, "a hit");
    assert_eq!(
        s1.manifest_hits,
        s0.manifest_hits + 1,
        "found through the manifest"
    );
    assert_eq!(warm.cubin, cold.cubin);

    let before = std::fs::metadata(&header).unwrap().modified().unwrap();
    // A later tick of the file system's clock than the stamp's.
    std::thread::sleep(Duration::from_millis(20));
    match change {
        HeaderChange::SameSize => std::fs::write(&header, "#define KERNEL other\n").unwrap(),
        HeaderChange::SameSizeAndTime => {
            std::fs::write(&header, "#define KERNEL other\n").unwrap();
            let f = std::fs::File::options().append(true).open(&header).unwrap();
            f.set_modified(before).unwrap();
            drop(f);
            let m = std::fs::metadata(&header).unwrap();
            assert_eq!(m.modified().unwrap(), before);
            assert_eq!(m.len(), "#define KERNEL first\n".len() as u64);
        }
        HeaderChange::Shadowed => {
            std::fs::write(early.join("name.cuh"), "#define KERNEL other\n").unwrap()
        }
    }
    let changed = compile(&src, &opts).unwrap();
    assert!(
        changed.cubin.windows(5).any(|w| w == b"other"),
        "{change:?}: the change was seen"
    );
    assert!(!changed.cubin.windows(5).any(|w| w == b"first"));
    let s2 = stats();
    assert_eq!(
        s2.nvrtc_compiles,
        s1.nvrtc_compiles + 1,
        "{change:?}: compiled again"
    );
    assert_eq!(s2.manifest_hits, s1.manifest_hits);
    println!("child finished");
}

#[test]
fn nvrtc_cache_manifest_sees_a_header_rewritten_to_the_same_size() {
    if !nvrtc_or_skip() {
        return;
    }
    let vars = [("CUDACHECK_CACHE_TEST_CHANGE", "same-size")];
    run_child("nvrtc_cache_child_header_change", "same-size", &vars);
}

#[test]
fn nvrtc_cache_manifest_sees_a_rewrite_with_the_old_size_and_modification_time() {
    if !nvrtc_or_skip() {
        return;
    }
    let vars = [("CUDACHECK_CACHE_TEST_CHANGE", "same-size-and-time")];
    run_child("nvrtc_cache_child_header_change", "same-time", &vars);
}

#[test]
fn nvrtc_cache_manifest_sees_a_header_appear_earlier_on_the_search_path() {
    if !nvrtc_or_skip() {
        return;
    }
    let vars = [("CUDACHECK_CACHE_TEST_CHANGE", "shadowed")];
    run_child("nvrtc_cache_child_header_change", "shadowed", &vars);
}

#[test]
fn nvrtc_cache_replaced_nvrtc_library_is_a_miss() {
    if !nvrtc_or_skip() {
        return;
    }
    let real = cudacheck::nvrtc::nvrtc().unwrap();
    let lib_dir = fresh_dir("nvrtc-copy");
    let lib = lib_dir.join(real.path.file_name().unwrap());
    std::fs::copy(&real.path, &lib).unwrap();
    if let Some(b) = &real.builtins {
        std::fs::copy(b, lib_dir.join(b.file_name().unwrap())).unwrap();
    }
    let cache = fresh_dir("nvrtc-replaced");
    let (cache_s, lib_s) = (cache.display().to_string(), lib.display().to_string());
    let vars = [
        ("CUDACHECK_CACHE_DIR", cache_s.as_str()),
        ("CUDACHECK_NVRTC", lib_s.as_str()),
        (CHILD, "1"),
    ];
    let child = || {
        let (ok, out) = run_in_child("nvrtc_cache_child_kernel_check_offline", &vars);
        assert!(ok && out.contains("child finished"), "{out}");
        out
    };
    let cold = child();
    assert!(cold.contains("nvrtc_compiles=1"), "{cold}");
    let warm = child();
    assert!(warm.contains("nvrtc_compiles=0"), "{warm}");
    assert!(warm.contains("nvrtc_loaded=false"), "{warm}");
    // Reinstalled: the same bytes, a new file renamed over the old one.
    let new = lib_dir.join("new.so");
    std::fs::copy(&lib, &new).unwrap();
    std::fs::rename(&new, &lib).unwrap();
    let replaced = child();
    assert!(replaced.contains("nvrtc_compiles=1"), "{replaced}");
    assert!(replaced.contains("nvrtc_loaded=true"), "{replaced}");
    let _ = std::fs::remove_dir_all(&lib_dir);
    let _ = std::fs::remove_dir_all(&cache);
}

/// The child of the checked-build tests: the same bounds-checked build in a second `Kernel`
/// comes from the disk, site table and all; another launch shape is assembled again.
#[test]
fn nvrtc_cache_child_checked_builds() {
    if std::env::var_os("CUDACHECK_CACHE_TEST_CHECKED").is_none() {
        return;
    }
    let build = |block: u32| {
        Kernel::new(kernel_source("matmul.cu"), "matmul_tiled")
            .build()
            .check_offline_checked(SM_90, (block, block, 1), 0)
            .expect("the checked build")
    };
    let s0 = stats();
    let first = build(16);
    let s1 = stats();
    assert_eq!(s1.assemblies, s0.assemblies + 1);
    assert!(s1.nvrtc_compiles > s0.nvrtc_compiles);

    let again = build(16);
    let s2 = stats();
    assert_eq!(s2.nvrtc_compiles, s1.nvrtc_compiles, "no NVRTC");
    assert_eq!(s2.assemblies, s1.assemblies, "no nvJitLink");
    assert_eq!(s2.checked_hits, s1.checked_hits + 1);
    let (a, b) = (first.checked.unwrap(), again.checked.unwrap());
    assert!(!a.sites.is_empty());
    assert_eq!(a, b, "the site table round-trips");
    assert_eq!(first.resources, again.resources);

    let other = build(32);
    let s3 = stats();
    assert_eq!(
        s3.assemblies,
        s2.assemblies + 1,
        "another shape is another build"
    );
    assert_eq!(s3.nvrtc_compiles, s2.nvrtc_compiles, "from the PTX entry");
    assert_eq!(s3.checked_hits, s2.checked_hits);
    assert_ne!(
        other.checked.unwrap().coverage,
        b.coverage,
        "specialised for its shape"
    );

    // A damaged build is rebuilt and replaced.
    let dir = child_dir().join("v1");
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "checked") {
            let mut bytes = std::fs::read(e.path()).unwrap();
            let at = bytes.len() / 2;
            bytes[at] ^= 1;
            std::fs::write(e.path(), bytes).unwrap();
        }
    }
    let rebuilt = build(16);
    assert_eq!(stats().assemblies, s3.assemblies + 1);
    assert_eq!(rebuilt.checked.unwrap(), b);
    println!("child finished");
}

#[test]
fn nvrtc_cache_checked_build_comes_from_the_disk_in_a_new_kernel() {
    if !nvrtc_or_skip() {
        return;
    }
    run_child(
        "nvrtc_cache_child_checked_builds",
        "checked",
        &[("CUDACHECK_CACHE_TEST_CHECKED", "1")],
    );
}

/// The child of the test below: one checked build, reporting what it loaded.
#[test]
fn nvrtc_cache_child_checked_start() {
    if std::env::var_os("CUDACHECK_CACHE_TEST_CHECKED_START").is_none() {
        return;
    }
    let k = Kernel::new(kernel_source("saxpy.cu"), "saxpy").build();
    let c = k
        .check_offline_checked(SM_90, 256, 0)
        .expect("saxpy's checked build");
    assert!(c.checked.is_some());
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    println!("assemblies={}", stats().assemblies);
    println!("nvrtc_loaded={}", maps.contains("libnvrtc"));
    println!("nvjitlink_loaded={}", maps.contains("libnvJitLink"));
    println!("child finished");
}

#[test]
fn nvrtc_cache_warm_checked_start_loads_neither_nvrtc_nor_nvjitlink() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("checked-start");
    let dir_s = dir.display().to_string();
    let vars = [
        ("CUDACHECK_CACHE_DIR", dir_s.as_str()),
        (CHILD, "1"),
        ("CUDACHECK_CACHE_TEST_CHECKED_START", "1"),
    ];
    let (ok, cold) = run_in_child("nvrtc_cache_child_checked_start", &vars);
    assert!(ok && cold.contains("child finished"), "{cold}");
    assert!(cold.contains("assemblies=1"), "{cold}");
    let (ok, warm) = run_in_child("nvrtc_cache_child_checked_start", &vars);
    assert!(ok && warm.contains("child finished"), "{warm}");
    assert!(warm.contains("assemblies=0"), "{warm}");
    assert!(warm.contains("nvrtc_loaded=false"), "{warm}");
    assert!(warm.contains("nvjitlink_loaded=false"), "{warm}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child of the test below: one compile of `k.cu` (which includes the project's `mine.h`
/// and `<cuda_fp16.h>`) into the cache the parent names, whose directory may not exist yet;
/// prints the process's counts.
#[test]
fn nvrtc_cache_child_toolkit_scans() {
    let Some(src_dir) = std::env::var_os("CUDACHECK_CACHE_TEST_SCANS_SRC") else {
        return;
    };
    let src = CudaSource::from_file(PathBuf::from(src_dir).join("k.cu")).unwrap();
    compile(&src, &opts_in(&child_dir())).expect("k.cu compiles");
    let s = stats();
    println!("nvrtc_compiles={}", s.nvrtc_compiles);
    println!("toolkit_scans={}", s.toolkit_scans);
    println!("child finished");
}

/// What a later process reuses is written by the process that compiles. A
/// first compile into a cache directory that does not exist yet keys its module before the
/// directory is made; the scans of the toolkit headers it read must still reach the disk, so
/// that the next process, whose lookup cannot use the manifest (a header of the project
/// changed), reads none of those headers again.
#[test]
fn nvrtc_cache_first_compile_keeps_the_toolkit_scans_for_the_next_process() {
    if !nvrtc_or_skip() {
        return;
    }
    let base = fresh_dir("scans");
    let cache = base.join("cache"); // not made: the cold process makes it
    let src_dir = base.join("src");
    std::fs::create_dir_all(&src_dir).unwrap();
    std::fs::write(
        src_dir.join("k.cu"),
        "#include <cuda_fp16.h>\n#include \"mine.h\"\n\
         extern \"C\" __global__ void k(__half* p) { p[0] = __float2half(SCALE); }\n",
    )
    .unwrap();
    std::fs::write(src_dir.join("mine.h"), "#define SCALE 1.0f\n").unwrap();
    let (cache_s, src_s) = (cache.display().to_string(), src_dir.display().to_string());
    let vars = [
        ("CUDACHECK_CACHE_DIR", cache_s.as_str()),
        (CHILD, "1"),
        ("CUDACHECK_CACHE_TEST_SCANS_SRC", src_s.as_str()),
    ];
    let count = |out: &str, name: &str| -> u64 {
        out.split(&format!("{name}="))
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
    };
    let (ok, cold) = run_in_child("nvrtc_cache_child_toolkit_scans", &vars);
    assert!(ok && cold.contains("child finished"), "{cold}");
    assert!(count(&cold, "nvrtc_compiles") >= 1, "{cold}");
    // <cuda_fp16.h> and the implicit <cuda_runtime.h> reach hundreds of toolkit headers.
    assert!(count(&cold, "toolkit_scans") > 50, "{cold}");
    let memo = cache.join("toolkit-scan-v2");
    let kept = memo.is_file();

    // A later tick of the file system's clock than the cold lookup's stamp of `mine.h`.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(src_dir.join("mine.h"), "#define SCALE 2.0f\n").unwrap();
    let (ok, warm) = run_in_child("nvrtc_cache_child_toolkit_scans", &vars);
    assert!(ok && warm.contains("child finished"), "{warm}");
    assert!(
        count(&warm, "nvrtc_compiles") >= 1,
        "a changed header compiles again:\n{warm}"
    );
    assert_eq!(
        count(&warm, "toolkit_scans"),
        0,
        "the first process after the compiling one read toolkit headers again:\n{warm}"
    );
    assert!(kept, "the compiling process wrote {}", memo.display());
    let _ = std::fs::remove_dir_all(&base);
}
