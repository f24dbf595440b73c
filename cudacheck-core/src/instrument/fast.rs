//! A fast copy of a checked kernel whose failed checks leave it for good.
//!
//! # Why
//! A check's cold block records the fault and jumps back after the skipped access
//! (`$__cc_contN`), and a failed group check's exact copy jumps back after the group
//! (`$__cc_joinN`). Each way back is a control-flow merge in the middle of the user's code, and
//! `ptxas` allocates registers and schedules across those small blocks: on `nbody_accel` it
//! stopped pipelining the sixteen loads of the unrolled loop (79 registers and loads issued
//! ahead in the plain build, 72 and one load at a time checked; `results/instrument_cost.md`).
//! The same checks as *side exits*, branches that never come back, leave the plain schedule.
//!
//! # The transformation
//! The function body after the prologue is emitted twice:
//! - the **fast copy** runs first: the user's code with its checks, where a failed check jumps
//!   into the slow copy instead of to a cold block that comes back: to the slow copy's cold
//!   block of the same access (which records the fault with the offset the fast copy's check
//!   computed, gives a read 0 and continues in the slow copy), or to the slow copy's exact copy
//!   of the same group. A global atomic's failed check jumps only after the atomic, which ran on
//!   the module's sink (`emit.rs`), and the slow copy goes on after its copy of the atomic, so
//!   the atomic runs once either way;
//! - the **slow copy** is the checked code as it was, every label renamed (`L` to `L__s`).
//!
//! Both copies are made from the checked body's text (the function's edits applied to it,
//! `emit.rs`), read again with the PTX reader: labels are renamed where the reader finds
//! label statements and the opcode table finds branch targets ([`crate::ir::edit::relabel`]),
//! never as words of the text.
//!
//! Both copies are the same instructions on the same registers (checks write only `%__cc_*`
//! temporaries), so at a jump from the fast copy the slow copy finds the state it would have
//! had, and behaves exactly as the checked build without this transformation: every access
//! checked, a bad one recorded and skipped, execution going on. A thread that never fails a
//! check never leaves the fast copy.
//!
//! # Where it is sound, and where it is used
//! Threads of one warp or block may run in different copies. That is harmless unless an
//! instruction needs its peers at the *same* instruction: barriers (`bar`, `barrier`), the
//! `.sync`/`.aligned` warp collectives, `mbarrier` and cluster barriers, and calls (a callee
//! may hold any of those). Functions with any of them, with local-memory accesses (measured:
//! a split `window_median` ran 6x slower), or with indirect branch tables (labels named
//! outside a branch), keep the single checked body. Checks inside nested scopes (`{ }`) have
//! their cold paths inline;
//! the fast copy keeps those as they are (they come back, within the fast copy). The copy
//! doubles the code `ptxas` compiles, so it is only made where the merges cost most: functions
//! with a loop (a branch back to an earlier label).

use std::collections::BTreeSet;

use super::ptx::{Function, StmtKind};
use crate::ir::edit::{branch_targets, labels, relabel, Edits};
use crate::ir::read::{statements, Space};
use crate::ir::{effects, needs_peers, Flow};

/// Whether `f`'s checked body may be split into a fast and a slow copy (see the module docs).
pub(crate) fn applies(f: &Function) -> bool {
    let mut labels_seen: BTreeSet<&str> = BTreeSet::new();
    let mut has_loop = false;
    for s in &f.stmts {
        match &s.kind {
            StmtKind::Label(l) => {
                labels_seen.insert(l.as_str());
            }
            StmtKind::Open | StmtKind::Close => {}
            StmtKind::Directive(d) => {
                if d.contains(".branchtargets") || d.contains(".calltargets") {
                    return false;
                }
            }
            StmtKind::Instr(i) => {
                let collective = needs_peers(i);
                // Local arrays: `window_median` (a per-thread array sorted in place) ran 6.0x
                // slower split than checked in one body on the H100 (1.0x); kept whole.
                let local = i.op.space() == Some(Space::Local);
                if collective || local {
                    return false;
                }
                if let Flow::Branch(target) = effects(i).flow {
                    has_loop |= labels_seen.contains(target);
                }
            }
            StmtKind::Loc(_) => {}
        }
    }
    has_loop
}

