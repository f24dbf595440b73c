//! The allocation table: every device-visible allocation the program made through an
//! intercepted call (plain, pitched, managed, async and pool, host-mapped and registered host
//! memory, virtual memory mappings), so that a pointer argument can be bounded by the
//! allocation it points into, wherever inside it it points.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::stack::Stack;

/// One allocation.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub base: u64,
    pub bytes: u64,
    /// The entry point that made it.
    pub api: &'static str,
    /// The host call stack that made it, when captured.
    pub stack: Option<Stack>,
}

impl Allocation {
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.bytes)
    }
}

/// The allocations alive now, by first byte.
///
/// Virtual memory management is the one family where an allocation is not one call's result:
/// a program reserves a range of addresses (`cuMemAddressReserve`) and maps physical memory
/// into it piece by piece (`cuMemMap`), often growing one buffer by mapping the next piece
/// right after the last (expandable segments). The buffer a kernel sees is the run of
/// consecutive mappings inside one reservation, so that is what is recorded: a mapping next
/// to another of the same reservation joins it, and unmapping a piece splits the run.
#[derive(Default)]
pub struct Table {
    map: RwLock<BTreeMap<u64, Arc<Allocation>>>,
    /// Reserved address ranges, first byte to length.
    reservations: RwLock<BTreeMap<u64, u64>>,
    made: AtomicU64,
}

/// What `Table::map` records a mapping as.
pub const MAPPED: &str = "cuMemMap";

impl Table {
    /// Records an allocation (an empty one is no allocation). One made at an address already
    /// recorded replaces it: the driver reused the range, so the old one was freed through a
    /// path the interposer does not see.
    pub fn insert(&self, a: Allocation) {
        if a.bytes == 0 || a.base == 0 {
            return;
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        // Anything the new range overlaps is gone.
        let stale: Vec<u64> = map
            .range(..a.end())
            .rev()
            .take_while(|(_, o)| o.end() > a.base)
            .map(|(&b, _)| b)
            .collect();
        for b in stale {
            map.remove(&b);
        }
        map.insert(a.base, Arc::new(a));
    }

    /// Forgets the allocation starting at `base`.
    pub fn remove(&self, base: u64) -> Option<Arc<Allocation>> {
        self.map
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&base)
    }

    /// Records a reserved range of addresses (`cuMemAddressReserve`).
    pub fn reserve(&self, base: u64, bytes: u64) {
        if bytes > 0 {
            self.reservations
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(base, bytes);
        }
    }

