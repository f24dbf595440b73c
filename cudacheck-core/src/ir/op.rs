//! The typed operation: what an opcode says, decoded once when an instruction is read.
//!
//! [`Instr`](super::read::Instr) keeps its opcode and operand texts for verbatim output; its
//! [`Op`] is what the analyses read, so that a modifier (`.lo`, `.cc`, `.v4`, `.nc`) is tested
//! in one place, here, and not by each analysis on its own. An opcode the decoder does not
//! model further is [`Op::Other`] (the opcode table knows which of its operands it writes) or
//! [`Op::Unknown`] (a newer PTX ISA than the table), and passes through verbatim as before.
//! naga's `Expression`/`Statement`, with typed operators, is the model.

use super::opcode::Sync;
use super::operand::immediate;
use super::read::Space;

/// A type part of an opcode (`.u32`, `.f16x2`, `.pred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    Tf32,
    F32,
    F64,
    E4m3,
    E5m2,
    E4m3x2,
    E5m2x2,
    Pred,
}

impl Ty {
    /// The type a dotted opcode part names, if any.
    pub fn from_part(part: &str) -> Option<Ty> {
        use Ty::*;
        Some(match part {
            "b8" => B8,
            "b16" => B16,
            "b32" => B32,
            "b64" => B64,
            "b128" => B128,
            "u8" => U8,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            "s8" => S8,
            "s16" => S16,
            "s32" => S32,
            "s64" => S64,
            "f16" => F16,
            "f16x2" => F16x2,
            "bf16" => Bf16,
            "bf16x2" => Bf16x2,
            "tf32" => Tf32,
            "f32" => F32,
            "f64" => F64,
            "e4m3" => E4m3,
            "e5m2" => E5m2,
            "e4m3x2" => E4m3x2,
            "e5m2x2" => E5m2x2,
            "pred" => Pred,
            _ => return None,
        })
    }

    /// Bytes a value of the type takes (`None` for a predicate).
    pub fn bytes(self) -> Option<u64> {
        use Ty::*;
        Some(match self {
            B8 | U8 | S8 | E4m3 | E5m2 => 1,
            B16 | U16 | S16 | F16 | Bf16 | E4m3x2 | E5m2x2 => 2,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 => 4,
            B64 | U64 | S64 | F64 => 8,
            B128 => 16,
            Pred => return None,
        })
    }

    /// A signed integer type.
    pub fn signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    /// An unsigned integer type.
    pub fn unsigned(self) -> bool {
        matches!(self, Ty::U8 | Ty::U16 | Ty::U32 | Ty::U64)
    }

    /// A floating-point type, scalar or packed (`f32`, `f16x2`, `bf16`, `tf32`, `e4m3`).
    pub fn float(self) -> bool {
        self.int_bits().is_none() && self != Ty::Pred
    }

    /// The bits of an integer or untyped-bits type (`u32`, `s64`, `b16`).
    pub fn int_bits(self) -> Option<u32> {
        use Ty::*;
        Some(match self {
            B8 | U8 | S8 => 8,
            B16 | U16 | S16 => 16,
            B32 | U32 | S32 => 32,
            B64 | U64 | S64 => 64,
            B128 => 128,
            _ => return None,
        })
    }
}

/// The last type part of an opcode: the operands' type (`cvt`'s and `set`'s source type).
fn last_ty<'a>(parts: impl Iterator<Item = &'a str>) -> Option<Ty> {
    parts.filter_map(Ty::from_part).last()
}

/// An arithmetic or logic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Mad,
    Mul24,
    Mad24,
    Fma,
    Div,
    Rem,
    Abs,
    Neg,
    Min,
    Max,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    /// `rcp`, `sqrt`, `rsqrt`: the floating-point reciprocal and roots.
    Rcp,
    Sqrt,
    Rsqrt,
}

/// Which part of a multiply's product: `.lo`, `.hi`, or the double-width `.wide`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Half {
    Lo,
    Hi,
    Wide,
}

