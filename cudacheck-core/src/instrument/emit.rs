//! Writes the instrumented PTX: every decision of [`super::analyze`] becomes code here, in one
//! place.
//!
//! A checked access becomes
//!
//! ```text
//!     sub.s64       %__cc_o, ADDR, BASE;          // byte offset into the buffer
//!     setp.ge.u64   %__cc_p, %__cc_o, LIMIT;      // LIMIT = max(len - bytes + 1, 0)
//!     @%__cc_p bra  $__cc_cold7;                  // rarely taken
//!     <the access, unchanged>
//! $__cc_cont7:
//! ```
//!
//! where `BASE` is where the buffer starts: a parameter's value, or, with
//! [`InstrumentOptions::alloc_bases`], the start of the allocation it points into, passed in
//! the slot's `__cc_base_*` (so an index below the pointer is in bounds down to there). Every
//! check, precheck, shadow and record takes it from [`KernelEmitter::load_base`].
//!
//! A cold block at the end of the function records the fault (`__cc_fault`), zeroes what a
//! read would have produced and jumps back past the access, so an out-of-bounds access is
//! skipped and the context stays usable. `ptxas` then optimises the whole function, checks
//! included.
//!
//! An atomic or reduction on global memory is not branched around but *redirected*
//! ([`KernelEmitter::sink_redirect`]): a failed check sends its address to the module's sink
//! (`__cc_sink`, 16 bytes of global memory that hold nothing anyone reads), the atomic runs
//! there, and the branch to the cold block comes after it:
//!
//! ```text
//!     setp.ge.u64   %__cc_p, %__cc_o, LIMIT;
//!     mov.u64       %__cc_a64, __cc_sink;
//!     add.s64       %__cc_a64, %__cc_a64, -OFF;     // when the address is [REG+OFF]
//!     selp.b64      %__cc_a64, %__cc_a64, REG, %__cc_p;
//!     atom.global.add.u32 %r8, [%__cc_a64+OFF], %r7;
//!     @%__cc_p bra  $__cc_cold7;                  // records, zeroes %r8, comes back
//! $__cc_cont7:
//! ```
//!
//! With a branch before it, `ptxas` sinks a load whose only use is the atomic's operand
//! (`val[i]` of `atomicAdd(&out[idx[i]], val[i])`) below the branch, so it is issued only once
//! the index has been loaded and checked: two memory latencies in a row where the plain build
//! has one (`results/instrument_cost.md`, 2026-11-25 and 2026-11-26). The fault is recorded
//! exactly as by the branch form; the user's memory is not touched. Stores and shared-memory
//! atomics keep the branch: `ptxas` if-converts a checked store and kept the loads of a
//! checked shared atomic together, so a redirect gains nothing there (and a shared sink would
//! cost every block shared memory).
//!
//! A register that may point into several buffers (`p = in ? in : out`) carries two shadow
//! registers, its buffer's base and length, updated beside each of its definitions.
//!
//! In kernels with a loop and no barrier or warp collective, the body is then emitted twice
//! (`super::fast`): a fast copy whose failed checks jump into a slow copy, the code above, and
//! never come back, so that `ptxas` sees no merge from a cold path in the user's code.
//!
//! Everything written here is a list of [`Edits`] against NVRTC's text (after
//! `super::normalize`): code inserted before and after an access, an instruction replaced,
//! the prologue, declarations and hidden parameters, a versioned loop's copy (the loop's own
//! edits applied to the loop's text, its labels renamed by [`relabel`]). The module's text is
//! written once, by [`Edits::apply`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::analyze::{
    accesses, callees, decide, is_aggregate, provenance, Access, AccessKind, Decision, Origin,
    Prov, Provenance, Unchecked,
};
use super::coverage::{BufferSlot, Coverage, Site, SiteKind, Target, UncheckedAccess};
use super::fast;
use super::group::{groups, Group};
use super::guard::{Base, Guards};
use super::host_expr::{HostCheck, HostExpr};
use super::ptx::{Function, Guard, Instr, Loc, Module, Space, StmtKind};
use super::range::{ranges, Ranges};
use super::record::FaultKind;
use super::version::{self, Candidate, Versioned};
use super::{InstrumentOptions, InstrumentedKernel, InstrumentedPtx, WidestAccess};
use crate::ir::edit::{labels, relabel, Edits};
use crate::ir::{effects, Address, Arith, ArithOp, Facts, Op, Ty};
use crate::site::{callee, demangle, demangle_var, source_loc, SkipReason, SourceLoc};

/// The recording functions every instrumented module gets, after its header.
const RUNTIME: &str = r#"
// ---- cudacheck bounds checking: fault recording (see cudacheck_core::instrument) ----
.func __cc_assertfail(.param .b64 __cc_msg, .param .b64 __cc_file, .param .b32 __cc_line, .param .b64 __cc_fn, .param .b64 __cc_cs, .param .b64 __cc_rec, .param .b32 __cc_site)
{
	.reg .b64 %a<6>;
	.reg .b32 %b<12>;
	.reg .b16 %h<2>;
	.reg .pred %q<3>;
	ld.param.u64 %a0, [__cc_rec];
	cvta.to.global.u64 %a1, %a0;
	atom.global.add.u32 %b0, [%a1+4], 1;
	atom.global.cas.b32 %b1, [%a1], 0, 1;
	setp.ne.u32 %q0, %b1, 0;
	@%q0 bra $__cc_adone;
	ld.param.u32 %b2, [__cc_site];
	st.global.u32 [%a1+8], %b2;
	mov.u32 %b3, 5;
	st.global.u32 [%a1+12], %b3;
	mov.u32 %b4, %ctaid.x;
	st.global.u32 [%a1+32], %b4;
	mov.u32 %b5, %ctaid.y;
	st.global.u32 [%a1+36], %b5;
	mov.u32 %b6, %ctaid.z;
	st.global.u32 [%a1+40], %b6;
	mov.u32 %b7, %tid.x;
	st.global.u32 [%a1+44], %b7;
	mov.u32 %b8, %tid.y;
	st.global.u32 [%a1+48], %b8;
	mov.u32 %b9, %tid.z;
	st.global.u32 [%a1+52], %b9;
	ld.param.u32 %b10, [__cc_line];
	st.global.u32 [%a1+56], %b10;
	ld.param.u64 %a2, [__cc_msg];
	mov.u32 %b11, 0;
$__cc_copy:
	setp.ge.u32 %q1, %b11, 63;
	@%q1 bra $__cc_adone;
	cvt.u64.u32 %a3, %b11;
	add.s64 %a4, %a2, %a3;
	ld.u8 %h0, [%a4];
	add.s64 %a5, %a1, %a3;
	st.global.u8 [%a5+64], %h0;
	setp.eq.u16 %q2, %h0, 0;
	@%q2 bra $__cc_adone;
	add.u32 %b11, %b11, 1;
	bra $__cc_copy;
$__cc_adone:
	ret;
}
"#;

/// The module's sink: where a redirected atomic whose check failed goes instead of the user's
/// memory. Module-scope `.global` without a linking directive, so local to the module (each
/// loaded module has its own); its bytes are garbage that nothing reads. Aligned for the widest
/// atomic (16 bytes: `.b128`, `.v4.f32`, `.v8.f16`).
const SINK: &str = "__cc_sink";
const SINK_BYTES: u64 = 16;

/// Rewrites `m` (whose text is `text`).
pub(crate) fn emit(text: &str, m: &Module, opts: &InstrumentOptions) -> InstrumentedPtx {
    let mut body = Edits::new();
    let mut kernels = Vec::new();
    let mut next_site = 0u32;
    let mut sink = false;

    // Which entries reach which non-inlined functions (their accesses count against the entry).
    let funcs: BTreeMap<&str, &Function> =
        m.functions.iter().map(|f| (f.name.as_str(), f)).collect();

    for f in &m.functions {
        if !f.entry {
            continue;
        }
        let mut k = KernelEmitter::new(text, m, f, opts, &mut next_site);
        let (e, kernel) = k.run(&funcs);
        sink |= k.sink;
        kernels.push(kernel);
        body.append(e);
    }
    let mut runtime = RUNTIME.to_string();
    if sink {
        let _ = writeln!(
            runtime,
            ".global .align {SINK_BYTES} .b8 {SINK}[{SINK_BYTES}];"
        );
    }
    let mut edits = Edits::new();
    edits.insert(m.header_end, runtime);
    edits.append(body);
    InstrumentedPtx {
        ptx: edits.apply(text),
        kernels,
    }
}

