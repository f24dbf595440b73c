//! Loop versioning: one range check per access before a loop, on the device, and a copy of
//! the loop without those accesses' checks.
//!
//! # Why
//! A host check (`guard/`) bounds an access for every thread of the launch at once, from
//! the launch's arguments. It cannot when the loop's start or bound differs per thread and
//! comes from memory (a CSR row's `offsets[r]..offsets[r + 1]`), when the per-thread values
//! are related in a way intervals lose (`lane` and `c += 32`), or when the launch's own bound
//! fails for some threads only. Then every iteration checked each access. Here each thread
//! checks, once before the loop, with the values its registers hold there, the whole range
//! of addresses each hoisted access will take in every iteration the loop's exit test allows.
//!
//! # The transformation
//! For an innermost loop with a recognized exit test (`crate::ir::loops`), entered from one
//! block outside it, its blocks one contiguous stretch of text, and nothing in it that needs
//! other threads at the same instruction (barriers, warp collectives, calls): every checked
//! access whose address is *affine in the iteration number* `j` (see below) is hoisted. The
//! loop's text is emitted twice:
//! - the **checked loop**, where it was, unchanged: every access with its own check;
//! - the **fast loop** after it (labels renamed `L` to `L__v<n>`), where the hoisted accesses
//!   have no check and the others keep theirs. A failed check there jumps to the checked
//!   loop's cold block of the same access, which records the fault and goes on in the checked
//!   loop right after the access (the same instructions on the same registers: the state is
//!   the one the checked loop would have had; `fast.rs` makes the same argument). Its exits
//!   go where the loop's exits go.
//!
//! On the edge into the loop, a **precheck** computes, per hoisted access, its byte offset in
//! the first and the last iteration and tests both against the buffer, exactly as the access's
//! own check would (`offset <= len - bytes`, unsigned, and the alignment of 8- and 16-byte
//! accesses); the thread enters the fast loop only if every hoisted access passes, the
//! checked loop otherwise. A bad index is therefore still reported by the access's own check,
//! in the checked loop, with its exact offset, thread and line.
//!
//! # Why the precheck is sound
//! Let `j` count the iterations of this entry into the loop (0 for the first). Registers the
//! loop does not define hold, in every iteration, the value they hold on the edge into the
//! loop (the loop is entered only through that edge). A basic induction variable `r` (one
//! unguarded update `r = r + s` per iteration, `s` invariant, in a block dominating every
//! latch) holds `r0 + s*j` before its update in iteration `j` and `r0 + s*(j+1)` after it;
//! a statement is before (after) the update in every iteration when the update's block does
//! not reach it within the iteration (dominates it), which for an innermost loop (no cycle
//! but through the header) decides every statement where this module uses it. A register
//! the loop defines once, unguarded, in a statement that runs before the use in every
//! iteration (its block dominates the use's, or earlier in the same block), holds what that
//! statement computed in this iteration. Through `add`, `sub`, `mul.lo`, `mad.lo`, `shl` by
//! an immediate, `neg`, `mov` and narrowing `cvt` (ring operations: exact modulo `2^w`) a
//! register is therefore `a + b*j (mod 2^w)` with `a`, `b` computed from the entry values.
//! A widening (`cvt` to 64 bits, `mul.wide`, `mad.wide`) reads the narrow register's bits as
//! a signed or unsigned number: the precheck computes `a' + b'*J` exactly (`a'` the reading of
//! `a`, `b'` the signed reading of `b`) and requires it to lie in the reading's range; `a'`
//! lies there by construction, and a linear function that lies in a range at both ends of
//! `[0, J]` lies in it everywhere in between, so every iteration's reading is `a' + b'*j`
//! exactly, and the widened value is affine again.
//!
//! **The iterations.** The exit test compares the counter (an induction variable `c`, read
//! after its update or before it: `a` = 1 or 0) with an invariant bound and leaves the loop
//! on one outcome; any other exit only ends the loop sooner. With `c0` the counter's reading
//! on entry and `S` its step, the test of iteration `j` reads `c0 + S*(j + a)`; the loop
//! goes on from iteration `j` only if that value passes. For "go on while `c < B`" (`<=`,
//! `>`, `>=` and the reversed outcome normalized to it), the last iteration is
//! `J = max(0, ceil((B - c0 - S*a) / S))`, requiring `S > 0`; for "go on while `c != B`",
//! `J = (B - c0) / S - a`, requiring `S` to divide `B - c0` with a quotient of at least `a`.
//! Both hold only if the tested values do not wrap: going up, every tested value lies between
//! the first, `c0 + S*a`, and the first past the bound, below `B + S` (going down likewise),
//! so the precheck requires `c0 + S*a` and `B - 1 + S` (`B + 1 + S` down) to lie in the
//! comparison's range: then by induction every tested value is exact and the test decides
//! as the formula says; for `!=` the values run monotonically from `c0` to `B`, both in
//! range. For 64-bit counters it also requires entry values below `2^61` and steps below
//! `2^32` in magnitude, so that its own arithmetic (64-bit) is exact. An access in a block
//! the test's block dominates runs only in iterations whose test went on: its last iteration
//! is `J - 1` (`J` otherwise: more iterations than run is only stricter).
//!
//! **Without a division.** Where an access's slope `b` is `k` times the counter's step (the
//! counter itself widened as its test reads it, scaled by constants; or a pointer stepped by
//! a constant multiple of a constant step), `b*j = k*(S*j)`, and the counter's advance `S*j`
//! at any iteration the access runs in is bounded by the test directly: the test before that
//! iteration went on, so `c0 + S*j < B` going up, i.e. `S*j <= B - 1 - c0` (one step more
//! for an access before a test that reads the counter before its update). The precheck then
//! uses `k * max(0, B - 1 - c0)` for `b*J`: no iteration count, no division, and no looser
//! than the user's own bound on the index. Other slopes use `J` (a division: by a constant
//! where the step is one, `< 2^30` required).
//!
//! **The range.** An access's offset from its buffer is `o(j) = o0 + B*j (mod 2^64)` with
//! `o0 = a + offset - base`. The precheck requires `o0 <= len - bytes` (unsigned), the
//! product `B*J` to fit in 64 signed bits (`mul.hi` is its sign extension), and
//! `o0 + B*J <= len - bytes` (unsigned, modulo `2^64`); `len - bytes < 2^63`. Then the exact
//! sum lies in `[0, 2^64)` (a negative one would read as at least `2^63`), so both ends of
//! the exact line `o0 + B*j` lie in `[0, len - bytes]`, and so does every point between: every
//! iteration's access is in bounds, which is what its own check would have found. An 8- or
//! 16-byte access also requires `a + offset` and `B` to be multiples of its width.
//! A guarded (`@%p`) access may run in fewer iterations: the precheck covers all of them.
//!
//! **The exact last iteration.** Where the precheck computes `J` anyway, and always for a
//! loop whose counter steps by a sum of registers (a grid-stride loop unrolled by NVRTC:
//! `i += 4 * stride`, its copies reading at `i + stride`, `i + 2 * stride`, ...), the
//! counter's advance is `S*J` exactly (`|S| <= 2^32`, `J <= 2^30`) rather than the bound
//! `B - 1 - c0`: the copies ahead of the counter are in the buffer in the last iteration
//! only because the loop leaves before they would not be, which the bound does not see. A
//! 64-bit counter's advance is then required below `2^34`, so that its multiples by small
//! constants need no overflow test.
//!
//! **Not affine, monotone.** An address built from a line through operations monotone in it
//! (`(i >> 3) & ~3`, `min(max(i + d, 0), w - 1)`, `x[j >> 1]` going down) is hoisted too:
//! its range is bracketed by its values at the line's least and greatest value, computed on
//! the device (`monotone.rs`, which gives the argument). An unrolled loop's copies of such an
//! access, differing only in the line's start, share one check. Not for 8- and 16-byte
//! accesses, whose alignment a shift need not keep.

use std::collections::BTreeMap;

mod monotone;

use self::monotone::{Bounded, Mono};
use super::analyze::Origin;
use super::ptx::{Function, Space, StmtKind};
use crate::ir::{
    effects, needs_peers, Address, Arith, ArithOp, Bound, Cfg, Cmp, Compare, Convert, Facts, Flow,
    Half, Loop, Op, Operand, Step, Ty,
};

/// A 64-bit value computed on the edge into a loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Val {
    Imm(i64),
    /// A register's value on the edge into the loop (a 32-bit one zero-extended: any
    /// representative serves the ring operations; readings go through [`Val::Ext`]).
    Reg(String, u32),
    /// `%tid.x`, `%ctaid.y`, ...: 32-bit, fixed for the thread.
    Special(String),
    Add(Box<Val>, Box<Val>),
    Sub(Box<Val>, Box<Val>),
    Mul(Box<Val>, Box<Val>),
    Shl(Box<Val>, u32),
    /// The low `bits` bits read signed or unsigned (`bits` < 64).
    Ext {
        v: Box<Val>,
        bits: u32,
        signed: bool,
    },
}

// Constructors folding constants (wrapping: the values are 64-bit ring elements).
fn add(a: Val, b: Val) -> Val {
    match (&a, &b) {
        (Val::Imm(0), _) => b,
        (_, Val::Imm(0)) => a,
        (Val::Imm(x), Val::Imm(y)) => Val::Imm(x.wrapping_add(*y)),
        _ => Val::Add(Box::new(a), Box::new(b)),
    }
}

fn sub(a: Val, b: Val) -> Val {
    match (&a, &b) {
        (_, Val::Imm(0)) => a,
        (Val::Imm(x), Val::Imm(y)) => Val::Imm(x.wrapping_sub(*y)),
        _ => Val::Sub(Box::new(a), Box::new(b)),
    }
}

fn mul(a: Val, b: Val) -> Val {
    match (&a, &b) {
        (Val::Imm(1), _) => b,
        (_, Val::Imm(1)) => a,
        (Val::Imm(x), Val::Imm(y)) => Val::Imm(x.wrapping_mul(*y)),
        _ => Val::Mul(Box::new(a), Box::new(b)),
    }
}

fn shl(a: Val, k: u32) -> Val {
    match a {
        Val::Imm(x) => Val::Imm(x.wrapping_shl(k)),
        _ => Val::Shl(Box::new(a), k),
    }
}

fn ext(v: Val, bits: u32, signed: bool) -> Val {
    if bits >= 64 {
        return v;
    }
    match v {
        Val::Imm(x) => {
            let sh = 64 - bits;
            Val::Imm(if signed {
                x.wrapping_shl(sh) >> sh
            } else {
                ((x as u64).wrapping_shl(sh) >> sh) as i64
            })
        }
        v => Val::Ext {
            v: Box::new(v),
            bits,
            signed,
        },
    }
}

/// `a + b*j` modulo `2^bits` (`b` absent: invariant); `k`, when known: `b` is `k` times the
/// counter's exact step `S` modulo `2^bits` (or exactly, at 64 bits), so that `b*j` is `k`
/// times the counter's advance `S*j`, which the exit test bounds without a division.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Aff {
    a: Val,
    b: Option<Val>,
    k: Option<i64>,
}

impl Aff {
    fn fixed(a: Val) -> Aff {
        Aff {
            a,
            b: None,
            k: Some(0),
        }
    }
}

/// A register's value in the loop: a line, or a value monotone in the iteration
/// (`monotone.rs`).
enum Desc {
    Line(Aff),
    Mono(Mono),
}

/// The exact value `a + b*J` must lie in the `bits`-bit range read `signed` or not (`k` as in
/// [`Aff`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Window {
    a: Val,
    b: Val,
    k: Option<i64>,
    bits: u32,
    signed: bool,
}

