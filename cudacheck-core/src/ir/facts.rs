//! The per-function facts: what every analysis of one function reads, built once per
//! function and shared (naga's `FunctionInfo` side table is the pattern).
//!
//! - [`Facts::cfg`]: the control-flow graph with dominators and the predicate value each edge
//!   is taken on ([`Cfg`]).
//! - [`Facts::defs`]: the definitions map ([`definitions`]), the only one built for the
//!   function.
//! - [`Facts::loops`]: natural loops, induction variables and exit tests, found on the two
//!   above.
//! - Register types: [`Facts::reg_ty`] (typed) and [`Facts::reg_type`] (as declared), the
//!   declarations the reader kept ([`Function::reg_type`]).
//!
//! An analysis takes `&Facts` rather than building any of these itself, so that a function's
//! facts are computed once however many analyses read them.
//!
//! The definition walk the bounds analyses share is here too: which definition of a register
//! a statement reads ([`Facts::single_def`], [`Facts::reaching_def`], [`Facts::def_reaching`]),
//! whether a register keeps its value between two statements ([`Facts::unchanged`]), and
//! whether one statement runs before another ([`Facts::runs_before`]). Each analysis builds
//! its own value on it (a buffer, a host expression, an affine form: see `ARCHITECTURE.md`).

use std::collections::BTreeSet;

use super::cfg::Cfg;
use super::loops::{definitions, loops, Defs, Loop};
use super::op::Ty;
use super::operand::is_reg;
use super::read::{Function, Instr};

/// The facts of one function.
pub struct Facts<'f> {
    pub f: &'f Function,
    pub cfg: Cfg,
    pub defs: Defs<'f>,
    pub loops: Vec<Loop>,
}

impl<'f> Facts<'f> {
    /// Builds the facts of `f`: its graph, its definitions map (once), its loops.
    pub fn new(f: &'f Function) -> Facts<'f> {
        let cfg = Cfg::new(f);
        let defs = definitions(f);
        let loops = loops(f, &cfg, &defs);
        Facts {
            f,
            cfg,
            defs,
            loops,
        }
    }

    /// The declared type of a register (`%rd12` -> `b64`), if it is declared.
    pub fn reg_type(&self, reg: &str) -> Option<&'f str> {
        self.f.reg_type(reg)
    }

    /// The declared type of a register, typed (`%rd12` -> [`Ty::B64`]).
    pub fn reg_ty(&self, reg: &str) -> Option<Ty> {
        Ty::from_part(self.f.reg_type(reg)?)
    }