/// What one kernel's instrumentation keeps in registers: the shadows (base, length) of
/// registers that may point into several buffers, `%__cc_sb<i>` and `%__cc_sl<i>`. Everything
/// else (bases, lengths, limits) is loaded at the check from the parameter space, where ptxas
/// folds it into constant-bank operands: values computed once in a prologue stay live in
/// registers through the whole kernel (a `float4` copy went from 14 to 30 registers).
#[derive(Default)]
struct Needs {
    shadows: BTreeMap<String, usize>,
}

/// A length: a constant, or code computing it and the register it leaves it in.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Len {
    Const(u64),
    Code(String, String),
}

impl Len {
    /// The code to run first (empty for a constant) and the operand.
    fn parts(&self) -> (String, String) {
        match self {
            Len::Const(c) => (String::new(), c.to_string()),
            Len::Code(code, reg) => (code.clone(), reg.clone()),
        }
    }

    /// The 64-bit check's limit for an access of `bytes`: an offset at or above
    /// `max(len - bytes + 1, 0)` is out of bounds. The code to run first (leaving it in the
    /// 64-bit register `dst` when the length is not a constant) and the operand.
    fn limit64(&self, bytes: u64, dst: &str) -> (String, String) {
        match self {
            Len::Const(c) => (String::new(), (c + 1).saturating_sub(bytes).to_string()),
            Len::Code(code, reg) => (
                format!(
                    "{code}add.s64 {dst}, {reg}, {};\n\tmax.s64 {dst}, {dst}, 0;\n\t",
                    1 - bytes as i64
                ),
                dst.to_string(),
            ),
        }
    }
}

/// Device-checked accesses a versioned loop may hoist, by (statement, operand).
type Candidates = BTreeMap<(usize, usize), Candidate>;

struct KernelEmitter<'a> {
    text: &'a str,
    m: &'a Module,
    f: &'a Function,
    prov: Provenance,
    ranges: Ranges<'a>,
    opts: &'a InstrumentOptions,
    needs: Needs,
    next_site: &'a mut u32,
    sites: Vec<Site>,
    coverage: Coverage,
    cold: String,
    /// Accesses checked on the host instead (`guard.rs`), by (statement, operand), and the
    /// statement `instr` is looking at (`usize::MAX` in a group's slow copy).
    host: BTreeMap<(usize, usize), HostExpr>,
    host_checks: Vec<HostCheck>,
    /// Of `host`, the accesses this build leaves to the host: all but those the launch moved
    /// back to the device ([`InstrumentOptions::on_device`], by position; see
    /// [`Self::device_checks`]).
    on_host: BTreeSet<(usize, usize)>,
    stmt: usize,
    /// Some atomic was redirected to the module's sink ([`SINK`]), which must be declared.
    sink: bool,
    /// Accesses of versioned loops checked before the loop (`version.rs`), by (statement,
    /// operand); whether `instr` is emitting a statement of such a loop, and then what the
    /// loop's fast copy gets for it (before, replacement, after).
    hoist: BTreeSet<(usize, usize)>,
    in_loop: bool,
    fast_parts: Option<(String, Option<String>, String)>,
    /// The prechecks' temporaries (`%__cc_h<n>`).
    version_regs: u32,
    /// The function's facts (graph, definitions map, loops, register types: `crate::ir`),
    /// built once here and read by every analysis: provenance, the guard analysis, loop
    /// versioning.
    facts: Facts<'a>,
    /// With [`InstrumentOptions::alloc_bases`], the buffer slots whose length or base the
    /// emitted code reads ([`Self::load_base`], [`Self::load_len`]): each needs its hidden
    /// parameters declared ([`Self::slots`]).
    used_slots: std::cell::RefCell<BTreeSet<BufferSlot>>,
}

impl<'a> KernelEmitter<'a> {
    fn new(
        text: &'a str,
        m: &'a Module,
        f: &'a Function,
        opts: &'a InstrumentOptions,
        next_site: &'a mut u32,
    ) -> Self {
        let facts = Facts::new(f);
        let prov = provenance(m, &facts, opts);
        let ranges = ranges(m, f, &prov, opts);
        KernelEmitter {
            text,
            m,
            f,
            prov,
            ranges,
            opts,
            needs: Needs::default(),
            next_site,
            sites: Vec::new(),
            coverage: Coverage::default(),
            cold: String::new(),
            host: BTreeMap::new(),
            host_checks: Vec::new(),
            on_host: BTreeSet::new(),
            stmt: usize::MAX,
            sink: false,
            hoist: BTreeSet::new(),
            in_loop: false,
            fast_parts: None,
            version_regs: 0,
            facts,
            used_slots: std::cell::RefCell::new(BTreeSet::new()),
        }
    }

    fn site_loc(&self, loc: Option<Loc>) -> (Option<SourceLoc>, Option<SourceLoc>) {
        match loc {
            Some(l) if l.line > 0 => (
                Some(source_loc(self.m, l.file, l.line, l.column)),
                l.inlined_at.map(|(f, li, c)| source_loc(self.m, f, li, c)),
            ),
            _ => (None, None),
        }
    }

