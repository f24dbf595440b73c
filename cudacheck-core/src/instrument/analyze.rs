//! What each memory access of a PTX function reaches: a flow-insensitive provenance analysis of
//! its registers, then one [`Decision`] per access.
//!
//! NVVM writes PTX with a fresh virtual register for nearly every value; a register has several
//! definitions only where a phi was lowered into moves (loop-carried values, values merged after
//! a branch). Joining the provenance of all definitions of a register is therefore as precise as
//! a flow-sensitive analysis on this code, and sound on any code: a register that may hold
//! addresses of several buffers gets them all, and one whose addresses cannot be traced to a
//! buffer is marked so, with the reason, and its accesses are listed as unchecked.

use std::collections::{BTreeMap, BTreeSet};

use super::ptx::{Function, Instr, Module, Space, StmtKind};
use super::range::{address_offset, Ranges};
use super::InstrumentOptions;
use crate::ir::{Address, ArithOp, Facts, Mem, MemOp, Op, Operand, Ty};

/// Where an address points: into a kernel parameter's buffer or into a variable, expressed as
/// an address in `space` (a kernel's pointer parameters arrive as generic addresses; NVVM
/// converts them with `cvta.to.global` before global loads).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// The buffer of the pointer at byte `offset` of parameter `index`'s value: the parameter
    /// itself at 0, or, with [`InstrumentOptions::alloc_bases`] only, a pointer field of a
    /// struct passed by value (a [`BufferSlot`](super::BufferSlot)).
    Param {
        index: u32,
        offset: u32,
        space: Space,
    },
    Var {
        name: String,
        space: Space,
    },
}

impl Origin {
    pub fn space(&self) -> Space {
        match self {
            Origin::Param { space, .. } | Origin::Var { space, .. } => *space,
        }
    }

    pub(crate) fn with_space(&self, space: Space) -> Origin {
        match self {
            Origin::Param { index, offset, .. } => Origin::Param {
                index: *index,
                offset: *offset,
                space,
            },
            Origin::Var { name, .. } => Origin::Var {
                name: name.clone(),
                space,
            },
        }
    }
}

/// Why an address cannot be traced to one buffer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Opaque {
    /// The pointer was loaded from memory (an array of pointers, a struct in memory).
    Loaded,
    /// The pointer is a field of a struct passed by value.
    StructField,
    /// The pointer is a parameter of a non-inlined device function.
    FunctionParam,
    /// The pointer was returned by a non-inlined device function.
    Returned,
    /// The address was computed from integers (an integer cast to a pointer).
    Computed,
    /// Two pointers were combined, so which buffer the result is in is unclear.
    Ambiguous,
    /// The address is an absolute number.
    Absolute,
    /// The register may hold addresses in different address spaces.
    MixedSpaces,
}

/// What a register holds, joined over all its definitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prov {
    /// No definition seen.
    None,
    /// Not an address.
    Data,
    /// An address into one of these buffers.
    Ptr(BTreeSet<Origin>),
    /// A 64-bit value of unknown meaning: an integer when used as an offset, an untraceable
    /// address when used as one.
    Opaque(Opaque),
}

impl Prov {
    fn join(&self, other: &Prov) -> Prov {
        use Prov::*;
        match (self, other) {
            (None, x) | (x, None) => x.clone(),
            (Data, x) | (x, Data) => x.clone(),
            (Ptr(a), Ptr(b)) => {
                let spaces: BTreeSet<Space> = a.iter().chain(b).map(Origin::space).collect();
                if spaces.len() > 1 {
                    return Opaque(self::Opaque::MixedSpaces);
                }
                Ptr(a.union(b).cloned().collect())
            }
            (Opaque(a), Opaque(b)) => Opaque(a.clone().min(b.clone())),
            // A register that is a traced pointer on one path and untraceable on another.
            (Opaque(o), Ptr(_)) | (Ptr(_), Opaque(o)) => Opaque(o.clone()),
        }
    }

    fn ptr(o: Origin) -> Prov {
        Prov::Ptr(BTreeSet::from([o]))
    }
}

/// The provenance of every register of `f`.
pub struct Provenance {
    pub regs: BTreeMap<String, Prov>,
}

