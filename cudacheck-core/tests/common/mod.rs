//! Helpers the PTX instrumenter's test files share.

use cudacheck_core::instrument::ptx::{parse, StmtKind};
use cudacheck_core::ir::Op;

/// Every branch target names a label of its function, and the output reads again as PTX.
pub fn well_formed(ptx: &str) {
    let m = parse(ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    for f in &m.functions {
        let labels: Vec<&str> = f
            .stmts
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Label(l) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        for s in &f.stmts {
            if let StmtKind::Instr(i) = &s.kind {
                if matches!(i.op, Op::Branch { .. }) {
                    let t = i.operands[0].as_str();
                    assert!(labels.contains(&t), "{}: no label {t}\n{ptx}", f.name);
                }
            }
        }
    }
}