/// `add.s32`, `mul.wide.u32`, `addc.cc.u32`, `min.s64`, `shl.b64`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arith {
    pub op: ArithOp,
    pub ty: Option<Ty>,
    pub half: Option<Half>,
    /// Reads the carry flag (`addc`, `subc`, `madc`).
    pub carry_in: bool,
    /// Writes the carry flag (`.cc`).
    pub carry_out: bool,
    /// `.sat`: clamps instead of wrapping.
    pub sat: bool,
    /// Rounding, `.ftz`, `.approx` and the other parts that change a floating-point result.
    pub float: FloatMode,
}

/// A rounding modifier (`.rn`, `.rzi`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Round {
    Rn,
    Rna,
    Rz,
    Rm,
    Rp,
    Rs,
    /// To an integral value (`cvt`'s `.rni`, `.rzi`, `.rmi`, `.rpi`).
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

impl Round {
    fn from_part(p: &str) -> Option<Round> {
        use Round::*;
        Some(match p {
            "rn" => Rn,
            "rna" => Rna,
            "rz" => Rz,
            "rm" => Rm,
            "rp" => Rp,
            "rs" => Rs,
            "rni" => Rni,
            "rzi" => Rzi,
            "rmi" => Rmi,
            "rpi" => Rpi,
            _ => return None,
        })
    }
}

/// The parts of an arithmetic or conversion opcode that change a floating-point result: two
/// operations with the same operator, type and mode compute the same value from the same
/// operands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FloatMode {
    pub round: Option<Round>,
    /// `.ftz`: subnormals flushed to zero.
    pub ftz: bool,
    /// `.approx`, and `div`'s `.full`.
    pub approx: bool,
    pub full: bool,
    /// `.relu`, `.NaN`, `.xorsign`, `.satfinite`, `.noftz`.
    pub relu: bool,
    pub nan: bool,
    pub xorsign: bool,
    pub satfinite: bool,
    pub noftz: bool,
}

impl FloatMode {
    fn from_parts<'a>(parts: impl Iterator<Item = &'a str>) -> FloatMode {
        let mut m = FloatMode::default();
        for p in parts {
            match p {
                "ftz" => m.ftz = true,
                "approx" => m.approx = true,
                "full" => m.full = true,
                "relu" => m.relu = true,
                "NaN" => m.nan = true,
                "xorsign" => m.xorsign = true,
                "satfinite" => m.satfinite = true,
                "noftz" => m.noftz = true,
                _ => {
                    if let Some(r) = Round::from_part(p) {
                        m.round = Some(r);
                    }
                }
            }
        }
        m
    }
}

/// A comparison operator of `setp`/`set`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unsigned `<`, `<=`, `>`, `>=`.
    Lo,
    Ls,
    Hi,
    Hs,
    /// Floating-point comparisons that hold for NaN, and the NaN tests.
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

impl CmpOp {
    /// An unsigned comparison by its mnemonic (`lo`, `ls`, `hi`, `hs`).
    pub fn unsigned(self) -> bool {
        matches!(self, CmpOp::Lo | CmpOp::Ls | CmpOp::Hi | CmpOp::Hs)
    }

    fn from_part(p: &str) -> Option<CmpOp> {
        use CmpOp::*;
        Some(match p {
            "eq" => Eq,
            "ne" => Ne,
            "lt" => Lt,
            "le" => Le,
            "gt" => Gt,
            "ge" => Ge,
            "lo" => Lo,
            "ls" => Ls,
            "hi" => Hi,
            "hs" => Hs,
            "equ" => Equ,
            "neu" => Neu,
            "ltu" => Ltu,
            "leu" => Leu,
            "gtu" => Gtu,
            "geu" => Geu,
            "num" => Num,
            "nan" => Nan,
            _ => return None,
        })
    }
}

/// `setp.lt.s32`, `set.gt.u32.s32`: a comparison, with its combining operator when it takes a
/// predicate operand (`setp.lt.and.s32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Compare {
    /// `set` (a value) rather than `setp` (a predicate).
    pub value: bool,
    pub cmp: Option<CmpOp>,
    /// The compared operands' type.
    pub ty: Option<Ty>,
    /// `.and`, `.or` or `.xor` with a predicate operand.
    pub combine: Option<ArithOp>,
}