    /// This kernel's edits and its description.
    fn run(&mut self, funcs: &BTreeMap<&str, &Function>) -> (Edits, InstrumentedKernel) {
        let f = self.f;
        // Registers that may point into several buffers get shadows.
        for (reg, p) in &self.prov.regs {
            if let Prov::Ptr(s) = p {
                if s.len() > 1 && self.reg_bits(reg) == 64 {
                    let n = self.needs.shadows.len();
                    self.needs.shadows.insert(reg.clone(), n);
                }
            }
        }

        let mut groups = groups(
            self.m,
            f,
            &self.prov,
            &self.ranges,
            self.opts,
            &self.needs.shadows,
        );
        if self.opts.host_checks {
            // A group whose every access is checked on the host needs no range check; in the
            // others, accesses keep the group's check.
            let host = self.host_checked();
            groups.retain(|g| !self.all_host_checked(g, &host));
            self.host = host
                .into_iter()
                .filter(|((k, _), _)| !groups.iter().any(|g| (g.first..=g.last).contains(k)))
                .collect();
        }
        let (candidates, on_host) = self.device_checks(&groups);
        self.on_host = on_host;
        let versioned = if self.opts.keep_loop_checks {
            Vec::new()
        } else {
            version::plan(&self.facts, &candidates)
        };
        self.hoist = versioned
            .iter()
            .flat_map(|v| v.hoisted.iter().flat_map(|h| h.members.iter().copied()))
            .collect();
        let mut body = Edits::new();
        for (n, v) in versioned.iter().enumerate() {
            let code = self.precheck(n, v);
            body.insert(f.stmts[v.insert_before].span.start, code);
        }
        let mut loops = versioned.iter().enumerate().peekable();
        // The loop being emitted, and its fast copy's edits so far (against the loop's text).
        let mut current: Option<(usize, &Versioned, Edits)> = None;
        let mut groups = groups.into_iter().peekable();
        let mut loc: Option<Loc> = None;
        let mut depth = 0usize;
        let mut k = 0;
        while k < f.stmts.len() {
            let s = &f.stmts[k];
            k += 1;
            if let Some((n, v)) = loops.next_if(|(_, v)| v.first == k - 1) {
                current = Some((n, v, Edits::new()));
            }
            self.in_loop = current.is_some();
            if groups.peek().is_some_and(|g| g.first == k - 1) {
                let g = groups.next().expect("peeked");
                let (check, join) = self.group(&g, &mut loc);
                if let Some((_, _, fast)) = current.as_mut() {
                    // The fast copy checks the group too unless the loop's precheck covers
                    // it; a failed check's exact copy goes on in the checked loop (its join).
                    if self.hoist.contains(&(k - 1, version::GROUP)) {
                        self.coverage.hoisted += g.members as u32;
                    } else {
                        fast.insert(s.span.start, check.clone());
                    }
                }
                body.insert(s.span.start, check);
                body.insert(f.stmts[g.last].span.end, join);
                k = g.last + 1;
            } else {
                match &s.kind {
                    StmtKind::Loc(l) => loc = Some(*l),
                    StmtKind::Open => depth += 1,
                    StmtKind::Close => depth = depth.saturating_sub(1),
                    StmtKind::Instr(i) => {
                        self.stmt = k - 1;
                        let (before, replace, after) = self.instr(i, loc, depth > 0);
                        self.stmt = usize::MAX;
                        if let (Some((_, _, fast)), Some((b, r, a))) =
                            (current.as_mut(), self.fast_parts.take())
                        {
                            edit_instr(fast, s.span.clone(), b, r, a);
                        }
                        edit_instr(&mut body, s.span.clone(), before, replace, after);
                    }
                    _ => {}
                }
            }
            if current.as_ref().is_some_and(|(_, v, _)| k > v.last) {
                // The fast copy: the loop's text with its edits, its labels renamed.
                let (n, v, mut fast) = current.take().expect("checked");
                let stmts = &f.stmts[v.first..=v.last];
                let names = labels(stmts);
                relabel(
                    self.text,
                    stmts,
                    |l| names.contains(l).then(|| format!("{l}__v{n}")),
                    &mut fast,
                );
                let range = stmts[0].span.start..f.stmts[v.last].span.end;
                let fast = fast.render(self.text, range);
                body.insert(
                    f.stmts[v.last].span.end,
                    format!(
                        "\n\tbra.uni $__cc_vexit{n};\n\t// ---- cudacheck: the loop without its hoisted checks ----\n$__cc_vfast{n}:\n\t{fast}\n$__cc_vexit{n}:"
                    ),
                );
                self.coverage.versioned_loops += 1;
            }
        }
        self.in_loop = false;
        self.unchecked_in_callees(funcs);

        // The prologue goes before the first instruction or label, after the declarations
        // (the local depot and demoted shared arrays must be declared before their use).
        let first = f
            .stmts
            .iter()
            .find(|s| matches!(s.kind, StmtKind::Instr(_) | StmtKind::Label(_)))
            .map_or(f.body_close, |s| s.span.start);

        let cold = std::mem::take(&mut self.cold);
        let mut edits = Edits::new();
        edits.insert(f.params_close, self.hidden_params());
        edits.insert(f.body_open, self.declarations());
        edits.insert(first, self.prologue());
        // Where failed checks can leave for good, the body after the prologue becomes a fast
        // and a slow copy (`fast`): the body's edits applied to its text, then copied.
        let copies = fast::applies(f)
            .then(|| fast::copies(&body.render(self.text, first..f.body_close), &cold))
            .flatten();
        match copies {
            Some(copies) => edits.replace(first..f.body_close, copies),
            None => {
                edits.append(body);
                edits.insert(f.body_close, cold);
            }
        }

        let name = demangle(&f.name);
        let kernel = InstrumentedKernel {
            symbol: f.name.clone(),
            name,
            num_params: f.params.len() as u32,
            sites: std::mem::take(&mut self.sites),
            coverage: std::mem::take(&mut self.coverage),
            host_checks: std::mem::take(&mut self.host_checks),
            widest: self.widest(),
            races: None,
            init: None,
            alloc_bases: self.opts.alloc_bases,
            slots: self.slots(),
        };
        (edits, kernel)
    }

    /// The accesses (and groups) this build checks on the device against one buffer: what a
    /// versioned loop may hoist (`version.rs`); and the host-checkable accesses it leaves to
    /// the host. A host check's position, by which a launch moves it back to the device
    /// ([`InstrumentOptions::on_device`]), is its place in this walk: statements in order,
    /// outside groups, each instruction's accesses in order, the order `instr` emits them in.
    fn device_checks(&self, groups: &[Group]) -> (Candidates, BTreeSet<(usize, usize)>) {
        let mut out = BTreeMap::new();
        let mut on_host = BTreeSet::new();
        let mut position = 0usize;
        let mut k = 0;
        while k < self.f.stmts.len() {
            if let Some(g) = groups.iter().find(|g| g.first == k) {
                let c = Candidate {
                    origin: g.origin.clone(),
                    bytes: (g.end - g.min) as u64,
                    group: Some((g.reg.clone(), g.min)),
                    redirected: false,
                };
                out.insert((k, version::GROUP), c);
                k = g.last + 1;
                continue;
            }
            let Some(i) = self.f.instr(k) else {
                k += 1;
                continue;
            };
            for a in accesses(i).unwrap_or_default() {
                let d = decide(self.m, self.f, &self.prov, &self.ranges, self.opts, i, &a);
                let redirected = self.sinks(i, &a, &d);
                let Decision::Check(o) = d else { continue };
                if self.host.contains_key(&(k, a.operand)) {
                    let moved = self.opts.on_device.contains(position);
                    position += 1;
                    if !moved {
                        on_host.insert((k, a.operand));
                        continue;
                    }
                }
                if a.lanes.is_none() {
                    let c = Candidate {
                        origin: o,
                        bytes: a.bytes,
                        group: None,
                        redirected,
                    };
                    out.insert((k, a.operand), c);
                }
            }
            k += 1;
        }
        (out, on_host)
    }

    /// The check before versioned loop `n`: the fast copy when every hoisted access passes.
    fn precheck(&mut self, n: usize, v: &Versioned) -> String {
        let mut g = version::Gen::new();
        let base = |o: &Origin, dst: &str| self.load_base(o, 64, dst, "");
        let limit =
            |o: &Origin, bytes: u64, dst: &str| self.load_len(o, dst, "").limit64(bytes, dst);
        g.precheck(v, &base, &limit);
        self.version_regs = self.version_regs.max(g.regs);
        format!(
            "// ---- cudacheck: the loop's hoisted checks ----\n\t{}@!%__cc_hf bra $__cc_vfast{n};\n\t",
            g.code
        )
    }

    /// Per buffer parameter, its widest access (every access whose address provably comes
    /// from the parameter alone, whatever its check), for the launch's alignment check.
    fn widest(&self) -> Vec<WidestAccess> {
        let mut out: BTreeMap<u32, WidestAccess> = BTreeMap::new();
        let mut loc = None;
        for s in &self.f.stmts {
            let i = match &s.kind {
                StmtKind::Loc(l) => {
                    loc = Some(*l);
                    continue;
                }
                StmtKind::Instr(i) => i,
                _ => continue,
            };
            let Ok(acc) = accesses(i) else { continue };
            for a in acc
                .iter()
                .filter(|a| a.bytes.is_power_of_two() && a.bytes > 1)
            {
                // (Text that is not PTX may name an access's operand and not write it.)
                let Some(addr) = i.operands.get(a.operand).and_then(|o| Address::parse(o)) else {
                    continue;
                };
                let Prov::Ptr(origins) = self.prov.of(addr.base) else {
                    continue;
                };
                // The launch compares a plain parameter's own address (a struct field's is
                // not an argument it sees).
                let [Origin::Param {
                    index, offset: 0, ..
                }] = origins.iter().collect::<Vec<_>>()[..]
                else {
                    continue;
                };
                if is_aggregate(&self.f.params[*index as usize]) {
                    continue;
                }
                let bytes = a.bytes as u32;
                if out.get(index).map_or(true, |w| w.bytes < bytes) {
                    out.insert(
                        *index,
                        WidestAccess {
                            param: *index,
                            bytes,
                            loc: self.site_loc(loc).0,
                        },
                    );
                }
            }
        }
        out.into_values().collect()
    }

