//! Natural loops, their induction variables and exit tests.
//!
//! A back edge is an edge `t -> h` whose target dominates its source; the natural loop of
//! header `h` is `h` and every block that reaches a back edge's source without passing `h`
//! (loops sharing a header are one loop). Loops nest by containment ([`Loop::parent`]).
//!
//! NVRTC's PTX keeps a loop-carried value in one register that the loop redefines
//! (`add.s32 %r10, %r10, 1;`), so a basic induction variable is a register with exactly one
//! definition in the loop, `r = r + s` or `r = r - s` (no carry, no saturation) with `s` an
//! immediate or a register the loop does not define, unguarded, in a block that dominates
//! every latch and belongs to no loop nested in this one: each iteration that goes on adds
//! `s` exactly once. Its value on entry is the
//! register's value at the end of the preheader.
//!
//! The exit test is a conditional branch on a `setp` that compares an induction variable with
//! an immediate or a loop-invariant register, leaving the loop on one outcome. It bounds every
//! iteration; other exits (a `break`) only end the loop earlier, which a check covering every
//! iteration the test allows still covers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::cfg::{BlockId, Cfg};
use super::op::{Arith, ArithOp, CmpOp, Compare, Convert, Half, MemOp, Op, Ty};
use super::opcode::{effects, Flow};
use super::operand::Operand;
use super::read::{Function, Guard, Instr, Space, StmtKind};

/// A natural loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    pub header: BlockId,
    /// The loop's blocks, ascending; the header included.
    pub blocks: BTreeSet<BlockId>,
    /// Sources of the back edges.
    pub latches: Vec<BlockId>,
    /// The header's one predecessor outside the loop, when it has exactly one and that block
    /// goes nowhere else: where code that runs once before the loop can go.
    pub preheader: Option<BlockId>,
    /// Edges leaving the loop: (block inside, block outside).
    pub exits: Vec<(BlockId, BlockId)>,
    /// The innermost loop containing this one (an index into the list [`loops`] returns).
    pub parent: Option<usize>,
    /// Basic induction variables.
    pub ivs: Vec<Induction>,
    /// The test that bounds the iterations, when one is recognized.
    pub exit_test: Option<ExitTest>,
}

impl Loop {
    /// Whether the loop contains statement `stmt`.
    pub fn contains_stmt(&self, cfg: &Cfg, stmt: usize) -> bool {
        cfg.block_of(stmt).is_some_and(|b| self.blocks.contains(&b))
    }

    /// Whether statement `y` may run after statement `x` within one iteration: a path from
    /// `x` to `y` through the loop's blocks that does not pass the header again (`x` first in
    /// the same block, or `y`'s block reachable from `x`'s so). `false` means that in every
    /// iteration running both, `y` runs before `x`; `true` when unsure (either statement
    /// outside the loop).
    pub fn may_follow_in_iteration(&self, cfg: &Cfg, x: usize, y: usize) -> bool {
        let (Some(bx), Some(by)) = (cfg.block_of(x), cfg.block_of(y)) else {
            return true;
        };
        if !self.blocks.contains(&bx) || !self.blocks.contains(&by) {
            return true;
        }
        if bx == by && x < y {
            return true;
        }
        let mut seen = BTreeSet::new();
        let mut work: Vec<BlockId> = cfg.blocks[bx].succs.clone();
        while let Some(b) = work.pop() {
            if b == self.header || !self.blocks.contains(&b) || !seen.insert(b) {
                continue;
            }
            if b == by {
                return true;
            }
            work.extend(cfg.blocks[b].succs.iter().copied());
        }
        // `y` in the header itself runs before anything else of the iteration.
        false
    }
}

/// What an induction variable adds per iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Imm(i128),
    /// A register the loop does not define; `negated` for `r = r - s`.
    Reg {
        reg: String,
        negated: bool,
    },
    /// The product of two operands (`mad.lo r, a, b, x`, as NVVM steps a grid-stride counter
    /// by `blockDim.x * gridDim.x`): each an immediate, a register the loop does not define,
    /// or one it sets only by copying a special register fixed for the launch (`mov.u32 %r9,
    /// %nctaid.x;`, which NVVM sinks into the loop).
    Mul(String, String),
}

/// A basic induction variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Induction {
    pub reg: String,
    /// What one iteration adds: the sum of these terms (one, or several where the update is
    /// a chain `x1 = r + s1; x2 = x1 + s2; r = x2 + s3`, as unrolled loops step a pointer).
    pub steps: Vec<Step>,
    /// The statement that adds the step.
    pub update: usize,
    /// The register's declared type (`b32`, `u64`, ...).
    pub ty: String,
}

/// A comparison of `setp`, and, in the host checks that hold of a register's value
/// ([`crate::instrument::HostFact`]), as it holds of it. Its serde form (`"lt"`, ...) is
/// stored in the build cache.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    /// Equal (`setp.eq`): a host fact narrows to the bound.
    Eq,
    /// Not equal (`if (z != 0)`): a host fact removes the bound from an interval's end
    /// (`z != 0` with `z >= 0` is `z >= 1`); it says nothing of a value inside it.
    Ne,
}

impl Cmp {
    /// The comparison of a decoded `setp` operator (`lt`, or the unsigned `lo`, ...); `None`
    /// for the comparisons that hold for NaN and the NaN tests.
    pub fn of_cmp_op(op: CmpOp) -> Option<Cmp> {
        Some(match op {
            CmpOp::Lt | CmpOp::Lo => Cmp::Lt,
            CmpOp::Le | CmpOp::Ls => Cmp::Le,
            CmpOp::Gt | CmpOp::Hi => Cmp::Gt,
            CmpOp::Ge | CmpOp::Hs => Cmp::Ge,
            CmpOp::Eq => Cmp::Eq,
            CmpOp::Ne => Cmp::Ne,
            _ => return None,
        })
    }

