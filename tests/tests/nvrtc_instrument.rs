//! NVRTC tier: every kernel file of `kernels/` (and the planted bugs of the GPU tier) is
//! instrumented, the rewrite compiles with NVRTC for sm_90 exactly like the plain source, and
//! each kernel of the rewrite takes exactly the two hidden parameters more than the plain one,
//! at the end. Needs NVRTC, no GPU.

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck::Kernel;
use cudacheck_core::cubin::read_cubin;
use cudacheck_core::instrument::{instrument, InstrumentOptions, HIDDEN_PARAMS};
use cudacheck_core::Arch;
use cudacheck_tests::{kernel_files, nvrtc_or_skip, repo_root};

fn sources() -> Vec<CudaSource> {
    let mut v: Vec<CudaSource> = kernel_files()
        .iter()
        .map(|f| CudaSource::from_file(repo_root().join("kernels").join(f)).unwrap())
        .collect();
    assert!(v.len() >= 10, "kernels/ should hold 10 files");
    v.push(CudaSource::from_file(repo_root().join("tests/cuda/planted/bugs.cu")).unwrap());
    v
}

#[test]
fn nvrtc_every_kernel_instruments_and_takes_two_more_params() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let mut kernels = 0;
    for src in sources() {
        let inst = instrument(&src.text, &src.name, &InstrumentOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", src.name));
        assert!(!inst.kernels.is_empty(), "{}: nothing rewritten", src.name);
        let rewritten = CudaSource {
            text: inst.source.clone(),
            ..src.clone()
        };
        let plain = compile(&src, &CompileOptions::new(arch))
            .unwrap_or_else(|e| panic!("{} (plain): {e}", src.name));
        let checked = compile(&rewritten, &CompileOptions::new(arch))
            .unwrap_or_else(|e| panic!("{} (instrumented): {e}", src.name));
        let plain = read_cubin(&plain.cubin).unwrap();
        let checked = read_cubin(&checked.cubin).unwrap();
        assert_eq!(
            plain.kernels.len(),
            checked.kernels.len(),
            "{}: the same kernels",
            src.name
        );
        for p in &plain.kernels {
            // A C++ kernel's mangled name encodes its parameters: the rewrite's appends the
            // hidden ones to the plain name. `extern "C"` names stay equal.
            let c = checked
                .kernels
                .iter()
                .find(|c| c.symbol == p.symbol)
                .or_else(|| {
                    checked
                        .kernels
                        .iter()
                        .find(|c| p.symbol.starts_with("_Z") && c.symbol.starts_with(&p.symbol))
                })
                .unwrap_or_else(|| panic!("{}: `{}` missing after rewrite", src.name, p.symbol));
            assert_eq!(
                c.params.len(),
                p.params.len() + HIDDEN_PARAMS.len(),
                "{} `{}`",
                src.name,
                p.symbol
            );
            // The user's parameters keep their offsets and sizes; the hidden ones are pointers.
            for (a, b) in p.params.iter().zip(&c.params) {
                assert_eq!((a.offset, a.size), (b.offset, b.size), "{}", p.symbol);
            }
            for h in &c.params[p.params.len()..] {
                assert_eq!(h.size, 8, "{}: hidden parameters are pointers", p.symbol);
            }
            kernels += 1;
        }
    }
    // 11 kernels in kernels/ (scale twice) and 16 planted.
    assert!(kernels >= 27, "only {kernels} kernels compared");
}

