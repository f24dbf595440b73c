//! Writes the init-checked PTX: for every global (or generic) access, the lookup of its shadow
//! word through the directory (`shadow.rs`), then a read's test of its bits (a cold block
//! records the first unwritten read and comes back: the read still happens) and a write's
//! `atom.or` of them when they are not all set yet. The layout and the argument are in the
//! module docs of [`super`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::record::INIT_RECORD_OFFSET;
use super::shadow::{DIR_ENTRIES, DIR_SHIFT, GRANULE_BYTES, GRANULE_SHIFT, TABLE_ENTRIES};
use super::shared;
use super::{
    InitCoverage, InitKernel, InitOptions, InitPtx, InitSite, InitSiteKind, InitUnchecked,
    DIR_SYMBOL,
};
use crate::ir::read::{Function, Instr, Loc, Module, Space, StmtKind};
use crate::ir::{effects, Address, AtomOp, Flow, MemKind, MemOp};
use crate::site::{callee, demangle, source_loc, SourceLoc};

/// The registers an init-checked function declares (`%__cci_*`).
const DECLS: &str = "\n\t.reg .b64 %__cci_a, %__cci_t, %__cci_u, %__cci_dir, %__cci_rec;\n\t.reg .b32 %__cci_b, %__cci_m, %__cci_w, %__cci_x, %__cci_sa, %__cci_sw, %__cci_lo, %__cci_sb, %__cci_lim, %__cci_i, %__cci_n, %__cci_N;\n\t.reg .pred %__cci_p, %__cci_off, %__cci_soff;\n";

/// Functions a kernel may call that touch no memory of the program's.
fn harmless_callee(name: &str) -> bool {
    name == "vprintf" || name == "__assertfail" || name.starts_with("__cc")
}

/// What one access gets.
struct Planned {
    stmt: usize,
    operand: usize,
    bytes: u64,
    /// Test the bits before (reads, atomics, reductions).
    check: bool,
    /// Set the bits (writes, atomics, reductions).
    mark: bool,
    /// The site id, for checked accesses of kernels.
    site: Option<u32>,
    /// A shared-memory access (else global or generic).
    shared: bool,
    /// Its address register is 64 bits wide.
    wide: bool,
}

/// One function's plan.
struct Plan {
    accesses: Vec<Planned>,
    sites: Vec<InitSite>,
    coverage: InitCoverage,
    /// Functions of the module it calls.
    calls: BTreeSet<String>,
    /// Why its shared memory cannot be checked, when it writes some in a way the shadow
    /// cannot follow.
    shared_off: Option<String>,
}

pub(crate) fn emit(text: &str, m: &Module, opts: &InitOptions) -> InitPtx {
    let defined: BTreeSet<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    let mut next_site = 0u32;
    let mut plans: BTreeMap<&str, Plan> = BTreeMap::new();
    // The checkers' own functions (`__cc_*`, `__ccr_*`) write only their records.
    let program = |f: &&Function| !f.name.starts_with("__cc");
    for f in m.functions.iter().filter(program) {
        plans.insert(f.name.as_str(), plan(m, f, &defined, &mut next_site));
    }
    // A kernel is left unchanged when it, or a function it reaches, writes memory in a way
    // the shadow cannot follow: its reads would then be reported for bytes it wrote.
    let opaque = |name: &str| -> Option<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(n) = todo.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            let Some(p) = plans.get(n.as_str()) else {
                continue;
            };
            if let Some(why) = &p.coverage.not_checked {
                return Some(if n == name {
                    why.clone()
                } else {
                    format!("it calls `{n}`, which {why}")
                });
            }
            todo.extend(p.calls.iter().cloned());
        }
        None
    };
    let opaque: BTreeMap<String, Option<String>> = m
        .functions
        .iter()
        .filter(program)
        .map(|f| (f.name.clone(), opaque(&f.name)))
        .collect();
    let mut edits = crate::ir::edit::Edits::new();
    let mut kernels = Vec::new();
    let mut label = 0u32;
    let (mut any, mut any_shared) = (false, false);
    // The race checker's shadow sits where this one would: with it, shared memory is left to it.
    let raced = text.contains("__ccr_dyn");
    for f in m.functions.iter().filter(program) {
        let p = plans.get_mut(f.name.as_str()).expect("planned above");
        let not_checked = opaque[&f.name].clone();
        let shared_off = if !p.accesses.iter().any(|a| a.shared) {
            None
        } else if !f.entry {
            Some("shared memory in a function that is not a kernel is not checked".to_string())
        } else if raced {
            Some("the race-checked build keeps its own shadow of shared memory".to_string())
        } else if let Some(c) = p.calls.iter().next() {
            Some(format!("it calls `{c}`, which may write its shared memory"))
        } else {
            p.shared_off.clone()
        };
        if let Some(why) = &shared_off {
            drop_shared(p, why);
        }
        if !opts.global {
            // Launches of this build reach only written global memory (the caller's promise).
            p.accesses.retain(|a| a.shared);
        }
        let shared = p.accesses.iter().any(|a| a.shared);
        if not_checked.is_none() && !p.accesses.is_empty() {
            any = true;
            any_shared |= shared;
            emit_function(m, f, p, opts, &mut edits, &mut label);
        }
        if f.entry {
            let mut coverage = p.coverage.clone();
            coverage.not_checked = not_checked;
            let checked = coverage.not_checked.is_none();
            kernels.push(InitKernel {
                symbol: f.name.clone(),
                name: demangle(&f.name),
                sites: if checked { p.sites.clone() } else { Vec::new() },
                coverage,
                shared_shadow: checked && shared,
            });
        }
    }
    if any {
        let mut decl = format!("\n// ---- cudacheck init checking (see cudacheck_core::init) ----\n.visible .global .align 8 .u64 {DIR_SYMBOL};\n");
        if any_shared {
            let _ = writeln!(decl, ".extern .shared .align 16 .b8 {}[];", shared::DYN);
        }
        edits.insert(m.header_end, decl);
    }
    InitPtx {
        ptx: edits.apply(text),
        kernels,
    }
}

