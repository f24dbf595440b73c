//! Counted loops: a register stepped once per iteration of a loop with a recognized exit test,
//! as its value on entry plus a bounded number of steps.

use super::*;

/// An induction variable of a counted loop but for its initial value ([`Guards::counted`]).
pub(super) struct CountedParts {
    /// The statements that set the register outside the loop.
    pub(super) init: Vec<usize>,
    pub(super) step: HostExpr,
    pub(super) last: HostExpr,
    pub(super) no_wrap: Vec<HostExpr>,
    pub(super) siblings: Vec<Sibling>,
}

impl CountedParts {
    pub(super) fn with_init(self, init: HostExpr) -> HostExpr {
        HostExpr::Counted {
            init: Box::new(init),
            step: Box::new(self.step),
            last: Box::new(self.last),
            no_wrap: self.no_wrap,
            siblings: self.siblings,
        }
    }
}

impl<'a> Guards<'a> {
    /// A register with several definitions, as an increasing induction variable.
    pub(super) fn induction(&self, reg: &str, bits: u8, depth: u32) -> Option<HostExpr> {
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

    pub(super) fn induction_of(&self, reg: &str, bits: u8, depth: u32) -> Option<HostExpr> {
        let mut inits = Vec::new();
        let mut steps = Vec::new();
        let mut signed: Option<bool> = None;
        for &k in self.defs.get(reg)? {
            let i = self.instr(k)?;
            if defs_of(i).len() != 1 {
                return None;
            }
            let ops = &i.operands;
            let plain_add = arith_of(i, ArithOp::Add).is_some_and(|a| !a.carry_out && !a.sat);
            let step_of = if plain_add {
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

    /// A register stepped once per iteration of a counted loop, as read at `at`: see
    /// [`Guards::counted_parts`].
    pub(super) fn counted(&self, reg: &str, at: usize, depth: u32) -> Option<HostExpr> {
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
    pub(super) fn reached_value(&self, k: usize, depth: u32) -> Option<HostExpr> {
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

    /// What the branch into loop `l`'s preheader says: the preheader's one predecessor ends
    /// in a branch on `setp` of a register `x` with one definition and an immediate, and the
    /// edge into the preheader is taken on one outcome; `x`'s value with that outcome's fact
    /// ([`HostExpr::Facts`]), empty for a launch where the preheader does not run.
    fn entry_test(&self, l: &Loop, depth: u32) -> Option<HostExpr> {
        let p = l.preheader?;
        let [g] = self.cfg.blocks[p].preds[..] else {
            return None;
        };
        let (pred, holds) = self.cfg.condition(g, p)?;
        let k = self.facts.single_def(pred)?;
        if self.cfg.block_of(k) != Some(g) {
            return None;
        }
        let i = self.instr(k)?;
        let (op, signed, bits) = super::facts::int_setp(i)?;
        let (x, op, c) = match (i.operands.get(1)?.as_str(), i.operands.get(2)?.as_str()) {
            (x, c) if is_reg(x) && imm(c).is_some() => (x, op, imm(c)?),
            (c, x) if is_reg(x) && imm(c).is_some() => (x, op.flip(), imm(c)?),
            _ => return None,
        };
        if self.single_def(x).is_none() || self.reg_bits(x)? != bits || i.operands.len() != 3 {
            return None;
        }
        let a = Atom {
            reg: x.to_string(),
            op,
            signed,
            bits,
            bound: Bound::Const(c),
            or_eq: None,
        };
        let a = if holds { a } else { a.negate() };
        let fact = self.host_fact(&a, 0);
        Some(match self.value(x, k, depth + 1, None)? {
            HostExpr::Facts {
                def,
                bits,
                mut facts,
            } => {
                facts.push(fact);
                HostExpr::Facts { def, bits, facts }
            }
            def => HostExpr::Facts {
                def: Some(Box::new(def)),
                bits,
                facts: vec![fact],
            },
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
    pub(super) fn counted_parts(&self, reg: &str, at: usize, depth: u32) -> Option<CountedParts> {
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
                    Step::Mul(x, y) => Mul(
                        b(self.value(x, v.update, depth + 1, None)?),
                        b(self.value(y, v.update, depth + 1, None)?),
                    ),
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
        if int_of(&setp.op)?.0 != cbits {
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
        let a = i64::from(self.facts.runs_before(c.update, t.reads)?);
        // One less for a statement after the test, which runs only when the test went on;
        // not for one that may run before it (a conditional block earlier in the body,
        // neither dominating nor dominated by the test's block: no less, which is sound).
        let after_test = inside
            && self.cfg.block_of(at)? != self.cfg.block_of(t.branch)?
            && self.facts.runs_before(at, t.branch) == Some(false);
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
                    // After it, 0 steps: it was not entered (`a` would count one step more,
                    // which the hull of the counts still holds).
                    zero_skips: !inside && t.entered_if_unequal,
                },
                Vec::new(),
            ),
            _ => return None,
        };
        let last = minus(count, a + i64::from(after_test));
        // A loop counting to its bound exactly: a launch for which the test that leads into
        // its preheader fails does not enter it. NVVM enters a loop unrolled by four only
        // after `K - 1 <u 3` fails; its count `K / 4` is 0 for `K = 3`, as it is for `K = 0`,
        // which that test lets in (the count alone cannot say which). Inside, no iteration
        // runs then; after it, the register holds its value on entry (no step).
        let entry = matches!(t.cmp, C::Ne | C::Eq)
            .then(|| self.entry_test(l, depth))
            .flatten();
        let entered = |e: HostExpr| match &entry {
            Some(w) => Reached {
                e: b(e),
                when: vec![w.clone()],
            },
            None => e,
        };
        let steps_before = if !inside {
            // After the loop: every iteration's update may have run.
            let after = Add(b(last), b(one()));
            match entry {
                Some(_) => Hull(vec![Const(0), entered(after)]),
                None => after,
            }
        } else if l.may_follow_in_iteration(self.cfg, iv.update, at) {
            // The update may have run before `at` in this iteration: one more step.
            Add(b(entered(last)), b(one()))
        } else {
            entered(last)
        };
        // Whether each counter's update has run by `at` in every iteration (1), in none (0),
        // or it depends on the path (no sibling is described then).
        let ran = |update: usize| -> Option<i8> {
            if self.facts.runs_before(update, at) == Some(true) {
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
}