#[test]
fn nvrtc_planted_bugs_are_all_checked() {
    // Pure (no NVRTC needed), but kept beside the compile test of the same file: every access of
    // the planted kernels is instrumented, so the GPU tier's bugs cannot slip past unchecked.
    let src = CudaSource::from_file(repo_root().join("tests/cuda/planted/bugs.cu")).unwrap();
    let inst = instrument(&src.text, &src.name, &InstrumentOptions::default()).unwrap();
    assert_eq!(inst.kernels.len(), 16);
    for k in &inst.kernels {
        let kernel = Kernel::new(src.clone(), k.name.as_str()).build();
        let cov = kernel.coverage().unwrap().expect("rewritten");
        assert!(cov.is_complete(), "{}: {:?}", k.name, cov.skipped);
        assert!(cov.instrumented >= 1, "{}", k.name);
        assert_eq!(cov, k.coverage);
    }
    // The buffers the GPU tier expects the bug lines' checks to name.
    let expect: &[(&str, &[&str])] = &[
        ("off_by_one", &["out"]),
        ("missing_guard", &["out", "in"]),
        ("negative_index", &["out", "in"]),
        ("col_sum", &["m"]),
        ("shared_shift", &["out", "tile"]),
        ("row_fill", &["row"]),
        ("histogram_bad", &["bins", "data"]),
        ("dyn_overflow", &["s"]),
        ("grid2d", &["img"]),
        ("grid3d", &["vol"]),
        ("deref", &["out", "in"]),
        ("accumulate", &["acc", "in"]),
        ("checked_copy", &["i < n"]),
        ("tile2d", &["out", "t"]),
        ("local_window", &["out", "w"]),
    ];
    for (name, buffers) in expect {
        let marker = format!("BUG({name})");
        let line = src.text.lines().position(|l| l.contains(&marker)).unwrap() as u32 + 1;
        let k = inst.kernel(name).unwrap();
        let mut got: Vec<&str> = k
            .sites
            .iter()
            .filter(|s| s.line == line)
            .map(|s| s.buffer.as_str())
            .collect();
        got.sort_unstable();
        got.dedup();
        let mut want = buffers.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "{name}");
    }
}

/// Loops whose checks were hoisted (loop versioning, `cudacheck_core::instrument` docs): every
/// form compiles, under C++11 as well as the default C++17, and the proven copy of each loop
/// has no check left in it (no call to the fault path between its PTX markers) while the
/// checked copy keeps them.
#[test]
fn nvrtc_versioned_loops_compile_and_their_proven_copies_have_no_checks() {
    if !nvrtc_or_skip() {
        return;
    }
    let text = r#"
#define U 8
struct Acc { float x, y, z; };
extern "C" __global__ void versioned(float4* __restrict__ out4, const float4* __restrict__ in4,
                                     double* outd, const float* in, int n, int cols)
{
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    double d = 0.0;
    bool any = false;
    char last = 0;
    Acc acc = {0.f, 0.f, 0.f};
    float w[U];
#pragma unroll 4
    for (int u = 0; u < U; ++u) w[u] = 0.0f;
    int j = 0;
    for (; j + U <= n; j += U) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float4 q = in4[j + u];
            a.x += q.x; a.y += q.y; a.z += q.z; a.w += q.w;
            w[u] += q.x * q.y + q.z;
            d += (double)q.w;
            any = any || q.x > 0.5f;
            last = (char)u;
            acc.x += q.x;
        }
    }
    const float* row = in + (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s[c] = row[c];
    for (int t = threadIdx.x; t < 32; t += blockDim.x) assert(s[t] == s[t]);
    out4[i] = make_float4(a.x + w[0], a.y + acc.x, a.z + (any ? 1.f : 0.f), a.w + last);
    outd[i] = d;
}
"#;
    let inst = instrument(text, "versioned.cu", &InstrumentOptions::default()).unwrap();
    let k = &inst.kernels[0];
    assert!(k.coverage.hoisted >= 3, "{:?}", k.coverage);
    let src = CudaSource::from_str("versioned.cu", inst.source.clone());
    let arch: Arch = "sm_90".parse().unwrap();
    for (std, block) in [("--std=c++17", true), ("--std=c++11", false)] {
        let mut opts = CompileOptions::new(arch);
        opts.ptx = true;
        opts.extra_options.push(std.to_string());
        if block {
            for (name, v) in [
                ("__CC_BX", "128"),
                ("__CC_BY", "1"),
                ("__CC_BZ", "1"),
                ("__CC_DYN_SMEM", "128"),
            ] {
                opts.defines.push((name.to_string(), Some(v.to_string())));
            }
        }
        let out = compile(&src, &opts).unwrap_or_else(|e| panic!("{std}: {e}"));
        let ptx = out.ptx.expect("PTX");
        let mut proven = 0;
        for (at, _) in ptx.match_indices(": proven\n") {
            let end = ptx[at..].find(": proven end").expect("end marker") + at;
            assert!(
                !ptx[at..end].contains("__cc_fault"),
                "{std}: a check left in a proven copy:\n{}",
                &ptx[at..end]
            );
            proven += 1;
        }
        assert!(proven >= 2, "{std}: {proven} proven copies in the PTX");
        let checked: usize = ptx
            .split(": checked\n")
            .skip(1)
            .filter(|part| {
                part.split(": checked end")
                    .next()
                    .is_some_and(|c| c.contains("__cc_fault"))
            })
            .count();
        assert!(checked >= 2, "{std}: the checked copies keep their checks");
    }
}
