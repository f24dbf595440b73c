//! GPU tier: the library's init checking (`Launch::init`). Every `init_*` kernel of
//! `tests/cuda/init/shared.cu` reads `__shared__` memory its block has not written yet on the
//! line marked `UNINIT`; an init-checked launch must report it as `Error::Uninitialized`, and
//! the report must be exact: that line, and an element the named thread really reads there
//! (from the shared address reported, less the array's address the kernel stores, computed
//! here from the kernel's index expressions). Every `fine_*` twin must give no report and
//! outputs bit-identical to the plain build's. After each report, a correct kernel runs
//! init-checked in the same context and matches the plain build: the context stays healthy.
//! Global memory counts as written in the library (docs/limits.md): a buffer nothing wrote,
//! allocated by cudarc, read by an init-checked launch, gives no report.

use std::sync::Arc;

use cudacheck::cudarc::driver::{CudaSlice, CudaStream};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel};
use cudacheck_core::Dim3;
use cudacheck_tests::{chain, gpu_or_skip, repo_root};

const N: usize = 2048;

fn source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/init/shared.cu")).unwrap()
}

/// A kernel of `shared.cu`: its launch line and its `UNINIT` line (0 for the `fine_*` ones).
struct Case {
    name: String,
    grid: u32,
    block: Dim3,
    line: u32,
}

fn cases() -> Vec<Case> {
    let src = source();
    let lines: Vec<&str> = src.text.lines().collect();
    let mut out: Vec<Case> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("extern \"C\" __global__ void ") {
            let launch = lines[k - 1];
            let field = |f: &str| {
                launch
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{f}=")))
                    .unwrap_or_else(|| panic!("no {f} in {launch:?}"))
                    .to_string()
            };
            let b: Vec<u32> = field("block")
                .split('x')
                .map(|d| d.parse().unwrap())
                .collect();
            out.push(Case {
                name: rest.split('(').next().unwrap().trim().to_string(),
                grid: field("grid").parse().unwrap(),
                block: Dim3::new(b[0], b.get(1).copied().unwrap_or(1), 1),
                line: 0,
            });
        }
        if l.contains("// UNINIT") {
            out.last_mut().unwrap().line = k as u32 + 1;
        }
    }
    out
}

fn inputs() -> Vec<f32> {
    (0..N).map(|i| (i % 97) as f32 * 0.125 - 3.0).collect()
}

/// Runs `c` once, init-checked or plain: the output and the arrays' shared addresses per
/// block, with the error when there is one.
fn run(s: &Arc<CudaStream>, c: &Case, init: bool) -> (Vec<u32>, Vec<u32>, Result<(), Error>) {
    let k = Kernel::new(source(), &c.name)
        .instrument(init)
        .init(init)
        .sync(true)
        .build();
    let input = cudacheck::alloc_copy(s, &inputs()).unwrap();
    launch(s, &k, c, &input)
}

/// One launch of `k` (a kernel of `shared.cu`, as `c` says) reading `input`.
fn launch(
    s: &Arc<CudaStream>,
    k: &Kernel,
    c: &Case,
    input: &CudaSlice<f32>,
) -> (Vec<u32>, Vec<u32>, Result<(), Error>) {
    let mut out = cudacheck::alloc_copy(s, &vec![f32::NAN; N]).unwrap();
    let mut at = cudacheck::alloc_copy(s, &[u32::MAX; 4]).unwrap();
    // SAFETY: every kernel of shared.cu reads at most 1024 inputs per block (grid 2, N = 2048),
    // writes at most 128 outputs per block and at[blockIdx.x].
    let r = unsafe {
        k.launch(s)
            .grid(c.grid)
            .block(c.block)
            .arg_mut(&mut out)
            .arg(input)
            .arg_mut(&mut at)
            .arg(&(N as i32))
            .run()
    };
    let out = s.clone_dtoh(&out).unwrap();
    let at = s.clone_dtoh(&at).unwrap();
    (out.iter().map(|f| f.to_bits()).collect(), at, r)
}

