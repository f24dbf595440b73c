//! Accesses the user's own guard keeps in bounds, checked once per launch on the host.
//!
//! `if (i < n) out[i] = ...` needs no device check when the launch has `n * 4 <= len(out)`:
//! the guard already keeps `i` below `n`. This module finds such accesses in the PTX and turns
//! each one's check into a *host check*: an expression for the access's byte offset from its
//! buffer's base, over the launch's scalar arguments, its grid and block, with the guards'
//! bounds in it. A launch evaluates every host check of the build with its actual arguments
//! (interval arithmetic, exact, in `i128`); when all hold it runs the build without those
//! device checks, otherwise the build of the same shape that checks the failing ones on the
//! device ([`InstrumentOptions::on_device`](super::InstrumentOptions::on_device),
//! `cudacheck`'s `launch/checked.rs`), so a launch whose `n` exceeds the buffer is caught and
//! reported on the device exactly as before.
//!
//! # The analysis (device side, on the PTX)
//!
//! 1. **Facts.** A forward must-analysis over the basic blocks (available facts, intersection
//!    at joins, greatest fixpoint) computes at every instruction the comparisons known to hold:
//!    `r <op> b` with `op` one of `< <= > >=`, signed or unsigned, 32 or 64 bits, `r` a
//!    register and `b` an immediate or a register whose only definition is `ld.param` of a
//!    whole scalar kernel parameter (its value is the argument's, fixed for the launch). They
//!    come from the edges of conditional branches (and of guarded `trap`, `exit`, `ret`, whose
//!    block falls through where the guard fails: the CFG's edge conditions) on predicates
//!    defined by integer `setp` (either operand order, `p|q` destinations; `==` and `!=` against an immediate too,
//!    which narrow an interval only at its ends: `z != 0` with `z >= 0` is `z >= 1`),
//!    combined by `or`/`and`/`not` on predicates,
//!    and are copied by `mov` between registers. A comparison also says something of the
//!    registers its operand was computed from: `(p | q) >= 0` (NVVM's fold of `p >= 0 &&
//!    q >= 0`) gives both `>= 0`, `min`/`max` pass a bound on, a widening `cvt` compares as
//!    the narrow register, and `r + k` (one definition, an immediate) bounds `r` as a fact
//!    with an offset. Bounds may be a parameter plus an immediate (`i < n - 1`). A `mov` of
//!    a constant pins its register; where paths join, an atom one path has and the other
//!    pins is kept weakened to "holds, or equals that constant": a rotated loop's head knows
//!    `d < n or d == 0` (first iteration from the preheader, later ones from the latch's
//!    `d + 1 < n`). Every definition of a register (any
//!    instruction naming it in its destination operand, predicated or not) kills the facts
//!    about it and the predicates that mention it, so a fact is about the value the register
//!    holds at that instruction, whatever path led there.
//! 2. **Values.** The access's address register is followed through single, unpredicated
//!    definitions (`add`, `sub`, `mov`, `cvta.to.global`, `ld.param` of the buffer) down to
//!    the buffer parameter's base (or, for a fixed-size `__shared__`/`__device__`/local array,
//!    to the `mov` of its name, through `cvta` between windows; its size is the length), and
//!    the integer added to it through `add`, `sub`, `mul.lo`, `mul.wide`, `mad.lo`,
//!    `mad.wide`, `shl`/`shr` by immediates, `and` with a non-negative mask, `cvt` between
//!    integer widths, `min`/`max` (clamps), `div`/`rem`, NVVM's `a - (a / b) * b` and its
//!    signed remainder by a power of two `a - ((a + bias) & -2^k)` ([`Guards::pow2_remainder`]:
//!    every register of the idiom checked, `a` the same value throughout), special registers
//!    and scalar parameters. NVVM's 64-bit division with a 32-bit fast path (the quotient or
//!    remainder set on two paths after `((a | b) >> 32) == 0`) is one value, the 64-bit
//!    operation's ([`Guards::wide_division`]: the 32-bit path runs only when both operands
//!    lie in `[0, 2^32)`, where the two operations agree; the test, the branch, the operands'
//!    low halves and the absence of any redefinition in between are each checked). At every use of a register, the facts holding *at that instruction* are attached to it, and,
//!    while every register between it and the access has one definition (whose value is
//!    then the one it holds at the access), the facts holding *at the access* too. A
//!    register with several definitions has the value of the one that reaches the use on
//!    every path, when only one does (NVVM reuses registers); otherwise it is kept as an
//!    increasing induction variable: every definition either sets it from a value (an
//!    initial value) or adds a non-negative step to it where a fact `r < b` (or `<=`) on its
//!    old value holds. With no step at all (a value merged after a branch), it is the hull
//!    of its definitions' values, each described at its own statement: whatever path led to
//!    the use, the register holds what one of them wrote. A definition that reads the
//!    register back (through a chain of copies) cannot be described that way and gives up at
//!    once; anything else gives up too.
//!
//! 3. **Counted loops**. A register stepped once per iteration of a loop with a
//!    recognized exit test (`crate::ir::loops`: natural loops, basic induction variables,
//!    exit tests on the CFG built once) is expressed as [`HostExpr::Counted`]: its value on
//!    entry plus `j` steps, `j` bounded by the iterations the exit test allows. This covers
//!    what the facts above cannot: a pointer stepped by a launch value (`in[r * cols + c]`
//!    strength-reduced to `p += cols * 4`), chains of steps in unrolled loops (`x1 = p + s;
//!    x2 = x1 + s; p = x2 + s`), counters tested with `<`, `<=`, `>`, `>=` (either direction)
//!    or `!=` (NVRTC's unrolled loops count a multiple of the unroll factor down to 0), and
//!    the value a loop leaves (an unrolled loop's remainder starts where it stopped). See
//!    [`Guards::counted_parts`] for the argument. The launch then checks every iteration's
//!    access in one evaluation and the loop runs with no per-access device check; a launch
//!    where it fails runs the build that checks on the device, which names the exact index,
//!    thread and line.
//!
//!    An access in a conditional block of the body (a guard inside the loop) is counted from
//!    the iteration: it runs before the register's update in every iteration unless the
//!    update's block can reach it without passing the header again
//!    ([`Loop::may_follow_in_iteration`](crate::ir::Loop::may_follow_in_iteration)). The
//!    loop's other counters bound the iterations such an access runs in
//!    ([`Sibling`]): in an unrolled stencil's first copy the guard
//!    `z != 0` holds of the counter `z`, stepped beside the pointer in the same iteration, so
//!    the iterations where the pointer would sit one plane before the buffer never reach the
//!    access. Each sibling is used only where its start and step are single values for the
//!    launch and every value it takes lies in `[0, 2^(w-1))` (read alike signed and unsigned,
//!    never wrapped), and only where both counters' updates are ordered the same way against
//!    the access in every iteration; facts on registers set in the loop to `z + k` (the
//!    unrolled copies' `z + 1`, `z + 2`, ...) count as facts on `z` only where their
//!    definitions run before the access in every iteration and `z`'s update never does.
//!
//! Each step is a file: `facts.rs` (1), `value.rs` (2), `counted.rs` (3); this one holds the
//! analysis's state and its setup, over the function's shared control-flow graph, loops and
//! definitions map ([`crate::ir`]).
//!
//! # Semantics of the expressions, and why host evaluation is sound
//!
//! Each expression denotes a set of mathematical integers that contains, for every execution
//! reaching that point, a representative of the register's bits modulo `2^w` (`w` its width).
//! `add`, `sub`, `mul.lo`, `not` and `shl` are ring operations: representatives of the
//! operands give a representative of the result, so no overflow check is needed there.
//! Operations that interpret a register's bits (`mul.wide`, `cvt` widening) go through
//! [`HostExpr::Wrap`]: when the interval lies in one window of `2^w` every representative maps
//! to its reading by the same shift, otherwise the host check fails; `and` with a mask that is
//! one run of bits is likewise exact within one window ([`HostExpr::And`]). Bounds and the
//! final offset (which the device check compares unsigned) go through [`HostExpr::In`], which
//! requires the interval to lie inside the range (a parameter of 2^32 + 5 is no 32-bit 5)
//! and otherwise fails the host check. A register with facts is evaluated both as its
//! unsigned and as its signed interpretation (the definition's interval is used where it lies
//! in that range), each narrowed by the facts of that signedness; both are valid, the
//! narrower is taken, and an empty one means no execution reaches the access (the check holds
//! vacuously). An induction variable's interpretation stays at or above the least initial
//! value: initial values lie in range, and a step adds `s >= 0` to a value below `b` with
//! `b + s` in range (checked with the launch's values), so it never wraps (by induction over
//! the executed definitions). A host check holds when the offset's interval is empty or lies
//! in `[0, len - bytes]`, exactly the device check's condition, so the device check it
//! replaces could not have failed in that launch.
//!
//! The analysis relies on one property of NVVM's output that the provenance analysis
//! (`analyze.rs`) relies on too: a register is not read before it is written.

