//! The values: an access's offset and the registers it is computed from, as host expressions
//! over the launch's values, through single and reaching definitions.

use super::*;

impl<'a> Guards<'a> {
    /// Whether `op` is an immediate, `%ntid`/`%nctaid`, or a register whose single definition
    /// computes it from those and whole scalar parameters with operations [`Self::def_value`]
    /// reads: its value is the same in every thread of a launch, and the host can compute it.
    pub(super) fn uniform(&self, op: &str, depth: u32) -> bool {
        if imm(op).is_some() || op.starts_with("%ntid.") || op.starts_with("%nctaid.") {
            return true;
        }
        if depth > 12 || !is_reg(op) {
            return false;
        }
        let Some(i) = self.single_def(op) else {
            return false;
        };
        use ArithOp::*;
        let plain = match i.op {
            Op::Mem(Mem { op: MemOp::Ld, .. }) => return self.param_reg(op).is_some(),
            Op::Mov(_) => true,
            Op::Convert(c) => !c.sat,
            Op::Arith(a) => {
                !a.carry_in
                    && !a.carry_out
                    && !a.sat
                    && a.half != Some(Half::Hi)
                    && matches!(
                        a.op,
                        Add | Sub | Mul | Mad | Shl | Shr | Div | Rem | And | Not | Min | Max
                    )
            }
            _ => false,
        };
        plain
            && int_of(&i.op).is_some()
            && i.operands.len() >= 2
            && i.operands[1..].iter().all(|o| self.uniform(o, depth + 1))
    }

    /// `sub r, x, y` where `y = q * d` and `q = x / d` (single definitions, same operands):
    /// NVVM's remainder when it also needs the quotient. `(bits, signed)` of the division,
    /// and the divisor.
    pub(super) fn remainder_of(&self, i: &Instr, at: usize) -> Option<((u8, bool), &'a str)> {
        let (x, y) = (i.operands.get(1)?, i.operands.get(2)?);
        let km = self.facts.def_reaching(y, at)?;
        let m = self.instr(km)?;
        if arith_of(m, ArithOp::Mul).map(|a| a.half) != Some(Some(Half::Lo)) {
            return None;
        }
        let (a, c) = (m.operands.get(1)?, m.operands.get(2)?);
        for (q, d) in [(a, c), (c, a)] {
            // The quotient register may be one NVVM also sets on another path (the 32-bit
            // fast path of a 64-bit division): the definition that reaches the `mul`.
            let Some(kd) = self.facts.def_reaching(q, km) else {
                continue;
            };
            let div = self.instr(kd)?;
            if arith_of(div, ArithOp::Div).is_none() {
                continue;
            }
            if div.operands.get(1) == Some(x) && div.operands.get(2) == Some(d) {
                // The dividend and divisor the `div`, `mul` and `sub` read are the same values.
                if !self.facts.unchanged(x, kd, at) || !self.facts.unchanged(d, kd, at) {
                    return None;
                }
                let ty = int_of(&div.op)?;
                let sub_bits = int_of(&i.op)?.0;
                return (sub_bits == ty.0).then_some((ty, d.as_str()));
            }
        }
        None
    }

    /// NVVM's signed remainder by a power of two `2^k` (`x % 16` on an `int`): `x - ((x +
    /// bias) & -2^k)` with `bias = (x >> (w - 1)) >>> (w - k)` (`2^k - 1` for a negative `x`,
    /// else 0), which is `x % 2^k` with the sign of `x`. Gives the type and `2^k`. Every
    /// register read is checked to hold the same `x` as the `sub`.
    pub(super) fn pow2_remainder(&self, i: &Instr, at: usize) -> Option<((u8, bool), i64)> {
        let (bits, _) = int_of(&i.op)?;
        let (x, y) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
        let def = |r: &str, at: usize| -> Option<(usize, &'a Instr)> {
            let k = self.facts.def_reaching(r, at)?;
            Some((k, self.instr(k).filter(|i| i.guard.is_none())?))
        };
        let (ka, and) = def(y, at)?;
        arith_of(and, ArithOp::And)?;
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
        arith_of(add, ArithOp::Add)?;
        let (o1, o2) = (add.operands.get(1)?.as_str(), add.operands.get(2)?.as_str());
        let bias = match (o1 == x, o2 == x) {
            (true, _) => o2,
            (_, true) => o1,
            _ => return None,
        };
        let (kb, shru) = def(bias, ku)?;
        let shift = |i: &Instr| arith_of(i, ArithOp::Shr).and_then(|a| int_ty(a.ty?));
        let unsigned_shift = shift(shru) == Some((bits, false));
        if !unsigned_shift || imm(shru.operands.get(2)?) != Some(i64::from(u32::from(bits) - k)) {
            return None;
        }
        let (ks, sign) = def(shru.operands.get(1)?, kb)?;
        if shift(sign) != Some((bits, true))
            || sign.operands.get(1).map(String::as_str) != Some(x)
            || imm(sign.operands.get(2)?) != Some(i64::from(bits) - 1)
        {
            return None;
        }
        // The `x` the sign, the sum and the `sub` read is one value.
        let first = ks.min(ku);
        if !self.facts.unchanged(x, first, at) {
            return None;
        }
        Some(((bits, true), p))
    }