/// `cvt.rn.f32.s32`: a conversion from `from` to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Convert {
    pub to: Option<Ty>,
    pub from: Option<Ty>,
    pub sat: bool,
    /// `.pack`: two sources packed into the destination's halves.
    pub pack: bool,
    pub float: FloatMode,
}

impl Convert {
    /// `(to, from)` of a conversion between integer types with no rounding, saturation or
    /// packing (`cvt.u64.u32`); `None` for any other.
    pub fn int(&self) -> Option<(Ty, Ty)> {
        match *self {
            Convert {
                to: Some(to),
                from: Some(from),
                sat: false,
                pack: false,
                float,
            } if float == FloatMode::default() && to.int_bits().is_some() => {
                from.int_bits().map(|_| (to, from))
            }
            _ => None,
        }
    }
}

/// Which instruction family touches memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemOp {
    Ld,
    /// `ldu`: a load uniform across the warp.
    Ldu,
    St,
    Atom,
    Red,
    /// `cp.async.{ca,cg}.shared.global [dst], [src], size`: one thread's asynchronous copy.
    CpAsync {
        /// The bytes copied, when the size operand is a literal.
        size: Option<u64>,
    },
    /// Any other `cp.` form: bulk and tensor copies, `commit_group`, `wait_group`.
    Cp,
    /// `ldmatrix`; `lanes` for the `.m8n8` `.b16` shapes: the first 8, 16 or 32 lanes (`.x1`,
    /// `.x2`, `.x4`) give one row's address each.
    Ldmatrix {
        lanes: Option<u32>,
    },
    Stmatrix,
    /// `wmma`: its `.load` or `.store` forms touch memory.
    Wmma {
        load: bool,
        store: bool,
    },
    Mbarrier,
    Multimem,
    Tensormap,
    /// `wgmma`: `.mma_async` reads and writes its accumulators (and reads shared memory
    /// through descriptors).
    Wgmma {
        mma_async: bool,
    },
    Tcgen05,
    /// Texture and surface instructions; `store` for `sust`/`sured`, which read no register
    /// into their first operand.
    Texture {
        store: bool,
    },
}

/// A cache operator of a load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cache {
    /// `.nc`: through the read-only (texture) cache.
    Nc,
    Ca,
    Cg,
    Cs,
    Lu,
    Cv,
    Wb,
    Wt,
}

/// An instruction that touches (or may touch) memory, as its opcode says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mem {
    pub op: MemOp,
    /// The state space the opcode names (`Generic` when it names none).
    pub space: Space,
    /// The element type: the opcode's last type part.
    pub ty: Option<Ty>,
    /// `.v2`, `.v4`, `.v8`: elements per thread (1 without).
    pub vec: u8,
    pub cache: Option<Cache>,
    /// `.async`.
    pub is_async: bool,
    /// `.bulk`.
    pub bulk: bool,
    /// The operation of an `atom` or `red` (`.add`, `.cas`, ...).
    pub atomic: Option<AtomOp>,
    /// The memory ordering (`.relaxed`, `.acquire`, `.release`, `.acq_rel`).
    pub order: Option<Order>,
    /// `.L2::cache_hint`: a cache policy operand follows the others.
    pub cache_hint: bool,
}

/// The read-modify-write operation of an `atom` or `red`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomOp {
    Add,
    Inc,
    Dec,
    Min,
    Max,
    And,
    Or,
    Xor,
    /// `atom` only: the old value swapped for a new one, or compared first.
    Exch,
    Cas,
}

impl AtomOp {
    fn from_part(p: &str) -> Option<AtomOp> {
        use AtomOp::*;
        Some(match p {
            "add" => Add,
            "inc" => Inc,
            "dec" => Dec,
            "min" => Min,
            "max" => Max,
            "and" => And,
            "or" => Or,
            "xor" => Xor,
            "exch" => Exch,
            "cas" => Cas,
            _ => return None,
        })
    }

    /// An operation `red` has too (all but `exch` and `cas`).
    pub fn reduces(self) -> bool {
        !matches!(self, AtomOp::Exch | AtomOp::Cas)
    }
}

/// A memory ordering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