/// One hoisted range check: an access, or several through one address register at constant
/// offsets (an unrolled loop's copies), whose bytes `[base + lo, base + hi)` move by `step`
/// per iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hoisted {
    /// The accesses it covers, by (statement, operand).
    pub members: Vec<(usize, usize)>,
    pub origin: Origin,
    /// The address register's `a`, and the offsets' span around it.
    base: Val,
    lo: i64,
    hi: i64,
    step: Val,
    k: Option<i64>,
    windows: Vec<Window>,
    /// The members' width when each needs its address aligned to it (8 or 16 bytes; a
    /// group's check is of its span, 0).
    align: u64,
    /// The accesses run only in iterations whose test went on (`J - 1`).
    after_test: bool,
    /// Where the address is no line but monotone in the iteration (`monotone.rs`): its
    /// value (`base` and `step` are then unused), and what the precheck must find true at
    /// both ends for that value to be exact.
    mono: Option<Mono>,
    req: Vec<Bounded>,
    /// For a monotone address: its line's start in each member (the tree holds the line
    /// starting at 0; an unrolled loop's copies differ only there and share one check).
    starts: Vec<Val>,
}

impl Hoisted {
    /// Whether `other` can share this check: the same buffer, register line and placement,
    /// and for aligned accesses the same width at offsets congruent modulo it.
    fn joins(&self, other: &Hoisted) -> bool {
        self.origin == other.origin
            && self.base == other.base
            && self.step == other.step
            && self.k == other.k
            && self.windows == other.windows
            && self.after_test == other.after_test
            && self.mono == other.mono
            && self.req == other.req
            && self.align == other.align
            && (self.align == 0 || (self.lo - other.lo).rem_euclid(self.align as i64) == 0)
    }
}

/// How many iterations one entry runs (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Trip {
    /// The counter register, and its exact step as an immediate when it is one.
    counter: String,
    step_imm: Option<i64>,
    /// The counter's step is `S` itself in the counter's width (not a narrowed test of a
    /// register step): the counter's own `b` is `1 * S`.
    own_step: bool,
    c0: Val,
    step: Val,
    bound: Val,
    /// 0 or 1: the test reads the counter after its update.
    a: i64,
    kind: TripKind,
    bits: u32,
    signed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TripKind {
    /// Goes on while `c < bound`.
    Up,
    /// Goes on while `c > bound`.
    Down,
    /// Goes on while `c != bound`.
    Ne,
}

/// A loop to version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Versioned {
    /// Its statements, header label first.
    pub first: usize,
    pub last: usize,
    /// The precheck goes right before this statement (the header's label, on a fall-through
    /// edge, or the entering block's `bra`).
    pub insert_before: usize,
    pub header: String,
    pub hoisted: Vec<Hoisted>,
    trip: Trip,
}

/// A checked access the emitter would check on the device against one buffer, or a group's
/// range check (`group.rs`: accesses through one register at constant offsets, checked as
/// one span), keyed by its first statement and [`GROUP`].
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    pub origin: Origin,
    pub bytes: u64,
    /// For a group: its register and smallest offset (the span starts there).
    pub group: Option<(String, i64)>,
    /// An atomic whose failed check redirects it to the module's sink rather than branching
    /// around it (`emit.rs`, `sinks`): its check in the loop leaves `ptxas`'s schedule as it
    /// was, so hoisting it alone does not pay for a precheck.
    pub redirected: bool,
}

/// The operand index a group's candidate is keyed by.
pub(crate) const GROUP: usize = usize::MAX;

/// The loops of `f` worth versioning, with the candidates each hoists.
pub(crate) fn plan(
    facts: &Facts,
    candidates: &BTreeMap<(usize, usize), Candidate>,
) -> Vec<Versioned> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let (f, cfg, loops) = (facts.f, &facts.cfg, facts.loops.as_slice());
    // The `{ }` depth before each statement (and after the last).
    let mut depth = Vec::with_capacity(f.stmts.len() + 1);
    let mut d = 0usize;
    for s in &f.stmts {
        if matches!(s.kind, StmtKind::Close) {
            d = d.saturating_sub(1);
        }
        depth.push(d);
        if matches!(s.kind, StmtKind::Open) {
            d += 1;
        }
    }
    depth.push(d);
    let mut out = Vec::new();
    for (n, l) in loops.iter().enumerate() {
        let innermost = !loops
            .iter()
            .enumerate()
            .any(|(m, o)| m != n && o.header != l.header && l.blocks.is_superset(&o.blocks));
        if !innermost {
            continue;
        }
        let a = Analysis {
            f,
            cfg,
            l,
            facts,
            depth: &depth,
        };
        if let Some(v) = a.version(candidates) {
            out.push(v);
        }
    }
    out.sort_by_key(|v| v.first);
    out
}

struct Analysis<'a> {
    f: &'a Function,
    cfg: &'a Cfg,
    l: &'a Loop,
    /// The function's facts: its definitions map, and the walk on it ([`Facts::runs_before`]).
    facts: &'a Facts<'a>,
    depth: &'a [usize],
}

/// How deep a register's description may go.
const MAX_DEPTH: u32 = 24;

