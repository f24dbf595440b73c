//! Atomics whose result nothing reads become reductions (`atom` -> `red`), as NVRTC's own
//! assembler makes them.
//!
//! # Why
//! `atomicAdd(&out[idx[i]], val[i])` with its result unused is `atom.global.add.u32 %r8, [a],
//! %r7` in NVRTC's PTX, `%r8` read nowhere. Compiled to a CUBIN by NVRTC (the plain build), it
//! becomes a fire-and-forget `REDG`; the same PTX assembled by nvJitLink (the checked build)
//! stays an `ATOMG` whose result goes to `RZ`, and the thread waits for it before it exits or
//! goes on (`results/instrument_cost.md`, 2026-11-27: NVRTC 13.0.88 and nvJitLink 13.0.88,
//! sm_90). A bounds-checked scatter-add measured 1.39x for that alone, its checks costing
//! little. Writing the instruction as the reduction it is gives the checked build the plain
//! build's `REDG`.
//!
//! # The transformation
//! `atom{.sem}{.scope}{.space}.op.type d, [a], b` becomes `red{.sem}{.scope}{.space}.op.type
//! [a], b` (the guard kept) when every register of `d` is read by no instruction of the
//! function (a definition elsewhere is not a read), for the operations both have (`add`,
//! `inc`, `dec`, `min`, `max`, `and`, `or`, `xor`), a scalar type, no `.acquire`/`.acq_rel`
//! (`red` has neither) and no cache hint. The memory effect is the same read-modify-write
//! with the same ordering and scope; only the value that nobody reads is gone. Everything
//! else passes through unchanged (`cas`, `exch`, vector forms, results that are read).

use std::collections::BTreeSet;
use std::ops::Range;

use super::ptx::{Function, Instr, StmtKind};
use crate::ir::{effects, regs_of, MemOp, Order};

/// Whether `i` is an `atom` that may be written as a `red` when its result is unused: an
/// operation both have (not `exch`, `cas`), and none of what keeps it an `atom`: an ordering
/// `red` lacks (`.acquire`, `.acq_rel`), a cache hint (an extra operand), a vector form.
fn reducible(i: &Instr) -> bool {
    let Some(m) = i.op.mem() else {
        return false;
    };
    m.op == MemOp::Atom
        && i.operands.len() == 3
        && m.atomic.is_some_and(|a| a.reduces())
        && !matches!(m.order, Some(Order::Acquire | Order::AcqRel))
        && !m.cache_hint
        && m.vec == 1
}

/// `i` written as a reduction: the opcode's root `red`, the destination dropped.
fn as_reduction(i: &Instr) -> String {
    let guard = crate::ir::read::guard_text(&i.guard);
    let rest = &i.opcode["atom".len()..];
    format!("{guard}red{rest} {};", i.operands[1..].join(", "))
}

/// The replacements for one function: `(span of the atom, the reduction's text)`.
pub(super) fn reductions(f: &Function) -> Vec<(Range<usize>, String)> {
    let read: BTreeSet<&str> = f
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Instr(i) => Some(effects(i).uses),
            _ => None,
        })
        .flatten()
        .collect();
    f.stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Instr(i)
                if reducible(i) && regs_of(&i.operands[0]).iter().all(|r| !read.contains(r)) =>
            {
                Some((s.span.clone(), as_reduction(i)))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::normalize::normalize;

    fn entry(body: &str) -> String {
        format!(
            ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<20>;\n\t.reg .f32 %f<20>;\n\t.reg .b64 %rd<20>;\n{body}\n\tret;\n}}\n"
        )
    }

    #[test]
    fn unread_results_become_reductions_with_guard_and_modifiers() {
        let got = normalize(&entry(
            "\tatom.global.add.u32 \t%r8, [%rd9], %r7;\n\t@!%p1 atom.relaxed.gpu.global.max.s32 %r9, [%rd9+4], %r7;\n\tatom.add.noftz.f16x2 %r10, [%rd2], %r3;\n\tatom.shared.inc.u32 _, [%r4], 15;",
        ));
        assert!(got.contains("\tred.global.add.u32 [%rd9], %r7;\n"), "{got}");
        assert!(
            got.contains("\t@!%p1 red.relaxed.gpu.global.max.s32 [%rd9+4], %r7;\n"),
            "{got}"
        );
        assert!(
            got.contains("\tred.add.noftz.f16x2 [%rd2], %r3;\n"),
            "{got}"
        );
        assert!(got.contains("\tred.shared.inc.u32 [%r4], 15;"), "{got}");
        assert!(!got.contains("atom"), "{got}");
    }

    #[test]
    fn results_read_anywhere_and_other_forms_stay_atomics() {
        let body = "\tatom.global.add.u32 %r8, [%rd9], %r7;\n\tadd.s32 %r1, %r8, 1;\n\
             \tatom.global.cas.b32 %r2, [%rd9], 0, 1;\n\tatom.global.exch.b32 %r3, [%rd9], 1;\n\
             \tatom.acquire.gpu.global.add.u32 %r5, [%rd9], 1;\n\
             \tatom.global.v2.f32.add {%f1, %f2}, [%rd9], {%f3, %f4};\n\
             \tatom.global.add.L2::cache_hint.u32 %r6, [%rd9], 1, %rd3;\n\
             \tatom.global.or.b32 %r11, [%rd9], 1;\n\tsetp.eq.s32 %p2, %r11, 0;\n\
             \tatom.global.and.b32 %r12, [%rd9], 1;\n\t@%p3 bra $L;\n$L:\n\tst.global.u32 [%rd9], %r12;";
        let text = entry(body);
        let got = normalize(&text);
        assert_eq!(got, text, "nothing changes");
        // A second definition is no read: the result is still unused.
        let got = normalize(&entry(
            "\tatom.global.add.u32 %r8, [%rd9], %r7;\n\tmov.u32 %r8, 0;",
        ));
        assert!(got.contains("red.global.add.u32 [%rd9], %r7;"), "{got}");
    }
}
