//! GPU tier: the race checker's index proof at run time (`tests/cuda/races/private.cu`).
//! Accesses proven thread-private lose their checks only for the block shape the build is made
//! for: the same tree reduction is silent and exact in a one-row block and reported in a block
//! of two rows (both rows write `s[threadIdx.x]`); the block-stride loops are silent and exact
//! for a power-of-two width (no shadow for their dynamic row) and for 96 (checked), and the
//! shifted loop's race is reported. After each report a correct launch matches its plain build.

use std::sync::Arc;

use cudacheck::cudarc::driver::CudaStream;
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel};
use cudacheck_core::Dim3;
use cudacheck_tests::{chain, gpu_or_skip, repo_root};

const N: usize = 1024;

fn source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/races/private.cu")).unwrap()
}

/// The 1-based line carrying `marker` in `private.cu`, the first at or after line `from`.
fn line_of(marker: &str, from: u32) -> u32 {
    source()
        .text
        .lines()
        .enumerate()
        .map(|(k, l)| (k as u32 + 1, l))
        .find(|&(k, l)| k >= from && l.contains(marker))
        .unwrap()
        .0
}

fn inputs() -> Vec<f32> {
    (0..N).map(|i| i as f32 * 0.25 + 1.0).collect()
}

/// One launch of `name` (poisoned output of `N` floats); the output, or the error.
fn run(
    s: &Arc<CudaStream>,
    name: &str,
    grid: u32,
    block: Dim3,
    shared: u32,
    n: i32,
    races: bool,
) -> Result<Vec<f32>, Error> {
    let k = Kernel::new(source(), name)
        .instrument(races)
        .races(races)
        .sync(true)
        .build();
    let input = cudacheck::alloc_copy(s, &inputs()).unwrap();
    let mut out = cudacheck::alloc_copy(s, &vec![f32::NAN; N]).unwrap();
    unsafe {
        k.launch(s)
            .grid(grid)
            .block(block)
            .shared_bytes(shared)
            .arg_mut(&mut out)
            .arg(&input)
            .arg(&n)
            .run()
    }?;
    Ok(s.clone_dtoh(&out).unwrap())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// A correct launch, race-checked, matches its plain build and the reference.
fn rescale_is_exact(s: &Arc<CudaStream>, width: u32, after: &str) {
    let n = N as i32;
    let checked = run(s, "stride_rescale", 1, width.into(), 4096, n, true)
        .unwrap_or_else(|e| panic!("after {after}: stride_rescale ({width}): {}", chain(&e)));
    let plain = run(s, "stride_rescale", 1, width.into(), 4096, n, false).unwrap();
    let want: Vec<f32> = inputs().iter().map(|x| x * 0.5 + 1.0).collect();
    assert_eq!(bits(&checked), bits(&plain), "after {after}: width {width}");
    assert_eq!(bits(&checked), bits(&want), "after {after}: width {width}");
}

#[test]
fn gpu_thread_private_accesses_are_silent_and_exact_in_a_one_row_block() {
    let Some(s) = gpu_or_skip() else { return };
    let grid = 4;
    let checked = run(&s, "tree_tid_x", grid, (64, 1, 1).into(), 0, N as i32, true)
        .unwrap_or_else(|e| panic!("tree_tid_x (64, 1, 1): {}", chain(&e)));
    let plain = run(
        &s,
        "tree_tid_x",
        grid,
        (64, 1, 1).into(),
        0,
        N as i32,
        false,
    )
    .unwrap();
    let x = inputs();
    for b in 0..grid as usize {
        let at = |t: usize| x[b * 64 + t];
        let want = (at(0) + at(32)) + (at(16) + at(48));
        assert_eq!(checked[b].to_bits(), want.to_bits(), "block {b}");
    }
    assert!(checked[grid as usize..].iter().all(|f| f.is_nan()));
    assert_eq!(bits(&checked), bits(&plain));
    rescale_is_exact(&s, 128, "tree_tid_x");
    rescale_is_exact(&s, 96, "stride_rescale (128)");
}

#[test]
fn gpu_an_index_in_tid_x_races_between_the_rows_of_a_two_row_block() {
    let Some(s) = gpu_or_skip() else { return };
    let line = line_of("// SHARED-1 PRIVATE", 1);
    let e = match run(&s, "tree_tid_x", 2, (32, 2, 1).into(), 0, N as i32, true) {
        Err(Error::SharedRace(e)) => e,
        Err(other) => panic!("expected a race, got: {}", chain(&other)),
        Ok(_) => panic!("tree_tid_x (32, 2, 1): no race reported"),
    };
    println!("{e}");
    assert_eq!(e.array, "s");
    assert_eq!((e.first.line, e.second.line), (line, line), "{e}");
    assert!(e.element < 32, "{e}");
    // Two threads of one column, one in each row: both write s[threadIdx.x].
    assert_eq!(e.first.thread.x, e.second.thread.x, "{e}");
    assert_ne!(e.first.thread.y, e.second.thread.y, "{e}");
    assert_eq!(u64::from(e.first.thread.x), e.element, "{e}");
    rescale_is_exact(&s, 128, "tree_tid_x (32, 2, 1)");
}

#[test]
fn gpu_a_block_stride_loop_shifting_by_one_is_reported() {
    let Some(s) = gpu_or_skip() else { return };
    let line = line_of("// SHARED-1", 30);
    let e = match run(&s, "stride_shift", 1, 128.into(), 4096, N as i32, true) {
        Err(Error::SharedRace(e)) => e,
        Err(other) => panic!("expected a race, got: {}", chain(&other)),
        Ok(_) => panic!("stride_shift: no race reported"),
    };
    println!("{e}");
    assert_eq!(e.array, "row");
    assert_eq!((e.first.line, e.second.line), (line, line), "{e}");
    assert_ne!(e.first.thread, e.second.thread, "{e}");
    // Thread t writes row[c + 1], thread t + 1 reads row[c + 1] as its row[c] (c = t + 128 k).
    let (w, r) = match e.first.kind {
        cudacheck_core::race::AccessKind::Write => (&e.first, &e.second),
        _ => (&e.second, &e.first),
    };
    assert_eq!(u64::from(w.thread.x + 1) % 128, e.element % 128, "{e}");
    assert_eq!(u64::from(r.thread.x), e.element % 128, "{e}");
    rescale_is_exact(&s, 128, "stride_shift");
}
