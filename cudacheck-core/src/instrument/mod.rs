//! Bounds checking by rewriting the PTX that NVRTC produces.
//!
//! Checking follows what NVRTC actually compiles: macros are expanded, templates instantiated
//! and device functions inlined by the time the PTX exists, so kernels stamped out by
//! `#define`, indexed through `__device__` helpers, or reading a `float4` view of a `float`
//! buffer are all checked the same way. [`instrument_ptx`] rewrites a module so that:
//!
//! 1. each `.entry` takes hidden trailing parameters: one `.u64` per user parameter, the
//!    length in bytes of the buffer passed there (`u64::MAX` where unknown), then a pointer to
//!    a zeroed [`FaultRecord`] ([`hidden_params`] says how many; with
//!    [`InstrumentOptions::alloc_bases`], a length and a base per [`BufferSlot`] instead, see
//!    there);
//! 2. every load, store and atomic whose address can be traced to a kernel parameter or an
//!    array (`__shared__`, static or `extern`, `__device__`, `__constant__`, local) is checked
//!    against that buffer's byte range before it runs: `offset = address - base`, out of bounds
//!    when `offset > len - bytes` (so a `float4` access to a `float` buffer of 10 elements is
//!    in bounds at elements 0..8 only: a partial trailing vector is out of bounds). An
//!    out-of-bounds access is skipped (a read gives 0), the first one of the launch is recorded
//!    with its site, offset, thread and block, and all are counted; an atomic on global memory
//!    is not branched around but runs on a scratch word of the module instead (same report,
//!    result 0: a branch before it made `ptxas` serialize loads, see `emit.rs`);
//! 3. `assert(cond)` records its message, line and thread and ends the thread instead of
//!    trapping, so the CUDA context stays usable;
//! 4. every access is accounted for in the kernel's [`Coverage`]: checked, proven in bounds
//!    (offsets an interval analysis bounds inside a fixed-size array; with
//!    [`instrument_ptx_with`], also from the launch's block and dynamic shared memory, e.g. a
//!    shared tile indexed by `threadIdx`: see `range.rs`), or listed unchecked with its source
//!    line and the reason (pointers loaded from memory, warp-collective accesses, non-inlined
//!    device functions...);
//! 5. checked accesses through one register at constant offsets in one basic block (an
//!    unrolled loop's loads) share one range check; when it fails, an out-of-line copy with
//!    every access's own check runs instead, so faults are reported exactly as without it
//!    (`group.rs` has the soundness argument).
//!
//! Sites carry the `.loc` line information of the PTX (NVRTC's `-lineinfo`), so faults point at
//! the user's file and line, and at the call site a device function or macro was expanded
//! into. The module is then assembled by `ptxas` (nvJitLink), which optimises the checks with
//! the rest of the code.
//!
//! ```
//! use cudacheck_core::instrument::{instrument_ptx, hidden_params};
//!
//! let ptx = r#"
//! .version 9.0
//! .target sm_90
//! .address_size 64
//! .visible .entry scale(.param .u64 scale_param_0, .param .u32 scale_param_1)
//! {
//!     .reg .b32 %r<3>;
//!     .reg .f32 %f<3>;
//!     .reg .b64 %rd<5>;
//!     ld.param.u64 %rd1, [scale_param_0];
//!     cvta.to.global.u64 %rd2, %rd1;
//!     mov.u32 %r1, %tid.x;
//!     mul.wide.u32 %rd3, %r1, 4;
//!     add.s64 %rd4, %rd2, %rd3;
//!     ld.global.f32 %f1, [%rd4];
//!     add.f32 %f2, %f1, %f1;
//!     st.global.f32 [%rd4], %f2;
//!     ret;
//! }
//! "#;
//! let out = instrument_ptx(ptx).unwrap();
//! let k = &out.kernels[0];
//! assert_eq!(k.coverage.checked, 2);
//! assert!(k.coverage.is_complete());
//! assert_eq!(hidden_params(k.num_params as usize), 3);
//! assert!(out.ptx.contains(".param .u64 __cc_rec"));
//! ```

