//! Shared-memory race and barrier checking by rewriting PTX.
//!
//! A race-checked build is a bounds-checked build ([`crate::instrument`]) rewritten once more:
//! [`race_ptx`] gives every `__shared__` access a shadow check and every barrier a divergence
//! check, so that a launch reports the first race of the launch as a typed error naming the
//! array, the element, both threads, both accesses and both source lines, where without it
//! the kernel computes numbers that change from run to run.
//!
//! # The model
//! Two accesses race when different threads of one block touch a byte of the same shared
//! word, at least one writes (an atomic counts as a write except against another atomic),
//! and nothing orders them:
//! - a block barrier (`bar.sync`/`barrier.sync` of the whole block, `bar.red`, i.e.
//!   `__syncthreads()` and `__syncthreads_count/and/or`) orders every thread of the block: each
//!   thread counts the barriers it passed (its *block epoch*), and accesses of different epochs
//!   never race;
//! - a warp synchronization (`bar.warp.sync`, i.e. `__syncwarp`, and the `.sync` collectives:
//!   shuffles, votes, `match`, `redux`, and the warp-wide matrix operations) orders the threads
//!   of one warp: each thread counts them since its last block barrier (its *warp epoch*), and
//!   accesses of two threads of one warp with different warp epochs do not race.
//!
//! Threads of one warp are not assumed to run in lockstep (independent thread scheduling):
//! two lanes touching one word in the same warp epoch race.
//!
//! # The shadow
//! The launch gets extra dynamic shared memory after the user's ([`RaceKernel::shadow_bytes`]): two
//! barrier slots and an exit slot, then per 4-byte word of the block's shared memory three
//! 64-bit records, the last write or atomic (`W`), the first reader of the current epoch (`R1`) and the latest
//! reader other than that one (`R2`). An [`AccessWord`] packs thread, site, the bytes of the
//! word, and both epochs. Every thread clears the shadow at the start of the kernel (one extra
//! barrier, before any user code). A read records itself in `R1` (when `R1` is stale or its
//! own) or `R2`, then loads `W` and reports when it is a conflicting write of another thread in
//! the same epoch. A write swaps itself into `W` (`atom.exch`, so of two racing writes the
//! second always sees the first), then tests the old `W`, `R1` and `R2`. Both record before
//! they look, so whichever of a racing read and write comes second finds the first (the shadow
//! accesses of one warp are ordered; across warps PTX promises no order without a fence, so
//! two accesses in the same few cycles may miss each other, and a race in user code repeats
//! over elements and iterations). Of two readers of one word, a writer finds
//! at least one other than itself (`R1` and `R2` hold different threads), so the in-place
//! update `s[t] = s[t - 1] + s[t]` is found whichever reader came last. Only checked reads
//! write `R1` and `R2`: a kernel whose reads are all proven unable to race (below) keeps `W`
//! alone ([`RaceKernel::shadow_records`]), a third of the shadow, and its writes look at `W`
//! only, which is all the other records could ever hold.
//!
//! A report is a sound statement about the program, never a guess: it names two accesses of
//! different threads that touched the same bytes with the same barrier count and, in one
//! warp, the same warp-synchronization count. The converse is not promised: epochs are kept
//! modulo 2^24 barriers and 2^10 warp synchronizations, a word keeps one writer and two
//! readers, and two writers of different bytes of one word keep only the later one.
//!
//! Most accesses need no check at all: an access can only race with accesses between the same
//! two block barriers, so a read of an array nothing writes in its barrier interval (a GEMM's
//! tiles after the barrier that follows their load), and an atomic alone with other atomics,
//! are left unchanged ([`RaceCoverage::proven`]; the argument is in `intervals.rs`). So is an
//! access whose element index no other thread of the block can share in its interval, for the
//! block shape the build is made for ([`RaceOptions::block`], [`RaceProof::ThreadPrivate`]):
//! a tree reduction's `if (t < S) s[t] += s[t + S]`, a row cache a block-stride loop
//! rewrites in place. Where every access of the dynamic shared memory is left unchanged that
//! way, the shadow covers the static arrays alone ([`RaceKernel::shadow_dynamic`]): a row
//! softmax's 16 KB row needs none of the 96 KB it would take.
//!
//! # Barriers
//! Where the control flow alone fixes the order in which every thread meets the barriers
//! (from the entry and from each barrier, every path meets the same next barrier or leaves
//! the block: straight-line barriers, one barrier per round of a loop), two threads with the
//! same barrier count are at the same statement, and the slots below are left out: the
//! count the barrier returns is all that is checked (`intervals.rs`, `fixed_order`).
//! Otherwise, before a block barrier each thread folds `(epoch, site, thread)` into two per-epoch slots
//! with `atom.max` (one keyed by the site, one by its complement); after it, every thread reads
//! both back: two different sites in one epoch mean threads met at different barriers
//! (`if (t < 32) __syncthreads(); else __syncthreads();`), reported as
//! [`RaceEventKind::DivergentBarrier`] with a thread at each, and the whole block ends there
//! (every thread reads the same slots): a divergent barrier is undefined behaviour that
//! usually hangs the block at its next barrier. Only the lowest lane of each group of lanes
//! that arrive together writes the slots. The slots alternate by epoch parity, so nothing
//! clears them: a slot is written again only after every thread read it.
//!
//! The barrier instruction itself becomes `barrier.red.popc.u32 n, 0, 1`: non-aligned, so
//! lanes of one warp at two barrier statements arrive separately (an aligned barrier executed
//! by a split warp is undefined behaviour, and hung the checked build where the plain one ran
//! on), and every arriving thread learns how many threads arrived. Fewer than the block's
//! threads means the others left the block (a thread that exits releases the barriers it would
//! hold up), which CUDA forbids for a barrier in conditional code although current GPUs let it
//! pass: [`RaceEventKind::ExitedBarrier`], with where they left. Every `ret` or `exit` of a
//! kernel with barriers, and every branch to one (an early `return`, named at its own line),
//! first folds `(epoch, exit site, thread)` into the exit slot (lowest active lane,
//! `atom.max`); the barrier they leave completes only after they exited, so the threads
//! released from it find the slot of their epoch filled. A user's `bar.red`
//! (`__syncthreads_count/and/or`) gets the counting barrier before it, and runs after the
//! check, non-aligned, only when the whole block reached it.
//! `__syncwarp(mask)` with a mask that leaves out the calling lane (undefined behaviour) is
//! reported ([`RaceEventKind::WarpMask`]) and that call skipped.
//!
//! # What is not checked
//! Kernels that synchronize in ways the two epochs cannot follow are left unchanged and say
//! why ([`RaceCoverage::not_checked`]): named barriers with a thread count (`bar.sync 1, 64`),
//! `bar.arrive`, cluster barriers, `mbarrier` and bulk copies, and calls to device functions
//! that synchronize. Warp-collective shared accesses (`ldmatrix`, `stmatrix`, `wmma`), accesses
//! inside non-inlined device functions and other blocks' shared memory (`shared::cluster`) are
//! listed as unchecked with the reason. A launch whose shared memory leaves no room for the
//! shadow runs unchecked and says so (its barriers are still non-aligned). Threads at the same
//! barrier statement in different loop iterations are taken to meet: barrier instances are
//! matched by count and statement. Races through global memory are not looked for.

