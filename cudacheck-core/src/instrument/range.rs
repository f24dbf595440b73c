//! Integer intervals of PTX registers, and the byte offset of each address register from the
//! base of the buffer it points into: what lets an access into a fixed-size array be proven in
//! bounds, so that no check is emitted for it.
//!
//! Like [`super::analyze::provenance`], the analysis is flow-insensitive: a register's interval
//! is the join over all its definitions, computed to a fixpoint. That is sound on any code
//! (every value a register ever holds comes from one of its definitions) and precise on NVVM's
//! output, which gives nearly every value its own register.
//!
//! # The domain, and why it cannot be fooled by wrap-around
//! An integer register's interval `[lo, hi]` says that every value it holds, read as an
//! unsigned *or* a signed number of the register's width, lies in `[lo, hi]`. Intervals are
//! only kept inside `[0, 2^(w-1))`, where both readings agree, so no instruction's signedness
//! can change a value's meaning. Each transfer computes the exact mathematical result range
//! (in `i128`) and keeps it only if it stays inside that range for the destination's width:
//! the `w`-bit result is the mathematical one modulo `2^w`, equal to it exactly when it lies
//! in `[0, 2^w)`. A result that may wrap, or any instruction not modelled, gives
//! [`Iv::Top`] (unknown).
//!
//! Address offsets are different: the check computes `(address - base) mod 2^w`, so an offset
//! interval is kept as an interval of integers *congruent* to that difference; adding any
//! known integer keeps the congruence, and a proof needs the final interval inside
//! `[0, len - bytes]`, which then is the difference itself. Converting an address between 32
//! and 64 bits (shared and local addresses) keeps its offset only while it is in `[0, 2^31)`,
//! where truncation and extension change nothing.
//!
//! # Loops
//! Values that grow around a loop would climb forever; after the first rounds, a bound that
//! moves is widened: a lower bound to 0 (the domain's floor, so that shrinking values such as
//! `s >>= 1` keep their upper bound) and an upper bound to unknown. Each register can then
//! change only twice more, so the fixpoint is reached; if the round cap were ever hit anyway,
//! every register is made unknown (never a proof from an unfinished fixpoint).
//!
//! # Launch facts
//! `%tid` lies in `[0, block - 1]` when the block is known and below the hardware's limits
//! (1024, 1024, 64) otherwise; `%ntid` is the block when known; `%ctaid` is unknown;
//! `%dynamic_smem_size` is the given dynamic shared memory. These facts only decide whether a
//! check is emitted; the PTX handed to `ptxas` never states them, so code generation does not
//! change with them. They are sound only for launches with that shape: the runtime keys the
//! instrumented build on them.

use std::collections::{BTreeMap, BTreeSet};

use super::analyze::{Prov, Provenance};
use super::ptx::{parse_address, Function, Instr, Module, StmtKind};
use super::InstrumentOptions;

/// An interval, or nothing known, or no value yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iv {
    /// No definition seen yet (only during the fixpoint).
    Bot,
    /// Every value lies in `[lo, hi]`.
    R(i128, i128),
    Top,
}

impl Iv {
    fn join(self, o: Iv) -> Iv {
        match (self, o) {
            (Iv::Bot, x) | (x, Iv::Bot) => x,
            (Iv::R(a, b), Iv::R(c, d)) => Iv::R(a.min(c), b.max(d)),
            _ => Iv::Top,
        }
    }

    /// `self` joined with `new`, widened when `widen`: a lower bound that moved goes to 0, an
    /// upper bound that moved to unknown.
    fn widen(self, new: Iv, widen: bool, floor: i128) -> Iv {
        let j = self.join(new);
        if !widen {
            return j;
        }
        match (self, j) {
            (Iv::R(a, b), Iv::R(c, d)) => {
                if d > b {
                    Iv::Top
                } else if c < a {
                    Iv::R(floor.min(c), d)
                } else {
                    j
                }
            }
            _ => j,
        }
    }

    /// Keeps the interval only where every value reads the same signed and unsigned in `bits`.
    fn fit(self, bits: u32) -> Iv {
        match self {
            Iv::R(lo, hi) if lo >= 0 && hi < (1i128 << (bits - 1)) => self,
            Iv::Bot => Iv::Bot,
            _ => Iv::Top,
        }
    }