use std::collections::{BTreeMap, BTreeSet};

use super::host_expr::{const_as_read, range_of, Cmp, HostExpr, HostFact, IvStep, Sibling};
use super::ptx::{Function, Instr, StmtKind};
use crate::ir::read::Space;
use crate::ir::{
    effects, immediate, is_reg, Address, Arith, ArithOp, Cfg, CmpOp, Compare, Defs, Facts, Half,
    Loop, Mem, MemOp, Op, Step, Ty,
};

mod counted;
mod facts;
#[cfg(test)]
mod tests;
mod value;

/// The bound of a comparison: an immediate, or a whole scalar parameter plus an immediate
/// (`x < nx - 1` compiles to a compare with `%r9 = %r8 + -1`, `%r8` the parameter).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Bound {
    Const(i64),
    Param {
        index: u32,
        bytes: u8,
        plus: i64,
    },
    /// A register the launch fixes: computed, through single definitions, only from scalar
    /// parameters, immediates and `%ntid`/`%nctaid` (`i < planes * ((h + 1) / 2)`).
    Uniform(String),
}

/// `reg <op> bound` in `bits` bits, `signed` or not.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Atom {
    reg: String,
    op: Cmp,
    signed: bool,
    bits: u8,
    bound: Bound,
    /// A weakened atom: it holds, or the register equals this (its `signed` reading).
    or_eq: Option<i64>,
}