    /// The instruction at statement `k`, if it is one.
    pub fn instr(&self, k: usize) -> Option<&'f Instr> {
        self.f.instr(k)
    }

    /// The statement defining `reg` when it has one definition, unpredicated.
    pub fn single_def(&self, reg: &str) -> Option<usize> {
        match self.defs.get(reg).map(Vec::as_slice) {
            Some([k]) => self.instr(*k).filter(|i| i.guard.is_none()).map(|_| *k),
            _ => None,
        }
    }

    /// The one definition of `reg` that reaches statement `at` on every path, unpredicated;
    /// `None` when several do (or a path reaches the entry without one).
    pub fn reaching_def(&self, reg: &str, at: usize) -> Option<usize> {
        let defs = self.defs.get(reg)?;
        let last_in = |b: usize, before: usize| -> Option<usize> {
            let start = self.cfg.blocks[b].stmts.start;
            defs.iter()
                .copied()
                .filter(|&d| d >= start && d < before)
                .max()
        };
        let b0 = self.cfg.block_of(at)?;
        if let Some(d) = last_in(b0, at) {
            return self.instr(d).filter(|i| i.guard.is_none()).map(|_| d);
        }
        if b0 == 0 {
            return None; // nothing before the entry block's own definitions
        }
        let mut found: Option<usize> = None;
        let mut seen = BTreeSet::new();
        let mut work: Vec<usize> = self.cfg.blocks[b0].preds.clone();
        while let Some(b) = work.pop() {
            if !seen.insert(b) {
                continue;
            }
            match last_in(b, self.cfg.blocks[b].stmts.end) {
                Some(d) => {
                    if found.is_some_and(|f| f != d) || self.instr(d)?.guard.is_some() {
                        return None;
                    }
                    found = Some(d);
                }
                None if b == 0 => return None,
                None => work.extend(self.cfg.blocks[b].preds.iter().copied()),
            }
        }
        found
    }

    /// The statement defining `reg` that statement `at` reads: its only definition, or the one
    /// that reaches `at` on every path ([`Self::reaching_def`]).
    pub fn def_reaching(&self, reg: &str, at: usize) -> Option<usize> {
        match self.defs.get(reg).map(Vec::as_slice) {
            Some([_]) => self.single_def(reg),
            _ => self.reaching_def(reg, at),
        }
    }

    /// Whether register `reg` holds the same value at statements `from` and `to` (`from`
    /// first): it has one definition, or both lie in one block with no definition of it
    /// between them. An immediate always does.
    pub fn unchanged(&self, reg: &str, from: usize, to: usize) -> bool {
        if !is_reg(reg) {
            return true;
        }
        self.single_def(reg).is_some()
            || (self.cfg.block_of(from) == self.cfg.block_of(to)
                && from < to
                && self
                    .defs
                    .get(reg)
                    .is_some_and(|d| d.iter().all(|&x| x < from || x >= to)))
    }

    /// Whether statement `x` runs before statement `y` whenever both run in one pass through
    /// their loop (or function): the same block in order, or `x`'s block dominating `y`'s
    /// (`Some(true)`); `y` first the same way (`Some(false)`); `None` when neither is known.
    pub fn runs_before(&self, x: usize, y: usize) -> Option<bool> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::cfg::tests::function;

    /// The statement whose text is `text` (opcode and operands).
    fn at(f: &Function, text: &str) -> usize {
        (0..f.stmts.len())
            .find(|&k| {
                f.instr(k)
                    .is_some_and(|i| format!("{} {}", i.opcode, i.operands.join(", ")) == text)
            })
            .unwrap_or_else(|| panic!("no statement {text}"))
    }

    #[test]
    fn the_definition_a_statement_reads() {
        let f = function(
            ".reg .b32 %r<8>;\n\
             .reg .pred %p<4>;\n\
             ld.param.u32 %r1, [n];\n\
             setp.gt.u32 %p3, %r1, 9;\n\
             @!%p3 bra $L_small;\n\
             mov.u32 %r2, 1;\n\
             bra.uni $L_merged;\n\
             $L_small:\n\
             mov.u32 %r2, 2;\n\
             add.u32 %r6, %r1, 2;\n\
             $L_merged:\n\
             add.s32 %r3, %r2, 1;\n\
             mov.u32 %r4, %r3;\n\
             mov.u32 %r3, 7;\n\
             add.s32 %r5, %r3, %r1;\n\
             ret;",
        );
        let facts = Facts::new(&f);
        let ld = at(&f, "ld.param.u32 %r1, [n]");
        let (then, other) = (at(&f, "mov.u32 %r2, 1"), at(&f, "mov.u32 %r2, 2"));
        let sum = at(&f, "add.s32 %r3, %r2, 1");
        let copy = at(&f, "mov.u32 %r4, %r3");
        let seven = at(&f, "mov.u32 %r3, 7");
        let last = at(&f, "add.s32 %r5, %r3, %r1");
        assert_eq!(facts.single_def("%r1"), Some(ld));
        assert_eq!(facts.single_def("%r3"), None);
        // Both paths' definitions of %r2 reach the join: neither is the one.
        assert_eq!(facts.reaching_def("%r2", sum), None);
        assert_eq!(facts.reaching_def("%r3", copy), Some(sum));
        assert_eq!(facts.reaching_def("%r3", last), Some(seven));
        assert_eq!(facts.def_reaching("%r1", last), Some(ld));
        assert_eq!(facts.def_reaching("%r3", last), Some(seven));
        assert!(facts.unchanged("%r3", copy, seven));
        assert!(!facts.unchanged("%r3", copy, last));
        assert!(facts.unchanged("%r1", ld, last));
        assert!(facts.unchanged("5", sum, last));
        assert_eq!(facts.runs_before(ld, sum), Some(true));
        assert_eq!(facts.runs_before(sum, ld), Some(false));
        assert_eq!(facts.runs_before(copy, seven), Some(true));
        assert_eq!(facts.runs_before(then, other), None);
        assert_eq!(facts.reg_ty("%r3"), Some(Ty::B32));
        assert_eq!(facts.reg_ty("%p3"), Some(Ty::Pred));
        assert_eq!(facts.reg_ty("%rd1"), None);
    }
}