    pub fn bounds(self) -> Option<(i128, i128)> {
        match self {
            Iv::R(a, b) => Some((a, b)),
            _ => None,
        }
    }
}

/// Bound on offsets kept: far beyond any buffer, far from `i128` overflow.
const OFFSET_CAP: i128 = 1 << 64;

/// Rounds of plain joins before widening starts: enough for straight-line code written out of
/// order and for values merged after a branch.
const PLAIN_ROUNDS: usize = 2;
const MAX_ROUNDS: usize = 64;

/// The intervals of one function's registers and the offsets of its address registers.
pub struct Ranges {
    ints: BTreeMap<String, Iv>,
    offsets: BTreeMap<String, Iv>,
}

impl Ranges {
    /// The interval of an integer operand (a register or an immediate).
    pub fn int(&self, op: &str) -> Iv {
        let op = op.trim();
        if op.starts_with('%') {
            return match self.ints.get(op) {
                Some(Iv::Bot) | None => Iv::Top,
                Some(x) => *x,
            };
        }
        immediate(op).map_or(Iv::Top, |v| Iv::R(v, v))
    }

    /// The byte offset interval of address register `reg` from its (single) origin's base.
    pub fn offset(&self, reg: &str) -> Iv {
        match self.offsets.get(reg.trim()) {
            Some(Iv::Bot) | None => Iv::Top,
            Some(x) => *x,
        }
    }
}

/// An integer literal: `12`, `-4`, `0x1F`, `0F3F800000` is a float and not one.
fn immediate(op: &str) -> Option<i128> {
    let (neg, t) = match op.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, op),
    };
    let t = t.strip_suffix('U').unwrap_or(t);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') && t.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        i128::from_str_radix(&t[1..], 8).ok()?
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -v } else { v })
}

/// Registers an instruction writes: those named in its first operand (`%r1`, `{%r1, %r2}`,
/// `%r1|%p1`), for every instruction that writes one.
fn written(i: &Instr) -> Vec<&str> {
    if matches!(
        i.op(),
        "st" | "red"
            | "bra"
            | "call"
            | "ret"
            | "exit"
            | "bar"
            | "barrier"
            | "prefetch"
            | "prefetchu"
            | "membar"
            | "fence"
            | "trap"
            | "cp"
            | "mbarrier"
            | "griddepcontrol"
            | "setmaxnreg"
            | "nanosleep"
            | "pmevent"
            | "brkpt"
            | "stmatrix"
            | "sust"
            | "sured"
            | "multimem"
            | "tensormap"
    ) || (i.op() == "wmma" && i.has("store"))
    {
        return Vec::new();
    }
    let Some(first) = i.operands.first() else {
        return Vec::new();
    };
    first
        .split(|c: char| c == '{' || c == '}' || c == ',' || c == '|' || c.is_whitespace())
        .filter(|t| t.starts_with('%'))
        .collect()
}

/// Registers a `call` writes through its return list `(%r1, ...)` in inline-asm forms; PTX
/// calls return through `.param`, but be safe with any register in parentheses.
fn call_written(i: &Instr) -> Vec<&str> {
    if i.op() != "call" {
        return Vec::new();
    }
    i.operands
        .iter()
        .filter(|o| o.trim_start().starts_with('('))
        .flat_map(|o| o.split(|c: char| c == '(' || c == ')' || c == ',' || c.is_whitespace()))
        .filter(|t| t.starts_with('%'))
        .collect()
}

fn bits_of(f: &Function, reg: &str) -> u32 {
    f.reg_type(reg)
        .and_then(super::ptx::type_bytes)
        .map_or(64, |b| (b * 8) as u32)
}

/// The width of the instruction's (last) integer type, for its source operands.
fn type_bits(i: &Instr) -> Option<u32> {
    i.parts()
        .skip(1)
        .filter(|p| {
            matches!(p.as_bytes().first(), Some(b'u' | b's' | b'b'))
                && p[1..].bytes().all(|b| b.is_ascii_digit())
                && p.len() > 1
        })
        .last()
        .and_then(|p| p[1..].parse().ok())
}