impl Mem {
    /// Bytes one thread moves (element width times vector arity), when the type says.
    pub fn bytes(&self) -> Option<u64> {
        Some(self.ty?.bytes()? * u64::from(self.vec))
    }
}

/// What an instruction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Arith(Arith),
    Compare(Compare),
    Convert(Convert),
    /// `cvta`: to the generic space, or `.to` the named one.
    Cvta {
        to_generic: bool,
        space: Space,
    },
    Mov(Option<Ty>),
    /// `selp`: one of two values, by a predicate.
    Select(Option<Ty>),
    Mem(Mem),
    /// `bar`, `barrier`, `membar`, `fence`; `red` for the forms that write a reduction of
    /// the block's predicates (`bar.red`, `__syncthreads_count`).
    Sync {
        sync: Sync,
        red: bool,
        /// A fence of the other proxies only (`fence.proxy.*`, `fence.mbarrier_init.*`).
        proxy: bool,
    },
    /// A warp-collective operation (`shfl`, `vote`, `match`, `redux`, `elect`, `activemask`,
    /// `mma`).
    Collective,
    /// `bra`: to the label of its operand.
    Branch {
        uni: bool,
    },
    /// `brx.idx`: to one of a `.branchtargets` list.
    BranchIndexed,
    /// `call`; `returns`: with a return list, which it writes.
    Call {
        returns: bool,
    },
    Return,
    /// `exit`, `trap` (`trap`: an error, the launch fails): the thread ends.
    Exit {
        trap: bool,
    },
    /// `prefetch`, `prefetchu` (`uniform`): a hint to bring an address into a cache, no access.
    Prefetch {
        uniform: bool,
        space: Space,
    },
    /// `brkpt` (`breakpoint`), `pmevent`: an event for a debugger or a profiler.
    Event {
        breakpoint: bool,
    },
    /// An opcode the table knows, not modelled further; `writes_first`: its first operand is a
    /// destination; `space`: the state space it names (`prefetch.local`, `isspacep.shared`,
    /// `alloca.local`), `Generic` when it names none.
    Other {
        writes_first: bool,
        space: Space,
    },
    /// An opcode the table does not know.
    Unknown,
}

/// Opcodes (first dotted part) not modelled further whose first operand is a destination.
const DEF_FIRST: &[&str] = &[
    "applypriority",
    "alloca",
    "bfe",
    "bfi",
    "bfind",
    "bmsk",
    "brev",
    "clz",
    "copysign",
    "cos",
    "createpolicy",
    "discard",
    "dp2a",
    "dp4a",
    "ex2",
    "fns",
    "getctarank",
    "isspacep",
    "istypep",
    "lg2",
    "lop3",
    "mapa",
    "popc",
    "prmt",
    "sad",
    "shf",
    "sin",
    "slct",
    "stacksave",
    "szext",
    "tanh",
    "testp",
    "vabsdiff",
    "vabsdiff2",
    "vabsdiff4",
    "vadd",
    "vadd2",
    "vadd4",
    "vavrg2",
    "vavrg4",
    "vmad",
    "vmax",
    "vmax2",
    "vmax4",
    "vmin",
    "vmin2",
    "vmin4",
    "vset",
    "vset2",
    "vset4",
    "vshl",
    "vshr",
    "vsub",
    "vsub2",
    "vsub4",
    "clusterlaunchcontrol",
    "getnextsm",
];

/// Opcodes not modelled further whose first operand is never written, or that have none.
const USE_FIRST: &[&str] = &["nanosleep", "setmaxnreg", "griddepcontrol", "stackrestore"];