    /// The value of operand `op` as read by statement `at`.
    /// `acc`: the access this value feeds, while every register between it and `op` has one
    /// definition. Such a register's definition dominates its uses (NVVM's output is SSA
    /// but for the registers phi elimination merges), so the value it held where the address
    /// was computed is the value it holds at the access, and the facts holding *there* apply
    /// too: the guard is often tested after the address arithmetic was hoisted above it.
    pub(super) fn value(
        &self,
        op: &str,
        at: usize,
        depth: u32,
        acc: Option<usize>,
    ) -> Option<HostExpr> {
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
            [_, _, ..] => match self.facts.reaching_def(op, at) {
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

    /// NVVM's 64-bit division with a 32-bit fast path: `reg` is set on two paths after a
    /// test `((a | b) & 0xFFFFFFFF00000000) == 0`, by `div.s64`/`rem.s64` (or `a - (a / b) * b`)
    /// of `a` and `b` on one and by the same operation in 32 bits on their low halves,
    /// widened, on the other. The 32-bit path runs only when both lie in `[0, 2^32)`, where
    /// the two agree; so the register holds the 64-bit operation's value of `a` and `b` as
    /// the test reads them, on either path. Each step is checked: the test, the branch into
    /// the 32-bit block (its only predecessor), the low halves taken of the same registers,
    /// and no definition of `a` or `b` between the test and either operation.
    pub(super) fn wide_division(&self, reg: &str, depth: u32) -> Option<HostExpr> {
        use HostExpr::*;
        let ks = self.defs.get(reg)?;
        let [k0, k1] = ks.as_slice() else {
            return None;
        };
        // `(operation is rem, type, a, b)` of a division or remainder statement.
        let op_of = |k: usize| -> Option<DivOp<'a>> {
            let i = self.instr(k).filter(|i| i.guard.is_none())?;
            let ty = int_of(&i.op)?;
            let (x, y) = (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str());
            let Op::Arith(a) = i.op else {
                return None;
            };
            match a.op {
                ArithOp::Div | ArithOp::Rem => Some((a.op == ArithOp::Rem, ty, x, y)),
                ArithOp::Sub if !a.carry_in => {
                    let (t, d) = self.remainder_of(i, k)?;
                    Some((true, t, x, d))
                }
                _ => None,
            }
        };
        let narrow_of = |k: usize| -> Option<(usize, DivOp<'a>)> {
            let i = self.instr(k).filter(|i| i.guard.is_none())?;
            if !converts(&i.op, Ty::U64, Ty::U32) {
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
                converts(&i.op, Ty::U32, Ty::U64)
                    && i.operands.get(1).map(String::as_str) == Some(wide)
            })
        };
        if !low_of(narrow.2, a) || !low_of(narrow.3, b) {
            return None;
        }
        // The 32-bit block: entered only from the test's branch, when its predicate says
        // the high halves are zero; the low halves taken there, where `a` and `b` are the
        // values the test read (checked below).
        let bn = self.cfg.block_of(kn)?;
        let in_bn = |r: &str| {
            self.defs
                .get(r)
                .and_then(|ds| ds.first())
                .is_some_and(|&k| self.cfg.block_of(k) == Some(bn))
        };
        if self.cfg.block_of(kr)? != bn || !in_bn(narrow.2) || !in_bn(narrow.3) {
            return None;
        }
        let [bp] = self.cfg.blocks[bn].preds[..] else {
            return None;
        };
        let (bra_k, bra) = self
            .span(bp)
            .rev()
            .find_map(|k| self.instr(k).map(|i| (k, i)))?;
        let is_branch = matches!(bra.op, Op::Branch { .. });
        let pred = &bra.guard.as_ref().filter(|_| is_branch)?.pred;
        let taken_when = self.taken_when(bp, bn)?;
        let setp = self.single_def(pred)?;
        let high_zero_when = match setp.op {
            Op::Compare(Compare {
                value: false,
                cmp: Some(cmp @ (CmpOp::Eq | CmpOp::Ne)),
                ty: Some(Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64),
                combine: None,
            }) => cmp == CmpOp::Eq,
            _ => return None,
        };
        if taken_when != high_zero_when || imm(setp.operands.get(2)?) != Some(0) {
            return None;
        }
        let and = self.single_def(setp.operands.get(1)?)?;
        if arith_of(and, ArithOp::And).is_none()
            || imm(and.operands.get(2)?) != Some(-4_294_967_296)
        {
            return None;
        }
        let or_reg = and.operands.get(1)?;
        let [k_or] = self.defs.get(or_reg.as_str())?.as_slice() else {
            return None;
        };
        let or = self
            .instr(*k_or)
            .filter(|i| arith_of(i, ArithOp::Or).is_some() && i.guard.is_none())?;
        let (o1, o2) = (or.operands.get(1)?.as_str(), or.operands.get(2)?.as_str());
        if !((o1 == a && o2 == b) || (o1 == b && o2 == a)) || self.cfg.block_of(*k_or)? != bp {
            return None;
        }
        // No definition of `a` or `b` after the test in its block, in the 32-bit block, or
        // before the 64-bit operation in its block (entered from the test's block alone).
        let bw = self.cfg.block_of(kw)?;
        if self.cfg.blocks[bw].preds[..] != [bp] {
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
            || redefined(self.span(bn).start.checked_sub(1)?, kn)
            || redefined(self.span(bw).start.checked_sub(1)?, kw)
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

    /// The value statement `k` writes to its destination.
    pub(super) fn def_value(&self, k: usize, depth: u32, acc: Option<usize>) -> Option<HostExpr> {
        use HostExpr::*;
        let i = self.instr(k)?;
        if depth > MAX_DEPTH {
            return None;
        }
        let ops = &i.operands;
        let v = |n: usize| self.value(ops.get(n)?, k, depth + 1, acc);
        let b = Box::new;
        let ty = int_of(&i.op);
        if arith_of(i, ArithOp::Sub).is_some() {
            if let Some(e) = self.remainder_value(i, k, depth, acc) {
                return (e.size() <= MAX_SIZE).then_some(e);
            }
        }
        let Some(a) = i.op.arith().copied() else {
            return self.def_value_other(i, k, ty, depth, acc);
        };
        use ArithOp as A;
        let e = match a.op {
            // Both operands read as the operation's type reads them.
            A::Min | A::Max | A::Div | A::Rem if !a.float.relu => {
                let (bits, signed) = ty?;
                let w = |e: HostExpr| {
                    b(Wrap {
                        e: b(e),
                        bits,
                        signed,
                    })
                };
                let (x, y) = (w(v(1)?), w(v(2)?));
                match a.op {
                    A::Min => Min(x, y),
                    A::Max => Max(x, y),
                    A::Div => Div(x, y),
                    _ => Rem(x, y),
                }
            }
            A::Add | A::Sub if !a.carry_in && !a.carry_out && !a.sat && ty.is_some() => {
                let (x, y) = (v(1)?, v(2)?);
                if a.op == A::Add {
                    Add(b(x), b(y))
                } else {
                    Sub(b(x), b(y))
                }
            }
            A::Mul | A::Mad if !a.carry_in => {
                let (bits, signed) = ty?;
                let prod = match a.half {
                    Some(Half::Lo) => Mul(b(v(1)?), b(v(2)?)),
                    Some(Half::Wide) => {
                        let w = |e: HostExpr| Wrap {
                            e: b(e),
                            bits,
                            signed,
                        };
                        Mul(b(w(v(1)?)), b(w(v(2)?)))
                    }
                    _ => return None,
                };
                if a.op == A::Mad {
                    if a.carry_out || a.sat {
                        return None;
                    }
                    Add(b(prod), b(v(3)?))
                } else {
                    prod
                }
            }
            A::Shl => {
                let (bits, _) = ty?;
                let s = imm(ops.get(2)?)?;
                if !(0..i64::from(bits)).contains(&s) {
                    return None;
                }
                Shl(b(v(1)?), s as u32)
            }
            A::Shr => {
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
            A::And => {
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
            A::Not if ty.is_some() => Sub(b(Const(-1)), b(v(1)?)),
            _ => return None,
        };
        (e.size() <= MAX_SIZE).then_some(e)
    }

    /// [`Self::def_value`] of a statement that is no arithmetic: a copy, a parameter's load,
    /// a conversion, a selection; `ty` the integer type it reads.
    fn def_value_other(
        &self,
        i: &'a Instr,
        k: usize,
        ty: Option<(u8, bool)>,
        depth: u32,
        acc: Option<usize>,
    ) -> Option<HostExpr> {
        use HostExpr::*;
        let ops = &i.operands;
        let v = |n: usize| self.value(ops.get(n)?, k, depth + 1, acc);
        let b = Box::new;
        let e = match i.op {
            Op::Mov(_) if ty.is_some() => v(1)?,
            Op::Mem(Mem {
                op: MemOp::Ld,
                space: Space::Param,
                ..
            }) => {
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
            Op::Convert(_) => {
                // cvt.dst.src, integer types only, no rounding or saturation.
                let ((db, _), (sb, ss)) = int_convert(&i.op)?;
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
            // `p ? a : b` (`causal ? min(seq, end) : seq`): one of the two, whichever `p`
            // picks; their hull holds it.
            Op::Select(_) if ty.is_some() => Hull(vec![v(1)?, v(2)?]),
            _ => return None,
        };
        (e.size() <= MAX_SIZE).then_some(e)
    }

    /// A `sub` that is one of NVVM's remainder idioms (`a - (a / b) * b`, or `a - ((a + bias)
    /// & -2^k)` for a power of two), as a remainder; `None` for any other `sub`, or when an
    /// operand's value cannot be described.
    pub(super) fn remainder_value(
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
    pub(super) fn offset(
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
            if let Some(k) = self.facts.reaching_def(reg, at) {
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
    pub(super) fn offset_def(
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
            match i.op {
                Op::Mov(_) if ops.get(1).map(String::as_str) == Some(name) => {
                    return Some(HostExpr::Const(0))
                }
                Op::Cvta { space, .. } if space != Space::Global => {
                    return self.offset(ops.get(1)?, base, depth + 1, cvta, acc, k)
                }
                _ => {}
            }
        }
        let param = match base {
            Base::Param(p) => p,
            Base::Var(_) => u32::MAX,
        };
        let wide = |t: Option<Ty>, ok: &[Ty]| t.is_some_and(|t| ok.contains(&t));
        match i.op {
            Op::Cvta {
                to_generic: false,
                space: Space::Global,
            } => {
                *cvta += 1;
                self.offset(ops.get(1)?, base, depth + 1, cvta, acc, k)
            }
            Op::Mov(t) if wide(t, &[Ty::U64, Ty::B64, Ty::S64]) => {
                self.offset(ops.get(1)?, base, depth + 1, cvta, acc, k)
            }
            Op::Mem(Mem {
                op: MemOp::Ld,
                space: Space::Param,
                ty,
                ..
            }) if wide(ty, &[Ty::U64, Ty::B64]) && param != u32::MAX => {
                let a = Address::parse(ops.get(1)?)?;
                let (index, _) = *self.params.get(a.base)?;
                (index == param && a.offset == 0).then_some(HostExpr::Const(0))
            }
            Op::Arith(Arith {
                op: op @ (ArithOp::Add | ArithOp::Sub),
                ty,
                carry_in: false,
                carry_out: false,
                ..
            }) if wide(ty, &[Ty::S64, Ty::U64]) => {
                let (a, b) = (ops.get(1)?, ops.get(2)?);
                let mut c = *cvta;
                if let Some(o) = is_reg(a)
                    .then(|| self.offset(a, base, depth + 1, &mut c, acc, k))
                    .flatten()
                {
                    *cvta = c;
                    let x = self.value(b, k, depth + 1, Some(acc))?;
                    return Some(if op == ArithOp::Add {
                        HostExpr::Add(Box::new(o), Box::new(x))
                    } else {
                        HostExpr::Sub(Box::new(o), Box::new(x))
                    });
                }
                if op == ArithOp::Add && is_reg(b) {
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