mod analyze;
mod contract;
mod coverage;
mod emit;
mod fast;
mod group;
mod guard;
mod host_expr;
mod normalize;
/// The PTX reader, kept at its earlier path: [`crate::ir::read`].
pub use crate::ir::read as ptx;
mod range;
mod record;
mod reduce;
mod version;

use std::fmt::Write as _;

use thiserror::Error;

use crate::site::{unchecked_line, InitKernel, RaceKernel};

pub use crate::site::{demangle, demangle_var, SkipReason, SourceLoc};
pub use coverage::{BufferSlot, Coverage, Site, SiteKind, Target, UncheckedAccess};
pub use host_expr::{Bound, Cmp, HostCheck, HostExpr, HostFact, IvStep, LaunchValues, Sibling};

pub use ptx::PtxError;
pub use record::{decode, FaultKind, FaultRecord, MSG_BYTES, RECORD_BYTES};

/// The source of the rewrite, for caches of its output: a build stored by one instrumenter
/// must not answer for another (`cudacheck::cache` hashes these into a checked build's key).
#[doc(hidden)]
pub const INSTRUMENT_SOURCES: &[&str] = crate::sources::INSTRUMENT;

/// How many hidden parameters an instrumented kernel with `num_params` user parameters takes:
/// one byte length per user parameter, then the fault record's address.
pub const fn hidden_params(num_params: usize) -> usize {
    num_params + 1
}

/// How many hidden parameters a build made with `opts` takes, given `slots`: the kernel's user
/// parameters without [`InstrumentOptions::alloc_bases`] (one length each, then the record:
/// [`hidden_params`]), or the length of its [`InstrumentedKernel::slots`] with it (a length
/// and a base per slot, then the record). A built kernel says it itself:
/// [`InstrumentedKernel::hidden_params`].
pub const fn hidden_params_for(slots: usize, opts: &InstrumentOptions) -> usize {
    if opts.alloc_bases {
        2 * slots + 1
    } else {
        hidden_params(slots)
    }
}

/// The length to pass for a parameter whose buffer length is unknown (a raw address, or not a
/// pointer at all): every access through it passes.
///
/// `i64::MAX`, not `u64::MAX`: the device computes a check's limit, `len - bytes + 1`, in signed
/// 64-bit arithmetic clamped at 0, where `u64::MAX` would read as -1 and fail every access. Every
/// address below 2^63 (every address a process has) passes this length from base 0.
pub const UNKNOWN_LEN: u64 = i64::MAX as u64;

/// One instrumented kernel (`.entry`). Serializable, so that a bounds-checked build can be
/// kept on disk with the table its faults are named through (`cudacheck::cache`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstrumentedKernel {
    /// The PTX symbol (mangled for C++ kernels).
    pub symbol: String,
    /// A readable name: `scale<float>`, or the symbol for `extern "C"` kernels.
    pub name: String,
    /// How many parameters the user wrote; the hidden ones come after.
    pub num_params: u32,
    /// Every checked access and assertion, by site id.
    pub sites: Vec<Site>,
    pub coverage: Coverage,
    /// Accesses left without a device check, checked by the launch on the host instead
    /// ([`InstrumentOptions::host_checks`]): a launch may run this build only when every one
    /// [`holds`](HostCheck::holds) for its arguments.
    #[serde(default)]
    pub host_checks: Vec<HostCheck>,
    /// Per buffer parameter, the widest access the kernel makes through it (checked, proven
    /// or host-checked alike) and where: an access of `bytes` needs its address aligned to
    /// `bytes`, so a launch whose argument is not (an offset view) is refused on the host
    /// before the kernel runs (CUDA would raise a misaligned address and poison the context).
    #[serde(default)]
    pub widest: Vec<WidestAccess>,
    /// The race-checked build's table ([`crate::race`]), when the build is one.
    #[serde(default)]
    pub races: Option<RaceKernel>,
    /// The init-checked build's table ([`crate::init`]), when the build is one.
    #[serde(default)]
    pub init: Option<InitKernel>,
    /// Whether the build checks against allocations ([`InstrumentOptions::alloc_bases`]): its
    /// hidden parameters are then a length and a base per [`slots`](Self::slots), not a length
    /// per parameter ([`Self::hidden_params`]).
    #[serde(default)]
    pub alloc_bases: bool,
    /// With [`alloc_bases`](Self::alloc_bases), the buffer slots the build checks against, in
    /// the order of its hidden parameters: `(k, 0)` for every parameter `k`, and `(k, offset)`
    /// for every other pointer field of a by-value struct parameter that an access is checked
    /// against, ordered by parameter, then offset. Empty otherwise.
    #[serde(default)]
    pub slots: Vec<BufferSlot>,
}