mod cost;
mod emit;
mod index;
mod intervals;
mod record;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt::Write as _;

#[doc(hidden)]
pub use cost::{cost_row, RaceCost, COST_HEADER};
pub use record::{
    decode_race, AccessKind, AccessWord, RaceEventKind, RaceRecord, RACE_RECORD_BYTES,
    RACE_RECORD_OFFSET,
};

use crate::ir::read::{self, PtxError};
pub use crate::site::{
    shadow_bytes, shadow_bytes_with, RaceCoverage, RaceKernel, RaceProof, RaceSite, RaceSiteKind,
    RaceUnchecked,
};

/// The source of the rewrite, for build caches (a race-checked build stored by one version of
/// the checker must not answer for another).
#[doc(hidden)]
pub const RACE_SOURCES: &[&str] = crate::sources::RACE;

/// What a race-checked build is made for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RaceOptions {
    /// The dynamic shared memory the user's launches give (`extern __shared__` arrays): the
    /// shadow goes after it.
    pub dynamic_shared_bytes: u32,
    /// The block every launch of the build has, when the build is made for one: with it,
    /// accesses whose element indices no two threads of such a block share in their barrier
    /// interval need no check (`intervals.rs`, `index.rs`). A build made for one block must
    /// not run with another.
    pub block: Option<[u32; 3]>,
}

