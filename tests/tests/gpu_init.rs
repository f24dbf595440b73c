//! GPU tier: the library's init checking (`Launch::init`). Every `init_*` kernel of
//! `tests/cuda/init/shared.cu` reads `__shared__` memory its block has not written yet on the
//! line marked `UNINIT`; an init-checked launch must report it as `Error::Uninitialized`, and
//! the report must be exact: that line, and an element the named thread really reads there
//! (from the shared address reported, less the array's address the kernel stores, computed
//! here from the kernel's index expressions). Every `fine_*` twin must give no report and
//! outputs bit-identical to the plain build's. After each report, a correct kernel runs
//! init-checked in the same context and matches the plain build: the context stays healthy.
//! Global memory: buffers made by `cudacheck::alloc_uninit` (`tests/cuda/init/global.cu`) start
//! unwritten; a read of an element nothing wrote (no copy, memset or init-checked kernel) is
//! reported with the buffer, the element, the thread and the line, and every correct twin
//! (written by a copy, a memset, an init-checked kernel, or a launch that is not init-checked)
//! is silent and bit-identical to the plain build. Memory the library did not allocate that
//! way counts as written: a buffer nothing wrote, allocated by cudarc, gives no report.

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

// ---- Global memory: tracked buffers (`alloc_uninit`) ----

/// Elements of the global-memory cases: 5 blocks of 128, the last one partly idle.
const G: usize = 600;

fn global_source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/init/global.cu")).unwrap()
}

/// The 1-based line of `global.cu` marked `// READ`.
fn read_line() -> u32 {
    let src = global_source();
    src.text
        .lines()
        .position(|l| l.contains("// READ"))
        .map(|k| k as u32 + 1)
        .unwrap()
}

fn global_kernel(name: &str, init: bool) -> Kernel {
    Kernel::new(global_source(), name)
        .instrument(init)
        .init(init)
        .sync(true)
        .build()
}

/// What `gather` computes from `input`.
fn reference(input: &[f32]) -> Vec<u32> {
    input.iter().map(|v| (v * 2.0 + 1.0).to_bits()).collect()
}

/// What `fill` writes at `i`.
fn filled(i: usize) -> f32 {
    0.5 * i as f32 - 7.0
}

/// `gather` of `input` into a poisoned output, init-checked or plain: the output's bits and
/// the launch's outcome.
fn gather<I: cudacheck::KernelArg + ?Sized>(
    s: &Arc<CudaStream>,
    input: &I,
    init: bool,
) -> (Vec<u32>, Result<(), Error>) {
    let k = global_kernel("gather", init);
    let mut out = cudacheck::alloc_copy(s, &vec![f32::NAN; G]).unwrap();
    // SAFETY: gather reads in[i] and writes out[i] for i < G; both hold G elements.
    let r = unsafe {
        k.launch(s)
            .grid((G as u32).div_ceil(128))
            .block(128)
            .arg_mut(&mut out)
            .arg(input)
            .arg(&(G as i32))
            .run()
    };
    let out = s.clone_dtoh(&out).unwrap();
    (out.iter().map(|f| f.to_bits()).collect(), r)
}

