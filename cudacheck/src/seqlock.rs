//! A slot of a few words that one writer at a time updates and any number of readers copy
//! without a lock (a seqlock): what the launch ring and the validation memo are made of, so
//! that the launch hot path takes no lock and allocates nothing.
//!
//! The writer marks the slot odd, writes the words, then marks it with an even stamp; a
//! reader copies the words between two loads of the stamp and keeps the copy only when both
//! saw the same even stamp. Writers of one slot take turns (see [`SeqSlot::write`]), and stamps
//! only grow, so a copy that passes holds the words of exactly one write, the newest one. Each
//! word is one atomic, so a copy that fails the test held only words some writer wrote whole.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use cudacheck_core::validate::LaunchConfig;
use cudacheck_core::Dim3;

/// `N` words and their stamp. Stamp 0: never written.
#[derive(Debug)]
pub(crate) struct SeqSlot<const N: usize> {
    stamp: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> Default for SeqSlot<N> {
    fn default() -> Self {
        SeqSlot {
            stamp: AtomicU64::new(0),
            words: [const { AtomicU64::new(0) }; N],
        }
    }
}

impl<const N: usize> SeqSlot<N> {
    /// The words and their (even, non-zero) stamp, or `None` when the slot was never written
    /// or a write overlapped the copy.
    #[inline]
    pub(crate) fn read(&self) -> Option<(u64, [u64; N])> {
        let s1 = self.stamp.load(Ordering::Acquire);
        if s1 == 0 || s1 & 1 == 1 {
            return None;
        }
        let mut w = [0u64; N];
        for (o, a) in w.iter_mut().zip(&self.words) {
            *o = a.load(Ordering::Relaxed);
        }
        // Orders the word loads before the second stamp load (the seqlock reader's fence).
        fence(Ordering::Acquire);
        (self.stamp.load(Ordering::Relaxed) == s1).then_some((s1, w))
    }

    /// Whether the slot holds exactly `words`: the memo's hit test, no copy kept.
    #[inline]
    pub(crate) fn holds(&self, words: &[u64; N]) -> bool {
        matches!(self.read(), Some((_, w)) if w == *words)
    }

