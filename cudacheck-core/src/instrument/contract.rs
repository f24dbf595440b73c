//! Keeps `ptxas`'s floating-point contraction the same in the checked build as in the plain one.
//!
//! # Why
//! PTX leaves contraction to the assembler: a `mul.f32` and an `add.f32`/`sub.f32` without a
//! rounding modifier (`.rn`, `.rz`, `.rm`, `.rp`) "may be optimized to use fused multiply-add"
//! (PTX ISA, `add`), and NVVM writes most of them that way. `ptxas` contracts a multiply into
//! an add of the *same basic block* as it sees them, however far apart (measured: 30
//! instructions between change nothing), and where an add has two candidates it picks the one
//! of its first operand. A check is a branch (and, where a cold path comes back, a label), so
//! a check between a multiply and the add it feeds puts them in different blocks, and `ptxas`
//! fuses the other multiply, or none: `a * c - b * s` gave `fma(a, c, -(b * s))` plain and
//! `fma(-b, s, a * c)` checked (candle's rope kernels; each is allowed, and they differ in the
//! last bit). Bounds checking must not change a healthy launch's results, so the checked build
//! has to give `ptxas` the same choices.
//!
//! # The transformation
//! Before instrumenting, every multiply that is a contraction candidate (a float `mul` without
//! a rounding modifier or guard, whose result has exactly one use, an unrounded float `add` or
//! `sub` later in the same basic block *as `ptxas` sees it*, see below) is moved to just before
//! that add, keeping the order of the multiplies moved to one add. It is a move of a pure
//! register computation within a block, over instructions that neither read its result (it has
//! one use) nor write its operands or result (checked below): the program computes the same
//! values, and its blocks, and so `ptxas`'s candidates, are those of the plain build. Checks
//! are inserted before memory accesses only, never between a multiply and the adjacent add, so
//! in the checked build every candidate pair is still in one block.
//!
//! # `ptxas`'s blocks are not PTX's
//! Both ways a wrong idea of `ptxas`'s blocks changes results, so [`splits`] follows what
//! `ptxas` does, not what PTX's text shows (measured with `ptxas` 13.0 for sm_75, sm_80, sm_89,
//! sm_90, sm_100 and sm_120, all alike: a multiply, one instruction, the add, against the same
//! instruction before the multiply):
//! - `ptxas` expands some instructions into code with branches of its own before it contracts:
//!   IEEE division, reciprocal and square root (`div.rn.f32`, `rcp.rn.f64`, `sqrt.rz.f32`: a
//!   fast path and a call to a slow one), `rsqrt.approx.f64` (not its `.ftz` form), and every
//!   integer `div`/`rem` but the unsigned 32-bit ones (even by a constant). A multiply before
//!   one is not fused into an add after it. Moving it over one made the plain build's
//!   `FMUL`+`FADD` an `FFMA` in the checked build: NVIDIA's BlackScholes sample, whose second
//!   option's `div.rn.f32` (`__logf(S / X)`) lies between the first option's multiplies and
//!   the subtractions NVVM sinks to the stores (`L1 norm` 1.741792E-07 plain, 1.706314E-07
//!   checked).
//! - Memory fences (`membar`, `fence.sc`, `fence.acq_rel`; not `fence.proxy` or
//!   `fence.mbarrier_init`), `brkpt` and `pmevent` end a block too.
//! - Barriers do not (`bar.sync`, `bar.arrive`, `bar.red`, `barrier.cluster`, `bar.warp.sync`),
//!   nor warp collectives, atomics, approximate functions (`div.approx`, `div.full`,
//!   `ex2.approx`, `sqrt.approx`), nested scopes (`{ ... }`) or an unsigned 32-bit `div`/`rem`:
//!   a multiply before a `__syncthreads()` is fused into an add after it, so a check between
//!   them would break the pair unless the multiply moves over the barrier (moving a register
//!   computation over a barrier is safe: no other thread sees registers).
//!
//! Not covered: a multiply with several uses (`ptxas` may fuse it into one of them or
//! duplicate it; moving it next to one would not keep the others' blocks), and a label no
//! branch targets (`ptxas` does not end a block there; this pass does not move over labels).

use std::collections::BTreeMap;
use std::ops::Range;