impl Atom {
    fn negate(&self) -> Atom {
        debug_assert!(self.or_eq.is_none(), "only comparisons are negated");
        Atom {
            op: self.op.negate(),
            ..self.clone()
        }
    }

    /// `r < c` as `r <= c - 1` and `r > c` as `r >= c + 1` for a constant `c` (as the
    /// comparison reads it), so that the same bound reached two ways (`tx <= 35` on entering
    /// a loop, `tx < 36` at its latch) is one atom, and joins keep it.
    fn normalized(self) -> Atom {
        let Bound::Const(c) = self.bound else {
            return self;
        };
        let v = i128::from(const_as_read(c, self.bits, self.signed));
        let (lo, hi) = range_of(self.bits, self.signed);
        let (op, v) = match self.op {
            Cmp::Lt if v > lo => (Cmp::Le, v - 1),
            Cmp::Gt if v < hi => (Cmp::Ge, v + 1),
            op => (op, v),
        };
        match i64::try_from(v) {
            Ok(v) => Atom {
                op,
                bound: Bound::Const(v),
                ..self
            },
            Err(_) => self,
        }
    }

    /// The constant this atom pins its register to, with the atom pinning it from the
    /// other side in `s`.
    fn exact(s: &State, reg: &str, signed: bool, bits: u8) -> Option<i64> {
        let mut lo = None;
        let mut hi = None;
        for f in s {
            if let Fact::Atom(a) = f {
                if a.reg == reg && a.signed == signed && a.bits == bits && a.or_eq.is_none() {
                    if let Bound::Const(c) = a.bound {
                        match a.op {
                            Cmp::Ge => lo = Some(c),
                            Cmp::Le => hi = Some(c),
                            _ => {}
                        }
                    }
                }
            }
        }
        match (lo, hi) {
            (Some(l), Some(h)) if l == h => Some(l),
            _ => None,
        }
    }
}