    /// `!(a cmp b)` as `a cmp' b`.
    pub fn negate(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Ge,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            Cmp::Ge => Cmp::Lt,
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
        }
    }

    /// `a cmp b` as `b cmp' a`.
    pub fn flip(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            Cmp::Eq | Cmp::Ne => self,
        }
    }
}

/// A value the loop does not change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    Imm(i128),
    Reg(String),
}

/// `setp.cmp p, iv, bound` and the branch on `p` that leaves the loop or goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitTest {
    /// The index of the induction variable in [`Loop::ivs`].
    pub iv: usize,
    /// Normalized so that the induction variable is on the left: `iv cmp bound`.
    pub cmp: Cmp,
    pub bound: Bound,
    /// `setp`'s type says signed (`.s32`, `.s64`) rather than unsigned or bits.
    pub signed: bool,
    /// The loop goes on when `iv cmp bound` holds (else it goes on when it fails).
    pub continue_if: bool,
    /// For `==`/`!=` tests only: the test reads `iv + offset` (a register the loop sets
    /// once, `add x, iv, k` with `k` invariant: NVRTC's unrolled loops count this way), so
    /// it compares `iv` with `bound - offset` (modulo the width, exactly for these tests).
    pub offset: Option<Bound>,
    /// The statement that reads the induction variable for the test: the `setp`, or the
    /// `add` of `offset`.
    pub reads: usize,
    /// The test reads the induction variable after this iteration's update (the test
    /// follows the update in the same block).
    pub after_update: bool,
    /// For `==`/`!=` tests: the loop is entered only when the counter differs from the bound
    /// (a test `c == B` right before the preheader branches around it, as NVRTC guards an
    /// unrolled loop's remainder): a start equal to the bound runs no iteration.
    pub entered_if_unequal: bool,
    /// The `setp` and the branch statements.
    pub setp: usize,
    pub branch: usize,
    /// The test reads a narrowing `cvt` of the induction variable (`cvt.u32.u64 %r, %rd`, as
    /// NVVM compares a 64-bit counter against an `int` bound): it compares the counter's low
    /// bits (the `setp`'s width), read as its type says.
    pub narrowed: bool,
}

/// The natural loops of `f`, outer loops before the loops they contain; `defs`: `f`'s
/// definitions map ([`definitions`]; [`super::Facts`] builds both once).
pub fn loops(f: &Function, cfg: &Cfg, defs: &Defs) -> Vec<Loop> {
    let mut by_header: HashMap<BlockId, Vec<BlockId>> = HashMap::new();
    for &b in &cfg.rpo {
        for &s in &cfg.blocks[b].succs {
            if cfg.dominates(s, b) {
                by_header.entry(s).or_default().push(b);
            }
        }
    }
    let mut out: Vec<Loop> = by_header
        .into_iter()
        .map(|(header, latches)| natural_loop(cfg, header, latches))
        .collect();
    // Outer first: a loop containing another has more blocks; ties by header.
    out.sort_by(|a, b| {
        b.blocks
            .len()
            .cmp(&a.blocks.len())
            .then(a.header.cmp(&b.header))
    });
    for k in 0..out.len() {
        out[k].parent = (0..k)
            .rev()
            .find(|&p| out[p].blocks.is_superset(&out[k].blocks) && out[p].header != out[k].header);
    }
    for k in 0..out.len() {
        // Blocks of loops nested in this one: a definition there may run many times per
        // iteration.
        let inner: BTreeSet<BlockId> = out
            .iter()
            .filter(|o| o.header != out[k].header && out[k].blocks.is_superset(&o.blocks))
            .flat_map(|o| o.blocks.iter().copied())
            .collect();
        let ivs = inductions(f, cfg, &out[k], defs, &inner);
        out[k].ivs = ivs;
        let test = exit_test(f, cfg, &out[k], defs, &inner);
        out[k].exit_test = test;
    }
    out
}

fn natural_loop(cfg: &Cfg, header: BlockId, mut latches: Vec<BlockId>) -> Loop {
    latches.sort_unstable();
    let mut blocks = BTreeSet::from([header]);
    let mut work: Vec<BlockId> = latches.clone();
    while let Some(b) = work.pop() {
        if blocks.insert(b) {
            work.extend(
                cfg.blocks[b]
                    .preds
                    .iter()
                    .copied()
                    .filter(|&p| cfg.idom[p].is_some()),
            );
        }
    }
    let outside: Vec<BlockId> = cfg.blocks[header]
        .preds
        .iter()
        .copied()
        .filter(|p| !blocks.contains(p) && cfg.idom[*p].is_some())
        .collect();
    let preheader = match outside[..] {
        [p] if cfg.blocks[p].succs == [header] => Some(p),
        _ => None,
    };
    let exits = blocks
        .iter()
        .flat_map(|&b| {
            cfg.blocks[b]
                .succs
                .iter()
                .filter(|s| !blocks.contains(s))
                .map(move |&s| (b, s))
        })
        .collect();
    Loop {
        header,
        blocks,
        latches,
        preheader,
        exits,
        parent: None,
        ivs: Vec::new(),
        exit_test: None,
    }
}

/// For every register, the statements that define it (any instruction naming it as a
/// destination, guarded or not), in order: the one definitions map of a function.
pub type Defs<'f> = BTreeMap<&'f str, Vec<usize>>;

#[cfg(test)]
thread_local! {
    /// How many definitions maps this thread has built: a test counts them (one per function).
    pub(crate) static DEFINITIONS_BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// For every register, the statements that define it.
pub fn definitions(f: &Function) -> Defs<'_> {
    #[cfg(test)]
    DEFINITIONS_BUILT.with(|n| n.set(n.get() + 1));
    let mut defs = Defs::new();
    for (k, s) in f.stmts.iter().enumerate() {
        if let StmtKind::Instr(i) = &s.kind {
            for d in effects(i).defs {
                defs.entry(d).or_default().push(k);
            }
        }
    }
    defs
}

fn instr(f: &Function, k: usize) -> Option<&Instr> {
    f.instr(k)
}

