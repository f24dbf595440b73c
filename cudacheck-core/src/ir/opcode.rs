//! The opcode table: per instruction, which registers it defines and uses, what memory it
//! touches, whether it synchronizes threads, and where control goes next.
//!
//! Every analysis asks [`effects`]; none reads an opcode's operands on its own. The table is
//! written for soundness of the analyses built on it: where an instruction is not known (a
//! newer PTX ISA than this table), every register of its first operand counts as both defined
//! and used, it is assumed to touch memory in some unknown way, and it is not a barrier; an
//! analysis that needs more treats it as opaque.

use super::op::{Mem, MemOp, Op};
use super::operand::{Address, Operand};
use super::read::{Instr, Space};

/// How an instruction touches one memory operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    Read,
    Write,
    /// `atom`: reads and writes atomically, returns the old value.
    Atomic,
    /// `red`: an atomic update without a result.
    Reduce,
}

/// One memory operand of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    /// The index of the address operand in [`Instr::operands`].
    pub operand: usize,
    pub kind: MemKind,
    pub space: Space,
    /// Bytes one thread touches (element width times vector arity), when the opcode says.
    pub bytes: Option<u64>,
}

/// How an instruction orders threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sync {
    /// A block-wide barrier: `bar.sync`, `bar.red` (`__syncthreads_count/and/or`),
    /// `barrier.sync`, `barrier.cta.*`. `aligned`: every thread of the block must execute the
    /// same instance (`bar.sync`, `.aligned`).
    Block { aligned: bool },
    /// `bar.arrive` / `barrier.arrive`: signals a named barrier without waiting.
    Arrive,
    /// `bar.warp.sync` (`__syncwarp(mask)`).
    Warp,
    /// A warp-collective operation over a mask (`shfl.sync`, `vote.sync`, `match.sync`,
    /// `redux.sync`, `elect.sync`, `activemask`) or the whole warp (`mma`, `wmma`, `ldmatrix`,
    /// `stmatrix`, `wgmma`): orders the threads that take part.
    Collective,
    /// A cluster-wide barrier (`barrier.cluster.*`).
    Cluster,
    /// A memory fence (`membar`, `fence`): orders one thread's accesses, no other thread.
    Fence,
}

/// Where control goes after an instruction (before its guard: a guarded instruction may also
/// fall through).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow<'a> {
    /// To the next statement.
    Next,
    /// `bra`: to the label.
    Branch(&'a str),
    /// `brx.idx`: to one of the labels of a `.branchtargets` list.
    Indirect,
    /// `call`: to a function and back.
    Call,
    /// `ret`.
    Return,
    /// `exit`, `trap`: the thread ends.
    Exit,
}

/// What an instruction does, for the analyses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effects<'a> {
    /// Registers written.
    pub defs: Vec<&'a str>,
    /// Registers read (the guard predicate included).
    pub uses: Vec<&'a str>,
    pub mem: Vec<MemAccess>,
    pub sync: Option<Sync>,
    pub flow: Flow<'a>,
    /// The table knows this opcode. An unknown one defines and uses its first operand's
    /// registers and may touch memory ([`Effects::opaque_memory`]).
    pub known: bool,
}

impl Effects<'_> {
    /// The instruction may touch memory the table cannot describe (an unknown opcode, a
    /// texture or surface, a bulk copy).
    pub fn opaque_memory(&self) -> bool {
        !self.known
    }
}

/// What the first operand of an opcode is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum First {
    /// Written (when it is a register, vector, pair or `_`).
    Def,
    /// Read and written (`wgmma`'s accumulators, an unknown opcode's).
    DefUse,
    /// Read, or no register at all.
    Use,
}

impl First {
    fn of(op: &Op) -> First {
        match *op {
            Op::Arith(_)
            | Op::Compare(_)
            | Op::Convert(_)
            | Op::Cvta { .. }
            | Op::Mov(_)
            | Op::Select(_)
            | Op::Collective
            | Op::Call { returns: true }
            // As the table had it: the address operand counts as written.
            | Op::Prefetch { .. }
            | Op::Other {
                writes_first: true, ..
            } => First::Def,
            Op::Mem(m) => match m.op {
                MemOp::Wgmma { mma_async: true } => First::DefUse,
                MemOp::Wgmma { mma_async: false }
                | MemOp::Tcgen05
                | MemOp::Texture { store: true } => First::Use,
                _ => First::Def,
            },
            // `bar.red.popc.u32 %r, 0, %p` and `barrier.cta.red` write their first operand;
            // `bar.sync %r1` reads a barrier number.
            Op::Sync { red: true, .. } => First::Def,
            Op::Sync { red: false, .. }
            | Op::Branch { .. }
            | Op::BranchIndexed
            | Op::Call { returns: false }
            | Op::Return
            | Op::Exit { .. }
            | Op::Event { .. }
            | Op::Other {
                writes_first: false,
                ..
            } => First::Use,
            Op::Unknown => First::DefUse,
        }
    }
}