impl Analysis<'_> {
    fn version(&self, candidates: &BTreeMap<(usize, usize), Candidate>) -> Option<Versioned> {
        let (f, cfg, l) = (self.f, self.cfg, self.l);
        let test = l.exit_test.as_ref()?;
        let first_block = *l.blocks.first()?;
        let last_block = *l.blocks.last()?;
        if first_block != l.header || l.blocks.len() != last_block - first_block + 1 {
            return None;
        }
        let first = cfg.blocks[first_block].stmts.start;
        let last = cfg.blocks[last_block].stmts.end.checked_sub(1)?;
        let header = cfg.blocks[l.header].label.clone()?;
        // The way in that gets the precheck: the block before the header falling through
        // into it, or an outside block ending in an unguarded `bra` to it. Any other way in
        // reaches the checked loop directly, which is always allowed.
        let outside: Vec<usize> = cfg.blocks[l.header]
            .preds
            .iter()
            .copied()
            .filter(|p| !l.blocks.contains(p))
            .collect();
        let last_instr = |b: usize| {
            cfg.blocks[b]
                .stmts
                .clone()
                .rev()
                .find_map(|k| f.instr(k).map(|i| (k, i)))
        };
        let jump = outside.iter().find_map(|&p| {
            let (k, i) = last_instr(p)?;
            (i.guard.is_none() && effects(i).flow == Flow::Branch(header.as_str())).then_some(k)
        });
        let falls = first_block > 0
            && outside.contains(&(first_block - 1))
            && last_instr(first_block - 1).map_or(true, |(_, i)| {
                i.guard.is_some() || matches!(effects(i).flow, Flow::Next | Flow::Call)
            });
        let insert_before = if falls { first } else { jump? };
        // Nothing in the loop needs other threads at the same instruction; no local memory
        // (see `fast.rs` for why); the loop in the function's own scope, and a `{ }` scope in
        // it (inline assembly) without memory accesses (their checks' cold paths are inline).
        if self.depth[first] != 0 || self.depth[insert_before] != 0 {
            return None;
        }
        for k in first..=last {
            if let StmtKind::Instr(i) = &f.stmts[k].kind {
                let e = effects(i);
                if needs_peers(i)
                    || names_local(&i.op)
                    || e.opaque_memory()
                    || (self.depth[k] > 0 && !e.mem.is_empty())
                {
                    return None;
                }
            }
        }
        if self.depth[last + 1] != 0 {
            return None;
        }
        let trip = self.trip(test)?;
        let test_block = cfg.block_of(test.branch)?;
        let mut hoisted = Vec::new();
        let mut branching = false;
        for (&(stmt, operand), c) in candidates.range((first, 0)..(last + 1, 0)) {
            let (base, offset) = match &c.group {
                Some((reg, min)) => (reg.as_str(), *min),
                None => {
                    let Some(i) = f.instr(stmt) else { continue };
                    let Some(addr) = i.operands.get(operand).and_then(|o| Address::parse(o)) else {
                        continue;
                    };
                    if !addr.base_is_reg() {
                        continue;
                    }
                    (addr.base, addr.offset)
                }
            };
            if self.bits(base) != Some(64) {
                continue;
            }
            let mut windows = Vec::new();
            let wide = c.group.is_none() && c.bytes >= 8 && c.bytes.is_power_of_two();
            let (aff, mono, req) = match self.describe(base, stmt, &trip, &mut windows, 0) {
                Some(aff) => (aff, None, Vec::new()),
                // Not a line: monotone in the iteration, bounded by its two ends. Not for
                // accesses that need their alignment checked (a shift need not keep it), nor
                // offsets the precheck's exact arithmetic could not add.
                None if !wide && offset.unsigned_abs() < 1 << 40 => {
                    windows.clear();
                    let mut req = Vec::new();
                    let Some(m) = self.monotone(base, stmt, &trip, &mut windows, &mut req, 0)
                    else {
                        continue;
                    };
                    (Aff::fixed(Val::Imm(0)), Some(m), req)
                }
                None => continue,
            };
            // A monotone address's tree with its line starting at 0, the start aside.
            let zero = Val::Imm(0);
            let starts: Vec<Val> = mono
                .as_ref()
                .and_then(|m| m.leaf())
                .map(|l| l.a.clone())
                .into_iter()
                .collect();
            let (mono, req) = if starts.is_empty() {
                (mono, req)
            } else {
                (
                    mono.map(|m| m.with_start(&zero)),
                    req.iter()
                        .map(|r| Bounded {
                            m: r.m.with_start(&zero),
                            ..r.clone()
                        })
                        .collect(),
                )
            };
            let block = cfg.block_of(stmt)?;
            let h = Hoisted {
                members: vec![(stmt, operand)],
                origin: c.origin.clone(),
                base: aff.a,
                lo: offset,
                hi: offset.checked_add(i64::try_from(c.bytes).ok()?)?,
                align: if wide { c.bytes } else { 0 },
                step: aff.b.unwrap_or(Val::Imm(0)),
                k: aff.k,
                windows,
                after_test: block != test_block && cfg.dominates(test_block, block),
                mono,
                req,
                starts,
            };
            branching |= !c.redirected;
            match hoisted.iter_mut().find(|o: &&mut Hoisted| o.joins(&h)) {
                Some(o) => {
                    o.members.push((stmt, operand));
                    o.starts.extend(h.starts);
                    o.lo = o.lo.min(h.lo);
                    o.hi = o.hi.max(h.hi);
                }
                None => hoisted.push(h),
            }
        }
        // Only redirected atomics: their checks cost the loop a few instructions and no
        // branch before them, less than a precheck where the loop runs once or twice per
        // thread (`index_add_rows_i32`, a block-stride loop over a row of the block's size).
        if hoisted.is_empty() || !branching || self.short(test, &trip, hoisted.len()) {
            return None;
        }
        Some(Versioned {
            first,
            last,
            insert_before,
            header,
            hoisted,
            trip,
        })
    }

    /// Whether the loop runs too few iterations for a precheck to pay (a profitability
    /// rule, not a soundness one): an unrolled loop's remainder (its counter starts at
    /// `x & m`, `m < 8`, and steps by 1 to 0), or a loop from one constant to another whose
    /// iterations times its hoisted checks stay under 16 (a register step, a thread count,
    /// makes them fewer still).
    fn short(&self, test: &crate::ir::ExitTest, trip: &Trip, checks: usize) -> bool {
        let Some(c) = self.l.ivs.get(test.iv) else {
            return false;
        };
        let outside: Vec<usize> = self
            .facts
            .defs
            .get(c.reg.as_str())
            .map_or(Vec::new(), |ds| {
                ds.iter()
                    .copied()
                    .filter(|&k| !self.l.contains_stmt(self.cfg, k))
                    .collect()
            });
        let [d] = outside[..] else { return false };
        let Some(i) = self.f.instr(d) else {
            return false;
        };
        let imm = |k: usize| i.operands.get(k).and_then(|o| crate::ir::immediate(o));
        match (trip.kind, i.op) {
            (
                TripKind::Ne,
                Op::Arith(Arith {
                    op: ArithOp::And, ..
                }),
            ) if matches!(trip.step_imm, Some(1 | -1)) => imm(2)
                .or_else(|| imm(1))
                .is_some_and(|m| (0..8).contains(&m)),
            (_, Op::Mov(_)) => {
                let (Some(init), Bound::Imm(b)) = (imm(1), &test.bound) else {
                    return false;
                };
                let span = (b - init).unsigned_abs();
                match trip.step_imm {
                    Some(st) if st != 0 => {
                        span.div_ceil(u128::from(st.unsigned_abs())) * (checks as u128) < 16
                    }
                    _ => span <= 64,
                }
            }
            _ => false,
        }
    }

    fn bits(&self, reg: &str) -> Option<u32> {
        self.facts
            .reg_ty(reg)?
            .int_bits()
            .filter(|b| matches!(b, 32 | 64))
    }

    fn defs_in_loop(&self, reg: &str) -> Vec<usize> {
        self.facts.defs.get(reg).map_or(Vec::new(), |ds| {
            ds.iter()
                .copied()
                .filter(|&k| self.l.contains_stmt(self.cfg, k))
                .collect()
        })
    }

    /// 1 when statement `x` runs before `y` in every iteration, 0 when after (or never);
    /// `None` when it depends on the path.
    fn phase(&self, x: usize, y: usize) -> Option<i64> {
        if self.facts.runs_before(x, y) == Some(true) {
            Some(1)
        } else if !self.l.may_follow_in_iteration(self.cfg, x, y) {
            Some(0)
        } else {
            None
        }
    }

    fn step_of(&self, steps: &[Step], bits: u32) -> Option<Val> {
        let mut s = Val::Imm(0);
        for t in steps {
            s = match t {
                Step::Imm(k) => add(s, Val::Imm(i64::try_from(*k).ok()?)),
                // A factor may be set in the loop (a copy of `%nctaid.x`), which a value on
                // the edge into the loop does not describe.
                Step::Mul(..) => return None,
                Step::Reg { reg, negated } => {
                    if self.bits(reg)? != bits {
                        return None;
                    }
                    let r = Val::Reg(reg.clone(), bits);
                    if *negated {
                        sub(s, r)
                    } else {
                        add(s, r)
                    }
                }
            };
        }
        Some(s)
    }

    /// `reg`'s value where statement `at` reads it, as `a + b*j` modulo its width.
    fn describe(
        &self,
        reg: &str,
        at: usize,
        t: &Trip,
        win: &mut Vec<Window>,
        depth: u32,
    ) -> Option<Aff> {
        if depth > MAX_DEPTH {
            return None;
        }
        let bits = self.bits(reg)?;
        let ds = self.defs_in_loop(reg);
        if ds.is_empty() {
            return Some(Aff::fixed(Val::Reg(reg.to_string(), bits)));
        }
        if let Some(iv) = self.l.ivs.iter().find(|iv| iv.reg == reg) {
            let s = self.step_of(&iv.steps, bits)?;
            let delta = self.phase(iv.update, at)?;
            let r = Val::Reg(reg.to_string(), bits);
            let a = if delta == 1 { add(r, s.clone()) } else { r };
            // Its step as a multiple of the counter's: the counter itself, or immediates.
            let k = if iv.reg == t.counter && t.own_step {
                Some(1)
            } else {
                match (&s, t.step_imm) {
                    (Val::Imm(x), Some(y)) if y != 0 && x % y == 0 => Some(x / y),
                    _ => None,
                }
            };
            return Some(Aff { a, b: Some(s), k });
        }
        let [d] = ds[..] else { return None };
        if self.phase(d, at)? != 1 {
            return None;
        }
        let i = self.f.instr(d)?;
        // Integer arithmetic without carry in or out, saturation or a high half (a `cvt`'s
        // types are tested where it is read).
        let float = |t: Option<Ty>| t.is_some_and(Ty::float);
        let plain = match i.op {
            Op::Arith(a) => {
                !a.carry_in && !a.carry_out && !a.sat && a.half != Some(Half::Hi) && !float(a.ty)
            }
            Op::Mov(t) => !float(t),
            Op::Convert(c) => !c.sat,
            _ => false,
        };
        if i.guard.is_some() || !plain {
            return None;
        }
        let ops: Vec<Operand<'_>> = i.operands.iter().map(|o| Operand::parse(o)).collect();
        let opnd = |n: usize, win: &mut Vec<Window>| -> Option<Aff> {
            match ops.get(n)? {
                Operand::Reg(r) => self.describe(r, d, t, win, depth + 1),
                Operand::Imm(v) => Some(Aff::fixed(Val::Imm(i64::try_from(*v).ok()?))),
                Operand::Special(s)
                    if ["%tid", "%ntid", "%ctaid", "%nctaid"]
                        .iter()
                        .any(|p| s.starts_with(p)) =>
                {
                    Some(Aff::fixed(Val::Special(s.to_string())))
                }
                _ => None,
            }
        };
        // `x + y` or `x - y`.
        let lin = |x: Aff, y: Aff, minus: bool| {
            let f: fn(Val, Val) -> Val = if minus { sub } else { add };
            Aff {
                a: f(x.a, y.a),
                b: match (x.b, y.b) {
                    (None, None) => None,
                    (Some(b), None) => Some(b),
                    (None, Some(b)) => Some(f(Val::Imm(0), b)),
                    (Some(p), Some(q)) => Some(f(p, q)),
                },
                k: match (x.k, y.k) {
                    (Some(p), Some(q)) if minus => p.checked_sub(q),
                    (Some(p), Some(q)) => p.checked_add(q),
                    _ => None,
                },
            }
        };
        // `x * y` with one side invariant.
        let times = |x: Aff, y: Aff| -> Option<Aff> {
            let (v, inv) = match (&x.b, &y.b) {
                (_, None) => (x, y.a),
                (None, Some(_)) => (y, x.a),
                (Some(_), Some(_)) => return None,
            };
            let k = match (&inv, v.k) {
                (Val::Imm(m), Some(k)) => k.checked_mul(*m),
                (_, Some(0)) => Some(0),
                _ => None,
            };
            Some(Aff {
                a: mul(v.a, inv.clone()),
                b: v.b.map(|b| mul(b, inv)),
                k,
            })
        };
        let widen = |x: Aff, from: u32, signed: bool, win: &mut Vec<Window>| {
            self.widen(x, from, signed, t, win)
        };
        // The bits of a 32- or 64-bit type.
        let ty_bits = |t: Ty| -> Option<u32> {
            let b = t.bytes()? * 8;
            matches!(b, 32 | 64).then_some(b as u32)
        };
        let int = |t: Ty| t.signed() || t.unsigned();
        use ArithOp::*;
        Some(match i.op {
            Op::Mov(_) => opnd(1, win)?,
            Op::Arith(a) if matches!(a.op, Add | Sub) => {
                let (x, y) = (opnd(1, win)?, opnd(2, win)?);
                lin(x, y, a.op == Sub)
            }
            Op::Arith(a) if a.op == Neg => lin(Aff::fixed(Val::Imm(0)), opnd(1, win)?, true),
            Op::Arith(a) if a.op == Shl => {
                let Some(Operand::Imm(n)) = ops.get(2) else {
                    return None;
                };
                let n = u32::try_from(*n).ok().filter(|&n| n < bits)?;
                let x = opnd(1, win)?;
                Aff {
                    a: shl(x.a, n),
                    b: x.b.map(|b| shl(b, n)),
                    k: x.k.and_then(|k| k.checked_mul(1i64.checked_shl(n)?)),
                }
            }
            Op::Arith(a) if matches!(a.op, Mul | Mad) && a.half == Some(Half::Lo) => {
                let p = times(opnd(1, win)?, opnd(2, win)?)?;
                if a.op == Mad {
                    lin(p, opnd(3, win)?, false)
                } else {
                    p
                }
            }
            Op::Arith(a) if matches!(a.op, Mul | Mad) && a.half == Some(Half::Wide) => {
                let from = a.ty.and_then(ty_bits)?;
                if from != 32 || bits != 64 {
                    return None;
                }
                let signed = a.ty.is_some_and(Ty::signed);
                let x = widen(opnd(1, win)?, from, signed, win);
                let y = widen(opnd(2, win)?, from, signed, win);
                let p = times(x, y)?;
                if a.op == Mad {
                    lin(p, opnd(3, win)?, false)
                } else {
                    p
                }
            }
            Op::Convert(Convert {
                to: Some(dst),
                from: Some(src),
                sat: false,
                ..
            }) => {
                // `cvt.dst.src`: integer types only, no rounding or saturation.
                let (db, sb) = (ty_bits(dst)?, ty_bits(src)?);
                if !int(dst) || !int(src) {
                    return None;
                }
                let x = opnd(1, win)?;
                if db <= sb {
                    x
                } else {
                    widen(x, sb, src.signed(), win)
                }
            }
            _ => return None,
        })
    }

    /// A narrow value read as a wider one (see the module docs). `b*j` stays `k` times the
    /// counter's advance only where that is exact: no slope, or the counter's own (its
    /// exact step is the signed reading of its width's bits).
    fn widen(&self, x: Aff, from: u32, signed: bool, t: &Trip, win: &mut Vec<Window>) -> Aff {
        let counter_bits = match &t.c0 {
            Val::Ext { bits, .. } => *bits,
            _ => 64,
        };
        let a = ext(x.a, from, signed);
        match x.b {
            None => Aff::fixed(a),
            Some(b) => {
                let b = ext(b, from, true);
                let k = x.k.filter(|&k| k == 0 || (k == 1 && from == counter_bits));
                // The counter itself, before its update, read as its test reads it: its
                // values are among the tested ones (or its entry value), which the trip's
                // own condition keeps in this range.
                if k == Some(1) && a == t.c0 && signed == t.signed {
                    return Aff { a, b: Some(b), k };
                }
                win.push(Window {
                    a: a.clone(),
                    b: b.clone(),
                    k,
                    bits: from,
                    signed,
                });
                Aff { a, b: Some(b), k }
            }
        }
    }

    /// `reg`'s value where statement `at` reads it as a [`Mono`], where it is no line: an
    /// affine value taken through operations monotone in it (`monotone.rs`). Requirements
    /// that operands read exactly go to `req`, those of the lines inside to `win`.
    fn monotone(
        &self,
        reg: &str,
        at: usize,
        t: &Trip,
        win: &mut Vec<Window>,
        req: &mut Vec<Bounded>,
        depth: u32,
    ) -> Option<Mono> {
        if depth > MAX_DEPTH {
            return None;
        }
        let bits = self.bits(reg)?;
        let [d] = self.defs_in_loop(reg)[..] else {
            return None;
        };
        if self.phase(d, at)? != 1 {
            return None;
        }
        let i = self.f.instr(d)?;
        let float = |t: Option<Ty>| t.is_some_and(Ty::float);
        let plain = match i.op {
            Op::Arith(a) => {
                !a.carry_in && !a.carry_out && !a.sat && a.half != Some(Half::Hi) && !float(a.ty)
            }
            Op::Mov(t) => !float(t),
            Op::Convert(c) => !c.sat,
            _ => false,
        };
        if i.guard.is_some() || !plain {
            return None;
        }
        let ops: Vec<Operand<'_>> = i.operands.iter().map(|o| Operand::parse(o)).collect();
        // An operand: a line (with its windows) where it is one, else a monotone value.
        let opnd = |n: usize, win: &mut Vec<Window>, req: &mut Vec<Bounded>| -> Option<Desc> {
            Some(match ops.get(n)? {
                Operand::Reg(r) => {
                    let mut w = Vec::new();
                    match self.describe(r, d, t, &mut w, depth + 1) {
                        Some(a) => {
                            win.extend(w);
                            Desc::Line(a)
                        }
                        None => Desc::Mono(self.monotone(r, d, t, win, req, depth + 1)?),
                    }
                }
                Operand::Imm(v) => Desc::Line(Aff::fixed(Val::Imm(i64::try_from(*v).ok()?))),
                Operand::Special(s)
                    if ["%tid", "%ntid", "%ctaid", "%nctaid"]
                        .iter()
                        .any(|p| s.starts_with(p)) =>
                {
                    Desc::Line(Aff::fixed(Val::Special(s.to_string())))
                }
                _ => return None,
            })
        };
        // The operand read exactly in `w` bits, `signed` or not: a line through the
        // window of its widening (32 bits) or a requirement on it (64), a monotone value
        // through a requirement.
        let exact =
            |x: Desc, w: u32, signed: bool, win: &mut Vec<Window>, req: &mut Vec<Bounded>| {
                let m = match x {
                    Desc::Line(a) if w < 64 => Mono::line(self.widen(a, w, signed, t, win)),
                    Desc::Line(a) => Mono::line(a),
                    Desc::Mono(m) => m,
                };
                req.push(m.read(w, signed));
                m
            };
        // One monotone operand and one invariant, in either order: (monotone, invariant,
        // whether the monotone one came second).
        let split = |x: Desc, y: Desc| -> Option<(Desc, Val, bool)> {
            let fixed = |d: &Desc| matches!(d, Desc::Line(a) if a.b.is_none());
            match (x, y) {
                (Desc::Line(a), y) if a.b.is_none() && !fixed(&y) => Some((y, a.a, true)),
                (x, Desc::Line(b)) if b.b.is_none() && !fixed(&x) => Some((x, b.a, false)),
                _ => None,
            }
        };
        let mono = |x: Desc| match x {
            Desc::Mono(m) => Some(m),
            Desc::Line(_) => None,
        };
        let imm = |n: usize| match ops.get(n) {
            Some(Operand::Imm(v)) => Some(*v),
            _ => None,
        };
        let rep = |v: Val| monotone::representative(v, bits);
        use ArithOp::*;
        Some(match i.op {
            Op::Mov(_) => mono(opnd(1, win, req)?)?,
            Op::Arith(a) if matches!(a.op, Add | Sub) => {
                let (x, y) = (opnd(1, win, req)?, opnd(2, win, req)?);
                let (m, v, second) = split(x, y)?;
                let m = mono(m)?;
                match (a.op, second) {
                    (Add, _) => m.plus(rep(v)),
                    (_, false) => m.plus(sub(Val::Imm(0), rep(v))),
                    (_, true) => m.minus_from(rep(v)),
                }
            }
            Op::Arith(a) if a.op == Neg => mono(opnd(1, win, req)?)?.minus_from(Val::Imm(0)),
            Op::Arith(a) if a.op == Shl => {
                let n = u32::try_from(imm(2)?).ok().filter(|&n| n < bits.min(62))?;
                mono(opnd(1, win, req)?)?.times(Val::Imm(1i64 << n))
            }
            Op::Arith(a) if matches!(a.op, Mul | Mad) && a.half == Some(Half::Lo) => {
                let (m, v, _) = split(opnd(1, win, req)?, opnd(2, win, req)?)?;
                let p = mono(m)?.times(rep(v));
                if a.op == Mad {
                    let Desc::Line(c) = opnd(3, win, req)? else {
                        return None;
                    };
                    if c.b.is_some() {
                        return None;
                    }
                    p.plus(rep(c.a))
                } else {
                    p
                }
            }
            Op::Arith(a) if matches!(a.op, Mul | Mad) && a.half == Some(Half::Wide) => {
                let from = a.ty.and_then(|t| t.int_bits()).filter(|&b| b == 32)?;
                if bits != 64 {
                    return None;
                }
                let signed = a.ty.is_some_and(Ty::signed);
                let (m, v, _) = split(opnd(1, win, req)?, opnd(2, win, req)?)?;
                let m = exact(m, from, signed, win, req);
                let p = m.times(ext(v, from, signed));
                if a.op == Mad {
                    let Desc::Line(c) = opnd(3, win, req)? else {
                        return None;
                    };
                    if c.b.is_some() {
                        return None;
                    }
                    p.plus(c.a)
                } else {
                    p
                }
            }
            Op::Arith(a) if a.op == Shr => {
                let n = u32::try_from(imm(2)?).ok().filter(|&n| n < bits)?;
                let signed = a.ty.is_some_and(Ty::signed);
                exact(opnd(1, win, req)?, bits, signed, win, req).shr(n)
            }
            Op::Arith(a) if a.op == And => {
                let (x, mask) = match (imm(1), imm(2)) {
                    (None, Some(m)) => (opnd(1, win, req)?, m),
                    (Some(m), None) => (opnd(2, win, req)?, m),
                    _ => return None,
                };
                let (k, h) = monotone::low_clear_mask(mask as u64, bits)?;
                let m = if h >= bits {
                    match x {
                        // Any representatives of the line's ends keep the modular claim;
                        // the signed ones keep small negative values small.
                        Desc::Line(a) => Mono::line(Aff {
                            a: rep(a.a),
                            b: a.b.map(rep),
                            k: a.k,
                        }),
                        Desc::Mono(m) => m,
                    }
                } else {
                    // Exact in `[0, 2^h)` (which is within the unsigned reading): the mask
                    // clears nothing above the low bits.
                    let m = match x {
                        Desc::Line(a) if bits < 64 => {
                            Mono::line(self.widen(a, bits, false, t, win))
                        }
                        Desc::Line(a) => Mono::line(a),
                        Desc::Mono(m) => m,
                    };
                    req.push(Bounded {
                        m: m.clone(),
                        lo: 0,
                        hi: (1i64 << h) - 1,
                    });
                    m
                };
                m.floor(k)
            }
            Op::Arith(a) if matches!(a.op, Min | Max) => {
                let signed = a.ty.is_some_and(Ty::signed);
                let (x, v, _) = split(opnd(1, win, req)?, opnd(2, win, req)?)?;
                let m = exact(x, bits, signed, win, req);
                let v = if bits < 64 {
                    ext(v, bits, signed)
                } else {
                    let fixed = Mono::line(Aff::fixed(v.clone()));
                    req.push(fixed.read(64, signed));
                    v
                };
                if a.op == Min {
                    m.min(v)
                } else {
                    m.max(v)
                }
            }
            Op::Convert(Convert {
                to: Some(dst),
                from: Some(src),
                sat: false,
                ..
            }) => {
                let (db, sb) = (dst.int_bits()?, src.int_bits()?);
                if !matches!(db, 32 | 64) || !matches!(sb, 32 | 64) {
                    return None;
                }
                let x = opnd(1, win, req)?;
                if db <= sb {
                    mono(x)?
                } else {
                    exact(x, sb, src.signed(), win, req)
                }
            }
            _ => return None,
        })
    }

    fn trip(&self, t: &crate::ir::ExitTest) -> Option<Trip> {
        let c = self.l.ivs.get(t.iv)?;
        let wide = self.bits(&c.reg)?;
        let setp = self.f.instr(t.setp)?;
        let Op::Compare(Compare { ty: Some(ty), .. }) = setp.op else {
            return None;
        };
        let setp_bits = ty.bytes()? * 8;
        // The compared width: the counter's, or its low bits for a narrowed test (the
        // narrowing is a ring operation: the low bits step by the step's low bits).
        let bits = u32::try_from(setp_bits).ok()?;
        if bits != wide && !(t.narrowed && bits < wide) {
            return None;
        }
        let step = ext(self.step_of(&c.steps, wide)?, bits, true);
        let a = self.phase(c.update, t.reads)?;
        let operand = |b: &Bound| -> Option<Val> {
            Some(match b {
                Bound::Imm(k) => Val::Imm(i64::try_from(*k).ok()?),
                Bound::Reg(r) => {
                    if self.bits(r)? != bits || !self.defs_in_loop(r).is_empty() {
                        return None;
                    }
                    Val::Reg(r.clone(), bits)
                }
            })
        };
        let raw = operand(&t.bound)?;
        let (kind, plus, signed) = match (t.cmp, t.continue_if) {
            (Cmp::Lt, true) | (Cmp::Ge, false) => (TripKind::Up, 0, t.signed),
            (Cmp::Le, true) | (Cmp::Gt, false) => (TripKind::Up, 1, t.signed),
            (Cmp::Gt, true) | (Cmp::Le, false) => (TripKind::Down, 0, t.signed),
            (Cmp::Ge, true) | (Cmp::Lt, false) => (TripKind::Down, -1, t.signed),
            (Cmp::Ne, true) | (Cmp::Eq, false) => (TripKind::Ne, 0, true),
            _ => return None,
        };
        let raw = match (&t.offset, kind) {
            (None, _) => raw,
            (Some(k), TripKind::Ne) => sub(raw, operand(k)?),
            (Some(_), _) => return None,
        };
        let bound = add(ext(raw, bits, signed), Val::Imm(plus));
        let step_imm = match &step {
            Val::Imm(k) => Some(*k),
            _ => None,
        };
        Some(Trip {
            counter: c.reg.clone(),
            step_imm,
            own_step: bits == wide || step_imm.is_some(),
            c0: ext(Val::Reg(c.reg.clone(), wide), bits, signed),
            step,
            bound,
            a,
            kind,
            bits,
            signed,
        })
    }
}

