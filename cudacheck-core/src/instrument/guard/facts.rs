//! The facts: the comparisons known to hold at each statement, from the edges of conditional
//! branches, solved forward over the blocks (a must-analysis, intersection at joins).

use super::*;

impl<'a> Guards<'a> {
    /// A comparison bound: an immediate, a register only ever loaded from a whole scalar
    /// parameter, or one only ever set to such a register plus an immediate (in the
    /// parameter's width).
    pub(super) fn bound(&self, op: &str) -> Option<Bound> {
        if let Some(c) = imm(op) {
            return Some(Bound::Const(c));
        }
        if !is_reg(op) {
            return None;
        }
        let i = self.single_def(op)?;
        if let Some(plus) = plus_immediate(i) {
            let (bits, _) = int_of(&i.op)?;
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

    /// `(index, bytes)` of the whole scalar parameter register `op` is only ever loaded from.
    pub(super) fn param_reg(&self, op: &str) -> Option<(u32, u8)> {
        let i = self.single_def(op)?;
        let ty = param_load(&i.op)?;
        let a = Address::parse(i.operands.get(1)?)?;
        let &(index, bytes) = self.params.get(a.base)?;
        let ld = int_ty(ty?)?.0 / 8;
        (a.offset == 0 && ld == bytes).then_some((index, bytes))
    }

    /// Atoms that follow from `a` through the single definition of its register:
    /// `(p | q) >= 0` (how NVVM folds `p >= 0 && q >= 0`) gives `p >= 0` and `q >= 0`;
    /// `min(p, q) >= b` gives both `>= b`, `max(p, q) <= b` both `<= b`. Only registers with one
    /// definition are named, so the atoms are about the values the definition read.
    pub(super) fn implied(&self, a: &Atom, at: usize, depth: u32, out: &mut Vec<Atom>) {
        if depth > 4 {
            return;
        }
        let Some(i) = self.single_def(&a.reg) else {
            return;
        };
        let Some(&def_at) = self.defs.get(a.reg.as_str()).and_then(|d| d.first()) else {
            return;
        };
        // An operand keeps the value the definition read up to `at`: it has one definition
        // (which dominates), or none between the two in one basic block.
        let unchanged = |op: &str| self.facts.unchanged(op, def_at, at);
        if let Op::Convert(_) = i.op {
            // A widening `cvt` of an integer: the narrow register compares as the wide one.
            let Some(((db, _), (sb, ss))) = int_convert(&i.op) else {
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
        let Some((bits, ty_signed)) = int_of(&i.op) else {
            return;
        };
        if bits != a.bits || a.or_eq.is_some() {
            return;
        }
        let lower = matches!(a.op, Cmp::Ge | Cmp::Gt);
        let upper = matches!(a.op, Cmp::Le | Cmp::Lt);
        let ok = match i.op.arith().map(|a| a.op) {
            Some(ArithOp::Or) => {
                a.signed
                    && matches!(
                        (a.op, &a.bound),
                        (Cmp::Ge, Bound::Const(0)) | (Cmp::Gt, Bound::Const(-1))
                    )
            }
            Some(ArithOp::Min) => ty_signed == a.signed && lower,
            Some(ArithOp::Max) => ty_signed == a.signed && upper,
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

    pub(super) fn setp_atoms(&self, i: &Instr) -> Option<Atom> {
        let (op, signed, bits) = int_setp(i)?;
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
    pub(super) fn transfer(&self, s: &mut State, i: &Instr, k: usize) {
        let d = defs_of(i);
        let mut gen: Vec<Fact> = Vec::new();
        if i.guard.is_none() {
            match i.op {
                Op::Compare(Compare { value: false, .. }) => {
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
                Op::Arith(Arith {
                    op: logic @ (ArithOp::Or | ArithOp::And | ArithOp::Not),
                    ty: Some(Ty::Pred),
                    ..
                }) => {
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
                    let (t, f) = match logic {
                        ArithOp::Not => ops
                            .get(1)
                            .and_then(|a| info(a))
                            .map(|(t, f)| (f, t))
                            .unwrap_or(empty),
                        op => {
                            let a = ops.get(1).and_then(|a| info(a));
                            let b = ops.get(2).and_then(|b| info(b));
                            match (op, a, b) {
                                // p = a | b: false means both false.
                                (ArithOp::Or, Some(a), Some(b)) => {
                                    (Vec::new(), [a.1, b.1].concat())
                                }
                                (ArithOp::Or, Some(a), None) | (ArithOp::Or, None, Some(a)) => {
                                    (Vec::new(), a.1)
                                }
                                (ArithOp::And, Some(a), Some(b)) => {
                                    ([a.0, b.0].concat(), Vec::new())
                                }
                                (ArithOp::And, Some(a), None) | (ArithOp::And, None, Some(a)) => {
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
                Op::Mov(_) if i.operands.get(1).and_then(|o| imm(o)).is_some() => {
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
                Op::Mov(_) => {
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
    pub(super) fn edge_facts(s: &State, pred: &str, value: bool) -> Vec<Fact> {
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

    pub(super) fn solve(&mut self) {
        if self.cfg.blocks.is_empty() {
            return;
        }
        self.entry[0] = Some(State::new());
        let mut work: Vec<usize> = vec![0];
        let mut rounds = 0usize;
        while let Some(b) = work.pop() {
            rounds += 1;
            if rounds > 200 * self.cfg.blocks.len() + 1000 {
                // Should not happen (facts only shrink); give up soundly: nothing is known.
                for e in &mut self.entry {
                    *e = Some(State::new());
                }
                return;
            }
            let Some(mut s) = self.entry[b].clone() else {
                continue;
            };
            for k in self.span(b) {
                if let Some(i) = self.instr(k) {
                    self.transfer(&mut s, i, k);
                }
            }
            for &t in &self.cfg.blocks[b].succs {
                let mut out = s.clone();
                // The edge's condition: a guarded branch's, or the failing guard of a `trap`,
                // `exit` or `ret` the block falls through past.
                if let Some((p, v)) = self.cfg.condition(b, t) {
                    out.extend(Self::edge_facts(&s, p, v));
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
    pub(super) fn state_at(&self, k: usize) -> std::rc::Rc<State> {
        // Every register read at `k` asks for the facts there: computed once per statement.
        if let Some(s) = self.states.borrow().get(&k) {
            return std::rc::Rc::clone(s);
        }
        let b = self.cfg.block_of(k).unwrap_or(0);
        let s = match self.entry.get(b).cloned().flatten() {
            Some(mut s) => {
                for j in self.span(b).start..k {
                    if let Some(i) = self.instr(j) {
                        if !matches!(i.op, Op::Branch { .. }) {
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

    pub(super) fn host_bound(&self, b: &Bound, bits: u8, signed: bool) -> HostExpr {
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
    pub(super) fn facts_of(&self, reg: &str, at: usize) -> Vec<HostFact> {
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
    pub(super) fn shifted_facts(&self, reg: &str, l: &Loop, at: usize) -> Vec<HostFact> {
        let mut out = Vec::new();
        let mut work = vec![(reg.to_string(), 0i64)];
        let mut seen = BTreeSet::new();
        let state = self.state_at(at);
        while let Some((r, k)) = work.pop() {
            for (y, c) in self.shifted.get(&r).map_or(&[][..], Vec::as_slice) {
                let Some(kk) = k.checked_add(*c) else {
                    continue;
                };
                let Some(&dy) = self.defs.get(y.as_str()).and_then(|d| d.first()) else {
                    continue;
                };
                if !l.contains_stmt(self.cfg, dy) || self.facts.runs_before(dy, at) != Some(true) {
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
    pub(super) fn host_fact(&self, a: &Atom, offset: i64) -> HostFact {
        HostFact {
            op: a.op,
            signed: a.signed,
            bound: self.host_bound(&a.bound, a.bits, a.signed),
            offset,
            or_eq: a.or_eq,
        }
    }

    pub(super) fn reg_bits(&self, reg: &str) -> Option<u8> {
        int_ty(self.facts.reg_ty(reg)?).map(|(b, _)| b)
    }
}

/// `(comparison, signed, bits)` of a `setp` of 32- or 64-bit integers of a signed or unsigned
/// type (a `.b32` compare says nothing of the sign), with no predicate to combine.
pub(super) fn int_setp(i: &Instr) -> Option<(Cmp, bool, u8)> {
    let Op::Compare(Compare {
        value: false,
        cmp: Some(cmp),
        ty: Some(ty),
        combine: None,
    }) = i.op
    else {
        return None;
    };
    let (bits, ty_signed) = int_ty(ty)?;
    if bits < 32 || matches!(ty, Ty::B8 | Ty::B16 | Ty::B32 | Ty::B64) {
        return None;
    }
    Some((Cmp::of_cmp_op(cmp)?, ty_signed && !cmp.unsigned(), bits))
}
