//! Counts of what this process compiled and what the cache answered, for tests and
//! benchmarks that must tell a hit from a compile without timing it.
//!
//! The bottom layer of the crate: the compiler (`nvrtc`) counts its compiles and assemblies
//! and the cache its hits, each from its own layer, so neither names the other to count.
//! Read through [`cache::stats`](crate::cache::stats).

use std::sync::atomic::{AtomicU64, Ordering};

/// What happened, once.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// NVRTC compiled a program (each attempt counts; see `nvrtc/nvcc.rs`'s retries).
    NvrtcCompile,
    /// nvJitLink assembled PTX.
    Assembly,
    /// A module came from the cache.
    ModuleHit,
    /// ... with its key found through a manifest, without listing headers.
    ManifestHit,
    /// A bounds-checked build came from the cache.
    CheckedHit,
    /// A toolkit header was read and scanned, its scan in neither this process's memory nor
    /// the cache's memo file.
    ToolkitScan,
}

static COUNTS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

pub(crate) fn count(e: Event) {
    COUNTS[e as usize].fetch_add(1, Ordering::Relaxed);
}

/// This process's counts so far ([`stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// NVRTC compiles run (a compile retried without launch references counts twice).
    pub nvrtc_compiles: u64,
    /// PTX assemblies by nvJitLink (bounds-checked builds).
    pub assemblies: u64,
    /// Compiles answered from the module cache.
    pub module_hits: u64,
    /// Of those, the ones whose key a manifest gave, without listing the source's headers.
    pub manifest_hits: u64,
    /// Bounds-checked builds answered from the cache, without NVRTC, the instrumenter or
    /// nvJitLink.
    pub checked_hits: u64,
    /// Toolkit headers read and scanned for a full header lookup because no earlier process
    /// had kept their scans (`cache/toolkit.rs`): after one compile with the cache, a later
    /// process reads none of those headers again.
    pub toolkit_scans: u64,
}

/// What this process compiled and what the cache answered, so far. Counts only grow; compare
/// two readings.
pub fn stats() -> CacheStats {
    let get = |e: Event| COUNTS[e as usize].load(Ordering::Relaxed);
    CacheStats {
        nvrtc_compiles: get(Event::NvrtcCompile),
        assemblies: get(Event::Assembly),
        module_hits: get(Event::ModuleHit),
        manifest_hits: get(Event::ManifestHit),
        checked_hits: get(Event::CheckedHit),
        toolkit_scans: get(Event::ToolkitScan),
    }
}
