//! NVRTC tier: init checking (reads of global memory nothing wrote) on what NVRTC really
//! compiles. Every kernel of `kernels/` and of the benchmark set (`bench/kernels/`) is compiled
//! to PTX, bounds-instrumented against allocations (as `cudacheck run` builds it),
//! init-instrumented and assembled by nvJitLink for sm_80 and sm_90; a small source's reads,
//! writes and atomics get their checks on the lines it marks. Needs NVRTC and nvJitLink, no GPU.

use std::collections::BTreeSet;

use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions, CudaSource};
use cudacheck::Kernel;
use cudacheck_core::init::{init_ptx, InitPtx, InitSiteKind};
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
use cudacheck_core::Arch;
use cudacheck_tests::{corpus_files, nvrtc_or_skip, repo_root};

fn init_build(src: &CudaSource, arch: Arch) -> InitPtx {
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let out = compile(src, &opts).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    let ptx = out.ptx.expect("asked for PTX");
    let inst = instrument_ptx_with(&ptx, &InstrumentOptions::new().alloc_bases(true))
        .unwrap_or_else(|e| panic!("{}: {e}", src.name));
    let r = init_ptx(&inst.ptx).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    assemble_ptx(&r.ptx, arch, &src.name)
        .unwrap_or_else(|e| panic!("{} ({}): {e}", src.name, arch.sm_name()));
    r
}

#[test]
fn nvrtc_init_checked_builds_assemble_for_every_kernel() {
    if !nvrtc_or_skip() {
        return;
    }
    let files = corpus_files();
    assert!(files.len() >= 16, "{files:?}");
    let (mut kernels, mut checked, mut marked) = (0, 0, 0);
    for arch in ["sm_80", "sm_90"] {
        let arch: Arch = arch.parse().unwrap();
        for f in &files {
            let src = CudaSource::from_file(repo_root().join(f)).unwrap();
            let r = init_build(&src, arch);
            for k in &r.kernels {
                assert!(
                    k.coverage.not_checked.is_none(),
                    "{f}: {}: {:?}",
                    k.name,
                    k.coverage.not_checked
                );
                kernels += 1;
                checked += k.coverage.checked;
                marked += k.coverage.marked;
            }
        }
    }
    assert!(kernels >= 40, "{kernels} kernels");
    assert!(
        checked >= kernels && marked >= kernels,
        "{checked} reads, {marked} writes"
    );
}

/// Kernels written for this test: a strided gather, a histogram, a scatter through an index,
/// a struct of arrays. `// READ`, `// WRITE`, `// ATOMIC` mark the lines that must be checked.
const SOURCE: &str = r#"
struct Soa { float* x; float* y; int n; };
extern "C" __global__ void gather(const float* __restrict__ src, const int* idx, float* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int j = idx[i];      // READ
        dst[i] = src[j] * 2.0f; // WRITE
    }
}
extern "C" __global__ void histogram(const unsigned char* in, unsigned int* bins, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[in[i] & 15], 1u); // ATOMIC
}
extern "C" __global__ void shift_tile(const float* in, float* out) {
    __shared__ float tile[130];
    int t = threadIdx.x;
    tile[t + 1] = in[blockIdx.x * 128 + t]; // WRITE
    if (t == 0) { tile[0] = 0.0f; tile[129] = 0.0f; }
    __syncthreads();
    out[blockIdx.x * 128 + t] = tile[t] + tile[t + 2]; // SHARED
}
extern "C" __global__ void soa_norm(Soa s, float* out) {
    int i = threadIdx.x;
    if (i < s.n) out[i] = s.x[i] * s.x[i] + s.y[i] * s.y[i]; // WRITE
}
"#;

fn marked(marker: &str) -> BTreeSet<u32> {
    SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker))
        .map(|(k, _)| k as u32 + 1)
        .collect()
}

#[test]
fn nvrtc_reads_writes_and_atomics_are_checked_on_their_lines() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource {
        name: "init_styles.cu".into(),
        text: SOURCE.into(),
        dir: None,
    };
    let r = init_build(&src, "sm_90".parse().unwrap());
    let lines = |kind: InitSiteKind| -> BTreeSet<u32> {
        r.kernels
            .iter()
            .flat_map(|k| &k.sites)
            .filter(|s| s.kind == kind)
            .filter_map(|s| s.loc.as_ref().map(|l| l.line))
            .collect()
    };
    let reads = lines(InitSiteKind::Read);
    for line in marked("// READ") {
        assert!(
            reads.contains(&line),
            "line {line} has no read check: {reads:?}"
        );
    }
    assert_eq!(lines(InitSiteKind::Atomic), marked("// ATOMIC"));
    for k in &r.kernels {
        assert!(
            k.coverage.not_checked.is_none() && k.coverage.unchecked.is_empty(),
            "{}: {:?}",
            k.name,
            k.coverage
        );
        assert!(k.coverage.marked >= 1, "{}: no write marked", k.name);
    }
    // The tile's reads are checked against the block's own writes; the launch adds the shadow.
    let tile = r.kernel("shift_tile").unwrap();
    assert!(tile.shared_shadow, "{:?}", tile.coverage);
    let shared_lines: BTreeSet<u32> = tile
        .sites
        .iter()
        .filter_map(|s| s.loc.as_ref().map(|l| l.line))
        .collect();
    for line in marked("// SHARED") {
        assert!(
            shared_lines.contains(&line),
            "line {line}: {shared_lines:?}"
        );
    }
    // The struct's fields are read through pointers the launch passes by value: checked too.
    let soa = r.kernel("soa_norm").unwrap();
    assert!(soa.coverage.checked >= 2, "{:?}", soa.coverage);
    assert!(r.ptx.contains("red.global.or.b32"));
}