/// Leaves a function's shared accesses out, saying why.
fn drop_shared(p: &mut Plan, why: &str) {
    let gone: BTreeSet<u32> = p
        .accesses
        .iter()
        .filter(|a| a.shared)
        .filter_map(|a| a.site)
        .collect();
    let (checked, marked) = p
        .accesses
        .iter()
        .filter(|a| a.shared)
        .fold((0, 0), |(c, w), a| {
            (c + u32::from(a.check), w + u32::from(a.mark))
        });
    p.accesses.retain(|a| !a.shared);
    p.sites.retain(|s| !gone.contains(&s.id));
    p.coverage.checked -= checked;
    p.coverage.marked -= marked;
    p.coverage.shared_not_checked = Some(why.to_string());
}

fn site_loc(m: &Module, loc: Option<Loc>) -> (Option<SourceLoc>, Option<SourceLoc>) {
    match loc {
        Some(l) if l.line > 0 => (
            Some(source_loc(m, l.file, l.line, l.column)),
            l.inlined_at.map(|(f, li, c)| source_loc(m, f, li, c)),
        ),
        _ => (None, None),
    }
}

/// Why an instruction writes memory the shadow cannot follow, if it does.
fn unfollowed_write(i: &Instr) -> Option<&'static str> {
    let e = effects(i);
    if !e.known {
        return Some("has an instruction the checker does not know");
    }
    let mem = i.op.mem()?;
    let global = matches!(i.space(), Space::Global | Space::Generic);
    match mem.op {
        MemOp::Cp if i.space() == Space::Global => Some("writes global memory with a bulk copy"),
        MemOp::Multimem => Some("writes through multimem addresses"),
        MemOp::Tcgen05 => Some("has tensor-memory copies"),
        MemOp::Texture { store: true } => Some("writes surfaces"),
        MemOp::Wmma { store: true, .. } if global => {
            Some("stores `wmma` fragments to global memory")
        }
        _ => None,
    }
}