/// Whether thread `t` reads element `i` of the array at the marked line of `kernel` while it
/// is still unwritten (the index expressions of `shared.cu`, written out again here).
fn reads_unwritten(kernel: &str, t: Dim3, i: u64) -> bool {
    let x = u64::from(t.x);
    match kernel {
        // Step 0 reads stage[t] before anything is stored.
        "init_tile_early" => t.y == 0 && i == x,
        // half == 64: threads 32..63 read part[t + 64], past the 96 threads' stores.
        "init_reduce_tail" => (32..64).contains(&x) && i == x + 64,
        // Row y == 0 sums rows[x][0..33]: column 32 is the padding.
        "init_padding_column" => t.y == 0 && i == x * 33 + 32,
        _ => false,
    }
}

/// A correct kernel, init-checked, matches its plain build: the context is healthy.
fn healthy(s: &Arc<CudaStream>, after: &str) {
    let all = cases();
    let c = all.iter().find(|c| c.name == "fine_reduce_tail").unwrap();
    let (checked, _, r) = run(s, c, true);
    if let Err(e) = r {
        panic!("after {after}: the next launch failed: {}", chain(&e));
    }
    let (plain, _, r) = run(s, c, false);
    r.unwrap();
    assert_eq!(checked, plain, "after {after}");
}

#[test]
fn gpu_unwritten_shared_reads_are_reported_exactly_and_the_context_lives() {
    let Some(s) = gpu_or_skip() else { return };
    let planted: Vec<Case> = cases()
        .into_iter()
        .filter(|c| c.name.starts_with("init_"))
        .collect();
    assert_eq!(planted.len(), 3);
    let mut failures = Vec::new();
    for c in &planted {
        assert!(c.line > 0, "{}: no UNINIT line", c.name);
        let (_, at, r) = run(&s, c, true);
        let u = match r {
            Err(Error::Uninitialized(u)) => u,
            Err(other) => {
                failures.push(format!(
                    "{}: expected a report, got: {}",
                    c.name,
                    chain(&other)
                ));
                continue;
            }
            Ok(()) => {
                failures.push(format!("{}: nothing reported", c.name));
                continue;
            }
        };
        let text = u.to_string();
        println!("{}:\n{text}\n", c.name);
        let base = at[u.block.x as usize];
        let element = (u.byte_offset.wrapping_sub(u64::from(base))) / 4;
        let exact = u.shared
            && u.buffer == "shared memory"
            && u.line == c.line
            && u.file.ends_with("shared.cu")
            && u.count >= 1
            && u.access_bytes == 4
            && u64::from(base) <= u.byte_offset
            && (u.byte_offset - u64::from(base)) % 4 == 0
            && reads_unwritten(&c.name, u.thread, element)
            && text.contains("// UNINIT");
        if !exact {
            failures.push(format!(
                "{}: expected line {}, an element thread {} reads unwritten; got element {element} \
                 (array at {base:#x}):\n{text}",
                c.name, c.line, u.thread
            ));
        }
        healthy(&s, &c.name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn gpu_correct_twins_are_silent_and_bit_identical_to_the_plain_build() {
    let Some(s) = gpu_or_skip() else { return };
    let fine: Vec<Case> = cases()
        .into_iter()
        .filter(|c| c.name.starts_with("fine_"))
        .collect();
    assert_eq!(fine.len(), 3);
    for c in &fine {
        let (checked, _, r) = run(&s, c, true);
        if let Err(e) = r {
            panic!("{}: init-checked launch failed: {}", c.name, chain(&e));
        }
        let (plain, _, r) = run(&s, c, false);
        r.unwrap();
        assert_eq!(checked, plain, "{}", c.name);
        // The kernel wrote its outputs (the poison is gone where it writes).
        assert!(
            plain.iter().any(|&b| !f32::from_bits(b).is_nan()),
            "{}: wrote nothing",
            c.name
        );
    }
}

#[test]
fn gpu_global_memory_the_library_did_not_see_written_counts_as_written() {
    let Some(s) = gpu_or_skip() else { return };
    let all = cases();
    let c = all.iter().find(|c| c.name == "fine_reduce_tail").unwrap();
    // cudarc's own allocation: its contents were never written by anything the library saw.
    // SAFETY: f32 has no invalid bit patterns; the kernel only reads it.
    let input = unsafe { s.alloc::<f32>(N) }.unwrap();
    // The kernel's switch alone: it asks for bounds checking too.
    let k = Kernel::new(source(), &c.name).init(true).sync(true).build();
    if let (_, _, Err(e)) = launch(&s, &k, c, &input) {
        panic!("a buffer of unseen history was reported: {}", chain(&e));
    }
    healthy(&s, "the unseen buffer");
}
