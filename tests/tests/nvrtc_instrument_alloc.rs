//! NVRTC tier: checking against allocations (`InstrumentOptions::alloc_bases`, for a launch
//! interposer) on what NVRTC really compiles. Kernels of this file (a view indexed below its
//! pointer, structs of pointers passed by value, a pointer chosen between two buffers, an
//! atomic through an index, an unrolled window) and every kernel of `kernels/` and
//! `bench/kernels/` are compiled to PTX, instrumented with allocation bases and assembled by
//! nvJitLink for sm_90: each keeps its parameters in front of a length and a base per buffer
//! slot and the record. Needs NVRTC and nvJitLink, no GPU.

use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions, CudaSource};
use cudacheck_core::cubin::read_cubin;
use cudacheck_core::instrument::{
    instrument_ptx_with, BufferSlot, InstrumentOptions, InstrumentedKernel, InstrumentedPtx, Target,
};
use cudacheck_core::race::{race_ptx, RaceOptions};
use cudacheck_core::Arch;
use cudacheck_tests::{kernel_files, nvrtc_or_skip, repo_root};

const SOURCE: &str = r#"
// A view may read below its own pointer, down to its allocation's start.
extern "C" __global__ void view_shift(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i - 4] + a[i];
}

struct Graph { const int* nindex; const int* nlist; int n; };

// CSR row sums through a struct of pointers passed by value.
extern "C" __global__ void graph_degree(Graph g, int* out) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < g.n) {
        int s = 0;
        for (int e = g.nindex[v]; e < g.nindex[v + 1]; e++) s += g.nlist[e];
        out[v] = s;
    }
}

// A struct whose middle field is an integer: only its pointers are slots.
struct Strided { const float* src; long stride; float* dst; };

extern "C" __global__ void strided_copy(Strided p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p.dst[i] = p.src[i * p.stride];
}

// One of two buffers, and an atomic through an index read from memory.
extern "C" __global__ void pick_add(const float* a, const float* b, int* hist, const int* idx,
                                    int n, int which) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float* p = which ? a : b;
        atomicAdd(&hist[idx[i]], (int)p[i]);
    }
}

// An unrolled window around each element: reads from 4 below to 3 above.
extern "C" __global__ void window8(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
#pragma unroll
    for (int k = -4; k < 4; k++) s += a[8 * i + k];
    out[i] = s;
}
"#;

fn sm90() -> Arch {
    "sm_90".parse().unwrap()
}

fn ptx_of(src: &CudaSource) -> (Vec<u8>, String) {
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(sm90())
    };
    let out = compile(src, &opts).unwrap_or_else(|e| panic!("{}: {e}", src.name));
    (out.cubin, out.ptx.expect("asked for PTX"))
}

/// Instruments `ptx` with `opts`, assembles it for sm_90 and checks every kernel's parameters
/// against the plain build's: the user's first, unchanged, then `hidden_params()` of 8 bytes.
fn assemble(
    name: &str,
    plain_cubin: &[u8],
    ptx: &str,
    opts: &InstrumentOptions,
) -> InstrumentedPtx {
    let inst = instrument_ptx_with(ptx, opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    let checked = assemble_ptx(&inst.ptx, sm90(), name)
        .unwrap_or_else(|e| panic!("{name}: ptxas refused the build: {e}"));
    let plain = read_cubin(plain_cubin).unwrap();
    let checked = read_cubin(&checked.cubin).unwrap();
    for k in &inst.kernels {
        let p = plain.kernel(&k.symbol).expect("plain kernel");
        let c = checked.kernel(&k.symbol).expect("checked kernel");
        let n = p.params.len();
        assert_eq!(k.num_params as usize, n, "{}", k.name);
        assert_eq!(k.alloc_bases, opts.alloc_bases, "{}", k.name);
        assert_eq!(c.params.len(), n + k.hidden_params(), "{}", k.name);
        assert_eq!(
            &c.params[..n],
            &p.params[..],
            "{}: user params moved",
            k.name
        );
        assert!(
            c.params[n..].iter().all(|q| q.size == 8),
            "{}: hidden params are 8 bytes",
            k.name
        );
    }
    inst
}

/// No check of an allocation-based build measures from an argument: every base the
/// instrumentation loads is a slot's `__cc_base_*`.
fn bases_are_slots(inst: &InstrumentedPtx, name: &str) {
    for line in inst.ptx.lines().map(str::trim) {
        if line.starts_with("ld.param.u64 %__cc") && !line.contains("[__cc_") {
            panic!("{name}: instrumentation reads an argument: `{line}`");
        }
    }
}

fn kernel<'a>(inst: &'a InstrumentedPtx, name: &str) -> &'a InstrumentedKernel {
    inst.kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel {name}"))
}

fn slot(param: u32, offset: u32) -> BufferSlot {
    BufferSlot { param, offset }
}