fn plan(m: &Module, f: &Function, defined: &BTreeSet<&str>, next_site: &mut u32) -> Plan {
    let mut p = Plan {
        accesses: Vec::new(),
        sites: Vec::new(),
        coverage: InitCoverage::default(),
        calls: BTreeSet::new(),
        shared_off: None,
    };
    // Reads are checked only where the launch's record is at hand: in kernels the bounds
    // rewrite gave one. Writes are marked everywhere.
    let has_record = f.entry && f.params.iter().any(|q| q.name == "__cc_rec");
    let mut loc = None;
    for (k, s) in f.stmts.iter().enumerate() {
        let i = match &s.kind {
            StmtKind::Loc(l) => {
                loc = Some(*l);
                continue;
            }
            StmtKind::Instr(i) => i,
            _ => continue,
        };
        let (at, inlined_at) = site_loc(m, loc);
        let e = effects(i);
        if e.flow == Flow::Call {
            if let Some(c) = callee(i) {
                if defined.contains(c) {
                    p.calls.insert(c.to_string());
                } else if !harmless_callee(c) && p.coverage.not_checked.is_none() {
                    p.coverage.not_checked =
                        Some(format!("calls `{c}`, which is not in the module"));
                }
            }
            continue;
        }
        if let Some(why) = unfollowed_write(i) {
            if p.coverage.not_checked.is_none() {
                p.coverage.not_checked = Some(why.to_string());
            }
            continue;
        }
        let skip = |p: &mut Plan, reason: &str| {
            p.coverage.unchecked.push(InitUnchecked {
                loc: at.clone(),
                instruction: i.opcode.clone(),
                reason: reason.to_string(),
            })
        };
        for a in &e.mem {
            let shared = a.space == Space::Shared;
            if !matches!(a.space, Space::Global | Space::Generic | Space::Shared) {
                continue;
            }
            let writes = a.kind != MemKind::Read;
            let (check, mark) = match a.kind {
                MemKind::Read => (true, false),
                MemKind::Write => (false, true),
                // An exchange reads nothing the program computed with.
                MemKind::Atomic if exchange(i) => (false, true),
                MemKind::Atomic | MemKind::Reduce => (true, true),
            };
            let addr = i.operands.get(a.operand).and_then(|o| Address::parse(o));
            let wide = addr
                .as_ref()
                .is_some_and(|ad| f.reg_type(ad.base).is_some_and(|t| t.contains("64")));
            // Global accesses through 64-bit registers; shared ones through registers or
            // through the arrays themselves (`[tile+4]`).
            let reg = addr.as_ref().filter(|ad| {
                if shared {
                    !ad.base.is_empty() && !ad.base.starts_with("__cc")
                } else {
                    crate::ir::is_reg(ad.base) && wide
                }
            });
            // `__device__` variables are written when the module loads; the checker's own
            // registers address its records and the race checker's shadow (the bounds
            // rewrite's `%__cc_a64` is the program's address of a redirected atomic, so it is
            // checked).
            if (!shared && addr.as_ref().is_some_and(|ad| !crate::ir::is_reg(ad.base)))
                || addr
                    .as_ref()
                    .is_some_and(|ad| ad.base == "%__cc_r" || ad.base.starts_with("%__ccr_"))
            {
                continue;
            }
            let bytes = a.bytes.filter(|&b| b.is_power_of_two() && b <= 32);
            // `cp.async` with a source size reads fewer bytes than it writes (zero fill).
            let partial_copy = matches!(i.op.mem().map(|x| x.op), Some(MemOp::CpAsync { .. }))
                && i.operands.len() > 3;
            match (reg, bytes) {
                (Some(_), Some(bytes)) if !partial_copy => {
                    let check = check && has_record;
                    if !check && !mark {
                        skip(
                            &mut p,
                            "a read in a function that is not a kernel: not checked",
                        );
                        continue;
                    }
                    let site = check.then(|| {
                        let id = *next_site;
                        *next_site += 1;
                        p.sites.push(InitSite {
                            id,
                            kind: match a.kind {
                                MemKind::Read => InitSiteKind::Read,
                                _ => InitSiteKind::Atomic,
                            },
                            loc: at.clone(),
                            inlined_at: inlined_at.clone(),
                            bytes: bytes as u32,
                        });
                        id
                    });
                    if check {
                        p.coverage.checked += 1;
                    }
                    if mark {
                        p.coverage.marked += 1;
                    }
                    if check != (a.kind != MemKind::Write && !(mark && exchange(i))) {
                        skip(
                            &mut p,
                            "a read in a function that is not a kernel: not checked",
                        );
                    }
                    p.accesses.push(Planned {
                        stmt: k,
                        operand: a.operand,
                        bytes,
                        check,
                        mark,
                        site,
                        shared,
                        wide,
                    });
                }
                _ if writes && shared => {
                    if p.shared_off.is_none() {
                        p.shared_off = Some(format!(
                            "it writes shared memory with `{}`, whose address or width the checker cannot follow",
                            i.opcode
                        ));
                    }
                }
                _ if writes => {
                    // A write whose bytes the shadow cannot set: reads after it would be
                    // reported although it wrote them.
                    if p.coverage.not_checked.is_none() {
                        p.coverage.not_checked = Some(format!(
                            "writes global memory with `{}`, whose address or width the checker cannot follow",
                            i.opcode
                        ));
                    }
                }
                _ if partial_copy => skip(
                    &mut p,
                    "an asynchronous copy with a source size: not checked",
                ),
                _ => skip(&mut p, "an address or width the checker cannot follow"),
            }
        }
    }
    p
}