impl RaceOptions {
    /// For launches that give `dynamic_shared_bytes` of dynamic shared memory.
    pub const fn new(dynamic_shared_bytes: u32) -> Self {
        RaceOptions {
            dynamic_shared_bytes,
            block: None,
        }
    }

    /// For launches of exactly this block (`[x, y, z]`) only.
    pub const fn block(self, block: [u32; 3]) -> Self {
        RaceOptions {
            block: Some(block),
            ..self
        }
    }
}

/// A race-checked module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RacePtx {
    /// The rewritten PTX, ready for `ptxas`.
    pub ptx: String,
    /// Every kernel of the module, in order.
    pub kernels: Vec<RaceKernel>,
}

impl RacePtx {
    /// The kernel whose PTX symbol is `symbol`.
    pub fn kernel(&self, symbol: &str) -> Option<&RaceKernel> {
        self.kernels.iter().find(|k| k.symbol == symbol)
    }
}

/// Adds race and barrier checks to every kernel of a bounds-checked module (the output of
/// [`crate::instrument::instrument_ptx_with`]: the checks report through its fault record).
///
/// # Errors
/// [`PtxError`] when the text cannot be read as PTX.
pub fn race_ptx(ptx: &str, opts: &RaceOptions) -> Result<RacePtx, PtxError> {
    let m = read::parse(ptx)?;
    Ok(emit::emit(ptx, &m, opts))
}

/// [`race_ptx`], with the static cost of each kernel's checks: instructions per place, shared
/// atomics, shadow bytes (a prediction for tools; see `cost.rs`).
///
/// # Errors
/// [`PtxError`] when the text cannot be read as PTX.
#[doc(hidden)]
pub fn race_ptx_costed(
    ptx: &str,
    opts: &RaceOptions,
) -> Result<(RacePtx, Vec<RaceCost>), PtxError> {
    let m = read::parse(ptx)?;
    Ok(emit::emit_costed(ptx, &m, opts))
}

/// A report for a person: per kernel, what is race-checked and what is not, and why.
pub fn render_race_report(file_name: &str, kernels: &[RaceKernel]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{file_name}: race checking");
    for k in kernels {
        let c = &k.coverage;
        if let Some(why) = &c.not_checked {
            let _ = writeln!(out, "  kernel `{}`: not race-checked: {why}", k.name);
            continue;
        }
        if c.checked == 0 && c.unchecked.is_empty() && c.barriers == 0 && c.warp_syncs == 0 {
            let _ = writeln!(
                out,
                "  kernel `{}`: no shared memory, nothing to check",
                k.name
            );
            continue;
        }
        let _ = write!(
            out,
            "  kernel `{}`: {} shared access{} race-checked",
            k.name,
            c.checked,
            if c.checked == 1 { "" } else { "es" },
        );
        if c.proven > 0 {
            let _ = write!(
                out,
                " ({} of them cannot race: nothing in their barrier interval conflicts",
                c.proven
            );
            if c.thread_private > 0 {
                let _ = write!(
                    out,
                    " or, for {}, they are proven thread-private in their interval",
                    c.thread_private
                );
            }
            out.push(')');
        }
        let _ = write!(
            out,
            ", {} barrier{}",
            c.barriers,
            if c.barriers == 1 { "" } else { "s" }
        );
        if c.warp_syncs > 0 {
            let _ = write!(out, ", {} __syncwarp", c.warp_syncs);
        }
        if c.unchecked.is_empty() {
            let _ = writeln!(out, ", none left unchecked");
            continue;
        }
        let _ = writeln!(out, ", {} left unchecked:", c.unchecked.len());
        for u in &c.unchecked {
            crate::site::unchecked_line(&mut out, u.loc.as_ref(), &u.instruction, &u.reason);
        }
    }
    out
}

/// Per-kernel summaries by symbol, for tests and tools.
pub fn coverage_by_symbol(r: &RacePtx) -> BTreeMap<&str, &RaceCoverage> {
    r.kernels
        .iter()
        .map(|k| (k.symbol.as_str(), &k.coverage))
        .collect()
}