/// Emits the prechecks: 64-bit temporaries `%__cc_h<n>`, the verdict in `%__cc_hf` (set:
/// some hoisted access may fail).
pub(crate) struct Gen {
    pub code: String,
    pub regs: u32,
    /// The values of monotone nodes this precheck computed already, by node, end, and
    /// the placement of the access (straight-line code: each stays valid to its end).
    memo: Vec<((Mono, bool, bool), String)>,
    /// Values computed already in this precheck ([`Gen::val`]), and registers tested within
    /// `LIMIT` already ([`Gen::bounded`]).
    vals: Vec<(Val, String)>,
    bounded: Vec<String>,
}

impl Gen {
    pub(crate) fn new() -> Gen {
        Gen {
            code: String::new(),
            regs: 0,
            memo: Vec::new(),
            vals: Vec::new(),
            bounded: Vec::new(),
        }
    }

    fn tmp(&mut self) -> String {
        let r = format!("%__cc_h{}", self.regs);
        self.regs += 1;
        r
    }

    fn line(&mut self, s: &str) {
        self.code.push_str(s);
        self.code.push_str("\n\t");
    }

    /// `v` in a register: computed once per precheck (straight-line code, and no register
    /// `val` returns is written again).
    fn val(&mut self, v: &Val) -> String {
        if let Some((_, d)) = self.vals.iter().find(|(w, _)| w == v) {
            return d.clone();
        }
        let d = self.value(v);
        self.vals.push((v.clone(), d.clone()));
        d
    }