impl Op {
    /// Decodes a dotted opcode (`ld.global.nc.v4.f32`); `operands` as the reader split them.
    pub fn decode(opcode: &str, operands: &[String]) -> Op {
        let mut parts = opcode.split('.');
        let name = parts.next().unwrap_or("");
        let rest = || opcode.split('.').skip(1);
        let has = |p: &str| rest().any(|x| x == p);
        let arith = |op: ArithOp, carry_in: bool| {
            Op::Arith(Arith {
                op,
                ty: last_ty(rest()),
                half: rest().find_map(|p| match p {
                    "lo" => Some(Half::Lo),
                    "hi" => Some(Half::Hi),
                    "wide" => Some(Half::Wide),
                    _ => None,
                }),
                carry_in,
                carry_out: has("cc"),
                sat: has("sat"),
                float: FloatMode::from_parts(rest()),
            })
        };
        let mem = |op: MemOp| {
            Op::Mem(Mem {
                op,
                space: rest().find_map(Space::from_part).unwrap_or(Space::Generic),
                ty: last_ty(rest()),
                vec: if has("v8") {
                    8
                } else if has("v4") {
                    4
                } else if has("v2") {
                    2
                } else {
                    1
                },
                cache: rest().find_map(|p| {
                    Some(match p {
                        "nc" => Cache::Nc,
                        "ca" => Cache::Ca,
                        "cg" => Cache::Cg,
                        "cs" => Cache::Cs,
                        "lu" => Cache::Lu,
                        "cv" => Cache::Cv,
                        "wb" => Cache::Wb,
                        "wt" => Cache::Wt,
                        _ => return None,
                    })
                }),
                is_async: has("async"),
                bulk: has("bulk"),
                atomic: matches!(op, MemOp::Atom | MemOp::Red)
                    .then(|| rest().find_map(AtomOp::from_part))
                    .flatten(),
                order: rest().find_map(|p| {
                    Some(match p {
                        "relaxed" => Order::Relaxed,
                        "acquire" => Order::Acquire,
                        "release" => Order::Release,
                        "acq_rel" => Order::AcqRel,
                        _ => return None,
                    })
                }),
                cache_hint: has("L2::cache_hint"),
            })
        };
        let other = |writes_first: bool| Op::Other {
            writes_first,
            space: rest().find_map(Space::from_part).unwrap_or(Space::Generic),
        };
        use ArithOp as A;
        match name {
            "add" => arith(A::Add, false),
            "addc" => arith(A::Add, true),
            "sub" => arith(A::Sub, false),
            "subc" => arith(A::Sub, true),
            "mul" => arith(A::Mul, false),
            "mad" => arith(A::Mad, false),
            "madc" => arith(A::Mad, true),
            "mul24" => arith(A::Mul24, false),
            "mad24" => arith(A::Mad24, false),
            "fma" => arith(A::Fma, false),
            "div" => arith(A::Div, false),
            "rem" => arith(A::Rem, false),
            "abs" => arith(A::Abs, false),
            "neg" => arith(A::Neg, false),
            "min" => arith(A::Min, false),
            "max" => arith(A::Max, false),
            "and" => arith(A::And, false),
            "or" => arith(A::Or, false),
            "xor" => arith(A::Xor, false),
            "not" => arith(A::Not, false),
            "cnot" => arith(A::Cnot, false),
            "shl" => arith(A::Shl, false),
            "shr" => arith(A::Shr, false),
            "rcp" => arith(A::Rcp, false),
            "sqrt" => arith(A::Sqrt, false),
            "rsqrt" => arith(A::Rsqrt, false),
            "setp" | "set" => Op::Compare(Compare {
                value: name == "set",
                cmp: rest().find_map(CmpOp::from_part),
                ty: last_ty(rest()),
                combine: rest().find_map(|p| match p {
                    "and" => Some(A::And),
                    "or" => Some(A::Or),
                    "xor" => Some(A::Xor),
                    _ => None,
                }),
            }),
            "cvt" => Op::Convert(Convert {
                to: rest().find_map(Ty::from_part),
                from: last_ty(rest()),
                sat: has("sat"),
                pack: has("pack"),
                float: FloatMode::from_parts(rest()),
            }),
            "cvta" => Op::Cvta {
                to_generic: !has("to"),
                space: rest().find_map(Space::from_part).unwrap_or(Space::Generic),
            },
            "mov" => Op::Mov(last_ty(rest())),
            "selp" => Op::Select(last_ty(rest())),
            "ld" => mem(MemOp::Ld),
            "ldu" => mem(MemOp::Ldu),
            "st" => mem(MemOp::St),
            "atom" => mem(MemOp::Atom),
            "red" => mem(MemOp::Red),
            "cp" if opcode.starts_with("cp.async.ca.") || opcode.starts_with("cp.async.cg.") => {
                let size = operands
                    .get(2)
                    .and_then(|o| immediate(o))
                    .and_then(|n| u64::try_from(n).ok());
                mem(MemOp::CpAsync { size })
            }
            "cp" if opcode.starts_with("cp.") => mem(MemOp::Cp),
            "ldmatrix" => mem(MemOp::Ldmatrix {
                lanes: (has("m8n8") && has("b16")).then(|| {
                    if has("x4") {
                        32
                    } else if has("x2") {
                        16
                    } else {
                        8
                    }
                }),
            }),
            "stmatrix" => mem(MemOp::Stmatrix),
            "wmma" => mem(MemOp::Wmma {
                load: has("load"),
                store: has("store"),
            }),
            "mbarrier" => mem(MemOp::Mbarrier),
            "multimem" => mem(MemOp::Multimem),
            "tensormap" => mem(MemOp::Tensormap),
            "wgmma" => mem(MemOp::Wgmma {
                mma_async: has("mma_async"),
            }),
            "tcgen05" => mem(MemOp::Tcgen05),
            "tex" | "tld4" | "suld" | "txq" | "suq" => mem(MemOp::Texture { store: false }),
            "sust" | "sured" => mem(MemOp::Texture { store: true }),
            "bar" | "barrier" => Op::Sync {
                sync: if name == "bar" && has("warp") {
                    Sync::Warp
                } else if has("cluster") {
                    Sync::Cluster
                } else if has("arrive") {
                    Sync::Arrive
                } else {
                    // `bar.sync` and `bar.red` are `.aligned` by definition; `barrier` says so.
                    Sync::Block {
                        aligned: name == "bar" || has("aligned"),
                    }
                },
                red: has("red"),
                proxy: false,
            },
            "membar" | "fence" => Op::Sync {
                sync: Sync::Fence,
                red: false,
                proxy: has("proxy") || has("mbarrier_init"),
            },
            "prefetch" | "prefetchu" => Op::Prefetch {
                uniform: name == "prefetchu",
                space: rest().find_map(Space::from_part).unwrap_or(Space::Generic),
            },
            "brkpt" | "pmevent" => Op::Event {
                breakpoint: name == "brkpt",
            },
            "shfl" | "vote" | "match" | "redux" | "elect" | "activemask" | "mma" => Op::Collective,
            "bra" => Op::Branch { uni: has("uni") },
            "brx" => Op::BranchIndexed,
            // `call (%r1), f, (%r2)`: registers in a return list are written.
            "call" => Op::Call {
                returns: operands.len() > 1 && operands[0].trim_start().starts_with('('),
            },
            "ret" => Op::Return,
            "exit" | "trap" => Op::Exit {
                trap: name == "trap",
            },
            // A lone `cp` is no PTX opcode; as before, the table lists it as writing.
            "cp" => other(true),
            _ if DEF_FIRST.contains(&name) => other(true),
            _ if USE_FIRST.contains(&name) => other(false),
            _ => Op::Unknown,
        }
    }