fn emit_function(
    m: &Module,
    f: &Function,
    p: &Plan,
    opts: &InitOptions,
    edits: &mut crate::ir::edit::Edits,
    label: &mut u32,
) {
    edits.insert(f.body_open, DECLS);
    let first = f.prologue_at();
    let mut pro = format!(
        "\n\t// cudacheck init checking: the shadow directory and the record\n\tld.global.u64 %__cci_dir, [{DIR_SYMBOL}];\n\tsetp.eq.u64 %__cci_off, %__cci_dir, 0;\n"
    );
    if p.accesses.iter().any(|a| a.check) {
        let _ = write!(
            pro,
            "\tld.param.u64 %__cci_rec, [__cc_rec];\n\tcvta.to.global.u64 %__cci_rec, %__cci_rec;\n\tadd.s64 %__cci_rec, %__cci_rec, {INIT_RECORD_OFFSET};\n"
        );
    }
    if p.accesses.iter().any(|a| a.shared) {
        pro.push_str(&shared::prologue(m, f, opts.dynamic_shared_bytes));
    }
    edits.insert(first, pro);
    let mut cold = String::new();
    for a in &p.accesses {
        let s = &f.stmts[a.stmt];
        let Some(i) = f.instr(a.stmt) else { continue };
        let Some(addr) = i.operands.get(a.operand).and_then(|o| Address::parse(o)) else {
            continue;
        };
        *label += 1;
        let n = *label;
        let mut c = String::from("\n\t");
        if let Some(g) = &i.guard {
            let _ = write!(c, "{} bra $__cci_s{n};\n\t", g.negate());
        }
        if a.shared {
            c.push_str(&shared::lookup(addr.base, addr.offset, a.wide, a.bytes, n));
        } else {
            let _ = write!(c, "@%__cci_off bra $__cci_s{n};\n\t");
            c.push_str(&lookup(addr.base, addr.offset, a.bytes, n));
        }
        if let Some(site) = a.site {
            let _ = write!(
                c,
                "and.b32 %__cci_x, %__cci_w, %__cci_m;\n\tsetp.ne.u32 %__cci_p, %__cci_x, %__cci_m;\n\t@%__cci_p bra $__cci_c{n};\n$__cci_b{n}:\n\t"
            );
            cold.push_str(&cold_block(n, site, a.bytes, a.shared));
        }
        if a.mark {
            // Only a store that sets new bits pays for the atomic.
            let _ = write!(
                c,
                "and.b32 %__cci_x, %__cci_w, %__cci_m;\n\tsetp.ne.u32 %__cci_p, %__cci_x, %__cci_m;\n\t@%__cci_p red.{}.or.b32 [{}], %__cci_m;\n\t",
                if a.shared { "shared" } else { "global" },
                if a.shared { "%__cci_sw" } else { "%__cci_t" },
            );
        }
        let _ = write!(c, "\n$__cci_s{n}:\n\t");
        edits.insert(s.span.start, c);
    }
    if !cold.is_empty() {
        edits.insert(f.body_close, cold);
    }
}

/// The shadow word of the access at `base + offset` in `%__cci_t`, its bits in `%__cci_m`, the
/// word in `%__cci_w`, the address in `%__cci_a`; to `$__cci_s<n>` when the address is in no
/// granule the directory knows.
fn lookup(base: &str, offset: i64, bytes: u64, n: u32) -> String {
    let ones = if bytes >= 32 {
        u32::MAX
    } else {
        (1u32 << bytes) - 1
    };
    format!(
        "add.s64 %__cci_a, {base}, {offset};\n\t\
         shr.u64 %__cci_t, %__cci_a, {DIR_SHIFT};\n\t\
         and.b64 %__cci_t, %__cci_t, {dmask};\n\t\
         shl.b64 %__cci_t, %__cci_t, 3;\n\t\
         add.s64 %__cci_t, %__cci_t, %__cci_dir;\n\t\
         ld.global.u64 %__cci_t, [%__cci_t];\n\t\
         setp.eq.u64 %__cci_p, %__cci_t, 0;\n\t\
         @%__cci_p bra $__cci_s{n};\n\t\
         shr.u64 %__cci_u, %__cci_a, {GRANULE_SHIFT};\n\t\
         and.b64 %__cci_u, %__cci_u, {tmask};\n\t\
         shl.b64 %__cci_u, %__cci_u, 3;\n\t\
         add.s64 %__cci_t, %__cci_t, %__cci_u;\n\t\
         ld.global.u64 %__cci_t, [%__cci_t];\n\t\
         setp.eq.u64 %__cci_p, %__cci_t, 0;\n\t\
         @%__cci_p bra $__cci_s{n};\n\t\
         and.b64 %__cci_u, %__cci_a, {wmask};\n\t\
         shr.u64 %__cci_u, %__cci_u, 3;\n\t\
         add.s64 %__cci_t, %__cci_t, %__cci_u;\n\t\
         cvt.u32.u64 %__cci_b, %__cci_a;\n\t\
         and.b32 %__cci_b, %__cci_b, 31;\n\t\
         shl.b32 %__cci_m, {ones}, %__cci_b;\n\t\
         ld.global.u32 %__cci_w, [%__cci_t];\n\t",
        dmask = DIR_ENTRIES - 1,
        tmask = TABLE_ENTRIES - 1,
        wmask = (GRANULE_BYTES - 1) & !31,
    )
}