/// The widest access a kernel makes through one buffer parameter.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WidestAccess {
    /// The parameter's index.
    pub param: u32,
    /// Bytes accessed at once (a power of two: the alignment the address needs).
    pub bytes: u32,
    /// Where the (first such) access is.
    pub loc: Option<SourceLoc>,
}

impl InstrumentedKernel {
    /// How many hidden parameters the build takes after the user's: one length per parameter
    /// and the record ([`hidden_params`]), or, with [`alloc_bases`](Self::alloc_bases), a
    /// length per slot, a base per slot and the record.
    pub fn hidden_params(&self) -> usize {
        if self.alloc_bases {
            2 * self.slots.len() + 1
        } else {
            hidden_params(self.num_params as usize)
        }
    }

    /// The first buffer argument whose address (`ptrs[k]`, 0 for non-buffers) is not aligned
    /// for the widest access the kernel makes through it.
    pub fn misaligned_argument(&self, ptrs: &[u64]) -> Option<&WidestAccess> {
        self.widest.iter().find(|w| {
            let ptr = ptrs.get(w.param as usize).copied().unwrap_or(0);
            w.bytes > 1 && ptr != 0 && ptr % u64::from(w.bytes) != 0
        })
    }

    /// The site with this id, if it belongs to this kernel.
    pub fn site(&self, id: u32) -> Option<&Site> {
        self.sites.iter().find(|s| s.id == id)
    }

    /// Whether a launch with these values may run this build: every host check holds.
    pub fn host_checks_hold(&self, v: &LaunchValues<'_>) -> bool {
        self.host_checks.iter().all(|c| c.holds(v))
    }

    /// The host checks that fail for a launch with these values, by their position in
    /// [`host_checks`](Self::host_checks): a build of the same shape with
    /// [`InstrumentOptions::on_device`] set to them checks exactly those accesses on the
    /// device and may run the launch. `None` when one past [`HostCheckSet::CAPACITY`] fails
    /// (the fully checked build serves such a launch).
    pub fn failing_host_checks(&self, v: &LaunchValues<'_>) -> Option<HostCheckSet> {
        let mut set = HostCheckSet::new();
        for (k, c) in self.host_checks.iter().enumerate() {
            if !c.holds(v) && !set.insert(k) {
                return None;
            }
        }
        Some(set)
    }
}

/// A set of host checks by their position in a host-checked build's list (the first
/// [`CAPACITY`](Self::CAPACITY)): those a build checks on the device after all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostCheckSet([u64; 4]);

impl HostCheckSet {
    /// How many positions a set can hold.
    pub const CAPACITY: usize = 256;

    pub const fn new() -> Self {
        HostCheckSet([0; 4])
    }

    /// Adds position `k`; `false` (and nothing added) when `k` is past the capacity.
    pub fn insert(&mut self, k: usize) -> bool {
        if k >= Self::CAPACITY {
            return false;
        }
        self.0[k / 64] |= 1 << (k % 64);
        true
    }

    pub fn contains(&self, k: usize) -> bool {
        k < Self::CAPACITY && self.0[k / 64] & (1 << (k % 64)) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The set as bytes, for cache keys.
    pub fn to_le_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (c, w) in b.chunks_exact_mut(8).zip(self.0) {
            c.copy_from_slice(&w.to_le_bytes());
        }
        b
    }
}

/// An instrumented PTX module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentedPtx {
    /// The rewritten PTX, ready for `ptxas`.
    pub ptx: String,
    /// Every kernel of the module, in order.
    pub kernels: Vec<InstrumentedKernel>,
}

