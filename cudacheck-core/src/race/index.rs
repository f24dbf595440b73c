//! Element indices: which bytes of its array a shared access touches, as a function of the
//! thread, so that two accesses that no two different threads can run on the same bytes need
//! no check against each other (`intervals.rs` uses it per barrier interval).
//!
//! An address is read back through its register's definitions into one of two forms, for a
//! block of a known shape (the race-checked build is made per launch shape, so the shape the
//! proof assumes is the one every launch of the build has):
//!
//! - [`Form::Affine`]: `sym + scale * t + offset` exactly, `t = %tid.x` in `[lo, hi]`: the
//!   block's range narrowed by the comparisons of `t` with constants on the branches that
//!   dominate the access (`if (tid < 128)`). Registers are followed through `mov`, `add`,
//!   `sub`, `mul.lo`/`shl` by a constant and the widenings `cvt` and `mul.wide` (32 to 64
//!   bits); a widening is read exactly only where every value the 32-bit register can hold
//!   in the block lies in the range the widening keeps (`[0, 2^31)` signed, `[0, 2^32)`
//!   unsigned): the 32-bit arithmetic below it is the ring's, so the register holds the
//!   integer itself there.
//! - [`Form::Private`]: `sym + scale * W(R) + offset`, `W` a widening of a 32-bit register `R`
//!   that a block-stride loop steps (`for (c = threadIdx.x + k; ...; c += blockDim.x)`): its
//!   only definitions are `R = t + k` (once, or the same value at each of them) and `R = R +
//!   %ntid.x`. Then `R = t + k + n * ntid.x (mod 2^32)` for some `n >= 0` of the thread's own,
//!   and, with `ntid.x` a power of two (a divisor of `2^32`), `R = t + k (mod ntid.x)`: two
//!   threads holding the same `R` have the same `t`. `W` is injective, and `|scale| < 2^30`
//!   keeps `scale * W(R)` from wrapping, so two accesses of one key touch common bytes only
//!   for one thread when neither is wider than `|scale|`.
//!
//! Only `%tid.x` is a thread variable: in a block with `ntid.y` or `ntid.z` above one, two
//! threads share each value of it, and an index in it alone proves nothing
//! ([`Shape::distinct`] false: `t_a == t_b` stays possible for different threads). Anything
//! else (a register with several definitions that are not a block-stride loop, a value read
//! from memory, a 32-bit address) has no form, and its access is checked as before.

use crate::ir::read::Instr;
use crate::ir::{immediate, Address, Arith, ArithOp, Cfg, CmpOp, Facts, Half, Op, Operand, Ty};

/// What the proof needs of the launch: the block's `x` extent, and whether `%tid.x` tells
/// the block's threads apart (no `y` or `z` extent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    pub nx: i64,
    pub distinct: bool,
}

impl Shape {
    pub fn of(block: [u32; 3]) -> Option<Shape> {
        (block[0] > 0).then_some(Shape {
            nx: i64::from(block[0]),
            distinct: block[1] <= 1 && block[2] <= 1,
        })
    }
}

/// Where an access is, as a function of the thread (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Form {
    Affine {
        sym: String,
        scale: i64,
        offset: i64,
        lo: i64,
        hi: i64,
    },
    Private {
        sym: String,
        scale: i64,
        offset: i64,
        /// The 32-bit register's value is `t + inner (mod ntid.x)`, widened signed or not.
        inner: i64,
        signed: bool,
    },
}

/// One access's bytes: its form and width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Index {
    pub form: Form,
    pub bytes: i64,
}