impl Provenance {
    pub fn of(&self, reg: &str) -> &Prov {
        self.regs.get(reg).unwrap_or(&Prov::None)
    }
}

/// The value an operand stands for: a register's provenance, a variable's address, or data.
fn operand_prov(m: &Module, f: &Function, p: &Provenance, op: &str) -> Prov {
    match Operand::parse(op) {
        Operand::Reg(r) => p.of(r).clone(),
        Operand::Symbol(s) => m.var(f, s).map_or(Prov::Data, |v| {
            Prov::ptr(Origin::Var {
                name: v.name.clone(),
                space: v.space,
            })
        }),
        // Special registers (%tid.x, %ctaid.y, %dynamic_smem_size) and literals are data.
        _ => Prov::Data,
    }
}

/// The pointer among two operands of an addition, or what combining them gives.
fn add_prov(a: Prov, b: Prov) -> Prov {
    match (a, b) {
        (Prov::Ptr(x), Prov::Ptr(y)) => {
            // A global (converted) pointer plus a raw 64-bit parameter: the parameter is an
            // integer (a length or an offset), not a second pointer.
            let generic_only = |s: &BTreeSet<Origin>| {
                s.iter().all(|o| {
                    matches!(
                        o,
                        Origin::Param {
                            space: Space::Generic,
                            ..
                        }
                    )
                })
            };
            match (generic_only(&x), generic_only(&y)) {
                (false, true) => Prov::Ptr(x),
                (true, false) => Prov::Ptr(y),
                _ => Prov::Opaque(Opaque::Ambiguous),
            }
        }
        (Prov::Ptr(x), _) | (_, Prov::Ptr(x)) => Prov::Ptr(x),
        (Prov::None, x) | (x, Prov::None) => match x {
            Prov::Opaque(_) | Prov::Data | Prov::None => Prov::Data,
            p => p,
        },
        // Integer arithmetic on opaque values gives integers (offsets, sizes).
        _ => Prov::Data,
    }
}

fn convert(prov: Prov, to: Space, from: Space) -> Prov {
    match prov {
        Prov::Ptr(s) => {
            let mut out = BTreeSet::new();
            for o in s {
                let ok = match (o.space(), from, to) {
                    // cvta.to.X: generic -> X, for a buffer that lives in X.
                    (Space::Generic, Space::Generic, to) => match &o {
                        Origin::Param { .. } => to == Space::Global,
                        Origin::Var { .. } => true,
                    },
                    // cvta.X: X -> generic.
                    (s, f, Space::Generic) => s == f,
                    _ => false,
                };
                if !ok {
                    return Prov::Opaque(Opaque::MixedSpaces);
                }
                out.insert(o.with_space(to));
            }
            Prov::Ptr(out)
        }
        Prov::Opaque(o) => Prov::Opaque(o),
        Prov::Data | Prov::None => Prov::Opaque(Opaque::Computed),
    }
}

