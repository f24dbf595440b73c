//! NVRTC tier: the race checker's index proof (`cudacheck-core/src/race/index.rs`) on what
//! NVRTC really compiles, built as a launch of each shape builds it (bounds- then race-checked
//! for the block and dynamic shared memory, assembled by nvJitLink). Accesses that no other
//! thread of the block can touch in their barrier interval lose their check; every planted
//! race keeps the checks that catch it (both of its accesses: a race is found by the second
//! access looking at the first one's record). Needs NVRTC and nvJitLink, no GPU.

use std::collections::BTreeSet;

use cudacheck::nvrtc::CudaSource;
use cudacheck_core::race::{RaceKernel, RaceProof, RaceSiteKind};
use cudacheck_tests::{
    nvrtc_or_skip, race_build, race_build_for, race_launches, repo_root, RaceLaunch,
};

fn file(path: &str) -> CudaSource {
    CudaSource::from_file(repo_root().join(path)).unwrap()
}

/// The race-checked kernel `name` of `src` as a launch with `block` and `dynamic` bytes of
/// dynamic shared memory builds it (assembled: ptxas accepts it).
fn build(src: &CudaSource, name: &str, block: [u32; 3], dynamic: u32) -> RaceKernel {
    let r = race_build_for(src, "sm_90".parse().unwrap(), block, dynamic);
    let k = r
        .kernels
        .iter()
        .find(|k| k.name == name || k.symbol == name)
        .unwrap_or_else(|| panic!("no kernel `{name}`"))
        .clone();
    assert!(k.coverage.is_complete(), "{name}: {:?}", k.coverage);
    k
}

/// Lines with a checked shared access, and lines with an access proven thread-private.
fn lines(k: &RaceKernel) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let accesses = || {
        k.sites.iter().filter(|s| {
            matches!(
                s.kind,
                RaceSiteKind::Read | RaceSiteKind::Write | RaceSiteKind::Atomic
            )
        })
    };
    let line = |s: &cudacheck_core::race::RaceSite| s.loc.as_ref().map(|l| l.line);
    (
        accesses()
            .filter(|s| s.proven.is_none())
            .filter_map(line)
            .collect(),
        accesses()
            .filter(|s| s.proven == Some(RaceProof::ThreadPrivate))
            .filter_map(line)
            .collect(),
    )
}

/// The 1-based lines of `src` carrying `marker` between lines `from` and `to`.
fn marked(src: &CudaSource, marker: &str, from: usize, to: usize) -> BTreeSet<u32> {
    src.text
        .lines()
        .enumerate()
        .filter(|&(k, l)| k >= from && k < to && l.contains(marker))
        .map(|(k, _)| k as u32 + 1)
        .collect()
}

/// Every planted race keeps a check on both of its marked lines in the build of its own
/// launch shape (and in a one-row block twice as wide, where the index proof has the most
/// room), and the kernels whose race is between statements of one line keep a check there.
#[test]
fn nvrtc_planted_races_keep_their_checks_with_the_index_proof() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("tests/cuda/races/planted.cu");
    let kernels = race_launches(&src);
    let races: Vec<_> = kernels
        .iter()
        .filter(|l| l.name.starts_with("race_"))
        .collect();
    assert_eq!(races.len(), 14, "{races:?}");
    for RaceLaunch {
        name,
        lines: at,
        block,
        shared,
    } in races
    {
        let want = marked(&src, "// RACE-", at.start, at.end);
        assert!(!want.is_empty(), "{name}: no marked line");
        for b in [*block, *block * 2] {
            let k = build(&src, name, [b, 1, 1], *shared);
            let (checked, _) = lines(&k);
            for l in &want {
                assert!(
                    checked.contains(l),
                    "{name} (block {b}): the racing access on line {l} lost its check: {:?}",
                    k.sites
                );
            }
        }
    }
}

/// The correct kernels of the race tests keep their outputs' meaning: proven accesses are
/// thread-private or conflict with nothing, and some are proven by their indices.
#[test]
fn nvrtc_correct_race_kernels_prove_thread_private_accesses() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("tests/cuda/races/correct.cu");
    let mut private = 0;
    for l in race_launches(&src) {
        let (name, block, shared) = (l.name, l.block, l.shared);
        let k = build(&src, &name, [block, 1, 1], shared);
        private += k.coverage.thread_private;
        assert!(k.coverage.thread_private <= k.coverage.proven, "{name}");
    }
    assert!(private >= 5, "{private} accesses proven thread-private");
}