/// What `i` does.
pub fn effects(i: &Instr) -> Effects<'_> {
    let ops: Vec<Operand<'_>> = i.operands.iter().map(|o| Operand::parse(o)).collect();
    let mut e = Effects {
        defs: Vec::new(),
        uses: Vec::new(),
        mem: Vec::new(),
        sync: i.op.sync(),
        flow: Flow::Next,
        known: i.op != Op::Unknown,
    };
    // The guard predicate (a guard the reader took that is no register name, in text that is
    // not PTX, names none).
    if let Some(g) = i.guard.as_ref().filter(|g| super::operand::is_reg(&g.pred)) {
        e.uses.push(g.pred.as_str());
    }
    let first = First::of(&i.op);
    let call = matches!(i.op, Op::Call { .. });
    for (k, o) in ops.iter().enumerate() {
        let writes = k == 0
            && first != First::Use
            && (matches!(
                o,
                Operand::Reg(_) | Operand::Vector(_) | Operand::Pair(..) | Operand::Sink
            ) || call);
        if writes {
            o.regs(&mut e.defs);
            if first == First::DefUse {
                o.regs(&mut e.uses);
            }
        } else {
            o.regs(&mut e.uses);
        }
    }
    if let Op::Mem(m) = &i.op {
        e.mem = memory(m, &ops);
    }
    e.flow = match i.op {
        Op::Branch { .. } => match ops.first() {
            Some(Operand::Symbol(l)) => Flow::Branch(l),
            _ => Flow::Indirect,
        },
        Op::BranchIndexed => Flow::Indirect,
        Op::Call { .. } => Flow::Call,
        Op::Return => Flow::Return,
        Op::Exit { .. } => Flow::Exit,
        _ => Flow::Next,
    };
    e
}

