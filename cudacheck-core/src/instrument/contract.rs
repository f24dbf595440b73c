//! Keeps `ptxas`'s floating-point contraction the same in the checked build as in the plain one.
//!
//! # Why
//! PTX leaves contraction to the assembler: a `mul.f32` and an `add.f32`/`sub.f32` without a
//! rounding modifier (`.rn`, `.rz`, `.rm`, `.rp`) "may be optimized to use fused multiply-add"
//! (PTX ISA, `add`), and NVVM writes most of them that way. `ptxas` contracts a multiply into
//! an add of the *same basic block*, and where an add has two candidates it picks one. A check
//! is a branch (and, where a cold path comes back, a label), so a check between a multiply and
//! the add it feeds puts them in different blocks, and `ptxas` fuses the other multiply, or
//! none: `a * c - b * s` gave `fma(a, c, -(b * s))` plain and `fma(-b, s, a * c)` checked
//! (candle's rope kernels; each is allowed, and they differ in the last bit). Bounds checking
//! must not change a healthy launch's results, so the checked build has to give `ptxas` the
//! same choices.
//!
//! # The transformation
//! Before instrumenting, every multiply that is a contraction candidate (a float `mul` without
//! a rounding modifier or guard, whose result has exactly one use, an unrounded float `add` or
//! `sub` later in the same basic block) is moved to just before that add, keeping the order of
//! the multiplies moved to one add. It is a move of a pure register computation within a
//! block, over instructions that neither read its result (it has one use) nor write its
//! operands or result (checked below): the program computes the same values, and its blocks,
//! and so `ptxas`'s candidates, are those of the plain build. Checks are inserted before
//! memory accesses only, never between a multiply and the adjacent add, so in the checked
//! build every candidate pair is still in one block.
//!
//! Not covered: a multiply with several uses (`ptxas` may fuse it into one of them or
//! duplicate it; moving it next to one would not keep the others' blocks).

use std::collections::BTreeMap;

use super::ptx::{Function, Instr, StmtKind};
use crate::ir::{effects, regs_of, Flow, Operand, Sync};

/// The rounding modifiers that forbid contraction.
const ROUNDED: [&str; 4] = ["rn", "rz", "rm", "rp"];

/// Whether `i` is a floating-point `op` (`mul`, `add`, `sub`) `ptxas` may contract.
fn contractible(i: &Instr, op: &str) -> bool {
    i.op() == op
        && !i.parts().any(|p| ROUNDED.contains(&p))
        && i.parts()
            .last()
            .is_some_and(|t| matches!(t, "f32" | "f64" | "f16" | "f16x2" | "bf16" | "bf16x2"))
}

/// Whether `i` ends a basic block for `ptxas` (a branch, return, exit or call), or is a
/// barrier, which this pass does not move across.
fn ends_block(i: &Instr) -> bool {
    let e = effects(i);
    e.flow != Flow::Next
        || matches!(
            e.sync,
            Some(Sync::Block { .. } | Sync::Arrive | Sync::Warp | Sync::Cluster)
        )
}

/// What the pass sees of a function body: instructions (alone, or alone in an inline-assembly
/// scope `{ mul.bf16 %rs1,%rs2,%rs3; }`, which is how `cuda_fp16.h` and `cuda_bf16.h` write
/// their arithmetic: a unit that moves whole), statements it may move across, and boundaries.
enum Item<'f> {
    Instr(&'f Instr, std::ops::Range<usize>),
    Neutral,
    Boundary,
}

fn items(f: &Function) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < f.stmts.len() {
        let s = &f.stmts[k];
        match &s.kind {
            StmtKind::Open => {
                if let (Some(i), Some(c)) = (f.stmts.get(k + 1), f.stmts.get(k + 2)) {
                    if let (StmtKind::Instr(i), StmtKind::Close) = (&i.kind, &c.kind) {
                        out.push(Item::Instr(i, s.span.start..c.span.end));
                        k += 3;
                        continue;
                    }
                }
                out.push(Item::Boundary);
            }
            StmtKind::Instr(i) => out.push(Item::Instr(i, s.span.clone())),
            StmtKind::Loc(_) | StmtKind::Directive(_) => out.push(Item::Neutral),
            StmtKind::Label(_) | StmtKind::Close => out.push(Item::Boundary),
        }
        k += 1;
    }
    out
}