/// Whether two different threads of a block of `shape` can run `a` and `b` on common bytes.
pub(super) fn may_overlap(a: &Index, b: &Index, shape: Shape) -> bool {
    match (&a.form, &b.form) {
        (
            Form::Affine {
                sym: sa,
                scale: xa,
                offset: da,
                lo: la,
                hi: ha,
            },
            Form::Affine {
                sym: sb,
                scale: xb,
                offset: db,
                lo: lb,
                hi: hb,
            },
        ) => {
            if sa != sb {
                return true;
            }
            if la > ha || lb > hb {
                // Never run.
                return false;
            }
            // For each thread value of `a`, the values of `b`'s thread whose bytes meet it:
            // `xb * tb + db` in the open interval `(xa * ta + da - wb, xa * ta + da + wa)`.
            (*la..=*ha).any(|ta| {
                let x = xa * ta + da - db;
                let (open_lo, open_hi) = (x - b.bytes, x + a.bytes);
                let (mut lo, mut hi) = match xb.cmp(&0) {
                    std::cmp::Ordering::Equal => {
                        if open_lo < 0 && 0 < open_hi {
                            (*lb, *hb)
                        } else {
                            return false;
                        }
                    }
                    std::cmp::Ordering::Greater => {
                        (open_lo.div_euclid(*xb) + 1, (open_hi - 1).div_euclid(*xb))
                    }
                    std::cmp::Ordering::Less => {
                        let n = -xb;
                        ((-open_hi).div_euclid(n) + 1, (-open_lo - 1).div_euclid(n))
                    }
                };
                lo = lo.max(*lb);
                hi = hi.min(*hb);
                if lo > hi {
                    return false;
                }
                // A thread other than `a`'s: any value when `t` does not tell threads apart.
                !shape.distinct || lo < hi || lo != ta
            })
        }
        (
            Form::Private {
                sym: sa,
                scale: xa,
                offset: da,
                inner: ia,
                signed: ga,
            },
            Form::Private {
                sym: sb,
                scale: xb,
                offset: db,
                inner: ib,
                signed: gb,
            },
        ) => {
            let same = sa == sb && xa == xb && da == db && ia == ib && ga == gb;
            !(same && shape.distinct && a.bytes <= xa.abs() && b.bytes <= xa.abs())
        }
        _ => true,
    }
}

/// A register's value over the integers, as far as it is known (module docs): `sym + coef *
/// term + c`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Val {
    sym: Option<String>,
    coef: i64,
    term: Term,
    c: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Term {
    /// `%tid.x` itself.
    Tid,
    /// `%tid.x + n * ntid.x` (mod 2^32), `n >= 0` the thread's own.
    Strided,
    /// A widening of a 32-bit `R = t + inner (mod ntid.x)`.
    Wide { inner: i64, signed: bool },
}

impl Val {
    fn konst(c: i64) -> Val {
        Val {
            sym: None,
            coef: 0,
            term: Term::Tid,
            c,
        }
    }

    fn scaled(self, k: i64) -> Option<Val> {
        if self.sym.is_some() {
            return None;
        }
        Some(Val {
            coef: self.coef.checked_mul(k)?,
            c: self.c.checked_mul(k)?,
            ..self
        })
    }

    fn plus(self, o: Val) -> Option<Val> {
        let sym = match (self.sym, o.sym) {
            (Some(_), Some(_)) => return None,
            (a, b) => a.or(b),
        };
        let (coef, term) = match (self.coef, o.coef) {
            (0, _) => (o.coef, o.term),
            (_, 0) => (self.coef, self.term),
            (a, b) if self.term == Term::Tid && o.term == Term::Tid => {
                (a.checked_add(b)?, Term::Tid)
            }
            _ => return None,
        };
        Some(Val {
            sym,
            coef,
            term,
            c: self.c.checked_add(o.c)?,
        })
    }
}

/// Reads the registers of one function (module docs).
pub(super) struct Reader<'f, 'a> {
    facts: &'a Facts<'f>,
    shape: Shape,
}

const BIG: i64 = 1 << 40;

impl<'f, 'a> Reader<'f, 'a> {
    pub fn new(facts: &'a Facts<'f>, shape: Shape) -> Self {
        Reader { facts, shape }
    }

