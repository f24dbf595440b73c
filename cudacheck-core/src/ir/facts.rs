//! The per-function facts: what every analysis of one function reads, built once per
//! function and shared (naga's `FunctionInfo` side table is the pattern).
//!
//! - [`Facts::cfg`]: the control-flow graph with dominators and the predicate value each edge
//!   is taken on ([`Cfg`]).
//! - [`Facts::defs`]: the definitions map ([`definitions`]), the only one built for the
//!   function.
//! - [`Facts::loops`]: natural loops, induction variables and exit tests, found on the two
//!   above.
//! - Register types: [`Facts::reg_type`], the declarations the reader kept
//!   ([`Function::reg_type`]).
//!
//! An analysis takes `&Facts` rather than building any of these itself, so that a function's
//! facts are computed once however many analyses read them.

use super::cfg::Cfg;
use super::loops::{definitions, loops, Defs, Loop};
use super::read::Function;

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
}