/// Whether the loop defines no register `reg` (a literal is invariant too).
fn invariant(cfg: &Cfg, l: &Loop, defs: &Defs, reg: &str) -> bool {
    defs.get(reg)
        .map_or(true, |ds| ds.iter().all(|&k| !l.contains_stmt(cfg, k)))
}

fn inductions(
    f: &Function,
    cfg: &Cfg,
    l: &Loop,
    defs: &Defs,
    inner: &BTreeSet<BlockId>,
) -> Vec<Induction> {
    let mut out = Vec::new();
    for (&reg, ds) in defs {
        let inside: Vec<usize> = ds
            .iter()
            .copied()
            .filter(|&k| l.contains_stmt(cfg, k))
            .collect();
        let [k] = inside[..] else { continue };
        let Some(i) = instr(f, k) else { continue };
        let update = matches!(
            i.op,
            Op::Mov(_)
                | Op::Arith(Arith {
                    op: ArithOp::Add | ArithOp::Sub,
                    carry_in: false,
                    ..
                })
        ) || mad_lo(&i.op);
        if i.guard.is_some() || !update {
            continue;
        }
        let Some(b) = cfg.block_of(k) else { continue };
        if inner.contains(&b) || !l.latches.iter().all(|&t| cfg.dominates(b, t)) {
            continue;
        }
        let Some(steps) = chain(f, cfg, l, defs, reg, k) else {
            continue;
        };
        out.push(Induction {
            reg: reg.to_string(),
            steps,
            update: k,
            ty: f.reg_type(reg).unwrap_or("").to_string(),
        });
    }
    out.sort_by_key(|iv| iv.update);
    out
}

/// The terms `reg`'s update at `k` adds to its old value: `reg = x + s` (or `s + x`,
/// `x - s`, or a copy `reg = x` of a register of its type), where `x` is `reg` itself or a
/// register set once in the loop, unguarded, before `k` in every iteration (its block
/// dominates `k`'s, or it comes earlier in the same block), by such an update of another `x`:
/// a chain back to `reg` that adds at least one term. Each `s` is an immediate or invariant,
/// or a product `a * b` (`reg = mad.lo a, b, x`; [`Step::Mul`]). A link may also be a
/// widening and the narrowing back (`cvt.s64.s32` then `cvt.u32.u64`), a copy ([`round_trip`]).
fn chain(f: &Function, cfg: &Cfg, l: &Loop, defs: &Defs, reg: &str, k: usize) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut at = k;
    for _ in 0..32 {
        let i = instr(f, at)?;
        if i.guard.is_some() {
            return None;
        }
        let ops: Vec<Operand<'_>> = i.operands.iter().map(|o| Operand::parse(o)).collect();
        // `mov r, x` between registers of one type (a copy NVVM leaves where it merged the
        // loop's values): a link that adds nothing.
        let copied = match (i.op, &ops[..]) {
            (Op::Mov(_), [Operand::Reg(d), Operand::Reg(x)])
                if f.reg_type(d).is_some() && f.reg_type(d) == f.reg_type(x) =>
            {
                Some(*x)
            }
            // The widening's statement is where `x` is read: the next link comes before it.
            (Op::Convert(_), [Operand::Reg(_), Operand::Reg(e)]) => {
                round_trip(f, cfg, l, defs, i, e, at).map(|(x, d)| {
                    at = d;
                    x
                })
            }
            _ => None,
        };
        let x = match (copied, &ops[..]) {
            (Some(x), _) => x,
            // `reg = a * b + x`.
            (None, [_, a, b, Operand::Reg(x)]) if mad_lo(&i.op) => {
                if *x != reg && invariant(cfg, l, defs, x) {
                    return None;
                }
                let factor = |o: &Operand<'_>| match o {
                    Operand::Imm(v) => Some(v.to_string()),
                    Operand::Reg(r) if fixed(f, cfg, l, defs, r) => Some(r.to_string()),
                    _ => None,
                };
                steps.push(Step::Mul(factor(a)?, factor(b)?));
                *x
            }
            (None, _) => {
                // Plain `add` or `sub`: no carry in or out, no saturation.
                let Op::Arith(Arith {
                    op: op @ (ArithOp::Add | ArithOp::Sub),
                    carry_in: false,
                    carry_out: false,
                    sat: false,
                    ..
                }) = i.op
                else {
                    return None;
                };
                if ops.len() != 3 {
                    return None;
                }
                let negated = op == ArithOp::Sub;
                let term = |o: &Operand<'_>| match o {
                    Operand::Imm(v) => Some(Step::Imm(if negated { -v } else { *v })),
                    Operand::Reg(s) if invariant(cfg, l, defs, s) => Some(Step::Reg {
                        reg: s.to_string(),
                        negated,
                    }),
                    _ => None,
                };
                // Which operand continues the chain: `reg`, or a register the loop varies.
                let (x, s) = match (&ops[1], &ops[2]) {
                    (Operand::Reg(a), o) if *a == reg || !invariant(cfg, l, defs, a) => {
                        (*a, term(o)?)
                    }
                    (o, Operand::Reg(c))
                        if !negated && (*c == reg || !invariant(cfg, l, defs, c)) =>
                    {
                        (*c, term(o)?)
                    }
                    _ => return None,
                };
                steps.push(s);
                x
            }
        };
        if x == reg {
            return (!steps.is_empty()).then_some(steps);
        }
        at = earlier_def(cfg, l, defs, x, at)?;
    }
    None
}

/// The one definition of `x` in `l`, unguarded or not, that runs before statement `at` in
/// every iteration (its block dominates `at`'s, or it comes earlier in the same block).
fn earlier_def(cfg: &Cfg, l: &Loop, defs: &Defs, x: &str, at: usize) -> Option<usize> {
    let inside: Vec<usize> = defs
        .get(x)?
        .iter()
        .copied()
        .filter(|&d| l.contains_stmt(cfg, d))
        .collect();
    let [d] = inside[..] else { return None };
    let (bd, ba) = (cfg.block_of(d)?, cfg.block_of(at)?);
    let earlier = if bd == ba {
        d < at
    } else {
        cfg.dominates(bd, ba)
    };
    earlier.then_some(d)
}