/// Transfer function: the provenance one definition gives its destination. `fields`: a pointer
/// read from a by-value struct parameter points into a buffer slot of its own
/// ([`InstrumentOptions::alloc_bases`], whose launches pass a length and base for it).
fn transfer(
    m: &Module,
    f: &Function,
    p: &Provenance,
    i: &Instr,
    entry: bool,
    fields: bool,
) -> Prov {
    let ops = &i.operands;
    let op = |k: usize| -> Prov { ops.get(k).map_or(Prov::Data, |o| operand_prov(m, f, p, o)) };
    // Arithmetic without a carry in (`add`, not `addc`).
    let arith = |o: ArithOp| matches!(i.op, Op::Arith(a) if a.op == o && !a.carry_in);
    let mem = i.op.mem();
    // A load of 8 bytes (one element) may load a pointer.
    let eight = mem.is_some_and(|m| m.ty.and_then(Ty::bytes) == Some(8));
    match i.op {
        Op::Mem(
            m @ Mem {
                op: MemOp::Ld,
                space: Space::Param,
                ..
            },
        ) => {
            let Some(addr) = ops.get(1).and_then(|o| Address::parse(o)) else {
                return Prov::Data;
            };
            if !eight && m.vec != 2 && m.vec != 4 {
                return Prov::Data;
            }
            if let Some(k) = f.params.iter().position(|q| q.name == addr.base) {
                if !entry {
                    return Prov::Opaque(Opaque::FunctionParam);
                }
                if addr.offset != 0 || is_aggregate(&f.params[k]) {
                    // 8 bytes of a struct (at a multiple of 8: pointers are aligned so): the
                    // launch knows the buffer only where it is told to read the pointer there.
                    return match u32::try_from(addr.offset) {
                        Ok(offset) if fields && offset % 8 == 0 && m.ty != Some(Ty::F64) => {
                            Prov::ptr(Origin::Param {
                                index: k as u32,
                                offset,
                                space: Space::Generic,
                            })
                        }
                        _ => Prov::Opaque(Opaque::StructField),
                    };
                }
                return Prov::ptr(Origin::Param {
                    index: k as u32,
                    offset: 0,
                    space: Space::Generic,
                });
            }
            // A call's return value.
            Prov::Opaque(Opaque::Returned)
        }
        Op::Mem(Mem {
            op: MemOp::Ld | MemOp::Ldu | MemOp::Atom,
            ..
        }) => {
            if eight {
                Prov::Opaque(Opaque::Loaded)
            } else {
                Prov::Data
            }
        }
        Op::Mov(_) => {
            let src = ops.get(1).map(String::as_str).unwrap_or("");
            if src.starts_with('{') {
                return Prov::Data;
            }
            op(1)
        }
        Op::Cvta { to_generic, space } => {
            if !matches!(
                space,
                Space::Global | Space::Shared | Space::Local | Space::Const
            ) {
                return Prov::Opaque(Opaque::MixedSpaces);
            }
            if !to_generic {
                convert(op(1), space, Space::Generic)
            } else {
                convert(op(1), Space::Generic, space)
            }
        }
        _ if arith(ArithOp::Add) => add_prov(op(1), op(2)),
        _ if arith(ArithOp::Sub) => match (op(1), op(2)) {
            (Prov::Ptr(x), Prov::Ptr(_)) => {
                let _ = x;
                Prov::Data // pointer difference
            }
            (Prov::Ptr(x), _) => Prov::Ptr(x),
            (_, Prov::Ptr(_)) => Prov::Opaque(Opaque::Ambiguous),
            _ => Prov::Data,
        },
        _ if arith(ArithOp::Mad) => {
            let (a, b) = (op(1), op(2));
            if matches!(a, Prov::Ptr(_)) || matches!(b, Prov::Ptr(_)) {
                return Prov::Opaque(Opaque::Ambiguous);
            }
            add_prov(Prov::Data, op(3))
        }
        Op::Select(_) => op(1).join(&op(2)),
        Op::Convert(_) => match op(1) {
            // 32/64-bit conversions of shared, local and const addresses (NVVM keeps those
            // 32-bit where it can); a global address truncated is no longer an address.
            Prov::Ptr(s)
                if s.iter()
                    .all(|o| matches!(o.space(), Space::Shared | Space::Local | Space::Const)) =>
            {
                Prov::Ptr(s)
            }
            _ => Prov::Data,
        },
        // Aligning a pointer down or up keeps it in (or next to) its buffer; the check decides.
        _ if arith(ArithOp::And) => match (op(1), op(2)) {
            (Prov::Ptr(x), Prov::Data) | (Prov::Data, Prov::Ptr(x)) => Prov::Ptr(x),
            _ => Prov::Data,
        },
        _ => Prov::Data,
    }
}

/// Whether a parameter is passed as bytes (a struct by value: `.param .align 8 .b8 k_param_0[24]`)
/// rather than as one scalar or pointer.
pub(crate) fn is_aggregate(p: &super::ptx::Param) -> bool {
    p.decl.contains('[')
}