    /// The memory form, when the instruction is one.
    pub fn mem(&self) -> Option<&Mem> {
        match self {
            Op::Mem(m) => Some(m),
            _ => None,
        }
    }

    /// The type the operation reads its register operands as: arithmetic's, `mov`'s and
    /// `selp`'s type, a conversion's source type.
    pub fn operand_ty(&self) -> Option<Ty> {
        match *self {
            Op::Arith(a) => a.ty,
            Op::Mov(t) | Op::Select(t) => t,
            Op::Convert(c) => c.from,
            _ => None,
        }
    }

    /// The state space the opcode names: a memory operation's, a `cvta`'s, another opcode's
    /// (`prefetch.local`, `isspacep.shared`); `None` for the rest.
    pub fn space(&self) -> Option<Space> {
        match *self {
            Op::Mem(m) => Some(m.space),
            Op::Cvta { space, .. } | Op::Other { space, .. } | Op::Prefetch { space, .. } => {
                Some(space)
            }
            _ => None,
        }
    }

    /// The arithmetic form, when the instruction is one.
    pub fn arith(&self) -> Option<&Arith> {
        match self {
            Op::Arith(a) => Some(a),
            _ => None,
        }
    }

    /// How the instruction orders threads, if it does.
    pub fn sync(&self) -> Option<Sync> {
        match *self {
            Op::Sync { sync, .. } => Some(sync),
            Op::Collective => Some(Sync::Collective),
            Op::Mem(Mem {
                op:
                    MemOp::Ldmatrix { .. } | MemOp::Stmatrix | MemOp::Wmma { .. } | MemOp::Wgmma { .. },
                ..
            }) => Some(Sync::Collective),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(text: &str) -> Op {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{text}\n}}\n"
        );
        let m = super::super::read::parse(&ptx).unwrap();
        let op = m.functions[0].instrs().next().unwrap().op;
        op
    }

    #[test]
    fn arithmetic_keeps_its_modifiers() {
        let a = *op("mul.wide.u32 %rd1, %r1, 4;").arith().unwrap();
        assert_eq!(
            (a.op, a.ty, a.half, a.carry_in, a.carry_out, a.sat),
            (
                ArithOp::Mul,
                Some(Ty::U32),
                Some(Half::Wide),
                false,
                false,
                false
            )
        );
        let a = *op("addc.cc.u32 %r3, %r1, %r2;").arith().unwrap();
        assert_eq!((a.op, a.carry_in, a.carry_out), (ArithOp::Add, true, true));
        let a = *op("add.sat.s32 %r3, %r1, %r2;").arith().unwrap();
        assert!(a.sat && a.ty.unwrap().signed());
        assert_eq!(
            op("mad.lo.s32 %r1, %r2, %r3, %r4;").arith().unwrap().half,
            Some(Half::Lo)
        );
    }

    #[test]
    fn rounding_ftz_and_approx_tell_operations_apart() {
        let a = op("div.rn.ftz.f32 %f3, %f1, %f2;");
        let f = a.arith().unwrap().float;
        assert_eq!((f.round, f.ftz, f.approx), (Some(Round::Rn), true, false));
        let b = op("div.approx.ftz.f32 %f3, %f1, %f2;");
        assert!(b.arith().unwrap().float.approx);
        assert_ne!(a, b);
        assert_ne!(a, op("div.rn.f32 %f3, %f1, %f2;"));
        assert_ne!(
            op("cvt.rzi.s32.f32 %r1, %f1;"),
            op("cvt.rni.s32.f32 %r1, %f1;")
        );
        assert_ne!(
            op("min.NaN.f32 %f3, %f1, %f2;"),
            op("min.f32 %f3, %f1, %f2;")
        );
        assert_eq!(
            op("add.s32 %r3, %r1, %r2;"),
            op("add.s32 %r5, %r4, 1;"),
            "operands are not part of the operation"
        );
    }

    #[test]
    fn compares_and_conversions() {
        assert_eq!(
            op("setp.lt.and.s32 %p1, %r1, %r2, %p2;"),
            Op::Compare(Compare {
                value: false,
                cmp: Some(CmpOp::Lt),
                ty: Some(Ty::S32),
                combine: Some(ArithOp::And),
            })
        );
        assert_eq!(
            op("cvt.rn.f32.s64 %f1, %rd1;"),
            Op::Convert(Convert {
                to: Some(Ty::F32),
                from: Some(Ty::S64),
                sat: false,
                pack: false,
                float: FloatMode {
                    round: Some(Round::Rn),
                    ..FloatMode::default()
                },
            })
        );
        assert_eq!(
            op("cvta.to.global.u64 %rd2, %rd1;"),
            Op::Cvta {
                to_generic: false,
                space: Space::Global
            }
        );
    }

    #[test]
    fn memory_forms() {
        let m = *op("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];")
            .mem()
            .unwrap();
        assert_eq!(
            (m.op, m.space, m.ty, m.vec, m.cache, m.bytes()),
            (
                MemOp::Ld,
                Space::Global,
                Some(Ty::F32),
                4,
                Some(Cache::Nc),
                Some(16)
            )
        );
        let m = *op("cp.async.cg.shared.global [%r1], [%rd2], 16;")
            .mem()
            .unwrap();
        assert_eq!(m.op, MemOp::CpAsync { size: Some(16) });
        let m = *op("cp.async.bulk.shared::cluster.global [%r1], [%rd1], 64, [%r2];")
            .mem()
            .unwrap();
        assert!(m.op == MemOp::Cp && m.bulk && m.is_async);
        let m = *op("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %r2}, [%r3];")
            .mem()
            .unwrap();
        assert_eq!(m.op, MemOp::Ldmatrix { lanes: Some(16) });
        assert_eq!(
            op("sust.b.1d.b32.trap [%rd1, {%r1}], {%r2};")
                .mem()
                .unwrap()
                .op,
            MemOp::Texture { store: true }
        );
    }

    #[test]
    fn atomics_keep_their_operation_and_ordering() {
        let m = *op("atom.acq_rel.gpu.global.add.u32 %r2, [%rd1], 1;")
            .mem()
            .unwrap();
        assert_eq!(
            (m.op, m.space, m.atomic, m.order, m.cache_hint),
            (
                MemOp::Atom,
                Space::Global,
                Some(AtomOp::Add),
                Some(Order::AcqRel),
                false
            )
        );
        let m = *op("atom.global.cas.b32 %r2, [%rd1], %r3, %r4;")
            .mem()
            .unwrap();
        assert!(!m.atomic.unwrap().reduces());
        let m = *op("red.global.L2::cache_hint.min.s32 [%rd1], %r1, %rd2;")
            .mem()
            .unwrap();
        assert!(m.cache_hint && m.atomic == Some(AtomOp::Min));
        assert_eq!(
            op("ld.global.add.u32 %r1, [%rd1];").mem().unwrap().atomic,
            None
        );
    }

    #[test]
    fn control_and_barriers() {
        assert_eq!(op("bra.uni $L1;"), Op::Branch { uni: true });
        assert_eq!(op("call.uni (%r1), f, (%r2);"), Op::Call { returns: true });
        assert_eq!(op("trap;"), Op::Exit { trap: true });
        assert_eq!(op("exit;"), Op::Exit { trap: false });
        assert_eq!(
            op("bar.red.popc.u32 %r1, 0, %p1;"),
            Op::Sync {
                sync: Sync::Block { aligned: true },
                red: true,
                proxy: false,
            }
        );
        assert_eq!(
            op("shfl.sync.down.b32 %r2, %r1, 1, 31, -1;").sync(),
            Some(Sync::Collective)
        );
    }

    #[test]
    fn roots_fences_and_events() {
        let a = *op("rsqrt.approx.ftz.f64 %fd2, %fd1;").arith().unwrap();
        assert_eq!(
            (a.op, a.ty, a.float.ftz),
            (ArithOp::Rsqrt, Some(Ty::F64), true)
        );
        assert_eq!(
            op("sqrt.rn.f32 %f2, %f1;").arith().unwrap().float.round,
            Some(Round::Rn)
        );
        assert_eq!(
            op("fence.proxy.async.shared::cta;"),
            Op::Sync {
                sync: Sync::Fence,
                red: false,
                proxy: true
            }
        );
        assert!(matches!(op("membar.gl;"), Op::Sync { proxy: false, .. }));
        assert_eq!(op("pmevent 1;"), Op::Event { breakpoint: false });
        assert_eq!(op("brkpt;"), Op::Event { breakpoint: true });
    }

    #[test]
    fn unknown_opcodes_pass_as_unknown() {
        assert_eq!(op("frobnicate.b32 %r1, %r2;"), Op::Unknown);
        assert_eq!(
            op("popc.b32 %r1, %r2;"),
            Op::Other {
                writes_first: true,
                space: Space::Generic
            }
        );
        assert_eq!(
            op("nanosleep.u32 %r1;"),
            Op::Other {
                writes_first: false,
                space: Space::Generic
            }
        );
        assert_eq!(
            op("prefetch.local.L1 [%rd1];"),
            Op::Prefetch {
                uniform: false,
                space: Space::Local
            }
        );
        assert_eq!(op("prefetch.local.L1 [%rd1];").space(), Some(Space::Local));
    }
}