    /// The accesses outside groups whose check the launch can make on the host (`guard.rs`):
    /// global accesses checked against one buffer parameter, whose offset the guard analysis
    /// expresses.
    fn host_checked(&self) -> BTreeMap<(usize, usize), HostExpr> {
        let mut out = BTreeMap::new();
        let Some(g) = Guards::new(&self.facts) else {
            return out;
        };
        for (k, s) in self.f.stmts.iter().enumerate() {
            let StmtKind::Instr(i) = &s.kind else {
                continue;
            };
            let Ok(acc) = accesses(i) else { continue };
            for a in &acc {
                let d = decide(self.m, self.f, &self.prov, &self.ranges, self.opts, i, a);
                let base = match &d {
                    // A plain pointer parameter: the launch knows the bytes from its value to
                    // its buffer's end (`LaunchValues::lens`), none for a struct's field.
                    Decision::Check(Origin::Param {
                        index,
                        offset: 0,
                        space: Space::Global,
                    }) if !is_aggregate(&self.f.params[*index as usize]) => Base::Param(*index),
                    // A fixed-size array: its size is known here, no launch value needed.
                    Decision::Check(Origin::Var { name, .. })
                        if self.m.var(self.f, name).and_then(|v| v.bytes).is_some() =>
                    {
                        Base::Var(name)
                    }
                    _ => continue,
                };
                if let Some(e) = g.access_offset(k, &i.operands[a.operand], base) {
                    out.insert((k, a.operand), e);
                }
            }
        }
        out
    }

    /// Whether every access of group `g` that would be checked is in `host`.
    fn all_host_checked(&self, g: &Group, host: &BTreeMap<(usize, usize), HostExpr>) -> bool {
        (g.first..=g.last).all(|k| {
            let StmtKind::Instr(i) = &self.f.stmts[k].kind else {
                return true;
            };
            let Ok(acc) = accesses(i) else { return true };
            acc.iter().all(|a| {
                match decide(self.m, self.f, &self.prov, &self.ranges, self.opts, i, a) {
                    Decision::Check(_) | Decision::CheckShadow { .. } => {
                        host.contains_key(&(k, a.operand))
                    }
                    _ => true,
                }
            })
        })
    }