    fn value(&mut self, v: &Val) -> String {
        let d = self.tmp();
        let code = match v {
            Val::Imm(k) => format!("mov.b64 {d}, {k};"),
            Val::Reg(r, 64) => format!("mov.b64 {d}, {r};"),
            Val::Reg(r, _) => format!("cvt.u64.u32 {d}, {r};"),
            Val::Special(s) => format!("mov.u32 %__cc_x, {s};\n\tcvt.u64.u32 {d}, %__cc_x;"),
            Val::Add(x, y) | Val::Sub(x, y) | Val::Mul(x, y) => {
                let (x, y) = (self.val(x), self.val(y));
                let op = match v {
                    Val::Add(..) => "add.s64",
                    Val::Sub(..) => "sub.s64",
                    _ => "mul.lo.s64",
                };
                format!("{op} {d}, {x}, {y};")
            }
            Val::Shl(x, k) => {
                let x = self.val(x);
                format!("shl.b64 {d}, {x}, {k};")
            }
            Val::Ext { v, bits, signed } => {
                let x = self.val(v);
                let sh = 64 - bits;
                if *signed {
                    format!("shl.b64 {d}, {x}, {sh};\n\tshr.s64 {d}, {d}, {sh};")
                } else {
                    format!("shl.b64 {d}, {x}, {sh};\n\tshr.u64 {d}, {d}, {sh};")
                }
            }
        };
        self.line(&code);
        d
    }

    /// `%__cc_hf |= x cmp y` (`cmp` a `setp` comparison and its type: `lt.s64`).
    fn fail_if(&mut self, cmp: &str, x: &str, y: &str) {
        let (op, ty) = cmp.split_once('.').expect("comparison.type");
        self.line(&format!("setp.{op}.or.{ty} %__cc_hf, {x}, {y}, %__cc_hf;"));
    }

    /// Fails unless the exact `v` lies in the `bits`-bit range read `signed` or not.
    fn in_range(&mut self, v: &str, bits: u32, signed: bool) {
        if bits >= 64 {
            return;
        }
        let (lo, hi) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        self.fail_if("lt.s64", v, &lo.to_string());
        self.fail_if("gt.s64", v, &hi.to_string());
    }

    /// `x * k` for a counter's advance `x` (below `2^34` in magnitude: for a counter of at
    /// most 32 bits by its width, for a 64-bit one tested so) and a small constant `k`: no
    /// overflow to check then.
    fn scaled(&mut self, x: &str, k: i64) -> String {
        if k.unsigned_abs() < 1 << 28 {
            if k == 1 {
                return x.to_string();
            }
            let p = self.tmp();
            self.line(&format!("mul.lo.s64 {p}, {x}, {k};"));
            return p;
        }
        self.product(x, &k.to_string())
    }

    /// `x * y` into a new register; fails when the product leaves 64 signed bits.
    fn product(&mut self, x: &str, y: &str) -> String {
        let (lo, hi, sign) = (self.tmp(), self.tmp(), self.tmp());
        self.line(&format!(
            "mul.lo.s64 {lo}, {x}, {y};\n\tmul.hi.s64 {hi}, {x}, {y};\n\tshr.s64 {sign}, {lo}, 63;"
        ));
        self.fail_if("ne.s64", &hi, &sign);
        lo
    }

    /// The precheck of `v`: leaves `%__cc_hf` set when some hoisted access may fail.
    /// `base(o, dst)` loads a buffer's base address; `limit(o, bytes, dst)` gives the code
    /// and operand of `max(len - bytes + 1, 0)` (the access check's own limit; in `dst` when
    /// not a constant).
    ///
    /// Two ways to the last iteration's offset (module docs): an access whose slope is `k`
    /// times the counter's step moves `k` times the counter's advance, which the exit test
    /// bounds directly (`advance`); any other needs the iteration count `J`, a division
    /// (by a constant where the step is one), computed only then.
    pub(crate) fn precheck(
        &mut self,
        v: &Versioned,
        base: &dyn Fn(&Origin, &str) -> String,
        limit: &dyn Fn(&Origin, u64, &str) -> (String, String),
    ) {
        let t = &v.trip;
        self.memo.clear();
        self.vals.clear();
        self.bounded.clear();
        self.line("mov.pred %__cc_hf, 0;");
        let c0 = self.val(&t.c0);
        let s = self.val(&t.step);
        let bound = self.val(&t.bound);
        if t.bits == 64 {
            // Entry values small enough for exact 64-bit arithmetic (module docs).
            let lim = 1i64 << 61;
            for x in [&c0, &bound] {
                self.fail_if("gt.s64", x, &lim.to_string());
                self.fail_if("lt.s64", x, &(-lim).to_string());
                if !t.signed {
                    self.fail_if("lt.s64", x, "0");
                }
            }
            self.fail_if("gt.s64", &s, &(1i64 << 32).to_string());
            self.fail_if("lt.s64", &s, &(-(1i64 << 32)).to_string());
        }
        // The counter's advance `S*j` at an access's last iteration: its end (`[0, end]` or
        // `[end, 0]`), for accesses before or after the test; and `J` where asked for.
        let mut advance: [Option<String>; 2] = [None, None];
        let mut iterations: [Option<String>; 2] = [None, None];
        // An unrolled loop (a step of several registers: a grid-stride loop's) reads ahead of its counter, which the counter's advance bounds only loosely (by the
        // bound plus the unrolled strides); its exact last iteration is one division away.
        let unrolled = matches!(t.step, Val::Add(..));
        let needs_j = unrolled
            || v.hoisted.iter().any(|h| {
                h.k.is_none()
                    || h.windows.iter().any(|w| w.k.is_none())
                    || h.mono.as_ref().is_some_and(Mono::needs_j)
                    || h.req.iter().any(|r| r.m.needs_j())
            });
        match t.kind {
            TripKind::Up | TripKind::Down => {
                let up = t.kind == TripKind::Up;
                // d: the step's magnitude in the loop's direction.
                let d = if up {
                    s.clone()
                } else {
                    let d = self.tmp();
                    self.line(&format!("neg.s64 {d}, {s};"));
                    d
                };
                match t.step_imm {
                    Some(k) if k != 0 && (k > 0) == up => {}
                    _ => self.fail_if("le.s64", &d, "0"),
                }
                let first = if t.a == 0 {
                    c0.clone()
                } else {
                    let f = self.tmp();
                    self.line(&format!("add.s64 {f}, {c0}, {s};"));
                    f
                };
                // Every tested value lies between the first and the first past the bound
                // (`B - 1 + S` going up, `B + 1 + S` going down): both in the range.
                let past = self.tmp();
                let one = if up { -1 } else { 1 };
                self.line(&format!("add.s64 {past}, {bound}, {one};"));
                self.line(&format!("add.s64 {past}, {past}, {s};"));
                for x in [&first, &past] {
                    self.in_range(x, t.bits, t.signed);
                    if t.bits == 64 && !t.signed {
                        self.fail_if("lt.s64", x, "0");
                    }
                }
                // The advance before the last test that went on is within `B - 1 - c0`
                // (going up; `c0 - B - 1` down), clamped at 0; an access before a test that
                // reads the counter before its update may see one step more.
                let dist = self.tmp();
                if up {
                    self.line(&format!(
                        "sub.s64 {dist}, {bound}, {c0};\n\tadd.s64 {dist}, {dist}, -1;"
                    ));
                } else {
                    self.line(&format!(
                        "sub.s64 {dist}, {c0}, {bound};\n\tadd.s64 {dist}, {dist}, -1;"
                    ));
                }
                for after in [false, true] {
                    if !v.hoisted.iter().any(|h| h.after_test == after) {
                        continue;
                    }
                    let m = self.tmp();
                    if t.a == 0 && !after {
                        self.line(&format!(
                            "add.s64 {m}, {dist}, {d};\n\tmax.s64 {m}, {m}, 0;"
                        ));
                    } else {
                        self.line(&format!("max.s64 {m}, {dist}, 0;"));
                    }
                    if !up {
                        self.line(&format!("neg.s64 {m}, {m};"));
                    }
                    advance[usize::from(after)] = Some(m);
                }
                if needs_j {
                    let (q, j) = (self.tmp(), self.tmp());
                    if up {
                        self.line(&format!("sub.s64 {q}, {bound}, {first};"));
                    } else {
                        self.line(&format!("sub.s64 {q}, {first}, {bound};"));
                    }
                    match t.step_imm {
                        Some(k) => {
                            let k = k.unsigned_abs();
                            self.line(&format!(
                                "add.s64 {q}, {q}, {};\n\tmax.s64 {q}, {q}, 0;\n\tdiv.u64 {j}, {q}, {k};",
                                k - 1
                            ));
                        }
                        None => {
                            // A register step: a 32-bit division (both fit, else fail).
                            self.line(&format!(
                                "add.s64 {q}, {q}, {d};\n\tadd.s64 {q}, {q}, -1;\n\tmax.s64 {q}, {q}, 0;"
                            ));
                            let big = ((1u64 << 32) - 1).to_string();
                            self.fail_if("gt.u64", &q, &big);
                            self.fail_if("gt.u64", &d, &big);
                            self.line(&format!(
                                "cvt.u32.u64 %__cc_x, {q};\n\tcvt.u32.u64 %__cc_y, {d};\n\tmax.u32 %__cc_y, %__cc_y, 1;\n\tdiv.u32 %__cc_x, %__cc_x, %__cc_y;\n\tcvt.u64.u32 {j}, %__cc_x;"
                            ));
                        }
                    }
                    iterations = self.per_test(&j, v);
                    // With the last iterations at hand, the counter's advance there exactly:
                    // `S*J` (`|S| <= 2^32`, `J <= 2^30`: no overflow), no looser than the
                    // bound above and tighter where an unrolled loop reads ahead.
                    for (adv, ja) in advance.iter_mut().zip(&iterations) {
                        if let (Some(_), Some(ja)) = (adv.as_ref(), ja) {
                            let m = self.tmp();
                            self.line(&format!("mul.lo.s64 {m}, {ja}, {s};"));
                            *adv = Some(m);
                        }
                    }
                }
            }
            TripKind::Ne => {
                // `J + a = (B - c0) / S`, exactly.
                let (q, j) = (self.tmp(), self.tmp());
                self.line(&format!("sub.s64 {q}, {bound}, {c0};"));
                match t.step_imm {
                    Some(1) => self.line(&format!("mov.b64 {j}, {q};")),
                    Some(-1) => self.line(&format!("neg.s64 {j}, {q};")),
                    Some(0) => self.fail_if("eq.s64", &q, &q),
                    Some(k) => {
                        let r = self.tmp();
                        self.line(&format!("rem.s64 {r}, {q}, {k};\n\tdiv.s64 {j}, {q}, {k};"));
                        self.fail_if("ne.s64", &r, "0");
                    }
                    None => {
                        self.fail_if("eq.s64", &s, "0");
                        let (div, r) = (self.tmp(), self.tmp());
                        self.line(&format!(
                            "setp.eq.s64 %__cc_q, {s}, 0;\n\tselp.b64 {div}, 1, {s}, %__cc_q;"
                        ));
                        self.line(&format!(
                            "rem.s64 {r}, {q}, {div};\n\tdiv.s64 {j}, {q}, {div};"
                        ));
                        self.fail_if("ne.s64", &r, "0");
                    }
                }
                self.line(&format!("sub.s64 {j}, {j}, {};", t.a));
                self.fail_if("lt.s64", &j, "0");
                iterations = self.per_test(&j, v);
                for after in [false, true] {
                    if let Some(ja) = iterations[usize::from(after)].clone() {
                        let m = self.tmp();
                        self.line(&format!("mul.lo.s64 {m}, {ja}, {s};"));
                        advance[usize::from(after)] = Some(m);
                    }
                }
            }
        }
        // A 64-bit counter's advance within `2^34` too, as a narrower one's is by its
        // width, so that its multiples by constants need no overflow test (`scaled`).
        if t.bits == 64 {
            let lim = 1i64 << 34;
            for m in advance.iter().flatten() {
                self.fail_if("gt.s64", m, &lim.to_string());
                self.fail_if("lt.s64", m, &(-lim).to_string());
            }
        }
        for h in &v.hoisted {
            let at = usize::from(h.after_test);
            // `b*j` at the last iteration: for a slope `k` times the counter's, through the
            // counter's advance; else through the iteration count.
            let term = |g: &mut Gen, b: &Val, k: Option<i64>| -> String {
                match k {
                    Some(k) => {
                        let m = advance[at]
                            .clone()
                            .expect("advance computed for every access");
                        g.scaled(&m, k)
                    }
                    None => {
                        let j = iterations[at]
                            .clone()
                            .expect("J computed where a slope needs it");
                        let b = g.val(b);
                        g.product(&b, &j)
                    }
                }
            };
            // `a + b*j` at the last iteration.
            let end = |g: &mut Gen, a: &str, b: &Val, k: Option<i64>| -> String {
                let p = term(g, b, k);
                let e = g.tmp();
                g.line(&format!("add.s64 {e}, {a}, {p};"));
                e
            };
            for w in &h.windows {
                let a = self.val(&w.a);
                let e = end(self, &a, &w.b, w.k);
                self.in_range(&e, w.bits, w.signed);
            }
            if let Some(m) = &h.mono {
                self.monotone(h, m, &term, base, limit);
                continue;
            }
            let start = self.val(&add(h.base.clone(), Val::Imm(h.lo)));
            let (b, l) = (self.tmp(), self.tmp());
            self.code.push_str(&base(&h.origin, &b));
            let (code, lim) = limit(&h.origin, (h.hi - h.lo) as u64, &l);
            self.code.push_str(&code);
            let o0 = self.tmp();
            self.line(&format!("sub.s64 {o0}, {start}, {b};"));
            self.fail_if("ge.u64", &o0, &lim);
            let oj = end(self, &o0, &h.step, h.k);
            self.fail_if("ge.u64", &oj, &lim);
            if h.align > 0 {
                let step = self.val(&h.step);
                let m = self.tmp();
                self.line(&format!(
                    "or.b64 {m}, {start}, {step};\n\tand.b64 {m}, {m}, {};",
                    h.align - 1
                ));
                self.fail_if("ne.u64", &m, "0");
            }
        }
    }