/// Computes the provenance of every register of `facts.f` (a kernel when `f.entry`).
pub fn provenance(m: &Module, facts: &Facts, opts: &InstrumentOptions) -> Provenance {
    let f = facts.f;
    let mut p = Provenance {
        regs: BTreeMap::new(),
    };
    // The statements that define one register, named first (a vector or a predicate pair is
    // no pointer), in order: read from the definitions map once.
    let mut defining: BTreeMap<usize, Option<&str>> = BTreeMap::new();
    for (&reg, ks) in &facts.defs {
        for &k in ks {
            defining
                .entry(k)
                .and_modify(|d| *d = None)
                .or_insert(Some(reg));
        }
    }
    let defining: Vec<(&Instr, &str)> = defining
        .into_iter()
        .filter_map(|(k, d)| {
            let (i, d) = (f.instr(k)?, d?);
            (i.operands.first().map(|o| o.trim()) == Some(d)).then_some((i, d))
        })
        .collect();
    // Each round only raises registers in a lattice of finite height; NVVM's code settles in
    // two or three rounds. The cap keeps adversarial input bounded.
    for _ in 0..64 {
        let mut changed = false;
        for &(i, d) in &defining {
            let new = transfer(m, f, &p, i, f.entry, opts.alloc_bases);
            let old = p.of(d).clone();
            let joined = old.join(&new);
            if joined != old {
                p.regs.insert(d.to_string(), joined);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    p
}

/// How an instruction touches memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Read,
    Write,
    /// An atomic that returns the old value (`atom`).
    Atomic,
    /// An atomic reduction without a result (`red`).
    Reduce,
}

/// One memory operand of an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Index of the operand holding the address.
    pub operand: usize,
    pub kind: AccessKind,
    pub space: Space,
    /// Bytes accessed.
    pub bytes: u64,
    /// `Some(n)` for a warp-collective access (`ldmatrix`) whose first `n` lanes give an
    /// address each: the instruction cannot be skipped for one thread, so a failed check sends
    /// that lane's address to the start of its array instead (and records the fault), and the
    /// other lanes' addresses, which the instruction ignores, are not checked.
    pub lanes: Option<u32>,
}

/// Why an access is not checked.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unchecked {
    Opaque(Opaque),
    /// The address does not come from any buffer at all.
    NotAnAddress,
    /// A warp-collective or asynchronous access (`stmatrix`, `wmma`, `ldmatrix` shapes other
    /// than `.m8n8.b16`, bulk copies, mbarriers):
    /// it cannot be skipped for one thread.
    Collective {
        op: String,
    },
    /// Texture and surface accesses: the hardware bounds them.
    Texture {
        op: String,
    },
    /// Another block's shared memory (`.shared::cluster`).
    Cluster,
    /// Inside a device function the compiler did not inline.
    NotInlined {
        function: String,
    },
    /// The access size could not be read from the opcode.
    UnknownSize {
        op: String,
    },
    /// An address in one space used by an instruction of another.
    SpaceMismatch,
}

/// What to do with one access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Check at run time against one buffer.
    Check(Origin),
    /// Check at run time against whichever of these buffers the register's shadow names.
    CheckShadow {
        reg: String,
        origins: BTreeSet<Origin>,
    },
    /// In bounds whatever happens at run time (a constant offset into a fixed-size array).
    Proven,
    Unchecked(Unchecked),
}

