//! One range check for a run of accesses through the same address register: the loads of an
//! unrolled loop (`pos[j + u]` for `u` in 0..16 reads `[%rd22]`, `[%rd22+16]`, ...) are covered
//! by one check of `[min offset, max offset + bytes)` before the first of them.
//!
//! # The transformation
//! The *segment* runs from the group's first access to its last. Before it, one check; if it
//! passes, the segment runs as written; if it fails, control goes to a copy of the segment,
//! out of line at the function's end, in which every access of the group has its own check,
//! exactly as without grouping, and which then jumps back to a label after the segment. So a
//! fault is recorded by the same per-access check, with the same site, offset and thread, as
//! before: the group check only chooses which copy runs.
//!
//! # Why the fast copy is sound
//! The group's accesses read `R + c_k` (`bytes_k` each) with `R` not written inside the segment,
//! so `R` holds one value throughout. The check computes `o = R - base + c_min` (modulo `2^w`)
//! and passes only when `o <= len - span`, `span = max(c_k + bytes_k) - c_min`; then each
//! access's offset `o + (c_k - c_min)` lies in `[0, len - bytes_k]` without wrapping, which is
//! exactly what its own check would have accepted. A guarded access is covered as if it ran:
//! when its address is out of bounds the group check fails and the exact copy runs, whose checks
//! respect the guard.
//!
//! # What a segment may hold
//! Only instructions and `.loc` lines, in one extended basic block: no label (another way in),
//! no branch, call, return or exit (another way out), no nested scope. No instruction of it
//! may need code of its own (a check of another buffer, a shadow update, an assertion), since
//! the segment is copied verbatim. And no barrier or other warp-synchronous instruction
//! (`bar.sync` is `barrier.sync.aligned`; `shfl.sync`, `vote.sync`, ...): threads of one warp
//! may take different copies, and an `.aligned` instruction must be executed by the whole warp
//! at the same instruction, so a barrier in both copies is *not* the same barrier.
//! Both copies write the same registers, so what follows the join sees the same state.

use std::collections::{BTreeMap, BTreeSet};

use super::analyze::{accesses, decide, Decision, Origin, Provenance};
use super::ptx::{Function, Module, StmtKind};
use super::range::Ranges;
use super::InstrumentOptions;
use crate::ir::{effects, Address, Op, Sync};

/// A group of at least two checked accesses through one register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Statement indices of the segment's first and last access.
    pub first: usize,
    pub last: usize,
    /// The address register.
    pub reg: String,
    pub origin: Origin,
    /// Smallest constant offset, and the end (offset + bytes) furthest out.
    pub min: i64,
    pub end: i64,
    pub members: usize,
}

struct Open {
    g: Group,
}

/// The groups of `f`, in order, not overlapping.
pub fn groups(
    m: &Module,
    f: &Function,
    prov: &Provenance,
    ranges: &Ranges<'_>,
    opts: &InstrumentOptions,
    shadows: &BTreeMap<String, usize>,
) -> Vec<Group> {
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    let close = |open: &mut Option<Open>, out: &mut Vec<Group>| {
        if let Some(o) = open.take() {
            if o.g.members >= 2 {
                out.push(o.g);
            }
        }
    };
    let mut depth = 0usize;
    for (k, s) in f.stmts.iter().enumerate() {
        let i = match &s.kind {
            StmtKind::Loc(_) => continue,
            StmtKind::Instr(i) if depth == 0 => i,
            StmtKind::Open => {
                depth += 1;
                close(&mut open, &mut out);
                continue;
            }
            StmtKind::Close => {
                depth = depth.saturating_sub(1);
                close(&mut open, &mut out);
                continue;
            }
            _ => {
                close(&mut open, &mut out);
                continue;
            }
        };
        // Control flow, a barrier, a breakpoint, or what the threads execute together.
        let ends = match i.op {
            Op::Branch { .. }
            | Op::Call { .. }
            | Op::Return
            | Op::Exit { .. }
            | Op::Event { breakpoint: true } => true,
            Op::Sync { sync, .. } => sync != Sync::Fence,
            _ => false,
        };
        if ends || i.aligned {
            close(&mut open, &mut out);
            continue;
        }
        // The one access of `i` this group could take, if any.
        let mut member: Option<(String, Origin, i64, i64)> = None;
        let mut foreign = false;
        match accesses(i) {
            Err(_) => {}
            Ok(acc) => {
                for a in &acc {
                    match decide(m, f, prov, ranges, opts, i, a) {
                        Decision::Check(o) if acc.len() == 1 => {
                            let addr = Address::parse(&i.operands[a.operand]);
                            match addr {
                                Some(ad) if ad.base.starts_with('%') => {
                                    member = Some((
                                        ad.base.to_string(),
                                        o,
                                        ad.offset,
                                        ad.offset + a.bytes as i64,
                                    ));
                                }
                                _ => foreign = true,
                            }
                        }
                        Decision::Check(_) | Decision::CheckShadow { .. } => foreign = true,
                        Decision::Proven | Decision::Unchecked(_) => {}
                    }
                }
            }
        }
        let defines: BTreeSet<&str> = effects(i).defs.into_iter().collect();
        if foreign || defines.iter().any(|d| shadows.contains_key(*d)) {
            close(&mut open, &mut out);
            continue;
        }
        if let Some((reg, origin, lo, hi)) = member {
            let joins = open
                .as_ref()
                .is_some_and(|o| o.g.reg == reg && o.g.origin == origin);
            if joins {
                let g = &mut open.as_mut().expect("open").g;
                g.last = k;
                g.min = g.min.min(lo);
                g.end = g.end.max(hi);
                g.members += 1;
            } else {
                close(&mut open, &mut out);
                open = Some(Open {
                    g: Group {
                        first: k,
                        last: k,
                        reg: reg.clone(),
                        origin,
                        min: lo,
                        end: hi,
                        members: 1,
                    },
                });
            }
            // An access that also writes its own address register (a load into it) ends the
            // group after itself.
            if defines.contains(reg.as_str()) {
                close(&mut open, &mut out);
            }
            continue;
        }
        // A redefinition of the group's register ends it.
        if open
            .as_ref()
            .is_some_and(|o| defines.contains(o.g.reg.as_str()))
        {
            close(&mut open, &mut out);
        }
    }
    close(&mut open, &mut out);
    out
}
