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
#[derive(Default)]
pub struct Table {
    map: RwLock<BTreeMap<u64, Arc<Allocation>>>,
    made: AtomicU64,
}

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

    /// Forgets every allocation starting inside `[base, base + bytes)` (an unmapped range).
    pub fn remove_range(&self, base: u64, bytes: u64) {
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<u64> = map
            .range(base..base.saturating_add(bytes))
            .map(|(&b, _)| b)
            .collect();
        for b in gone {
            map.remove(&b);
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
        t.remove_range(0x3000, 0x200);
        assert_eq!(at(&t, 0x3010), None);
        assert_eq!(at(&t, 0x3110), None);
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