use super::ptx::{Function, Guard, Instr, StmtKind};
use crate::ir::{effects, regs_of, Arith, ArithOp, Flow, Op, Operand, Round, Sync, Ty};

/// Whether an explicit IEEE rounding (`.rn`, `.rz`, `.rm`, `.rp`) is asked for: it forbids
/// contraction, and makes a division or root a call.
fn rounded(a: &Arith) -> bool {
    matches!(
        a.float.round,
        Some(Round::Rn | Round::Rz | Round::Rm | Round::Rp)
    )
}

/// Whether `i` is a floating-point `op` (`mul`, `add`, `sub`) `ptxas` may contract.
fn contractible(i: &Instr, op: ArithOp) -> bool {
    match i.op {
        Op::Arith(a) if a.op == op && !a.carry_in => {
            use Ty::*;
            !rounded(&a) && matches!(a.ty, Some(F32 | F64 | F16 | F16x2 | Bf16 | Bf16x2))
        }
        _ => false,
    }
}

/// Why `ptxas` ends a basic block at an instruction: it does not contract a multiply before it
/// into an add after it (the module docs give the measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    /// A branch, call, return, exit or trap.
    Flow,
    /// An instruction `ptxas` expands into code with branches of its own.
    Expanded,
    /// A memory fence, `brkpt` or `pmevent`.
    Fence,
}

/// Whether, and why, `ptxas` ends a basic block at `i` (see the module docs).
fn splits(i: &Instr) -> Option<Split> {
    let e = effects(i);
    if e.flow != Flow::Next {
        return Some(Split::Flow);
    }
    use ArithOp::*;
    let expanded = match i.op {
        // IEEE-rounded float division, reciprocal and square root; `.approx` and `div.full`
        // are inline.
        Op::Arith(a) if matches!(a.op, Div | Rcp | Sqrt) && rounded(&a) => true,
        Op::Arith(a) if a.op == Rsqrt => a.ty == Some(Ty::F64) && !a.float.ftz,
        // Integer division and remainder: all but the unsigned 32-bit ones.
        Op::Arith(a) if matches!(a.op, Div | Rem) => {
            use Ty::*;
            matches!(a.ty, Some(S16 | U16 | S32 | S64 | U64))
        }
        _ => false,
    };
    if expanded {
        return Some(Split::Expanded);
    }
    let fence = match (e.sync, i.op) {
        (Some(Sync::Fence), Op::Sync { proxy, .. }) => !proxy,
        (Some(Sync::Fence), _) => true,
        (_, op) => matches!(op, Op::Event { .. }),
    };
    fence.then_some(Split::Fence)
}

/// What the pass sees of a function body: instructions (alone, or alone in an inline-assembly
/// scope `{ mul.bf16 %rs1,%rs2,%rs3; }`, which is how `cuda_fp16.h` and `cuda_bf16.h` write
/// their arithmetic: a unit that moves whole), with the scope they are in; statements it may
/// move across; and boundaries: labels, where a branch may come in, and a stray `}`.
enum Item<'f> {
    Instr {
        instr: &'f Instr,
        span: Range<usize>,
        /// The nested scope (`{ ... }`) the instruction is in: 0 for the body, then one number
        /// per scope in order. A multiply moves only within its own scope (a register a
        /// scope declares means nothing outside it), but over whole scopes nested in it.
        scope: usize,
    },
    Neutral,
    Boundary,
}

fn items(f: &Function) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    let mut scopes = vec![0];
    let mut opened = 0;
    let mut k = 0;
    while k < f.stmts.len() {
        let s = &f.stmts[k];
        let scope = *scopes.last().unwrap_or(&0);
        match &s.kind {
            StmtKind::Open => {
                if let (Some(i), Some(c)) = (f.stmts.get(k + 1), f.stmts.get(k + 2)) {
                    if let (StmtKind::Instr(instr), StmtKind::Close) = (&i.kind, &c.kind) {
                        let span = s.span.start..c.span.end;
                        out.push(Item::Instr { instr, span, scope });
                        k += 3;
                        continue;
                    }
                }
                opened += 1;
                scopes.push(opened);
                out.push(Item::Neutral);
            }
            StmtKind::Close => {
                if scopes.len() > 1 {
                    scopes.pop();
                    out.push(Item::Neutral);
                } else {
                    out.push(Item::Boundary);
                }
            }
            StmtKind::Instr(instr) => out.push(Item::Instr {
                instr,
                span: s.span.clone(),
                scope,
            }),
            StmtKind::Loc(_) | StmtKind::Directive(_) => out.push(Item::Neutral),
            StmtKind::Label(_) => out.push(Item::Boundary),
        }
        k += 1;
    }
    out
}