/// `mad.lo` of integers, no carry: `a * b + c` modulo the width.
fn mad_lo(op: &Op) -> bool {
    matches!(
        op,
        Op::Arith(Arith {
            op: ArithOp::Mad,
            half: Some(Half::Lo),
            carry_in: false,
            carry_out: false,
            sat: false,
            ty: Some(ty),
            ..
        }) if !ty.float()
    )
}

/// Whether register `r` holds one value in every iteration of `l`: the loop does not define
/// it, or defines it only by unguarded copies of a special register fixed for the launch and
/// the thread (`%ntid`, `%nctaid`, `%ctaid`, `%tid`).
fn fixed(f: &Function, cfg: &Cfg, l: &Loop, defs: &Defs, r: &str) -> bool {
    let special = |k: usize| {
        instr(f, k).is_some_and(|i| {
            i.guard.is_none()
                && matches!(i.op, Op::Mov(_))
                && i.operands.get(1).is_some_and(|o| {
                    ["%ntid.", "%nctaid.", "%ctaid.", "%tid."]
                        .iter()
                        .any(|p| o.starts_with(p))
                })
        })
    };
    defs.get(r)
        .is_some_and(|ds| ds.iter().all(|&k| !l.contains_stmt(cfg, k) || special(k)))
}

/// The register `x` when `i` (at statement `at`) narrows to `N` bits a register `e` that the
/// loop sets once, unguarded and earlier in every iteration, by widening the `N`-bit register
/// `x` (`cvt.s64.s32 %rd6, %r13; cvt.u32.u64 %r12, %rd6;`, as NVVM steps an `int` grid-stride
/// counter): the low `N` bits of an extension, signed or not, are the value extended, so the
/// pair is a copy of `x` as read at the widening (returned with `x`).
fn round_trip<'f>(
    f: &'f Function,
    cfg: &Cfg,
    l: &Loop,
    defs: &Defs,
    i: &Instr,
    e: &str,
    at: usize,
) -> Option<(&'f str, usize)> {
    let int = |op: &Op| match op {
        Op::Convert(c) => c
            .int()
            .and_then(|(to, from)| Some((to.int_bits()?, from.int_bits()?))),
        _ => None,
    };
    let (n, wide) = int(&i.op)?;
    let bits = |r: &str| Ty::from_part(f.reg_type(r)?)?.int_bits();
    if n >= wide || bits(e)? != wide {
        return None;
    }
    let d = earlier_def(cfg, l, defs, e, at)?;
    let w = instr(f, d)?;
    let ops: Vec<Operand<'_>> = w.operands.iter().map(|o| Operand::parse(o)).collect();
    match (int(&w.op)?, &ops[..]) {
        ((to, from), [Operand::Reg(_), Operand::Reg(x)])
            if w.guard.is_none() && to == wide && from == n && bits(x)? == n =>
        {
            Some((*x, d))
        }
        _ => None,
    }
}

