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
//!    come from the edges of conditional branches on predicates defined by integer `setp`
//!    (either operand order, `p|q` destinations; `==` and `!=` against an immediate too,
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
use super::ptx::{Function, Guard, Instr, StmtKind};
use crate::ir::{effects, immediate, is_reg, Address, Cfg, Loop, Step};

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

struct Block {
    /// Statement indices `start..end`.
    start: usize,
    end: usize,
    succs: Vec<(usize, Edge)>,
}

#[derive(Clone, Copy)]
enum Edge {
    Always,
    /// Taken when the guard predicate is `bool`.
    When(bool),
}

/// An integer literal as a 64-bit two's complement value (`0xFFFFFFFFFFFFFFFC` is -4).
fn imm(op: &str) -> Option<i64> {
    immediate(op).map(|v| v as i64)
}

/// `add r, x, k`, `add r, k, x` or `sub r, x, k` (no carry, no saturation): `Some(Some((x,
/// k)))` with `k` as added (`None` inside when `-k` overflows); `None` for any other
/// instruction, or two registers.
fn plus_immediate(i: &Instr) -> Option<Option<(&str, i64)>> {
    if !matches!(i.op(), "add" | "sub") || i.has("cc") || i.has("sat") {
        return None;
    }
    let (a, b) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
    match (imm(a), imm(b)) {
        (None, Some(k)) if i.op() == "add" => Some(Some((a, k))),
        (None, Some(k)) => Some(k.checked_neg().map(|k| (a, k))),
        (Some(k), None) if i.op() == "add" => Some(Some((b, k))),
        // A register plus a register is no parameter plus a constant.
        _ => Some(None),
    }
}