/// The library's init-checked builds (`Launch::init`): each kernel of the shared-memory cases
/// (`tests/cuda/init/shared.cu`) is built as its launches run it (NVRTC, the bounds rewrite for
/// the launch shape, the init rewrite, nvJitLink), with its shared memory checked.
#[test]
fn nvrtc_library_init_checked_builds_assemble_and_check_shared_memory() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource::from_file(repo_root().join("tests/cuda/init/shared.cu")).unwrap();
    let names: Vec<&str> = src
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("extern \"C\" __global__ void "))
        .map(|r| r.split('(').next().unwrap().trim())
        .collect();
    assert_eq!(names.len(), 6, "{names:?}");
    for name in names {
        let block = if name.ends_with("padding_column") {
            (32, 8, 1)
        } else {
            (128, 1, 1)
        };
        let k = Kernel::new(src.clone(), name).build();
        let c = k
            .init_coverage_for(block, 0)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: no init-checked build"));
        assert!(c.not_checked.is_none(), "{name}: {:?}", c.not_checked);
        assert!(
            c.shared_not_checked.is_none(),
            "{name}: {:?}",
            c.shared_not_checked
        );
        assert!(c.checked >= 2 && c.marked >= 2, "{name}: {c:?}");
    }
    // Each planted read has a check on its line (in the module build the GPU test's reports
    // are read against), and every kernel's shared memory has a shadow.
    let r = init_build(&src, "sm_90".parse().unwrap());
    let lines: Vec<&str> = src.text.lines().collect();
    for k in &r.kernels {
        assert!(k.shared_shadow, "{}: {:?}", k.name, k.coverage);
        if !k.name.starts_with("init_") {
            continue;
        }
        let reads: BTreeSet<u32> = k
            .sites
            .iter()
            .filter(|s| s.kind == InitSiteKind::Read)
            .filter_map(|s| s.loc.as_ref().map(|l| l.line))
            .collect();
        let planted = reads
            .iter()
            .filter(|&&l| lines[l as usize - 1].contains("// UNINIT"))
            .count();
        assert_eq!(planted, 1, "{}: read checks on lines {reads:?}", k.name);
    }
    // A block no GPU runs has no build.
    let k = Kernel::new(src, "init_reduce_tail").build();
    assert_eq!(k.init_coverage_for((2048, 1, 1), 0).unwrap(), None);
}

/// The library's init-checked builds of the global-memory cases (`tests/cuda/init/global.cu`,
/// the GPU tier's tracked buffers): `gather`'s read is checked on its line and its store
/// marked, `fill`'s store marked, and both modules hold the directory variable the library
/// points at the context's shadow (`__cc_init_dir`, 8 bytes).
#[test]
fn nvrtc_library_init_checked_builds_check_global_reads() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource::from_file(repo_root().join("tests/cuda/init/global.cu")).unwrap();
    for (name, checked, marked) in [("gather", 1, 1), ("fill", 0, 1)] {
        let k = Kernel::new(src.clone(), name).build();
        let c = k
            .init_coverage_for(128, 0)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: no init-checked build"));
        assert!(c.not_checked.is_none(), "{name}: {:?}", c.not_checked);
        assert_eq!((c.checked, c.marked), (checked, marked), "{name}: {c:?}");
        assert!(c.unchecked.is_empty(), "{name}: {:?}", c.unchecked);
    }
    let r = init_build(&src, "sm_90".parse().unwrap());
    let directory = format!(".u64 {}", cudacheck_core::init::DIR_SYMBOL);
    assert!(r.ptx.contains(&directory), "no {directory} in the module");
    let line = src
        .text
        .lines()
        .position(|l| l.contains("// READ"))
        .map(|k| k as u32 + 1)
        .unwrap();
    let gather = r.kernel("gather").expect("gather is init-checked");
    let lines: BTreeSet<u32> = gather
        .sites
        .iter()
        .filter(|s| s.kind == InitSiteKind::Read)
        .filter_map(|s| s.loc.as_ref().map(|l| l.line))
        .collect();
    assert_eq!(lines, BTreeSet::from([line]), "{:?}", gather.sites);
}
