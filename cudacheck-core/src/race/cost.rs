//! What a race-checked build adds, counted statically from the code it writes: PTX
//! instructions per place (prologue, each checked access, each barrier, each exit, each warp
//! synchronization), the shared atomics among them and the shadow's bytes. A prediction of
//! where the time goes, not a measurement: an instruction's cost depends on what `ptxas` makes
//! of it and on how often it runs.

use std::fmt::Write as _;

/// The static cost of one kernel's race checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RaceCost {
    /// The PTX symbol.
    pub symbol: String,
    /// Bytes of `__shared__` arrays the kernel names (the static part of its shared memory).
    pub static_shared_bytes: u32,
    /// Instructions of the prologue before the clearing loop, the clearing loop's body, and
    /// the shadow bytes each 16-byte store of it clears.
    pub prologue: u32,
    pub clear_loop: u32,
    /// Per race-checked access (those proven unable to race add nothing), its instructions.
    pub accesses: Vec<u32>,
    /// Per block barrier, its instructions (the barrier itself included) and the shared
    /// atomics among them (run by one lane per arriving group).
    pub barriers: Vec<u32>,
    pub barrier_atomics: Vec<u32>,
    /// Per exit, and per warp synchronization or collective, its instructions.
    pub exits: Vec<u32>,
    pub warp: Vec<u32>,
    /// 64-bit records per shadow word ([`super::RaceKernel::shadow_records`]).
    pub records: u32,
    /// Whether the shadow covers the dynamic shared memory
    /// ([`super::RaceKernel::shadow_dynamic`]).
    pub shadow_dynamic: bool,
}

impl RaceCost {
    /// Bytes of shadow a block clears, for launches with this much dynamic shared memory.
    pub fn shadow_bytes(&self, dynamic_shared_bytes: u32) -> u32 {
        if self.prologue == 0 {
            return 0;
        }
        let dynamic = if self.shadow_dynamic {
            dynamic_shared_bytes
        } else {
            0
        };
        super::shadow_bytes_with(self.records, self.static_shared_bytes, dynamic)
    }
}

/// Instructions in a piece of PTX: statements ending in `;` that are not declarations, and
/// not in a `{ }` scope (the reports: run only when something is reported).
pub(super) fn instructions(code: &str) -> u32 {
    let mut depth = 0usize;
    let mut n = 0;
    for l in code.lines().map(str::trim) {
        match l {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            _ if depth == 0 && l.ends_with(';') && !l.starts_with('.') && !l.starts_with("//") => {
                n += 1
            }
            _ => {}
        }
    }
    n
}

/// Shared atomics in a piece of PTX.
pub(super) fn shared_atomics(code: &str) -> u32 {
    code.lines()
        .map(str::trim)
        .map(|l| match l.strip_prefix('@') {
            Some(g) => g
                .split_once(char::is_whitespace)
                .map_or("", |(_, i)| i.trim_start()),
            None => l,
        })
        .filter(|i| i.starts_with("atom.shared") || i.starts_with("red.shared"))
        .count() as u32
}

fn mean(v: &[u32]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        f64::from(v.iter().sum::<u32>()) / v.len() as f64
    }
}

/// One table row (markdown) for a kernel launched with `threads` per block and
/// `dynamic_shared_bytes`: shadow bytes per block and per thread, the prologue, the mean
/// instructions per checked access and per barrier, the shared atomics per barrier.
pub fn cost_row(name: &str, c: &RaceCost, threads: u32, dynamic_shared_bytes: u32) -> String {
    let shadow = c.shadow_bytes(dynamic_shared_bytes);
    let mut s = String::new();
    let _ = write!(
        s,
        "| {name} | {} | {} | {} | {} | {:.0} ({}) | {:.0} ({}) | {:.1} |",
        c.static_shared_bytes + dynamic_shared_bytes,
        shadow,
        shadow.div_ceil(threads.max(1)),
        c.prologue + c.clear_loop * shadow.div_ceil(16).div_ceil(threads.max(1)),
        mean(&c.accesses),
        c.accesses.len(),
        mean(&c.barriers),
        c.barriers.len(),
        mean(&c.barrier_atomics),
    );
    s
}

/// The header of [`cost_row`]'s table.
pub const COST_HEADER: &str = "| kernel | shared (B) | shadow (B/block) | shadow cleared (B/thread) | prologue instr./thread | instr./checked access (accesses) | instr./barrier (barriers) | shared atomics/barrier/arriving group (report path included) |\n|---|---:|---:|---:|---:|---:|---:|---:|";