    fn instr(&self, k: usize) -> Option<&'f Instr> {
        self.facts.instr(k)
    }

    fn operand(&self, o: &str, depth: u32) -> Option<Val> {
        match Operand::parse(o) {
            Operand::Reg(r) => self.reg(r, depth + 1),
            Operand::Special("%tid.x") => Some(Val {
                sym: None,
                coef: 1,
                term: Term::Tid,
                c: 0,
            }),
            _ => {
                if let Some(c) = immediate(o) {
                    return i64::try_from(c).ok().map(Val::konst);
                }
                None
            }
        }
    }

    /// Whether `o` holds `%ntid.x`.
    fn is_ntid_x(&self, o: &str) -> bool {
        match Operand::parse(o) {
            Operand::Special("%ntid.x") => true,
            Operand::Reg(r) => self
                .facts
                .single_def(r)
                .and_then(|k| self.instr(k))
                .is_some_and(|i| {
                    matches!(i.op, Op::Mov(_))
                        && i.operands.get(1).is_some_and(|s| self.is_ntid_x(s))
                }),
            _ => false,
        }
    }

    fn reg(&self, r: &str, depth: u32) -> Option<Val> {
        if depth > 24 {
            return None;
        }
        let defs = self.facts.defs.get(r)?;
        // One definition, or copies of one (a loop versioned by the bounds rewrite keeps its
        // registers): each computes the same value of operands that are not `r`.
        let first = self.instr(*defs.first()?).filter(|i| i.guard.is_none())?;
        let copies = defs.iter().all(|&k| {
            self.instr(k).is_some_and(|i| {
                i.guard.is_none() && i.op == first.op && i.operands == first.operands
            })
        });
        if copies
            && !first
                .operands
                .iter()
                .skip(1)
                .any(|o| Operand::parse(o) == Operand::Reg(r))
        {
            return self.def(first, depth);
        }
        self.stride_loop(r, defs, depth)
    }

    /// A register set once (or the same at each setting) to `t + k` and otherwise only
    /// stepped by `%ntid.x`: a block-stride loop's index.
    fn stride_loop(&self, r: &str, defs: &[usize], depth: u32) -> Option<Val> {
        let mut init: Option<Val> = None;
        let mut steps = 0;
        for &k in defs {
            let i = self.instr(k).filter(|i| i.guard.is_none())?;
            if i.operands.first().map(String::as_str) != Some(r) {
                return None;
            }
            if let Op::Arith(Arith {
                op: ArithOp::Add,
                ty: Some(ty),
                half: None,
                carry_in: false,
                carry_out: false,
                sat: false,
                ..
            }) = i.op
            {
                let (x, y) = (i.operands.get(1)?, i.operands.get(2)?);
                let other = if x == r {
                    Some(y)
                } else if y == r {
                    Some(x)
                } else {
                    None
                };
                if let Some(step) = other {
                    if ty.int_bits() != Some(32) || !self.is_ntid_x(step) {
                        return None;
                    }
                    steps += 1;
                    continue;
                }
            }
            let v = self.def(i, depth)?;
            let v = Val {
                term: if v.coef == 0 { Term::Tid } else { v.term },
                ..v
            };
            if v.sym.is_some() || v.coef != 1 || !matches!(v.term, Term::Tid | Term::Strided) {
                return None;
            }
            let v = Val {
                term: Term::Strided,
                ..v
            };
            match &init {
                Some(w) if *w != v => return None,
                _ => init = Some(v),
            }
        }
        (steps > 0).then_some(())?;
        init
    }

    fn def(&self, i: &Instr, depth: u32) -> Option<Val> {
        let ops = &i.operands;
        let arg = |n: usize| -> Option<Val> { self.operand(ops.get(n)?, depth) };
        match i.op {
            Op::Mov(_) => {
                let o = ops.get(1)?;
                if let Some(v) = self.operand(o, depth) {
                    return Some(v);
                }
                // A shared array's address.
                let name = o.trim();
                (!name.starts_with('%') && immediate(name).is_none()).then(|| Val {
                    sym: Some(name.to_string()),
                    coef: 0,
                    term: Term::Tid,
                    c: 0,
                })
            }
            Op::Convert(c) => {
                let (to, from) = c.int()?;
                let v = arg(1)?;
                match (from.int_bits()?, to.int_bits()?) {
                    (32, 64) => self.widen(v, from.signed()),
                    (a, b) if a == b => Some(v),
                    _ => None,
                }
            }
            Op::Arith(a) if !a.carry_in && !a.carry_out && !a.sat => {
                let bits = a.ty.and_then(Ty::int_bits)?;
                match (a.op, a.half) {
                    (ArithOp::Add, None) => arg(1)?.plus(arg(2)?),
                    (ArithOp::Sub, None) => arg(1)?.plus(arg(2)?.scaled(-1)?),
                    (ArithOp::Shl, None) => {
                        let k = arg(2)?;
                        (k.coef == 0 && k.sym.is_none() && (0..31).contains(&k.c)).then_some(())?;
                        arg(1)?.scaled(1 << k.c)
                    }
                    (ArithOp::Mul, Some(Half::Lo)) => {
                        let (x, y) = (arg(1)?, arg(2)?);
                        if y.coef == 0 && y.sym.is_none() {
                            x.scaled(y.c)
                        } else if x.coef == 0 && x.sym.is_none() {
                            y.scaled(x.c)
                        } else {
                            None
                        }
                    }
                    (ArithOp::Mul, Some(Half::Wide)) if bits == 32 => {
                        let (x, y) = (arg(1)?, arg(2)?);
                        let signed = a.ty.is_some_and(Ty::signed);
                        if y.coef == 0 && y.sym.is_none() && (0..1i64 << 31).contains(&y.c) {
                            self.widen(x, signed)?.scaled(y.c)
                        } else {
                            None
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A 32-bit value widened to 64 bits (module docs).
    fn widen(&self, v: Val, signed: bool) -> Option<Val> {
        if v.sym.is_some() {
            return None;
        }
        match v.term {
            _ if v.coef == 0 => {
                let top = if signed { 1i64 << 31 } else { 1i64 << 32 };
                (0..top).contains(&v.c).then_some(v)
            }
            Term::Tid => {
                let top = if signed { 1i64 << 31 } else { 1i64 << 32 };
                let ends = [
                    v.c,
                    v.c.checked_add(v.coef.checked_mul(self.shape.nx - 1)?)?,
                ];
                ends.iter().all(|e| (0..top).contains(e)).then_some(v)
            }
            Term::Strided => {
                let n = self.shape.nx;
                (v.coef == 1 && n > 0 && n & (n - 1) == 0).then_some(Val {
                    sym: None,
                    coef: 1,
                    term: Term::Wide { inner: v.c, signed },
                    c: 0,
                })
            }
            Term::Wide { .. } => None,
        }
    }

    /// The form of an access's address operand (`[%rd4+512]`, `[tile+8]`), or `None`.
    pub fn form(&self, cfg: &Cfg, at: usize, addr: &Address) -> Option<Form> {
        let base = if addr.base_is_reg() {
            let wide = self.facts.reg_ty(addr.base).and_then(Ty::int_bits) == Some(64);
            if !wide {
                return None;
            }
            self.reg(addr.base, 0)?
        } else if addr.base.is_empty() {
            return None;
        } else {
            Val {
                sym: Some(addr.base.to_string()),
                coef: 0,
                term: Term::Tid,
                c: 0,
            }
        };
        let v = base.plus(Val::konst(addr.offset))?;
        let sym = v.sym?;
        if v.c.abs() >= BIG || v.coef.abs() >= 1 << 30 {
            return None;
        }
        match v.term {
            _ if v.coef == 0 || v.term == Term::Tid => {
                let (lo, hi) = self.tid_range(cfg, at);
                Some(Form::Affine {
                    sym,
                    scale: v.coef,
                    offset: v.c,
                    lo,
                    hi,
                })
            }
            Term::Wide { inner, signed } => Some(Form::Private {
                sym,
                scale: v.coef,
                offset: v.c,
                inner,
                signed,
            }),
            Term::Strided | Term::Tid => None,
        }
    }

    /// The values `%tid.x` can have at statement `at`: the block's, narrowed by the
    /// comparisons with constants on the edges into the blocks that dominate it (each the
    /// only way into its block).
    fn tid_range(&self, cfg: &Cfg, at: usize) -> (i64, i64) {
        let (mut lo, mut hi) = (0, self.shape.nx - 1);
        let Some(mut b) = cfg.block_of(at) else {
            return (lo, hi);
        };
        loop {
            if let [p] = cfg.blocks[b].preds.as_slice() {
                if let Some((pred, holds)) = cfg.condition(*p, b) {
                    let end = cfg.blocks[*p].stmts.end.saturating_sub(1);
                    if let Some((op, k)) = self.tid_compare(pred, end) {
                        narrow(&mut lo, &mut hi, if holds { op } else { negate(op) }, k);
                    }
                }
            }
            match cfg.idom.get(b).copied().flatten() {
                Some(d) if d != b => b = d,
                _ => break,
            }
        }
        (lo, hi)
    }

    /// `pred` (as the branch at `at` reads it) is `t op k`.
    fn tid_compare(&self, pred: &str, at: usize) -> Option<(CmpOp, i64)> {
        let k = self.facts.reaching_def(pred, at)?;
        let i = self.instr(k)?;
        let Op::Compare(c) = i.op else { return None };
        if c.value || c.combine.is_some() || i.operands.first()? != pred {
            return None;
        }
        let ty = c.ty?;
        let bits = ty.int_bits()?;
        let cmp = c.cmp?;
        let (a, b) = (i.operands.get(1)?, i.operands.get(2)?);
        let (reg, imm, op) = match (immediate(a), immediate(b)) {
            (None, Some(x)) => (a, x, cmp),
            (Some(x), None) => (b, x, flip(cmp)?),
            _ => return None,
        };
        let v = self.operand(reg, 0)?;
        if v.sym.is_some() || v.coef != 1 || v.term != Term::Tid {
            return None;
        }
        // The register holds `t + c` itself: every value lies in `[0, 2^(bits-1))`.
        let top = 1i128 << (bits - 1);
        if v.c < 0 || i128::from(v.c + self.shape.nx - 1) >= top {
            return None;
        }
        let unsigned = cmp.unsigned() || ty.unsigned() || matches!(ty, Ty::B32 | Ty::B64);
        let m = 1i128 << bits;
        let imm = imm.rem_euclid(m);
        let imm = if !unsigned && imm >= m / 2 {
            imm - m
        } else {
            imm
        };
        let k = i64::try_from(imm).ok()?.checked_sub(v.c)?;
        Some((op, k))
    }
}

fn flip(op: CmpOp) -> Option<CmpOp> {
    use CmpOp::*;
    Some(match op {
        Eq => Eq,
        Ne => Ne,
        Lt => Gt,
        Le => Ge,
        Gt => Lt,
        Ge => Le,
        Lo => Hi,
        Ls => Hs,
        Hi => Lo,
        Hs => Ls,
        _ => return None,
    })
}

fn negate(op: CmpOp) -> CmpOp {
    use CmpOp::*;
    match op {
        Eq => Ne,
        Ne => Eq,
        Lt => Ge,
        Le => Gt,
        Gt => Le,
        Ge => Lt,
        Lo => Hs,
        Ls => Hi,
        Hi => Ls,
        Hs => Lo,
        // Floating-point comparisons never reach here (integer types only).
        other => other,
    }
}

fn narrow(lo: &mut i64, hi: &mut i64, op: CmpOp, k: i64) {
    use CmpOp::*;
    match op {
        Lt | Lo => *hi = (*hi).min(k.saturating_sub(1)),
        Le | Ls => *hi = (*hi).min(k),
        Gt | Hi => *lo = (*lo).max(k.saturating_add(1)),
        Ge | Hs => *lo = (*lo).max(k),
        Eq => {
            *lo = (*lo).max(k);
            *hi = (*hi).min(k);
        }
        Ne => {
            if k == *lo {
                *lo += 1;
            } else if k == *hi {
                *hi -= 1;
            }
        }
        _ => {}
    }
}
