//! Barrier intervals: which shared accesses can run between the same two block barriers, and so
//! which accesses need a race check at all.
//!
//! Every thread of a block passes the same sequence of block barriers (the barrier check makes
//! sure of it: threads that meet at different barrier instructions are reported and stopped
//! there). So two accesses of one epoch start from the same barrier instruction (or the entry)
//! and are both reachable from it without crossing another barrier: the *interval* of that
//! barrier. An access can only race with accesses that share an interval with it (itself
//! included: two threads may run the same statement), and only with those of another thread
//! that touch a byte it touches, at least one of the two writing, not both atomic.
//!
//! An access needs no check when no access of any of its intervals can be such a partner
//! ([`Proof`]), for one of two reasons:
//!
//! - **No conflicting access of its array** ([`Proof::NoConflict`]): a read of an array that no
//!   write or atomic of its intervals can touch, an atomic that no plain read or write can (the
//!   tiles of a GEMM are written in one interval and read in the next; a histogram's atomics
//!   have an interval to themselves). A write always meets itself here. Arrays are told apart
//!   by the symbol the address leads back to; every `extern` array is one (they share the
//!   dynamic shared memory), and an access whose array is unknown may touch any. A call into a
//!   function that touches shared memory counts as a read and a write of anything.
//! - **Thread-private indices** ([`Proof::ThreadPrivate`]): every conflicting access of its
//!   intervals, itself included, has an element index the proof can read (`index.rs`), and for
//!   every pair the bytes of two *different* threads never meet. The index is affine in
//!   `%tid.x` with a constant offset, `%tid.x` ranging over the block narrowed by the
//!   comparisons with constants that dominate the access (`if (tid < S)`); or it is a block-stride
//!   loop's `tid.x + k + n * ntid.x`, which two threads share only with the same `tid.x` when
//!   `ntid.x` divides 2^32. So the tree step `if (t < S) s[t] += s[t + S]` needs no check
//!   (the writer `a < S` writes `s[a]`, another thread `b < S` reads `s[b + S]`, and `a = b + S`
//!   is out of the range), nor the row cache a block-stride loop reads and rewrites in place.
//!   The proof holds for one block shape, the one the build is made for
//!   ([`super::RaceOptions::block`]: a race-checked build serves launches of one shape, which
//!   the launch checks before choosing it): `%tid.x` tells threads apart only in a block of one
//!   row (`ntid.y == ntid.z == 1`); in a block of several rows two threads share each value of
//!   it, and then only offsets that keep their bytes apart prove anything. Without a shape
//!   nothing is proven this way.
//!
//! Both are decided per pair and hold in both directions, so a race always keeps the checks of
//! both its accesses (the second one finds the first one's record: a race with one side
//! unchecked would go unseen).

use std::collections::{BTreeMap, BTreeSet};

use super::index::{may_overlap, Index, Shape};
use crate::ir::Cfg;

/// How an access touches its array, for the pruning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Use {
    Read,
    Write,
    Atomic,
    /// A call that may do anything to shared memory.
    Any,
}

/// One access as the pruning sees it: its statement, its array (`None`: any), its use, and
/// the bytes it touches as a function of the thread, where they are known (`index.rs`).
#[derive(Clone, Debug)]
pub(super) struct Touch {
    pub stmt: usize,
    pub array: Option<String>,
    pub used: Use,
    pub index: Option<Index>,
}

/// Why an access needs no check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Proof {
    /// Nothing of its barrier intervals touches its array in a conflicting way (or it is
    /// never reached).
    NoConflict,
    /// Something does, but no other thread of the block can touch its bytes there: their
    /// element indices differ for every two threads (`index.rs`).
    ThreadPrivate,
}

/// Walks every statement reachable from `start` without crossing a statement of `stops`:
/// `reached` gets each statement passed, `stopped` each stop a path ends at.
fn walk(
    cfg: &Cfg,
    start: usize,
    stops: &BTreeSet<usize>,
    mut reached: impl FnMut(usize),
    mut stopped: impl FnMut(usize),
) {
    let mut seen_blocks = BTreeSet::new();
    let mut work: Vec<(usize, usize)> = Vec::new();
    match cfg.block_of(start) {
        Some(b) => work.push((b, start)),
        None => {
            // The barrier ends its block: go on at the successors.
            if let Some(b) = start.checked_sub(1).and_then(|s| cfg.block_of(s)) {
                for &s in &cfg.blocks[b].succs {
                    work.push((s, cfg.blocks[s].stmts.start));
                }
            }
        }
    }
    while let Some((b, from)) = work.pop() {
        let blk = &cfg.blocks[b];
        let whole = from == blk.stmts.start;
        if whole && !seen_blocks.insert(b) {
            continue;
        }
        let mut ended = false;
        for k in from..blk.stmts.end {
            if stops.contains(&k) {
                stopped(k);
                ended = true;
                break;
            }
            reached(k);
        }
        if !ended {
            for &s in &blk.succs {
                work.push((s, cfg.blocks[s].stmts.start));
            }
        }
    }
}