impl InstrumentedPtx {
    /// The kernel whose PTX symbol is `symbol`.
    pub fn kernel(&self, symbol: &str) -> Option<&InstrumentedKernel> {
        self.kernels.iter().find(|k| k.symbol == symbol)
    }

    /// The kernel and site a fault record's `site` refers to.
    pub fn site(&self, id: u32) -> Option<(&InstrumentedKernel, &Site)> {
        self.kernels.iter().find_map(|k| k.site(id).map(|s| (k, s)))
    }
}

/// Why a module could not be instrumented.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InstrumentError {
    #[error("the PTX could not be read: {0}")]
    Ptx(#[from] PtxError),
}

/// Rewrites every kernel of a PTX module to check its memory accesses at run time.
///
/// # Errors
/// [`InstrumentError::Ptx`] when the text is not PTX the reader can follow (an unclosed body,
/// an unreadable function header). Instructions it does not know are copied unchanged and, if
/// they touch memory, listed as unchecked.
pub fn instrument_ptx(ptx: &str) -> Result<InstrumentedPtx, InstrumentError> {
    instrument_ptx_with(ptx, &InstrumentOptions::default())
}

/// What is known about the launches an instrumented module will serve. Each fact lets more
/// accesses be proven in bounds (and their checks left out), and is a promise: the module must
/// only be launched with this shape, or an access proven in bounds for it may not be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InstrumentOptions {
    /// The block every launch uses (`blockDim`).
    pub block: Option<[u32; 3]>,
    /// The bytes of dynamic shared memory every launch gives (`extern __shared__` arrays).
    pub dynamic_shared_bytes: Option<u32>,
    /// Leave out the device checks of accesses the user's guards keep in bounds given the
    /// launch's arguments, and list them as [`HostCheck`]s instead: such a build may only run
    /// launches for which they all hold (`guard.rs`).
    pub host_checks: bool,
    /// With `host_checks`: the host checks (by position in the list the build has without
    /// this) to check on the device after all, because a launch's arguments fail them
    /// ([`InstrumentedKernel::failing_host_checks`]). The build lists the others.
    pub on_device: HostCheckSet,
    /// Keep every check inside loops: no loop versioning (`version.rs`: one check per
    /// access before a loop, and a copy of the loop without those checks). For comparisons;
    /// versioning changes no report.
    pub keep_loop_checks: bool,
    /// Check against allocations rather than against the buffers the arguments start: for a
    /// launch interposer that knows, per pointer argument `p`, the allocation `[A, A + S)` it
    /// points into (a tensor view may point into its middle and index below itself, down to
    /// `A`). Each kernel then takes, after its parameters, a `.u64` length per
    /// [`BufferSlot`] (`__cc_len_<k>`, or `__cc_len_<k>_<offset>` for a struct field; `S`),
    /// a `.u64` base per slot in the same order (`__cc_base_<k>`, `__cc_base_<k>_<offset>`;
    /// `A`), then the record (`__cc_rec`), and every device check measures its offset from
    /// the slot's base instead of from the argument: `address - A`, out of bounds past
    /// `S - bytes` (unsigned), so below `A` too. The fault record's `base` is `A` and its
    /// `offset` is from `A` (see [`FaultRecord::base`]). Pointer fields of by-value struct
    /// parameters (`struct Graph { int* nindex; int* nlist; int n; }`) are slots of their own
    /// and checked; without this they are listed unchecked ([`SkipReason::StructField`]).
    ///
    /// A slot whose pointer is in no allocation the launch knows (or the slot `(k, 0)` of a
    /// parameter that is no pointer) takes base 0 and length `i64::MAX as u64`, through which
    /// every address below `2^63` passes. Not [`UNKNOWN_LEN`]: the device computes the limit
    /// `max(len - bytes + 1, 0)` in signed 64-bit arithmetic, where `u64::MAX` reads as -1,
    /// so every access would fail.
    ///
    /// Host checks ([`Self::host_checks`]) stay relative to the argument: a launch passes, as
    /// [`LaunchValues::lens`], the bytes from `p` to the allocation's end (`A + S - p`), and a
    /// host check that holds puts the access in `[p, A + S)`, inside the allocation. A host
    /// check never holds for an offset below `p`. Only plain parameters get host checks; a
    /// struct field's accesses are checked on the device.
    pub alloc_bases: bool,
}