/// The memory operands of `i`, if it touches memory; `Err` for memory instructions the
/// instrumenter does not check. Read from the typed operation ([`Mem`]), the same one the
/// opcode table's [`effects`](crate::ir::effects) describes.
pub fn accesses(i: &Instr) -> Result<Vec<Access>, Unchecked> {
    let Some(m) = i.op.mem() else {
        return Ok(Vec::new());
    };
    let space = m.space;
    let collective = || Unchecked::Collective {
        op: i.opcode.clone(),
    };
    let sized = |operand, kind| -> Result<Vec<Access>, Unchecked> {
        let Some(bytes) = m.bytes() else {
            return Err(Unchecked::UnknownSize {
                op: i.opcode.clone(),
            });
        };
        Ok(vec![Access {
            operand,
            kind,
            space,
            bytes,
            lanes: None,
        }])
    };
    let plain = matches!(
        m.op,
        MemOp::Ld | MemOp::Ldu | MemOp::St | MemOp::Atom | MemOp::Red
    );
    match m.op {
        _ if plain && space == Space::Param => Ok(Vec::new()),
        _ if plain && space == Space::SharedCluster => Err(Unchecked::Cluster),
        MemOp::Ld | MemOp::Ldu if m.is_async => Err(collective()),
        MemOp::Ld | MemOp::Ldu => sized(1, AccessKind::Read),
        MemOp::St if m.is_async || m.bulk => Err(collective()),
        MemOp::St => sized(0, AccessKind::Write),
        MemOp::Atom => sized(1, AccessKind::Atomic),
        MemOp::Red if m.is_async => Err(collective()),
        MemOp::Red => sized(0, AccessKind::Reduce),
        // cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}
        MemOp::CpAsync { size } => {
            let n = size.ok_or_else(|| Unchecked::UnknownSize {
                op: i.opcode.clone(),
            })?;
            Ok(vec![
                Access {
                    operand: 0,
                    kind: AccessKind::Write,
                    space: Space::Shared,
                    bytes: n,
                    lanes: None,
                },
                Access {
                    operand: 1,
                    kind: AccessKind::Read,
                    space: Space::Global,
                    bytes: n,
                    lanes: None,
                },
            ])
        }
        // ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}{.shared{::cta}}.b16 {d..}, [addr]:
        // lanes 0-7, 0-15 or 0-31 each give the address of one 16-byte row, a shared one or
        // (without `.shared`) a generic address of shared memory.
        MemOp::Ldmatrix { lanes: Some(lanes) }
            if matches!(space, Space::Shared | Space::Generic) =>
        {
            Ok(vec![Access {
                operand: 1,
                kind: AccessKind::Read,
                space,
                bytes: 16,
                lanes: Some(lanes),
            }])
        }
        MemOp::Wmma {
            load: false,
            store: false,
        } => Ok(Vec::new()),
        MemOp::Texture { .. } => Err(Unchecked::Texture {
            op: i.opcode.clone(),
        }),
        // No address operand, no access: `cp.async.commit_group`/`wait_group`,
        // `wgmma.fence`, register-only `wgmma`, `mbarrier` on a register token.
        _ if !i.operands.iter().any(|o| o.contains('[')) => Ok(Vec::new()),
        _ => Err(collective()),
    }
}

/// What to do with the access `a` of `i` in `f`.
pub fn decide(
    m: &Module,
    f: &Function,
    p: &Provenance,
    r: &Ranges<'_>,
    opts: &InstrumentOptions,
    i: &Instr,
    a: &Access,
) -> Decision {
    if !f.entry {
        return Decision::Unchecked(Unchecked::NotInlined {
            function: f.name.clone(),
        });
    }
    let Some(addr) = i.operands.get(a.operand).and_then(|o| Address::parse(o)) else {
        return Decision::Unchecked(Unchecked::NotAnAddress);
    };
    if addr.base.is_empty() {
        return Decision::Unchecked(Unchecked::Opaque(Opaque::Absolute));
    }
    let prov = if addr.base_is_reg() {
        p.of(addr.base).clone()
    } else {
        operand_prov(m, f, p, addr.base)
    };
    match prov {
        Prov::Ptr(origins) => {
            if origins.iter().any(|o| !space_fits(m, f, o, a.space)) {
                return Decision::Unchecked(Unchecked::SpaceMismatch);
            }
            if origins.len() == 1 {
                let o = origins.into_iter().next().expect("one origin");
                // A constant offset into a fixed-size variable is decided here.
                if !addr.base_is_reg() {
                    if let Origin::Var { name, .. } = &o {
                        if let Some(bytes) = m.var(f, name).and_then(|v| v.bytes) {
                            if addr.offset >= 0 && addr.offset as u64 + a.bytes <= bytes {
                                return Decision::Proven;
                            }
                        }
                    }
                }
                // An offset interval inside a buffer whose length is known now.
                if let Origin::Var { name, .. } = &o {
                    let len = m.var(f, name).and_then(|v| match v.bytes {
                        Some(b) => Some(b),
                        None if v.space == Space::Shared => {
                            opts.dynamic_shared_bytes.map(u64::from)
                        }
                        None => None,
                    });
                    let off = address_offset(r, i, &i.operands[a.operand]);
                    if let (Some(len), Some((lo, hi))) = (len, off.bounds()) {
                        if lo >= 0 && hi + i128::from(a.bytes) <= i128::from(len) {
                            return Decision::Proven;
                        }
                    }
                }
                Decision::Check(o)
            } else {
                Decision::CheckShadow {
                    reg: addr.base.to_string(),
                    origins,
                }
            }
        }
        Prov::Opaque(o) => Decision::Unchecked(Unchecked::Opaque(o)),
        Prov::Data | Prov::None => Decision::Unchecked(Unchecked::NotAnAddress),
    }
}