/// Records the first unwritten read of the launch (first wins), counts every one, and goes
/// back: the read runs as the program wrote it. A global shadow word is read through L1 on
/// the way in ([`lookup`]): bits are only set during a launch, so a cached word's set bits are
/// set, but one may lack bits another block set since; the word is read again past L1
/// (`ld.volatile`) before anything is recorded.
fn cold_block(n: u32, site: u32, bytes: u64, shared: bool) -> String {
    // A shared access records its shared-window address and space 1.
    let (addr, space) = if shared {
        ("cvt.u64.u32 %__cci_a, %__cci_sa;\n\t", 1)
    } else {
        ("", 0)
    };
    let again = if shared {
        String::new()
    } else {
        format!(
            "ld.volatile.global.u32 %__cci_w, [%__cci_t];\n\t\
             and.b32 %__cci_x, %__cci_w, %__cci_m;\n\t\
             setp.eq.u32 %__cci_p, %__cci_x, %__cci_m;\n\t\
             @%__cci_p bra $__cci_b{n};\n\t"
        )
    };
    format!(
        "$__cci_c{n}:\n\t\
         {again}\
         atom.global.add.u32 %__cci_x, [%__cci_rec+4], 1;\n\t\
         atom.global.cas.b32 %__cci_x, [%__cci_rec], 0, 1;\n\t\
         setp.ne.u32 %__cci_p, %__cci_x, 0;\n\t\
         @%__cci_p bra $__cci_b{n};\n\t\
         mov.u32 %__cci_x, {site};\n\tst.global.u32 [%__cci_rec+8], %__cci_x;\n\t\
         mov.u32 %__cci_x, {bytes};\n\tst.global.u32 [%__cci_rec+12], %__cci_x;\n\t\
         {addr}st.global.u64 [%__cci_rec+16], %__cci_a;\n\t\
         mov.u32 %__cci_x, {space};\n\tst.global.u32 [%__cci_rec+28], %__cci_x;\n\t\
         not.b32 %__cci_x, %__cci_w;\n\tand.b32 %__cci_x, %__cci_x, %__cci_m;\n\tshr.b32 %__cci_x, %__cci_x, %__cci_b;\n\t\
         st.global.u32 [%__cci_rec+24], %__cci_x;\n\t\
         mov.u32 %__cci_x, %tid.x;\n\tst.global.u32 [%__cci_rec+32], %__cci_x;\n\t\
         mov.u32 %__cci_x, %tid.y;\n\tst.global.u32 [%__cci_rec+36], %__cci_x;\n\t\
         mov.u32 %__cci_x, %tid.z;\n\tst.global.u32 [%__cci_rec+40], %__cci_x;\n\t\
         mov.u32 %__cci_x, %ctaid.x;\n\tst.global.u32 [%__cci_rec+44], %__cci_x;\n\t\
         mov.u32 %__cci_x, %ctaid.y;\n\tst.global.u32 [%__cci_rec+48], %__cci_x;\n\t\
         mov.u32 %__cci_x, %ctaid.z;\n\tst.global.u32 [%__cci_rec+52], %__cci_x;\n\t\
         bra.uni $__cci_b{n};\n"
    )
}

/// An atomic exchange (`atom.exch`): it reads nothing the program computes with.
fn exchange(i: &Instr) -> bool {
    i.op.mem().is_some_and(|m| m.atomic == Some(AtomOp::Exch))
}
