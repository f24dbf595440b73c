//! Checking reads of global memory that nothing wrote, by rewriting PTX.
//!
//! An init-checked build is a bounds-checked build ([`crate::instrument`]) rewritten once more
//! by [`init_ptx`]: every global (or generic) load, store, atomic and reduction looks up the
//! shadow of the bytes it touches ([`shadow`]: one bit per byte, set once the byte was
//! written). A read whose bits are not all set records itself in the init record
//! ([`InitRecord`], after the bounds and race records of the same block, so the build takes
//! no hidden parameter of its own) and then reads as the program wrote it: a report, not a
//! change of behaviour. A store sets its bits with `red.global.or` only when they are not all
//! set yet, so a buffer written once costs a load and a test per later store, not an atomic.
//! An atomic or reduction reads (`atomicAdd` into bins nobody zeroed is reported) and then
//! marks; an exchange only marks.
//!
//! The host side keeps the shadow ([`host::ShadowMap`], one per context, shared by
//! `cudacheck run --init` and the library's tracked buffers): it owns the directory whose
//! address the module's `__cc_init_dir` holds ([`DIR_SYMBOL`]), makes a granule's shadow when
//! an allocation in it is made, sets bits for what copies, memsets and zeroed allocations
//! write, and clears them (or, where it sees only some allocations, sets them) when memory is
//! freed. Memory the host does not know (a null directory
//! entry, the directory itself unset) counts as written: no report comes from memory whose
//! history was never seen. `__device__` variables (initialized when the module loads) and
//! the checker's own records are not looked up.
//!
//! # What is not checked
//! A kernel that writes memory in a way the shadow cannot follow (bulk or tensor copies to
//! global memory, surface stores, `wmma` stores to global memory, `multimem`, an instruction
//! the reader does not know, a store whose address or width is not plain, a call out of the
//! module) is left unchanged and says why ([`InitCoverage::not_checked`]): the host must then
//! count every allocation the launch can reach as written. Reads in non-inlined device
//! functions are not checked (their writes are marked).
//!
//! Shared memory (`shared.rs`): a block's own writes since it began, one bit per byte in extra
//! dynamic shared memory the launch adds ([`shared_shadow_bytes`]), cleared before the
//! program's code behind one barrier. A kernel that writes shared memory in a way the shadow
//! cannot follow (`stmatrix`, `wmma` stores, bulk copies into shared memory), calls a device
//! function, or is race-checked (the race checker's shadow is where this one would go) checks
//! no shared memory, and says why ([`InitCoverage::shared_not_checked`]).
//! Accesses wider than 32 bytes and `cp.async` with a source size are listed unchecked.
//!
//! The shadow word is read through L1 first: bits are only set while a kernel runs (a free or
//! an allocation clears them between launches, when L1 holds nothing of the launch before), so
//! the set bits of a cached word are set. A read whose cached word lacks some bits reads it
//! again with `ld.volatile` (never from a stale L1 line, on every target) before it records,
//! so a write another block made earlier in the same launch is seen once it reached L2; two
//! threads writing and reading one byte in the same few cycles with nothing ordering them (a
//! race in the program) may see either state. A store whose cached word lacks its bits sets
//! them with `red.or` (at L2), which sets nothing twice.

mod emit;
pub mod host;
mod record;
pub mod shadow;
mod shared;

use std::fmt::Write as _;

pub use record::{decode_init, InitRecord, INIT_RECORD_BYTES, INIT_RECORD_OFFSET};

use crate::ir::read::{self, PtxError};
pub use crate::site::{InitCoverage, InitKernel, InitSite, InitSiteKind, InitUnchecked};

/// The source of the rewrite, for build caches (an init-checked build stored by one version of
/// the checker must not answer for another).
#[doc(hidden)]
pub const INIT_SOURCES: &[&str] = crate::sources::INIT;

/// The module variable (a `.u64`) that holds the shadow directory's device address; 0 (as
/// loaded) turns every check off.
pub const DIR_SYMBOL: &str = "__cc_init_dir";

