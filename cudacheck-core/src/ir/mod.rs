//! A typed model of PTX, for the analyses and rewrites that instrument it.
//!
//! The pipeline reads in layers, each a module:
//!
//! 1. [`read`]: the tolerant reader. Functions, parameters, declarations, labels, `.loc`
//!    lines and instructions, each statement with its byte span; an instruction it does not
//!    know passes through verbatim.
//! 2. [`operand`]: what an operand text is (register, immediate, address, vector, ...): the
//!    one integer-literal parser and the one address reader.
//! 3. [`op`]: the typed operation each instruction is decoded into once, when it is read
//!    (arithmetic, compare, conversion, memory, barrier, branch), with its modifiers typed.
//! 4. [`opcode`]: the one opcode table: what an instruction defines, uses, reads and writes,
//!    whether it synchronizes threads, where control goes.
//! 5. [`cfg`](mod@cfg): the control-flow graph, built once, with dominators and the predicate
//!    value each edge is taken on ([`Cfg::condition`]).
//! 6. [`loops`](mod@loops): the definitions map ([`definitions`]), natural loops, induction
//!    variables (start, step) and exit tests (bound).
//! 7. [`facts`]: the per-function side table of the above (graph, definitions map, loops,
//!    register types), built once per function and read by every analysis.
//! 8. [`edit`]: edits by byte span, the one way a rewrite changes the text it read.
//!
//! Analyses over this model are pure functions; the bounds-checking rewrite
//! ([`crate::instrument`]) is built on it.

pub mod cfg;
pub mod edit;
pub mod facts;
pub mod loops;
pub mod op;
pub mod opcode;
pub mod operand;
pub mod read;

pub use cfg::{BlockId, Cfg};
pub use facts::Facts;
pub use loops::{definitions, loops, Bound, Cmp, Defs, ExitTest, Induction, Loop, Step};
pub use op::{
    Arith, ArithOp, AtomOp, Cache, CmpOp, Compare, Convert, FloatMode, Half, Mem, MemOp, Op, Order,
    Round, Ty,
};
pub use opcode::{effects, needs_peers, Effects, Flow, MemAccess, MemKind, Sync};
pub use operand::{immediate, is_reg, regs_of, Address, Operand};

/// The sources of the model, for caches of what is built on it.
#[doc(hidden)]
pub const SOURCES: &[&str] = crate::sources::IR;