#[test]
fn nvrtc_allocation_based_builds_of_views_and_structs_assemble() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource {
        name: "alloc.cu".into(),
        text: SOURCE.into(),
        dir: None,
    };
    let (cubin, ptx) = ptx_of(&src);
    let alloc = InstrumentOptions::new().alloc_bases(true);
    for opts in [alloc, alloc.host_checks(true)] {
        let inst = assemble(&src.name, &cubin, &ptx, &opts);
        bases_are_slots(&inst, &src.name);
        assert_eq!(inst.kernels.len(), 5);
        for k in &inst.kernels {
            assert!(
                k.coverage.is_complete(),
                "{}: {:?}",
                k.name,
                k.coverage.unchecked
            );
            assert_eq!(k.hidden_params(), 2 * k.slots.len() + 1, "{}", k.name);
            // Every parameter has its own slot, in order.
            for p in 0..k.num_params {
                assert!(k.slots.contains(&slot(p, 0)), "{}: {:?}", k.name, k.slots);
            }
        }

        let g = kernel(&inst, "graph_degree");
        assert_eq!(g.slots, [slot(0, 0), slot(0, 8), slot(1, 0)]);
        for t in [Target::Field(slot(0, 0)), Target::Field(slot(0, 8))] {
            assert!(
                g.sites.iter().any(|s| s.target == t),
                "{t:?}: {:?}",
                g.sites
            );
        }
        // The row's loop is versioned: its precheck reads `nlist`'s slot.
        assert_eq!(g.coverage.versioned_loops, 1, "{:?}", g.coverage);
        assert!(inst.ptx.contains("[__cc_base_0_8];"));

        let s = kernel(&inst, "strided_copy");
        assert_eq!(
            s.slots,
            [slot(0, 0), slot(0, 16), slot(1, 0)],
            "`stride` is no slot"
        );
        let targets: Vec<&Target> = s.sites.iter().map(|s| &s.target).collect();
        assert!(
            targets.contains(&&Target::Field(slot(0, 16))),
            "{targets:?}"
        );

        let p = kernel(&inst, "pick_add");
        assert!(
            p.sites
                .iter()
                .any(|s| s.target == Target::OneOf(vec![Target::Param(0), Target::Param(1)])),
            "{:?}",
            p.sites
        );
        let v = kernel(&inst, "view_shift");
        assert_eq!(v.slots, [slot(0, 0), slot(1, 0), slot(2, 0)]);
    }
}

#[test]
fn nvrtc_structs_of_pointers_stay_unchecked_without_allocation_bases() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource {
        name: "alloc.cu".into(),
        text: SOURCE.into(),
        dir: None,
    };
    let (cubin, ptx) = ptx_of(&src);
    let inst = assemble(&src.name, &cubin, &ptx, &InstrumentOptions::new());
    for name in ["graph_degree", "strided_copy"] {
        let k = kernel(&inst, name);
        assert!(k.slots.is_empty());
        // The struct's pointers are listed, never checked against the parameter.
        assert!(!k.coverage.is_complete(), "{name}");
        assert!(
            !k.sites
                .iter()
                .any(|s| matches!(s.target, Target::Param(0) | Target::Field(_))),
            "{name}: {:?}",
            k.sites
        );
    }
}

/// Every kernel of `kernels/` and `bench/kernels/` (no struct parameters there) is checked
/// exactly as the library build checks it, against allocations instead of arguments, and
/// assembles.
#[test]
fn nvrtc_every_kernel_checks_the_same_accesses_against_allocations() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut files: Vec<_> = kernel_files()
        .iter()
        .map(|f| repo_root().join("kernels").join(f))
        .collect();
    let bench = repo_root().join("bench/kernels");
    let mut more: Vec<_> = std::fs::read_dir(&bench)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    more.sort();
    files.extend(more);
    assert!(files.len() >= 15, "{files:?}");
    let mut kernels = 0;
    for path in files {
        let src = CudaSource::from_file(&path).unwrap();
        let (cubin, ptx) = ptx_of(&src);
        for host in [false, true] {
            let lib =
                instrument_ptx_with(&ptx, &InstrumentOptions::new().host_checks(host)).unwrap();
            let opts = InstrumentOptions::new().host_checks(host).alloc_bases(true);
            let inst = assemble(&src.name, &cubin, &ptx, &opts);
            bases_are_slots(&inst, &src.name);
            for (a, l) in inst.kernels.iter().zip(&lib.kernels) {
                assert_eq!(a.symbol, l.symbol);
                assert_eq!(a.coverage, l.coverage, "{}", a.name);
                assert_eq!(a.sites, l.sites, "{}", a.name);
                assert_eq!(a.host_checks, l.host_checks, "{}", a.name);
                let own: Vec<BufferSlot> = (0..a.num_params).map(|p| slot(p, 0)).collect();
                assert_eq!(a.slots, own, "{}", a.name);
                kernels += 1;
            }
        }
    }
    assert!(kernels >= 2 * 40, "{kernels}");
}

/// The race checker rewrites an allocation-based build as it does the library's: it takes no
/// hidden parameter of its own, so the build keeps a length and a base per slot and the record.
#[test]
fn nvrtc_race_checked_allocation_builds_keep_their_parameters() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = CudaSource {
        name: "alloc.cu".into(),
        text: SOURCE.into(),
        dir: None,
    };
    let (cubin, ptx) = ptx_of(&src);
    let inst = instrument_ptx_with(&ptx, &InstrumentOptions::new().alloc_bases(true)).unwrap();
    let r = race_ptx(&inst.ptx, &RaceOptions::new(0)).unwrap();
    let raced = assemble_ptx(&r.ptx, sm90(), &src.name)
        .unwrap_or_else(|e| panic!("ptxas refused the race-checked build: {e}"));
    let plain = read_cubin(&cubin).unwrap();
    let raced = read_cubin(&raced.cubin).unwrap();
    for k in &inst.kernels {
        let n = plain.kernel(&k.symbol).unwrap().params.len();
        let c = raced.kernel(&k.symbol).unwrap();
        assert_eq!(c.params.len(), n + k.hidden_params(), "{}", k.name);
    }
}