fn special(op: &str, opts: &InstrumentOptions) -> Iv {
    let dim = |s: &str| match s {
        "x" => 0,
        "y" => 1,
        _ => 2,
    };
    const HW: [i128; 3] = [1024, 1024, 64];
    if let Some(d) = op.strip_prefix("%tid.") {
        let k = dim(d);
        let n = opts.block.map_or(HW[k], |b| i128::from(b[k]));
        return if n >= 1 { Iv::R(0, n - 1) } else { Iv::Top };
    }
    if let Some(d) = op.strip_prefix("%ntid.") {
        let k = dim(d);
        return match opts.block {
            Some(b) => Iv::R(i128::from(b[k]), i128::from(b[k])),
            None => Iv::R(1, HW[k]),
        };
    }
    match op {
        "%laneid" => Iv::R(0, 31),
        "%dynamic_smem_size" => match opts.dynamic_shared_bytes {
            Some(d) => Iv::R(i128::from(d), i128::from(d)),
            None => Iv::Top,
        },
        _ => Iv::Top,
    }
}

fn arith(a: Iv, b: Iv, f: impl Fn(i128, i128, i128, i128) -> Option<(i128, i128)>) -> Iv {
    match (a, b) {
        (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
        (Iv::R(a0, a1), Iv::R(b0, b1)) => f(a0, a1, b0, b1).map_or(Iv::Top, |(l, h)| Iv::R(l, h)),
        _ => Iv::Top,
    }
}

fn mul(a0: i128, a1: i128, b0: i128, b1: i128) -> Option<(i128, i128)> {
    let c = [
        a0.checked_mul(b0)?,
        a0.checked_mul(b1)?,
        a1.checked_mul(b0)?,
        a1.checked_mul(b1)?,
    ];
    Some((*c.iter().min()?, *c.iter().max()?))
}

struct Ctx<'a> {
    m: &'a Module,
    f: &'a Function,
    opts: &'a InstrumentOptions,
}