/// `block_reduce_sum<256>`: every access of the tree is thread-private in its interval (the
/// writer `t < S` writes `s[t]`, the reader `t < S` reads `s[t + S] >= S`), the final `s[0]`
/// read conflicts with nothing: no access keeps a check, and the shadow has only `W`.
#[test]
fn nvrtc_block_reduce_sum_tree_is_thread_private() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("bench/kernels/reduce.cu");
    let k = build(&src, "block_reduce_sum<256>", [256, 1, 1], 0);
    let c = &k.coverage;
    assert_eq!(
        (c.checked, c.proven, c.thread_private),
        (26, 26, 25),
        "{c:?}"
    );
    assert_eq!(k.shadow_records, 1);
    let (checked, private) = lines(&k);
    assert!(checked.is_empty(), "{checked:?}");
    assert!(
        private.contains(&17) && private.contains(&21),
        "{private:?}"
    );
    // The s[0] read after the last barrier: nothing writes `s` there.
    let last = k
        .sites
        .iter()
        .find(|s| s.loc.as_ref().is_some_and(|l| l.line == 24))
        .unwrap();
    assert_eq!(last.proven, Some(RaceProof::NoConflict));
    // Without the launch shape nothing is proven by the indices.
    let r = race_build(&src, "sm_90".parse().unwrap(), 0);
    let shapeless = r
        .kernels
        .iter()
        .find(|k| k.name == "block_reduce_sum<256>")
        .unwrap();
    assert_eq!(shapeless.coverage.thread_private, 0);
    assert_eq!(shapeless.coverage.proven, 1);
}

/// `softmax_smem_row`: the row cache (`row_cache[c]`, `c` stepped by `blockDim.x` from
/// `threadIdx.x`) is thread-private in every interval; the shadow leaves the 16 KB dynamic
/// row out and covers the 128-byte `red` alone, whose writes `red[wid]` stay checked.
#[test]
fn nvrtc_softmax_smem_row_cache_is_thread_private() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("bench/kernels/norm.cu");
    let k = build(&src, "softmax_smem_row", [256, 1, 1], 16384);
    let (checked, private) = lines(&k);
    for l in [111, 123, 124] {
        assert!(private.contains(&l), "line {l}: {private:?}");
        assert!(!checked.contains(&l), "line {l} still checked: {checked:?}");
    }
    for s in k
        .sites
        .iter()
        .filter(|s| s.array.as_deref() == Some("row_cache"))
    {
        assert!(s.proven.is_some(), "{s:?}");
    }
    assert!(!k.shadow_dynamic);
    assert_eq!(k.shadow_bytes(128, 16384), k.shadow_bytes(128, 0));
    assert!(
        k.shadow_bytes(128, 16384) < 4096,
        "{}",
        k.shadow_bytes(128, 16384)
    );
    // A block width that does not divide 2^32 keeps the loop's checks, and the shadow.
    let k = build(&src, "softmax_smem_row", [96, 1, 1], 16384);
    let (checked, _) = lines(&k);
    assert!(checked.contains(&124), "{checked:?}");
    assert!(k.shadow_dynamic);
}

/// An index in `threadIdx.x` alone is thread-private in a one-row block only: in a block of
/// two rows, both rows write `s[t]`.
#[test]
fn nvrtc_tid_x_indices_are_private_in_one_row_only() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("tests/cuda/races/private.cu");
    let private_lines = marked(&src, " PRIVATE", 8, usize::MAX);
    let shared_line = *marked(&src, "SHARED-1 PRIVATE", 0, usize::MAX)
        .first()
        .unwrap();

    let one_row = build(&src, "tree_tid_x", [64, 1, 1], 0);
    let (checked, private) = lines(&one_row);
    assert!(checked.is_empty(), "{checked:?}");
    let tree: BTreeSet<u32> = private_lines
        .iter()
        .copied()
        .filter(|&l| (8..25).contains(&l))
        .collect();
    assert_eq!(private, tree);

    // Two rows: every write and every read of `s[t]` keeps its check; the reads of
    // `s[t + 32]` and `s[t + 16]` stay proven (no thread of either row writes there in their
    // interval).
    let two_rows = build(&src, "tree_tid_x", [32, 2, 1], 0);
    let (checked, _) = lines(&two_rows);
    assert!(checked.contains(&shared_line), "{checked:?}");
    for l in &tree {
        assert!(checked.contains(l), "line {l}: {checked:?}");
    }
    let writes = two_rows
        .sites
        .iter()
        .filter(|s| s.kind == RaceSiteKind::Write);
    for w in writes {
        assert_eq!(w.proven, None, "{w:?}");
    }
    assert_eq!(
        two_rows.coverage.thread_private, 2,
        "{:?}",
        two_rows.coverage
    );
}

/// Block-stride loops: private for a power-of-two width, checked for another; a loop that
/// writes `row[c + 1]` beside a read of `row[c]` keeps both checks.
#[test]
fn nvrtc_block_stride_loops() {
    if !nvrtc_or_skip() {
        return;
    }
    let src = file("tests/cuda/races/private.cu");
    let k = build(&src, "stride_rescale", [128, 1, 1], 4096);
    let (checked, private) = lines(&k);
    assert!(checked.is_empty(), "{checked:?}");
    assert!(!private.is_empty());
    assert!(!k.shadow_dynamic);

    let k = build(&src, "stride_rescale", [96, 1, 1], 4096);
    assert_eq!(k.coverage.thread_private, 0, "{:?}", k.coverage);
    assert!(k.shadow_dynamic);

    let k = build(&src, "stride_shift", [128, 1, 1], 4096);
    let (checked, _) = lines(&k);
    let racing = *marked(&src, "// SHARED-1", 40, usize::MAX).first().unwrap();
    assert!(checked.contains(&racing), "{checked:?}");
    assert!(k.shadow_dynamic);
}
