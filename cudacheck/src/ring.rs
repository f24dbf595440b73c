//! The ring of recent launches each context keeps, so that a fault surfacing after the launch
//! that caused it (release builds do not synchronize) can name the launches that may have.
//!
//! Fixed capacity, written in place: recording a launch allocates nothing (the kernel name is
//! an `Arc<str>` shared with the kernel, so storing it is a reference-count increment).

use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::validate::LaunchConfig;

use crate::error::LaunchRecord;

/// How many launches a context remembers. Faults surface at the next synchronizing call, so
/// the culprit is nearly always among the last few launches; 16 keeps the record short enough
/// to read in an error message.
pub const RING_CAPACITY: usize = 16;

/// The last [`RING_CAPACITY`] launches of one context.
#[derive(Debug)]
pub struct LaunchRing {
    slots: [Option<LaunchRecord>; RING_CAPACITY],
    /// Launches recorded so far; the next one gets `seq = count + 1` and goes to slot
    /// `count % RING_CAPACITY`.
    count: u64,
}

impl Default for LaunchRing {
    fn default() -> Self {
        Self {
            slots: [const { None }; RING_CAPACITY],
            count: 0,
        }
    }
}

impl LaunchRing {
    /// Records a launch and returns its sequence number (from 1).
    pub fn record(
        &mut self,
        kernel: &Arc<str>,
        config: LaunchConfig,
        site: &'static Location<'static>,
    ) -> u64 {
        self.count += 1;
        let seq = self.count;
        let slot = &mut self.slots[(seq - 1) as usize % RING_CAPACITY];
        match slot {
            // Reuse the slot's Arc when it is the same kernel: no reference-count traffic.
            Some(r) if Arc::ptr_eq(&r.kernel, kernel) => {
                r.seq = seq;
                r.config = config;
                r.site = site;
            }
            _ => {
                *slot = Some(LaunchRecord {
                    seq,
                    kernel: Arc::clone(kernel),
                    config,
                    site,
                })
            }
        }
        seq
    }

    /// The remembered launches, oldest first.
    pub fn snapshot(&self) -> Vec<LaunchRecord> {
        let mut v: Vec<LaunchRecord> = self.slots.iter().flatten().cloned().collect();
        v.sort_by_key(|r| r.seq);
        v
    }

    /// The launch with sequence number `seq`, if still remembered.
    pub fn get(&self, seq: u64) -> Option<LaunchRecord> {
        self.slots.iter().flatten().find(|r| r.seq == seq).cloned()
    }

    /// How many launches were ever recorded.
    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::Dim3;

    #[test]
    fn keeps_the_last_launches_in_order() {
        let mut ring = LaunchRing::default();
        let a: Arc<str> = "a".into();
        let b: Arc<str> = "b".into();
        for i in 0..40u32 {
            let k = if i % 3 == 0 { &a } else { &b };
            ring.record(
                k,
                LaunchConfig::new(Dim3::x(i + 1), Dim3::x(32)),
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
    }
}
