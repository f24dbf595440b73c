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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::analyze::{Prov, Provenance};
use super::ptx::{Function, Instr, Module, StmtKind};
use super::InstrumentOptions;
use crate::ir::{effects, immediate, regs_of, Address, Arith, ArithOp, Half, Op, Ty};

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
pub struct Ranges<'a> {
    flow: Flow<'a>,
    offsets: Vals,
    /// Instruction (by address, as `decide` receives it) -> its index in `flow`.
    index: HashMap<usize, usize>,
}

impl Ranges<'_> {
    /// The byte offset interval of address register `reg` as instruction `i` reads it.
    fn offset(&self, i: &Instr, reg: &str) -> Iv {
        match self.index.get(&(i as *const Instr as usize)) {
            Some(&k) => self.offsets.settled(&self.flow, k, reg.trim()),
            None => Iv::Top,
        }
    }
}

fn bits_of(f: &Function, reg: &str) -> u32 {
    f.reg_type(reg)
        .and_then(super::ptx::type_bytes)
        .map_or(64, |b| (b * 8) as u32)
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
    fn src(&self, look: &dyn Fn(&str) -> Iv, op: &str) -> Iv {
        let op = op.trim();
        if op.starts_with('%') {
            if op.contains('.') || op == "%laneid" || op == "%dynamic_smem_size" {
                return special(op, self.opts);
            }
            return look(op);
        }
        if self.m.var(self.f, op).is_some() {
            return Iv::Top; // an address used as an integer
        }
        immediate(op).map_or(Iv::Top, |v| Iv::R(v, v))
    }

    /// The interval one definition gives its (single register) destination.
    fn int_transfer(&self, look: &dyn Fn(&str) -> Iv, i: &Instr, dbits: u32) -> Iv {
        let s = |k: usize| -> Iv { i.operands.get(k).map_or(Iv::Top, |o| self.src(look, o)) };
        // Sources must themselves read the same signed and unsigned at the instruction's width
        // (an immediate `-4` added is fine: that is exactly what `add` does with it).
        let ty = i.op.operand_ty();
        let w = ty.and_then(Ty::int_bits).unwrap_or(dbits);
        let unsigned = ty.is_some_and(|t| t.unsigned() && t.int_bits() >= Some(32));
        let float = |t: Option<Ty>| t.is_some_and(Ty::float);
        // Only integers have intervals (a conversion from or to a float has none either).
        if float(ty) || matches!(i.op, Op::Convert(c) if float(c.to)) {
            return Iv::Top;
        }
        // Plain arithmetic: no carry in or out, no saturation.
        let plain = |a: &Arith| !a.carry_in && !a.carry_out && !a.sat;
        let r = match i.op {
            Op::Mov(_) => s(1),
            Op::Arith(a) if a.op == ArithOp::Add && plain(&a) => {
                arith(s(1), s(2), |a0, a1, b0, b1| Some((a0 + b0, a1 + b1)))
            }
            Op::Arith(a) if a.op == ArithOp::Sub && plain(&a) => {
                arith(s(1), s(2), |a0, a1, b0, b1| Some((a0 - b1, a1 - b0)))
            }
            Op::Arith(a) if matches!(a.half, Some(Half::Lo | Half::Wide)) => match a.op {
                ArithOp::Mul if !a.carry_in => arith(s(1), s(2), mul),
                ArithOp::Mad if !a.carry_in => {
                    let p = arith(s(1), s(2), mul);
                    let p = if a.half == Some(Half::Lo) {
                        p.fit(w)
                    } else {
                        p
                    };
                    arith(p, s(3), |a0, a1, b0, b1| Some((a0 + b0, a1 + b1)))
                }
                _ => Iv::Top,
            },
            Op::Arith(a) => self.int_logic(a.op, &s, w, unsigned),
            Op::Select(_) => s(1).join(s(2)),
            Op::Convert(c) if !c.sat => {
                // The source type is the last type part; a value in [0, 2^(src-1)) reads the
                // same after truncation (when it fits) or any extension.
                s(1).fit(w)
            }
            _ => Iv::Top,
        };
        // Sources read at width `w` must not have wrapped there either (an `add.s32` of two
        // values near 2^31), and the result must fit the destination.
        let wide = matches!(
            i.op,
            Op::Arith(Arith {
                op: ArithOp::Mul | ArithOp::Mad,
                half: Some(Half::Wide),
                carry_in: false,
                ..
            })
        );
        match r {
            Iv::Bot => Iv::Bot,
            _ if wide => r.fit(dbits),
            _ => r.fit(w.min(dbits)),
        }
    }

    /// Shifts, bitwise `and`, division, remainder, `min` and `max` of integers read at `w`
    /// bits; `unsigned`: a `.u32` or `.u64` operation.
    fn int_logic(&self, op: ArithOp, s: &dyn Fn(usize) -> Iv, w: u32, unsigned: bool) -> Iv {
        match op {
            ArithOp::Shl => arith(s(1), s(2), |a0, a1, b0, b1| {
                (b0 == b1 && (0..64).contains(&b0))
                    .then(|| (a0 << b0, a1 << b0))
                    .filter(|&(_, h)| a1 >= 0 && h < (1i128 << 100))
            }),
            ArithOp::Shr => arith(s(1).fit(w), s(2), |a0, a1, b0, b1| {
                (b0 >= 0 && b1 < 128).then_some((a0 >> b1, a1 >> b0))
            }),
            ArithOp::And => match (s(1).fit(w), s(2).fit(w)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(_, h1), Iv::R(_, h2)) => Iv::R(0, h1.min(h2)),
                (Iv::R(_, h), Iv::Top) | (Iv::Top, Iv::R(_, h)) => Iv::R(0, h),
                _ => Iv::Top,
            },
            ArithOp::Rem => match (s(1).fit(w), s(2)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (a, Iv::R(c, c2)) if c == c2 && c > 0 && c < (1i128 << (w - 1)) => match a {
                    Iv::R(_, h) => Iv::R(0, h.min(c - 1)),
                    // Unsigned remainder of anything is below the divisor; signed may be negative.
                    _ if unsigned => Iv::R(0, c - 1),
                    _ => Iv::Top,
                },
                _ => Iv::Top,
            },
            ArithOp::Div => match (s(1).fit(w), s(2)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(a0, a1), Iv::R(c, c2)) if c == c2 && c > 0 => Iv::R(a0 / c, a1 / c),
                _ => Iv::Top,
            },
            ArithOp::Min => match (s(1).fit(w), s(2).fit(w)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(a0, a1), Iv::R(b0, b1)) => Iv::R(a0.min(b0), a1.min(b1)),
                // Unsigned min with an unknown value stays below the known one.
                (Iv::R(_, h), Iv::Top) | (Iv::Top, Iv::R(_, h)) if unsigned => Iv::R(0, h),
                _ => Iv::Top,
            },
            ArithOp::Max => match (s(1).fit(w), s(2).fit(w)) {
                (Iv::Bot, _) | (_, Iv::Bot) => Iv::Bot,
                (Iv::R(a0, a1), Iv::R(b0, b1)) => Iv::R(a0.max(b0), a1.max(b1)),
                _ => Iv::Top,
            },
            _ => Iv::Top,
        }
    }

    fn offset_transfer(
        &self,
        prov: &Provenance,
        int: &dyn Fn(&str) -> Iv,
        offs: &dyn Fn(&str) -> Iv,
        i: &Instr,
    ) -> Iv {
        let ptr = |op: &str| -> Option<Iv> {
            let op = op.trim();
            if op.starts_with('%') {
                if op.contains('.') {
                    return None;
                }
                return match prov.of(op) {
                    Prov::Ptr(s) if s.len() == 1 => Some(offs(op)),
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
        let add_or_sub = |o: ArithOp| matches!(i.op, Op::Arith(a) if a.op == o && !a.carry_in);
        let r = match i.op {
            Op::Mov(_) | Op::Cvta { .. } => ptr(op(1)).unwrap_or(Iv::Top),
            Op::Convert(_) => match ptr(op(1)) {
                Some(x) => match x {
                    Iv::R(l, h) if l >= 0 && h < (1 << 31) => x,
                    Iv::Bot => Iv::Bot,
                    _ => Iv::Top,
                },
                None => Iv::Top,
            },
            _ if add_or_sub(ArithOp::Add) => match (ptr(op(1)), ptr(op(2))) {
                (Some(p), None) => arith(p, int(op(2)), |a, b, c, d| Some((a + c, b + d))),
                (None, Some(p)) => arith(int(op(1)), p, |a, b, c, d| Some((a + c, b + d))),
                _ => Iv::Top,
            },
            _ if add_or_sub(ArithOp::Sub) => match (ptr(op(1)), ptr(op(2))) {
                (Some(p), None) => arith(p, int(op(2)), |a, b, c, d| Some((a - d, b - c))),
                _ => Iv::Top,
            },
            Op::Select(_) => match (ptr(op(1)), ptr(op(2))) {
                (Some(a), Some(b)) => a.join(b),
                _ => Iv::Top,
            },
            _ => Iv::Top,
        };
        cap(r)
    }
}

/// The instructions of a function in order and, for each register an instruction reads, the
/// definition that reaches it when one is certain: the last unguarded definition before it in
/// the same extended basic block. With no label in between, every path to the use runs through
/// that definition and nothing else writes the register, so the use sees exactly its value;
/// elsewhere a use sees the join of all definitions. This is what separates `tid.x` read before
/// a loop from the register NVVM reuses for `t * 16 + tid.x` inside it.
struct Flow<'a> {
    instrs: Vec<&'a Instr>,
    reach: HashMap<(usize, String), usize>,
    /// The register each instruction defines in a form the transfers model.
    dest: Vec<Option<&'a str>>,
    /// Registers never written, or written in forms not modelled: unknown.
    unknown: BTreeSet<String>,
}

impl<'a> Flow<'a> {
    fn new(f: &'a Function) -> Self {
        let instrs: Vec<&Instr> = f.instrs().collect();
        let mut unknown = BTreeSet::new();
        let mut all_written = BTreeSet::new();
        for i in &instrs {
            let w = effects(i).defs;
            let simple = w.len() == 1 && i.operands.first().is_some_and(|o| o.trim() == w[0]);
            for r in w.iter().copied() {
                all_written.insert(r);
                if !simple {
                    unknown.insert(r.to_string());
                }
            }
        }
        for i in &instrs {
            for o in &i.operands {
                for t in regs_of(o) {
                    if !all_written.contains(t) {
                        unknown.insert(t.to_string());
                    }
                }
            }
        }
        let mut reach = HashMap::new();
        let mut dest = Vec::with_capacity(instrs.len());
        let mut local: HashMap<&str, usize> = HashMap::new();
        let mut k = 0;
        for s in &f.stmts {
            match &s.kind {
                StmtKind::Instr(i) => {
                    let e = effects(i);
                    for &t in &e.uses {
                        if let Some(&j) = local.get(t) {
                            reach.insert((k, t.to_string()), j);
                        }
                    }
                    let w = e.defs;
                    let d = (w.len() == 1 && !unknown.contains(w[0])).then(|| w[0]);
                    for r in w.iter().copied() {
                        local.remove(r);
                    }
                    if let (Some(d), None) = (d, &i.guard) {
                        local.insert(d, k);
                    }
                    dest.push(d);
                    k += 1;
                }
                // Another way in: nothing defined before is certain any more.
                StmtKind::Label(_) | StmtKind::Open | StmtKind::Close => local.clear(),
                _ => {}
            }
        }
        Flow {
            instrs,
            reach,
            dest,
            unknown,
        }
    }
}

/// Values per definition and per register (the join of its definitions).
struct Vals {
    def: Vec<Iv>,
    reg: BTreeMap<String, Iv>,
}

impl Vals {
    /// The value of register `reg` as instruction `k` reads it (`Bot` while not yet known).
    fn at(&self, flow: &Flow<'_>, k: usize, reg: &str) -> Iv {
        if let Some(&j) = flow.reach.get(&(k, reg.to_string())) {
            return self.def[j];
        }
        self.reg.get(reg).copied().unwrap_or(Iv::Bot)
    }

    fn settled(&self, flow: &Flow<'_>, k: usize, reg: &str) -> Iv {
        match self.at(flow, k, reg) {
            Iv::Bot => Iv::Top,
            x => x,
        }
    }
}

/// Runs `step` over every modelled definition to a fixpoint.
fn fixpoint(
    flow: &Flow<'_>,
    floor: i128,
    mut step: impl FnMut(usize, &Instr, &str, &dyn Fn(&str) -> Iv) -> Iv,
) -> Vals {
    let mut v = Vals {
        def: vec![Iv::Bot; flow.instrs.len()],
        reg: flow.unknown.iter().map(|r| (r.clone(), Iv::Top)).collect(),
    };
    let mut settled = false;
    for pass in 0..2 {
        settled = false;
        for round in 0..MAX_ROUNDS {
            let mut changed = false;
            for (k, i) in flow.instrs.iter().enumerate() {
                let Some(d) = flow.dest[k] else { continue };
                let new = {
                    let look = |r: &str| v.at(flow, k, r);
                    step(k, i, d, &look)
                };
                let old = v.def[k];
                let next = old.widen(new, round >= PLAIN_ROUNDS, floor);
                if next != old {
                    v.def[k] = next;
                    let g = v.reg.get(d).copied().unwrap_or(Iv::Bot).join(next);
                    v.reg.insert(d.to_string(), g);
                    changed = true;
                }
            }
            if !changed {
                settled = true;
                break;
            }
        }
        if !settled || pass == 1 {
            break;
        }
        // A definition still without a value was computed only from never-written registers
        // (undefined values): unknown, and everything computed from it again.
        let mut any = false;
        for (k, d) in flow.dest.iter().enumerate() {
            if let (Some(d), Iv::Bot) = (d, v.def[k]) {
                v.def[k] = Iv::Top;
                v.reg.insert(d.to_string(), Iv::Top);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    if !settled {
        v.def.iter_mut().for_each(|x| *x = Iv::Top);
        v.reg.values_mut().for_each(|x| *x = Iv::Top);
    }
    v
}

/// The intervals of `f`'s registers and the offsets of its address registers.
pub fn ranges<'a>(
    m: &Module,
    f: &'a Function,
    prov: &Provenance,
    opts: &InstrumentOptions,
) -> Ranges<'a> {
    let cx = Ctx { m, f, opts };
    let flow = Flow::new(f);
    let ints = fixpoint(&flow, 0, |_, i, d, look| {
        cx.int_transfer(look, i, bits_of(f, d))
    });
    let offsets = fixpoint(&flow, -OFFSET_CAP, |k, i, d, look| match prov.of(d) {
        Prov::Ptr(s) if s.len() == 1 => {
            let int = |op: &str| int_of(&ints, &flow, k, op);
            cx.offset_transfer(prov, &int, look, i)
        }
        _ => Iv::Top,
    });
    let index = flow
        .instrs
        .iter()
        .enumerate()
        .map(|(k, i)| (*i as *const Instr as usize, k))
        .collect();
    Ranges {
        flow,
        offsets,
        index,
    }
}

fn int_of(ints: &Vals, flow: &Flow<'_>, k: usize, op: &str) -> Iv {
    let op = op.trim();
    if op.starts_with('%') {
        return ints.settled(flow, k, op);
    }
    immediate(op).map_or(Iv::Top, |v| Iv::R(v, v))
}

/// The byte offset interval of the address operand `op` (`[%r4+8]`), when it is a register
/// with one origin.
pub fn address_offset(r: &Ranges<'_>, i: &Instr, op: &str) -> Iv {
    let Some(a) = Address::parse(op) else {
        return Iv::Top;
    };
    if !a.base.starts_with('%') {
        return Iv::R(i128::from(a.offset), i128::from(a.offset));
    }
    match r.offset(i, a.base) {
        Iv::R(l, h) => Iv::R(l + i128::from(a.offset), h + i128::from(a.offset)),
        _ => Iv::Top,
    }
}

#[cfg(test)]
mod tests {
    use crate::instrument::{instrument_ptx, InstrumentedKernel};

    /// The kernel of a store at `tile + (x op x)`, `x = 0x3c00` (1.0 as a half).
    fn store_at_sum(add: &str) -> InstrumentedKernel {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry k()\n{{\n\
             .reg .b32 %r<3>;\n.reg .b64 %rd<4>;\n\
             .shared .align 4 .b8 tile[31000];\n\
             mov.b32 %r1, 15360;\n\
             {add} %r2, %r1, %r1;\n\
             cvt.u64.u32 %rd1, %r2;\n\
             mov.u64 %rd2, tile;\n\
             add.s64 %rd3, %rd2, %rd1;\n\
             st.shared.u8 [%rd3], 0;\n\
             ret;\n}}\n"
        );
        instrument_ptx(&ptx).unwrap().kernels.remove(0)
    }

    /// An integer sum is an interval: 0x3c00 + 0x3c00 = 30720 is inside the 31000-byte tile.
    #[test]
    fn an_integer_sum_bounds_an_offset() {
        let k = store_at_sum("add.s32");
        assert_eq!((k.coverage.proven, k.coverage.checked), (1, 0));
    }

    /// A packed-half sum is floating-point arithmetic (1.0 + 1.0 = 2.0 is 0x4000, not 0x7800),
    /// so it gives no interval, as `f32` arithmetic does not: the store is checked. Before the
    /// typed operation, only parts spelled `f` and digits were floats, and `f16x2`, `bf16`,
    /// `bf16x2` arithmetic was read as integer arithmetic.
    #[test]
    fn a_packed_half_sum_gives_no_interval() {
        for add in ["add.rn.f16x2", "add.rn.bf16x2", "add.f32"] {
            let k = store_at_sum(add);
            assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1), "{add}");
        }
    }
}