/// Where each interval starts: the entry (interval 0), then after each barrier.
fn starts(barriers: &[(usize, bool)]) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0usize).chain(barriers.iter().map(|&(b, _)| b + 1))
}

/// The intervals statement by statement: for each statement of `wanted`, the intervals (0: the
/// entry's; k: the barrier at `barriers[k - 1]`'s) it may run in.
fn intervals_of(
    cfg: &Cfg,
    barriers: &[(usize, bool)],
    wanted: &BTreeSet<usize>,
) -> BTreeMap<usize, BTreeSet<usize>> {
    // A guarded barrier starts an interval for the threads that wait at it, and ends none: a
    // thread whose guard is false goes on in the interval it was in.
    let is_barrier: BTreeSet<usize> = barriers
        .iter()
        .filter(|(_, guarded)| !guarded)
        .map(|&(b, _)| b)
        .collect();
    let mut out: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (interval, start) in starts(barriers).enumerate() {
        walk(
            cfg,
            start,
            &is_barrier,
            |k| {
                if wanted.contains(&k) {
                    out.entry(k).or_default().insert(interval);
                }
            },
            |_| {},
        );
    }
    out
}

/// Whether every thread of a block meets the block barriers (their statements, none guarded)
/// in one order: from the entry and from each barrier, every path meets the same next barrier
/// or none (it leaves the block first). Then each thread's sequence of barrier statements is
/// a prefix of one sequence, and two threads with the same barrier count are at the same
/// statement: the divergence check has nothing to find (a thread that left is still found,
/// by the barrier's count). A barrier in a loop whose exit leads to another barrier, or in
/// one branch of a conditional, has two possible next barriers: the order is not fixed.
pub(super) fn fixed_order(cfg: &Cfg, barriers: &[(usize, bool)]) -> bool {
    if barriers.iter().any(|&(_, guarded)| guarded) {
        return false;
    }
    let stops: BTreeSet<usize> = barriers.iter().map(|&(b, _)| b).collect();
    starts(barriers).all(|start| {
        let mut next = BTreeSet::new();
        walk(
            cfg,
            start,
            &stops,
            |_| {},
            |b| {
                next.insert(b);
            },
        );
        next.len() <= 1
    })
}

fn alias(a: &Option<String>, b: &Option<String>) -> bool {
    a.is_none() || b.is_none() || a == b
}

/// The statements of `touches` whose race check can be left out, each with why (see the
/// module docs); `barriers` are the block barriers' statements, each with whether it is
/// guarded; `shape` the launch's block, where the build is made for one (without it, element
/// indices prove nothing).
pub(super) fn unneeded(
    cfg: &Cfg,
    barriers: &[(usize, bool)],
    touches: &[Touch],
    shape: Option<Shape>,
) -> BTreeMap<usize, Proof> {
    let wanted: BTreeSet<usize> = touches.iter().map(|t| t.stmt).collect();
    let ivs = intervals_of(cfg, barriers, &wanted);
    // Per interval, what touches it.
    let mut by_interval: BTreeMap<usize, Vec<&Touch>> = BTreeMap::new();
    for t in touches {
        for &i in ivs.get(&t.stmt).into_iter().flatten() {
            by_interval.entry(i).or_default().push(t);
        }
    }
    let conflicts = |a: &Touch, b: &Touch| {
        use Use::*;
        alias(&a.array, &b.array) && !matches!((a.used, b.used), (Read, Read) | (Atomic, Atomic))
    };
    let apart = |a: &Touch, b: &Touch| match (shape, &a.index, &b.index) {
        (Some(s), Some(x), Some(y)) => !may_overlap(x, y, s),
        _ => false,
    };
    let mut out = BTreeMap::new();
    for t in touches {
        let Some(mine) = ivs.get(&t.stmt) else {
            // Never reached: nothing to check.
            out.insert(t.stmt, Proof::NoConflict);
            continue;
        };
        let others = || mine.iter().flat_map(|i| by_interval[i].iter().copied());
        // Another thread may run the same statement: a write meets itself.
        if !others().any(|o| conflicts(t, o)) {
            out.insert(t.stmt, Proof::NoConflict);
        } else if !others().any(|o| conflicts(t, o) && !apart(t, o)) {
            out.insert(t.stmt, Proof::ThreadPrivate);
        }
    }
    out
}