/// The moves for one function: `(span of the multiply, byte offset of the add)`.
pub(super) fn moves(f: &Function) -> Vec<(Range<usize>, usize)> {
    let items = items(f);
    // Uses of each register: (item index, operand index; `usize::MAX` for a guard).
    let mut uses: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (k, it) in items.iter().enumerate() {
        if let Item::Instr { instr: i, .. } = it {
            if let Some(Guard { pred: p, .. }) = &i.guard {
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
        let Item::Instr {
            instr: m, scope, ..
        } = it
        else {
            continue;
        };
        if m.guard.is_some() || !contractible(m, ArithOp::Mul) || m.operands.len() != 3 {
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
        let Item::Instr {
            instr: add,
            scope: add_scope,
            ..
        } = &items[u]
        else {
            continue;
        };
        if add_scope != scope
            || !(contractible(add, ArithOp::Add) || contractible(add, ArithOp::Sub))
        {
            continue;
        }
        // The same block for `ptxas`, and nothing between writes the multiply's operands: a
        // register an instruction between defines counts as written (in a nested scope too,
        // where it may be another register of the same name: a move fewer, never a wrong one).
        let srcs: Vec<&str> = m.operands[1..].iter().flat_map(|o| regs_of(o)).collect();
        let clear = items[k + 1..u].iter().all(|it| match it {
            Item::Instr { instr: i, .. } => {
                splits(i).is_none()
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
        Item::Instr { span, .. } => span.clone(),
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

    /// NVIDIA's BlackScholes sample (nvcc 13.0, `-O3`), cut down: NVVM computes the first
    /// option's `S * CNDD1` and `X * expRT * CNDD2`, then the second option's `S / X`
    /// (`div.rn.f32`, which `ptxas` expands into a branch to a slow path), and sinks the
    /// subtraction to the store. `ptxas` does not fuse across the division, so the plain build
    /// has `FMUL`, `FMUL`, `FADD`; moved next to the subtraction, the multiplies became an
    /// `FFMA` and the checked build's results differed in the last bit.
    #[test]
    fn multiplies_stay_before_a_division_ptxas_expands_into_branches() {
        let t = entry(
            "\tmul.f32 %f62, %f3, %f42;\n\tmul.f32 %f63, %f7, %f61;\n\tmul.f32 %f64, %f63, %f58;\n\tdiv.rn.f32 %f71, %f4, %f8;\n\tlg2.approx.f32 %f72, %f71;\n\tmul.f32 %f113, %f4, %f72;\n\tmul.f32 %f115, %f12, %f72;\n\tld.global.f32 %f9, [%rd3];\n\tsub.f32 %f120, %f113, %f115;\n\tsub.f32 %f121, %f62, %f64;\n\tst.global.v2.f32 [%rd14], {%f121, %f120};",
        );
        let out = lines(&normalize(&t));
        // The first option's multiplies stay where they are, before the division ...
        assert_eq!(
            out[..4],
            [
                "mul.f32 %f62, %f3, %f42;",
                "mul.f32 %f63, %f7, %f61;",
                "mul.f32 %f64, %f63, %f58;",
                "div.rn.f32 %f71, %f4, %f8;"
            ]
        );
        // ... while the second option's, after it, still move to their subtraction.
        assert_eq!(
            out[5..9],
            [
                "ld.global.f32 %f9, [%rd3];",
                "mul.f32 %f113, %f4, %f72;",
                "mul.f32 %f115, %f12, %f72;",
                "sub.f32 %f120, %f113, %f115;"
            ]
        );
    }

    /// What `ptxas` (13.0, sm_75 to sm_120) ends a block at, though PTX shows none: no
    /// multiply moves over it (the module docs give the measurements).
    #[test]
    fn no_multiply_moves_over_what_ptxas_ends_a_block_at() {
        for op in [
            "div.rn.f32 %f10, %f4, %f5;",
            "div.rz.ftz.f32 %f10, %f4, %f5;",
            "div.rn.f64 %fd10, %fd1, %fd2;",
            "rcp.rn.f32 %f10, %f4;",
            "rcp.rn.f64 %fd10, %fd1;",
            "sqrt.rn.f32 %f10, %f4;",
            "sqrt.rn.f64 %fd10, %fd1;",
            "rsqrt.approx.f64 %fd10, %fd1;",
            "div.s32 %r10, %r1, %r2;",
            "rem.s32 %r10, %r1, 7;",
            "div.u16 %rs10, %rs1, %rs2;",
            "rem.s16 %rs10, %rs1, %rs2;",
            "div.u64 %rd10, %rd3, 8;",
            "rem.s64 %rd10, %rd3, %rd4;",
            "membar.gl;",
            "fence.sc.gpu;",
            "fence.acq_rel.cta;",
            "brkpt;",
            "pmevent 1;",
            "@%p1 trap;",
        ] {
            let t = entry(&format!(
                "\tmul.f32 %f6, %f1, %f2;\n\t{op}\n\tld.global.f32 %f3, [%rd3];\n\tadd.f32 %f7, %f6, %f3;"
            ));
            assert_eq!(normalize(&t), t, "{op}");
        }
    }

    /// What `ptxas` contracts across: barriers, warp collectives, atomics, approximate and
    /// unsigned 32-bit division. A check between would separate the pair, so the multiply moves.
    #[test]
    fn multiplies_move_over_barriers_and_what_ptxas_keeps_inline() {
        for op in [
            "bar.sync 0;",
            "barrier.sync.aligned 0;",
            "bar.red.popc.u32 %r10, 0, %p1;",
            "bar.warp.sync -1;",
            "barrier.cluster.arrive;",
            "shfl.sync.bfly.b32 %r10, %r1, 1, 31, -1;",
            "red.global.add.f32 [%rd4], %f4;",
            "div.u32 %r10, %r1, %r2;",
            "rem.u32 %r10, %r1, %r2;",
            "div.approx.f32 %f10, %f4, %f5;",
            "div.full.f32 %f10, %f4, %f5;",
            "rcp.approx.ftz.f64 %fd10, %fd1;",
            "rsqrt.approx.ftz.f64 %fd10, %fd1;",
            "sqrt.approx.f32 %f10, %f4;",
            "ex2.approx.f32 %f10, %f4;",
            "fence.proxy.async;",
        ] {
            let t = entry(&format!(
                "\tmul.f32 %f6, %f1, %f2;\n\t{op}\n\tld.global.f32 %f3, [%rd3];\n\tadd.f32 %f7, %f6, %f3;"
            ));
            assert_eq!(
                lines(&normalize(&t))[..4],
                [
                    op,
                    "ld.global.f32 %f3, [%rd3];",
                    "mul.f32 %f6, %f1, %f2;",
                    "add.f32 %f7, %f6, %f3;"
                ],
                "{op}"
            );
        }
    }

    #[test]
    fn multiplies_move_over_nested_scopes_but_not_out_of_one() {
        // `ptxas` does not end a block at `{` or `}`.
        let t = entry(
            "\tmul.f32 %f6, %f1, %f2;\n\t{\n\t.reg .b16 %t;\n\tld.global.u16 %t, [%rd3];\n\tcvt.f32.f16 %f3, %t;\n\t}\n\tadd.f32 %f7, %f6, %f3;",
        );
        let out = normalize(&t);
        assert!(
            out.contains("}\n\tmul.f32 %f6, %f1, %f2;\n\tadd.f32 %f7, %f6, %f3;"),
            "{out}"
        );
        assert_eq!(normalize(&out), out);
        // A multiply inside a scope stays in it: its registers may be the scope's own.
        let t = entry(
            "\t{\n\t.reg .f32 %t;\n\tmul.f32 %t, %f1, %f2;\n\tmov.f32 %f6, %t;\n\t}\n\t{\n\t.reg .f32 %u;\n\tmul.f32 %u, %f1, %f2;\n\tld.global.f32 %f3, [%rd3];\n\t}\n\tadd.f32 %f7, %u, %f3;",
        );
        assert_eq!(normalize(&t), t);
    }
}
