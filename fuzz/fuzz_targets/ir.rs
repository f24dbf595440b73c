//! Arbitrary text through the typed PTX model (`cudacheck_core::ir`): any UTF-8 input the reader
//! accepts must give a control-flow graph, dominators, loops and every instruction's effects
//! without a panic, and they must be consistent: the entry dominates every block it reaches,
//! a block's immediate dominator dominates it, a loop's header dominates each of its blocks
//! and is one of them, its latches branch back to the header, each induction variable's update
//! lies in the loop, an exit test's statements lie in the loop, and a nested loop's blocks lie
//! in its parent's.
#![no_main]

use cudacheck_core::ir::{effects, loops, read, Cfg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(m) = read::parse(text) else {
        return;
    };
    for f in &m.functions {
        for s in &f.stmts {
            if let read::StmtKind::Instr(i) = &s.kind {
                let e = effects(i);
                for r in e.defs.iter().chain(&e.uses) {
                    assert!(r.starts_with('%'), "{r:?} in {i:?}");
                }
            }
        }
        let g = Cfg::new(f);
        for &b in &g.rpo {
            assert!(g.dominates(0, b));
            let d = g.idom[b].expect("reached blocks have a dominator");
            assert!(g.dominates(d, b));
        }
        let ls = loops(f, &g);
        for l in &ls {
            assert!(l.blocks.contains(&l.header));
            for &b in &l.blocks {
                assert!(g.dominates(l.header, b));
            }
            for &t in &l.latches {
                assert!(g.blocks[t].succs.contains(&l.header));
            }
            for iv in &l.ivs {
                assert!(l.contains_stmt(&g, iv.update));
            }
            if let Some(t) = &l.exit_test {
                assert!(l.contains_stmt(&g, t.setp) && l.contains_stmt(&g, t.branch));
                assert!(t.iv < l.ivs.len());
            }
            if let Some(p) = l.parent {
                assert!(ls[p].blocks.is_superset(&l.blocks));
            }
        }
    }
});