fn exit_test(
    f: &Function,
    cfg: &Cfg,
    l: &Loop,
    defs: &Defs,
    inner: &BTreeSet<BlockId>,
) -> Option<ExitTest> {
    // A block of the loop ending in a guarded branch with one successor in and one out.
    let mut found = None;
    let mut narrowed_found = None;
    for &b in l.blocks.difference(inner) {
        let blk = &cfg.blocks[b];
        let (inside, outside): (Vec<BlockId>, Vec<BlockId>) =
            blk.succs.iter().partition(|s| l.blocks.contains(s));
        if inside.len() != 1 || outside.len() != 1 {
            continue;
        }
        let Some(branch) = blk.stmts.clone().rev().find(|&k| instr(f, k).is_some()) else {
            continue;
        };
        let Some(bra) = instr(f, branch) else {
            continue;
        };
        let Flow::Branch(target) = effects(bra).flow else {
            continue;
        };
        let Some(Guard { negated, pred }) = bra.guard.as_ref() else {
            continue;
        };
        let to_inside = cfg.blocks[inside[0]].label.as_deref() == Some(target);
        // The loop goes on when the branch is taken to the inside, or not taken to the outside.
        let continue_when_pred = to_inside != *negated;
        // The `setp` defining the predicate, in this block, the only definition in the loop.
        let Some(pdefs) = defs.get(pred.as_str()) else {
            continue;
        };
        let in_loop: Vec<usize> = pdefs
            .iter()
            .copied()
            .filter(|&k| l.contains_stmt(cfg, k))
            .collect();
        let [setp] = in_loop[..] else { continue };
        if cfg.block_of(setp) != Some(b) {
            continue;
        }
        let Some(si) = instr(f, setp) else { continue };
        // A `setp` of integers (or untyped bits) with no predicate operand to combine.
        let Op::Compare(Compare {
            value: false,
            cmp: Some(cmp),
            ty,
            combine: None,
        }) = si.op
        else {
            continue;
        };
        if si.guard.is_some() || si.operands.len() != 3 || ty.is_some_and(Ty::float) {
            continue;
        }
        let Some(cmp) = Cmp::of_cmp_op(cmp) else {
            continue;
        };
        // `setp.lt.u32` vs `setp.lo.u32`: the type decides the signedness.
        let signed = ty.is_some_and(Ty::signed);
        let a = Operand::parse(&si.operands[1]);
        let c = Operand::parse(&si.operands[2]);
        let iv_at = |o: &Operand<'_>| {
            o.reg()
                .and_then(|r| l.ivs.iter().position(|iv| iv.reg == r))
        };
        // The one definition in the loop of the register `o` names, in the test's block
        // before the `setp`.
        let def_before_test = |o: &Operand<'_>| -> Option<(usize, &Instr)> {
            let x = o.reg()?;
            let ds: Vec<usize> = defs
                .get(x)?
                .iter()
                .copied()
                .filter(|&d| l.contains_stmt(cfg, d))
                .collect();
            let [d] = ds[..] else { return None };
            if cfg.block_of(d) != Some(b) || d > setp {
                return None;
            }
            Some((d, instr(f, d)?))
        };
        // `x = iv + k` set once in the loop, before the test: for `==`/`!=`.
        let shifted = |o: &Operand<'_>| -> Option<(usize, Bound, usize)> {
            if !matches!(cmp, Cmp::Eq | Cmp::Ne) {
                return None;
            }
            let (d, i) = def_before_test(o)?;
            let add = matches!(
                i.op,
                Op::Arith(Arith {
                    op: ArithOp::Add,
                    carry_in: false,
                    carry_out: false,
                    ..
                })
            );
            if !add || i.guard.is_some() || i.operands.len() != 3 {
                return None;
            }
            let (p, q) = (
                Operand::parse(&i.operands[1]),
                Operand::parse(&i.operands[2]),
            );
            let inv = |o: &Operand<'_>| match o {
                Operand::Imm(v) => Some(Bound::Imm(*v)),
                Operand::Reg(r) if invariant(cfg, l, defs, r) => Some(Bound::Reg(r.to_string())),
                _ => None,
            };
            match (iv_at(&p), iv_at(&q)) {
                (Some(k), _) => Some((k, inv(&q)?, d)),
                (_, Some(k)) => Some((k, inv(&p)?, d)),
                _ => None,
            }
        };
        // `x = cvt.narrow.wide iv`, set once in the loop, before the test in its block.
        let narrowed = |o: &Operand<'_>| -> Option<(usize, usize)> {
            let (d, i) = def_before_test(o)?;
            let Op::Convert(Convert {
                to: Some(dst),
                from: Some(src),
                sat: false,
                ..
            }) = i.op
            else {
                return None;
            };
            let int = |t: Ty| (t.signed() || t.unsigned()).then(|| t.int_bits()).flatten();
            if i.guard.is_some() || int(dst)? >= int(src)? {
                return None;
            }
            Some((iv_at(&Operand::parse(i.operands.get(1)?))?, d))
        };
        let bound_of = |o: &Operand<'_>| match o {
            Operand::Imm(v) => Some(Bound::Imm(*v)),
            Operand::Reg(r) if invariant(cfg, l, defs, r) => Some(Bound::Reg(r.to_string())),
            _ => None,
        };
        let (iv, cmp, bound, offset, reads, narrow) =
            if let (Some(iv), Some(bd)) = (iv_at(&a), bound_of(&c)) {
                (iv, cmp, bd, None, setp, false)
            } else if let (Some(iv), Some(bd)) = (iv_at(&c), bound_of(&a)) {
                (iv, cmp.flip(), bd, None, setp, false)
            } else if let (Some((iv, k, d)), Some(bd)) = (shifted(&a), bound_of(&c)) {
                (iv, cmp, bd, Some(k), d, false)
            } else if let (Some((iv, k, d)), Some(bd)) = (shifted(&c), bound_of(&a)) {
                (iv, cmp, bd, Some(k), d, false)
            } else if let (Some((iv, d)), Some(bd)) = (narrowed(&a), bound_of(&c)) {
                (iv, cmp, bd, None, d, true)
            } else if let (Some((iv, d)), Some(bd)) = (narrowed(&c), bound_of(&a)) {
                (iv, cmp.flip(), bd, None, d, true)
            } else {
                continue;
            };
        let update = l.ivs[iv].update;
        let after_update = cfg.block_of(update) == Some(b) && update < reads;
        if found.is_some() {
            // Two recognized tests: keep the first; either bounds every iteration.
            continue;
        }
        let entered_if_unequal = matches!(cmp, Cmp::Eq | Cmp::Ne)
            && offset.is_none()
            && entry_guard(
                f,
                cfg,
                l,
                defs,
                &l.ivs[iv].reg,
                &si.operands[2],
                &si.operands[1],
            );
        let test = Some(ExitTest {
            entered_if_unequal,
            iv,
            cmp,
            bound,
            signed,
            continue_if: continue_when_pred,
            offset,
            reads,
            after_update,
            setp,
            branch,
            narrowed: narrow,
        });
        // A test of the counter itself is preferred to one of its narrowed copy.
        if narrow {
            narrowed_found = narrowed_found.or(test);
        } else {
            found = test;
        }
    }
    found.or(narrowed_found)
}

/// Whether the loop is entered only when register `c` differs from `bound` (one of the
/// `setp`'s two operand texts; `other` is the other): the preheader's one predecessor ends in a
/// branch on `setp.eq`/`setp.ne` of `c` and the same bound, the edge into the preheader is
/// the unequal one, and neither `c` nor the bound is set after that test before the loop.
fn entry_guard(
    f: &Function,
    cfg: &Cfg,
    l: &Loop,
    defs: &Defs,
    c: &str,
    bound: &str,
    other: &str,
) -> bool {
    let guard = || -> Option<bool> {
        let p = l.preheader?;
        let [g] = cfg.blocks[p].preds[..] else {
            return None;
        };
        let gb = &cfg.blocks[g];
        let branch = gb.stmts.clone().rev().find(|&k| instr(f, k).is_some())?;
        let bra = instr(f, branch)?;
        let Flow::Branch(target) = effects(bra).flow else {
            return None;
        };
        let Guard { negated, pred } = bra.guard.as_ref()?;
        let setp = gb
            .stmts
            .clone()
            .rev()
            .find(|&k| instr(f, k).is_some_and(|i| effects(i).defs.contains(&pred.as_str())))?;
        let si = instr(f, setp)?;
        let eq = match si.op {
            Op::Compare(Compare {
                value: false,
                cmp: Some(CmpOp::Eq),
                ..
            }) => true,
            Op::Compare(Compare {
                value: false,
                cmp: Some(CmpOp::Ne),
                ..
            }) => false,
            _ => return None,
        };
        if si.guard.is_some() || si.operands.len() != 3 {
            return None;
        }
        let (x, y) = (si.operands[1].trim(), si.operands[2].trim());
        let bound = if bound.trim() == c { other } else { bound }.trim();
        // The test reads the counter itself, or a register holding the value the counter's
        // one definition before the loop gives it (NVVM recomputes `n & 3` for the
        // remainder loop's counter after testing it: both `and` of one parameter load).
        let tested = if x == bound { y } else { x };
        let copy = tested != c && {
            let outside: Vec<usize> = defs
                .get(c)
                .map(|ds| {
                    ds.iter()
                        .copied()
                        .filter(|&d| !l.contains_stmt(cfg, d))
                        .collect()
                })
                .unwrap_or_default();
            matches!(outside.as_slice(), [d] if same_value(f, defs, *d, tested, 4))
        };
        if !((x == c && y == bound) || (y == c && x == bound) || copy) {
            return None;
        }
        // Nothing sets `c` (unless as the copy of the tested value) or the bound after the
        // test: in `g` after it, or in the preheader.
        let set_after = |r: &str| {
            defs.get(r).is_some_and(|ds| {
                ds.iter().any(|&d| {
                    (d > setp && gb.stmts.contains(&d)) || cfg.blocks[p].stmts.contains(&d)
                })
            })
        };
        if (!copy && set_after(c)) || set_after(bound) || set_after(tested) {
            return None;
        }
        // The predicate's value on the edge into the preheader.
        let to_p = cfg.blocks[p].label.as_deref() == Some(target);
        let pred_on_edge = to_p != *negated;
        // `eq` true means equal; `ne` true means unequal.
        Some(pred_on_edge != eq)
    };
    guard().unwrap_or(false)
}

