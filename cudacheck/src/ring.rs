//! The ring of recent launches each context keeps, so that a fault surfacing after the launch
//! that caused it (release builds do not synchronize) can name the launches that may have.
//!
//! Lock-free and allocation-free: a launch takes its sequence number with one atomic add and
//! writes its slot in place (a [`SeqSlot`]: the kernel's interned name and the launch site as
//! pointers, the stream and the configuration as words). The only wait is a writer's for
//! another writer of the same slot, [`RING_CAPACITY`] launches older, still storing its words
//! (see [`SeqSlot::write`]). Readers, which only run when an error is being built, copy
//! consistent slots and turn them into [`LaunchRecord`]s.

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
    /// The stream it was queued on: its `CUstream` handle as a number (compare with
    /// `stream.cu_stream() as u64`).
    pub stream: u64,
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

/// Kernel, site, stream, then the configuration.
const WORDS: usize = 3 + CONFIG_WORDS;

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
        stream: u64,
    ) -> u64 {
        let seq = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let c = pack_config(config, 0);
        let words = [
            kernel as *const KernelName as u64,
            site as *const Location<'static> as u64,
            stream,
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
    #[cfg(test)]
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
    let c = [w[3], w[4], w[5], w[6], w[7], w[8]];
    Some(LaunchRecord {
        seq: stamp / 2,
        kernel: Arc::clone(&kernel.0),
        config: unpack_config(&c),
        site,
        stream: w[2],
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
                u64::from(i % 2),
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
        assert_eq!(
            (snap[15].stream, snap[14].stream),
            (1, 0),
            "each launch's stream"
        );
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

    /// A small PRNG for the stress test's schedules.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// The launch thread `t` records: kernel `k{t}`, grid.x `t`, block.x `32 (t + 1)` and its
    /// own count `i` as the dynamic shared bytes, spread over four words of the slot, so that
    /// a record mixing two launches' words is seen.
    fn stress_config(t: u32, i: u32) -> LaunchConfig {
        let mut c = LaunchConfig::new(Dim3::new(t, 7, 1), Dim3::x(32 * (t + 1)));
        c.dynamic_shared_bytes = i;
        c
    }

    /// Whether `r` is whole: its words all come from one launch of one thread.
    fn assert_whole(r: &LaunchRecord) {
        let t = r.config.grid.x;
        assert_eq!(&*r.kernel, format!("k{t}"), "a mixed record: {r}");
        assert_eq!(r.config.block.x, 32 * (t + 1), "a mixed record: {r}");
        assert_eq!(r.config.grid.y, 7, "a mixed record: {r}");
        assert_eq!(r.stream, 1000 + u64::from(t), "a mixed record: {r}");
    }

    #[test]
    fn concurrent_launches_each_get_a_number_and_records_stay_whole() {
        // More threads than cores, random pauses between taking a number and the next launch:
        // writers of one slot (16 launches apart) overlap, and some are descheduled mid-write.
        const THREADS: u32 = 8;
        const LAUNCHES: u32 = 20_000;
        let ring = Arc::new(LaunchRing::default());
        let names: Vec<&'static KernelName> = (0..THREADS)
            .map(|t| intern(&Arc::from(format!("k{t}"))))
            .collect();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (ring, done) = (Arc::clone(&ring), Arc::clone(&done));
                std::thread::spawn(move || {
                    let mut seen = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        let snap = ring.snapshot();
                        for r in &snap {
                            assert_whole(r);
                            seen += 1;
                        }
                        if let Some(last) = snap.last() {
                            if let Some(again) = ring.get(last.seq) {
                                assert_eq!(again.seq, last.seq);
                                assert_whole(&again);
                            }
                        }
                    }
                    seen
                })
            })
            .collect();
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (ring, k) = (Arc::clone(&ring), names[t as usize]);
                std::thread::spawn(move || {
                    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15 ^ u64::from(t + 1));
                    let mut mine = Vec::with_capacity(LAUNCHES as usize);
                    for i in 0..LAUNCHES {
                        let seq = ring.record(
                            k,
                            &stress_config(t, i),
                            Location::caller(),
                            1000 + u64::from(t),
                        );
                        mine.push(seq);
                        if rng.next() % 64 == 0 {
                            std::thread::yield_now();
                        }
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<u64> = Vec::new();
        for w in writers {
            let mine = w.join().unwrap();
            assert!(
                mine.windows(2).all(|p| p[0] < p[1]),
                "one thread's numbers grow"
            );
            all.extend(mine);
        }
        done.store(true, Ordering::Relaxed);
        let seen: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        let total = u64::from(THREADS * LAUNCHES);
        assert_eq!(ring.count(), total);
        all.sort_unstable();
        assert!(
            all.iter().copied().eq(1..=total),
            "every launch got its own number"
        );
        // Once every writer is done, each slot holds the newest launch of its slots: exactly
        // the last RING_CAPACITY launches, whole, each thread's in its own order.
        let snap = ring.snapshot();
        let seqs: Vec<u64> = snap.iter().map(|r| r.seq).collect();
        let first = total - RING_CAPACITY as u64 + 1;
        assert_eq!(seqs, (first..=total).collect::<Vec<u64>>());
        for r in &snap {
            assert_whole(r);
        }
        for p in snap.windows(2) {
            if p[0].config.grid.x == p[1].config.grid.x {
                assert!(p[0].config.dynamic_shared_bytes < p[1].config.dynamic_shared_bytes);
            }
        }
        println!("{seen} records read while {THREADS} threads launched");
    }
}