/// An init-checked module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitPtx {
    /// The rewritten PTX, ready for `ptxas`.
    pub ptx: String,
    /// Every kernel of the module, in order.
    pub kernels: Vec<InitKernel>,
}

impl InitPtx {
    /// The kernel whose PTX symbol is `symbol`.
    pub fn kernel(&self, symbol: &str) -> Option<&InitKernel> {
        self.kernels.iter().find(|k| k.symbol == symbol)
    }
}

/// What an init-checked build is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InitOptions {
    /// The dynamic shared memory the program's launches give: the shared shadow goes after it.
    pub dynamic_shared_bytes: u32,
    /// Global (and generic) accesses are checked and marked (the default). Off, only shared
    /// memory is: the build for launches that can reach no global memory with unwritten
    /// bytes, where a global check could never fail and a mark never set a new bit.
    pub global: bool,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions::new(0)
    }
}

impl InitOptions {
    /// For launches that give `dynamic_shared_bytes` of dynamic shared memory; global and
    /// shared memory checked.
    pub const fn new(dynamic_shared_bytes: u32) -> Self {
        InitOptions {
            dynamic_shared_bytes,
            global: true,
        }
    }

    /// Shared memory only (see [`InitOptions::global`]).
    pub const fn shared_only(self) -> Self {
        InitOptions {
            global: false,
            ..self
        }
    }
}

/// Bytes of shadow a launch of a kernel with [`InitKernel::shared_shadow`] needs after
/// `dynamic_shared_bytes` of its own, for `static_shared_bytes` of `__shared__` arrays: one
/// bit per byte of both, with room for the arrays' alignment and the shadow's (the kernel
/// measures what it needs and checks it against what it got).
pub const fn shared_shadow_bytes(static_shared_bytes: u32, dynamic_shared_bytes: u32) -> u32 {
    let bytes = static_shared_bytes as u64 + dynamic_shared_bytes as u64 + 256;
    let shadow = 16 + 4 * bytes.div_ceil(32);
    if shadow > u32::MAX as u64 {
        u32::MAX
    } else {
        shadow as u32
    }
}

/// Adds init checks to every kernel of a bounds-checked module (the output of
/// [`crate::instrument::instrument_ptx_with`], race-checked or not: the reads report through
/// its fault record).
///
/// # Errors
/// [`PtxError`] when the text cannot be read as PTX.
pub fn init_ptx(ptx: &str) -> Result<InitPtx, PtxError> {
    init_ptx_with(ptx, &InitOptions::default())
}

/// [`init_ptx`] for launches that give `opts.dynamic_shared_bytes` of dynamic shared memory.
///
/// # Errors
/// As [`init_ptx`].
pub fn init_ptx_with(ptx: &str, opts: &InitOptions) -> Result<InitPtx, PtxError> {
    let m = read::parse(ptx)?;
    Ok(emit::emit(ptx, &m, opts))
}

/// A report for a person: per kernel, what is init-checked and what is not, and why.
pub fn render_init_report(file_name: &str, kernels: &[InitKernel]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{file_name}: init checking (reads of memory nothing wrote)"
    );
    for k in kernels {
        let c = &k.coverage;
        if let Some(why) = &c.not_checked {
            let _ = writeln!(
                out,
                "  kernel `{}`: not init-checked: {why}; its launches count what they may write as written",
                k.name
            );
            continue;
        }
        let _ = write!(
            out,
            "  kernel `{}`: {} read{} checked, {} write{} marked",
            k.name,
            c.checked,
            if c.checked == 1 { "" } else { "s" },
            c.marked,
            if c.marked == 1 { "" } else { "s" },
        );
        if let Some(why) = &c.shared_not_checked {
            let _ = write!(out, " (shared memory not checked: {why})");
        }
        if c.unchecked.is_empty() {
            let _ = writeln!(out, ", none left unchecked");
            continue;
        }
        let _ = writeln!(out, ", {} left unchecked:", c.unchecked.len());
        for u in &c.unchecked {
            crate::site::unchecked_line(&mut out, u.loc.as_ref(), &u.instruction, &u.reason);
        }
    }
    out
}

#[cfg(test)]
mod tests;