    /// The precheck of a hoisted access whose address is monotone in the iteration
    /// (`monotone.rs`): its requirements, then its offsets at the first and the last
    /// iteration, each tested as the access's own check would. `term` is `b*j` of a line at
    /// the access's last iteration.
    fn monotone(
        &mut self,
        h: &Hoisted,
        m: &Mono,
        term: &dyn Fn(&mut Gen, &Val, Option<i64>) -> String,
        base: &dyn Fn(&Origin, &str) -> String,
        limit: &dyn Fn(&Origin, u64, &str) -> (String, String),
    ) {
        // The line's lowest and highest value over every member and iteration, which
        // bracket every value it takes; the tree, monotone in it, is evaluated at both
        // (module docs of `monotone.rs`), in place of the first and the last iteration.
        let seeded = self.memo.len();
        if let Some(leaf) = m.leaf().filter(|_| !h.starts.is_empty()) {
            let b = leaf.b.as_ref().expect("a leaf has a slope");
            let p = term(self, b, leaf.k);
            if !leaf.k.is_some_and(|k| k.abs() < 1 << 28) {
                self.bounded(&p);
            }
            let (lo, hi) = (self.tmp(), self.tmp());
            self.line(&format!("min.s64 {lo}, {p}, 0;\n\tmax.s64 {hi}, {p}, 0;"));
            let (mut a_lo, mut a_hi) = (None::<String>, None::<String>);
            for a in &h.starts {
                let x = self.val(a);
                self.bounded(&x);
                for (acc, op) in [(&mut a_lo, "min"), (&mut a_hi, "max")] {
                    *acc = Some(match acc.take() {
                        None => x.clone(),
                        Some(y) => {
                            let e = self.tmp();
                            self.line(&format!("{op}.s64 {e}, {y}, {x};"));
                            e
                        }
                    });
                }
            }
            let (a_lo, a_hi) = (a_lo.expect("a start"), a_hi.expect("a start"));
            self.line(&format!(
                "add.s64 {lo}, {lo}, {a_lo};\n\tadd.s64 {hi}, {hi}, {a_hi};"
            ));
            let line = Mono::line(leaf.clone());
            self.memo.push(((line.clone(), false, h.after_test), lo));
            self.memo.push(((line, true, h.after_test), hi));
        }
        for last in [false, true] {
            for r in &h.req {
                let x = self.mono_at(&r.m, last, h.after_test, &h.req, term);
                self.fail_if("lt.s64", &x, &r.lo.to_string());
                self.fail_if("gt.s64", &x, &r.hi.to_string());
            }
        }
        let (b, l) = (self.tmp(), self.tmp());
        self.code.push_str(&base(&h.origin, &b));
        self.bounded(&b);
        let (code, lim) = limit(&h.origin, (h.hi - h.lo) as u64, &l);
        self.code.push_str(&code);
        for last in [false, true] {
            let e = self.mono_at(m, last, h.after_test, &h.req, term);
            if !monotone::within_limit(m, &h.req) {
                self.bounded(&e);
            }
            // The first byte, within `LIMIT` as the base is: their difference is exact (or
            // `2^63`, which reads as past every limit).
            let start = if h.lo == 0 {
                e
            } else {
                let x = self.tmp();
                self.line(&format!("add.s64 {x}, {e}, {};", h.lo));
                self.bounded(&x);
                x
            };
            let o = self.tmp();
            self.line(&format!("sub.s64 {o}, {start}, {b};"));
            self.fail_if("ge.u64", &o, &lim);
        }
        // What was computed from the seeded line serves this access only.
        self.memo.truncate(seeded);
    }

    /// Fails unless `x` lies in `[-LIMIT, LIMIT]` (`monotone.rs`: sums of two such values
    /// are exact).
    fn bounded(&mut self, x: &str) {
        if self.bounded.iter().any(|b| b == x) {
            return;
        }
        self.bounded.push(x.to_string());
        self.fail_if("lt.s64", x, &(-monotone::LIMIT).to_string());
        self.fail_if("gt.s64", x, &monotone::LIMIT.to_string());
    }

    /// `m` at the first iteration, or at the access's last (`term` as in [`Gen::monotone`]),
    /// exactly (in 64 signed bits): every operand of a sum kept within `LIMIT` and every
    /// product tested for overflow, or the precheck fails.
    fn mono_at(
        &mut self,
        m: &Mono,
        last: bool,
        after: bool,
        req: &[Bounded],
        term: &dyn Fn(&mut Gen, &Val, Option<i64>) -> String,
    ) -> String {
        let key = (m.clone(), last, after);
        if let Some((_, d)) = self.memo.iter().find(|(k, _)| *k == key) {
            return d.clone();
        }
        let d = self.mono_node(m, last, after, req, term);
        self.memo.push((key, d.clone()));
        d
    }

    fn mono_node(
        &mut self,
        m: &Mono,
        last: bool,
        after: bool,
        req: &[Bounded],
        term: &dyn Fn(&mut Gen, &Val, Option<i64>) -> String,
    ) -> String {
        // Each value is exact in 64 signed bits: the operands of a sum within `LIMIT`
        // (tested, unless the requirements, tested on their exact values, keep them there),
        // products tested for overflow.
        let sum = |g: &mut Gen, x: (&str, bool), y: (&str, bool), op: &str| {
            for (v, known) in [x, y] {
                if !known {
                    g.bounded(v);
                }
            }
            let e = g.tmp();
            g.line(&format!("{op}.s64 {e}, {}, {};", x.0, y.0));
            e
        };
        let within = |x: &Mono| monotone::within_limit(x, req);
        match m {
            Mono::Line(a) => {
                let x = self.val(&a.a);
                match (&a.b, last) {
                    // `k` times an advance below `2^34` (`scaled`): below `2^62`.
                    (Some(b), true) => {
                        let p = term(self, b, a.k);
                        sum(
                            self,
                            (&x, false),
                            (&p, a.k.is_some_and(|k| k.abs() < 1 << 28)),
                            "add",
                        )
                    }
                    _ => x,
                }
            }
            Mono::Plus(x, v) => {
                let e = self.mono_at(x, last, after, req, term);
                let y = self.val(v);
                sum(self, (&e, within(x)), (&y, false), "add")
            }
            Mono::Minus(v, x) => {
                let e = self.mono_at(x, last, after, req, term);
                let y = self.val(v);
                sum(self, (&y, false), (&e, within(x)), "sub")
            }
            Mono::Times(x, v) => {
                let x = self.mono_at(x, last, after, req, term);
                let y = self.val(v);
                self.product(&x, &y)
            }
            Mono::Shr(x, k) => {
                let x = self.mono_at(x, last, after, req, term);
                let e = self.tmp();
                self.line(&format!("shr.s64 {e}, {x}, {k};"));
                e
            }
            Mono::Floor(x, k) => {
                let x = self.mono_at(x, last, after, req, term);
                let e = self.tmp();
                self.line(&format!("and.b64 {e}, {x}, {};", !((1i64 << k) - 1)));
                e
            }
            Mono::Min(x, v) | Mono::Max(x, v) => {
                let x = self.mono_at(x, last, after, req, term);
                let y = self.val(v);
                let e = self.tmp();
                let op = if matches!(m, Mono::Min(..)) {
                    "min"
                } else {
                    "max"
                };
                self.line(&format!("{op}.s64 {e}, {x}, {y};"));
                e
            }
        }
    }

    /// `J` and `max(J - 1, 0)` (the last iteration of an access before the exit test, and of
    /// one after it), where some hoisted access is so placed; fails past `2^30`.
    fn per_test(&mut self, j: &str, v: &Versioned) -> [Option<String>; 2] {
        self.fail_if("gt.u64", j, &(1i64 << 30).to_string());
        let mut out = [None, None];
        if v.hoisted.iter().any(|h| !h.after_test) {
            out[0] = Some(j.to_string());
        }
        if v.hoisted.iter().any(|h| h.after_test) {
            let j1 = self.tmp();
            self.line(&format!("sub.s64 {j1}, {j}, 1;\n\tmax.s64 {j1}, {j1}, 0;"));
            out[1] = Some(j1);
        }
        out
    }
}

/// Whether the instruction names the local space: a local access (`ld.local`), a conversion
/// of a local address (`cvta.local`), or another opcode naming it (`prefetch.local`,
/// `alloca.local`).
fn names_local(op: &Op) -> bool {
    op.space() == Some(Space::Local)
}

#[cfg(test)]
mod tests {
    //! The precheck against the loop it covers, both run by a small PTX interpreter: for
    //! thousands of entry values (near the 32-bit wrap, empty and one-trip loops, steps that
    //! never reach the bound), whenever the precheck lets the fast copy run, every address
    //! the loop touches is inside the buffer.
    use super::*;
    use crate::ir::read::{parse, Instr};
    use std::collections::HashMap;

    fn plan_of(f: &Function, c: &BTreeMap<(usize, usize), Candidate>) -> Vec<Versioned> {
        plan(&crate::ir::Facts::new(f), c)
    }

    fn is_load(i: &Instr) -> bool {
        matches!(i.op, Op::Mem(m) if m.op == crate::ir::MemOp::Ld)
    }