impl Ctx<'_> {
    /// The value of a source operand read at the instruction's width (immediates as written).
    fn src(&self, ints: &BTreeMap<String, Iv>, op: &str, _i: &Instr) -> Iv {
        let op = op.trim();
        if op.starts_with('%') {
            if op.contains('.') || op == "%laneid" || op == "%dynamic_smem_size" {
                return special(op, self.opts);
            }
            return ints.get(op).copied().unwrap_or(Iv::Bot);
        }
        if self.m.var(self.f, op).is_some() {
            return Iv::Top; // an address used as an integer
        }
        immediate(op).map_or(Iv::Top, |v| Iv::R(v, v))
    }

    /// The interval one definition gives its (single register) destination.
    fn int_transfer(&self, ints: &BTreeMap<String, Iv>, i: &Instr, dbits: u32) -> Iv {
        let s = |k: usize| -> Iv { i.operands.get(k).map_or(Iv::Top, |o| self.src(ints, o, i)) };
        // Sources must themselves read the same signed and unsigned at the instruction's width
        // (an immediate `-4` added is fine: that is exactly what `add` does with it).
        let w = type_bits(i).unwrap_or(dbits);
        let op = i.op();
        let is_float = i
            .parts()
            .skip(1)
            .any(|p| p.starts_with('f') && p[1..].bytes().all(|b| b.is_ascii_digit()));
        if is_float && op != "cvt" {
            return Iv::Top;
        }
        let r = match op {
            "mov" => s(1),
            "add" if !i.has("cc") && !i.has("sat") => {
                arith(s(1), s(2), |a0, a1, b0, b1| Some((a0 + b0, a1 + b1)))
            }
            "sub" if !i.has("cc") && !i.has("sat") => {
                arith(s(1), s(2), |a0, a1, b0, b1| Some((a0 - b1, a1 - b0)))
            }
            "mul" if i.has("lo") || i.has("wide") => arith(s(1), s(2), mul),
            "mad" if i.has("lo") || i.has("wide") => {
                let p = arith(s(1), s(2), mul);
                let p = if i.has("lo") { p.fit(w) } else { p };
                arith(p, s(3), |a0, a1, b0, b1| Some((a0 + b0, a1 + b1)))
            }
            "shl" => arith(s(1), s(2), |a0, a1, b0, b1| {
                (b0 == b1 && (0..64).contains(&b0))
                    .then(|| (a0 << b0, a1 << b0))
                    .filter(|&(_, h)| a1 >= 0 && h < (1i128 << 100))
            }),
            "shr" => arith(s(1).fit(w), s(2), |a0, a1, b0, b1| {
                (b0 >= 0 && b1 < 128).then_some((a0 >> b1, a1 >> b0))
            }),
            "and" => match (s(1).fit(w), s(2).fit(w)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(_, h1), Iv::R(_, h2)) => Iv::R(0, h1.min(h2)),
                (Iv::R(_, h), Iv::Top) | (Iv::Top, Iv::R(_, h)) => Iv::R(0, h),
                _ => Iv::Top,
            },
            "rem" => match (s(1).fit(w), s(2)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (a, Iv::R(c, c2)) if c == c2 && c > 0 && c < (1i128 << (w - 1)) => match a {
                    Iv::R(_, h) => Iv::R(0, h.min(c - 1)),
                    // Unsigned remainder of anything is below the divisor; signed may be negative.
                    _ if i.has("u32") || i.has("u64") => Iv::R(0, c - 1),
                    _ => Iv::Top,
                },
                _ => Iv::Top,
            },
            "div" => match (s(1).fit(w), s(2)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(a0, a1), Iv::R(c, c2)) if c == c2 && c > 0 => Iv::R(a0 / c, a1 / c),
                _ => Iv::Top,
            },
            "min" => match (s(1).fit(w), s(2).fit(w)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(a0, a1), Iv::R(b0, b1)) => Iv::R(a0.min(b0), a1.min(b1)),
                // Unsigned min with an unknown value stays below the known one.
                (Iv::R(_, h), Iv::Top) | (Iv::Top, Iv::R(_, h)) if i.has("u32") || i.has("u64") => {
                    Iv::R(0, h)
                }
                _ => Iv::Top,
            },
            "max" => match (s(1).fit(w), s(2).fit(w)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(a0, a1), Iv::R(b0, b1)) => Iv::R(a0.max(b0), a1.max(b1)),
                _ => Iv::Top,
            },
            "selp" => s(1).join(s(2)),
            "cvt" if !is_float && !i.has("sat") => {
                // The source type is the last type part; a value in [0, 2^(src-1)) reads the
                // same after truncation (when it fits) or any extension.
                s(1).fit(w)
            }
            _ => Iv::Top,
        };
        // Sources read at width `w` must not have wrapped there either (an `add.s32` of two
        // values near 2^31), and the result must fit the destination.
        match (op, r) {
            (_, Iv::Bot) => Iv::Bot,
            ("mul" | "mad", _) if i.has("wide") => r.fit(dbits),
            _ => r.fit(w.min(dbits)),
        }
    }

    fn offset_transfer(
        &self,
        prov: &Provenance,
        ints: &Ranges,
        offs: &BTreeMap<String, Iv>,
        i: &Instr,
    ) -> Iv {
        let ptr = |op: &str| -> Option<Iv> {
            let op = op.trim();
            if op.starts_with('%') {
                if op.contains('.') {
                    return None;
                }
                return match prov.of(op) {
                    Prov::Ptr(s) if s.len() == 1 => Some(offs.get(op).copied().unwrap_or(Iv::Bot)),
                    Prov::Ptr(_) => Some(Iv::Top),
                    _ => None,
                };
            }
            self.m.var(self.f, op).map(|_| Iv::R(0, 0))
        };
        let cap = |x: Iv| match x {
            Iv::R(l, h) if l > -OFFSET_CAP && h < OFFSET_CAP => x,
            Iv::Bot => Iv::Bot,
            _ => Iv::Top,
        };
        let op = |k: usize| i.operands.get(k).map_or("", |o| o.as_str());
        let r = match i.op() {
            "mov" | "cvta" => ptr(op(1)).unwrap_or(Iv::Top),
            "cvt" => match ptr(op(1)) {
                Some(x) => match x {
                    Iv::R(l, h) if l >= 0 && h < (1 << 31) => x,
                    Iv::Bot => Iv::Bot,
                    _ => Iv::Top,
                },
                None => Iv::Top,
            },
            "add" => match (ptr(op(1)), ptr(op(2))) {
                (Some(p), None) => arith(p, ints.int(op(2)), |a, b, c, d| Some((a + c, b + d))),
                (None, Some(p)) => arith(ints.int(op(1)), p, |a, b, c, d| Some((a + c, b + d))),
                _ => Iv::Top,
            },
            "sub" => match (ptr(op(1)), ptr(op(2))) {
                (Some(p), None) => arith(p, ints.int(op(2)), |a, b, c, d| Some((a - d, b - c))),
                _ => Iv::Top,
            },
            "selp" => match (ptr(op(1)), ptr(op(2))) {
                (Some(a), Some(b)) => a.join(b),
                _ => Iv::Top,
            },
            _ => Iv::Top,
        };
        cap(r)
    }
}