/// Whether an address of `o` may be used by an access in `space`: one in the same space, or a
/// generic address of global memory used by a `.global` access. The latter is what inline
/// assembly gets: `__ldg`, `__ldcs`, `__stcg` and the other cache-hinted loads and stores of
/// CUDA's headers are `asm("ld.global.nc.f32 %0, [%1];" : ... : "l"(ptr))` on the pointer as
/// the kernel has it, never converted with `cvta.to.global`, and a generic address of global
/// memory is that memory's global address (PTX ISA, generic addressing). Such an access is
/// checked in the generic space: address and base (the parameter as passed, or the variable's
/// generic address) are both generic, so their difference is the offset into the buffer.
/// A kernel parameter is global memory (the host passes device pointers); a variable, when it
/// is declared `.global`.
fn space_fits(m: &Module, f: &Function, o: &Origin, space: Space) -> bool {
    if o.space() == space {
        return true;
    }
    if !(o.space() == Space::Generic && space == Space::Global) {
        return false;
    }
    match o {
        Origin::Param { .. } => true,
        Origin::Var { name, .. } => m.var(f, name).is_some_and(|v| v.space == Space::Global),
    }
}

/// The functions `f` calls (by name), directly.
pub fn callees(f: &Function) -> BTreeSet<String> {
    f.stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Instr(i) if matches!(i.op, Op::Call { .. }) => i
                .operands
                .iter()
                .find(|o| !o.starts_with('(') && !o.is_empty())
                .cloned(),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::ptx::parse;
    use super::*;

    fn module(body: &str, params: &str) -> Module {
        let text = format!(
            ".version 9.0\n.target sm_90\n.address_size 64\n.shared .align 4 .b8 tile[256];\n.extern .shared .align 16 .b8 smem[];\n.visible .entry k({params})\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<20>;\n.reg .f32 %f<20>;\n.reg .b64 %rd<40>;\n{body}\n}}\n"
        );
        parse(&text).unwrap()
    }

    fn decisions(m: &Module) -> Vec<Decision> {
        let f = &m.functions[0];
        let opts = InstrumentOptions::default();
        let p = provenance(m, &Facts::new(f), &opts);
        let r = super::super::range::ranges(m, f, &p, &opts);
        let mut out = Vec::new();
        for s in &f.stmts {
            if let StmtKind::Instr(i) = &s.kind {
                if let Ok(acc) = accesses(i) {
                    for a in acc {
                        out.push(decide(m, f, &p, &r, &opts, i, &a));
                    }
                }
            }
        }
        out
    }

    const P2: &str = ".param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2";

    /// `.shared::cta` is `.shared` (PTX ISA 7.8): a `cvta` of the tile's address keeps its
    /// provenance either way. Before the typed operation, `cvta` read its space from its own
    /// list, which lacked `shared::cta`, and such an address was of mixed spaces.
    #[test]
    fn cvta_of_shared_cta_keeps_the_tile() {
        for cvta in ["cvta.shared.u64", "cvta.shared::cta.u64"] {
            let m = module(
                &format!("mov.u64 %rd1, tile;\n{cvta} %rd2, %rd1;\nld.f32 %f1, [%rd2+8];"),
                "",
            );
            let f = &m.functions[0];
            let p = provenance(&m, &Facts::new(f), &InstrumentOptions::default());
            assert!(
                matches!(p.of("%rd2"), Prov::Ptr(_)),
                "{cvta}: {:?}",
                p.of("%rd2")
            );
        }
    }

    #[test]
    fn parameters_through_cvta_and_index_arithmetic() {
        let m = module(
            "ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd2, %rd1;\nmul.wide.s32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd2, %rd3;\nld.global.f32 %f1, [%rd4];\nst.global.f32 [%rd4+4], %f1;",
            P2,
        );
        let g = Origin::Param {
            index: 0,
            offset: 0,
            space: Space::Global,
        };
        assert_eq!(
            decisions(&m),
            vec![Decision::Check(g.clone()), Decision::Check(g)]
        );
    }

    #[test]
    fn loop_carried_pointers_keep_their_buffer() {
        let m = module(
            "ld.param.u64 %rd1, [k_param_1];\ncvta.to.global.u64 %rd2, %rd1;\nmov.u64 %rd5, %rd2;\n$L1:\nld.global.f32 %f1, [%rd5];\nadd.s64 %rd5, %rd5, 4;\n@%p1 bra $L1;",
            P2,
        );
        assert_eq!(
            decisions(&m),
            vec![Decision::Check(Origin::Param {
                index: 1,
                offset: 0,
                space: Space::Global
            })]
        );
    }

    #[test]
    fn selected_buffers_are_checked_through_a_shadow() {
        let m = module(
            "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\ncvta.to.global.u64 %rd3, %rd1;\ncvta.to.global.u64 %rd4, %rd2;\nselp.b64 %rd5, %rd3, %rd4, %p1;\nld.global.f32 %f1, [%rd5];",
            P2,
        );
        let d = decisions(&m);
        assert!(
            matches!(&d[0], Decision::CheckShadow { reg, origins } if reg == "%rd5" && origins.len() == 2),
            "{d:?}"
        );
    }

    #[test]
    fn a_raw_length_parameter_added_to_a_pointer_is_an_offset() {
        let m = module(
            "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_2];\ncvta.to.global.u64 %rd3, %rd1;\nadd.s64 %rd4, %rd3, %rd2;\nld.global.u8 %r1, [%rd4];",
            P2,
        );
        assert_eq!(
            decisions(&m),
            vec![Decision::Check(Origin::Param {
                index: 0,
                offset: 0,
                space: Space::Global
            })]
        );
    }

    #[test]
    fn pointers_loaded_from_memory_are_listed() {
        let m = module(
            "ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd2, %rd1;\nld.global.u64 %rd3, [%rd2];\ncvta.to.global.u64 %rd4, %rd3;\nld.global.f32 %f1, [%rd4];",
            P2,
        );
        let d = decisions(&m);
        assert_eq!(d[1], Decision::Unchecked(Unchecked::Opaque(Opaque::Loaded)));
    }

    #[test]
    fn shared_arrays_by_symbol_and_register() {
        let m = module(
            "mov.u64 %rd1, tile;\nadd.s64 %rd2, %rd1, %rd9;\nld.shared.f32 %f1, [%rd2];\nld.shared.f32 %f2, [tile+252];\nld.shared.f32 %f3, [tile+256];\nmov.u32 %r1, smem;\nld.shared.v4.f32 {%f4, %f5, %f6, %f7}, [%r1+16];",
            "",
        );
        let d = decisions(&m);
        let tile = Origin::Var {
            name: "tile".into(),
            space: Space::Shared,
        };
        assert_eq!(d[0], Decision::Check(tile.clone()));
        assert_eq!(d[1], Decision::Proven);
        assert_eq!(d[2], Decision::Check(tile));
        assert!(matches!(&d[3], Decision::Check(Origin::Var { name, .. }) if name == "smem"));
    }

    #[test]
    fn cache_hinted_and_generic_global_accesses_are_checked() {
        // `__ldg` and the other cache-hinted intrinsics are inline assembly on the pointer as
        // the kernel has it: a generic address used by a `.global` access.
        let m = module(
            "ld.param.u64 %rd1, [k_param_0];\nmul.wide.s32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\nld.global.nc.f32 %f1, [%rd4];\nld.global.nc.v4.f32 {%f2, %f3, %f4, %f5}, [%rd4+16];\nld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%f2, %f3, %f4, %f5}, [%rd4];\nld.global.L1::no_allocate.f32 %f6, [%rd4];\nld.global.L2::cache_hint.f32 %f7, [%rd4], %rd9;\nld.global.cs.f32 %f8, [%rd4];\nld.relaxed.gpu.global.f32 %f8, [%rd4];\nst.global.cg.f32 [%rd4], %f1;\nst.global.L1::no_allocate.v2.f32 [%rd4], {%f1, %f2};\ncvta.to.global.u64 %rd5, %rd1;\nld.global.nc.f32 %f9, [%rd5];\nmov.u64 %rd6, tile;\ncvta.shared.u64 %rd7, %rd6;\nld.global.f32 %f10, [%rd7];",
            P2,
        );
        let generic = Origin::Param {
            index: 0,
            offset: 0,
            space: Space::Generic,
        };
        let global = Origin::Param {
            index: 0,
            offset: 0,
            space: Space::Global,
        };
        let d = decisions(&m);
        assert_eq!(d.len(), 11, "{d:?}");
        for x in &d[..9] {
            assert_eq!(x, &Decision::Check(generic.clone()), "{d:?}");
        }
        assert_eq!(d[9], Decision::Check(global));
        // A generic address of shared memory used by a `.global` access stays unchecked.
        assert_eq!(d[10], Decision::Unchecked(Unchecked::SpaceMismatch));
        let f = &m.functions[0];
        let sizes: Vec<u64> = f
            .stmts
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Instr(i) => accesses(i).ok().and_then(|a| a.first().map(|a| a.bytes)),
                _ => None,
            })
            .collect();
        assert_eq!(sizes, [4, 16, 16, 4, 4, 4, 4, 4, 8, 4, 4]);
    }

    /// What `accesses` says of the last instruction of `body` (in a kernel of `module`).
    fn last_accesses(body: &str) -> Result<Vec<Access>, Unchecked> {
        let m = module(body, "");
        let StmtKind::Instr(i) = &m.functions[0].stmts.last().unwrap().kind else {
            panic!("{body}: the last statement is no instruction")
        };
        accesses(i)
    }

    #[test]
    fn ldmatrix_rows_are_accesses_of_the_lanes_that_give_them() {
        for (instr, lanes) in [
            (
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];",
                32,
            ),
            (
                "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r1, %r2}, [%r5+16];",
                16,
            ),
            (
                "ldmatrix.sync.aligned.m8n8.x1.shared::cta.b16 {%r1}, [%r5];",
                8,
            ),
        ] {
            let a = last_accesses(instr).expect(instr);
            assert_eq!(a.len(), 1, "{instr}");
            assert_eq!(
                (a[0].operand, a[0].kind, a[0].space, a[0].bytes, a[0].lanes),
                (1, AccessKind::Read, Space::Shared, 16, Some(lanes)),
                "{instr}"
            );
        }
        // Without `.shared`: a generic address (of shared memory), as candle's `mma.cuh` gives.
        let a =
            last_accesses("ldmatrix.sync.aligned.m8n8.x4.trans.b16 {%r1, %r2, %r3, %r4}, [%rd5];")
                .unwrap();
        assert_eq!((a[0].space, a[0].lanes), (Space::Generic, Some(32)));
        // Other shapes (sm_100's 8-bit m16n16 forms) and stmatrix, which writes, are listed.
        for instr in [
            "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r5];",
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r5], {%r1, %r2, %r3, %r4};",
        ] {
            assert!(
                matches!(last_accesses(instr), Err(Unchecked::Collective { .. })),
                "{instr}"
            );
        }
    }

    #[test]
    fn collectives_without_an_address_are_no_accesses() {
        for instr in [
            "cp.async.commit_group;",
            "cp.async.wait_group 0;",
            "cp.async.wait_all;",
            "cp.async.bulk.commit_group;",
            "wgmma.fence.sync.aligned;",
        ] {
            assert_eq!(last_accesses(instr), Ok(Vec::new()), "{instr}");
        }
        // With an address, a collective is still listed.
        assert!(matches!(
            last_accesses(
                "cp.async.bulk.wait_group.read 0;\n\tmbarrier.arrive.shared.b64 %rd1, [%rd2];"
            ),
            Err(Unchecked::Collective { .. })
        ));
    }
}