impl InstrumentOptions {
    /// No facts: every launch shape is allowed.
    pub const fn new() -> Self {
        InstrumentOptions {
            block: None,
            dynamic_shared_bytes: None,
            host_checks: false,
            on_device: HostCheckSet::new(),
            keep_loop_checks: false,
            alloc_bases: false,
        }
    }

    /// Check against allocations: a length and a base per buffer slot (see
    /// [`Self::alloc_bases`]).
    pub const fn alloc_bases(mut self, on: bool) -> Self {
        self.alloc_bases = on;
        self
    }

    /// Keep every check inside loops (no loop versioning; see [`Self::keep_loop_checks`]).
    pub const fn keep_loop_checks(mut self, on: bool) -> Self {
        self.keep_loop_checks = on;
        self
    }

    /// These host checks are made on the device after all (see [`Self::on_device`]).
    pub const fn on_device(mut self, set: HostCheckSet) -> Self {
        self.on_device = set;
        self
    }

    /// Accesses the user's guards keep in bounds are checked on the host, once per launch.
    pub const fn host_checks(mut self, on: bool) -> Self {
        self.host_checks = on;
        self
    }

    /// Launches use this block.
    pub const fn block(mut self, block: [u32; 3]) -> Self {
        self.block = Some(block);
        self
    }

    /// Launches give this many bytes of dynamic shared memory.
    pub const fn dynamic_shared_bytes(mut self, bytes: u32) -> Self {
        self.dynamic_shared_bytes = Some(bytes);
        self
    }
}

/// [`instrument_ptx`] for launches of a known shape: accesses that the shape proves in bounds
/// (a shared tile indexed by `threadIdx`) get no check. The result must only serve launches with
/// that shape.
///
/// # Errors
/// As [`instrument_ptx`].
pub fn instrument_ptx_with(
    ptx: &str,
    opts: &InstrumentOptions,
) -> Result<InstrumentedPtx, InstrumentError> {
    // Multiplies sit next to the adds they may be fused into, so that checks do not change
    // ptxas's floating-point contraction (`contract.rs`); atomics whose result is unused are
    // reductions, as NVRTC's assembler makes them (`reduce.rs`).
    let ptx = normalize::normalize(ptx);
    let module = ptx::parse(&ptx)?;
    Ok(emit::emit(&ptx, &module, opts))
}

/// A report for a person: per kernel, how many accesses are checked and which are not, with
/// `file:line:column` and the reason.
pub fn render_report(file_name: &str, kernels: &[InstrumentedKernel]) -> String {
    let mut out = String::new();
    let n = kernels.len();
    let _ = writeln!(
        out,
        "{file_name}: {n} kernel{} instrumented",
        if n == 1 { "" } else { "s" }
    );
    for k in kernels {
        let c = &k.coverage;
        let asserts = k
            .sites
            .iter()
            .filter(|s| s.kind == SiteKind::Assert)
            .count();
        let _ = write!(
            out,
            "  kernel `{}`: {} access{} checked",
            k.name,
            c.checked,
            if c.checked == 1 { "" } else { "es" }
        );
        if c.hoisted > 0 {
            let _ = write!(
                out,
                " ({} once before {} loop{})",
                c.hoisted,
                c.versioned_loops,
                if c.versioned_loops == 1 { "" } else { "s" }
            );
        }
        if c.proven > 0 {
            let _ = write!(out, ", {} proven in bounds", c.proven);
        }
        if c.host_checked > 0 {
            let _ = write!(out, ", {} checked on the host", c.host_checked);
        }
        if asserts > 0 {
            let _ = write!(
                out,
                ", {asserts} assertion{}",
                if asserts == 1 { "" } else { "s" }
            );
        }
        if c.unchecked.is_empty() {
            let _ = writeln!(out, ", none left unchecked");
            continue;
        }
        let _ = writeln!(out, ", {} left unchecked:", c.unchecked.len());
        for u in &c.unchecked {
            unchecked_line(&mut out, u.loc.as_ref(), &u.instruction, &u.reason);
        }
    }
    out
}