/// Runs a fixpoint of `step` over every register `f` writes; registers written in forms the
/// step does not model are unknown.
fn fixpoint(
    f: &Function,
    floor: i128,
    mut step: impl FnMut(&BTreeMap<String, Iv>, &Instr, &str) -> Option<Iv>,
) -> BTreeMap<String, Iv> {
    let mut map: BTreeMap<String, Iv> = BTreeMap::new();
    let mut pinned: BTreeSet<String> = BTreeSet::new();
    let instrs: Vec<&Instr> = f
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Instr(i) => Some(i),
            _ => None,
        })
        .collect();
    // Registers written as part of a compound destination, or by a call, are unknown.
    for i in &instrs {
        let w = written(i);
        let simple = w.len() == 1 && i.operands.first().is_some_and(|o| o.trim() == w[0]);
        if !simple {
            for r in w.into_iter().chain(call_written(i)) {
                pinned.insert(r.to_string());
                map.insert(r.to_string(), Iv::Top);
            }
        }
    }
    // A register read but never written holds whatever the hardware left there: unknown.
    let all_written: BTreeSet<&str> = instrs
        .iter()
        .flat_map(|i| written(i).into_iter().chain(call_written(i)))
        .collect();
    for i in &instrs {
        for o in &i.operands {
            for t in
                o.split(|c: char| !(c == '%' || c == '_' || c == '$' || c.is_ascii_alphanumeric()))
            {
                if t.starts_with('%') && !t.contains('.') && !all_written.contains(t) {
                    map.entry(t.to_string()).or_insert(Iv::Top);
                }
            }
        }
    }
    let mut settled = false;
    for pass in 0..2 {
        for round in 0..MAX_ROUNDS {
            let mut changed = false;
            for i in &instrs {
                let w = written(i);
                if w.len() != 1 || pinned.contains(w[0]) {
                    continue;
                }
                let d = w[0];
                let new = step(&map, i, d).unwrap_or(Iv::Top);
                let old = map.get(d).copied().unwrap_or(Iv::Bot);
                let next = old.widen(new, round >= PLAIN_ROUNDS, floor);
                if next != old {
                    map.insert(d.to_string(), next);
                    changed = true;
                }
            }
            if !changed {
                settled = true;
                break;
            }
        }
        if !settled {
            break;
        }
        if pass == 0 {
            // A register still without a value was computed only from never-written ones
            // (undefined values): unknown, and everything computed from it again.
            let mut any = false;
            for v in map.values_mut() {
                if *v == Iv::Bot {
                    *v = Iv::Top;
                    any = true;
                }
            }
            if !any {
                break;
            }
            settled = false;
        }
    }
    if !settled {
        for v in map.values_mut() {
            *v = Iv::Top;
        }
    }
    map
}

/// The intervals of `f`'s registers and the offsets of its address registers.
pub fn ranges(m: &Module, f: &Function, prov: &Provenance, opts: &InstrumentOptions) -> Ranges {
    let cx = Ctx { m, f, opts };
    let ints = fixpoint(f, 0, |map, i, d| {
        Some(cx.int_transfer(map, i, bits_of(f, d)))
    });
    let mut r = Ranges {
        ints,
        offsets: BTreeMap::new(),
    };
    let offsets = fixpoint(f, -OFFSET_CAP, |map, i, d| match prov.of(d) {
        Prov::Ptr(s) if s.len() == 1 => Some(cx.offset_transfer(prov, &r, map, i)),
        _ => Some(Iv::Top),
    });
    r.offsets = offsets;
    r
}

/// The byte offset interval of the address operand `op` (`[%r4+8]`), when it is a register
/// with one origin.
pub fn address_offset(r: &Ranges, op: &str) -> Iv {
    let Some(a) = parse_address(op) else {
        return Iv::Top;
    };
    if !a.base.starts_with('%') {
        return Iv::R(i128::from(a.offset), i128::from(a.offset));
    }
    match r.offset(&a.base) {
        Iv::R(l, h) => Iv::R(l + i128::from(a.offset), h + i128::from(a.offset)),
        _ => Iv::Top,
    }
}