    /// A tiny interpreter for the instructions the fixtures and the precheck use.
    struct Machine<'a> {
        f: &'a Function,
        regs: HashMap<String, u64>,
        preds: HashMap<String, bool>,
    }

    /// `v` read as a value of type `ty` (64 bits without one).
    fn read(v: u64, ty: Option<Ty>) -> i128 {
        let w = ty.and_then(Ty::bytes).map_or(64, |b| b * 8);
        let m = if w == 64 { v } else { v & ((1u64 << w) - 1) };
        if ty.is_some_and(Ty::signed) {
            let sh = 64 - w;
            i128::from(((m << sh) as i64) >> sh)
        } else {
            i128::from(m)
        }
    }

    impl Machine<'_> {
        fn val(&self, op: &str) -> u64 {
            let op = op.trim();
            if let Some(v) = crate::ir::immediate(op) {
                return v as u64;
            }
            *self
                .regs
                .get(op)
                .unwrap_or_else(|| panic!("register {op} read before written"))
        }

        fn set(&mut self, d: &str, v: u64) {
            let w = self
                .f
                .reg_type(d)
                .and_then(super::super::ptx::type_bytes)
                .map_or(64, |b| b * 8);
            let v = if w >= 64 { v } else { v & ((1u64 << w) - 1) };
            self.regs.insert(d.to_string(), v);
        }

        fn pred(&self, p: &str) -> bool {
            match p.trim().strip_prefix('!') {
                Some(q) => !self.preds[q],
                None => self.preds[p.trim()],
            }
        }

        /// Runs one instruction; `Some(label)` for a taken branch, the address of a load.
        fn step(&mut self, i: &Instr, loads: &mut Vec<u64>) -> Option<String> {
            if let Some(g) = &i.guard {
                if self.preds[g.pred.as_str()] == g.negated {
                    return None;
                }
            }
            let o = &i.operands;
            let v = |k: usize| self.val(&o[k]);
            use ArithOp::*;
            match i.op {
                Op::Branch { .. } => return Some(o[0].trim().to_string()),
                Op::Mem(m) if m.op == crate::ir::MemOp::Ld => {
                    let a = Address::parse(&o[1]).unwrap();
                    let addr = self.val(a.base).wrapping_add(a.offset as u64);
                    loads.push(addr);
                    self.set(&o[0], 0);
                }
                Op::Mov(Some(Ty::Pred)) => {
                    self.preds.insert(o[0].clone(), v(1) != 0);
                }
                Op::Mov(_) => {
                    let x = v(1);
                    self.set(&o[0], x);
                }
                Op::Arith(a) if !a.carry_in => {
                    let ty = a.ty;
                    let r = match a.op {
                        Add => v(1).wrapping_add(v(2)),
                        Sub => v(1).wrapping_sub(v(2)),
                        Neg => 0u64.wrapping_sub(v(1)),
                        Shl => v(1).wrapping_shl(v(2) as u32),
                        Shr => (read(v(1), ty) >> v(2)) as u64,
                        And => v(1) & v(2),
                        Or => v(1) | v(2),
                        Max => read(v(1), ty).max(read(v(2), ty)) as u64,
                        Min => read(v(1), ty).min(read(v(2), ty)) as u64,
                        Mul | Mad => {
                            // The operands read as the type says (`.wide` widens them so);
                            // `.lo` keeps the low bits whatever the reading.
                            let p = read(v(1), ty) * read(v(2), ty);
                            let r = match a.half {
                                Some(Half::Hi) => (p >> 64) as u64,
                                _ => p as u64,
                            };
                            if a.op == Mad {
                                r.wrapping_add(v(3))
                            } else {
                                r
                            }
                        }
                        Div | Rem => {
                            let (x, y) = (read(v(1), ty), read(v(2), ty));
                            assert_ne!(y, 0, "division by zero in {i:?}");
                            (if a.op == Div { x / y } else { x % y }) as u64
                        }
                        op => panic!("the interpreter does not know {op:?}: {i:?}"),
                    };
                    self.set(&o[0], r);
                }
                Op::Convert(c) => {
                    let x = read(v(1), c.from);
                    self.set(&o[0], x as u64);
                }
                Op::Select(_) => {
                    let x = if self.pred(&o[3]) { v(1) } else { v(2) };
                    self.set(&o[0], x);
                }
                Op::Compare(Compare {
                    value: false,
                    cmp: Some(cmp),
                    ty,
                    combine,
                }) => {
                    let (a, b) = (read(v(1), ty), read(v(2), ty));
                    let mut r = match Cmp::of_cmp_op(cmp).unwrap() {
                        Cmp::Lt => a < b,
                        Cmp::Le => a <= b,
                        Cmp::Gt => a > b,
                        Cmp::Ge => a >= b,
                        Cmp::Eq => a == b,
                        Cmp::Ne => a != b,
                    };
                    if combine == Some(Or) {
                        r |= self.pred(&o[3]);
                    }
                    self.preds.insert(o[0].clone(), r);
                }
                op => panic!("the interpreter does not know {op:?}: {i:?}"),
            }
            None
        }
    }

    /// Runs the statements of `code` (a PTX fragment over `f`'s registers) straight through.
    fn run_code(f: &Function, code: &Function, regs: &HashMap<String, u64>) -> bool {
        let mut mach = Machine {
            f,
            regs: regs.clone(),
            preds: HashMap::new(),
        };
        let mut none = Vec::new();
        for s in &code.stmts {
            if let StmtKind::Instr(i) = &s.kind {
                match i.op {
                    Op::Return => break,
                    Op::Branch { .. } => continue,
                    _ => {}
                }
                mach.step(i, &mut none);
            }
        }
        mach.preds["%__cc_hf"]
    }

    /// Runs `f` from the loop's header with `regs` until it leaves the loop (or `cap`
    /// iterations pass): the addresses it loads.
    fn run_loop(
        f: &Function,
        v: &Versioned,
        regs: &HashMap<String, u64>,
        cap: usize,
    ) -> (Vec<u64>, bool) {
        let mut m = Machine {
            f,
            regs: regs.clone(),
            preds: HashMap::new(),
        };
        let mut loads = Vec::new();
        let mut k = v.first;
        let mut steps = 0;
        while (v.first..=v.last).contains(&k) {
            steps += 1;
            if steps > cap {
                return (loads, false);
            }
            if let StmtKind::Instr(i) = &f.stmts[k].kind {
                if let Some(label) = m.step(i, &mut loads) {
                    k = f
                        .stmts
                        .iter()
                        .position(|s| matches!(&s.kind, StmtKind::Label(l) if *l == label))
                        .unwrap();
                    continue;
                }
            }
            k += 1;
        }
        (loads, true)
    }

    fn function(body: &str) -> Function {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 k_param_0)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<40>;\n\t.reg .b64 %rd<40>;\n\t.reg .f32 %f<8>;\n{body}\n}}\n"
        );
        parse(&text).unwrap().functions.remove(0)
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Near one of the interesting values: 0, +-2^31, 2^32, the buffer's end in elements
        /// of 4, 16 or 128 bytes (`len` bytes), small.
        fn int(&mut self, len: u64) -> i64 {
            let small = (self.next() % 41) as i64 - 20;
            let tiny = (self.next() % 5) as i64 - 2;
            const STEPS: [i64; 8] = [1, 1, 2, 3, 4, -1, -4, 32];
            match self.next() % 10 {
                0 => small,
                1 => (1i64 << 31) + small,
                2 => -(1i64 << 31) + small,
                3 => (1i64 << 32) + small,
                4 | 5 => (len / 4) as i64 + tiny,
                6 => (len / 16) as i64 + tiny,
                7 => (len / 128) as i64 + tiny,
                8 => STEPS[(self.next() % 8) as usize],
                _ => (self.next() % 3000) as i64 - 1000,
            }
        }
    }

    /// Every load of `f` as a candidate, 4 bytes from parameter 0.
    fn loads(f: &Function) -> BTreeMap<(usize, usize), Candidate> {
        let origin = Origin::Param {
            index: 0,
            offset: 0,
            space: super::super::ptx::Space::Global,
        };
        f.stmts
            .iter()
            .enumerate()
            .filter_map(|(k, s)| match &s.kind {
                StmtKind::Instr(i) if is_load(i) => {
                    let operand = i.operands.iter().position(|o| o.contains('['))?;
                    Some((k, operand))
                }
                _ => None,
            })
            .map(|key| {
                let c = Candidate {
                    origin: origin.clone(),
                    bytes: 4,
                    group: None,
                    redirected: false,
                };
                (key, c)
            })
            .collect()
    }

    /// What [`soundness`] found over its entry states.
    struct Outcome {
        /// Entries the precheck let run the fast loop.
        fast: usize,
        /// Entries it refused whose loop would have faulted.
        caught: usize,
        /// Of `fast`, those whose loop read below the pointer `%rd30` (inside the allocation).
        below_pointer: usize,
        /// Entries whose loop ended reading only inside the buffer, some below the pointer:
        /// those `below_pointer` may count.
        in_bounds_below_pointer: usize,
        /// The precheck.
        code: String,
    }

    /// Checks the precheck against the loop for `n` random entry states of the registers
    /// `inputs` (and `ptrs`, near the pointer), with the load's pointer at `%rd30` and `len`
    /// bytes from there to the end of its buffer, which starts `below` bytes before it
    /// (`%rd29`, the base the precheck measures from, as an allocation's start
    /// passed for a view: `InstrumentOptions::alloc_bases`).
    fn soundness(
        body: &str,
        inputs: &[&str],
        ptrs: &[&str],
        n: usize,
        seed: u64,
        below: u64,
    ) -> Outcome {
        let f = function(body);
        let c = loads(&f);
        let vs = plan_of(&f, &c);
        assert_eq!(vs.len(), 1, "the loop is versioned: {body}");
        let v = &vs[0];
        let mut g = Gen::new();
        g.precheck(
            v,
            &|_, d| format!("mov.b64 {d}, %rd29;\n\t"),
            &|_, bytes, d| {
                let code = format!(
                    "sub.s64 {d}, %rd31, {};\n\tmax.s64 {d}, {d}, 0;\n\t",
                    bytes - 1
                );
                (code, d.to_string())
            },
        );
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry p()\n{{\n\t{}\n\tret;\n}}\n",
            g.code
        );
        let code = parse(&text).unwrap().functions.remove(0);
        let mut rng = Rng(seed);
        let (mut fast, mut caught, mut below_pointer, mut in_bounds_below_pointer) = (0, 0, 0, 0);
        for _ in 0..n {
            let mut regs = HashMap::new();
            let ptr = 1u64 << 40;
            let base = ptr - below;
            // Entry values near the end of the bytes from the pointer on, as without an
            // allocation below it.
            let from_ptr = rng.next() % 4000;
            let len = from_ptr + below;
            for r in inputs {
                regs.insert(r.to_string(), rng.int(from_ptr) as u64);
            }
            for r in ptrs {
                let off = (rng.next() % 1200) as i64 - 100;
                regs.insert(r.to_string(), ptr.wrapping_add((off & !3) as u64));
            }
            regs.insert("%rd29".into(), base);
            regs.insert("%rd30".into(), ptr);
            regs.insert("%rd31".into(), len);
            // Registers are their width's bits.
            let mut m = Machine {
                f: &f,
                regs: HashMap::new(),
                preds: HashMap::new(),
            };
            for (r, x) in &regs {
                m.set(r, *x);
            }
            let regs = m.regs;
            let fails = run_code(&f, &code, &regs);
            let (loads, ended) = run_loop(&f, v, &regs, 4_000);
            let inside = |a: &u64| a.wrapping_sub(base).saturating_add(4) <= len;
            if ended && loads.iter().all(inside) && loads.iter().any(|&a| a < ptr) {
                in_bounds_below_pointer += 1;
            }
            if !fails {
                fast += 1;
                below_pointer += usize::from(loads.iter().any(|&a| a < ptr));
                for a in loads {
                    let o = a.wrapping_sub(base);
                    assert!(
                        o.saturating_add(4) <= len,
                        "precheck passed but offset {o} of {len} bytes is loaded: {regs:?}\n{}",
                        g.code
                    );
                }
            } else if loads
                .iter()
                .any(|a| a.wrapping_sub(base).saturating_add(4) > len)
            {
                caught += 1;
            }
        }
        Outcome {
            fast,
            caught,
            below_pointer,
            in_bounds_below_pointer,
            code: g.code,
        }
    }

    const UP_BY_REGISTER: &str = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	ld.global.f32 %f1, [%rd5];
	add.s64 %rd5, %rd5, %rd3;
	add.s32 %r5, %r5, %r3;
	setp.lt.s32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_2;
	ret;";

    /// `divides`: the precheck needs the iteration count (a division), rather than bounding
    /// every access by the counter's advance. Each loop is checked twice: against a buffer
    /// that starts at the pointer, and against an allocation that starts 256 bytes before it
    /// (a view's, `InstrumentOptions::alloc_bases`), where reads below the pointer are in
    /// bounds down to the allocation's start and no further.
    fn sound(body: &str, inputs: &[&str], ptrs: &[&str], divides: bool) {
        for below in [0, 256] {
            let o = soundness(body, inputs, ptrs, 2000, 0x5eed, below);
            assert_eq!(o.code.contains("div."), divides, "{}", o.code);
            let (fast, caught, under) = (o.fast, o.caught, o.below_pointer);
            let could = o.in_bounds_below_pointer;
            println!(
                "{below} bytes below: fast {fast}, caught {caught}, below the pointer {under} of {could}"
            );
            // Neither side is empty: the precheck passes good entries and the loop would fault
            // for some it refuses.
            assert!(fast >= 25 && caught >= 25, "fast {fast}, caught {caught}");
            // Where loops read below the pointer inside the allocation, the precheck passes
            // most (one measuring from the pointer would pass none).
            assert!(
                2 * under >= could,
                "{under} of {could} loops reading below the pointer"
            );
            if below == 0 {
                assert_eq!(could, 0, "a buffer starting at the pointer");
            }
        }
    }

    #[test]
    fn short_loops_are_left_to_their_checks() {
        // A remainder loop (at most `m` iterations from `x & m`), a loop from one constant
        // to another, and a loop of redirected atomics alone: versioned only when the
        // precheck can pay.
        let loop_named = |label: &str, init: &str, bound: &str, step: &str| {
            function(&format!(
                "
	{init}
{label}:
	ld.global.f32 %f1, [%rd5];
	add.s64 %rd5, %rd5, 4;
	add.s32 %r5, %r5, {step};
	setp.ne.s32 %p2, %r5, {bound};
	@%p2 bra {label};
	ret;"
            ))
        };
        let loop_from =
            |init: &str, bound: &str, step: &str| loop_named("$L__BB0_2", init, bound, step);
        let versioned_if = |f: &Function, redirected: bool| {
            let load = f
                .stmts
                .iter()
                .position(|s| matches!(&s.kind, StmtKind::Instr(i) if is_load(i)))
                .unwrap();
            let c: BTreeMap<(usize, usize), Candidate> = [(
                (load, 1),
                Candidate {
                    origin: Origin::Param {
                        index: 0,
                        offset: 0,
                        space: super::super::ptx::Space::Global,
                    },
                    bytes: 4,
                    group: None,
                    redirected,
                },
            )]
            .into();
            !plan_of(f, &c).is_empty()
        };
        let versioned = |f: &Function| versioned_if(f, false);
        assert!(!versioned(&loop_from("and.b32 %r5, %r9, 3;", "0", "-1")));
        assert!(versioned(&loop_from("and.b32 %r5, %r9, 255;", "0", "-1")));
        assert!(!versioned(&loop_from("mov.u32 %r5, 0;", "8", "1")));
        assert!(versioned(&loop_from("mov.u32 %r5, 0;", "1024", "1")));
        assert!(versioned(&loop_from("mov.u32 %r5, %r9;", "0", "-1")));
        // A hand-written label (inline assembly's) serves as well: the copy's labels are
        // renamed where the reader finds them (`ir::edit::relabel`).
        assert!(versioned(&loop_named(
            "LOOP",
            "mov.u32 %r5, 0;",
            "1024",
            "1"
        )));
        // A loop whose only candidate is an atomic redirected to the sink keeps its check.
        assert!(!versioned_if(
            &loop_from("and.b32 %r5, %r9, 255;", "0", "-1"),
            true
        ));
    }

    #[test]
    fn local_memory_is_named_by_accesses_conversions_and_other_opcodes() {
        let f = function(
            "ld.local.u32 %r1, [%rd1];\n\tcvta.to.local.u64 %rd2, %rd1;\n\t\
             prefetch.local.L1 [%rd1];\n\tld.global.u32 %r2, [%rd1];\n\t\
             isspacep.shared %p1, %rd1;",
        );
        let named: Vec<bool> = f.instrs().map(|i| names_local(&i.op)).collect();
        assert_eq!(named, [true, true, true, false, false]);
    }

    #[test]
    fn a_pointer_stepped_by_a_register_up_to_a_signed_bound() {
        sound(
            UP_BY_REGISTER,
            &["%rd3", "%r5", "%r3", "%r4"],
            &["%rd5"],
            true,
        );
    }

    #[test]
    fn a_pointer_stepped_by_a_register_beside_a_counter_stepped_by_four() {
        // An unrolled loop's main part: the iteration count is a division by the constant.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_8:
	ld.global.f32 %f1, [%rd40];
	add.s64 %rd40, %rd40, %rd10;
	add.s64 %rd39, %rd39, 4;
	cvt.u32.u64 %r18, %rd39;
	setp.lt.s32 %p8, %r18, %r4;
	@%p8 bra $L__BB0_8;
	ret;";
        sound(body, &["%rd10", "%rd39", "%r4"], &["%rd40"], true);
    }

    #[test]
    fn a_remainder_loop_counting_down_to_zero() {
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_3:
	ld.global.f32 %f1, [%rd20];
	add.s32 %r41, %r41, 32;
	add.s64 %rd20, %rd20, 128;
	add.s32 %r40, %r40, -1;
	setp.ne.s32 %p3, %r40, 0;
	@%p3 bra $L__BB0_3;
	ret;";
        sound(body, &["%r40", "%r41"], &["%rd20"], false);
    }

    #[test]
    fn an_index_widened_from_32_bits_every_iteration() {
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	mad.lo.s32 %r6, %r5, %r7, %r8;
	mul.wide.s32 %rd6, %r6, 4;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s32 %r5, %r5, 1;
	setp.lt.s32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%r5", "%r7", "%r8", "%r4"], &[], true);
    }

    #[test]
    fn a_64_bit_counter_tested_through_its_low_half() {
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	ld.global.f32 %f1, [%rd5];
	add.s64 %rd5, %rd5, 16;
	add.s64 %rd9, %rd9, 4;
	cvt.u32.u64 %r18, %rd9;
	setp.lt.s32 %p2, %r18, %r4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%rd9", "%r4"], &["%rd5"], false);
    }

    #[test]
    fn an_unsigned_count_down_by_three() {
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	mul.wide.u32 %rd6, %r5, 4;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s32 %r5, %r5, -3;
	setp.hi.u32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%r5", "%r4"], &[], false);
    }

    #[test]
    fn a_loop_tested_at_the_top_reads_after_its_test() {
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	setp.ge.s32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_9;
	mul.wide.s32 %rd6, %r5, 4;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s32 %r5, %r5, %r3;
	bra.uni $L__BB0_2;
$L__BB0_9:
	ret;";
        sound(body, &["%r5", "%r4", "%r3"], &[], false);
    }

    #[test]
    fn a_64_bit_grid_stride_loop() {
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	shl.b64 %rd6, %rd9, 2;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s64 %rd9, %rd9, %rd3;
	setp.lt.s64 %p2, %rd9, %rd4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%rd9", "%rd3", "%rd4"], &[], false);
    }

    #[test]
    fn a_mask_word_of_a_64_bit_grid_stride_counter() {
        // `mask[i >> 5]` as NVVM writes it: the byte offset `(i >> 3) & ~3`, high bits
        // cleared too: monotone, not affine.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	shr.u64 %rd6, %rd9, 3;
	and.b64 %rd7, %rd6, 2305843009213693948;
	add.s64 %rd8, %rd30, %rd7;
	ld.global.u32 %r2, [%rd8];
	add.s64 %rd9, %rd9, %rd3;
	setp.lt.s64 %p2, %rd9, %rd4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%rd9", "%rd3", "%rd4"], &[], false);
    }

    #[test]
    fn an_unrolled_loop_reads_its_mask_words_ahead_of_the_counter() {
        // Unrolled by two: the second copy reads at the counter plus one stride, which the
        // exact last iteration bounds (a division), the counter's advance only loosely.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	add.s64 %rd10, %rd9, %rd3;
	shr.u64 %rd6, %rd10, 3;
	and.b64 %rd7, %rd6, 2305843009213693948;
	add.s64 %rd8, %rd30, %rd7;
	ld.global.u32 %r2, [%rd8];
	add.s64 %rd9, %rd10, %rd3;
	setp.lt.s64 %p2, %rd9, %rd4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%rd9", "%rd3", "%rd4"], &[], true);
    }

    #[test]
    fn a_window_clamped_at_both_edges() {
        // `x[min(max(i + d, 0), w - 1)]`, a 32-bit index read signed, widened.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	add.s32 %r6, %r5, %r7;
	max.s32 %r8, %r6, 0;
	min.s32 %r9, %r8, %r3;
	mul.wide.s32 %rd6, %r9, 4;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s32 %r5, %r5, 1;
	setp.lt.s32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%r5", "%r7", "%r3", "%r4"], &[], false);
    }

    #[test]
    fn a_descending_loop_reads_half_its_counter() {
        // `x[i / 2]` for `i` from `n` down past `b`, an unsigned shift of a 32-bit counter.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	shr.u32 %r6, %r5, 1;
	mul.wide.u32 %rd6, %r6, 4;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s32 %r5, %r5, -1;
	setp.gt.s32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%r5", "%r4"], &[], false);
    }

    #[test]
    fn a_block_of_four_rounded_down_and_offset() {
        // `x[(i & ~3) + c]` through a 32-bit signed index: `and` with the high bits set
        // needs no reading of its operand.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	and.b32 %r6, %r5, -4;
	add.s32 %r7, %r6, %r3;
	mul.wide.s32 %rd6, %r7, 4;
	add.s64 %rd7, %rd30, %rd6;
	ld.global.f32 %f1, [%rd7];
	add.s32 %r5, %r5, %r8;
	setp.lt.s32 %p2, %r5, %r4;
	@%p2 bra $L__BB0_2;
	ret;";
        sound(body, &["%r5", "%r3", "%r8", "%r4"], &[], false);
    }

    #[test]
    fn an_unrolled_loops_copies_of_a_mask_word_share_one_check() {
        // Two copies, at the counter and one stride ahead: one check over both.
        let body = "
	mov.u32 %r1, %r1;
$L__BB0_2:
	shr.u64 %rd6, %rd9, 3;
	and.b64 %rd7, %rd6, 2305843009213693948;
	add.s64 %rd8, %rd30, %rd7;
	ld.global.u32 %r2, [%rd8];
	add.s64 %rd10, %rd9, %rd3;
	shr.u64 %rd11, %rd10, 3;
	and.b64 %rd12, %rd11, 2305843009213693948;
	add.s64 %rd13, %rd30, %rd12;
	ld.global.u32 %r3, [%rd13];
	add.s64 %rd9, %rd10, %rd3;
	setp.lt.s64 %p2, %rd9, %rd4;
	@%p2 bra $L__BB0_2;
	ret;";
        let f = function(body);
        let v = plan_of(&f, &loads(&f));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].hoisted.len(), 1, "{:?}", v[0].hoisted);
        assert_eq!(v[0].hoisted[0].members.len(), 2);
        sound(body, &["%rd9", "%rd3", "%rd4"], &[], true);
    }
}