/// `fill` of the first `m` elements of `buf`, init-checked or plain.
fn fill(s: &Arc<CudaStream>, buf: &mut cudacheck::TrackedSlice<f32>, m: usize, init: bool) {
    let k = global_kernel("fill", init);
    // SAFETY: fill writes buf[i] for i < m <= buf.len().
    unsafe {
        k.launch(s)
            .grid((buf.len() as u32).div_ceil(128))
            .block(128)
            .arg_mut(buf)
            .arg(&(m as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("fill({m}, init {init}): {}", chain(&e)));
}

/// The report of an init-checked `gather` of `input`, checked against what any report of it
/// must say: the buffer `in`, an element the named thread reads (its global index), the
/// `READ` line, a 4-byte read; and the output must be what the plain kernel computes from the
/// memory as it is (the read goes ahead).
fn report_of(
    s: &Arc<CudaStream>,
    input: &cudacheck::TrackedSlice<f32>,
    what: &str,
) -> Box<cudacheck::Uninitialized> {
    let (out, r) = gather(s, input, true);
    let u = match r {
        Err(Error::Uninitialized(u)) => u,
        Err(other) => panic!("{what}: expected a report, got: {}", chain(&other)),
        Ok(()) => panic!("{what}: nothing reported"),
    };
    println!("{what}:\n{u}\n");
    let thread = u64::from(u.block.x) * 128 + u64::from(u.thread.x);
    assert!(!u.shared, "{what}: {u}");
    assert_eq!(u.buffer, "in", "{what}: {u}");
    assert_eq!(
        u.index, thread,
        "{what}: the element is the thread's own: {u}"
    );
    assert_eq!((u.elem_bytes, u.access_bytes), (4, 4), "{what}: {u}");
    assert_eq!(u.elem_type.as_deref(), Some("f32"), "{what}: {u}");
    assert_eq!(u.line, read_line(), "{what}: {u}");
    assert!(u.file.ends_with("global.cu"), "{what}: {u}");
    assert!(u.to_string().contains("// READ"), "{what}: {u}");
    let host = s.clone_dtoh(&**input).unwrap();
    assert_eq!(out, reference(&host), "{what}: the read went ahead");
    u
}

/// A correct init-checked `gather` after a report matches its plain build and the host.
fn healthy_global(s: &Arc<CudaStream>, after: &str) {
    let data: Vec<f32> = (0..G).map(filled).collect();
    let input = cudacheck::alloc_copy(s, &data).unwrap();
    let (checked, r) = gather(s, &input, true);
    if let Err(e) = r {
        panic!("after {after}: the next launch failed: {}", chain(&e));
    }
    assert_eq!(checked, reference(&data), "after {after}");
}

#[test]
fn gpu_a_tracked_buffer_nothing_wrote_is_reported() {
    let Some(s) = gpu_or_skip() else { return };
    let input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    assert!(input.is_tracked());
    // The directory, one table and at least one granule's shadow.
    assert!(
        input.shadow_bytes() >= (2 << 20) + 4096 + (256 << 10),
        "{}",
        input.shadow_bytes()
    );
    let u = report_of(&s, &input, "never written");
    assert_eq!(
        u.count, G as u32,
        "every thread read an unwritten element: {u}"
    );
    healthy_global(&s, "never written");
}

#[test]
fn gpu_a_copy_one_element_short_leaves_the_last_element_reported() {
    let Some(s) = gpu_or_skip() else { return };
    let mut input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    let data: Vec<f32> = (0..G).map(filled).collect();
    input.copy_from(0, &data[..G - 1]).unwrap();
    let u = report_of(&s, &input, "copied short by one");
    assert_eq!((u.index, u.count), (G as u64 - 1, 1), "{u}");
    assert_eq!(
        (u.block.x, u.thread.x),
        (((G - 1) / 128) as u32, ((G - 1) % 128) as u32)
    );
    healthy_global(&s, "copied short by one");
}

#[test]
fn gpu_a_buffer_an_init_checked_kernel_wrote_in_part_is_reported_past_the_part() {
    let Some(s) = gpu_or_skip() else { return };
    let mut input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    let m = G - 37;
    fill(&s, &mut input, m, true);
    let u = report_of(&s, &input, "written in part by a kernel");
    assert!(u.index >= m as u64, "{u}");
    assert_eq!(u.count, 37, "{u}");
    healthy_global(&s, "written in part by a kernel");
}

#[test]
fn gpu_correct_global_twins_are_silent_and_bit_identical_to_the_plain_build() {
    let Some(s) = gpu_or_skip() else { return };
    let data: Vec<f32> = (0..G).map(filled).collect();
    type Write = fn(&Arc<CudaStream>, &mut cudacheck::TrackedSlice<f32>, &[f32]);
    let twins: [(&str, Write); 5] = [
        ("copied", |_, b, d| b.copy_from(0, d).unwrap()),
        ("copied in two parts", |_, b, d| {
            b.copy_from(100, &d[100..]).unwrap();
            b.copy_from(0, &d[..100]).unwrap();
        }),
        ("memset", |_, b, _| b.memset_zeros(0..G).unwrap()),
        ("written by an init-checked kernel", |s, b, _| {
            fill(s, b, G, true)
        }),
        // A launch that is not init-checked cannot mark what it writes: all of what it is
        // given counts as written, though it wrote only a part.
        ("written in part by a plain kernel", |s, b, _| {
            fill(s, b, G - 37, false)
        }),
    ];
    for (what, write) in twins {
        let mut input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
        write(&s, &mut input, &data);
        let (checked, r) = gather(&s, &input, true);
        if let Err(e) = r {
            panic!("{what}: init-checked launch failed: {}", chain(&e));
        }
        let (plain, r) = gather(&s, &input, false);
        r.unwrap();
        assert_eq!(checked, plain, "{what}");
        let host = s.clone_dtoh(&*input).unwrap();
        assert_eq!(plain, reference(&host), "{what}");
        assert!(
            checked.iter().all(|&b| !f32::from_bits(b).is_nan()),
            "{what}: poison left"
        );
    }
    // A buffer the slice gave out as `&mut CudaSlice` counts as written whole.
    let mut input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    let slice = input.cuda_slice_mut().unwrap();
    s.memcpy_htod(&data[..10], &mut slice.slice_mut(0..10))
        .unwrap();
    let (_, r) = gather(&s, &input, true);
    r.unwrap_or_else(|e| panic!("after cuda_slice_mut: {}", chain(&e)));
    // `mark_written` of what a write the library cannot see wrote.
    let input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    input.mark_written(0..G).unwrap();
    let (_, r) = gather(&s, &input, true);
    r.unwrap_or_else(|e| panic!("after mark_written: {}", chain(&e)));
}

#[test]
fn gpu_untracked_buffers_beside_tracked_ones_are_never_reported() {
    let Some(s) = gpu_or_skip() else { return };
    // A tracked buffer keeps the context's shadow, and shadows of granules, alive throughout.
    let keep = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    // cudarc's own allocation, never written, probably in a granule with a shadow.
    // SAFETY: f32 has no invalid bit patterns; the kernel only reads it.
    let raw = unsafe { s.alloc::<f32>(G) }.unwrap();
    let (_, r) = gather(&s, &raw, true);
    r.unwrap_or_else(|e| panic!("cudarc's allocation: {}", chain(&e)));
    // Memory a freed tracked buffer held, reused by buffers the library does not track.
    for _ in 0..4 {
        let t = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
        drop(t);
        // SAFETY: as above.
        let reused = unsafe { s.alloc::<f32>(G) }.unwrap();
        let (_, r) = gather(&s, &reused, true);
        r.unwrap_or_else(|e| panic!("memory of a freed tracked buffer: {}", chain(&e)));
    }
    // The tracked one is still checked.
    report_of(&s, &keep, "the kept buffer");
    healthy_global(&s, "untracked buffers");
}

/// `gather` declared with `#[checked_kernel]`, init-checked by its `init` key, taking tracked
/// buffers as the library's launch does.
#[cudacheck::checked_kernel(file = "cuda/init/global.cu", name = "gather", block = 128, init)]
fn gather_macro(
    out: &mut cudacheck::TrackedSlice<f32>,
    input: &cudacheck::TrackedSlice<f32>,
    n: i32,
);

#[test]
fn gpu_the_macro_s_init_key_checks_tracked_buffers() {
    let Some(s) = gpu_or_skip() else { return };
    let mut out = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    let mut input = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    let data: Vec<f32> = (0..G).map(filled).collect();
    input.copy_from(0, &data[..G - 1]).unwrap();
    let grid = (G as u32).div_ceil(128);
    // SAFETY: gather reads in[i] and writes out[i] for i < G; both hold G elements.
    let r = unsafe { gather_macro(&s, grid, &mut out, &input, G as i32) };
    match r {
        Err(Error::Uninitialized(u)) => {
            assert_eq!(
                (u.buffer.as_str(), u.index, u.count),
                ("in", G as u64 - 1, 1),
                "{u}"
            );
            assert_eq!(u.line, read_line(), "{u}");
        }
        Err(other) => panic!("expected a report, got: {}", chain(&other)),
        Ok(()) => panic!("nothing reported"),
    }
    // The kernel's stores marked `out` written: reading it back through the same kernel, with
    // `input` written whole, reports nothing, and gives the reference.
    input.copy_from(G - 1, &data[G - 1..]).unwrap();
    // SAFETY: as above.
    unsafe { gather_macro(&s, grid, &mut out, &input, G as i32) }
        .unwrap_or_else(|e| panic!("after the fix: {}", chain(&e)));
    let got: Vec<u32> = s
        .clone_dtoh(&*out)
        .unwrap()
        .iter()
        .map(|f| f.to_bits())
        .collect();
    assert_eq!(got, reference(&data));
    let mut again = cudacheck::alloc_uninit::<f32>(&s, G).unwrap();
    // SAFETY: as above, with `out` as the input: every element was written by the launch before.
    unsafe { gather_macro(&s, grid, &mut again, &out, G as i32) }
        .unwrap_or_else(|e| panic!("reading what a checked kernel wrote: {}", chain(&e)));
}