/// The facts holding after a join of two paths: those holding on both, and an atom holding
/// on one path where the other pins its register to a constant, weakened to "holds or equals
/// that constant" (a loop head: the first iteration's constant, or what the back edge
/// tested). Never stronger than either side, so the fixpoint still only weakens.
fn join(a: &State, b: &State) -> State {
    let mut out: State = a.intersection(b).cloned().collect();
    for (x, y) in [(a, b), (b, a)] {
        for f in y {
            let Fact::Atom(t) = f else { continue };
            if x.contains(f) {
                continue;
            }
            let weak = match t.or_eq {
                None => Atom::exact(x, &t.reg, t.signed, t.bits).map(|c| Atom {
                    or_eq: Some(c),
                    ..t.clone()
                }),
                Some(c) => {
                    let strong = Fact::Atom(Atom {
                        or_eq: None,
                        ..t.clone()
                    });
                    (x.contains(&strong) || Atom::exact(x, &t.reg, t.signed, t.bits) == Some(c))
                        .then(|| t.clone())
                }
            };
            // Both paths bound the register the same way by constants: the looser bound
            // holds on both (`tx <= 35` entering a loop, `tx <= 35` or less at its latch).
            if let (None, Bound::Const(c), Cmp::Le | Cmp::Ge) = (t.or_eq, &t.bound, t.op) {
                let read = |c: i64| const_as_read(c, t.bits, t.signed);
                let other = x.iter().find_map(|g| match g {
                    Fact::Atom(o)
                        if o.reg == t.reg
                            && o.op == t.op
                            && o.signed == t.signed
                            && o.bits == t.bits
                            && o.or_eq.is_none() =>
                    {
                        match o.bound {
                            Bound::Const(d) => Some(read(d)),
                            _ => None,
                        }
                    }
                    _ => None,
                });
                if let Some(d) = other {
                    let b = if t.op == Cmp::Le {
                        read(*c).max(d)
                    } else {
                        read(*c).min(d)
                    };
                    out.insert(Fact::Atom(Atom {
                        bound: Bound::Const(b),
                        ..t.clone()
                    }));
                }
            }
            if let Some(w) = weak {
                // Pinning atoms themselves are not weakened (`r >= c or r == c` is `r >= c`
                // only on one side; keep what both sides say).
                if !(matches!(w.bound, Bound::Const(b) if Some(b) == w.or_eq)) {
                    out.insert(Fact::Atom(w));
                }
            }
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fact {
    Atom(Atom),
    /// The predicate `pred`, while it holds its value: what its being true, and false, means.
    Pred {
        pred: String,
        on_true: Vec<Atom>,
        on_false: Vec<Atom>,
    },
}

type State = BTreeSet<Fact>;

/// An integer literal as a 64-bit two's complement value (`0xFFFFFFFFFFFFFFFC` is -4).
fn imm(op: &str) -> Option<i64> {
    immediate(op).map(|v| v as i64)
}

/// `add r, x, k`, `add r, k, x` or `sub r, x, k` (no carry, no saturation): `Some(Some((x,
/// k)))` with `k` as added (`None` inside when `-k` overflows); `None` for any other
/// instruction, or two registers.
fn plus_immediate(i: &Instr) -> Option<Option<(&str, i64)>> {
    let add = match i.op {
        Op::Arith(Arith {
            op: op @ (ArithOp::Add | ArithOp::Sub),
            carry_in: false,
            carry_out: false,
            sat: false,
            ..
        }) => op == ArithOp::Add,
        _ => return None,
    };
    let (a, b) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
    match (imm(a), imm(b)) {
        (None, Some(k)) if add => Some(Some((a, k))),
        (None, Some(k)) => Some(k.checked_neg().map(|k| (a, k))),
        (Some(k), None) if add => Some(Some((b, k))),
        // A register plus a register is no parameter plus a constant.
        _ => Some(None),
    }
}

/// `(bits, signed)` of an integer type of 8 to 64 bits (`u32`, `s64`; `b32` reads unsigned).
fn int_ty(t: Ty) -> Option<(u8, bool)> {
    let bits = t.int_bits().filter(|&b| b <= 64)?;
    Some((bits as u8, t.signed()))
}

/// `(bits, signed)` of a declared integer type's name (`u32`, `b64`).
fn int_type(t: &str) -> Option<(u8, bool)> {
    Ty::from_part(t).and_then(int_ty)
}

/// `(bits, signed)` of the integer type an operation reads its operands as: arithmetic's,
/// a comparison's, a load's, `mov`'s and `selp`'s; a conversion's source type, or its
/// destination type when the source is no integer.
fn int_of(op: &Op) -> Option<(u8, bool)> {
    match *op {
        Op::Arith(Arith { ty, .. })
        | Op::Compare(Compare { ty, .. })
        | Op::Mov(ty)
        | Op::Select(ty)
        | Op::Mem(Mem { ty, .. }) => ty.and_then(int_ty),
        Op::Convert(c) => c.from.and_then(int_ty).or_else(|| c.to.and_then(int_ty)),
        _ => None,
    }
}

/// The arithmetic form of `i` when its operator is `op` and it reads no carry (`add`, not
/// `addc`).
fn arith_of(i: &Instr, op: ArithOp) -> Option<Arith> {
    match i.op {
        Op::Arith(a) if a.op == op && !a.carry_in => Some(a),
        _ => None,
    }
}

/// `(destination, source)` of a conversion between integer types with no rounding,
/// saturation or packing (`cvt.u64.u32`).
fn int_convert(op: &Op) -> Option<((u8, bool), (u8, bool))> {
    match op {
        Op::Convert(c) => {
            let (to, from) = c.int()?;
            Some((int_ty(to)?, int_ty(from)?))
        }
        _ => None,
    }
}

/// Whether `op` converts `from` to `to`, as [`int_convert`] reads conversions.
fn converts(op: &Op, to: Ty, from: Ty) -> bool {
    int_convert(op).is_some()
        && matches!(op, Op::Convert(c) if c.to == Some(to) && c.from == Some(from))
}

/// A `ld.param` of a whole value: its type.
fn param_load(op: &Op) -> Option<Option<Ty>> {
    match op.mem() {
        Some(m) if m.op == MemOp::Ld && m.space == Space::Param => Some(m.ty),
        _ => None,
    }
}

/// What an access's offset is measured from: a buffer parameter's global address, or a
/// fixed-size array's (by its PTX name).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Base<'n> {
    Param(u32),
    Var(&'n str),
}

/// The analysis of one kernel.
pub(crate) struct Guards<'a> {
    f: &'a Function,
    /// The facts holding on entry to each block of [`Self::cfg`] (`None`: not reached).
    entry: Vec<Option<State>>,
    /// The function's definitions map ([`crate::ir::definitions`]), from its facts.
    defs: &'a Defs<'a>,
    /// Scalar parameters by name: `(index, bytes)`.
    params: BTreeMap<&'a str, (u32, u8)>,
    /// For a register `r`: the registers whose one definition is `r + k` (`add`/`sub` with an
    /// immediate, same width), with `k`.
    shifted: BTreeMap<String, Vec<(String, i64)>>,
    /// Registers left to visit for the current access (bounds the work on odd code).
    budget: std::cell::Cell<u32>,
    /// Registers [`Guards::induction`] is describing now (a cycle through them gives up).
    visiting: std::cell::RefCell<Vec<String>>,
    /// The facts holding at each statement asked about so far ([`Guards::state_at`]).
    states: std::cell::RefCell<BTreeMap<usize, std::rc::Rc<State>>>,
    /// The typed model's control-flow graph (its blocks, and the predicate value each edge is
    /// taken on) and loops, from the function's facts ([`crate::ir::Facts`]), built once by
    /// the emitter for every analysis.
    cfg: &'a Cfg,
    loops: &'a [Loop],
    /// The facts these come from, and the definition walk on them ([`Facts::reaching_def`]).
    facts: &'a Facts<'a>,
}

const MAX_DEPTH: u32 = 96;

/// A division or remainder statement: `(is a remainder, its type, dividend, divisor)`.
type DivOp<'a> = (bool, (u8, bool), &'a str, &'a str);
/// The most nodes a host check's expression may have (evaluated once per distinct launch,
/// memoized): an unrolled tile loader's offsets, with the path tests of its prologue's four
/// starts (`HostExpr::Reached`) in each counter, reach about 1,240.
const MAX_SIZE: usize = 2000;

impl<'a> Guards<'a> {
    /// `None` when the control flow cannot be followed (an indirect branch, a label defined
    /// twice): then no access is host-checked.
    pub(crate) fn new(facts: &'a Facts<'a>) -> Option<Guards<'a>> {
        let f = facts.f;
        let mut labels: BTreeSet<&str> = BTreeSet::new();
        for s in &f.stmts {
            match &s.kind {
                StmtKind::Label(l) if !labels.insert(l.as_str()) => return None,
                StmtKind::Instr(i) if i.op == Op::BranchIndexed => return None,
                _ => {}
            }
        }
        // A branch out of the function: the graph would take it as indirect.
        let outside = f.instrs().any(|i| {
            matches!(i.op, Op::Branch { .. })
                && !i
                    .operands
                    .first()
                    .is_some_and(|t| labels.contains(t.trim()))
        });
        if outside {
            return None;
        }
        let (cfg, loops, defs) = (&facts.cfg, facts.loops.as_slice(), &facts.defs);
        let mut params = BTreeMap::new();
        for (k, p) in f.params.iter().enumerate() {
            let bytes = p
                .decl
                .split_whitespace()
                .filter_map(|w| w.strip_prefix('.'))
                .find_map(|t| int_type(t).map(|(b, _)| b / 8));
            if let Some(b) = bytes {
                params.insert(p.name.as_str(), (k as u32, b));
            }
        }
        let mut shifted: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
        for (y, ks) in defs {
            let [k] = ks.as_slice() else { continue };
            let Some(StmtKind::Instr(i)) = f.stmts.get(*k).map(|s| &s.kind) else {
                continue;
            };
            if i.guard.is_some() {
                continue;
            }
            let Some(Some((r, c))) = plus_immediate(i) else {
                continue;
            };
            let same_width = f.reg_type(r).is_some() && f.reg_type(r) == f.reg_type(y);
            if is_reg(r) && same_width {
                shifted
                    .entry(r.to_string())
                    .or_default()
                    .push((y.to_string(), c));
            }
        }
        let mut g = Guards {
            f,
            entry: vec![None; cfg.blocks.len()],
            defs,
            params,
            shifted,
            budget: std::cell::Cell::new(0),
            visiting: std::cell::RefCell::new(Vec::new()),
            states: std::cell::RefCell::new(BTreeMap::new()),
            cfg,
            loops,
            facts,
        };
        g.solve();
        Some(g)
    }

    fn instr(&self, k: usize) -> Option<&'a Instr> {
        self.f.instr(k)
    }

    /// The statements of block `b`.
    fn span(&self, b: usize) -> std::ops::Range<usize> {
        self.cfg.blocks[b].stmts.clone()
    }

    /// The predicate value the edge `from -> to` is taken on, where a guarded `bra` ends
    /// `from` ([`Cfg::condition`]).
    fn taken_when(&self, from: usize, to: usize) -> Option<bool> {
        let last = self.span(from).rev().find_map(|k| self.instr(k))?;
        if !matches!(last.op, Op::Branch { .. }) {
            return None;
        }
        self.cfg.condition(from, to).map(|(_, v)| v)
    }

    /// The instruction defining `reg` when it has one definition ([`Facts::single_def`]).
    fn single_def(&self, reg: &str) -> Option<&'a Instr> {
        self.facts.single_def(reg).and_then(|k| self.instr(k))
    }
}

/// The registers an instruction writes ([`effects`]).
fn defs_of(i: &Instr) -> Vec<String> {
    effects(i).defs.into_iter().map(String::from).collect()
}