/// `(bits, signed)` of an integer type part: `u32`, `s64`, `b32`...
fn int_type(t: &str) -> Option<(u8, bool)> {
    let (signed, rest) = match t.as_bytes().first()? {
        b'u' | b'b' => (false, &t[1..]),
        b's' => (true, &t[1..]),
        _ => return None,
    };
    match rest {
        "8" | "16" | "32" | "64" => Some((rest.parse().ok()?, signed)),
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

/// An induction variable of a counted loop but for its initial value ([`Guards::counted`]).
struct CountedParts {
    /// The statements that set the register outside the loop.
    init: Vec<usize>,
    step: HostExpr,
    last: HostExpr,
    no_wrap: Vec<HostExpr>,
    siblings: Vec<Sibling>,
}

impl CountedParts {
    fn with_init(self, init: HostExpr) -> HostExpr {
        HostExpr::Counted {
            init: Box::new(init),
            step: Box::new(self.step),
            last: Box::new(self.last),
            no_wrap: self.no_wrap,
            siblings: self.siblings,
        }
    }
}

/// The analysis of one kernel.
pub(crate) struct Guards<'a> {
    f: &'a Function,
    blocks: Vec<Block>,
    block_of: Vec<usize>,
    entry: Vec<Option<State>>,
    defs: BTreeMap<String, Vec<usize>>,
    /// Scalar parameters by name: `(index, bytes)`.
    params: BTreeMap<&'a str, (u32, u8)>,
    /// For a register `r`: the registers whose one definition is `r + k` (`add`/`sub` with an
    /// immediate, same width), with `k`.
    shifted: BTreeMap<String, Vec<(String, i64)>>,
    /// Each block's predecessors.
    preds: Vec<Vec<usize>>,
    /// Registers left to visit for the current access (bounds the work on odd code).
    budget: std::cell::Cell<u32>,
    /// Registers [`Guards::induction`] is describing now (a cycle through them gives up).
    visiting: std::cell::RefCell<Vec<String>>,
    /// The facts holding at each statement asked about so far ([`Guards::state_at`]).
    states: std::cell::RefCell<BTreeMap<usize, std::rc::Rc<State>>>,
    /// The typed model's control-flow graph and loops ([`crate::ir`]), built once by the
    /// emitter for this analysis and loop versioning both.
    cfg: &'a Cfg,
    loops: &'a [Loop],
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
    pub(crate) fn new(f: &'a Function, cfg: &'a Cfg, loops: &'a [Loop]) -> Option<Guards<'a>> {
        let mut labels: BTreeMap<&str, usize> = BTreeMap::new();
        let mut starts: BTreeSet<usize> = BTreeSet::from([0]);
        let mut defs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (k, s) in f.stmts.iter().enumerate() {
            match &s.kind {
                StmtKind::Label(l) => {
                    if labels.insert(l.as_str(), k).is_some() {
                        return None;
                    }
                    starts.insert(k);
                }
                StmtKind::Instr(i) => {
                    match i.op() {
                        "brx" => return None,
                        "bra" | "ret" | "exit" => {
                            starts.insert(k + 1);
                        }
                        _ => {}
                    }
                    for d in defs_of(i) {
                        defs.entry(d).or_default().push(k);
                    }
                }
                _ => {}
            }
        }
        let n = f.stmts.len();
        let starts: Vec<usize> = starts.into_iter().filter(|&s| s < n.max(1)).collect();
        let mut blocks: Vec<Block> = Vec::new();
        let mut block_of = vec![0; n];
        for (b, &s) in starts.iter().enumerate() {
            let e = starts.get(b + 1).copied().unwrap_or(n);
            for x in block_of.iter_mut().take(e).skip(s) {
                *x = b;
            }
            blocks.push(Block {
                start: s,
                end: e,
                succs: Vec::new(),
            });
        }
        for b in 0..blocks.len() {
            let (s, e) = (blocks[b].start, blocks[b].end);
            let last = f.stmts[s..e].iter().rev().find_map(|st| match &st.kind {
                StmtKind::Instr(i) => Some(i),
                _ => None,
            });
            let mut succs = Vec::new();
            let mut falls = true;
            if let Some(i) = last {
                match i.op() {
                    "bra" => {
                        let target = i.operands.first().map(|t| t.trim());
                        let &t = target.and_then(|t| labels.get(t))?;
                        let tb = block_of[t];
                        match &i.guard {
                            None => {
                                succs.push((tb, Edge::Always));
                                falls = false;
                            }
                            Some(g) => succs.push((tb, Edge::When(!g.negated))),
                        }
                    }
                    "ret" | "exit" if i.guard.is_none() => falls = false,
                    _ => {}
                }
            }
            if falls && b + 1 < blocks.len() {
                let guarded_bra = last.is_some_and(|i| i.op() == "bra" && i.guard.is_some());
                let edge = match last.and_then(|i| i.guard.as_ref()) {
                    Some(g) if guarded_bra => Edge::When(g.negated),
                    _ => Edge::Always,
                };
                succs.push((b + 1, edge));
            }
            blocks[b].succs = succs;
        }
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
        let mut preds = vec![Vec::new(); blocks.len()];
        for (b, blk) in blocks.iter().enumerate() {
            for &(t, _) in &blk.succs {
                preds[t].push(b);
            }
        }
        let mut shifted: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
        for (y, ks) in &defs {
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
                    .push((y.clone(), c));
            }
        }
        let mut g = Guards {
            f,
            entry: vec![None; blocks.len()],
            blocks,
            block_of,
            defs,
            params,
            shifted,
            preds,
            budget: std::cell::Cell::new(0),
            visiting: std::cell::RefCell::new(Vec::new()),
            states: std::cell::RefCell::new(BTreeMap::new()),
            cfg,
            loops,
        };
        g.solve();
        Some(g)
    }

    fn instr(&self, k: usize) -> Option<&'a Instr> {
        self.f.instr(k)
    }

    fn single_def(&self, reg: &str) -> Option<&'a Instr> {
        match self.defs.get(reg).map(Vec::as_slice) {
            Some([k]) => self.instr(*k).filter(|i| i.guard.is_none()),
            _ => None,
        }
    }

    /// The statement defining `reg` that statement `at` reads: its only definition, or the one
    /// that reaches `at` on every path ([`Self::reaching_def`]).
    fn def_index_reaching(&self, reg: &str, at: usize) -> Option<usize> {
        match self.defs.get(reg).map(Vec::as_slice) {
            Some([k]) => self.instr(*k).filter(|i| i.guard.is_none()).map(|_| *k),
            _ => self.reaching_def(reg, at),
        }
    }

    /// A comparison bound: an immediate, a register only ever loaded from a whole scalar
    /// parameter, or one only ever set to such a register plus an immediate (in the
    /// parameter's width).
    fn bound(&self, op: &str) -> Option<Bound> {
        if let Some(c) = imm(op) {
            return Some(Bound::Const(c));
        }
        if !is_reg(op) {
            return None;
        }
        let i = self.single_def(op)?;
        if let Some(plus) = plus_immediate(i) {
            let (bits, _) = i.parts().filter_map(int_type).last()?;
            let (reg, k) = plus?;
            if let Some((index, bytes)) = self.param_reg(reg) {
                return (u32::from(bytes) * 8 == u32::from(bits)).then_some(Bound::Param {
                    index,
                    bytes,
                    plus: k,
                });
            }
        }
        if let Some((index, bytes)) = self.param_reg(op) {
            return Some(Bound::Param {
                index,
                bytes,
                plus: 0,
            });
        }
        self.uniform(op, 0).then(|| Bound::Uniform(op.to_string()))
    }

    /// Whether `op` is an immediate, `%ntid`/`%nctaid`, or a register whose single definition
    /// computes it from those and whole scalar parameters with operations [`Self::def_value`]
    /// reads: its value is the same in every thread of a launch, and the host can compute it.
    fn uniform(&self, op: &str, depth: u32) -> bool {
        if imm(op).is_some() || op.starts_with("%ntid.") || op.starts_with("%nctaid.") {
            return true;
        }
        if depth > 12 || !is_reg(op) {
            return false;
        }
        let Some(i) = self.single_def(op) else {
            return false;
        };
        match i.op() {
            "ld" => self.param_reg(op).is_some(),
            "mov" | "cvt" | "add" | "sub" | "mul" | "mad" | "shl" | "shr" | "div" | "rem"
            | "and" | "not" | "min" | "max" => {
                !i.has("cc")
                    && !i.has("sat")
                    && !i.has("hi")
                    && i.parts().filter_map(int_type).last().is_some()
                    && i.operands.len() >= 2
                    && i.operands[1..].iter().all(|o| self.uniform(o, depth + 1))
            }
            _ => false,
        }
    }

    /// `sub r, x, y` where `y = q * d` and `q = x / d` (single definitions, same operands):
    /// NVVM's remainder when it also needs the quotient. `(bits, signed)` of the division,
    /// and the divisor.
    fn remainder_of(&self, i: &Instr, at: usize) -> Option<((u8, bool), &'a str)> {
        let (x, y) = (i.operands.get(1)?, i.operands.get(2)?);
        let km = self.def_index_reaching(y, at)?;
        let m = self.instr(km)?;
        if m.op() != "mul" || !m.has("lo") {
            return None;
        }
        let (a, c) = (m.operands.get(1)?, m.operands.get(2)?);
        for (q, d) in [(a, c), (c, a)] {
            // The quotient register may be one NVVM also sets on another path (the 32-bit
            // fast path of a 64-bit division): the definition that reaches the `mul`.
            let Some(kd) = self.def_index_reaching(q, km) else {
                continue;
            };
            let div = self.instr(kd)?;
            if div.op() != "div" {
                continue;
            }
            if div.operands.get(1) == Some(x) && div.operands.get(2) == Some(d) {
                // The dividend and divisor the `div`, `mul` and `sub` read are the same values.
                if !self.unchanged(x, kd, at) || !self.unchanged(d, kd, at) {
                    return None;
                }
                let ty = div.parts().filter_map(int_type).last()?;
                let sub_bits = i.parts().filter_map(int_type).last()?.0;
                return (sub_bits == ty.0).then_some((ty, d.as_str()));
            }
        }
        None
    }

    /// NVVM's signed remainder by a power of two `2^k` (`x % 16` on an `int`): `x - ((x +
    /// bias) & -2^k)` with `bias = (x >> (w - 1)) >>> (w - k)` (`2^k - 1` for a negative `x`,
    /// else 0), which is `x % 2^k` with the sign of `x`. Gives the type and `2^k`. Every
    /// register read is checked to hold the same `x` as the `sub`.
    fn pow2_remainder(&self, i: &Instr, at: usize) -> Option<((u8, bool), i64)> {
        let (bits, _) = i.parts().filter_map(int_type).last()?;
        let (x, y) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
        let def = |r: &str, at: usize| -> Option<(usize, &'a Instr)> {
            let k = self.def_index_reaching(r, at)?;
            Some((k, self.instr(k).filter(|i| i.guard.is_none())?))
        };
        let (ka, and) = def(y, at)?;
        if and.op() != "and" {
            return None;
        }
        let (m, u) = match (imm(and.operands.get(2)?), imm(and.operands.get(1)?)) {
            (Some(m), _) => (m, and.operands.get(1)?.as_str()),
            (None, Some(m)) => (m, and.operands.get(2)?.as_str()),
            _ => return None,
        };
        // m = -2^k, 0 < k < bits - 1.
        let p = m.checked_neg()?;
        if p <= 1 || !(p as u64).is_power_of_two() || p.trailing_zeros() >= u32::from(bits) - 1 {
            return None;
        }
        let k = p.trailing_zeros();
        let (ku, add) = def(u, ka)?;
        if add.op() != "add" {
            return None;
        }
        let (o1, o2) = (add.operands.get(1)?.as_str(), add.operands.get(2)?.as_str());
        let bias = match (o1 == x, o2 == x) {
            (true, _) => o2,
            (_, true) => o1,
            _ => return None,
        };
        let (kb, shru) = def(bias, ku)?;
        let unsigned_shift = shru.op() == "shr" && shru.has(&format!("u{bits}"))
            || shru.op() == "shr" && shru.has(&format!("b{bits}"));
        if !unsigned_shift || imm(shru.operands.get(2)?) != Some(i64::from(u32::from(bits) - k)) {
            return None;
        }
        let (ks, sign) = def(shru.operands.get(1)?, kb)?;
        if sign.op() != "shr"
            || !sign.has(&format!("s{bits}"))
            || sign.operands.get(1).map(String::as_str) != Some(x)
            || imm(sign.operands.get(2)?) != Some(i64::from(bits) - 1)
        {
            return None;
        }
        // The `x` the sign, the sum and the `sub` read is one value.
        let first = ks.min(ku);
        if !self.unchanged(x, first, at) {
            return None;
        }
        Some(((bits, true), p))
    }

    /// Whether register `reg` holds the same value at statements `from` and `to` (`from`
    /// first): it has one definition, or both lie in one block with no definition of it
    /// between them. An immediate always does.
    fn unchanged(&self, reg: &str, from: usize, to: usize) -> bool {
        if !is_reg(reg) {
            return true;
        }
        self.single_def(reg).is_some()
            || (self.block_of.get(from) == self.block_of.get(to)
                && from < to
                && self
                    .defs
                    .get(reg)
                    .is_some_and(|d| d.iter().all(|&x| x < from || x >= to)))
    }

    /// `(index, bytes)` of the whole scalar parameter register `op` is only ever loaded from.
    fn param_reg(&self, op: &str) -> Option<(u32, u8)> {
        let i = self.single_def(op)?;
        if i.op() != "ld" || !i.has("param") {
            return None;
        }
        let a = Address::parse(i.operands.get(1)?)?;
        let &(index, bytes) = self.params.get(a.base)?;
        let ld = i.parts().filter_map(int_type).last()?.0 / 8;
        (a.offset == 0 && ld == bytes).then_some((index, bytes))
    }

    /// Atoms that follow from `a` through the single definition of its register:
    /// `(p | q) >= 0` (how NVVM folds `p >= 0 && q >= 0`) gives `p >= 0` and `q >= 0`;
    /// `min(p, q) >= b` gives both `>= b`, `max(p, q) <= b` both `<= b`. Only registers with one
    /// definition are named, so the atoms are about the values the definition read.
    fn implied(&self, a: &Atom, at: usize, depth: u32, out: &mut Vec<Atom>) {
        if depth > 4 {
            return;
        }
        let Some(i) = self.single_def(&a.reg) else {
            return;
        };
        let Some(&def_at) = self.defs.get(&a.reg).and_then(|d| d.first()) else {
            return;
        };
        // An operand keeps the value the definition read up to `at`: it has one definition
        // (which dominates), or none between the two in one basic block.
        let unchanged = |op: &str| self.unchanged(op, def_at, at);
        if i.op() == "cvt" {
            // A widening `cvt` of an integer: the narrow register compares as the wide one.
            let parts: Vec<&str> = i.parts().collect();
            let [_, dst, src] = parts.as_slice() else {
                return;
            };
            let (Some((db, _)), Some((sb, ss))) = (int_type(dst), int_type(src)) else {
                return;
            };
            let Some(op) = i.operands.get(1).filter(|o| is_reg(o) && unchanged(o)) else {
                return;
            };
            if db != a.bits || sb >= db || self.reg_bits(op) != Some(sb) {
                return;
            }
            // Zero-extended: compares unsigned; sign-extended: signed, as the narrow value.
            let signed = match (ss, a.signed) {
                (false, _) => false,
                (true, true) => true,
                (true, false) => return,
            };
            let (lo, hi) = range_of(sb, signed);
            let bound_ok = match &a.bound {
                Bound::Const(c) => (lo..=hi).contains(&i128::from(*c)),
                // Read in the narrow width: a bound outside it fails the host check.
                Bound::Param { .. } => !signed || a.signed,
                // A wide register would be read with a wrap into the narrow width: no.
                Bound::Uniform(_) => false,
            };
            if bound_ok {
                out.push(Atom {
                    reg: op.clone(),
                    signed,
                    bits: sb,
                    ..a.clone()
                });
            }
            return;
        }
        let Some((bits, ty_signed)) = i.parts().filter_map(int_type).last() else {
            return;
        };
        if bits != a.bits || a.or_eq.is_some() {
            return;
        }
        let lower = matches!(a.op, Cmp::Ge | Cmp::Gt);
        let upper = matches!(a.op, Cmp::Le | Cmp::Lt);
        let ok = match i.op() {
            "or" => {
                a.signed
                    && matches!(
                        (a.op, &a.bound),
                        (Cmp::Ge, Bound::Const(0)) | (Cmp::Gt, Bound::Const(-1))
                    )
            }
            "min" => ty_signed == a.signed && lower,
            "max" => ty_signed == a.signed && upper,
            _ => false,
        };
        if !ok {
            return;
        }
        for op in i.operands.iter().skip(1).take(2) {
            if is_reg(op) && unchanged(op) {
                let b = Atom {
                    reg: op.clone(),
                    ..a.clone()
                };
                self.implied(&b, at, depth + 1, out);
                out.push(b);
            }
        }
    }

    fn setp_atoms(&self, i: &Instr) -> Option<Atom> {
        let parts: Vec<&str> = i.parts().collect();
        let [_, cmp, ty] = parts.as_slice() else {
            return None;
        };
        let (bits, ty_signed) = int_type(ty)?;
        if bits < 32 || ty.starts_with('b') {
            return None;
        }
        let (op, unsigned) = Cmp::of_setp(cmp)?;
        let signed = ty_signed && !unsigned;
        let (a, b) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
        let (reg, op, bound) = if is_reg(a) && self.bound(a).is_none() {
            (a, op, self.bound(b)?)
        } else if is_reg(b) {
            (b, op.flip(), self.bound(a)?)
        } else {
            return None;
        };
        // (In)equalities only with a constant: `z != 0` bounds an index that starts at 0;
        // against a launch value they rarely bound anything and only cost the analysis.
        if matches!(op, Cmp::Eq | Cmp::Ne) && !matches!(bound, Bound::Const(_)) {
            return None;
        }
        Some(Atom {
            reg: reg.to_string(),
            op,
            signed,
            bits,
            bound,
            or_eq: None,
        })
    }

    /// The state after instruction `i` (not a branch) given the state before it.
    fn transfer(&self, s: &mut State, i: &Instr, k: usize) {
        let d = defs_of(i);
        let mut gen: Vec<Fact> = Vec::new();
        if i.guard.is_none() {
            match i.op() {
                "setp" => {
                    if let Some(a) = self.setp_atoms(i) {
                        let with_implied = |a: Atom| {
                            let mut v = Vec::new();
                            self.implied(&a, k, 0, &mut v);
                            v.push(a);
                            v
                        };
                        let (yes, no) = (
                            with_implied(a.clone().normalized()),
                            with_implied(a.negate().normalized()),
                        );
                        let dst = &i.operands[0];
                        let mut ps = dst.split('|').map(str::trim);
                        if let Some(p) = ps.next() {
                            gen.push(Fact::Pred {
                                pred: p.to_string(),
                                on_true: yes.clone(),
                                on_false: no.clone(),
                            });
                        }
                        if let Some(q) = ps.next() {
                            gen.push(Fact::Pred {
                                pred: q.to_string(),
                                on_true: no,
                                on_false: yes,
                            });
                        }
                    }
                }
                "or" | "and" | "not" if i.has("pred") => {
                    let info = |p: &str| -> Option<(Vec<Atom>, Vec<Atom>)> {
                        let (neg, p) = match p.strip_prefix('!') {
                            Some(r) => (true, r),
                            None => (false, p),
                        };
                        s.iter().find_map(|f| match f {
                            Fact::Pred {
                                pred,
                                on_true,
                                on_false,
                            } if pred == p => Some(if neg {
                                (on_false.clone(), on_true.clone())
                            } else {
                                (on_true.clone(), on_false.clone())
                            }),
                            _ => None,
                        })
                    };
                    let ops = &i.operands;
                    let empty = (Vec::new(), Vec::new());
                    let (t, f) = match i.op() {
                        "not" => ops
                            .get(1)
                            .and_then(|a| info(a))
                            .map(|(t, f)| (f, t))
                            .unwrap_or(empty),
                        op => {
                            let a = ops.get(1).and_then(|a| info(a));
                            let b = ops.get(2).and_then(|b| info(b));
                            match (op, a, b) {
                                // p = a | b: false means both false.
                                ("or", Some(a), Some(b)) => (Vec::new(), [a.1, b.1].concat()),
                                ("or", Some(a), None) | ("or", None, Some(a)) => (Vec::new(), a.1),
                                ("and", Some(a), Some(b)) => ([a.0, b.0].concat(), Vec::new()),
                                ("and", Some(a), None) | ("and", None, Some(a)) => {
                                    (a.0, Vec::new())
                                }
                                _ => empty,
                            }
                        }
                    };
                    if !(t.is_empty() && f.is_empty()) {
                        if let Some(p) = ops.first() {
                            gen.push(Fact::Pred {
                                pred: p.clone(),
                                on_true: t,
                                on_false: f,
                            });
                        }
                    }
                }
                "mov" if i.operands.get(1).and_then(|o| imm(o)).is_some() => {
                    // A constant: pinned from both sides, in both readings (`join` turns a
                    // loop head's "first iteration: 0" into `or_eq`).
                    let (Some(dst), Some(c)) = (i.operands.first(), i.operands.get(1)) else {
                        unreachable!("matched above")
                    };
                    let c = imm(c).unwrap_or_default();
                    if let Some(bits) = self.reg_bits(dst).filter(|&b| b >= 32) {
                        for signed in [false, true] {
                            let v = self.host_bound(&Bound::Const(c), bits, signed);
                            let HostExpr::Const(v) = v else { continue };
                            for op in [Cmp::Ge, Cmp::Le] {
                                gen.push(Fact::Atom(Atom {
                                    reg: dst.clone(),
                                    op,
                                    signed,
                                    bits,
                                    bound: Bound::Const(v),
                                    or_eq: None,
                                }));
                            }
                        }
                    }
                }
                "mov" => {
                    if let (Some(dst), Some(src)) = (i.operands.first(), i.operands.get(1)) {
                        if is_reg(src) && self.f.reg_type(dst) == self.f.reg_type(src) {
                            for f in s.iter() {
                                match f {
                                    Fact::Atom(a) if a.reg == *src => gen.push(Fact::Atom(Atom {
                                        reg: dst.clone(),
                                        ..a.clone()
                                    })),
                                    Fact::Pred {
                                        pred,
                                        on_true,
                                        on_false,
                                    } if pred == src => gen.push(Fact::Pred {
                                        pred: dst.clone(),
                                        on_true: on_true.clone(),
                                        on_false: on_false.clone(),
                                    }),
                                    _ => {}
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for r in &d {
            s.retain(|f| match f {
                Fact::Atom(a) => a.reg != *r,
                Fact::Pred {
                    pred,
                    on_true,
                    on_false,
                } => pred != r && on_true.iter().chain(on_false).all(|a| a.reg != *r),
            });
        }
        // A generated predicate about a register the instruction also defines would be stale
        // (a copied atom is about the destination's new value, so it stays).
        for g in gen {
            let stale = match &g {
                Fact::Atom(_) => false,
                Fact::Pred {
                    on_true, on_false, ..
                } => on_true.iter().chain(on_false).any(|a| d.contains(&a.reg)),
            };
            if !stale {
                s.insert(g);
            }
        }
    }

    /// The facts a branch on `pred` being `value` adds.
    fn edge_facts(s: &State, pred: &str, value: bool) -> Vec<Fact> {
        s.iter()
            .filter_map(|f| match f {
                Fact::Pred {
                    pred: p,
                    on_true,
                    on_false,
                } if p == pred => Some(if value { on_true } else { on_false }),
                _ => None,
            })
            .flatten()
            .cloned()
            .map(Fact::Atom)
            .collect()
    }

    fn solve(&mut self) {
        if self.blocks.is_empty() {
            return;
        }
        self.entry[0] = Some(State::new());
        let mut work: Vec<usize> = vec![0];
        let mut rounds = 0usize;
        while let Some(b) = work.pop() {
            rounds += 1;
            if rounds > 200 * self.blocks.len() + 1000 {
                // Should not happen (facts only shrink); give up soundly: nothing is known.
                for e in &mut self.entry {
                    *e = Some(State::new());
                }
                return;
            }
            let Some(mut s) = self.entry[b].clone() else {
                continue;
            };
            let blk = &self.blocks[b];
            let mut branch: Option<&Instr> = None;
            for k in blk.start..blk.end {
                if let Some(i) = self.instr(k) {
                    if i.op() == "bra" {
                        branch = Some(i);
                    } else {
                        self.transfer(&mut s, i, k);
                    }
                }
            }
            let succs: Vec<(usize, Edge)> = blk.succs.clone();
            for (t, e) in succs {
                let mut out = s.clone();
                if let (Edge::When(v), Some(i)) = (e, branch) {
                    if let Some(Guard { pred: p, .. }) = &i.guard {
                        out.extend(Self::edge_facts(&s, p, v));
                    }
                }
                if t == 0 {
                    continue; // the entry knows nothing, whatever else reaches it
                }
                let new = match &self.entry[t] {
                    None => out,
                    Some(old) => join(old, &out),
                };
                if self.entry[t].as_ref() != Some(&new) {
                    self.entry[t] = Some(new);
                    work.push(t);
                }
            }
        }
    }

    /// The facts holding just before statement `k`.
    fn state_at(&self, k: usize) -> std::rc::Rc<State> {
        // Every register read at `k` asks for the facts there: computed once per statement.
        if let Some(s) = self.states.borrow().get(&k) {
            return std::rc::Rc::clone(s);
        }
        let b = self.block_of.get(k).copied().unwrap_or(0);
        let s = match self.entry.get(b).cloned().flatten() {
            Some(mut s) => {
                for j in self.blocks[b].start..k {
                    if let Some(i) = self.instr(j) {
                        if i.op() != "bra" {
                            self.transfer(&mut s, i, j);
                        }
                    }
                }
                s
            }
            // Unreachable code: claim nothing.
            None => State::new(),
        };
        let s = std::rc::Rc::new(s);
        self.states.borrow_mut().insert(k, std::rc::Rc::clone(&s));
        s
    }

    fn host_bound(&self, b: &Bound, bits: u8, signed: bool) -> HostExpr {
        match b {
            // The immediate as the comparison reads it.
            Bound::Const(c) => HostExpr::Const(const_as_read(*c, bits, signed)),
            Bound::Param { index, bytes, plus } => {
                let p = HostExpr::Param {
                    index: *index,
                    bytes: *bytes,
                    signed,
                };
                // The sum as the comparison reads it: exact when it lies in the range
                // (`In` fails the host check otherwise).
                let e = match plus {
                    0 => p,
                    k => HostExpr::Add(Box::new(p), Box::new(HostExpr::Const(*k))),
                };
                HostExpr::In {
                    e: Box::new(e),
                    bits,
                    signed,
                }
            }
            Bound::Uniform(reg) => {
                // The register's bits, as the comparison reads them. Unreadable (the budget
                // ran out): an interval no check can use.
                let saved = self.budget.replace(200);
                let value = self.value(reg, 0, 0, None);
                self.budget.set(saved);
                match value {
                    Some(e) => HostExpr::Wrap {
                        e: Box::new(e),
                        bits,
                        signed,
                    },
                    None => HostExpr::In {
                        e: Box::new(HostExpr::Const(i64::MAX)),
                        bits: 1,
                        signed: false,
                    },
                }
            }
        }
    }

    /// What holds of `reg` at `at`: atoms on `reg`, and (when `reg` has one definition) atoms
    /// on registers only ever set to `reg` plus an immediate, as facts with that offset.
    fn facts_of(&self, reg: &str, at: usize) -> Vec<HostFact> {
        let shifted: &[(String, i64)] = match self.single_def(reg) {
            Some(_) => self.shifted.get(reg).map_or(&[], Vec::as_slice),
            None => &[],
        };
        self.state_at(at)
            .iter()
            .filter_map(|f| match f {
                Fact::Atom(a) => {
                    let offset = if a.reg == reg {
                        0
                    } else {
                        shifted.iter().find(|(r, _)| *r == a.reg)?.1
                    };
                    Some(self.host_fact(a, offset))
                }
                _ => None,
            })
            .collect()
    }

    /// Facts at `at` on registers set in loop `l` to `reg + k` (directly or through a chain:
    /// `z1 = z + 1`, `z2 = z1 + 1` in an unrolled loop's copies), as facts on `reg` with offset
    /// `k`. Only definitions that run before `at` in every iteration count, and the caller
    /// makes sure `reg` is not stepped between them and `at` (its update never runs before
    /// `at` in an iteration), so each such register holds `reg + k` at `at`.
    fn shifted_facts(&self, reg: &str, l: &Loop, at: usize) -> Vec<HostFact> {
        let mut out = Vec::new();
        let mut work = vec![(reg.to_string(), 0i64)];
        let mut seen = BTreeSet::new();
        let state = self.state_at(at);
        while let Some((r, k)) = work.pop() {
            for (y, c) in self.shifted.get(&r).map_or(&[][..], Vec::as_slice) {
                let Some(kk) = k.checked_add(*c) else {
                    continue;
                };
                let Some(&dy) = self.defs.get(y).and_then(|d| d.first()) else {
                    continue;
                };
                if !l.contains_stmt(self.cfg, dy) || self.before(dy, at) != Some(true) {
                    continue;
                }
                if !seen.insert(y.clone()) {
                    continue;
                }
                for f in state.iter() {
                    if let Fact::Atom(a) = f {
                        if a.reg == *y {
                            out.push(self.host_fact(a, kk));
                        }
                    }
                }
                work.push((y.clone(), kk));
            }
        }
        out
    }

    /// What the host knows of atom `a`, about the register it names plus `offset`.
    fn host_fact(&self, a: &Atom, offset: i64) -> HostFact {
        HostFact {
            op: a.op,
            signed: a.signed,
            bound: self.host_bound(&a.bound, a.bits, a.signed),
            offset,
            or_eq: a.or_eq,
        }
    }

    fn reg_bits(&self, reg: &str) -> Option<u8> {
        let t = self.f.reg_type(reg)?;
        int_type(t).map(|(b, _)| b)
    }

    /// The value of operand `op` as read by statement `at`.
    /// `acc`: the access this value feeds, while every register between it and `op` has one
    /// definition. Such a register's definition dominates its uses (NVVM's output is SSA
    /// but for the registers phi elimination merges), so the value it held where the address
    /// was computed is the value it holds at the access, and the facts holding *there* apply
    /// too: the guard is often tested after the address arithmetic was hoisted above it.
    fn value(&self, op: &str, at: usize, depth: u32, acc: Option<usize>) -> Option<HostExpr> {
        if depth > MAX_DEPTH || self.budget.get() == 0 {
            return None;
        }
        self.budget.set(self.budget.get() - 1);
        if let Some(c) = imm(op) {
            return Some(HostExpr::Const(c));
        }
        let axis = |s: &str| match s {
            "x" => Some(0u8),
            "y" => Some(1),
            "z" => Some(2),
            _ => None,
        };
        if let Some(s) = op.strip_prefix("%tid.") {
            return axis(s).map(HostExpr::Tid);
        }
        if let Some(s) = op.strip_prefix("%ntid.") {
            return axis(s).map(HostExpr::Ntid);
        }
        if let Some(s) = op.strip_prefix("%ctaid.") {
            return axis(s).map(HostExpr::Ctaid);
        }
        if let Some(s) = op.strip_prefix("%nctaid.") {
            return axis(s).map(HostExpr::Nctaid);
        }
        if !is_reg(op) {
            return None;
        }
        let bits = self.reg_bits(op)?;
        let defs = self.defs.get(op)?;
        let def = match defs.as_slice() {
            [k] if self.instr(*k).is_some_and(|i| i.guard.is_none()) => {
                self.def_value(*k, depth + 1, acc)
            }
            [_, _, ..] => match self.reaching_def(op, at) {
                // A register NVVM reuses (`tid` kept in the register a later loop counts in):
                // where only one definition reaches, the value is that definition's.
                Some(k) => self.def_value(k, depth + 1, None),
                None => self
                    .wide_division(op, depth + 1)
                    .or_else(|| self.induction(op, bits, depth + 1))
                    .or_else(|| self.counted(op, at, depth + 1)),
            },
            _ => None,
        };
        let mut facts = self.facts_of(op, at);
        if let Some(a) = acc.filter(|&a| a != at && self.single_def(op).is_some()) {
            for f in self.facts_of(op, a) {
                if !facts.contains(&f) {
                    facts.push(f);
                }
            }
        }
        if facts.is_empty() {
            return def;
        }
        Some(HostExpr::Facts {
            def: def.map(Box::new),
            bits,
            facts,
        })
    }

    /// The one definition of `reg` that reaches statement `at` on every path, unpredicated;
    /// `None` when several do (or a path reaches the entry without one).
    fn reaching_def(&self, reg: &str, at: usize) -> Option<usize> {
        let defs = self.defs.get(reg)?;
        let last_in = |b: usize, before: usize| -> Option<usize> {
            let start = self.blocks[b].start;
            defs.iter()
                .copied()
                .filter(|&d| d >= start && d < before)
                .max()
        };
        let b0 = *self.block_of.get(at)?;
        if let Some(d) = last_in(b0, at) {
            return self.instr(d).filter(|i| i.guard.is_none()).map(|_| d);
        }
        if b0 == 0 {
            return None; // nothing before the entry block's own definitions
        }
        let mut found: Option<usize> = None;
        let mut seen = BTreeSet::new();
        let mut work: Vec<usize> = self.preds[b0].clone();
        while let Some(b) = work.pop() {
            if !seen.insert(b) {
                continue;
            }
            match last_in(b, self.blocks[b].end) {
                Some(d) => {
                    if found.is_some_and(|f| f != d) || self.instr(d)?.guard.is_some() {
                        return None;
                    }
                    found = Some(d);
                }
                None if b == 0 => return None,
                None => work.extend(self.preds[b].iter().copied()),
            }
        }
        found
    }

    /// NVVM's 64-bit division with a 32-bit fast path: `reg` is set on two paths after a
    /// test `((a | b) & 0xFFFFFFFF00000000) == 0`, by `div.s64`/`rem.s64` (or `a - (a / b) * b`)
    /// of `a` and `b` on one and by the same operation in 32 bits on their low halves,
    /// widened, on the other. The 32-bit path runs only when both lie in `[0, 2^32)`, where
    /// the two agree; so the register holds the 64-bit operation's value of `a` and `b` as
    /// the test reads them, on either path. Each step is checked: the test, the branch into
    /// the 32-bit block (its only predecessor), the low halves taken of the same registers,
    /// and no definition of `a` or `b` between the test and either operation.
    fn wide_division(&self, reg: &str, depth: u32) -> Option<HostExpr> {
        use HostExpr::*;
        let ks = self.defs.get(reg)?;
        let [k0, k1] = ks.as_slice() else {
            return None;
        };
        // `(operation is rem, type, a, b)` of a division or remainder statement.
        let op_of = |k: usize| -> Option<DivOp<'a>> {
            let i = self.instr(k).filter(|i| i.guard.is_none())?;
            let ty = i.parts().filter_map(int_type).last()?;
            let (x, y) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
            match i.op() {
                "div" | "rem" => Some((i.op() == "rem", ty, x, y)),
                "sub" => {
                    let (t, d) = self.remainder_of(i, k)?;
                    Some((true, t, x, d))
                }
                _ => None,
            }
        };
        let narrow_of = |k: usize| -> Option<(usize, DivOp<'a>)> {
            let i = self.instr(k).filter(|i| i.guard.is_none())?;
            let parts: Vec<&str> = i.parts().collect();
            if i.op() != "cvt" || parts.get(1..) != Some(&["u64", "u32"][..]) {
                return None;
            }
            let r = i.operands.get(1)?;
            let [kr] = self.defs.get(r.as_str())?.as_slice() else {
                return None;
            };
            Some((*kr, op_of(*kr)?))
        };
        let (kw, kn, (kr, narrow)) = match (narrow_of(*k0), narrow_of(*k1)) {
            (None, Some(n)) => (*k0, *k1, n),
            (Some(n), None) => (*k1, *k0, n),
            _ => return None,
        };
        let (rem, ty, a, b) = op_of(kw)?;
        if ty.0 != 64 || narrow.0 != rem || narrow.1 != (32, false) {
            return None;
        }
        // The narrow operands are the low halves of `a` and `b`.
        let low_of = |r: &str, wide: &str| {
            self.single_def(r).is_some_and(|i| {
                let parts: Vec<&str> = i.parts().collect();
                i.op() == "cvt"
                    && parts.get(1..) == Some(&["u32", "u64"][..])
                    && i.operands.get(1).map(String::as_str) == Some(wide)
            })
        };
        if !low_of(narrow.2, a) || !low_of(narrow.3, b) {
            return None;
        }
        // The 32-bit block: entered only from the test's branch, when its predicate says
        // the high halves are zero; the low halves taken there, where `a` and `b` are the
        // values the test read (checked below).
        let bn = *self.block_of.get(kn)?;
        let in_bn = |r: &str| {
            self.defs
                .get(r)
                .and_then(|ds| ds.first())
                .is_some_and(|&k| self.block_of.get(k) == Some(&bn))
        };
        if *self.block_of.get(kr)? != bn || !in_bn(narrow.2) || !in_bn(narrow.3) {
            return None;
        }
        let [bp] = self.preds[bn].as_slice() else {
            return None;
        };
        let blk = &self.blocks[*bp];
        let (bra_k, bra) = (blk.start..blk.end)
            .rev()
            .find_map(|k| self.instr(k).map(|i| (k, i)))?;
        let pred = &bra.guard.as_ref().filter(|_| bra.op() == "bra")?.pred;
        let taken_when = blk
            .succs
            .iter()
            .find(|(t, _)| *t == bn)
            .and_then(|(_, e)| match e {
                Edge::When(v) => Some(*v),
                Edge::Always => None,
            })?;
        let setp = self.single_def(pred)?;
        let sparts: Vec<&str> = setp.parts().collect();
        let high_zero_when = match sparts.as_slice() {
            [_, "eq", t] if t.ends_with("64") => true,
            [_, "ne", t] if t.ends_with("64") => false,
            _ => return None,
        };
        if taken_when != high_zero_when || imm(setp.operands.get(2)?) != Some(0) {
            return None;
        }
        let and = self.single_def(setp.operands.get(1)?)?;
        if and.op() != "and" || imm(and.operands.get(2)?) != Some(-4_294_967_296) {
            return None;
        }
        let or_reg = and.operands.get(1)?;
        let [k_or] = self.defs.get(or_reg.as_str())?.as_slice() else {
            return None;
        };
        let or = self
            .instr(*k_or)
            .filter(|i| i.op() == "or" && i.guard.is_none())?;
        let (o1, o2) = (or.operands.get(1)?.as_str(), or.operands.get(2)?.as_str());
        if !((o1 == a && o2 == b) || (o1 == b && o2 == a)) || self.block_of.get(*k_or)? != bp {
            return None;
        }
        // No definition of `a` or `b` after the test in its block, in the 32-bit block, or
        // before the 64-bit operation in its block (entered from the test's block alone).
        let bw = *self.block_of.get(kw)?;
        if self.preds[bw].as_slice() != [*bp] {
            return None;
        }
        let redefined = |from: usize, to: usize| {
            [a, b].iter().any(|r| {
                self.defs
                    .get(*r)
                    .is_some_and(|ds| ds.iter().any(|&d| d > from && d < to))
            })
        };
        // (`redefined` excludes its first statement: a block's is taken one before it.)
        if redefined(*k_or, bra_k)
            || redefined(self.blocks[bn].start.checked_sub(1)?, kn)
            || redefined(self.blocks[bw].start.checked_sub(1)?, kw)
        {
            return None;
        }
        let w = |e: HostExpr| {
            Box::new(Wrap {
                e: Box::new(e),
                bits: 64,
                signed: ty.1,
            })
        };
        let (x, y) = (
            w(self.value(a, *k_or, depth + 1, None)?),
            w(self.value(b, *k_or, depth + 1, None)?),
        );
        Some(if rem { Rem(x, y) } else { Div(x, y) })
    }

    /// A register with several definitions, as an increasing induction variable.
    fn induction(&self, reg: &str, bits: u8, depth: u32) -> Option<HostExpr> {
        // A definition that reads `reg` back through a chain (`r = t + s`, `t = r + s` in an
        // unrolled loop) would describe `reg` by itself: give up at once rather than recurse
        // until the depth limit (the loop's own analysis, `counted`, may still know it).
        if self.visiting.borrow().iter().any(|r| r == reg) {
            return None;
        }
        self.visiting.borrow_mut().push(reg.to_string());
        let e = self.induction_of(reg, bits, depth);
        self.visiting.borrow_mut().pop();
        e
    }

    fn induction_of(&self, reg: &str, bits: u8, depth: u32) -> Option<HostExpr> {
        let mut inits = Vec::new();
        let mut steps = Vec::new();
        let mut signed: Option<bool> = None;
        for &k in self.defs.get(reg)? {
            let i = self.instr(k)?;
            if defs_of(i).len() != 1 {
                return None;
            }
            let ops = &i.operands;
            let step_of = if i.op() == "add" && !i.has("cc") && !i.has("sat") {
                match (ops.get(1), ops.get(2)) {
                    (Some(a), Some(b)) if a == reg && b != reg => Some(b),
                    (Some(a), Some(b)) if b == reg && a != reg => Some(a),
                    _ => None,
                }
            } else {
                None
            };
            if let Some(x) = step_of {
                // The guard on the old value, at the step.
                let mut guards: Vec<HostFact> = self
                    .facts_of(reg, k)
                    .into_iter()
                    .filter(|f| matches!(f.op, Cmp::Lt | Cmp::Le))
                    .collect();
                let g = match signed {
                    Some(s) => guards.into_iter().find(|f| f.signed == s)?,
                    None => {
                        let g = guards.pop()?;
                        signed = Some(g.signed);
                        g
                    }
                };
                let step = self.value(x, k, depth + 1, None)?;
                steps.push(IvStep { step, guard: g });
            } else {
                // Any definition whose value can be described (`def_value` gives up on the
                // others, and then so does this).
                inits.push(self.reached_value(k, depth + 1)?);
            }
        }
        if steps.is_empty()
            && self
                .loops
                .iter()
                .any(|l| l.ivs.iter().any(|v| v.reg == reg))
        {
            // A loop's counter stepped through a copy (`r49 = r186 + 1024; r186 = r49`): the
            // copy's value is the counter's next one, and a hull with it would hold a value
            // past the loop's last; the loop's own analysis (`counted`) bounds it.
            return None;
        }
        if steps.is_empty() {
            // Only plain definitions (a value merged after a branch, as NVVM's 32-bit fast
            // path of a 64-bit division sets the quotient on two paths): the register holds
            // what one of them wrote, each described at its own statement, so the hull of
            // their values bounds it. A definition that reads the register itself (through
            // copies) cannot be described (the recursion gives up) and nothing is returned.
            return Some(HostExpr::Hull(inits));
        }
        Some(HostExpr::Iv {
            bits,
            signed: signed.unwrap_or(true),
            inits,
            steps,
        })
    }

    /// Whether statement `x` runs before statement `y` in every iteration of the loop holding
    /// both: the same block in order, or `x`'s block dominating `y`'s (every path from the
    /// header to `y` passes `x`; see `ir::loops`). `None` when neither is known.
    fn before(&self, x: usize, y: usize) -> Option<bool> {
        let (bx, by) = (self.cfg.block_of(x)?, self.cfg.block_of(y)?);
        if bx == by {
            Some(x < y)
        } else if self.cfg.dominates(bx, by) {
            Some(true)
        } else if self.cfg.dominates(by, bx) {
            Some(false)
        } else {
            None
        }
    }

    /// A register stepped once per iteration of a counted loop, as read at `at`: see
    /// [`Guards::counted_parts`].
    fn counted(&self, reg: &str, at: usize, depth: u32) -> Option<HostExpr> {
        let c = self.counted_parts(reg, at, depth)?;
        let mut es = c
            .init
            .iter()
            .map(|&k| self.reached_value(k, depth + 1))
            .collect::<Option<Vec<_>>>()?;
        let init = if es.len() == 1 {
            es.remove(0)
        } else {
            HostExpr::Hull(es)
        };
        let e = c.with_init(init);
        (e.size() <= MAX_SIZE).then_some(e)
    }

    /// The value statement `k` writes, as one of several definitions merging before a use:
    /// [`HostExpr::Reached`] with what the branches before `k` say of other registers (each
    /// with a single definition, so a fact at `k` is about the one value it holds), so that a
    /// launch for which those facts cannot hold leaves `k`'s value out of the merge's hull.
    /// NVVM's prologue to a loop unrolled by four (`for (l = tid; l < 1024; l += 256)` with
    /// the block unknown) sets the main loop's counter to `l`, `l + 256`, `l + 512` or
    /// `l + 768` by the remainder `r` of the trip count, each after a test of `r`; a launch
    /// whose block fixes `r` at 0 reaches the main loop with `l` alone.
    fn reached_value(&self, k: usize, depth: u32) -> Option<HostExpr> {
        /// Registers asked about per definition (their values are described at `k`).
        const MAX_WHEN: usize = 4;
        let e = self.def_value(k, depth + 1, None)?;
        let written = self.instr(k).map(defs_of).unwrap_or_default();
        let mut regs: Vec<String> = self
            .state_at(k)
            .iter()
            .filter_map(|f| match f {
                // The tests that pick a path by a value (`r == 0`, `r != 1`): a bound on a
                // value (`l < n`) is the register's own fact where it is read.
                Fact::Atom(a) if matches!(a.op, Cmp::Eq | Cmp::Ne) => Some(a.reg.clone()),
                _ => None,
            })
            .filter(|r| !written.contains(r) && self.single_def(r).is_some())
            .collect();
        regs.sort();
        regs.dedup();
        regs.truncate(MAX_WHEN);
        let when: Vec<HostExpr> = regs
            .iter()
            .filter_map(|r| match self.value(r, k, depth + 1, None)? {
                w @ HostExpr::Facts { .. } => Some(w),
                _ => None,
            })
            .collect();
        let size = 1 + e.size() + when.iter().map(HostExpr::size).sum::<usize>();
        if when.is_empty() || size > MAX_SIZE {
            return Some(e);
        }
        Some(HostExpr::Reached {
            e: Box::new(e),
            when,
        })
    }

    /// `reg` as statement `at` reads it, where `reg` steps once per iteration of a loop with
    /// a recognized exit test, but for its value on entry (the statements that set it).
    ///
    /// **The loop.** [`mod@crate::ir::loops`] finds a counter `c`: set before the loop (every
    /// definition outside it unguarded; their hull is its start `c0`, one of them reaches the
    /// loop since NVVM never reads a register before writing it), stepped once per iteration
    /// by `sc` (one unguarded definition in the loop, in a block that dominates every latch
    /// and lies in no nested loop; an immediate or invariant register, or a chain of them),
    /// and tested by a branch that leaves the loop on one outcome. Iteration `j` (from 0)
    /// runs only if the tests of iterations `0..j` went on; the test of iteration `i` reads
    /// `c0 + (i + a) * sc`, `a` being 1 when the test follows the counter's update in every
    /// iteration (the same block in order, or by dominance; otherwise nothing is claimed).
    /// Other exits (a `break`) only end the loop sooner, which a bound on `j` still covers.
    ///
    /// - Going on while `c < B` (`<=`, and the negated `>=`, `>` forms, rewritten so): every
    ///   tested value that went on is below `B`, so `j <= ceil((B - c0) / sc) - a` (the
    ///   division requires `sc > 0` at launch, or the check fails). The counter never wraps:
    ///   `c0 + sc` and `B - 1 + sc` must lie in its range, checked at launch; then every
    ///   value it takes is exact. Counting down (`c > B`) is the mirror image.
    /// - Going on while `c != B` (NVRTC's unrolled loops): only where the launch fixes `c0`
    ///   and `B` to single values, `sc` divides `B - c0` exactly and the quotient `q` is at
    ///   least `a` ([`HostExpr::Quot`]): then the counter reaches `B` after exactly `q` steps
    ///   without wrapping (every value between `c0` and `B` is in range), and `j <= q - a`.
    ///   Otherwise the check fails. `q = 0` with the loop entered only when `c0 != B` (the
    ///   guard NVRTC puts around a remainder loop; `ExitTest::entered_if_unequal`) means the
    ///   loop does not run at all.
    ///
    /// A statement after the test in its iteration runs only if that test went on: one less.
    /// **The register** (`reg`, stepped once per iteration by `s` the same way, set before
    /// the loop at `init`) holds `init + j * s` before its update in iteration `j` and
    /// `init + (j + 1) * s` after it; after the loop, `init + k * s` for `k` up to one more
    /// than the last iteration. These are representatives of its bits (addition and
    /// multiplication are ring operations), which the expressions that read them interpret
    /// as the module docs say.
    fn counted_parts(&self, reg: &str, at: usize, depth: u32) -> Option<CountedParts> {
        use crate::ir::Cmp as C;
        use HostExpr::*;
        let b = Box::new;
        // The innermost loop where `reg` steps; `at` inside it, or after it (then the value
        // is one the loop left: any number of steps up to all the iterations').
        let l = self
            .loops
            .iter()
            .rev()
            .find(|l| l.ivs.iter().any(|iv| iv.reg == reg))?;
        let inside = l.contains_stmt(self.cfg, at);
        let t = l.exit_test.as_ref().filter(|t| !t.narrowed)?;
        let iv = l.ivs.iter().find(|iv| iv.reg == reg)?;
        let c = &l.ivs[t.iv];
        // Every definition outside the loop, none guarded (one of them reaches the loop: a
        // register is not read before it is written).
        let init_of = |r: &str| -> Option<Vec<usize>> {
            let outside: Vec<usize> = self
                .defs
                .get(r)?
                .iter()
                .copied()
                .filter(|&k| !l.contains_stmt(self.cfg, k))
                .collect();
            let plain = outside
                .iter()
                .all(|&k| self.instr(k).is_some_and(|i| i.guard.is_none()));
            (plain && !outside.is_empty() && outside.len() <= 4).then_some(outside)
        };
        let values = |ks: &[usize]| -> Option<HostExpr> {
            let mut es = ks
                .iter()
                .map(|&k| self.reached_value(k, depth + 1))
                .collect::<Option<Vec<_>>>()?;
            Some(if es.len() == 1 {
                es.remove(0)
            } else {
                Hull(es)
            })
        };
        let step_of = |v: &crate::ir::Induction| -> Option<HostExpr> {
            let mut sum: Option<HostExpr> = None;
            for term in &v.steps {
                let e = match term {
                    Step::Imm(k) => Const(i64::try_from(*k).ok()?),
                    Step::Reg { reg: s, negated } => {
                        let e = self.value(s, v.update, depth + 1, None)?;
                        if *negated {
                            Sub(b(Const(0)), b(e))
                        } else {
                            e
                        }
                    }
                };
                sum = Some(match sum {
                    None => e,
                    Some(x) => Add(b(x), b(e)),
                });
            }
            sum
        };
        let cbits = self.reg_bits(&c.reg)?;
        let setp = self.instr(t.setp)?;
        if setp.parts().filter_map(int_type).last()?.0 != cbits {
            return None;
        }
        let read = |e: HostExpr| Wrap {
            e: b(e),
            bits: cbits,
            signed: t.signed,
        };
        let in_range = |e: HostExpr| In {
            e: b(e),
            bits: cbits,
            signed: t.signed,
        };
        let operand = |x: &crate::ir::Bound, at: usize| -> Option<HostExpr> {
            Some(match x {
                crate::ir::Bound::Imm(k) => Const(i64::try_from(*k).ok()?),
                crate::ir::Bound::Reg(r) => read(self.value(r, at, depth + 1, None)?),
            })
        };
        let bound = operand(&t.bound, t.setp)?;
        // `c + k != B` is `c != B - k` (an equality test, exact modulo the width).
        let bound = match &t.offset {
            None => bound,
            Some(k) => read(Sub(b(bound), b(operand(k, t.reads)?))),
        };
        let c0 = read(values(&init_of(&c.reg)?)?);
        let sc = step_of(c)?;
        // a: the test reads the counter after this iteration's update.
        let a = i64::from(self.before(c.update, t.reads)?);
        // One less for a statement after the test, which runs only when the test went on;
        // not for one that may run before it (a conditional block earlier in the body,
        // neither dominating nor dominated by the test's block: no less, which is sound).
        let after_test = inside
            && self.cfg.block_of(at)? != self.cfg.block_of(t.branch)?
            && self.before(at, t.branch) == Some(false);
        let minus = |e: HostExpr, k: i64| if k == 0 { e } else { Sub(b(e), b(Const(k))) };
        let one = || Const(1);
        let ceil_div =
            |x: HostExpr, d: HostExpr| Div(b(Add(b(x), b(Sub(b(d.clone()), b(one()))))), b(d));
        // `last`: the largest iteration index at `at` (see the doc comment).
        let (count, no_wrap) = match (t.cmp, t.continue_if) {
            // Going on while `c < B` (`c <= b` is `c < b + 1`); the step must be positive.
            (C::Lt, true) | (C::Ge, false) | (C::Le, true) | (C::Gt, false) => {
                let plus = i64::from(matches!(
                    (t.cmp, t.continue_if),
                    (C::Le, true) | (C::Gt, false)
                ));
                let bb = Add(b(bound), b(Const(plus)));
                let nw = vec![
                    in_range(Add(b(c0.clone()), b(sc.clone()))),
                    in_range(Add(b(Sub(b(bb.clone()), b(one()))), b(sc.clone()))),
                ];
                (ceil_div(Sub(b(bb), b(c0)), sc), nw)
            }
            // Going on while `c > B` (`c >= b` is `c > b - 1`), counting down.
            (C::Gt, true) | (C::Le, false) | (C::Ge, true) | (C::Lt, false) => {
                let minus_one = i64::from(matches!(
                    (t.cmp, t.continue_if),
                    (C::Ge, true) | (C::Lt, false)
                ));
                let bb = Sub(b(bound), b(Const(minus_one)));
                let down = Sub(b(Const(0)), b(sc.clone()));
                // The start stepped, and the last value that goes on (`B + 1`) stepped.
                let nw = vec![
                    in_range(Add(b(c0.clone()), b(sc))),
                    in_range(Sub(b(Add(b(bb.clone()), b(one()))), b(down.clone()))),
                ];
                (ceil_div(Sub(b(c0), b(bb)), down), nw)
            }
            // Going on while `c != B`: only where it reaches `B` exactly, from a launch's one
            // start, in at least `a` steps (else it would wrap around).
            (C::Ne, true) | (C::Eq, false) => (
                Quot {
                    a: b(Sub(b(bound), b(c0))),
                    b: b(sc),
                    min: a,
                    // Only inside the loop: after it, the start's value still flows on.
                    zero_unreached: inside && t.entered_if_unequal,
                },
                Vec::new(),
            ),
            _ => return None,
        };
        let last = minus(count, a + i64::from(after_test));
        let steps_before = if !inside {
            // After the loop: every iteration's update may have run.
            Add(b(last), b(one()))
        } else if l.may_follow_in_iteration(self.cfg, iv.update, at) {
            // The update may have run before `at` in this iteration: one more step.
            Add(b(last), b(one()))
        } else {
            last
        };
        // Whether each counter's update has run by `at` in every iteration (1), in none (0),
        // or it depends on the path (no sibling is described then).
        let ran = |update: usize| -> Option<i8> {
            if self.before(update, at) == Some(true) {
                Some(1)
            } else if !l.may_follow_in_iteration(self.cfg, update, at) {
                Some(0)
            } else {
                None
            }
        };
        let mut siblings = Vec::new();
        if let (true, Some(own)) = (inside, ran(iv.update)) {
            for o in l.ivs.iter().filter(|o| o.reg != reg) {
                let mut facts = self.facts_of(&o.reg, at);
                if ran(o.update) == Some(0) {
                    facts.extend(self.shifted_facts(&o.reg, l, at));
                }
                let (Some(theirs), false) = (ran(o.update), facts.is_empty()) else {
                    continue;
                };
                let (Some(init), Some(step), Some(bits)) = (
                    init_of(&o.reg).and_then(|ks| values(&ks)),
                    step_of(o),
                    self.reg_bits(&o.reg),
                ) else {
                    continue;
                };
                siblings.push(Sibling {
                    init,
                    step,
                    shift: theirs - own,
                    bits,
                    facts,
                });
            }
        }
        Some(CountedParts {
            init: init_of(reg)?,
            step: step_of(iv)?,
            last: steps_before,
            no_wrap,
            siblings,
        })
    }

    /// The value statement `k` writes to its destination.
    fn def_value(&self, k: usize, depth: u32, acc: Option<usize>) -> Option<HostExpr> {
        use HostExpr::*;
        let i = self.instr(k)?;
        if depth > MAX_DEPTH {
            return None;
        }
        let ops = &i.operands;
        let v = |n: usize| self.value(ops.get(n)?, k, depth + 1, acc);
        let b = Box::new;
        let ty = i.parts().filter_map(int_type).last();
        if i.op() == "sub" {
            if let Some(e) = self.remainder_value(i, k, depth, acc) {
                return (e.size() <= MAX_SIZE).then_some(e);
            }
        }
        let e = match i.op() {
            "mov" if ty.is_some() => v(1)?,
            "ld" if i.has("param") => {
                let a = Address::parse(ops.get(1)?)?;
                let &(index, bytes) = self.params.get(a.base)?;
                let (bits, signed) = ty?;
                if a.offset != 0 || bits / 8 != bytes {
                    return None;
                }
                Param {
                    index,
                    bytes,
                    signed,
                }
            }
            "cvt" => {
                let parts: Vec<&str> = i.parts().collect();
                // cvt.dst.src, integer types only, no rounding or saturation.
                let [_, dst, src] = parts.as_slice() else {
                    return None;
                };
                let (db, _) = int_type(dst)?;
                let (sb, ss) = int_type(src)?;
                if db > sb {
                    Wrap {
                        e: b(v(1)?),
                        bits: sb,
                        signed: ss,
                    }
                } else {
                    v(1)?
                }
            }
            // Both operands read as the operation's type reads them.
            "min" | "max" | "div" | "rem" if !i.has("relu") => {
                let (bits, signed) = ty?;
                let w = |e: HostExpr| {
                    b(Wrap {
                        e: b(e),
                        bits,
                        signed,
                    })
                };
                let (x, y) = (w(v(1)?), w(v(2)?));
                match i.op() {
                    "min" => Min(x, y),
                    "max" => Max(x, y),
                    "div" => Div(x, y),
                    _ => Rem(x, y),
                }
            }
            "add" | "sub" if !i.has("cc") && !i.has("sat") && ty.is_some() => {
                let (x, y) = (v(1)?, v(2)?);
                if i.op() == "add" {
                    Add(b(x), b(y))
                } else {
                    Sub(b(x), b(y))
                }
            }
            "mul" | "mad" => {
                let (bits, signed) = ty?;
                let prod = if i.has("lo") {
                    Mul(b(v(1)?), b(v(2)?))
                } else if i.has("wide") {
                    let w = |e: HostExpr| Wrap {
                        e: b(e),
                        bits,
                        signed,
                    };
                    Mul(b(w(v(1)?)), b(w(v(2)?)))
                } else {
                    return None;
                };
                if i.op() == "mad" {
                    if i.has("cc") || i.has("sat") || i.has("hi") {
                        return None;
                    }
                    Add(b(prod), b(v(3)?))
                } else {
                    prod
                }
            }
            "shl" => {
                let (bits, _) = ty?;
                let s = imm(ops.get(2)?)?;
                if !(0..i64::from(bits)).contains(&s) {
                    return None;
                }
                Shl(b(v(1)?), s as u32)
            }
            "shr" => {
                let (bits, signed) = ty?;
                let s = imm(ops.get(2)?)?;
                if !(0..i64::from(bits)).contains(&s) {
                    return None;
                }
                Shr {
                    e: b(v(1)?),
                    bits,
                    signed,
                    k: s as u32,
                }
            }
            "and" => {
                let (bits, _) = ty?;
                let (m, x) = match imm(ops.get(2)?) {
                    Some(m) => (m, ops.get(1)?),
                    None => (imm(ops.get(1)?)?, ops.get(2)?),
                };
                let (_, top) = range_of(bits, true);
                if m < 0 || i128::from(m) > top {
                    return None;
                }
                match self.value(x, k, depth + 1, acc) {
                    Some(e) => And { e: b(e), mask: m },
                    None => Mask(m),
                }
            }
            "not" if ty.is_some() => Sub(b(Const(-1)), b(v(1)?)),
            // `p ? a : b` (`causal ? min(seq, end) : seq`): one of the two, whichever `p`
            // picks; their hull holds it.
            "selp" if ty.is_some() => Hull(vec![v(1)?, v(2)?]),
            _ => return None,
        };
        (e.size() <= MAX_SIZE).then_some(e)
    }

    /// A `sub` that is one of NVVM's remainder idioms (`a - (a / b) * b`, or `a - ((a + bias)
    /// & -2^k)` for a power of two), as a remainder; `None` for any other `sub`, or when an
    /// operand's value cannot be described.
    fn remainder_value(
        &self,
        i: &Instr,
        k: usize,
        depth: u32,
        acc: Option<usize>,
    ) -> Option<HostExpr> {
        use HostExpr::*;
        // Both operands read as the division reads them; the power of two is a constant.
        let w = |e: HostExpr, (bits, signed): (u8, bool)| {
            Box::new(Wrap {
                e: Box::new(e),
                bits,
                signed,
            })
        };
        let (ty, d) = match self.pow2_remainder(i, k) {
            Some((ty, m)) => (ty, Box::new(Const(m))),
            None => {
                let (ty, d) = self.remainder_of(i, k)?;
                (ty, w(self.value(d, k, depth + 1, acc)?, ty))
            }
        };
        Some(Rem(
            w(self.value(i.operands.get(1)?, k, depth + 1, acc)?, ty),
            d,
        ))
    }

    /// The offset of `reg` from the base of parameter `param`'s buffer, as read at `at`.
    /// `cvta`: whether a `cvta.to.global` lies on the way (the device check's base is the
    /// global address).
    fn offset(
        &self,
        reg: &str,
        base: Base<'_>,
        depth: u32,
        cvta: &mut u32,
        acc: usize,
        at: usize,
    ) -> Option<HostExpr> {
        if depth > MAX_DEPTH {
            return None;
        }
        if self.defs.get(reg)?.len() > 1 {
            // A register NVVM reuses: where one definition reaches `at`, its value.
            if let Some(k) = self.reaching_def(reg, at) {
                return self.offset_def(k, base, depth + 1, cvta, acc);
            }
            // A pointer stepped through a counted loop, as statement `at` reads it: its
            // offset on entry, plus the steps.
            let c = self.counted_parts(reg, at, depth + 1)?;
            let mut es = Vec::new();
            let start = *cvta;
            for &k in &c.init {
                // Each start must reach the base through the same conversions.
                let mut cv = start;
                es.push(self.offset_def(k, base, depth + 1, &mut cv, acc)?);
                if es.len() == 1 {
                    *cvta = cv;
                } else if cv != *cvta {
                    return None;
                }
            }
            let init = if es.len() == 1 {
                es.remove(0)
            } else {
                HostExpr::Hull(es)
            };
            return Some(c.with_init(init));
        }
        self.single_def(reg)?;
        let k = *self.defs.get(reg)?.first()?;
        self.offset_def(k, base, depth, cvta, acc)
    }

    /// The offset from `base` of the value statement `k` writes (see [`Guards::offset`]).
    fn offset_def(
        &self,
        k: usize,
        base: Base<'_>,
        depth: u32,
        cvta: &mut u32,
        acc: usize,
    ) -> Option<HostExpr> {
        let i = self.instr(k).filter(|i| i.guard.is_none())?;
        let ops = &i.operands;
        if let Base::Var(name) = base {
            // The array's address, in its window or made generic: offsets within it are
            // the same either way.
            match i.op() {
                "mov" if ops.get(1).map(String::as_str) == Some(name) => {
                    return Some(HostExpr::Const(0))
                }
                "cvta" if !i.has("global") => {
                    return self.offset(ops.get(1)?, base, depth + 1, cvta, acc, k)
                }
                _ => {}
            }
        }
        let param = match base {
            Base::Param(p) => p,
            Base::Var(_) => u32::MAX,
        };
        match i.op() {
            "cvta" if i.has("to") && i.has("global") => {
                *cvta += 1;
                self.offset(ops.get(1)?, base, depth + 1, cvta, acc, k)
            }
            "mov" if i.has("u64") || i.has("b64") || i.has("s64") => {
                self.offset(ops.get(1)?, base, depth + 1, cvta, acc, k)
            }
            "ld" if i.has("param") && (i.has("u64") || i.has("b64")) && param != u32::MAX => {
                let a = Address::parse(ops.get(1)?)?;
                let (index, _) = *self.params.get(a.base)?;
                (index == param && a.offset == 0).then_some(HostExpr::Const(0))
            }
            "add" | "sub" if (i.has("s64") || i.has("u64")) && !i.has("cc") => {
                let (a, b) = (ops.get(1)?, ops.get(2)?);
                let mut c = *cvta;
                if let Some(o) = is_reg(a)
                    .then(|| self.offset(a, base, depth + 1, &mut c, acc, k))
                    .flatten()
                {
                    *cvta = c;
                    let x = self.value(b, k, depth + 1, Some(acc))?;
                    return Some(if i.op() == "add" {
                        HostExpr::Add(Box::new(o), Box::new(x))
                    } else {
                        HostExpr::Sub(Box::new(o), Box::new(x))
                    });
                }
                if i.op() == "add" && is_reg(b) {
                    let o = self.offset(b, base, depth + 1, cvta, acc, k)?;
                    let x = self.value(a, k, depth + 1, Some(acc))?;
                    return Some(HostExpr::Add(Box::new(o), Box::new(x)));
                }
                None
            }
            _ => None,
        }
    }

    /// The byte offset of access operand `op` (an address `[%rd+imm]`) of statement `k` from
    /// the base of parameter `param`'s global buffer, when it can be expressed.
    pub(crate) fn access_offset(&self, k: usize, op: &str, base: Base<'_>) -> Option<HostExpr> {
        let a = Address::parse(op)?;
        if !is_reg(a.base) || self.reg_bits(a.base) != Some(64) {
            return None;
        }
        let mut cvta = 0;
        self.budget.set(2000);
        let o = self.offset(a.base, base, 0, &mut cvta, k, k)?;
        if matches!(base, Base::Param(_)) && cvta != 1 {
            return None;
        }
        let e = HostExpr::In {
            e: Box::new(HostExpr::Add(
                Box::new(o),
                Box::new(HostExpr::Const(a.offset)),
            )),
            bits: 64,
            signed: false,
        };
        (e.size() <= MAX_SIZE).then_some(e)
    }
}

/// The registers an instruction writes ([`effects`]).
fn defs_of(i: &Instr) -> Vec<String> {
    effects(i).defs.into_iter().map(String::from).collect()
}

#[cfg(test)]
mod tests {
    use super::super::{instrument_ptx_with, InstrumentOptions, InstrumentedKernel, LaunchValues};
    use super::*;

    /// A kernel `k(float* out, u32 n)` (and a third parameter `int* m`) with `body`.
    fn kernel(body: &str) -> InstrumentedKernel {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1, .param .u64 k_param_2)\n{{\n\
             \t.reg .pred %p<8>;\n\t.reg .f32 %f<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
             \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_1];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.f32 %f1, 0f3F800000;\n{body}\n$L__END:\n\tret;\n}}\n"
        );
        let opts = InstrumentOptions::new().host_checks(true);
        let out = instrument_ptx_with(&ptx, &opts).unwrap();
        let k = out.kernels.into_iter().next().unwrap();
        assert!(k.coverage.is_complete());
        assert_eq!(
            k.coverage.checked + k.coverage.host_checked,
            1 + u32::from(body.contains("ld.global")),
            "one access: {k:?}"
        );
        k
    }

    /// Whether the launch (grid, block, `n`, `out`'s bytes) runs the access unchecked on the
    /// device: it is host-checked, and the host check holds.
    fn holds(k: &InstrumentedKernel, grid: u32, block: u32, n: u32, len: u64) -> bool {
        if k.host_checks.is_empty() {
            return false;
        }
        let scalars = [None, Some((u64::from(n), 4)), None];
        let v = LaunchValues {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            scalars: &scalars,
            lens: &[len, u64::MAX, u64::MAX],
        };
        k.host_checks_hold(&v)
    }

    const STORE: &str =
        "\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;";

    /// `for (r = 0; r < n; r++) s += out[r * n + tid]` as NVRTC writes it: the address a
    /// pointer stepping by `n * 4`, the counter tested at the bottom (a rotated loop).
    const COLUMN: &str = "\tsetp.lt.s32 %p1, %r1, 1;\n\t@%p1 bra $L__END;\n\
        \tmov.u32 %r5, %tid.x;\n\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd5, %rd2, %rd3;\n\
        \tmul.wide.s32 %rd6, %r1, 4;\n\tmov.u32 %r6, 0;\n\
        $L__LOOP:\n\tld.global.f32 %f2, [%rd5];\n\tadd.f32 %f1, %f1, %f2;\n\
        \tadd.s64 %rd5, %rd5, %rd6;\n\tadd.s32 %r6, %r6, 1;\n\
        \tsetp.lt.s32 %p2, %r6, %r1;\n\t@%p2 bra $L__LOOP;\n\tst.global.f32 [%rd2], %f1;";

    #[test]
    fn a_column_loop_is_checked_once_per_launch_over_every_iteration() {
        let k = kernel(COLUMN);
        assert_eq!(k.coverage.host_checked, 2, "{k:?}");
        // rows = n = 100, one block of 100 threads (columns): the last read is element
        // 99 * 100 + 99, so 100 * 100 floats are exactly enough.
        assert!(holds(&k, 1, 100, 100, 100 * 100 * 4));
        assert!(!holds(&k, 1, 100, 100, 100 * 100 * 4 - 4));
        // A wider block reads past the last row's end.
        assert!(!holds(&k, 1, 101, 100, 100 * 100 * 4));
        // n = 0: the kernel returns before the loop, but the check assumes the first
        // iteration runs (it does not use the test before the loop): row 0 must fit.
        assert!(holds(&k, 1, 100, 0, 400));
        assert!(!holds(&k, 1, 100, 0, 396));
    }

    #[test]
    fn one_iteration_too_many_fails_the_host_check() {
        // `r <= n`: rows 0..=n.
        let k = kernel(&COLUMN.replace("setp.lt.s32 %p2", "setp.le.s32 %p2"));
        assert!(!holds(&k, 1, 100, 100, 100 * 100 * 4));
        assert!(holds(&k, 1, 100, 100, 101 * 100 * 4));
    }

    #[test]
    fn a_loop_tested_at_the_top_counts_the_iterations_that_pass_the_test() {
        let top =
            "\tmov.u32 %r5, %tid.x;\n\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd5, %rd2, %rd3;\n\
            \tmul.wide.s32 %rd6, %r1, 4;\n\tmov.u32 %r6, 0;\n\
            $L__TOP:\n\tsetp.ge.s32 %p2, %r6, %r1;\n\t@%p2 bra $L__DONE;\n\
            \tld.global.f32 %f2, [%rd5];\n\tadd.f32 %f1, %f1, %f2;\n\
            \tadd.s64 %rd5, %rd5, %rd6;\n\tadd.s32 %r6, %r6, 1;\n\tbra.uni $L__TOP;\n\
            $L__DONE:\n\tst.global.f32 [%rd2], %f1;";
        let k = kernel(top);
        assert!(holds(&k, 1, 64, 100, 100 * 100 * 4 - 36 * 4));
        assert!(!holds(&k, 1, 64, 100, 100 * 100 * 4 - 36 * 4 - 4));
    }

    #[test]
    fn a_counter_that_may_wrap_fails_the_host_check() {
        // Step 2 and `r < n` with n = i32::MAX: `r + 2` could wrap past the test.
        let k = kernel(&COLUMN.replace("add.s32 %r6, %r6, 1;", "add.s32 %r6, %r6, 2;"));
        assert!(holds(&k, 1, 1, 5, 1 << 20));
        assert!(!holds(&k, 1, 1, i32::MAX as u32, u64::MAX / 2));
    }

    fn guarded(index: &str, guard: &str, store: &str) -> String {
        format!("{index}\n{guard}\n\t@%p1 bra $L__END;\n{store}")
    }

    const GID: &str = "\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmov.u32 %r5, %tid.x;\n\tmad.lo.s32 %r2, %r3, %r4, %r5;";

    #[test]
    fn an_unsigned_guard_on_the_index_is_checked_on_the_host() {
        let k = kernel(&guarded(GID, "\tsetp.ge.u32 %p1, %r2, %r1;", STORE));
        assert_eq!(k.coverage.host_checked, 1);
        assert_eq!(k.host_checks[0].param, 0);
        // n elements fit: holds whatever the grid.
        assert!(holds(&k, 1 << 20, 256, 1000, 4000));
        // `n` past the buffer (the planted bug): the fully checked build runs.
        assert!(!holds(&k, 1 << 20, 256, 1001, 4000));
        // n == 0: the access never runs.
        assert!(holds(&k, 8, 256, 0, 0));
        // The operand order reversed, and a negated branch.
        let k = kernel(&guarded(
            GID,
            "\tsetp.gt.u32 %p1, %r1, %r2;\n\tnot.pred %p1, %p1;",
            STORE,
        ));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 1 << 20, 256, 1000, 4000));
        assert!(!holds(&k, 1 << 20, 256, 1001, 4000));
    }

    #[test]
    fn a_signed_guard_needs_a_non_negative_index() {
        // i = blockIdx.x * blockDim.x + threadIdx.x, `i < n` signed: i >= 0 while the grid's
        // threads fit in an int.
        let k = kernel(&guarded(
            GID,
            "\tsetp.ge.s32 %p1, %r2, %r1;",
            "\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;",
        ));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 1000, 256, 1000, 4000));
        // 2^24 blocks of 256: i wraps negative past 2^31, `i < n` holds for it.
        assert!(!holds(&k, 1 << 24, 256, 1000, 4000));
        // i = threadIdx.x - 5 may be negative: never proven.
        let k = kernel(&guarded(
            "\tmov.u32 %r5, %tid.x;\n\tadd.s32 %r2, %r5, -5;",
            "\tsetp.ge.s32 %p1, %r2, %r1;",
            "\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;",
        ));
        assert!(!holds(&k, 1, 256, 10, 1 << 20));
    }

    #[test]
    fn a_guard_on_another_or_redefined_register_proves_nothing() {
        // The guard is on %r6, the index is %r2.
        let k = kernel(&guarded(
            &format!("{GID}\n\tmov.u32 %r6, %tid.y;"),
            "\tsetp.ge.u32 %p1, %r6, %r1;",
            STORE,
        ));
        // Only the grid bounds it: holds for a small grid, not for a large one.
        assert!(!holds(&k, 1 << 20, 256, 10, 4000));
        // The index is redefined after the guard.
        let k = kernel(&guarded(
            GID,
            "\tsetp.ge.u32 %p1, %r2, %r1;",
            &format!("\tadd.s32 %r2, %r2, 100;\n{STORE}"),
        ));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
        // The predicate's register redefined between the compare and the branch.
        let k = kernel(&format!(
            "{GID}\n\tsetp.ge.u32 %p1, %r2, %r1;\n\tadd.s32 %r2, %r2, 7;\n\t@%p1 bra $L__END;\n{STORE}"
        ));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
    }

    #[test]
    fn a_guard_that_does_not_dominate_proves_nothing() {
        // if (i < n) { x = 1 } ; out[i] = x: both paths reach the store.
        let k = kernel(&format!(
            "{GID}\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__J;\n\tmov.f32 %f1, 0f40000000;\n$L__J:\n{STORE}"
        ));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
        // The branch taken on the guard's success (the access under `i >= n`).
        let k = kernel(&format!(
            "{GID}\n\tsetp.lt.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n{STORE}"
        ));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
    }

    #[test]
    fn a_bound_loaded_from_memory_is_no_parameter() {
        let k = kernel(&guarded(
            &format!("{GID}\n\tld.param.u64 %rd9, [k_param_2];\n\tcvta.to.global.u64 %rd10, %rd9;\n\tld.global.u32 %r7, [%rd10];"),
            "\tsetp.ge.u32 %p1, %r2, %r7;",
            STORE,
        ));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
    }

    #[test]
    fn an_access_past_the_guarded_index_needs_room_for_it() {
        // if (i < n) out[i + 1] = ...
        let k = kernel(&guarded(
            GID,
            "\tsetp.ge.u32 %p1, %r2, %r1;",
            "\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4+4], %f1;",
        ));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
        assert!(holds(&k, 1 << 20, 256, 1000, 4004));
    }

    #[test]
    fn a_grid_stride_loop_is_an_induction_variable() {
        // for (i = tid; i < n; i += blockDim.x) out[i] = ...  (signed, as NVVM writes it)
        let body = "\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r4, %ntid.x;\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n$L__LOOP:\n\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;\n\tadd.s32 %r2, %r2, %r4;\n\tsetp.lt.s32 %p2, %r2, %r1;\n\t@%p2 bra $L__LOOP;";
        let k = kernel(body);
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 1, 256, 5000, 20000));
        assert!(!holds(&k, 1, 256, 5001, 20000));
        // n + blockDim.x past i32::MAX: the increment could wrap negative.
        assert!(!holds(&k, 1, 256, i32::MAX as u32 - 10, u64::MAX));
        // A back edge that does not test the register: no bound at the step.
        let body = "\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r4, %ntid.x;\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n$L__LOOP:\n\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;\n\tadd.s32 %r2, %r2, %r4;\n\tbra $L__LOOP;";
        let k = kernel(body);
        assert!(!holds(&k, 1, 256, 5000, 20000));
    }

    #[test]
    fn two_dimensional_guards_combine_through_or() {
        // if (row < n && col < 64) out[row * 64 + col]
        let body = "\tmov.u32 %r2, %tid.y;\n\tmov.u32 %r3, %tid.x;\n\tsetp.ge.s32 %p2, %r2, %r1;\n\tsetp.gt.s32 %p3, %r3, 63;\n\tor.pred %p1, %p2, %p3;\n\t@%p1 bra $L__END;\n\tshl.b32 %r4, %r2, 6;\n\tadd.s32 %r5, %r4, %r3;\n\tmul.wide.s32 %rd3, %r5, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;";
        let k = kernel(body);
        assert_eq!(k.coverage.host_checked, 1);
        let v = |n: u32, len: u64| {
            let scalars = [None, Some((u64::from(n), 4)), None];
            k.host_checks_hold(&LaunchValues {
                grid: [1, 1, 1],
                block: [128, 8, 1],
                scalars: &scalars,
                lens: &[len, u64::MAX, u64::MAX],
            })
        };
        assert!(v(4, 4 * 64 * 4));
        assert!(!v(5, 4 * 64 * 4));
        // Without the host-check option nothing changes.
        let ptx_opts = InstrumentOptions::new();
        assert!(!ptx_opts.host_checks);
    }

    /// `if (i - 1 >= 0 && i < n) out[i - 1] = ...` as NVVM folds `a >= 0 && b >= 0`:
    /// `(a | b) < 0`. `comb` is the instruction combining `i - 1` and `i`.
    fn sign_test(comb: &str, hoisted: bool) -> InstrumentedKernel {
        let addr = "\tmul.wide.s32 %rd3, %r6, 4;\n\tadd.s64 %rd4, %rd2, %rd3;";
        let guard = format!(
            "\t{comb} %r7, %r6, %r2;\n\tsetp.lt.s32 %p1, %r7, 0;\n\tsetp.ge.s32 %p2, %r2, %r1;\n\tor.pred %p3, %p1, %p2;\n\t@%p3 bra $L__END;"
        );
        let (before, after) = if hoisted {
            (addr, String::new())
        } else {
            ("", addr.to_string())
        };
        kernel(&format!(
            "{GID}\n\tadd.s32 %r6, %r2, -1;\n{before}\n{guard}\n{after}\n\tst.global.f32 [%rd4], %f1;"
        ))
    }

    #[test]
    fn an_or_of_two_values_tested_for_sign_bounds_both() {
        for hoisted in [false, true] {
            let k = sign_test("or.b32", hoisted);
            assert_eq!(k.coverage.host_checked, 1);
            // i in [1, n): i - 1 in [0, n - 2], the last 4 bytes at 4n - 8.
            assert!(holds(&k, 1 << 20, 256, 1000, 4 * 999), "hoisted: {hoisted}");
            assert!(
                !holds(&k, 1 << 20, 256, 1000, 4 * 998),
                "hoisted: {hoisted}"
            );
        }
        // `min(a, b) >= 0` says as much.
        let k = sign_test("min.s32", false);
        assert!(holds(&k, 1 << 20, 256, 1000, 4 * 999));
        // `(a & b) >= 0` says only that one of them is: i = 0 gives i - 1 = -1.
        let k = sign_test("and.b32", false);
        assert!(!holds(&k, 1 << 20, 256, 1000, u64::MAX / 2));
        // An unsigned `max` says nothing about a lower bound.
        let k = sign_test("max.u32", false);
        assert!(!holds(&k, 1 << 20, 256, 1000, u64::MAX / 2));
    }

    #[test]
    fn a_guard_on_the_index_plus_a_constant_bounds_the_index() {
        // if (i - 1 >= 0 && i < n) out[i - 1] = ..., with the address from `i` and a -4 byte
        // displacement (how NVVM shares one address among neighbours).
        let body = format!(
            "{GID}\n\tadd.s32 %r6, %r2, -1;\n\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tsetp.lt.s32 %p1, %r6, 0;\n\tsetp.ge.s32 %p2, %r2, %r1;\n\tor.pred %p3, %p1, %p2;\n\t@%p3 bra $L__END;\n\tst.global.f32 [%rd4+-4], %f1;"
        );
        let k = kernel(&body);
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 1 << 20, 256, 1000, 4 * 999));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4 * 998));
        // Without the `i - 1 >= 0` test, thread 0 writes 4 bytes before the buffer.
        let k = kernel(&body.replace("or.pred %p3, %p1, %p2", "mov.pred %p3, %p2"));
        assert!(!holds(&k, 1 << 20, 256, 1000, u64::MAX / 2));
    }

    #[test]
    fn a_bound_of_a_parameter_minus_one_is_a_parameter_bound() {
        // if (i < n - 1) out[i + 1] = ...
        let k = kernel(&guarded(
            &format!("{GID}\n\tadd.s32 %r9, %r1, -1;"),
            "\tsetp.ge.s32 %p1, %r2, %r9;",
            "\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4+4], %f1;",
        ));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 1 << 20, 256, 1000, 4000));
        assert!(!holds(&k, 1 << 20, 256, 1000, 3996));
        // n = 0: n - 1 is -1 as the signed compare reads it, no thread passes the guard.
        assert!(holds(&k, 1 << 20, 256, 0, 0));
    }

    /// `for (unsigned d = 0; d < n; d++) x = buf[n - 1 - d]` with a 64-bit `n`, as NVVM
    /// rotates it: `n == 0` skips the loop, the body reads `(n + ~d) & mask`, the latch tests
    /// `zext(d + 1) < n`. `init` sets `d` before the loop.
    fn rotated_loop(init: &str, latch: &str) -> InstrumentedKernel {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{{\n\
             \t.reg .pred %p<8>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
             \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd5, [k_param_1];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\
             \tsetp.eq.s64 %p1, %rd5, 0;\n\t@%p1 bra $L__END;\n\t{init}\n\
             $L__LOOP:\n\tnot.b32 %r2, %r1;\n\tcvt.u64.u32 %rd6, %r2;\n\tadd.s64 %rd7, %rd6, %rd5;\n\
             \tshl.b64 %rd8, %rd7, 3;\n\tand.b64 %rd9, %rd8, 34359738360;\n\
             \tadd.s64 %rd10, %rd2, %rd9;\n\tld.global.u64 %rd11, [%rd10];\n\
             \tadd.s32 %r1, %r1, 1;\n\tcvt.u64.u32 %rd12, %r1;\n{latch}\n\
             $L__END:\n\tret;\n}}\n"
        );
        let opts = InstrumentOptions::new().host_checks(true);
        let out = instrument_ptx_with(&ptx, &opts).unwrap();
        out.kernels.into_iter().next().unwrap()
    }

    fn loop_holds(k: &InstrumentedKernel, n: u64, len: u64) -> bool {
        !k.host_checks.is_empty()
            && k.host_checks_hold(&LaunchValues {
                grid: [1, 1, 1],
                block: [1, 1, 1],
                scalars: &[None, Some((n, 8))],
                lens: &[len, u64::MAX],
            })
    }

    /// `for (i = 0; i < n; ++i) if (tid != 0) *p++ = 1; else p++;` as a rotated loop with
    /// the store in a conditional block before the pointer's update.
    fn conditional_store_loop(store_after_update: bool) -> InstrumentedKernel {
        let store = "\tsetp.eq.s32 %p2, %r5, 0;\n\t@%p2 bra $L__SKIP;\n\tst.global.u64 [%rd6], %rd5;\n$L__SKIP:";
        let update = "\tadd.s64 %rd6, %rd6, 8;";
        let (first, second) = if store_after_update {
            (update, store)
        } else {
            (store, update)
        };
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{{\n\
             \t.reg .pred %p<8>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
             \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd5, [k_param_1];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r5, %tid.x;\n\
             \tsetp.eq.s64 %p1, %rd5, 0;\n\t@%p1 bra $L__END;\n\
             \tmov.u64 %rd7, 0;\n\tmov.u64 %rd6, %rd2;\n\
             $L__LOOP:\n{first}\n{second}\n\tadd.s64 %rd7, %rd7, 1;\n\
             \tsetp.lt.u64 %p3, %rd7, %rd5;\n\t@%p3 bra $L__LOOP;\n\
             $L__END:\n\tret;\n}}\n"
        );
        let opts = InstrumentOptions::new().host_checks(true);
        let out = instrument_ptx_with(&ptx, &opts).unwrap();
        out.kernels.into_iter().next().unwrap()
    }

    #[test]
    fn a_conditional_access_before_the_update_is_counted_from_the_iteration() {
        // The store runs before the pointer's update in every iteration (its block neither
        // dominates nor is dominated by the update's): iterations 0..n write elements 0..n.
        let k = conditional_store_loop(false);
        assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
        assert!(loop_holds(&k, 1000, 8000));
        assert!(!loop_holds(&k, 1000, 7999));
        // After the update, it writes elements 1..=n.
        let k = conditional_store_loop(true);
        assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
        assert!(loop_holds(&k, 1000, 8008));
        assert!(!loop_holds(&k, 1000, 8000));
    }

    #[test]
    fn a_rotated_loop_from_a_constant_is_bounded_by_its_latch() {
        let latch = "\tsetp.lt.u64 %p2, %rd12, %rd5;\n\t@%p2 bra $L__LOOP;";
        let k = rotated_loop("mov.u32 %r1, 0;", latch);
        assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
        // d in [0, n): reads elements n - 1 down to 0.
        assert!(loop_holds(&k, 2, 16));
        assert!(loop_holds(&k, 1000, 8000));
        assert!(!loop_holds(&k, 2, 8));
        // A bound past 32 bits is not read as its low 32 bits (that would claim d < 1 and
        // offset 0): nothing is claimed, while the loop does read far past 16 bytes.
        assert!(!loop_holds(&k, (1 << 32) + 1, 16));
        // Starting anywhere but a constant, the first iteration is not bounded by the latch.
        let k = rotated_loop("mov.u32 %r1, %tid.x;", latch);
        assert!(!loop_holds(&k, 2, 16));
        // A latch that does not test the counter bounds nothing.
        let k = rotated_loop(
            "mov.u32 %r1, 0;",
            "\tsetp.lt.u64 %p2, %rd11, %rd5;\n\t@%p2 bra $L__LOOP;",
        );
        assert!(!loop_holds(&k, 2, 16));
    }

    #[test]
    fn a_bound_computed_from_parameters_is_a_launch_value() {
        // if (i < 2 * n + 1) out[i] = ...
        let k = kernel(&guarded(
            &format!("{GID}\n\tshl.b32 %r9, %r1, 1;\n\tadd.s32 %r10, %r9, 1;"),
            "\tsetp.ge.s32 %p1, %r2, %r10;",
            STORE,
        ));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 1 << 20, 256, 1000, 4 * 2001));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4 * 2000));
        // n = 2^31: 2n + 1 wraps to 1 in 32 bits, as on the device: only thread 0 writes.
        assert!(holds(&k, 1 << 20, 256, 1 << 31, 4));
        assert!(!holds(&k, 1 << 20, 256, 1 << 31, 0));
    }

    #[test]
    fn quotients_and_remainders_bound_decomposed_indices() {
        // i < n: (i / 16) and (i % 16) as NVVM writes them (`rem` from the quotient),
        // out[(i / 16) * 16 + i % 16]
        let body = format!(
            "{GID}\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\tdiv.s32 %r6, %r2, 16;\n\tmul.lo.s32 %r7, %r6, 16;\n\tsub.s32 %r8, %r2, %r7;\n\tshl.b32 %r9, %r6, 4;\n\tadd.s32 %r10, %r9, %r8;\n\tmul.wide.s32 %rd3, %r10, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
        );
        let k = kernel(&body);
        assert_eq!(k.coverage.host_checked, 1);
        // Intervals: quotient [0, 62], remainder [0, 15]: up to element 1007 for n = 1000.
        assert!(holds(&k, 1 << 20, 256, 1000, 4 * 1008));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4 * 1007));
    }

    /// `out[idx]` with `idx` from `i = gid` (64 bits) and `c = n` through NVVM's 64-bit
    /// division with a 32-bit fast path; `div`/`rem` name the operation, `test` the branch
    /// into the fast path and `index` how the offset is made of the quotient `%rd9` and the
    /// remainder `%rd10`.
    fn fast_path_division(test: &str, index: &str) -> String {
        format!(
            "{GID}\n\tcvt.u64.u32 %rd5, %r2;\n\tcvt.u64.u32 %rd6, %r1;\n\
             \tor.b64 %rd7, %rd5, %rd6;\n\tand.b64 %rd8, %rd7, -4294967296;\n\
             \tsetp.eq.s64 %p2, %rd8, 0;\n\t{test}\n\
             \tdiv.s64 %rd9, %rd5, %rd6;\n\tmul.lo.s64 %rd11, %rd9, %rd6;\n\
             \tsub.s64 %rd10, %rd5, %rd11;\n\tbra.uni $L__J;\n\
             $L__N:\n\tcvt.u32.u64 %r6, %rd6;\n\tcvt.u32.u64 %r7, %rd5;\n\
             \tdiv.u32 %r8, %r7, %r6;\n\tmul.lo.s32 %r9, %r8, %r6;\n\tsub.s32 %r10, %r7, %r9;\n\
             \tcvt.u64.u32 %rd9, %r8;\n\tcvt.u64.u32 %rd10, %r10;\n\
             $L__J:\n{index}\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
        )
    }

    #[test]
    fn a_64_bit_division_with_a_32_bit_fast_path_is_one_value() {
        let ptx = |body: String| {
            format!(
                ".version 8.0\n.target sm_90\n.address_size 64\n\
                 .visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1, .param .u64 k_param_2)\n{{\n\
                 \t.reg .pred %p<8>;\n\t.reg .f32 %f<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
                 \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_1];\n\
                 \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.f32 %f1, 0f3F800000;\n{body}\n$L__END:\n\tret;\n}}\n"
            )
        };
        let rem = "\tshl.b64 %rd3, %rd10, 2;";
        let value = |body: String, reg: &str| {
            let m = crate::ir::read::parse(&ptx(body)).unwrap();
            let f = &m.functions[0];
            let cfg = Cfg::new(f);
            let loops = crate::ir::loops(f, &cfg);
            let g = Guards::new(f, &cfg, &loops).unwrap();
            g.budget.set(2000);
            g.wide_division(reg, 0)
        };
        let good = fast_path_division("@%p2 bra $L__N;", rem);
        assert!(matches!(
            value(good.clone(), "%rd10"),
            Some(HostExpr::Rem(..))
        ));
        assert!(matches!(value(good, "%rd9"), Some(HostExpr::Div(..))));
        // The fast path entered when the high halves are not zero, or on a test of something
        // else, or with an operand changed after the test: not one value.
        let flipped = fast_path_division("@!%p2 bra $L__N;", rem);
        assert!(value(flipped, "%rd10").is_none());
        let other = fast_path_division("@%p2 bra $L__N;", rem)
            .replace("or.b64 %rd7, %rd5, %rd6;", "or.b64 %rd7, %rd5, %rd5;");
        assert!(value(other, "%rd10").is_none());
        let changed = fast_path_division("@%p2 bra $L__N;", rem).replace(
            "cvt.u32.u64 %r6, %rd6;",
            "add.s64 %rd6, %rd6, 1;\n\tcvt.u32.u64 %r6, %rd6;",
        );
        assert!(value(changed, "%rd10").is_none());

        // As an access sees it: out[i % n] holds with n elements, not with n - 1.
        let k = kernel(&fast_path_division("@%p2 bra $L__N;", rem));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 64, 256, 1000, 4 * 1000));
        assert!(!holds(&k, 64, 256, 1000, 4 * 999));
        // out[i / n]: the quotient is below 16384 / 1000 + 1 for 64 x 256 threads.
        let k = kernel(&fast_path_division(
            "@%p2 bra $L__N;",
            "\tshl.b64 %rd3, %rd9, 2;",
        ));
        assert!(holds(&k, 64, 256, 1000, 4 * 17));
        assert!(!holds(&k, 64, 256, 1000, 4 * 16));
    }

    #[test]
    fn an_inequality_to_an_end_of_the_range_narrows_it() {
        // if (tid != 0) out[tid - 1]: tid in [1, block - 1], so elements 0..block - 2.
        let body = |cmp: &str| {
            format!(
                "{GID}\n\tsetp.{cmp}.s32 %p2, %r5, 0;\n\t@%p2 bra $L__END;\n\tadd.s32 %r6, %r5, -1;\n\
                 \tmul.wide.s32 %rd3, %r6, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
            )
        };
        let k = kernel(&body("eq"));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 4, 256, 1, 4 * 255));
        assert!(!holds(&k, 4, 256, 1, 4 * 254));
        // `tid != 5` takes nothing off [0, 255]: element -1 stays possible.
        let k = kernel(&body("eq").replace("%r5, 0;", "%r5, 5;"));
        assert!(!holds(&k, 4, 256, 1, 4 * 255));
        // The branch on the equality itself: only tid == 0 reaches the store, at element -1.
        let k = kernel(&body("ne"));
        assert!(!holds(&k, 4, 256, 1, 1 << 20));
    }

    #[test]
    fn a_signed_remainder_by_a_power_of_two_is_a_remainder() {
        // if (i < n) out[i % 16], `i` an int: NVVM's `i - ((i + bias) & -16)`.
        let rem = |sign_shift: u32| {
            format!(
                "{GID}\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\
                 \tshr.s32 %r6, %r2, 31;\n\tshr.u32 %r7, %r6, {sign_shift};\n\tadd.s32 %r8, %r2, %r7;\n\
                 \tand.b32 %r9, %r8, -16;\n\tsub.s32 %r10, %r2, %r9;\n\
                 \tmul.wide.s32 %rd3, %r10, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
            )
        };
        let k = kernel(&rem(28));
        assert_eq!(k.coverage.host_checked, 1);
        assert!(holds(&k, 64, 256, 1000, 4 * 16));
        assert!(!holds(&k, 64, 256, 1000, 4 * 15));
        // Fewer than 16 elements guarded: the remainder is the index itself.
        assert!(holds(&k, 64, 256, 10, 4 * 10));
        assert!(!holds(&k, 64, 256, 10, 4 * 9));
        // A bias that is not `2^k - 1` for a negative `i` is not this idiom: not a remainder.
        let k = kernel(&rem(27));
        assert!(!holds(&k, 64, 256, 1000, 4 * 16));
    }

    #[test]
    fn a_value_merged_after_a_branch_is_bounded_by_both_definitions() {
        // r6 = (tid < n) ? tid : 7 (set on two paths), out[r6]: the hull of both, not
        // everything from the smaller start up.
        let body = format!(
            "{GID}\n\tsetp.ge.u32 %p1, %r5, %r1;\n\t@%p1 bra $L__A;\n\tmov.u32 %r6, %r5;\n\
             \tbra.uni $L__B;\n$L__A:\n\tmov.u32 %r6, 7;\n$L__B:\n\
             \tmul.wide.u32 %rd3, %r6, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
        );
        let k = kernel(&body);
        assert_eq!(k.coverage.host_checked, 1);
        // Block of 256, n = 1000: tid in [0, 255], or 7.
        assert!(holds(&k, 4, 256, 1000, 4 * 256));
        assert!(!holds(&k, 4, 256, 1000, 4 * 255));
        // n = 4: tid in [0, 3] or 7: up to element 7.
        assert!(holds(&k, 4, 256, 4, 4 * 8));
        assert!(!holds(&k, 4, 256, 4, 4 * 7));
    }

    #[test]
    fn a_guarded_shared_array_access_is_checked_against_the_array() {
        // __shared__ float tile[16]; if (tid.x < n) tile[tid.x] = 1  (n a parameter)
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .shared .align 4 .b8 tile[64];\n\
            .visible .entry k(.param .u32 k_param_0)\n{\n\
            \t.reg .pred %p<4>;\n\t.reg .f32 %f<2>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<8>;\n\
            \tld.param.u32 %r1, [k_param_0];\n\tmov.u32 %r2, %tid.x;\n\
            \tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\
            \tmov.u64 %rd1, tile;\n\tmul.wide.u32 %rd2, %r2, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\
            \tmov.f32 %f1, 0f3F800000;\n\tst.shared.f32 [%rd3], %f1;\n\
            $L__END:\n\tret;\n}\n";
        let opts = InstrumentOptions::new().host_checks(true);
        let out = instrument_ptx_with(ptx, &opts).unwrap();
        let k = &out.kernels[0];
        assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
        assert_eq!(k.host_checks[0].array_bytes, Some(64));
        let holds = |block: u32, n: u32| {
            k.host_checks_hold(&LaunchValues {
                grid: [1, 1, 1],
                block: [block, 1, 1],
                scalars: &[Some((u64::from(n), 4))],
                lens: &[u64::MAX],
            })
        };
        // The guard or the block keeps tid.x below 16: in bounds whatever the lengths say.
        assert!(holds(16, 1000));
        assert!(holds(256, 16));
        assert!(!holds(256, 17));
        assert!(!holds(32, 1000));
    }

    #[test]
    fn a_reused_register_has_the_value_of_the_definition_that_reaches() {
        // r2 = tid; if (r2 < n) out[r2] = ...; then r2 counts a loop of its own.
        let body = format!(
            "\tmov.u32 %r2, %tid.x;\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n{STORE}\n\
             $L__LOOP:\n\tadd.s32 %r2, %r2, 7;\n\tsetp.lt.u32 %p2, %r2, 1000;\n\t@%p2 bra $L__LOOP;"
        );
        let k = kernel(&body);
        assert_eq!(k.coverage.host_checked, 1);
        // The store sees tid, below n: as if the loop were not there.
        assert!(holds(&k, 1, 256, 100, 400));
        assert!(!holds(&k, 1, 256, 101, 400));
        assert!(holds(&k, 1, 64, 1000, 256));
    }

    #[test]
    fn expressions_round_trip_through_json() {
        let k = kernel(&guarded(GID, "\tsetp.ge.u32 %p1, %r2, %r1;", STORE));
        let j = serde_json::to_string(&k).unwrap();
        let back: InstrumentedKernel = serde_json::from_str(&j).unwrap();
        assert_eq!(back, k);
    }
}
