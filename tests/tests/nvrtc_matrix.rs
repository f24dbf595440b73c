//! NVRTC tier, across releases: under every NVRTC of the matrix
//! (`CUDACHECK_NVRTC_MATRIX`, see `cudacheck_tests::matrix`), each with the headers of its own
//! release, `cudacheck doctor` names that release, the CUDA headers used are the ones beside
//! it, every kernel in `kernels/` compiles (with the registers, shared memory and stack frame
//! cudacheck reads from the CUBIN equal to ptxas's report), and the compatibility headers, alone and mixed with
//! CCCL's own `<cuda/std/...>` in either order, compile with no warning of theirs. CCCL changes
//! its spelling of the macros both define from release to release (CCCL 3.5 broke `INFINITY`
//! and redefined `INT8_C`), so this is where a new CUDA shows up first.
//!
//! The cases of `nvrtc_compat.rs` run under every release too, from that file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cudacheck::nvrtc::headers::{COMPAT_HEADERS, HOST_ONLY_HEADERS};
use cudacheck::nvrtc::{compile, doctor_report, nvrtc, CompileOptions, Compiled, CudaSource};
use cudacheck_core::cubin::{parse_ptxas_info, read_cubin};
use cudacheck_tests::matrix::{
    all_under, under_every_release, warnings_from_our_headers, LABEL_VAR,
};
use cudacheck_tests::{kernel_files, kernel_source};

/// CCCL's own headers for what the compatibility headers provide.
const CCCL_HEADERS: &[&str] = &[
    "cuda/std/cstdint",
    "cuda/std/climits",
    "cuda/std/cfloat",
    "cuda/std/cmath",
    "cuda/std/cstddef",
    "cuda/std/limits",
    "cuda/std/type_traits",
    "cuda/std/utility",
    "cuda/std/tuple",
    "cuda/std/array",
    "cuda/std/iterator",
];

/// A kernel using what the headers define: the macros CCCL defines too, and the std:: names.
const USES: &str = r#"
extern "C" __global__ void uses(float* x, int64_t* y) {
    x[0] = -INFINITY; x[1] = NAN; x[2] = FLT_MAX + M_PI; x[3] = std::numeric_limits<float>::max();
    y[0] = INT64_C(1) + INT_MAX + UINT8_C(2) + SIZE_MAX + offsetof(float2, y);
    std::array<int, 2> a{1, 2};
    auto t = std::make_tuple(a[0], 2.0f);
    x[4] = std::get<1>(t) + std::min(x[5], x[6]) + std::sqrt(x[7]);
    int m = 3;
    y[1] = std::move(m) + std::forward<int>(m);
    std::iterator_traits<float*>::value_type v = *std::next(x);
    x[8] = v + std::distance(x, x + 2);
    static_assert(std::is_same_v<std::int64_t, int64_t>);
}
"#;

fn includes<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|n| format!("#include <{n}>\n"))
        .collect()
}

/// Every compatibility header and host-only stub, by the name a kernel includes it by.
fn ours() -> String {
    includes(
        COMPAT_HEADERS
            .iter()
            .map(|(n, _)| *n)
            .chain(HOST_ONLY_HEADERS.iter().copied()),
    )
}

/// The sources the compatibility headers are checked with: (name, text).
fn header_cases() -> Vec<(String, String)> {
    let cccl = includes(CCCL_HEADERS.iter().copied());
    vec![
        // nvcc's implicit includes only: INFINITY, M_PI, std::sqrt without any include.
        (
            "implicit.cu".into(),
            "extern \"C\" __global__ void k(float* x) {\n\
                 x[0] = -INFINITY; x[1] = NAN; x[2] = M_PI; x[3] = std::sqrt(x[4]);\n\
             }\n"
            .into(),
        ),
        (
            "ours_then_cccl.cu".into(),
            format!("{}{cccl}{USES}", ours()),
        ),
        (
            "cccl_then_ours.cu".into(),
            format!("{cccl}{}{USES}", ours()),
        ),
    ]
}