    /// Forgets a reserved range (`cuMemAddressFree`) and whatever is still mapped in it.
    pub fn release(&self, base: u64, bytes: u64) {
        self.reservations
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&base);
        self.unmap(base, bytes);
    }

    /// The reservation holding `[base, base + bytes)`, if one does.
    fn reservation_of(&self, base: u64, bytes: u64) -> Option<(u64, u64)> {
        let r = self.reservations.read().unwrap_or_else(|p| p.into_inner());
        let (&rb, &rl) = r.range(..=base).next_back()?;
        let re = rb.saturating_add(rl);
        (base.saturating_add(bytes) <= re).then_some((rb, re))
    }

    /// Records physical memory mapped at `[base, base + bytes)` (`cuMemMap`), joined with the
    /// mappings right before and after it in the same reservation. The run keeps the call
    /// stack of its first mapping that has one.
    pub fn map(&self, base: u64, bytes: u64, stack: Option<Stack>) {
        if bytes == 0 || base == 0 {
            return;
        }
        let end = base.saturating_add(bytes);
        let mut run = Allocation {
            base,
            bytes,
            api: MAPPED,
            stack,
        };
        if let Some((rb, re)) = self.reservation_of(base, bytes) {
            let map = self.map.read().unwrap_or_else(|p| p.into_inner());
            let joins = |a: &Allocation| a.api == MAPPED && a.base >= rb && a.end() <= re;
            let before = map
                .range(..base)
                .next_back()
                .map(|(_, a)| a)
                .filter(|a| a.end() == base && joins(a));
            let after = map.get(&end).filter(|a| joins(a));
            let first = before.map_or(base, |a| a.base);
            let last = after.map_or(end, |a| a.end());
            let stack = before
                .and_then(|a| a.stack.clone())
                .or(run.stack.take())
                .or_else(|| after.and_then(|a| a.stack.clone()));
            run = Allocation {
                base: first,
                bytes: last - first,
                api: MAPPED,
                stack,
            };
        }
        // `insert` drops the pieces the run now covers.
        self.insert(run);
    }

    /// Forgets `[base, base + bytes)` (an unmapped range): an allocation partly inside it
    /// keeps the rest.
    pub fn unmap(&self, base: u64, bytes: u64) {
        let end = base.saturating_add(bytes);
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        let hit: Vec<u64> = map
            .range(..end)
            .rev()
            .take_while(|(_, a)| a.end() > base)
            .map(|(&b, _)| b)
            .collect();
        for b in hit {
            let Some(a) = map.remove(&b) else { continue };
            for (lo, hi) in [(a.base, base.min(a.end())), (end.max(a.base), a.end())] {
                if hi > lo {
                    let rest = Allocation {
                        base: lo,
                        bytes: hi - lo,
                        ..(*a).clone()
                    };
                    map.insert(lo, Arc::new(rest));
                }
            }
        }
    }

    /// The allocation `ptr` points into: the one holding it, else the one it is one past the
    /// end of (a pointer to an allocation's end may not be dereferenced, so every access
    /// through it is reported against that allocation). `None` for an address no intercepted
    /// call returned.
    pub fn find(&self, ptr: u64) -> Option<Arc<Allocation>> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        let (_, a) = map.range(..=ptr).next_back()?;
        (ptr <= a.end()).then(|| Arc::clone(a))
    }

    /// Allocations made so far (all families).
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: &Table, ptr: u64) -> Option<(u64, u64)> {
        t.find(ptr).map(|a| (a.base, a.bytes))
    }

    fn alloc(base: u64, bytes: u64) -> Allocation {
        Allocation {
            base,
            bytes,
            api: "cuMemAlloc_v2",
            stack: None,
        }
    }

    #[test]
    fn a_pointer_inside_or_one_past_an_allocation_finds_it() {
        let t = Table::default();
        t.insert(alloc(0x1000, 0x100));
        t.insert(alloc(0x2000, 0x10));
        assert_eq!(at(&t, 0x1000), Some((0x1000, 0x100)));
        assert_eq!(at(&t, 0x10ff), Some((0x1000, 0x100)));
        assert_eq!(at(&t, 0x1100), Some((0x1000, 0x100)));
        assert_eq!(at(&t, 0x1101), None);
        assert_eq!(at(&t, 0xfff), None);
        assert_eq!(at(&t, 0x2008), Some((0x2000, 0x10)));
        assert_eq!(t.made(), 2);
    }

    #[test]
    fn an_allocation_right_after_another_owns_its_first_byte() {
        let t = Table::default();
        t.insert(alloc(0x1000, 0x100));
        t.insert(alloc(0x1100, 0x100));
        assert_eq!(at(&t, 0x1100), Some((0x1100, 0x100)));
    }

    #[test]
    fn freeing_and_unmapping_forget_allocations() {
        let t = Table::default();
        t.insert(alloc(0x1000, 0x100));
        t.insert(alloc(0x3000, 0x100));
        t.insert(alloc(0x3100, 0x100));
        assert!(t.remove(0x1000).is_some());
        assert_eq!(at(&t, 0x1010), None);
        t.unmap(0x3000, 0x200);
        assert_eq!(at(&t, 0x3010), None);
        assert_eq!(at(&t, 0x3110), None);
    }

    #[test]
    fn consecutive_mappings_of_one_reservation_are_one_buffer() {
        let t = Table::default();
        t.reserve(0x10_0000, 0x4000);
        t.reserve(0x10_4000, 0x2000);
        t.map(0x10_1000, 0x1000, None);
        t.map(0x10_0000, 0x1000, None);
        t.map(0x10_2000, 0x1000, None);
        // Three pieces mapped out of order: one run.
        assert_eq!(at(&t, 0x10_0010), Some((0x10_0000, 0x3000)));
        assert_eq!(at(&t, 0x10_2ff0), Some((0x10_0000, 0x3000)));
        // The next reservation's mapping starts a buffer of its own even where it touches.
        t.map(0x10_3000, 0x1000, None);
        t.map(0x10_4000, 0x1000, None);
        assert_eq!(at(&t, 0x10_3010), Some((0x10_0000, 0x4000)));
        assert_eq!(at(&t, 0x10_4010), Some((0x10_4000, 0x1000)));
        // Unmapping a piece in the middle splits the run.
        t.unmap(0x10_1000, 0x1000);
        assert_eq!(at(&t, 0x10_0010), Some((0x10_0000, 0x1000)));
        assert_eq!(at(&t, 0x10_1800), None);
        assert_eq!(at(&t, 0x10_2010), Some((0x10_2000, 0x2000)));
        // Freeing a reservation forgets what is mapped in it.
        t.release(0x10_0000, 0x4000);
        assert_eq!(at(&t, 0x10_2010), None);
        assert_eq!(at(&t, 0x10_4010), Some((0x10_4000, 0x1000)));
        // A mapping outside any known reservation is a buffer of its own.
        t.map(0x20_0000, 0x1000, None);
        t.map(0x20_1000, 0x1000, None);
        assert_eq!(at(&t, 0x20_0010), Some((0x20_0000, 0x1000)));
    }

    #[test]
    fn a_range_reused_by_the_driver_replaces_what_it_overlaps() {
        let t = Table::default();
        t.insert(alloc(0x1000, 0x100));
        t.insert(alloc(0x1080, 0x100));
        assert_eq!(at(&t, 0x1010), None);
        assert_eq!(at(&t, 0x1090), Some((0x1080, 0x100)));
        t.insert(alloc(0, 16));
        t.insert(alloc(0x5000, 0));
        assert_eq!(at(&t, 0x5000), None);
    }
}