/// The fast copy of `main` (the checked body after the prologue), then the slow copy of
/// `main` and `cold` (its cold blocks); `None` when the reader cannot follow them (the
/// checked body then stays as it is).
pub(crate) fn copies(main: &str, cold: &str) -> Option<String> {
    let (ms, cs) = (statements(main)?, statements(cold)?);
    let cold_labels = labels(&cs);
    let mut defined = labels(&ms);
    defined.extend(cold_labels.iter().cloned());

    // The fast copy: branches into the cold section go to the slow copy's. Labels nothing in
    // it reaches any more (the ways back) go: a label is a block boundary to ptxas.
    let mut fast = Edits::new();
    relabel(
        main,
        &ms,
        |l| cold_labels.contains(l).then(|| format!("{l}__s")),
        &mut fast,
    );
    let reached: BTreeSet<&str> = branch_targets(&ms).collect();
    for s in &ms {
        if let StmtKind::Label(l) = &s.kind {
            if !reached.contains(l.as_str()) {
                fast.remove(s.span.clone());
            }
        }
    }
    // The slow copy: every label renamed.
    let rename = |l: &str| defined.contains(l).then(|| format!("{l}__s"));
    let (mut slow_main, mut slow_cold) = (Edits::new(), Edits::new());
    relabel(main, &ms, rename, &mut slow_main);
    relabel(cold, &cs, rename, &mut slow_cold);

    let mut out = fast.apply(main);
    out.push_str("\n\t// ---- cudacheck: the slow copy, entered only from a failed check ----\n");
    out.push_str(&slow_main.apply(main));
    out.push_str(&slow_cold.apply(cold));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(body: &str) -> Function {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .pred %p<2>;\n{body}\n\tret;\n}}\n"
        );
        let m = super::super::ptx::parse(&text).unwrap();
        m.functions.into_iter().next().unwrap()
    }

    #[test]
    fn only_loops_without_collectives_are_split() {
        let looped = "$L__BB0_1:\n\tadd.s32 %r1, %r1, 1;\n\t@%p1 bra $L__BB0_1;";
        assert!(applies(&function(looped)));
        assert!(!applies(&function("\tadd.s32 %r1, %r1, 1;")), "no loop");
        let barrier = format!("{looped}\n\tbar.sync 0;");
        assert!(!applies(&function(&barrier)), "a barrier");
        let shfl = format!("{looped}\n\tshfl.sync.down.b32 %r2, %r1, 1, 31, -1;");
        assert!(!applies(&function(&shfl)), "a warp collective");
        let local = format!("{looped}\n\tst.local.f32 [%rd1], %f1;");
        assert!(!applies(&function(&local)), "local memory");
        // Labels are renamed where the reader finds them, so any label serves.
        let own = "LOOP:\n\tadd.s32 %r1, %r1, 1;\n\t@%p1 bra LOOP;";
        assert!(applies(&function(own)), "a hand-written label");
    }

    #[test]
    fn the_fast_copy_leaves_for_the_slow_copy_and_never_comes_back() {
        let main = "$L__BB0_1:\n\tsetp.ge.u64 %__cc_p, %__cc_o, 5;\n\t@%__cc_p bra $__cc_cold0;\n\tld.global.f32 %f1, [%rd1];\n$__cc_cont0:\n\t@%p1 bra $L__BB0_1;\n\tret;\n";
        let cold = "\n$__cc_cold0:\n\tmov.b32 %f1, 0;\n\tbra $__cc_cont0;\n";
        let out = copies(main, cold).expect("reads");
        let (fast, slow) = out.split_once("the slow copy").unwrap();
        assert!(fast.contains("@%__cc_p bra $__cc_cold0__s;"), "{fast}");
        assert!(
            !fast.contains("$__cc_cont0:"),
            "the way back is gone: {fast}"
        );
        assert!(
            fast.contains("$L__BB0_1:") && fast.contains("bra $L__BB0_1;"),
            "{fast}"
        );
        assert!(slow.contains("$__cc_cold0__s:") && slow.contains("bra $__cc_cont0__s;"));
        assert!(slow.contains("$__cc_cont0__s:") && slow.contains("bra $L__BB0_1__s;"));
        assert!(!slow.contains("$__cc_cold0;"), "{slow}");
    }

    #[test]
    fn labels_are_renamed_where_the_reader_finds_them_not_by_line() {
        // A check in a `{ }` scope: its way back shares a line with the scope's `}`, and a
        // register's name contains a label's (`%L1x`); only labels and branch targets change.
        let main = "$L1:\n\t{ ld.global.f32 %f1, [%rd1];\n\t@%__cc_p bra $__cc_cold0;\n\tbra $__cc_cont0;\n$__cc_cold0:\n\tmov.b32 %f1, 0;\n$__cc_cont0: }\n\tmov.u32 %L1x, 0;\n\t@%p1 bra $L1;\n\tret;\n";
        let out = copies(main, "").expect("reads");
        let (fast, slow) = out.split_once("the slow copy").unwrap();
        assert!(
            fast.contains("bra $__cc_cont0;") && fast.contains("$__cc_cont0: }"),
            "{fast}"
        );
        assert!(slow.contains("bra $__cc_cont0__s;"), "{slow}");
        assert!(slow.contains("$__cc_cont0__s: }"), "{}", slow);
        assert!(slow.contains("$__cc_cold0__s:") && slow.contains("bra $__cc_cold0__s;"));
        assert!(
            slow.contains("%L1x,") && slow.contains("bra $L1__s;"),
            "{slow}"
        );
        assert!(
            copies("\tbra $L1;\n}\n", "").is_none(),
            "a `}}` closing nothing"
        );
    }
}