/// Compiles every source on a few threads (compiles are independent and the child's time is
/// CI time); returns (name, outcome) in the sources' order.
fn compile_all(sources: Vec<CudaSource>) -> Vec<(String, Result<Compiled, String>)> {
    let opts = CompileOptions {
        ptxas_verbose: true,
        ..CompileOptions::new("sm_90".parse().unwrap())
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Compiled, String>>>> =
        Mutex::new((0..sources.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(src) = sources.get(i) else { break };
                let r = compile(src, &opts).map_err(|e| e.to_string());
                results.lock().unwrap()[i] = Some(r);
            });
        }
    });
    let results = results.into_inner().unwrap();
    sources
        .iter()
        .zip(results)
        .map(|(s, r)| (s.name.clone(), r.expect("every source compiled")))
        .collect()
}

/// Where a release's headers must lie: its pip wheels' `nvidia/` folder, or the toolkit's
/// root (`lib64/..`).
fn release_root(lib: &Path) -> PathBuf {
    lib.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "nvidia"))
        .or_else(|| lib.parent().and_then(Path::parent))
        .expect("a library inside a folder")
        .to_path_buf()
}

/// Runs in the child process that `nvrtc_matrix_every_release_compiles_kernels_and_headers`
/// starts, under one release of the matrix.
#[test]
#[ignore = "run by nvrtc_matrix_every_release_compiles_kernels_and_headers, once per release"]
fn nvrtc_matrix_child() {
    let label = std::env::var(LABEL_VAR).expect("run by the matrix test");
    let n = nvrtc().unwrap_or_else(|e| panic!("NVRTC {label} loads: {e}"));
    assert_eq!(format!("{}.{}", n.version.0, n.version.1), label);
    let doctor = doctor_report().to_string();
    assert!(
        doctor.starts_with(&format!("NVRTC: {label} at ")),
        "{doctor}"
    );
    // The headers of this release, none of another (the default's .cuda/py, /usr/local/cuda).
    assert!(!n.include_dirs.is_empty(), "{doctor}");
    assert!(
        all_under(&n.include_dirs, &release_root(&n.path)),
        "{doctor}"
    );

    let mut sources: Vec<CudaSource> = kernel_files().iter().map(|f| kernel_source(f)).collect();
    let kernels = sources.len();
    assert!(kernels >= 8, "kernels/ holds at least 8 kernels");
    sources.extend(
        header_cases()
            .into_iter()
            .map(|(name, text)| CudaSource::from_str(name, text)),
    );
    let mut failures = Vec::new();
    for (i, (name, result)) in compile_all(sources).into_iter().enumerate() {
        match result {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(c) => {
                let ours = warnings_from_our_headers(&c.warnings);
                if !ours.is_empty() {
                    failures.push(format!("{name}: warnings from our headers: {ours:#?}"));
                }
                let cubin = read_cubin(&c.cubin).unwrap();
                let found = cubin.kernels.len();
                if i < kernels && found == 0 {
                    failures.push(format!("{name}: no kernels"));
                }
                // What cudacheck reads from this release's CUBINs is what its ptxas reports
                // (NVRTC 12.4's sm_90 CUBINs hold the reserved 1 KB of shared memory unmarked).
                let ptxas = parse_ptxas_info(&c.log).unwrap();
                for k in &cubin.kernels {
                    let p = ptxas.iter().find(|p| p.name == k.symbol);
                    let same = p.is_some_and(|p| {
                        (k.registers, k.static_shared_bytes, k.local_bytes)
                            == (p.registers, p.static_shared_bytes, p.stack_frame_bytes)
                    });
                    if !same {
                        failures.push(format!("{name} `{}`: CUBIN {k:?}, ptxas {p:?}", k.symbol));
                    }
                }
                println!("ok    NVRTC {label} {name} ({found} kernels)");
            }
        }
    }
    assert!(
        failures.is_empty(),
        "NVRTC {label}:\n{}",
        failures.join("\n")
    );
}

#[test]
fn nvrtc_matrix_every_release_compiles_kernels_and_headers() {
    under_every_release(&["--ignored", "--exact", "nvrtc_matrix_child", "--nocapture"]);
}