    /// Writes `words` under `stamp` (even, non-zero), unless the slot already holds or is
    /// being written with a newer stamp; returns whether it wrote.
    ///
    /// Writers of one slot take turns: a writer claims the slot by swapping its even stamp for
    /// the writer's odd one (`stamp - 1`), and one that finds an older write in progress waits
    /// for it (a few stores; it yields while it waits). Without the turns, two writers of the
    /// ring's slot 16 launches apart could interleave their words under one stamp, and a reader
    /// would take the mix for one launch; and a writer descheduled between taking its number
    /// and writing could overwrite a newer launch with an older one.
    #[inline]
    pub(crate) fn write(&self, stamp: u64, words: [u64; N]) -> bool {
        debug_assert!(stamp != 0 && stamp & 1 == 0);
        let mut cur = self.stamp.load(Ordering::Relaxed);
        let mut spins = 0u32;
        loop {
            if cur >= stamp - 1 {
                // A newer write holds the slot, or is under way: ours is already forgotten.
                return false;
            }
            if cur & 1 == 1 {
                // An older write is under way: wait for its last store.
                wait(&mut spins);
                cur = self.stamp.load(Ordering::Relaxed);
                continue;
            }
            match self.stamp.compare_exchange_weak(
                cur,
                stamp - 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        // Orders the odd stamp before the word stores (the seqlock writer's fence).
        fence(Ordering::Release);
        for (a, v) in self.words.iter().zip(words) {
            a.store(v, Ordering::Relaxed);
        }
        self.stamp.store(stamp, Ordering::Release);
        true
    }
}

/// One round of waiting for another writer of a slot: spin a little, then give the core away
/// (the writer may be descheduled mid-write).
#[cold]
fn wait(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Words a [`LaunchConfig`] packs into, with `flags` (32 bits of the caller's) beside it.
pub(crate) const CONFIG_WORDS: usize = 6;

/// Set in the packed flags when the configuration has a cluster.
const HAS_CLUSTER: u32 = 1 << 31;

#[inline]
pub(crate) fn pack_config(cfg: &LaunchConfig, flags: u32) -> [u64; CONFIG_WORDS] {
    let pair = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
    let c = cfg.cluster.unwrap_or(Dim3::new(0, 0, 0));
    let flags = flags
        | if cfg.cluster.is_some() {
            HAS_CLUSTER
        } else {
            0
        };
    [
        pair(cfg.grid.x, cfg.grid.y),
        pair(cfg.grid.z, cfg.block.x),
        pair(cfg.block.y, cfg.block.z),
        pair(cfg.dynamic_shared_bytes, flags),
        pair(c.x, c.y),
        u64::from(c.z),
    ]
}

pub(crate) fn unpack_config(w: &[u64; CONFIG_WORDS]) -> LaunchConfig {
    let lo = |v: u64| v as u32;
    let hi = |v: u64| (v >> 32) as u32;
    LaunchConfig {
        grid: Dim3::new(lo(w[0]), hi(w[0]), lo(w[1])),
        block: Dim3::new(hi(w[1]), lo(w[2]), hi(w[2])),
        dynamic_shared_bytes: lo(w[3]),
        cluster: (hi(w[3]) & HAS_CLUSTER != 0).then(|| Dim3::new(lo(w[4]), hi(w[4]), lo(w[5]))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_round_trip_through_words() {
        let mut c = LaunchConfig::new(Dim3::new(7, 8, 9), Dim3::new(32, 4, 2));
        c.dynamic_shared_bytes = 4096;
        assert_eq!(unpack_config(&pack_config(&c, 0)), c);
        c.cluster = Some(Dim3::new(2, 1, 1));
        assert_eq!(unpack_config(&pack_config(&c, 3)), c);
        assert_ne!(
            pack_config(&c, 1),
            pack_config(&c, 0),
            "flags are part of the words"
        );
    }

    #[test]
    fn a_slot_reads_back_its_last_write() {
        let s = SeqSlot::<2>::default();
        assert_eq!(s.read(), None, "never written");
        s.write(2, [5, 6]);
        s.write(4, [7, 8]);
        assert_eq!(s.read(), Some((4, [7, 8])));
        assert!(s.holds(&[7, 8]));
        assert!(!s.holds(&[5, 6]));
    }

    #[test]
    fn an_older_write_never_replaces_a_newer_one() {
        let s = SeqSlot::<2>::default();
        assert!(s.write(42, [4, 2]));
        // A writer that took its number before the newer one but came late.
        assert!(!s.write(10, [1, 0]));
        assert_eq!(s.read(), Some((42, [4, 2])));
    }

    #[test]
    fn a_writer_waits_for_an_older_write_in_progress() {
        use std::sync::Arc;
        let s = Arc::new(SeqSlot::<2>::default());
        // The write of stamp 10 is under way (its odd stamp is up, its words not yet stored).
        s.stamp.store(9, Ordering::Relaxed);
        let newer = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || s.write(42, [42, 42]))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        // The newer writer has not stored a word while the older write holds the slot: the
        // two never interleave their words under one stamp.
        assert_eq!(s.words[0].load(Ordering::Relaxed), 0);
        assert_eq!(s.read(), None, "a write is under way");
        s.words[0].store(10, Ordering::Relaxed);
        s.words[1].store(10, Ordering::Relaxed);
        s.stamp.store(10, Ordering::Release);
        assert!(
            newer.join().unwrap(),
            "the newer write goes in after the older one"
        );
        assert_eq!(s.read(), Some((42, [42, 42])));
    }

    #[test]
    fn readers_never_see_a_half_written_slot() {
        // One writer keeps writing pairs of equal words; readers must only see equal pairs.
        use std::sync::atomic::AtomicBool;
        let s = std::sync::Arc::new(SeqSlot::<2>::default());
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (w, st) = (std::sync::Arc::clone(&s), std::sync::Arc::clone(&stop));
        let writer = std::thread::spawn(move || {
            // At least one write, even when the readers finish before this thread starts.
            let mut i = 1u64;
            loop {
                w.write(2 * i, [i, i]);
                i += 1;
                if st.load(Ordering::Relaxed) {
                    break;
                }
            }
        });
        for _ in 0..200_000 {
            if let Some((_, [a, b])) = s.read() {
                assert_eq!(a, b, "a torn read");
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let (stamp, [a, b]) = s.read().expect("no writer: the read succeeds");
        assert_eq!((a, b, stamp), (a, a, 2 * a));
    }
}