/// Whether statement `d` computes the value register `r` holds: the same instruction
/// (opcode, types, immediates, parameter addresses) over operands that are the same
/// registers or, recursively, registers of one definition computing the same values.
/// Registers of one definition hold one value wherever they are read, so this is a
/// comparison of expressions.
fn same_value(f: &Function, defs: &Defs, d: usize, r: &str, depth: u32) -> bool {
    let one = |r: &str| match defs.get(r).map(Vec::as_slice) {
        Some([k]) => Some(*k),
        _ => None,
    };
    let Some(k) = one(r) else {
        return false;
    };
    let (Some(a), Some(b)) = (instr(f, d), instr(f, k)) else {
        return false;
    };
    if d == k {
        return true;
    }
    // A copy of `r` (or of a register computing its value).
    if matches!(a.op, Op::Mov(_)) && a.guard.is_none() && a.operands.len() == 2 {
        let q = a.operands[1].trim();
        if q == r {
            return true;
        }
        if q.starts_with('%') {
            return depth > 0 && one(q).is_some_and(|dq| same_value(f, defs, dq, r, depth - 1));
        }
    }
    if depth == 0
        || a.guard.is_some()
        || b.guard.is_some()
        // The decoded operation, with its type and the modifiers that change the value
        // (`.lo`, `.wide`, `.sat`, rounding, `.ftz`, `.approx`): a type the decoder does not
        // know (`min.u16x2`) is not compared at all.
        || a.op != b.op
        || !typed(&a.op)
        || a.operands.len() != b.operands.len()
        || effects(a).defs.len() != 1
        || !pure(&a.op)
        || a.operands.iter().any(|o| {
            let o = o.trim();
            o.starts_with("%clock") || o.starts_with("%globaltimer") || o.starts_with("%pm")
        })
    {
        return false;
    }
    a.operands.iter().zip(&b.operands).skip(1).all(|(p, q)| {
        let (p, q) = (p.trim(), q.trim());
        p == q
            || (p.starts_with('%')
                && q.starts_with('%')
                && one(p).is_some_and(|dp| same_value(f, defs, dp, q, depth - 1)))
    })
}

/// Whether the operation's types are all decoded, so that equal operations compute alike.
fn typed(op: &Op) -> bool {
    match op {
        Op::Arith(a) => a.ty.is_some(),
        Op::Convert(c) => c.to.is_some() && c.from.is_some(),
        Op::Mov(t) => t.is_some(),
        Op::Mem(m) => m.ty.is_some(),
        _ => false,
    }
}

