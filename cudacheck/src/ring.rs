//! The ring of recent launches each context keeps, so that a fault surfacing after the launch
//! that caused it (release builds do not synchronize) can name the launches that may have.
//!
//! Lock-free and allocation-free: a launch takes its sequence number with one atomic add and
//! writes its slot in place (a [`SeqSlot`]: the kernel's interned name and the launch site as
//! pointers, the configuration as words). Readers, which only run when an error is being
//! built, copy consistent slots and turn them into [`LaunchRecord`]s.

use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudacheck_core::validate::LaunchConfig;

use crate::seqlock::{pack_config, unpack_config, SeqSlot, CONFIG_WORDS};

/// One launch as the per-context ring remembers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchRecord {
    /// The launch's number in its context, from 1.
    pub seq: u64,
    pub kernel: Arc<str>,
    pub config: LaunchConfig,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
}

impl fmt::Display for LaunchRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "launch #{} of `{}` at {} (grid {}, block {}, {} bytes dynamic shared",
            self.seq,
            self.kernel,
            self.site,
            self.config.grid,
            self.config.block,
            self.config.dynamic_shared_bytes
        )?;
        if let Some(c) = self.config.cluster {
            write!(f, ", cluster {c}")?;
        }
        f.write_str(")")
    }
}

/// How many launches a context remembers. Faults surface at the next synchronizing call, so
/// the culprit is nearly always among the last few launches; 16 keeps the record short enough
/// to read in an error message.
pub const RING_CAPACITY: usize = 16;

/// A kernel's name at a `'static` address, so that a ring slot holds it in one word. Interned
/// once per distinct name (kernels are few; building the same kernel again reuses the entry).
#[derive(Debug)]
pub(crate) struct KernelName(Arc<str>);

/// The interned entry for `name`.
pub(crate) fn intern(name: &Arc<str>) -> &'static KernelName {
    static NAMES: Mutex<Vec<&'static KernelName>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.iter().find(|n| *n.0 == **name) {
        return n;
    }
    let n: &'static KernelName = Box::leak(Box::new(KernelName(Arc::clone(name))));
    names.push(n);
    n
}

/// Kernel, site, then the configuration.
const WORDS: usize = 2 + CONFIG_WORDS;

/// The last [`RING_CAPACITY`] launches of one context.
#[derive(Debug, Default)]
pub(crate) struct LaunchRing {
    slots: [SeqSlot<WORDS>; RING_CAPACITY],
    /// Launches recorded so far; launch `seq` (from 1) goes to slot `(seq - 1) % RING_CAPACITY`.
    count: AtomicU64,
}

impl LaunchRing {
    /// Records a launch and returns its sequence number (from 1).
    #[inline]
    pub(crate) fn record(
        &self,
        kernel: &'static KernelName,
        config: &LaunchConfig,
        site: &'static Location<'static>,
    ) -> u64 {
        let seq = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let c = pack_config(config, 0);
        let words = [
            kernel as *const KernelName as u64,
            site as *const Location<'static> as u64,
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
        ];
        self.slots[(seq - 1) as usize % RING_CAPACITY].write(2 * seq, words);
        seq
    }

    /// The remembered launches, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<LaunchRecord> {
        let mut v: Vec<LaunchRecord> = self.slots.iter().filter_map(decode).collect();
        v.sort_by_key(|r| r.seq);
        v
    }

    /// The launch with sequence number `seq`, if still remembered.
    pub(crate) fn get(&self, seq: u64) -> Option<LaunchRecord> {
        decode(&self.slots[(seq.max(1) - 1) as usize % RING_CAPACITY]).filter(|r| r.seq == seq)
    }

    /// How many launches were ever recorded.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

fn decode(slot: &SeqSlot<WORDS>) -> Option<LaunchRecord> {
    let (stamp, w) = slot.read()?;
    // SAFETY: every write stores a whole `&'static KernelName` in word 0 and a whole
    // `&'static Location` in word 1 (never zero), and a slot read back is one some writer
    // wrote (stamp non-zero), so both words are such references.
    let (kernel, site) = unsafe {
        (
            &*(w[0] as usize as *const KernelName),
            &*(w[1] as usize as *const Location<'static>),
        )
    };
    let c = [w[2], w[3], w[4], w[5], w[6], w[7]];
    Some(LaunchRecord {
        seq: stamp / 2,
        kernel: Arc::clone(&kernel.0),
        config: unpack_config(&c),
        site,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::Dim3;

    #[test]
    fn keeps_the_last_launches_in_order() {
        let ring = LaunchRing::default();
        let a = intern(&Arc::from("a"));
        let b = intern(&Arc::from("b"));
        for i in 0..40u32 {
            let k = if i % 3 == 0 { a } else { b };
            ring.record(
                k,
                &LaunchConfig::new(Dim3::x(i + 1), Dim3::x(32)),
                Location::caller(),
            );
        }
        let snap = ring.snapshot();
        assert_eq!(snap.len(), RING_CAPACITY);
        let seqs: Vec<u64> = snap.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (25..=40).collect::<Vec<u64>>());
        // Launch 40 is i = 39, a multiple of 3: kernel `a`; launch 39 (i = 38) is `b`.
        assert_eq!(&*snap[15].kernel, "a");
        assert_eq!(snap[15].config.grid, Dim3::x(40));
        assert_eq!(&*snap[14].kernel, "b");
        assert_eq!(ring.get(30).map(|r| r.config.grid.x), Some(30));
        assert_eq!(ring.get(3), None, "forgotten");
        assert_eq!(ring.count(), 40);
    }

    #[test]
    fn empty_ring_has_no_suspects() {
        assert!(LaunchRing::default().snapshot().is_empty());
        assert_eq!(LaunchRing::default().get(1), None);
    }

    #[test]
    fn names_are_interned_once() {
        let x = intern(&Arc::from("same_name"));
        let y = intern(&Arc::from("same_name"));
        assert!(std::ptr::eq(x, y));
    }

    #[test]
    fn concurrent_launches_each_get_a_number_and_records_stay_whole() {
        let ring = Arc::new(LaunchRing::default());
        let k = intern(&Arc::from("k"));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let ring = Arc::clone(&ring);
                std::thread::spawn(move || {
                    for i in 0..10_000u32 {
                        // grid.x == grid.y in every write: a torn record would break that.
                        let g = t * 100_000 + i;
                        ring.record(
                            k,
                            &LaunchConfig::new(Dim3::new(g, g, 1), Dim3::x(32)),
                            Location::caller(),
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(ring.count(), 40_000);
        for r in ring.snapshot() {
            assert_eq!(r.config.grid.x, r.config.grid.y, "{r}");
        }
    }
}