/// The memory operands of a memory instruction whose operands are `ops`.
fn memory(m: &Mem, ops: &[Operand<'_>]) -> Vec<MemAccess> {
    let at = |operand: usize, kind: MemKind, space: Space, bytes: Option<u64>| {
        matches!(ops.get(operand), Some(Operand::Addr(_))).then_some(MemAccess {
            operand,
            kind,
            space,
            bytes,
        })
    };
    let one = |operand, kind, bytes| at(operand, kind, m.space, bytes).into_iter().collect();
    match m.op {
        MemOp::Ld | MemOp::Ldu => one(1, MemKind::Read, m.bytes()),
        MemOp::St => one(0, MemKind::Write, m.bytes()),
        MemOp::Atom => one(1, MemKind::Atomic, m.bytes()),
        MemOp::Red => one(0, MemKind::Reduce, m.bytes()),
        MemOp::Ldmatrix { .. } | MemOp::Wmma { load: true, .. } => one(1, MemKind::Read, None),
        MemOp::Stmatrix | MemOp::Wmma { store: true, .. } => one(0, MemKind::Write, None),
        MemOp::Mbarrier => ops
            .iter()
            .position(|o| matches!(o, Operand::Addr(_)))
            .and_then(|k| at(k, MemKind::Atomic, m.space, Some(8)))
            .into_iter()
            .collect(),
        // cp.async.{ca,cg}.shared.global [dst], [src], bytes
        MemOp::CpAsync { size } => at(0, MemKind::Write, Space::Shared, size)
            .into_iter()
            .chain(at(1, MemKind::Read, Space::Global, size))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `i` needs other threads of its warp or block at the *same* instruction, or may
/// through what it calls: a barrier or warp collective (any [`Sync`] but a fence), an
/// `mbarrier`, any `.sync`/`.aligned` form, a call, or an indirect branch (whose targets a
/// label table names). Code holding one cannot be run by some threads in one copy and by
/// others in another (the instrumenter's fast and slow copies, its versioned loops).
pub fn needs_peers(i: &Instr) -> bool {
    let e = effects(i);
    !matches!(e.sync, None | Some(Sync::Fence))
        || matches!(e.flow, Flow::Call | Flow::Indirect)
        || matches!(i.op.mem(), Some(m) if m.op == MemOp::Mbarrier)
        || i.parts().any(|p| p == "sync" || p == "aligned")
}

/// The address of memory operand `a` of `i`.
pub fn address<'a>(i: &'a Instr, a: &MemAccess) -> Option<Address<'a>> {
    Address::parse(i.operands.get(a.operand)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_needs_peers() {
        let needs = |t: &str| needs_peers(&instr(t));
        for t in [
            "bar.sync 0;",
            "barrier.cluster.arrive;",
            "shfl.sync.down.b32 %r2, %r1, 1, 31, -1;",
            "activemask.b32 %r1;",
            "elect.sync %r1|%p1, -1;",
            "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;",
            "wgmma.fence.sync.aligned;",
            "call.uni (retval0), f, (param0);",
            "brx.idx %r1, $L_tab;",
        ] {
            assert!(needs(t), "{t}");
        }
        for t in [
            "membar.gl;",
            "fence.acq_rel.gpu;",
            "ld.global.f32 %f1, [%rd1];",
            "atom.global.add.u32 %r1, [%rd1], 1;",
            "@%p1 bra $L__BB0_2;",
        ] {
            assert!(!needs(t), "{t}");
        }
    }

    fn instr(text: &str) -> Instr {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{text}\n}}\n"
        );
        let m = super::super::read::parse(&ptx).unwrap();
        m.functions[0]
            .stmts
            .iter()
            .find_map(|s| match &s.kind {
                super::super::read::StmtKind::Instr(i) => Some(i.clone()),
                _ => None,
            })
            .unwrap()
    }

    /// The effects of one instruction (leaked: a test's instructions live as long as it).
    fn eff(text: &str) -> Effects<'static> {
        effects(Box::leak(Box::new(instr(text))))
    }

    #[test]
    fn definitions_and_uses() {
        let e = eff("add.s32 %r1, %r2, 4;");
        assert_eq!((e.defs, e.uses), (vec!["%r1"], vec!["%r2"]));

        let e = eff("@!%p3 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd7+16];");
        assert_eq!(e.defs, ["%f1", "%f2", "%f3", "%f4"]);
        assert_eq!(e.uses, ["%p3", "%rd7"]);
        assert_eq!(
            e.mem,
            [MemAccess {
                operand: 1,
                kind: MemKind::Read,
                space: Space::Global,
                bytes: Some(16)
            }]
        );

        let e = eff("st.shared.f32 [%r4], %f1;");
        assert!(e.defs.is_empty());
        assert_eq!(e.uses, ["%r4", "%f1"]);
        assert_eq!(e.mem[0].kind, MemKind::Write);

        assert_eq!(eff("setp.lt.s32 %p1|%p2, %r1, %r2;").defs, ["%p1", "%p2"]);
        let e = eff("shfl.sync.bfly.b32 %r3|%p1, %r2, 1, 31, -1;");
        assert_eq!(e.defs, ["%r3", "%p1"]);
        assert_eq!(e.sync, Some(Sync::Collective));
    }

    #[test]
    fn barriers_read_or_write_by_form() {
        let e = eff("bar.sync 0;");
        assert_eq!(e.sync, Some(Sync::Block { aligned: true }));
        assert!(e.defs.is_empty());
        let e = eff("bar.sync %r1, %r2;");
        assert_eq!(e.uses, ["%r1", "%r2"]);
        assert!(e.defs.is_empty());
        // __syncthreads_count
        let e = eff("bar.red.popc.u32 %r5, 0, %p1;");
        assert_eq!(e.defs, ["%r5"]);
        assert_eq!(e.uses, ["%p1"]);
        assert_eq!(e.sync, Some(Sync::Block { aligned: true }));
        let e = eff("bar.warp.sync -1;");
        assert_eq!(e.sync, Some(Sync::Warp));
        let e = eff("barrier.sync %r1;");
        assert_eq!(e.sync, Some(Sync::Block { aligned: false }));
        let e = eff("bar.arrive 1, 64;");
        assert_eq!(e.sync, Some(Sync::Arrive));
    }

    #[test]
    fn calls_write_their_return_list() {
        let e = eff("call.uni (%r1), f, (%r2, %r3);");
        assert_eq!(
            (e.defs, e.uses, e.flow),
            (vec!["%r1"], vec!["%r2", "%r3"], Flow::Call)
        );
        let e = eff("call.uni (retval0), f, (param0);");
        assert!(e.defs.is_empty() && e.uses.is_empty());
        let e = eff("call.uni f, (%r2);");
        assert_eq!((e.defs, e.uses), (vec![], vec!["%r2"]));
    }

    #[test]
    fn control_flow() {
        assert_eq!(eff("@%p1 bra $L__BB0_2;").flow, Flow::Branch("$L__BB0_2"));
        assert_eq!(eff("bra.uni $L__BB0_2;").flow, Flow::Branch("$L__BB0_2"));
        assert_eq!(eff("ret;").flow, Flow::Return);
        assert_eq!(eff("trap;").flow, Flow::Exit);
        assert_eq!(eff("exit;").flow, Flow::Exit);
    }

    #[test]
    fn unknown_opcodes_are_conservative() {
        let e = eff("frobnicate.b32 %r1, %r2;");
        assert!(!e.known);
        assert_eq!(e.defs, ["%r1"]);
        assert_eq!(e.uses, ["%r1", "%r2"]);
        assert!(e.opaque_memory());
        // wgmma's accumulators are read and written.
        let e = eff(
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2}, %rd1, %rd2, %p1, 1, 1, 0, 0;",
        );
        assert_eq!(e.defs, ["%f1", "%f2"]);
        assert!(e.uses.contains(&"%f1") && e.uses.contains(&"%rd1"));
    }

    #[test]
    fn async_copies_write_shared_and_read_global() {
        let e = eff("cp.async.cg.shared.global [%r1], [%rd2], 16;");
        assert_eq!(e.mem.len(), 2);
        assert_eq!(
            (e.mem[0].space, e.mem[0].kind),
            (Space::Shared, MemKind::Write)
        );
        assert_eq!(
            (e.mem[1].space, e.mem[1].kind),
            (Space::Global, MemKind::Read)
        );
        assert_eq!(e.mem[1].bytes, Some(16));
    }
}