    fn unchecked_in_callees(&mut self, funcs: &BTreeMap<&str, &Function>) {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = callees(self.f).into_iter().collect();
        while let Some(name) = todo.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some(g) = funcs.get(name.as_str()) else {
                continue;
            };
            todo.extend(callees(g));
            let mut loc = None;
            for s in &g.stmts {
                match &s.kind {
                    StmtKind::Loc(l) => loc = Some(*l),
                    StmtKind::Instr(i) => {
                        let n = match accesses(i) {
                            Ok(a) => a.len(),
                            Err(_) => 1,
                        };
                        for _ in 0..n {
                            let (l, at) = self.site_loc(loc);
                            self.coverage.unchecked.push(UncheckedAccess {
                                loc: l,
                                inlined_at: at,
                                instruction: i.opcode.clone(),
                                reason: SkipReason::NotInlined {
                                    function: demangle(&g.name),
                                },
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn reg_bits(&self, reg: &str) -> u32 {
        self.facts
            .reg_ty(reg)
            .and_then(Ty::bytes)
            .map_or(64, |b| (b * 8) as u32)
    }

    fn hidden_params(&self) -> String {
        let mut s = String::new();
        let n = self.f.params.len();
        if self.opts.alloc_bases {
            // A length per slot, a base per slot, the record (`InstrumentOptions::alloc_bases`).
            let slots = self.slots();
            let names = slots
                .iter()
                .map(|sl| slot_param("len", *sl))
                .chain(slots.iter().map(|sl| slot_param("base", *sl)))
                .chain(std::iter::once("__cc_rec".to_string()));
            for (k, name) in names.enumerate() {
                let sep = if k == 0 && n == 0 { "" } else { "," };
                let _ = write!(s, "{sep}\n\t.param .u64 {name}");
            }
            s.push('\n');
            return s;
        }
        for k in 0..n {
            let sep = if k == 0 && n == 0 { "" } else { "," };
            let _ = write!(s, "{sep}\n\t.param .u64 __cc_len_{k}");
        }
        let sep = if n == 0 { "" } else { "," };
        let _ = write!(s, "{sep}\n\t.param .u64 __cc_rec\n");
        s
    }

    fn declarations(&self) -> String {
        let mut s = String::from(
            "\n\t.reg .b64 %__cc_o, %__cc_t, %__cc_u, %__cc_r, %__cc_a64, %__cc_m;\n\t.reg .b32 %__cc_o32, %__cc_x, %__cc_y, %__cc_a32, %__cc_m32;\n\t.reg .pred %__cc_p, %__cc_q, %__cc_v;",
        );
        if self.version_regs > 0 {
            let _ = write!(
                s,
                "\n\t.reg .b64 %__cc_h<{}>;\n\t.reg .pred %__cc_hf;",
                self.version_regs
            );
        }
        let c = self.needs.shadows.len();
        if c > 0 {
            let _ = write!(
                s,
                "\n\t.reg .b64 %__cc_sb<{c}>;\n\t.reg .b64 %__cc_sl<{c}>;"
            );
        }
        s.push('\n');
        s
    }

    fn prologue(&self) -> String {
        let mut s = String::new();
        for &i in self.needs.shadows.values() {
            let _ = write!(s, "mov.u64 %__cc_sb{i}, 0;\n\tmov.u64 %__cc_sl{i}, 0;\n\t");
        }
        s
    }

    /// With [`InstrumentOptions::alloc_bases`], the buffer slots of this kernel, in the order
    /// of their hidden parameters: `(k, 0)` for every parameter, then (sorted in) every other
    /// slot the emitted code reads.
    fn slots(&self) -> Vec<BufferSlot> {
        if !self.opts.alloc_bases {
            return Vec::new();
        }
        let mut all = self.used_slots.borrow().clone();
        all.extend((0..self.f.params.len() as u32).map(|param| BufferSlot { param, offset: 0 }));
        all.into_iter().collect()
    }

    /// The slot of a parameter origin, noted as used when the build takes slots.
    fn use_slot(&self, index: u32, offset: u32) -> BufferSlot {
        let slot = BufferSlot {
            param: index,
            offset,
        };
        if self.opts.alloc_bases {
            self.used_slots.borrow_mut().insert(slot);
        }
        slot
    }

    /// Code leaving `o`'s base address in `dst` (a `bits`-wide register), under guard `g`.
    ///
    /// The one place deciding what an offset into a parameter's buffer is measured from: the
    /// argument itself (the buffer starts where the pointer points), or, with
    /// [`InstrumentOptions::alloc_bases`], the start of the allocation the pointer points into,
    /// which the launch passes in the slot's hidden base (a view may index below its pointer).
    /// Either is a generic address, converted like the parameter for a global-space check.
    fn load_base(&self, o: &Origin, bits: u32, dst: &str, g: &str) -> String {
        match o {
            Origin::Param {
                index,
                offset,
                space,
            } => {
                let slot = self.use_slot(*index, *offset);
                let p = if self.opts.alloc_bases {
                    slot_param("base", slot)
                } else {
                    let name = &self.f.params[*index as usize].name;
                    match offset {
                        0 => name.clone(),
                        k => format!("{name}+{k}"),
                    }
                };
                let mut s = format!("{g}ld.param.u64 {dst}, [{p}];\n\t");
                if *space == Space::Global {
                    let _ = write!(s, "{g}cvta.to.global.u64 {dst}, {dst};\n\t");
                }
                s
            }
            Origin::Var { name, space } => {
                if bits == 32 {
                    return format!("{g}mov.u32 {dst}, {name};\n\t");
                }
                let mut s = format!("{g}mov.u64 {dst}, {name};\n\t");
                if *space == Space::Generic {
                    let vs = self.m.var(self.f, name).map_or(Space::Shared, |v| v.space);
                    let _ = write!(s, "{g}cvta.{}.u64 {dst}, {dst};\n\t", vs.name());
                }
                s
            }
        }
    }

    /// `o`'s length in bytes: a constant, or code leaving it in the 64-bit register `dst`.
    fn load_len(&self, o: &Origin, dst: &str, g: &str) -> Len {
        match o {
            Origin::Param { index, offset, .. } => {
                let len = slot_param("len", self.use_slot(*index, *offset));
                Len::Code(
                    format!("{g}ld.param.u64 {dst}, [{len}];\n\t"),
                    dst.to_string(),
                )
            }
            Origin::Var { name, .. } => match self.m.var(self.f, name).and_then(|v| v.bytes) {
                Some(b) => Len::Const(b),
                None => Len::Code(
                    format!(
                        "{g}mov.u32 %__cc_y, %dynamic_smem_size;\n\t{g}cvt.u64.u32 {dst}, %__cc_y;\n\t"
                    ),
                    dst.to_string(),
                ),
            },
        }
    }

    fn target_of(&self, o: &Origin) -> Target {
        match o {
            Origin::Param { index, offset, .. }
                if *offset != 0 || is_aggregate(&self.f.params[*index as usize]) =>
            {
                Target::Field(BufferSlot {
                    param: *index,
                    offset: *offset,
                })
            }
            Origin::Param { index, .. } => Target::Param(*index),
            Origin::Var { name, .. } => Target::Var(demangle_var(name)),
        }
    }

    fn new_site(&mut self, loc: Option<Loc>, target: Target, kind: SiteKind, bytes: u64) -> u32 {
        let id = *self.next_site;
        *self.next_site += 1;
        let (l, at) = self.site_loc(loc);
        self.sites.push(Site {
            id,
            loc: l,
            inlined_at: at,
            target,
            kind,
            bytes: bytes as u32,
        });
        id
    }

    /// The check before a group's segment, and the join label after it; the segment's exact
    /// copy goes to the function's end (see [`super::group`]).
    fn group(&mut self, g: &Group, loc: &mut Option<Loc>) -> (String, String) {
        let n = g.first;
        let span = (g.end - g.min) as u64;
        let bits = self.reg_bits(&g.reg);
        let mut c = String::new();
        let len = self.load_len(&g.origin, "%__cc_t", "");
        let keep = 1 - span as i64;
        if bits == 32 {
            c.push_str(&self.load_base(&g.origin, 32, "%__cc_x", ""));
            let _ = write!(c, "sub.s32 %__cc_o32, {}, %__cc_x;\n\t", g.reg);
            if g.min != 0 {
                let _ = write!(c, "add.s32 %__cc_o32, %__cc_o32, {};\n\t", g.min);
            }
            match &len {
                Len::Const(l) => {
                    let lim = (l + 1).saturating_sub(span).min(u64::from(u32::MAX));
                    let _ = write!(c, "setp.ge.u32 %__cc_p, %__cc_o32, {lim};\n\t");
                }
                Len::Code(..) => {
                    let _ = write!(
                        c,
                        "mov.u32 %__cc_x, %dynamic_smem_size;\n\tadd.s32 %__cc_x, %__cc_x, {keep};\n\tmax.s32 %__cc_x, %__cc_x, 0;\n\tsetp.ge.u32 %__cc_p, %__cc_o32, %__cc_x;\n\t"
                    );
                }
            }
        } else {
            c.push_str(&self.load_base(&g.origin, 64, "%__cc_u", ""));
            let _ = write!(c, "sub.s64 %__cc_o, {}, %__cc_u;\n\t", g.reg);
            if g.min != 0 {
                let _ = write!(c, "add.s64 %__cc_o, %__cc_o, {};\n\t", g.min);
            }
            let (code, lim) = len.limit64(span, "%__cc_u");
            let _ = write!(c, "{code}setp.ge.u64 %__cc_p, %__cc_o, {lim};\n\t");
        }
        let _ = write!(c, "@%__cc_p bra $__cc_slow{n};\n\t");
        // The exact copy: every statement of the segment, each access with its own check.
        let mut slow = format!("\n$__cc_slow{n}:\n\t");
        for s in &self.f.stmts[g.first..=g.last] {
            let text = &self.text[s.span.clone()];
            match &s.kind {
                StmtKind::Loc(l) => {
                    *loc = Some(*l);
                    let _ = write!(slow, "{text}\n\t");
                }
                StmtKind::Instr(i) => {
                    let (before, replace, after) = self.instr(i, *loc, false);
                    let text = replace.as_deref().unwrap_or(text);
                    let _ = write!(slow, "{before}{text}{after}\n\t");
                }
                _ => unreachable!("segments hold instructions and .loc lines only"),
            }
        }
        let _ = writeln!(slow, "bra $__cc_join{n};");
        self.cold.push_str(&slow);
        self.coverage.grouped += g.members as u32;
        self.coverage.group_checks += 1;
        (c, format!("\n$__cc_join{n}:"))
    }

    /// Code before an instruction, a replacement for it, and code after it.
    ///
    /// `nested`: the instruction sits in a `{ }` scope (inline assembly), whose labels the
    /// function's end cannot reach, so its cold path goes right after it.
    fn instr(
        &mut self,
        i: &Instr,
        loc: Option<Loc>,
        nested: bool,
    ) -> (String, Option<String>, String) {
        let mut before = String::new();
        let mut after = String::new();
        let guard = i.guard.clone();
        let g = crate::ir::read::guard_text(&guard);

        if matches!(i.op, Op::Call { .. }) && callee(i) == Some("__assertfail") {
            let site = self.new_site(loc, Target::Assert, SiteKind::Assert, 0);
            let args = i
                .operands
                .last()
                .map(|a| {
                    a.trim()
                        .trim_start_matches('(')
                        .trim_end_matches(')')
                        .trim()
                })
                .unwrap_or("");
            let r = format!(
                "ld.param.u64 %__cc_r, [__cc_rec];\n\t.param .b64 __cc_a0;\n\tst.param.b64 [__cc_a0], %__cc_r;\n\t.param .b32 __cc_a1;\n\tst.param.b32 [__cc_a1], {site};\n\t{g}call __cc_assertfail, ({args}, __cc_a0, __cc_a1);\n\t{g}exit;"
            );
            return (before, Some(r), after);
        }

        // A collective access's instruction, rewritten to read the address a failed check chose.
        let mut replace: Option<String> = None;
        // What a versioned loop's fast copy gets: the checks of the accesses not hoisted.
        let mut fast_before = String::new();
        let mut fast_replace: Option<String> = None;
        let mut fast_exits = String::new();
        match accesses(i) {
            Err(why) => self.skip(i, loc, why),
            Ok(acc) => {
                let mut cont: Option<String> = None;
                let mut inline_cold = String::new();
                let mut exits = String::new();
                for a in &acc {
                    let hoisted = self.hoist.contains(&(self.stmt, a.operand));
                    let d = decide(self.m, self.f, &self.prov, &self.ranges, self.opts, i, a);
                    let on_host = matches!(d, Decision::Check(_))
                        && self.on_host.contains(&(self.stmt, a.operand));
                    match d {
                        Decision::Proven => self.coverage.proven += 1,
                        Decision::Unchecked(why) => self.skip(i, loc, why),
                        Decision::Check(ref o) if on_host => {
                            let offset = self.host[&(self.stmt, a.operand)].clone();
                            let (l, at) = self.site_loc(loc);
                            let (param, array_bytes) = match o {
                                Origin::Param { index, .. } => (*index, None),
                                Origin::Var { name, .. } => {
                                    (u32::MAX, self.m.var(self.f, name).and_then(|v| v.bytes))
                                }
                            };
                            self.host_checks.push(HostCheck {
                                param,
                                array_bytes,
                                bytes: a.bytes as u32,
                                kind: site_kind(a.kind),
                                loc: l,
                                inlined_at: at,
                                offset,
                            });
                            self.coverage.host_checked += 1;
                        }
                        Decision::CheckShadow { .. } | Decision::Check(Origin::Param { .. })
                            if a.lanes.is_some() =>
                        {
                            // A collective's failed check redirects the lane's address to the
                            // start of its array: that needs one array (no shadow), in the
                            // instruction's own space.
                            self.skip(
                                i,
                                loc,
                                Unchecked::Collective {
                                    op: i.opcode.clone(),
                                },
                            );
                        }
                        d @ (Decision::Check(_) | Decision::CheckShadow { .. }) => {
                            let label = cont
                                .get_or_insert_with(|| format!("$__cc_cont{}", *self.next_site))
                                .clone();
                            let (mut check, cold, site) = self.check(i, a, &d, loc, &guard, &label);
                            let mut exit = String::new();
                            match (a.lanes, &d) {
                                (Some(lanes), Decision::Check(o @ Origin::Var { .. })) => {
                                    let (redirect, instr) = self.redirect(i, a, lanes, o);
                                    check.push_str(&redirect);
                                    replace = Some(instr);
                                    let _ = write!(exit, "\n\t@%__cc_p bra $__cc_cold{site};");
                                }
                                (None, _) if self.sinks(i, a, &d) => {
                                    let (redirect, instr) = self.sink_redirect(i, a, &d);
                                    check.push_str(&redirect);
                                    replace = Some(instr);
                                    self.sink = true;
                                    let _ = write!(exit, "\n\t@%__cc_p bra $__cc_cold{site};");
                                }
                                _ => {
                                    let _ = write!(check, "@%__cc_p bra $__cc_cold{site};\n\t");
                                }
                            }
                            if hoisted {
                                self.coverage.hoisted += 1;
                            } else {
                                fast_before.push_str(&check);
                                fast_exits.push_str(&exit);
                                if !exit.is_empty() {
                                    fast_replace.clone_from(&replace);
                                }
                            }
                            exits.push_str(&exit);
                            before.push_str(&check);
                            if nested {
                                inline_cold.push_str(&cold);
                            } else {
                                self.cold.push_str(&cold);
                            }
                            self.coverage.checked += 1;
                        }
                    }
                }
                after.push_str(&exits);
                if let Some(label) = cont {
                    // (The fast copy's cold paths go on in the checked loop: no label there.)
                    if !inline_cold.is_empty() {
                        let _ = write!(after, "\n\tbra {label};{inline_cold}");
                    }
                    let _ = write!(after, "\n{label}:");
                }
            }
        }

        // Shadow updates after a definition of a shadowed register.
        if let Some(d) = i.operands.first().map(|d| d.trim()) {
            if let Some(&si) = self.needs.shadows.get(d) {
                if effects(i).defs.contains(&d) {
                    let update = self.shadow_update(i, si, &g);
                    after.push_str(&update);
                    fast_exits.push_str(&update);
                }
            }
        }
        if self.in_loop {
            self.fast_parts = Some((fast_before, fast_replace, fast_exits));
        }
        (before, replace, after)
    }

    fn skip(&mut self, i: &Instr, loc: Option<Loc>, why: Unchecked) {
        let (l, at) = self.site_loc(loc);
        self.coverage.unchecked.push(UncheckedAccess {
            loc: l,
            inlined_at: at,
            instruction: i.opcode.clone(),
            reason: SkipReason::from(why),
        });
    }

    /// The check of one access, and its cold block.
    fn check(
        &mut self,
        i: &Instr,
        a: &Access,
        d: &Decision,
        loc: Option<Loc>,
        guard: &Option<Guard>,
        cont: &str,
    ) -> (String, String, u32) {
        let addr = Address::parse(&i.operands[a.operand]).expect("decided accesses have addresses");
        let sym = !addr.base.starts_with('%');
        let bits = if sym { 64 } else { self.reg_bits(addr.base) };
        let kind = match a.kind {
            AccessKind::Read => SiteKind::Read,
            AccessKind::Write => SiteKind::Write,
            AccessKind::Atomic | AccessKind::Reduce => SiteKind::Atomic,
        };
        let (len, target, shadow) = match d {
            Decision::Check(o) => (self.load_len(o, "%__cc_t", ""), self.target_of(o), None),
            Decision::CheckShadow { reg, origins } => {
                let si = self.needs.shadows[reg.as_str()];
                let t = Target::OneOf(origins.iter().map(|o| self.target_of(o)).collect());
                (
                    Len::Code(String::new(), format!("%__cc_sl{si}")),
                    t,
                    Some(si),
                )
            }
            _ => unreachable!("only checks are emitted"),
        };
        let site = self.new_site(loc, target, kind, a.bytes);
        let keep = 1 - a.bytes as i64;
        let setp = |w: u32, off: &str, lim: &str| -> String {
            match guard {
                None => format!("setp.ge.u{w} %__cc_p, {off}, {lim};\n\t"),
                Some(g) => format!(
                    "setp.ge.and.u{w} %__cc_p, {off}, {lim}, {};\n\t",
                    g.operand()
                ),
            }
        };
        let mut s = String::new();
        // A wide access (8 or 16 bytes: vectors, doubles, 64-bit integers) at an address not
        // aligned to its width raises CUDA's misaligned-address error, which poisons the
        // context: such an address fails the check too (`%__cc_v`, or-ed into `%__cc_p`
        // below), and the launch reads the record's offset against the buffer's address to
        // report it as misaligned rather than out of bounds. A collective's addresses are
        // redirected, not skipped, so it keeps the bounds check alone.
        let align =
            (!sym && a.lanes.is_none() && a.bytes >= 8 && a.bytes.is_power_of_two()).then(|| {
                let (m, w) = if bits == 32 {
                    ("%__cc_m32", 32)
                } else {
                    ("%__cc_m", 64)
                };
                let mut c = String::new();
                if addr.offset == 0 {
                    let _ = write!(c, "and.b{w} {m}, {}, {};\n\t", addr.base, a.bytes - 1);
                } else {
                    let _ = write!(
                        c,
                        "add.s{w} {m}, {}, {};\n\tand.b{w} {m}, {m}, {};\n\t",
                        addr.base,
                        addr.offset,
                        a.bytes - 1
                    );
                }
                match guard {
                    None => {
                        let _ = write!(c, "setp.ne.u{w} %__cc_v, {m}, 0;\n\t");
                    }
                    Some(g) => {
                        let _ = write!(c, "setp.ne.and.u{w} %__cc_v, {m}, 0, {};\n\t", g.operand());
                    }
                }
                c
            });
        if let Some(code) = &align {
            s.push_str(code);
        }
        if bits == 32 && !sym {
            // A 32-bit shared/local address: offset and limit in 32 bits.
            let Decision::Check(o) = d else {
                unreachable!("shadows are 64-bit")
            };
            s.push_str(&self.load_base(o, 32, "%__cc_x", ""));
            let _ = write!(s, "sub.s32 %__cc_o32, {}, %__cc_x;\n\t", addr.base);
            if addr.offset != 0 {
                let _ = write!(s, "add.s32 %__cc_o32, %__cc_o32, {};\n\t", addr.offset);
            }
            match &len {
                Len::Const(c) => {
                    let lim = (c + 1).saturating_sub(a.bytes).min(u64::from(u32::MAX));
                    s.push_str(&setp(32, "%__cc_o32", &lim.to_string()));
                }
                Len::Code(..) => {
                    let _ = write!(
                        s,
                        "mov.u32 %__cc_x, %dynamic_smem_size;\n\tadd.s32 %__cc_x, %__cc_x, {keep};\n\tmax.s32 %__cc_x, %__cc_x, 0;\n\t"
                    );
                    s.push_str(&setp(32, "%__cc_o32", "%__cc_x"));
                }
            }
        } else {
            if sym {
                let _ = write!(s, "mov.u64 %__cc_o, {};\n\t", addr.offset);
            } else {
                match (d, shadow) {
                    (_, Some(si)) => {
                        let _ = write!(s, "sub.s64 %__cc_o, {}, %__cc_sb{si};\n\t", addr.base);
                    }
                    (Decision::Check(o), None) => {
                        s.push_str(&self.load_base(o, 64, "%__cc_u", ""));
                        let _ = write!(s, "sub.s64 %__cc_o, {}, %__cc_u;\n\t", addr.base);
                    }
                    _ => unreachable!("only checks are emitted"),
                }
                if addr.offset != 0 {
                    let _ = write!(s, "add.s64 %__cc_o, %__cc_o, {};\n\t", addr.offset);
                }
            }
            let (code, lim) = len.limit64(a.bytes, "%__cc_u");
            s.push_str(&code);
            s.push_str(&setp(64, "%__cc_o", &lim));
        }
        if align.is_some() {
            s.push_str("or.pred %__cc_p, %__cc_p, %__cc_v;\n\t");
        }
        // The record's base: the buffer the shadow names; with allocation bases, the
        // allocation's start for every check against a parameter, so that the record alone
        // says where its offset is measured from.
        let record_base = match (d, shadow) {
            (_, Some(si)) => (String::new(), format!("%__cc_sb{si}")),
            (Decision::Check(o @ Origin::Param { .. }), None) if self.opts.alloc_bases => {
                (self.load_base(o, 64, "%__cc_u", ""), "%__cc_u".to_string())
            }
            _ => (String::new(), "0".to_string()),
        };
        let cold = self.cold_block(i, a, site, bits == 32 && !sym, &len, record_base, cont);
        (s, cold, site)
    }

    /// For a collective access (`ldmatrix`, see [`Access::lanes`]) after its check: only the
    /// lanes that give an address fail, and a failed lane's address becomes the start of
    /// `array` (in the instruction's space: shared, or generic) plus the address's remainder
    /// modulo 16 (a row's
    /// alignment; the array must hold 31 bytes for that to be inside it, and `ldmatrix` is
    /// used on tiles far larger), so that the whole warp still executes the
    /// instruction, at the same place; its cold block (entered after the instruction) records
    /// the fault. Returns that code and the instruction reading the chosen address.
    fn redirect(&self, i: &Instr, a: &Access, lanes: u32, array: &Origin) -> (String, String) {
        let addr = Address::parse(&i.operands[a.operand]).expect("decided accesses have addresses");
        let sym = !addr.base.starts_with('%');
        // A symbol's address: 32 bits in the shared window, 64 as a generic address.
        let bits = match (sym, a.space) {
            (true, Space::Generic) => 64,
            (true, _) => 32,
            (false, _) => self.reg_bits(addr.base),
        };
        let r = format!("%__cc_a{bits}");
        let mut s = String::new();
        if lanes < 32 {
            let _ = write!(
                s,
                "mov.u32 %__cc_y, %laneid;\n\tsetp.lt.and.u32 %__cc_p, %__cc_y, {lanes}, %__cc_p;\n\t"
            );
        }
        if sym {
            s.push_str(&self.load_base(array, bits, &r, ""));
        } else {
            let _ = write!(s, "mov.u{bits} {r}, {};\n\t", addr.base);
        }
        if addr.offset != 0 {
            let _ = write!(s, "add.s{bits} {r}, {r}, {};\n\t", addr.offset);
        }
        // The start of the array plus the address's remainder modulo 16, so that the row
        // keeps the alignment `ldmatrix` needs (16 bytes; arrays it reads are aligned so).
        s.push_str(&self.load_base(array, bits, &r, "@%__cc_p "));
        if sym {
            let rem = addr.offset.rem_euclid(16);
            if rem != 0 {
                let _ = write!(s, "@%__cc_p add.s{bits} {r}, {r}, {rem};\n\t");
            }
        } else if bits == 32 {
            let _ = write!(
                s,
                "@%__cc_p and.b32 %__cc_y, %__cc_o32, 15;\n\t@%__cc_p add.s32 {r}, {r}, %__cc_y;\n\t"
            );
        } else {
            let _ = write!(
                s,
                "@%__cc_p and.b64 %__cc_u, %__cc_o, 15;\n\t@%__cc_p add.s64 {r}, {r}, %__cc_u;\n\t"
            );
        }
        let mut ops = i.operands.clone();
        ops[a.operand] = format!("[{r}]");
        let g = crate::ir::read::guard_text(&i.guard);
        (s, format!("{g}{} {};", i.opcode, ops.join(", ")))
    }

    /// Whether access `a` of `i`, checked as `d`, is redirected to the module's sink when its
    /// check fails ([`Self::sink_redirect`]) rather than branched around: atomics and
    /// reductions on global memory (the `.global` space, or generic addresses of buffers that
    /// are global memory: kernel parameters, `__device__` arrays) of at most [`SINK_BYTES`]
    /// bytes, through a 64-bit register or a symbol.
    fn sinks(&self, i: &Instr, a: &Access, d: &Decision) -> bool {
        if a.lanes.is_some()
            || !matches!(a.kind, AccessKind::Atomic | AccessKind::Reduce)
            || a.bytes > SINK_BYTES
        {
            return false;
        }
        let Some(addr) = i.operands.get(a.operand).and_then(|o| Address::parse(o)) else {
            return false;
        };
        let symbol = !addr.base_is_reg();
        if addr.base.is_empty()
            || (symbol && !matches!(d, Decision::Check(_)))
            || (!symbol && self.reg_bits(addr.base) != 64)
        {
            return false;
        }
        let global = |o: &Origin| match o {
            // A kernel parameter cannot point into another block's shared memory or a thread's
            // local memory: a buffer it passes is global memory.
            Origin::Param { .. } => true,
            Origin::Var { name, .. } => self
                .m
                .var(self.f, name)
                .is_some_and(|v| v.space == Space::Global),
        };
        match (a.space, d) {
            (Space::Global, Decision::Check(_) | Decision::CheckShadow { .. }) => true,
            (Space::Generic, Decision::Check(o)) => global(o),
            (Space::Generic, Decision::CheckShadow { origins, .. }) => origins.iter().all(global),
            _ => false,
        }
    }

    /// For an atomic that [`Self::sinks`], after its check (`%__cc_p` set when it fails): the
    /// address becomes the module's sink when the check failed, so that the atomic runs
    /// unconditionally, on the sink instead of the user's memory; the branch to the cold block
    /// (which records the fault and zeroes the atomic's result) follows the atomic. An
    /// address `[R+K]` keeps its form, `[A+K]` with `A = p ? sink - K : R`, so that the
    /// in-bounds path computes no new address. Returns that code and the instruction
    /// reading the chosen address.
    fn sink_redirect(&self, i: &Instr, a: &Access, d: &Decision) -> (String, String) {
        let addr = Address::parse(&i.operands[a.operand]).expect("decided accesses have addresses");
        let mut s = String::new();
        let base = if addr.base_is_reg() {
            addr.base.to_string()
        } else {
            // A symbol: its address, in the instruction's space (`sinks` admits a symbol only
            // with one origin).
            let Decision::Check(o) = d else {
                unreachable!("a symbol has one origin")
            };
            s.push_str(&self.load_base(o, 64, "%__cc_u", ""));
            "%__cc_u".to_string()
        };
        let _ = write!(s, "mov.u64 %__cc_a64, {SINK};\n\t");
        if a.space == Space::Generic {
            s.push_str("cvta.global.u64 %__cc_a64, %__cc_a64;\n\t");
        }
        if addr.offset != 0 {
            let _ = write!(
                s,
                "add.s64 %__cc_a64, %__cc_a64, {};\n\t",
                addr.offset.wrapping_neg()
            );
        }
        let _ = write!(s, "selp.b64 %__cc_a64, %__cc_a64, {base}, %__cc_p;\n\t");
        let mut ops = i.operands.clone();
        ops[a.operand] = match addr.offset {
            0 => "[%__cc_a64]".to_string(),
            k => format!("[%__cc_a64+{k}]"),
        };
        let g = crate::ir::read::guard_text(&i.guard);
        (s, format!("{g}{} {};", i.opcode, ops.join(", ")))
    }

    /// The out-of-line path of a failed check: record the first fault, count all, give a read
    /// 0, and continue after the skipped access. `base`: the code to run first and the operand
    /// the record's base field gets.
    #[allow(clippy::too_many_arguments)]
    fn cold_block(
        &mut self,
        i: &Instr,
        a: &Access,
        site: u32,
        narrow: bool,
        len: &Len,
        (base_code, base): (String, String),
        cont: &str,
    ) -> String {
        let fault_kind = match a.kind {
            AccessKind::Read if a.lanes.is_some() => FaultKind::CollectiveRead,
            AccessKind::Read => FaultKind::Read,
            AccessKind::Write => FaultKind::Write,
            AccessKind::Atomic | AccessKind::Reduce => FaultKind::Atomic,
        };
        let mut c = format!("\n$__cc_cold{site}:\n\t");
        if narrow {
            c.push_str("cvt.s64.s32 %__cc_o, %__cc_o32;\n\t");
        }
        // Inline rather than a call: a call makes ptxas reserve the call ABI's registers in
        // the whole kernel, which costs occupancy.
        let (len_code, len_op) = len.parts();
        c.push_str(&len_code);
        let _ = write!(
            c,
            "ld.param.u64 %__cc_r, [__cc_rec];\n\tcvta.to.global.u64 %__cc_r, %__cc_r;\n\tatom.global.add.u32 %__cc_x, [%__cc_r+4], 1;\n\tatom.global.cas.b32 %__cc_x, [%__cc_r], 0, 1;\n\tsetp.ne.u32 %__cc_q, %__cc_x, 0;\n\t@%__cc_q bra $__cc_skip{site};\n\tmov.u32 %__cc_x, {site};\n\tst.global.u32 [%__cc_r+8], %__cc_x;\n\tmov.u32 %__cc_x, {};\n\tst.global.u32 [%__cc_r+12], %__cc_x;\n\tst.global.u64 [%__cc_r+16], %__cc_o;\n\tmov.u64 %__cc_t, {len_op};\n\tst.global.u64 [%__cc_r+24], %__cc_t;\n\t",
            fault_kind.code(),
        );
        for (k, r) in [
            "%ctaid.x", "%ctaid.y", "%ctaid.z", "%tid.x", "%tid.y", "%tid.z",
        ]
        .iter()
        .enumerate()
        {
            let _ = write!(
                c,
                "mov.u32 %__cc_x, {r};\n\tst.global.u32 [%__cc_r+{}], %__cc_x;\n\t",
                32 + 4 * k
            );
        }
        let _ = write!(
            c,
            "mov.u32 %__cc_x, {};\n\tst.global.u32 [%__cc_r+60], %__cc_x;\n\t{base_code}mov.u64 %__cc_t, {base};\n\tst.global.u64 [%__cc_r+64], %__cc_t;\n$__cc_skip{site}:\n",
            a.bytes
        );
        // A skipped read or atomic gives 0; a collective was not skipped (`redirect`).
        if a.lanes.is_none() && matches!(a.kind, AccessKind::Read | AccessKind::Atomic) {
            let dests = i.operands.first().cloned().unwrap_or_default();
            let regs: Vec<String> = if dests.starts_with('{') {
                super::ptx::split_top(dests.trim_start_matches('{').trim_end_matches('}'))
            } else {
                vec![dests]
            };
            for r in regs.iter().filter(|r| r.starts_with('%')) {
                if let Some(b) = self.facts.reg_ty(r).and_then(Ty::bytes) {
                    let _ = writeln!(c, "\tmov.b{} {r}, 0;", b * 8);
                }
            }
        }
        let _ = writeln!(c, "\tbra {cont};");
        c
    }

    /// Code leaving the base and length of what operand `op` points to in `base` and `len`.
    fn shadow_of(&self, op: &str, base: &str, len: &str, g: &str) -> String {
        let op = op.trim();
        if let Some(&si) = self.needs.shadows.get(op) {
            return format!(
                "{g}mov.u64 {base}, %__cc_sb{si};\n\t{g}mov.u64 {len}, %__cc_sl{si};\n\t"
            );
        }
        let prov = if op.starts_with('%') {
            self.prov.of(op).clone()
        } else if let Some(v) = self.m.var(self.f, op) {
            Prov::Ptr(BTreeSet::from([Origin::Var {
                name: v.name.clone(),
                space: v.space,
            }]))
        } else {
            Prov::Data
        };
        match prov {
            Prov::Ptr(s) if s.len() == 1 => {
                let o = s.into_iter().next().expect("one origin");
                let mut code = self.load_base(&o, 64, base, g);
                let (lc, lo) = self.load_len(&o, len, g).parts();
                code.push_str(&lc);
                if lo != len {
                    let _ = write!(code, "{g}mov.u64 {len}, {lo};\n\t");
                }
                code
            }
            _ => format!("{g}mov.u64 {base}, 0;\n\t{g}mov.u64 {len}, 0;\n\t"),
        }
    }

    fn shadow_update(&self, i: &Instr, si: usize, g: &str) -> String {
        let ops = &i.operands;
        let (sb, sl) = (format!("%__cc_sb{si}"), format!("%__cc_sl{si}"));
        let operand = |k: usize| ops.get(k).map_or("", |o| o.trim());
        let is_ptr = |o: &str| {
            self.needs.shadows.contains_key(o)
                || matches!(self.prov.of(o), Prov::Ptr(_))
                || self.m.var(self.f, o).is_some()
        };
        let mut s = String::from("\n\t");
        match i.op {
            Op::Select(_) => {
                // Both sides into temporaries first: the destination may be one of them.
                s.push_str(&self.shadow_of(operand(1), "%__cc_t", "%__cc_u", g));
                s.push_str(&self.shadow_of(operand(2), "%__cc_o", "%__cc_r", g));
                let p = operand(3);
                let _ = write!(
                    s,
                    "{g}selp.b64 {sb}, %__cc_t, %__cc_o, {p};\n\t{g}selp.b64 {sl}, %__cc_u, %__cc_r, {p};"
                );
            }
            Op::Cvta { to_generic, space } => {
                let src = operand(1);
                if let Some(&ss) = self.needs.shadows.get(src) {
                    // The same conversion, of the shadow base.
                    let to = if to_generic { "" } else { ".to" };
                    let conv = format!("cvta{to}.{}", space.name());
                    let _ = write!(
                        s,
                        "{g}{conv}.u64 {sb}, %__cc_sb{ss};\n\t{g}mov.u64 {sl}, %__cc_sl{ss};"
                    );
                } else if let Prov::Ptr(set) = self.prov.of(src) {
                    // A single origin, converted to the destination's space.
                    let to = match (to_generic, space) {
                        (true, _) => Some(Space::Generic),
                        (false, Space::Global | Space::Shared | Space::Local | Space::Const) => {
                            Some(space)
                        }
                        (false, _) => None,
                    };
                    match (set.iter().next(), to) {
                        (Some(o), Some(to)) if set.len() == 1 => {
                            let o = o.with_space(to);
                            s.push_str(&self.load_base(&o, 64, &sb, g));
                            let (lc, lo) = self.load_len(&o, &sl, g).parts();
                            s.push_str(&lc);
                            if lo != sl {
                                let _ = write!(s, "{g}mov.u64 {sl}, {lo};");
                            }
                        }
                        _ => {
                            let _ = write!(s, "{g}mov.u64 {sb}, 0;\n\t{g}mov.u64 {sl}, 0;");
                        }
                    }
                } else {
                    let _ = write!(s, "{g}mov.u64 {sb}, 0;\n\t{g}mov.u64 {sl}, 0;");
                }
            }
            Op::Mov(_)
            | Op::Arith(Arith {
                op: ArithOp::Add | ArithOp::Sub | ArithOp::And | ArithOp::Mad,
                carry_in: false,
                ..
            }) => {
                let k = match i.op {
                    Op::Arith(a) if a.op == ArithOp::Mad => 3,
                    Op::Arith(a) if a.op == ArithOp::Sub => 1,
                    _ if is_ptr(operand(1)) => 1,
                    _ => 2,
                };
                s.push_str(&self.shadow_of(operand(k), &sb, &sl, g));
            }
            _ => {
                let _ = write!(s, "{g}mov.u64 {sb}, 0;\n\t{g}mov.u64 {sl}, 0;");
            }
        }
        s
    }
}

/// The hidden parameter holding a slot's length (`what` = `len`) or base (`base`):
/// `__cc_len_<k>` for a parameter's own slot, `__cc_len_<k>_<offset>` for a struct field's.
fn slot_param(what: &str, slot: BufferSlot) -> String {
    match slot.offset {
        0 => format!("__cc_{what}_{}", slot.param),
        off => format!("__cc_{what}_{}_{off}", slot.param),
    }
}

/// An instruction's edits: code before it, its replacement, code after it.
fn edit_instr(
    edits: &mut Edits,
    span: std::ops::Range<usize>,
    before: String,
    replace: Option<String>,
    after: String,
) {
    if !before.is_empty() {
        edits.insert(span.start, before);
    }
    if let Some(r) = replace {
        edits.replace(span.clone(), r);
    }
    if !after.is_empty() {
        edits.insert(span.end, after);
    }
}

fn site_kind(k: AccessKind) -> SiteKind {
    match k {
        AccessKind::Read => SiteKind::Read,
        AccessKind::Write => SiteKind::Write,
        AccessKind::Atomic | AccessKind::Reduce => SiteKind::Atomic,
    }
}