/// Whether the operation computes its one destination from its operands alone, the same
/// wherever it runs: arithmetic and logic (no carry in), conversions, copies, and loads of
/// parameters.
fn pure(op: &Op) -> bool {
    use ArithOp::*;
    match op {
        Op::Arith(a) => {
            !a.carry_in
                && matches!(
                    a.op,
                    Add | Sub
                        | Mul
                        | Mad
                        | And
                        | Or
                        | Xor
                        | Not
                        | Shl
                        | Shr
                        | Min
                        | Max
                        | Div
                        | Rem
                        | Neg
                        | Abs
                )
        }
        Op::Convert(_) | Op::Mov(_) => true,
        Op::Mem(m) => m.op == MemOp::Ld && m.space == Space::Param,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(body: &str) -> Function {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)\n{{\n\
             .reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<32>;\n.reg .f32 %f<16>;\n{body}\n}}\n"
        );
        super::super::read::parse(&ptx).unwrap().functions.remove(0)
    }

    /// A column sum as NVRTC writes it: `for (r = 0; r < rows; ++r) s += in[r * cols + c]`,
    /// the address strength-reduced to a pointer that steps by `cols * 4`.
    const COLUMN: &str = "ld.param.u64 %rd1, [k_param_0];\n\
        ld.param.u32 %r2, [k_param_1];\n\
        setp.lt.s32 %p1, %r2, 1;\n\
        @%p1 bra $L__BB0_3;\n\
        mov.u32 %r10, 0;\n\
        mul.wide.s32 %rd3, %r2, 4;\n\
        mov.u64 %rd10, %rd1;\n\
        $L__BB0_2:\n\
        ld.global.f32 %f3, [%rd10];\n\
        add.f32 %f4, %f4, %f3;\n\
        add.s64 %rd10, %rd10, %rd3;\n\
        add.s32 %r10, %r10, 1;\n\
        setp.lt.s32 %p2, %r10, %r2;\n\
        @%p2 bra $L__BB0_2;\n\
        $L__BB0_3:\n\
        ret;";

    #[test]
    fn a_column_loop() {
        let f = function(COLUMN);
        let g = Cfg::new(&f);
        let ls = loops(&f, &g, &definitions(&f));
        assert_eq!(ls.len(), 1);
        let l = &ls[0];
        assert_eq!(l.blocks.len(), 1);
        assert_eq!(l.latches, [l.header]);
        assert!(l.preheader.is_some());
        assert_eq!(l.exits.len(), 1);
        let regs: Vec<(&str, &[Step])> = l
            .ivs
            .iter()
            .map(|iv| (iv.reg.as_str(), &iv.steps[..]))
            .collect();
        assert_eq!(
            regs,
            [
                (
                    "%rd10",
                    &[Step::Reg {
                        reg: "%rd3".into(),
                        negated: false
                    }][..]
                ),
                ("%r10", &[Step::Imm(1)][..]),
            ]
        );
        let t = l.exit_test.as_ref().unwrap();
        assert_eq!(l.ivs[t.iv].reg, "%r10");
        assert_eq!(
            (t.cmp, t.signed, t.continue_if, t.after_update),
            (Cmp::Lt, true, true, true)
        );
        assert_eq!(t.bound, Bound::Reg("%r2".into()));
    }

    /// A remainder loop as NVRTC writes it: `n & 3` tested against 0, then recomputed from a
    /// second load of `n` as the counter, which counts down to 0; `ld`: the first load's
    /// opcode.
    fn remainder_loop(ld: &str, second: &str) -> Function {
        function(&format!(
            "{ld} %r2, [k_param_1];\n\
             and.b32 %r3, %r2, 3;\n\
             setp.eq.s32 %p1, %r3, 0;\n\
             @%p1 bra $L_done;\n\
             {second}\n\
             $L_loop:\n\
             add.s32 %r4, %r4, 1;\n\
             add.s32 %r5, %r5, -1;\n\
             setp.ne.s32 %p2, %r5, 0;\n\
             @%p2 bra $L_loop;\n\
             $L_done:\n\
             ret;"
        ))
    }

    #[test]
    fn a_counter_recomputed_after_its_entry_test_is_entered_only_if_unequal() {
        let entered = |second: &str| {
            let f = remainder_loop("ld.param.u32", second);
            let g = Cfg::new(&f);
            let ls = loops(&f, &g, &definitions(&f));
            ls[0].exit_test.as_ref().unwrap().entered_if_unequal
        };
        // The counter is the tested register, or the same `and` of the same parameter.
        assert!(entered("mov.u32 %r5, %r3;\n\tmov.u32 %r4, 0;"));
        assert!(entered(
            "ld.param.u32 %r6, [k_param_1];\n\tand.b32 %r5, %r6, 3;\n\tmov.u32 %r4, 0;"
        ));
        // Another mask, or another parameter: not the tested value.
        assert!(!entered(
            "ld.param.u32 %r6, [k_param_1];\n\tand.b32 %r5, %r6, 7;\n\tmov.u32 %r4, 0;"
        ));
        assert!(!entered(
            "ld.param.u32 %r6, [k_param_0];\n\tand.b32 %r5, %r6, 3;\n\tmov.u32 %r4, 0;"
        ));
    }

    #[test]
    fn a_parameter_load_of_the_entry_space_is_the_same_value() {
        // `ld.param::entry` is `ld.param` of a kernel's parameter: two loads of one parameter
        // hold one value. (Before the typed operation, only the part `param` was a parameter
        // load, and this loop was not known to be entered only if the counter is nonzero.)
        let f = remainder_loop(
            "ld.param::entry.u32",
            "ld.param::entry.u32 %r6, [k_param_1];\n\tand.b32 %r5, %r6, 3;\n\tmov.u32 %r4, 0;",
        );
        let g = Cfg::new(&f);
        let ls = loops(&f, &g, &definitions(&f));
        assert!(ls[0].exit_test.as_ref().unwrap().entered_if_unequal);
    }

    #[test]
    fn a_floating_point_comparison_is_no_exit_test() {
        // A counter compared as `bf16` (or `f32`) is not compared as an integer. (Before the
        // typed operation, only parts beginning with `f` were floats, and `setp.lt.bf16` was
        // taken for an integer test bounding the loop.)
        for ty in ["bf16", "f32"] {
            let f = function(&format!(
                "mov.u32 %r1, 0;\n\
                 $L_loop:\n\
                 add.s32 %r1, %r1, 1;\n\
                 setp.lt.{ty} %p1, %r1, %r9;\n\
                 @%p1 bra $L_loop;\n\
                 ret;"
            ));
            let g = Cfg::new(&f);
            let ls = loops(&f, &g, &definitions(&f));
            assert_eq!(ls[0].ivs.len(), 1);
            assert!(ls[0].exit_test.is_none(), "setp.lt.{ty}");
        }
    }

    #[test]
    fn nested_loops_and_a_test_at_the_top() {
        // for (i = 0; i < n; i++) { j = 8; while (j != 0) { ...; j -= 2; } }
        let f = function(
            "ld.param.u32 %r2, [k_param_1];\n\
             mov.u32 %r1, 0;\n\
             $L_outer:\n\
             setp.ge.u32 %p1, %r1, %r2;\n\
             @%p1 bra $L_done;\n\
             mov.u32 %r3, 8;\n\
             $L_inner:\n\
             add.s32 %r4, %r4, %r3;\n\
             sub.s32 %r3, %r3, 2;\n\
             setp.ne.s32 %p2, %r3, 0;\n\
             @%p2 bra $L_inner;\n\
             add.s32 %r1, %r1, 1;\n\
             bra.uni $L_outer;\n\
             $L_done:\n\
             ret;",
        );
        let g = Cfg::new(&f);
        let ls = loops(&f, &g, &definitions(&f));
        assert_eq!(ls.len(), 2);
        let (outer, inner) = (&ls[0], &ls[1]);
        assert!(outer.blocks.is_superset(&inner.blocks));
        assert_eq!(inner.parent, Some(0));
        assert_eq!(outer.parent, None);
        assert_eq!(
            inner.ivs.len(),
            1,
            "%r4 adds a register the loop redefines: no IV"
        );
        assert_eq!(inner.ivs[0].steps, [Step::Imm(-2)]);
        let ti = inner.exit_test.as_ref().unwrap();
        assert_eq!(
            (ti.cmp, ti.continue_if, ti.bound.clone()),
            (Cmp::Ne, true, Bound::Imm(0))
        );
        // The outer IV %r1 (the inner loop's %r3 is defined by `mov` in the outer loop too).
        assert_eq!(
            outer.ivs.iter().map(|v| v.reg.as_str()).collect::<Vec<_>>(),
            ["%r1"]
        );
        let to = outer.exit_test.as_ref().unwrap();
        assert_eq!(
            (to.cmp, to.continue_if, to.signed, to.after_update),
            (Cmp::Ge, false, false, false)
        );
    }

    #[test]
    fn an_unrolled_pointer_steps_through_a_chain() {
        // for (r = 0; r < n; r += 4) four loads at p, p + s, p + 2s, p + 3s; p += 4s.
        let f = function(
            "mov.u32 %r1, 0;\n\
             $L_loop:\n\
             ld.global.f32 %f1, [%rd20];\n\
             add.s64 %rd13, %rd20, %rd3;\n\
             ld.global.f32 %f2, [%rd13];\n\
             add.s64 %rd14, %rd13, %rd3;\n\
             add.s64 %rd20, %rd14, 16;\n\
             add.s32 %r1, %r1, 4;\n\
             setp.ne.s32 %p1, %r1, %r9;\n\
             @%p1 bra $L_loop;\n\
             ret;",
        );
        let g = Cfg::new(&f);
        let ls = loops(&f, &g, &definitions(&f));
        let p = ls[0].ivs.iter().find(|v| v.reg == "%rd20").unwrap();
        let s = Step::Reg {
            reg: "%rd3".into(),
            negated: false,
        };
        assert_eq!(p.steps, [Step::Imm(16), s.clone(), s]);
        let t = ls[0].exit_test.as_ref().unwrap();
        assert_eq!((t.cmp, t.continue_if), (Cmp::Ne, true));
        // %rd13 and %rd14 are set from the old pointer each iteration: no induction.
        assert_eq!(ls[0].ivs.len(), 2);
    }

    /// An `int` grid-stride loop as NVVM writes it: the counter widened for the addresses,
    /// narrowed back, and stepped by `ntid.x * nctaid.x` with `%nctaid.x` copied in the loop.
    const GRID_STRIDE: &str = ".reg .b32 %r<13>;\n\
         .reg .b64 %rd<4>;\n\
         mov.u32 %r7, %ntid.x;\n\
         mov.u32 %r12, %tid.x;\n\
         $L_loop:\n\
         cvt.s64.s32 %rd1, %r12;\n\
         shl.b64 %rd2, %rd1, 5;\n\
         mov.u32 %r9, %nctaid.x;\n\
         cvt.u32.u64 %r11, %rd1;\n\
         mad.lo.s32 %r12, %r7, %r9, %r11;\n\
         setp.lt.s32 %p3, %r12, %r5;\n\
         @%p3 bra $L_loop;\n\
         ret;";

    #[test]
    fn a_counter_narrowed_back_from_its_widening_steps_by_a_product() {
        let f = function(GRID_STRIDE);
        let g = Cfg::new(&f);
        let ls = loops(&f, &g, &definitions(&f));
        let c = ls[0].ivs.iter().find(|v| v.reg == "%r12").unwrap();
        assert_eq!(c.steps, [Step::Mul("%r7".into(), "%r9".into())]);
        assert_eq!(ls[0].exit_test.as_ref().unwrap().iv, 0);
    }

    #[test]
    fn a_narrowing_of_another_width_or_a_varying_factor_is_no_step() {
        // The widening reads 16 bits: narrowing to 32 does not give the counter back.
        let f = function(&GRID_STRIDE.replace("cvt.s64.s32", "cvt.s64.s16"));
        let g = Cfg::new(&f);
        assert!(loops(&f, &g, &definitions(&f))[0].ivs.is_empty());
        // A factor the loop computes from the counter.
        let f = function(&GRID_STRIDE.replace("mov.u32 %r9, %nctaid.x;", "add.s32 %r9, %r12, 1;"));
        let g = Cfg::new(&f);
        assert!(loops(&f, &g, &definitions(&f))[0].ivs.is_empty());
        // The widening after the narrowing's read would be a later value: not a copy.
        let f = function(
            &GRID_STRIDE
                .replace("cvt.s64.s32 %rd1, %r12;\n", "")
                .replace("mad.lo.s32", "cvt.s64.s32 %rd1, %r12;\nmad.lo.s32"),
        );
        let g = Cfg::new(&f);
        assert!(loops(&f, &g, &definitions(&f))[0].ivs.is_empty());
    }

    #[test]
    fn a_conditional_update_is_no_induction() {
        let f = function(
            "mov.u32 %r1, 0;\n\
             $L_loop:\n\
             setp.eq.s32 %p3, %r5, 0;\n\
             @%p3 bra $L_skip;\n\
             add.s32 %r1, %r1, 1;\n\
             $L_skip:\n\
             add.s32 %r5, %r5, 1;\n\
             setp.lt.s32 %p2, %r5, 100;\n\
             @%p2 bra $L_loop;\n\
             ret;",
        );
        let g = Cfg::new(&f);
        let ls = loops(&f, &g, &definitions(&f));
        let ivs: Vec<&str> = ls[0].ivs.iter().map(|v| v.reg.as_str()).collect();
        assert_eq!(ivs, ["%r5"]);
        assert_eq!(ls[0].exit_test.as_ref().unwrap().bound, Bound::Imm(100));
    }
}