/// The moves for one function: `(span of the multiply, byte offset of the add)`.
pub(super) fn moves(f: &Function) -> Vec<(std::ops::Range<usize>, usize)> {
    let items = items(f);
    // Uses of each register: (item index, operand index; `usize::MAX` for a guard).
    let mut uses: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (k, it) in items.iter().enumerate() {
        if let Item::Instr(i, _) = it {
            if let Some((_, p)) = &i.guard {
                uses.entry(p.as_str()).or_default().push((k, usize::MAX));
            }
            for (n, o) in i.operands.iter().enumerate() {
                for r in regs_of(o) {
                    uses.entry(r).or_default().push((k, n));
                }
            }
        }
    }
    let mut found = Vec::new();
    for (k, it) in items.iter().enumerate() {
        let Item::Instr(m, _) = it else {
            continue;
        };
        if m.guard.is_some() || !contractible(m, "mul") || m.operands.len() != 3 {
            continue;
        }
        let dest = m.operands[0].as_str();
        if Operand::parse(dest) != Operand::Reg(dest) {
            continue;
        }
        // Exactly one other occurrence of the result: its use.
        let occ = &uses[dest];
        let others: Vec<&(usize, usize)> = occ.iter().filter(|&&(j, _)| j != k).collect();
        if others.len() != 1 || occ.iter().filter(|&&(j, _)| j == k).count() != 1 {
            continue;
        }
        let (u, n) = *others[0];
        if u <= k || n == 0 || n == usize::MAX {
            continue;
        }
        let Item::Instr(add, _) = &items[u] else {
            continue;
        };
        if !(contractible(add, "add") || contractible(add, "sub")) {
            continue;
        }
        // The same block, and nothing between writes the multiply's operands: a register
        // an instruction between defines counts as written.
        let srcs: Vec<&str> = m.operands[1..].iter().flat_map(|o| regs_of(o)).collect();
        let clear = items[k + 1..u].iter().all(|it| match it {
            Item::Instr(i, _) => {
                !ends_block(i)
                    && !effects(i)
                        .defs
                        .iter()
                        .any(|r| srcs.contains(r) || *r == dest)
            }
            Item::Neutral => true,
            Item::Boundary => false,
        });
        if clear {
            found.push((k, u));
        }
    }
    // The multiplies of one add move together, in their order, unless they already sit right
    // before it (so that a second pass changes nothing).
    let mut by_add: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, u) in found {
        by_add.entry(u).or_default().push(k);
    }
    let span = |k: usize| match &items[k] {
        Item::Instr(_, s) => s.clone(),
        _ => unreachable!("moves are between instructions"),
    };
    let mut out = Vec::new();
    for (u, ks) in by_add {
        let in_place = (ks[0] + 1..u).all(|j| ks.contains(&j) || matches!(items[j], Item::Neutral));
        if !in_place {
            let at = span(u).start;
            out.extend(ks.into_iter().map(|k| (span(k), at)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::normalize::normalize;
    use super::super::ptx::parse;

    fn entry(body: &str) -> String {
        format!(
            ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .pred %p<4>;\n\t.reg .f32 %f<20>;\n\t.reg .b64 %rd<20>;\n{body}\n\tret;\n}}\n"
        )
    }

    /// The instruction lines of `text`'s body, trimmed.
    fn lines(text: &str) -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| {
                !l.is_empty() && !l.starts_with('.') && !l.starts_with('{') && !l.starts_with('}')
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_multiply_moves_next_to_the_add_it_feeds() {
        let t = entry(
            "\tld.global.f32 %f1, [%rd1];\n\tld.global.f32 %f2, [%rd2];\n\tmul.f32 %f3, %f2, %f1;\n\tld.global.f32 %f4, [%rd3];\n\tld.global.f32 %f5, [%rd4];\n\tmul.f32 %f6, %f5, %f4;\n\tsub.f32 %f7, %f3, %f6;\n\tst.global.f32 [%rd5], %f7;",
        );
        let out = normalize(&t);
        assert_eq!(
            lines(&out),
            [
                "ld.global.f32 %f1, [%rd1];",
                "ld.global.f32 %f2, [%rd2];",
                "ld.global.f32 %f4, [%rd3];",
                "ld.global.f32 %f5, [%rd4];",
                "mul.f32 %f3, %f2, %f1;",
                "mul.f32 %f6, %f5, %f4;",
                "sub.f32 %f7, %f3, %f6;",
                "st.global.f32 [%rd5], %f7;",
                "ret;"
            ]
        );
        assert!(parse(&out).is_ok());
        // Idempotent: a second pass moves nothing.
        assert_eq!(normalize(&out), out);
    }

    #[test]
    fn what_ptxas_may_not_contract_or_cannot_move_stays() {
        for body in [
            // Rounded: no contraction to keep.
            "\tmul.rn.f32 %f3, %f2, %f1;\n\tld.global.f32 %f4, [%rd3];\n\tadd.f32 %f7, %f3, %f4;",
            "\tmul.f32 %f3, %f2, %f1;\n\tld.global.f32 %f4, [%rd3];\n\tadd.rn.f32 %f7, %f3, %f4;",
            // Integer.
            "\tmul.lo.s32 %r3, %r2, %r1;\n\tld.global.u32 %r4, [%rd3];\n\tadd.s32 %r7, %r3, %r4;",
            // Two uses.
            "\tmul.f32 %f3, %f2, %f1;\n\tld.global.f32 %f4, [%rd3];\n\tadd.f32 %f7, %f3, %f4;\n\tadd.f32 %f8, %f3, %f4;",
            // Another block.
            "\tmul.f32 %f3, %f2, %f1;\n\t@%p1 bra $L1;\n\tld.global.f32 %f4, [%rd3];\n$L1:\n\tadd.f32 %f7, %f3, %f4;",
            // An operand written between.
            "\tmul.f32 %f3, %f2, %f1;\n\tld.global.f32 %f1, [%rd3];\n\tadd.f32 %f7, %f3, %f1;",
            // A guarded multiply.
            "\t@%p1 mul.f32 %f3, %f2, %f1;\n\tld.global.f32 %f4, [%rd3];\n\tadd.f32 %f7, %f3, %f4;",
            // Used by a multiply, not an add.
            "\tmul.f32 %f3, %f2, %f1;\n\tld.global.f32 %f4, [%rd3];\n\tmul.f32 %f7, %f3, %f4;",
        ] {
            let t = entry(body);
            assert_eq!(normalize(&t), t, "{body}");
        }
    }

    #[test]
    fn inline_assembly_scopes_of_one_instruction_move_whole() {
        // cuda_bf16.h's operators: `{ mul.bf16 ... }` each in its own scope.
        let t = entry(
            "\t{ mul.bf16 %rs1,%rs2,%rs3; }\n\tld.global.u16 %rs5, [%rd12+2];\n\t{ mul.bf16 %rs4,%rs5,%rs6; }\n\t{ sub.bf16 %rs7,%rs1,%rs4; }\n\t{\n\t.reg .b16 %t;\n\tmul.bf16 %rs8,%rs2,%rs3;\n\tld.global.u16 %rs9, [%rd12];\n\tadd.bf16 %rs10,%rs8,%rs9;\n\t}",
        );
        let out = normalize(&t);
        assert!(
            out.contains("ld.global.u16 %rs5, [%rd12+2];\n\t\n\t{ mul.bf16 %rs1,%rs2,%rs3; }\n\t{ mul.bf16 %rs4,%rs5,%rs6; }\n\t{ sub.bf16 %rs7,%rs1,%rs4; }"),
            "{out}"
        );
        // Within a larger scope, the move stays inside it.
        assert!(
            out.contains("ld.global.u16 %rs9, [%rd12];\n\tmul.bf16 %rs8,%rs2,%rs3;\n\tadd.bf16"),
            "{out}"
        );
        assert_eq!(normalize(&out), out);
    }

    #[test]
    fn f64_half_and_guarded_adds_are_candidates_too() {
        for (mul, add) in [
            ("mul.f64 %fd3, %fd2, %fd1;", "add.f64 %fd7, %fd4, %fd3;"),
            ("mul.f16x2 %r3, %r2, %r1;", "add.f16x2 %r7, %r3, %r4;"),
            (
                "mul.ftz.f32 %f3, %f2, %f1;",
                "@%p1 sub.ftz.f32 %f7, %f4, %f3;",
            ),
        ] {
            let t = entry(&format!("\t{mul}\n\tld.global.f32 %f9, [%rd3];\n\t{add}"));
            let l = lines(&normalize(&t));
            assert_eq!(l[1], mul, "{t}");
            assert_eq!(l[2], add, "{t}");
        }
    }
}
