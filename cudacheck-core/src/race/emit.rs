//! Writes the race-checked PTX: the plan of each kernel (which accesses, barriers and warp
//! synchronizations get which check) and the code for it, in one pass over the statements.
//! The shadow layout and the soundness argument are in the module docs of [`super`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::cost::{self, RaceCost};
use super::index;
use super::intervals;
use super::record::{bits, RaceEventKind};
use super::{
    RaceCoverage, RaceKernel, RaceOptions, RaceProof, RacePtx, RaceSite, RaceSiteKind,
    RaceUnchecked,
};
use crate::ir::edit::Edits;
use crate::ir::read::{Function, Instr, Loc, Module, Space, StmtKind};
use crate::ir::{effects, Address, ArithOp, Facts, Flow, MemKind, MemOp, Op, Sync};
use crate::site::{callee, demangle, demangle_var, source_loc, SkipReason, SourceLoc};

/// The labels of `f` that start a `ret` or `exit`: a branch to one leaves the block.
fn exit_labels(f: &Function) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    let mut pending: Vec<&str> = Vec::new();
    for s in &f.stmts {
        match &s.kind {
            StmtKind::Label(l) => pending.push(l),
            StmtKind::Instr(i) => {
                if i.guard.is_none()
                    && matches!(effects(i).flow, Flow::Return | Flow::Exit)
                    && !matches!(i.op, Op::Exit { trap: true })
                {
                    out.extend(pending.iter().copied());
                }
                pending.clear();
            }
            _ => {}
        }
    }
    out
}

/// What every race-checked module gets: the dynamic shared array the shadow is addressed
/// from. (The report is written inline where it is made, see [`call_report`]: a call of a
/// function would make `ptxas` keep the calling convention's registers in every kernel, 36 at
/// least, where the kernels of the benchmark set need 12 to 29.)
const RUNTIME: &str = "
// ---- cudacheck race checking (see cudacheck_core::race) ----
.extern .shared .align 16 .b8 __ccr_dyn[];
";

/// The registers a race-checked kernel declares (`%__ccr_*`).
const DECLS: &str = "\n\t.reg .b32 %__ccr_T, %__ccr_B, %__ccr_lo, %__ccr_nw, %__ccr_nw8, %__ccr_W, %__ccr_sh, %__ccr_a, %__ccr_w, %__ccr_N, %__ccr_n;\n\t.reg .b32 %__ccr_t<10>;\n\t.reg .b64 %__ccr_E, %__ccr_me, %__ccr_x, %__ccr_y, %__ccr_z, %__ccr_d, %__ccr_rec;\n\t.reg .b64 %__ccr_u<4>;\n\t.reg .pred %__ccr_on, %__ccr_left, %__ccr_q<8>, %__ccr_rp;\n\t.reg .b32 %__ccr_r;\n";

/// The alias key of every `extern` array: they all start the dynamic shared memory.
const DYNAMIC: &str = "<dynamic>";

/// What one statement gets.
enum Plan {
    Access {
        id: u32,
        kind: RaceSiteKind,
        operand: usize,
        bytes: u64,
        generic: bool,
        array: Option<String>,
    },
    /// A block barrier; `red`: the user's own instruction is a `bar.red` (it stays, after the
    /// checker's counting barrier), else the counting barrier replaces it.
    Barrier {
        id: u32,
        red: bool,
    },
    /// Where threads leave the block, in a kernel with barriers: a `ret` or `exit`
    /// (`branch: false`), or a branch to one (`branch: true`: `if (i >= n) return;` jumps to the
    /// kernel's one `ret`, and the branch has the `return`'s line).
    Exit {
        id: u32,
        branch: bool,
    },
    WarpSync {
        id: u32,
    },
    /// A warp collective: the warp epoch moves on after it.
    Collective,
}

/// Which non-inlined functions synchronize or touch shared memory, themselves or through
/// their callees.
struct FuncFacts {
    syncs: BTreeSet<String>,
    shared: BTreeSet<String>,
}

fn func_facts(m: &Module) -> FuncFacts {
    let mut syncs = BTreeSet::new();
    let mut shared = BTreeSet::new();
    let mut calls: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in m.functions.iter().filter(|f| !f.entry) {
        for i in f.instrs() {
            let e = effects(i);
            if matches!(e.sync, Some(s) if s != Sync::Fence) {
                syncs.insert(f.name.clone());
            }
            if e.mem
                .iter()
                .any(|a| matches!(a.space, Space::Shared | Space::SharedCluster))
            {
                shared.insert(f.name.clone());
            }
            if e.flow == Flow::Call {
                if let Some(c) = callee(i) {
                    calls.entry(f.name.as_str()).or_default().push(c);
                }
            }
        }
    }
    // Through callees, to a fixed point.
    loop {
        let mut changed = false;
        for (f, cs) in &calls {
            for c in cs {
                if syncs.contains(*c) && syncs.insert(f.to_string()) {
                    changed = true;
                }
                if shared.contains(*c) && shared.insert(f.to_string()) {
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    FuncFacts { syncs, shared }
}

pub(super) fn emit(text: &str, m: &Module, opts: &RaceOptions) -> RacePtx {
    emit_costed(text, m, opts).0
}

/// [`emit`], with what each kernel's checks cost ([`RaceCost`]).
pub(super) fn emit_costed(text: &str, m: &Module, opts: &RaceOptions) -> (RacePtx, Vec<RaceCost>) {
    let facts = func_facts(m);
    let mut costs = Vec::new();
    let mut body = Edits::new();
    let mut kernels = Vec::new();
    let mut any = false;
    for f in m.functions.iter().filter(|f| f.entry) {
        let mut k = KernelRace::new(m, f, opts);
        k.plan(&facts);
        k.prune();
        let mut cost = RaceCost {
            symbol: f.name.clone(),
            ..RaceCost::default()
        };
        let changed = k.emit(&mut body, &mut cost);
        costs.push(cost);
        any |= changed;
        kernels.push(k.finish(changed));
    }
    let mut edits = Edits::new();
    if any {
        edits.insert(m.header_end, RUNTIME);
    }
    edits.append(body);
    (
        RacePtx {
            ptx: edits.apply(text),
            kernels,
        },
        costs,
    )
}

struct KernelRace<'a> {
    m: &'a Module,
    f: &'a Function,
    opts: &'a RaceOptions,
    plans: Vec<(usize, Option<Loc>, Plan)>,
    /// Calls into functions that touch shared memory (for the interval pruning).
    shared_calls: Vec<usize>,
    /// Accesses that cannot race (`intervals.rs`): no check.
    pruned: BTreeSet<usize>,
    /// Every thread meets the kernel's barriers in one order (`intervals::fixed_order`): the
    /// barriers need no divergence check.
    fixed_order: bool,
    /// A checked access may touch the dynamic shared memory: the shadow covers it.
    shadow_dynamic: bool,
    sites: Vec<RaceSite>,
    /// The site of each barrier statement by its place in the source: the compiler's copies of
    /// one `__syncthreads()` (a loop unrolled with a remainder, a peeled first round) are one
    /// statement to the check, so threads at different copies are not told apart as waiting
    /// at different barriers; they run the loop a different number of times, which shows as
    /// threads leaving while others wait.
    barrier_sites: BTreeMap<(u32, u32, u32), u32>,
    coverage: RaceCoverage,
    /// The function's facts: its one graph and definitions map, which the address tracer and
    /// the barrier intervals (`intervals.rs`) read.
    facts: Facts<'a>,
    /// The file of the kernel's own first `.loc`, and each location seen with the call site
    /// it was inlined at: a barrier inside inlined library code (cooperative groups'
    /// `sync()`) is reported at the user's call.
    home: Option<u32>,
    calls: BTreeMap<(u32, u32, u32), (u32, u32, u32)>,
}

/// What an address register leads back to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Trace {
    /// A cycle: says nothing.
    Neutral,
    /// `sym`: the shared array, when one; `cvta`: a generic address made from a shared one.
    Found {
        sym: Option<String>,
        cvta: bool,
    },
    Unknown,
}

impl<'a> KernelRace<'a> {
    fn new(m: &'a Module, f: &'a Function, opts: &'a RaceOptions) -> Self {
        KernelRace {
            m,
            f,
            opts,
            plans: Vec::new(),
            shared_calls: Vec::new(),
            pruned: BTreeSet::new(),
            fixed_order: false,
            shadow_dynamic: true,
            sites: Vec::new(),
            barrier_sites: BTreeMap::new(),
            coverage: RaceCoverage::default(),
            facts: Facts::new(f),
            home: None,
            calls: BTreeMap::new(),
        }
    }

    fn is_shared_var(&self, name: &str) -> bool {
        name == "__ccr_dyn"
            || self
                .m
                .var(self.f, name)
                .is_some_and(|v| v.space == Space::Shared)
    }

    fn trace(&self, reg: &str, depth: u32, seen: &mut BTreeSet<String>) -> Trace {
        if depth > 16 {
            return Trace::Unknown;
        }
        if !seen.insert(reg.to_string()) {
            return Trace::Neutral;
        }
        let Some(ds) = self.facts.defs.get(reg) else {
            return Trace::Unknown;
        };
        let mut all = Trace::Neutral;
        // Copies of one definition (a loop the bounds rewrite versioned keeps its registers)
        // compute one value: traced once, since the second would find its operands seen.
        let mut traced: Vec<&Instr> = Vec::new();
        for &k in ds {
            let Some(i) = self.f.instr(k) else { continue };
            if traced
                .iter()
                .any(|d| d.op == i.op && d.operands == i.operands && d.guard == i.guard)
            {
                continue;
            }
            traced.push(i);
            let t = self.trace_instr(i, depth, seen);
            all = match (all, t) {
                (Trace::Unknown, _) | (_, Trace::Unknown) => Trace::Unknown,
                (Trace::Neutral, t) | (t, Trace::Neutral) => t,
                (Trace::Found { sym: a, cvta: ca }, Trace::Found { sym: b, cvta: cb }) => {
                    Trace::Found {
                        sym: if a == b { a } else { None },
                        cvta: ca && cb,
                    }
                }
            };
        }
        all
    }

    fn trace_operand(&self, o: &str, depth: u32, seen: &mut BTreeSet<String>) -> Trace {
        let o = o.trim();
        if crate::ir::is_reg(o) {
            return self.trace(o, depth + 1, seen);
        }
        if crate::ir::immediate(o).is_some() {
            return Trace::Found {
                sym: None,
                cvta: false,
            };
        }
        if self.is_shared_var(o) {
            return Trace::Found {
                sym: Some(o.to_string()),
                cvta: false,
            };
        }
        Trace::Unknown
    }

    fn trace_instr(&self, i: &Instr, depth: u32, seen: &mut BTreeSet<String>) -> Trace {
        let ops = &i.operands;
        let pick = |idx: &[usize], seen: &mut BTreeSet<String>| -> Trace {
            // Of the operands that may carry the base, the one that names an array.
            let mut best = Trace::Found {
                sym: None,
                cvta: false,
            };
            for &k in idx {
                let Some(o) = ops.get(k) else { continue };
                match self.trace_operand(o, depth, seen) {
                    Trace::Found { sym: Some(s), cvta } => {
                        return Trace::Found { sym: Some(s), cvta }
                    }
                    Trace::Found { sym: None, cvta } => {
                        if let Trace::Found { cvta: c, .. } = &mut best {
                            *c |= cvta;
                        }
                    }
                    Trace::Unknown | Trace::Neutral => {}
                }
            }
            best
        };
        match i.op {
            Op::Mov(_) | Op::Convert(_) => pick(&[1], seen),
            Op::Arith(a) if !a.carry_in => match a.op {
                ArithOp::Add | ArithOp::Or => pick(&[1, 2], seen),
                ArithOp::Sub => pick(&[1], seen),
                ArithOp::Mad => pick(&[3], seen),
                _ => Trace::Found {
                    sym: None,
                    cvta: false,
                },
            },
            Op::Cvta { to_generic, space } => {
                let t = pick(&[1], seen);
                match t {
                    Trace::Found { sym, .. } if to_generic && space == Space::Shared => {
                        Trace::Found { sym, cvta: true }
                    }
                    t => t,
                }
            }
            _ => Trace::Found {
                sym: None,
                cvta: false,
            },
        }
    }

    fn new_site(
        &mut self,
        kind: RaceSiteKind,
        loc: Option<Loc>,
        array: Option<String>,
        bytes: u64,
    ) -> Option<u32> {
        let id = self.sites.len() as u32 + 1;
        if id > bits::SITE_MAX {
            return None;
        }
        let (loc, inlined_at) = self.site_loc(loc);
        self.sites.push(RaceSite {
            id,
            kind,
            loc,
            inlined_at,
            array: array.map(|a| demangle_var(&a)),
            bytes: bytes as u32,
            proven: None,
        });
        Some(id)
    }

    /// `loc`, or when it is code inlined from another file, the call in the kernel's own file
    /// it was inlined at (following nested inlining outwards).
    fn call_in_kernel_file(&self, loc: Option<Loc>) -> Option<Loc> {
        let mut l = loc?;
        for _ in 0..16 {
            if Some(l.file) == self.home {
                break;
            }
            let Some((file, line, column)) = l.inlined_at else {
                break;
            };
            l = Loc {
                file,
                line,
                column,
                inlined_at: self.calls.get(&(file, line, column)).copied(),
            };
        }
        Some(l)
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

    fn unchecked(&mut self, loc: Option<Loc>, i: &Instr, reason: String) {
        let (loc, _) = self.site_loc(loc);
        self.coverage.unchecked.push(RaceUnchecked {
            loc,
            instruction: i.opcode.clone(),
            reason,
        });
    }

    fn refuse(&mut self, why: String) {
        if self.coverage.not_checked.is_none() {
            self.coverage.not_checked = Some(why);
        }
    }

    /// Whether a block barrier orders the whole block: an immediate barrier number and no
    /// thread count.
    fn whole_block(i: &Instr) -> bool {
        let ops: Vec<&str> = i.operands.iter().map(|o| o.trim()).collect();
        let id_and_count: &[&str] = if matches!(i.op, Op::Sync { red: true, .. }) {
            // bar.red.op.type d, a{, b}, {!}c
            match ops.len() {
                3 => &ops[1..2],
                _ => return false,
            }
        } else {
            &ops[..]
        };
        id_and_count.len() == 1 && crate::ir::immediate(id_and_count[0]).is_some()
    }

    fn plan(&mut self, facts: &FuncFacts) {
        let f = self.f;
        let mut loc = None;
        let mut exits = Vec::new();
        let leaving = exit_labels(f);
        for (k, s) in f.stmts.iter().enumerate() {
            let i = match &s.kind {
                StmtKind::Loc(l) => {
                    loc = Some(*l);
                    self.home.get_or_insert(l.file);
                    if let Some(at) = l.inlined_at {
                        self.calls.insert((l.file, l.line, l.column), at);
                    }
                    continue;
                }
                StmtKind::Instr(i) => i,
                _ => continue,
            };
            let e = effects(i);
            if matches!(e.flow, Flow::Return | Flow::Exit)
                && !matches!(i.op, Op::Exit { trap: true })
            {
                exits.push((k, loc, false));
            }
            if let Flow::Branch(to) = e.flow {
                if leaving.contains(to) {
                    exits.push((k, loc, true));
                }
            }
            if e.flow == Flow::Call {
                if let Some(c) = callee(i) {
                    if facts.syncs.contains(c) {
                        self.refuse(format!(
                            "it calls device function `{}`, which synchronizes threads and was not inlined",
                            demangle(c)
                        ));
                    } else if facts.shared.contains(c) {
                        self.shared_calls.push(k);
                        self.unchecked(
                            loc,
                            i,
                            SkipReason::NotInlined {
                                function: demangle(c),
                            }
                            .to_string(),
                        );
                    }
                }
            }
            let shared_sync = match i.op.mem() {
                Some(m) => {
                    matches!(m.op, MemOp::Mbarrier | MemOp::Tcgen05)
                        || (m.op == MemOp::Cp && m.bulk && m.is_async)
                }
                None => false,
            };
            if shared_sync {
                self.refuse(format!(
                    "`{}` synchronizes through shared memory in a way the checker does not model",
                    i.opcode
                ));
                continue;
            }
            if !e.known && matches!(i.space(), Space::Shared | Space::SharedCluster) {
                self.refuse(format!(
                    "`{}` touches shared memory in a way the checker does not know",
                    i.opcode
                ));
                continue;
            }
            match e.sync {
                Some(Sync::Block { .. }) => {
                    if Self::whole_block(i) {
                        let at = self.call_in_kernel_file(loc);
                        let place = at
                            .filter(|l| l.line > 0)
                            .map(|l| (l.file, l.line, l.column));
                        let known = place.and_then(|p| self.barrier_sites.get(&p).copied());
                        let id = known.or_else(|| {
                            let id = self.new_site(RaceSiteKind::Barrier, at, None, 0)?;
                            if let Some(p) = place {
                                self.barrier_sites.insert(p, id);
                            }
                            Some(id)
                        });
                        if let Some(id) = id {
                            let red = matches!(i.op, Op::Sync { red: true, .. });
                            self.plans.push((k, loc, Plan::Barrier { id, red }));
                            self.coverage.barriers += 1;
                        } else {
                            self.refuse(
                                "it has more checked places than a site number holds".into(),
                            );
                        }
                    } else {
                        self.refuse(format!(
                            "`{} {}` is a named barrier with a thread count or a computed number, which the checker does not model",
                            i.opcode,
                            i.operands.join(", ")
                        ));
                    }
                    continue;
                }
                Some(Sync::Arrive) | Some(Sync::Cluster) => {
                    self.refuse(format!(
                        "`{}` is a split or cluster barrier, which the checker does not model",
                        i.opcode
                    ));
                    continue;
                }
                Some(Sync::Warp) => {
                    if let Some(id) = self.new_site(RaceSiteKind::WarpSync, loc, None, 0) {
                        self.plans.push((k, loc, Plan::WarpSync { id }));
                        self.coverage.warp_syncs += 1;
                    } else {
                        self.plans.push((k, loc, Plan::Collective));
                    }
                    continue;
                }
                Some(Sync::Collective) => {
                    if e.mem
                        .iter()
                        .any(|a| matches!(a.space, Space::Shared | Space::Generic))
                    {
                        self.unchecked(
                            loc,
                            i,
                            format!(
                                "`{}` is a warp-collective access: which lane touches which bytes \
                                 is not modelled",
                                i.opcode
                            ),
                        );
                    }
                    self.plans.push((k, loc, Plan::Collective));
                    continue;
                }
                _ => {}
            }
            for a in &e.mem {
                let generic = a.space == Space::Generic;
                if a.space == Space::SharedCluster {
                    self.unchecked(loc, i, SkipReason::Cluster.to_string());
                    continue;
                }
                if a.space != Space::Shared && !generic {
                    continue;
                }
                let Some(addr) = i.operands.get(a.operand).and_then(|o| Address::parse(o)) else {
                    if !generic {
                        self.unchecked(loc, i, "the address cannot be read".into());
                    }
                    continue;
                };
                let trace = if addr.base_is_reg() {
                    self.trace(addr.base, 0, &mut BTreeSet::new())
                } else if self.is_shared_var(addr.base) {
                    Trace::Found {
                        sym: Some(addr.base.to_string()),
                        cvta: generic,
                    }
                } else {
                    Trace::Found {
                        sym: None,
                        cvta: false,
                    }
                };
                let array = match &trace {
                    Trace::Found { sym, .. } => sym.clone(),
                    _ => None,
                };
                if generic && !matches!(trace, Trace::Found { cvta: true, .. }) {
                    // Not proven to be shared memory: global accesses are not raced on here.
                    continue;
                }
                let Some(bytes) = a.bytes else {
                    self.unchecked(
                        loc,
                        i,
                        SkipReason::UnknownSize {
                            op: i.opcode.clone(),
                        }
                        .to_string(),
                    );
                    continue;
                };
                let kind = match a.kind {
                    MemKind::Read => RaceSiteKind::Read,
                    MemKind::Write => RaceSiteKind::Write,
                    MemKind::Atomic | MemKind::Reduce => RaceSiteKind::Atomic,
                };
                match self.new_site(kind, loc, array.clone(), bytes) {
                    Some(id) => {
                        self.plans.push((
                            k,
                            loc,
                            Plan::Access {
                                id,
                                kind,
                                operand: a.operand,
                                bytes,
                                generic,
                                array,
                            },
                        ));
                        self.coverage.checked += 1;
                    }
                    None => self.unchecked(
                        loc,
                        i,
                        "the kernel has more shared accesses than a site number holds".into(),
                    ),
                }
            }
        }
        // Where threads that leave before a barrier went: only a kernel's own `ret` and
        // `exit` end its threads (a device function's `ret` returns to its caller).
        if f.entry && self.coverage.barriers > 0 {
            for (k, loc, branch) in exits {
                match self.new_site(RaceSiteKind::Exit, loc, None, 0) {
                    Some(id) => self.plans.push((k, loc, Plan::Exit { id, branch })),
                    None => {
                        self.refuse("it has more checked places than a site number holds".into())
                    }
                }
            }
        }
    }

    /// The array an access's conflicts are looked for in: its symbol, one name for every
    /// `extern` array (they all start the dynamic shared memory), `None` for any.
    fn alias_key(&self, array: &Option<String>) -> Option<String> {
        let a = array.as_ref()?;
        match self.m.var(self.f, a) {
            Some(v) if v.bytes.is_none() => Some(DYNAMIC.to_string()),
            _ => Some(a.clone()),
        }
    }

    /// Leaves out the checks of accesses that cannot race (`intervals.rs`, `index.rs`).
    fn prune(&mut self) {
        let shape = self.opts.block.and_then(index::Shape::of);
        let reader = shape.map(|s| index::Reader::new(&self.facts, s));
        let mut touches = Vec::new();
        let mut barriers = Vec::new();
        for (k, _, plan) in &self.plans {
            match plan {
                Plan::Access {
                    kind,
                    array,
                    operand,
                    bytes,
                    generic,
                    ..
                } => {
                    let index = reader
                        .as_ref()
                        .filter(|_| !*generic)
                        .and_then(|r| {
                            let i = self.f.instr(*k)?;
                            let addr = Address::parse(i.operands.get(*operand)?)?;
                            r.form(&self.facts.cfg, *k, &addr)
                        })
                        .map(|form| index::Index {
                            form,
                            bytes: *bytes as i64,
                        });
                    touches.push(intervals::Touch {
                        stmt: *k,
                        array: self.alias_key(array),
                        used: match kind {
                            RaceSiteKind::Read => intervals::Use::Read,
                            RaceSiteKind::Write => intervals::Use::Write,
                            _ => intervals::Use::Atomic,
                        },
                        index,
                    })
                }
                Plan::Barrier { .. } => {
                    let guarded = self.f.instr(*k).is_some_and(|i| i.guard.is_some());
                    barriers.push((*k, guarded));
                }
                _ => {}
            }
        }
        for &k in &self.shared_calls {
            touches.push(intervals::Touch {
                stmt: k,
                array: None,
                used: intervals::Use::Any,
                index: None,
            });
        }
        // Statements with several shared accesses keep them all.
        let mut per_stmt: BTreeMap<usize, usize> = BTreeMap::new();
        for t in &touches {
            *per_stmt.entry(t.stmt).or_default() += 1;
        }
        self.fixed_order = intervals::fixed_order(&self.facts.cfg, &barriers);
        let proofs: BTreeMap<usize, intervals::Proof> =
            intervals::unneeded(&self.facts.cfg, &barriers, &touches, shape)
                .into_iter()
                .filter(|(k, _)| per_stmt.get(k) == Some(&1))
                .collect();
        for (k, _, plan) in &self.plans {
            let (Plan::Access { id, .. }, Some(p)) = (plan, proofs.get(k)) else {
                continue;
            };
            let proof = match p {
                intervals::Proof::NoConflict => RaceProof::NoConflict,
                intervals::Proof::ThreadPrivate => RaceProof::ThreadPrivate,
            };
            if let Some(site) = self.sites.iter_mut().find(|s| s.id == *id) {
                site.proven = Some(proof);
            }
            self.coverage.proven += 1;
            if proof == RaceProof::ThreadPrivate {
                self.coverage.thread_private += 1;
            }
        }
        // Where no checked access can touch the dynamic shared memory, the shadow leaves it
        // out.
        self.shadow_dynamic = self.plans.iter().any(|(k, _, plan)| match plan {
            Plan::Access { array, .. } if !proofs.contains_key(k) => {
                self.alias_key(array).map_or(true, |a| a == DYNAMIC)
            }
            _ => false,
        }) || !self.shared_calls.is_empty();
        self.pruned = proofs.into_keys().collect();
    }

    /// Records per shadow word: the last write (`W`) and, when the kernel has a read that is
    /// checked, its two readers (`R1`, `R2`). Only checked reads write reader records, so a
    /// kernel without one would only ever find them empty.
    fn records(&self) -> u32 {
        let reads = self.plans.iter().any(|(k, _, p)| {
            matches!(
                p,
                Plan::Access {
                    kind: RaceSiteKind::Read,
                    ..
                }
            ) && !self.pruned.contains(k)
        });
        if reads {
            3
        } else {
            1
        }
    }

    fn has_shadow(&self) -> bool {
        self.coverage.checked > 0 || self.coverage.barriers > 0
    }

    /// Adds this kernel's edits; whether it changed anything.
    fn emit(&self, edits: &mut Edits, cost: &mut RaceCost) -> bool {
        if self.coverage.not_checked.is_some()
            || (!self.has_shadow() && self.coverage.warp_syncs == 0)
        {
            return false;
        }
        let f = self.f;
        if !f.params.iter().any(|p| p.name == "__cc_rec") {
            return false;
        }
        edits.insert(f.body_open, DECLS);
        let first = f.prologue_at();
        let prologue = self.prologue();
        cost.static_shared_bytes = self.static_shared_bytes();
        let clear = prologue
            .split_once("$__ccr_clear:")
            .and_then(|(_, rest)| rest.split_once("$__ccr_off:"))
            .map_or(0, |(body, _)| cost::instructions(body));
        cost.clear_loop = clear;
        cost.records = self.records();
        cost.shadow_dynamic = self.shadow_dynamic;
        cost.prologue = cost::instructions(&prologue) - clear;
        edits.insert(first, prologue);
        let mut label = 0u32;
        for (k, _, plan) in &self.plans {
            let s = &f.stmts[*k];
            let Some(i) = f.instr(*k) else { continue };
            label += 1;
            match plan {
                Plan::Access { .. } if self.pruned.contains(k) => {}
                Plan::Access {
                    id,
                    kind,
                    operand,
                    bytes,
                    generic,
                    array,
                } => {
                    if let Some(code) =
                        self.access(i, *id, *kind, *operand, *bytes, *generic, array, label)
                    {
                        cost.accesses.push(cost::instructions(&code));
                        edits.insert(s.span.start, code);
                    }
                }
                Plan::Barrier { id, red } => {
                    let code = if self.fixed_order {
                        guarded(i, &barrier_fixed(i, *id, *red, label))
                    } else {
                        guarded(i, &barrier(i, *id, *red, label))
                    };
                    cost.barriers.push(cost::instructions(&code));
                    cost.barrier_atomics.push(cost::shared_atomics(&code));
                    edits.replace(s.span.clone(), code);
                }
                Plan::Exit { id, branch } => {
                    let code = guarded(i, &exit_record(*id, *branch, label));
                    cost.exits.push(cost::instructions(&code));
                    edits.insert(s.span.start, code);
                }
                Plan::WarpSync { id } => {
                    let (before, replaced) = warp_sync(i, *id, label);
                    let after = guarded(i, WARP_EPOCH);
                    cost.warp.push(
                        cost::instructions(&before)
                            + cost::instructions(&replaced)
                            + cost::instructions(&after),
                    );
                    edits.insert(s.span.start, before);
                    edits.replace(s.span.clone(), replaced);
                    edits.insert(s.span.end, after);
                }
                Plan::Collective => {
                    if self.has_shadow() {
                        let after = guarded(i, WARP_EPOCH);
                        cost.warp.push(cost::instructions(&after));
                        edits.insert(s.span.end, after);
                    }
                }
            }
        }
        true
    }

    /// The `__shared__` arrays of fixed size this function names (module-scope ones declared
    /// after it cannot be).
    fn named_shared_vars(&self) -> Vec<&'a crate::ir::read::Var> {
        let named: BTreeSet<&str> = self
            .f
            .instrs()
            .flat_map(|i| i.operands.iter())
            .flat_map(|o| o.split(|c: char| !(c.is_ascii_alphanumeric() || "_$.".contains(c))))
            .collect();
        let mut vars: Vec<&crate::ir::read::Var> = self
            .f
            .vars
            .iter()
            .chain(&self.m.vars)
            .filter(|v| v.space == Space::Shared && v.bytes.is_some())
            .filter(|v| named.contains(v.name.as_str()))
            .collect();
        vars.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        vars.dedup_by(|a, b| a.name == b.name);
        vars
    }

    /// Bytes of the fixed-size `__shared__` arrays the function names.
    fn static_shared_bytes(&self) -> u32 {
        self.named_shared_vars()
            .iter()
            .filter_map(|v| v.bytes)
            .map(|b| b as u32)
            .sum()
    }

    fn prologue(&self) -> String {
        let mut s = String::from(
            "\n\t// cudacheck race checking: thread index, epochs, shadow\n\
             \tmov.u32 %__ccr_t0, %tid.x;\n\tmov.u32 %__ccr_t1, %tid.y;\n\tmov.u32 %__ccr_t2, %tid.z;\n\
             \tmov.u32 %__ccr_t3, %ntid.x;\n\tmov.u32 %__ccr_t4, %ntid.y;\n\tmov.u32 %__ccr_t5, %ntid.z;\n\
             \tmad.lo.u32 %__ccr_t6, %__ccr_t2, %__ccr_t4, %__ccr_t1;\n\
             \tmad.lo.u32 %__ccr_T, %__ccr_t6, %__ccr_t3, %__ccr_t0;\n\
             \tmul.lo.u32 %__ccr_t6, %__ccr_t3, %__ccr_t4;\n\tmul.lo.u32 %__ccr_N, %__ccr_t6, %__ccr_t5;\n\
             \tmov.u32 %__ccr_B, 1;\n\tcvt.u64.u32 %__ccr_E, %__ccr_T;\n\
             \tsetp.ne.u32 %__ccr_left, 0, 0;\n\
             \tor.b64 %__ccr_E, %__ccr_E, 274877906944;\n",
        );
        if !self.has_shadow() {
            s.push_str("\tsetp.ne.u32 %__ccr_on, 0, 0;\n");
            return s;
        }
        // The lowest shared address in use: the static arrays come before the dynamic ones.
        s.push_str("\tmov.u32 %__ccr_lo, __ccr_dyn;\n");
        for v in self.named_shared_vars().iter().map(|v| v.name.as_str()) {
            let _ = write!(
                s,
                "\tmov.u32 %__ccr_t7, {v};\n\tmin.u32 %__ccr_lo, %__ccr_lo, %__ccr_t7;\n"
            );
        }
        let udyn = self.opts.dynamic_shared_bytes;
        let _ = write!(
            s,
            "\tmov.u32 %__ccr_t8, __ccr_dyn;\n\
             \tadd.u32 %__ccr_sh, %__ccr_t8, {};\n\
             \tand.b32 %__ccr_sh, %__ccr_sh, -16;\n\
             \tsub.u32 %__ccr_t0, {}, %__ccr_lo;\n\
             \tshr.u32 %__ccr_nw, %__ccr_t0, 2;\n\
             \tshl.b32 %__ccr_nw8, %__ccr_nw, 3;\n\
             \tadd.u32 %__ccr_W, %__ccr_sh, 48;\n\
             \tmad.lo.u32 %__ccr_t1, %__ccr_nw, {}, 63;\n\
             \tand.b32 %__ccr_t1, %__ccr_t1, -16;\n\
             \tmov.u32 %__ccr_t2, %dynamic_smem_size;\n\
             \tsub.u32 %__ccr_t3, %__ccr_sh, %__ccr_t8;\n\
             \tsetp.le.u32 %__ccr_q0, %__ccr_t3, %__ccr_t2;\n\
             \tsub.u32 %__ccr_t2, %__ccr_t2, %__ccr_t3;\n\
             \tsetp.le.and.u32 %__ccr_on, %__ccr_t1, %__ccr_t2, %__ccr_q0;\n\
             \tsetp.eq.u32 %__ccr_q1, %__ccr_T, 0;\n\
             \t@!%__ccr_on bra $__ccr_off;\n\
             \tshr.u32 %__ccr_t1, %__ccr_t1, 4;\n\
             \tmov.u32 %__ccr_t4, %__ccr_T;\n\
             \tmov.b64 %__ccr_u0, 0;\n\
             $__ccr_clear:\n\
             \tsetp.ge.u32 %__ccr_q2, %__ccr_t4, %__ccr_t1;\n\
             \t@%__ccr_q2 bra $__ccr_cleared;\n\
             \tmad.lo.u32 %__ccr_t5, %__ccr_t4, 16, %__ccr_sh;\n\
             \tst.shared.v2.u64 [%__ccr_t5], {{%__ccr_u0, %__ccr_u0}};\n\
             \tadd.u32 %__ccr_t4, %__ccr_t4, %__ccr_N;\n\
             \tbra.uni $__ccr_clear;\n\
             $__ccr_off:\n\
             \tld.param.u64 %__ccr_rec, [__cc_rec];\n\tcvta.to.global.u64 %__ccr_rec, %__ccr_rec;\n\
             \tmov.u32 %__ccr_t6, 1;\n\
             \t@%__ccr_q1 st.global.u32 [%__ccr_rec+{}], %__ccr_t6;\n\
             $__ccr_cleared:\n\
             \tbarrier.sync 0;\n",
            u64::from(udyn) + 15,
            // The words the shadow covers: up to its own start, or only the static arrays.
            if self.shadow_dynamic || udyn == 0 {
                "%__ccr_sh"
            } else {
                "%__ccr_t8"
            },
            8 * self.records(),
            super::RACE_RECORD_OFFSET + 64,
        );
        s
    }

    #[allow(clippy::too_many_arguments)]
    fn access(
        &self,
        i: &Instr,
        id: u32,
        kind: RaceSiteKind,
        operand: usize,
        bytes: u64,
        generic: bool,
        array: &Option<String>,
        label: u32,
    ) -> Option<String> {
        let addr = Address::parse(i.operands.get(operand)?)?;
        let skip = format!("$__ccr_s{label}");
        let mut s = String::from("\n");
        if let Some(g) = &i.guard {
            let _ = writeln!(s, "\t{} bra {skip};", g.negate());
        }
        let _ = writeln!(s, "\t@!%__ccr_on bra {skip};");
        // The shared-window address, into %__ccr_a.
        let off = addr.offset;
        if addr.base.is_empty() {
            let _ = writeln!(s, "\tmov.u32 %__ccr_a, {};", off as u32);
        } else if !addr.base_is_reg() {
            let _ = writeln!(
                s,
                "\tmov.u32 %__ccr_a, {};\n\tadd.u32 %__ccr_a, %__ccr_a, {};",
                addr.base, off as i32
            );
        } else {
            let wide = self
                .f
                .reg_type(addr.base)
                .is_some_and(|t| t.ends_with("64"));
            if generic {
                let _ = writeln!(
                    s,
                    "\tcvta.to.shared.u64 %__ccr_u0, {};\n\tcvt.u32.u64 %__ccr_a, %__ccr_u0;",
                    addr.base
                );
            } else if wide {
                let _ = writeln!(s, "\tcvt.u32.u64 %__ccr_a, {};", addr.base);
            } else {
                let _ = writeln!(s, "\tmov.u32 %__ccr_a, {};", addr.base);
            }
            if off != 0 {
                let _ = writeln!(s, "\tadd.u32 %__ccr_a, %__ccr_a, {};", off as i32);
            }
        }
        let code: u64 = match kind {
            RaceSiteKind::Read => 1,
            RaceSiteKind::Write => 2,
            _ => 3,
        };
        let whole = bytes >= 4;
        let konst = (code << bits::KIND_SHIFT)
            | (u64::from(id) << bits::SITE_SHIFT)
            | if whole { bits::BYTES_MASK } else { 0 };
        let _ = write!(
            s,
            "\tsub.u32 %__ccr_t0, %__ccr_a, %__ccr_lo;\n\tshr.u32 %__ccr_w, %__ccr_t0, 2;\n\
             \tor.b64 %__ccr_me, %__ccr_E, {konst};\n"
        );
        if !whole {
            let _ = write!(
                s,
                "\tand.b32 %__ccr_t1, %__ccr_a, 3;\n\tshl.b32 %__ccr_t2, {}, %__ccr_t1;\n\
                 \tand.b32 %__ccr_t2, %__ccr_t2, 15;\n\tcvt.u64.u32 %__ccr_u2, %__ccr_t2;\n\
                 \tshl.b64 %__ccr_u2, %__ccr_u2, 24;\n\tor.b64 %__ccr_me, %__ccr_me, %__ccr_u2;\n",
                (1u32 << bytes) - 1
            );
        }
        let words = (bytes / 4).max(1);
        for w in 0..words {
            // The word's index (the access's first word needs no addition), in the shadow
            // or out of it, then its `W` record.
            let index = if w == 0 {
                "%__ccr_w"
            } else {
                let _ = writeln!(s, "\tadd.u32 %__ccr_t3, %__ccr_w, {w};");
                "%__ccr_t3"
            };
            let _ = write!(
                s,
                "\tsetp.ge.u32 %__ccr_q0, {index}, %__ccr_nw;\n\
                 \t@%__ccr_q0 bra {skip};\n\tmad.lo.u32 %__ccr_t4, {index}, 8, %__ccr_W;\n"
            );
            let report_label = format!("$__ccr_k{label}_{w}");
            if kind == RaceSiteKind::Read {
                s.push_str("\tadd.u32 %__ccr_t5, %__ccr_t4, %__ccr_nw8;\n");
                // Record this read first (in R1 when R1 is stale or this thread's, else in R2),
                // then look at W: a writer swaps itself into W before it looks at R1 and R2, so
                // of a read and a write of one epoch, the later one sees the earlier.
                s.push_str(
                    "\tld.shared.u64 %__ccr_x, [%__ccr_t5];\n\
                     \txor.b64 %__ccr_d, %__ccr_x, %__ccr_me;\n",
                );
                let _ = write!(
                    s,
                    "\tand.b64 %__ccr_u1, %__ccr_d, {};\n\tsetp.ne.u64 %__ccr_q2, %__ccr_u1, 0;\n\
                     \tand.b64 %__ccr_u1, %__ccr_d, {};\n\tsetp.eq.or.u64 %__ccr_q2, %__ccr_u1, 0, %__ccr_q2;\n\
                     \t@%__ccr_q2 st.shared.u64 [%__ccr_t5], %__ccr_me;\n\
                     \tadd.u32 %__ccr_t5, %__ccr_t5, %__ccr_nw8;\n\
                     \t@!%__ccr_q2 st.shared.u64 [%__ccr_t5], %__ccr_me;\n",
                    bits::BEPOCH_MASK,
                    bits::TID_MASK
                );
                s.push_str("\tld.shared.u64 %__ccr_x, [%__ccr_t4];\n");
            } else {
                s.push_str("\tatom.shared.exch.b64 %__ccr_x, [%__ccr_t4], %__ccr_me;\n");
            }
            s.push_str(&conflict(
                "%__ccr_x",
                kind == RaceSiteKind::Atomic,
                "%__ccr_q1",
                &format!("$__ccr_w{label}_{w}"),
            ));
            // A read, or a write in a kernel without read records (every read is proven
            // unable to race), has only `W` to look at; other writes look at `R1` and `R2`.
            let other = if kind == RaceSiteKind::Read || self.records() == 1 {
                "%__ccr_x"
            } else {
                s.push_str("\tadd.u32 %__ccr_t5, %__ccr_t4, %__ccr_nw8;\n");
                s.push_str("\tld.shared.u64 %__ccr_y, [%__ccr_t5];\n");
                s.push_str(&conflict(
                    "%__ccr_y",
                    false,
                    "%__ccr_q2",
                    &format!("$__ccr_r{label}_{w}"),
                ));
                s.push_str("\tadd.u32 %__ccr_t5, %__ccr_t5, %__ccr_nw8;\n");
                s.push_str("\tld.shared.u64 %__ccr_z, [%__ccr_t5];\n");
                s.push_str(&conflict(
                    "%__ccr_z",
                    false,
                    "%__ccr_q3",
                    &format!("$__ccr_v{label}_{w}"),
                ));
                // The first conflicting record of W, R1, R2.
                s.push_str(
                    "\tselp.b64 %__ccr_z, %__ccr_y, %__ccr_z, %__ccr_q2;\n\
                     \tselp.b64 %__ccr_y, %__ccr_x, %__ccr_z, %__ccr_q1;\n\
                     \tor.pred %__ccr_q1, %__ccr_q1, %__ccr_q2;\n\
                     \tor.pred %__ccr_q1, %__ccr_q1, %__ccr_q3;\n",
                );
                "%__ccr_y"
            };
            s.push_str(&report(
                "%__ccr_q1",
                other,
                RaceEventKind::Race,
                array,
                w,
                &report_label,
            ));
        }
        let _ = writeln!(s, "{skip}:");
        Some(s)
    }

    fn finish(self, changed: bool) -> RaceKernel {
        let records = self.records();
        let mut coverage = self.coverage;
        if !changed && coverage.not_checked.is_none() && coverage.warp_syncs + coverage.checked > 0
        {
            coverage.not_checked =
                Some("the module is not bounds-checked (no fault record to report to)".into());
        }
        RaceKernel {
            symbol: self.f.name.clone(),
            name: demangle(&self.f.name),
            shadow: changed && (coverage.checked > 0 || coverage.barriers > 0),
            shadow_records: records,
            shadow_dynamic: self.shadow_dynamic,
            sites: self.sites,
            coverage,
        }
    }
}

/// Code that sets `p` when the record in `x` conflicts with this access (`%__ccr_me`): same
/// block epoch, another thread, another warp or the same warp epoch, a byte in common, and
/// (`write_only`: for an atomic against `W`) a plain write; ends at label `done`.
fn conflict(x: &str, write_only: bool, p: &str, done: &str) -> String {
    // Most records are of an earlier epoch: one test, and out (`p` is false at `done`).
    let mut s = format!(
        "\txor.b64 %__ccr_d, {x}, %__ccr_me;\n\
         \tand.b64 %__ccr_u1, %__ccr_d, {bm};\n\tsetp.eq.u64 {p}, %__ccr_u1, 0;\n\
         \t@!{p} bra {done};\n\
         \tand.b64 %__ccr_u1, %__ccr_d, {tm};\n\tsetp.ne.and.u64 {p}, %__ccr_u1, 0, {p};\n\
         \tand.b64 %__ccr_u1, %__ccr_d, {wm};\n\tsetp.ne.u64 %__ccr_q7, %__ccr_u1, 0;\n\
         \tand.b64 %__ccr_u1, %__ccr_d, {em};\n\tsetp.eq.or.u64 %__ccr_q7, %__ccr_u1, 0, %__ccr_q7;\n\
         \tand.pred {p}, {p}, %__ccr_q7;\n\
         \tand.b64 %__ccr_u1, {x}, %__ccr_me;\n\tand.b64 %__ccr_u1, %__ccr_u1, {ym};\n\
         \tsetp.ne.and.u64 {p}, %__ccr_u1, 0, {p};\n",
        bm = bits::BEPOCH_MASK,
        tm = bits::TID_MASK,
        wm = bits::WARP_MASK,
        em = bits::WEPOCH_MASK,
        ym = bits::BYTES_MASK,
    );
    if write_only {
        let _ = write!(
            s,
            "\tshr.u64 %__ccr_u1, {x}, {};\n\tsetp.eq.and.u64 {p}, %__ccr_u1, 2, {p};\n",
            bits::KIND_SHIFT
        );
    }
    let _ = writeln!(s, "{done}:");
    s
}

/// The report ([`call_report`]) when `p` holds: this access (`%__ccr_me`) against `other`, at the
/// raced word's byte offset in `array` (its shared address when the array is unknown).
fn report(
    p: &str,
    other: &str,
    kind: RaceEventKind,
    array: &Option<String>,
    word: u64,
    label: &str,
) -> String {
    let mut s = format!("\t@!{p} bra {label};\n");
    match array {
        Some(a) => {
            let _ = write!(
                s,
                "\tmov.u32 %__ccr_t6, {a};\n\tsub.u32 %__ccr_t7, %__ccr_a, %__ccr_t6;\n\
                 \tadd.u32 %__ccr_t7, %__ccr_t7, {};\n",
                word * 4
            );
        }
        None => {
            let _ = writeln!(s, "\tadd.u32 %__ccr_t7, %__ccr_a, {};", word * 4);
        }
    }
    s.push_str(&call_report(kind, "%__ccr_me", other, "%__ccr_t7"));
    let _ = writeln!(s, "{label}:");
    s
}

/// The report, written inline: event `kind`, the access or barrier word `me`, the `other`
/// one, and `off` (the byte offset, or the mask), into the race record (layout in
/// `record.rs`). Every report counts; the first one writes the record, and a barrier misuse
/// replaces a race reported first (the race is often its consequence). The record's address
/// is read from the parameter here, on this path only, so that it holds no register for the
/// rest of the kernel.
fn call_report(kind: RaceEventKind, me: &str, other: &str, off: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let code = kind.code();
    let replace = if kind == RaceEventKind::Race {
        String::new()
    } else {
        format!(
            "\tatom.global.cas.b32 %__ccr_r, [%__ccr_rec+8], {race}, {code};\n\
             \tsetp.eq.u32 %__ccr_rp, %__ccr_r, {race};\n\t@%__ccr_rp bra $__ccr_rw{n};\n",
            race = RaceEventKind::Race.code()
        )
    };
    format!(
        "\t{{\n\tld.param.u64 %__ccr_rec, [__cc_rec];\n\tcvta.to.global.u64 %__ccr_rec, %__ccr_rec;\n\
         \tadd.s64 %__ccr_rec, %__ccr_rec, {base};\n\
         \tatom.global.add.u32 %__ccr_r, [%__ccr_rec+4], 1;\n\
         \tatom.global.cas.b32 %__ccr_r, [%__ccr_rec], 0, 1;\n\
         \tsetp.eq.u32 %__ccr_rp, %__ccr_r, 0;\n\t@%__ccr_rp bra $__ccr_rw{n};\n\
         {replace}\
         \tbra.uni $__ccr_rd{n};\n\
         $__ccr_rw{n}:\n\
         \tmov.u32 %__ccr_r, {code};\n\tst.global.u32 [%__ccr_rec+8], %__ccr_r;\n\
         \tmov.u32 %__ccr_r, {off};\n\tst.global.u32 [%__ccr_rec+12], %__ccr_r;\n\
         \tst.global.u64 [%__ccr_rec+16], {me};\n\
         \tst.global.u64 [%__ccr_rec+24], {other};\n\
         \tmov.u32 %__ccr_r, %ctaid.x;\n\tst.global.u32 [%__ccr_rec+32], %__ccr_r;\n\
         \tmov.u32 %__ccr_r, %ctaid.y;\n\tst.global.u32 [%__ccr_rec+36], %__ccr_r;\n\
         \tmov.u32 %__ccr_r, %ctaid.z;\n\tst.global.u32 [%__ccr_rec+40], %__ccr_r;\n\
         $__ccr_rd{n}:\n\t}}\n",
        base = super::RACE_RECORD_OFFSET,
    )
}

/// The warp epoch moves on (modulo 2^10, not carrying into the block epoch).
const WARP_EPOCH: &str = "\tadd.u64 %__ccr_u3, %__ccr_E, 268435456;\n\
     \tand.b64 %__ccr_u3, %__ccr_u3, 274609471488;\n\
     \tand.b64 %__ccr_E, %__ccr_E, -274609471489;\n\
     \tor.b64 %__ccr_E, %__ccr_E, %__ccr_u3;\n";

/// `code` run only when `i`'s guard holds.
fn guarded(i: &Instr, code: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    match &i.guard {
        None => format!("\n{code}"),
        Some(g) => {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("\n\t{} bra $__ccr_g{n};\n{code}$__ccr_g{n}:\n", g.negate())
        }
    }
}

/// A block barrier, race-checked. Before it, `(epoch, site, thread)` goes into the epoch's two
/// slots, by one lane of each group of lanes that arrive together (the others are at the same
/// barrier: the lowest active lane speaks for them, so a barrier costs two atomics a warp, not
/// two a thread). The barrier itself is `barrier.red.popc` of a true predicate: the non-aligned
/// form, so lanes of one warp at different barrier statements arrive separately instead of
/// hanging the warp, and every arriving thread learns how many threads arrived. A user's
/// `bar.red` gets this counting barrier before it and runs after the check, non-aligned too
/// (only when every thread reached the same statement, so the reduction's operation is never
/// mixed with another in one barrier instance).
fn barrier(i: &Instr, id: u32, red: bool, label: u32) -> String {
    let mut s = barrier_before(id, label);
    s.push_str("\tbarrier.red.popc.u32 %__ccr_n, 0, 1;\n");
    s.push_str(&barrier_after(label));
    if red {
        s.push_str(&user_reduction(i));
    }
    s
}

fn barrier_before(id: u32, label: u32) -> String {
    format!(
        "\t@!%__ccr_on bra $__ccr_b{label};\n\
         \tand.b32 %__ccr_t0, %__ccr_B, 1;\n\tmad.lo.u32 %__ccr_t9, %__ccr_t0, 16, %__ccr_sh;\n\
         \tactivemask.b32 %__ccr_t1;\n\tmov.u32 %__ccr_t2, %lanemask_lt;\n\
         \tand.b32 %__ccr_t1, %__ccr_t1, %__ccr_t2;\n\tsetp.ne.u32 %__ccr_q3, %__ccr_t1, 0;\n\
         \t@%__ccr_q3 bra $__ccr_b{label};\n\
         \tcvt.u64.u32 %__ccr_u0, %__ccr_B;\n\tshl.b64 %__ccr_u0, %__ccr_u0, 40;\n\
         \tcvt.u64.u32 %__ccr_u1, %__ccr_T;\n\tor.b64 %__ccr_u0, %__ccr_u0, %__ccr_u1;\n\
         \tor.b64 %__ccr_u1, %__ccr_u0, {};\n\tred.shared.max.u64 [%__ccr_t9], %__ccr_u1;\n\
         \tor.b64 %__ccr_u1, %__ccr_u0, {};\n\tred.shared.max.u64 [%__ccr_t9+8], %__ccr_u1;\n\
         $__ccr_b{label}:\n",
        u64::from(id) << 10,
        u64::from(0x3FFF_FFFF - id) << 10,
    )
}

/// After the counting barrier: two sites in this epoch's slots mean a divergent barrier;
/// fewer arrivals than threads in the block mean threads left the block before it (the
/// exit slot, when of this epoch, says where). Either is reported by the thread the first
/// slot names, and every thread then ends: all of them read the same slots and the same
/// count, so the whole block takes one decision and none waits at a later barrier for threads
/// that left. Otherwise the epochs move on. Cost per barrier when nothing is wrong: two
/// loads, and about fifteen ALU instructions and branches.
fn barrier_after(label: u32) -> String {
    format!(
        "\t@!%__ccr_on bra $__ccr_c{label};\n\
         \tld.shared.u64 %__ccr_x, [%__ccr_t9];\n\tld.shared.u64 %__ccr_y, [%__ccr_t9+8];\n\
         \tcvt.u64.u32 %__ccr_u0, %__ccr_B;\n\
         \tshr.u64 %__ccr_u1, %__ccr_x, 40;\n\tsetp.eq.u64 %__ccr_q1, %__ccr_u1, %__ccr_u0;\n\
         \tshr.u64 %__ccr_u1, %__ccr_y, 40;\n\tsetp.eq.and.u64 %__ccr_q1, %__ccr_u1, %__ccr_u0, %__ccr_q1;\n\
         \tshr.u64 %__ccr_u1, %__ccr_x, 10;\n\tand.b64 %__ccr_u1, %__ccr_u1, 1073741823;\n\
         \tshr.u64 %__ccr_u2, %__ccr_y, 10;\n\tand.b64 %__ccr_u2, %__ccr_u2, 1073741823;\n\
         \tsub.u64 %__ccr_u2, 1073741823, %__ccr_u2;\n\
         \tsetp.ne.and.u64 %__ccr_q1, %__ccr_u1, %__ccr_u2, %__ccr_q1;\n\
         \tsetp.lt.u32 %__ccr_q4, %__ccr_n, %__ccr_N;\n\
         \tor.pred %__ccr_q5, %__ccr_q1, %__ccr_q4;\n\
         \t@!%__ccr_q5 bra $__ccr_c{label};\n\
         \tand.b64 %__ccr_u1, %__ccr_x, 1023;\n\tcvt.u64.u32 %__ccr_u3, %__ccr_T;\n\
         \tsetp.ne.u64 %__ccr_q2, %__ccr_u1, %__ccr_u3;\n\
         \t@%__ccr_q2 bra $__ccr_e{label};\n\
         \tshr.u64 %__ccr_u1, %__ccr_x, 10;\n\tand.b64 %__ccr_u1, %__ccr_u1, 1073741823;\n\
         \tshl.b64 %__ccr_u1, %__ccr_u1, 10;\n\tor.b64 %__ccr_me, %__ccr_u1, %__ccr_u3;\n\
         \t@!%__ccr_q1 bra $__ccr_x{label};\n\
         \tand.b64 %__ccr_d, %__ccr_y, 1023;\n\tshl.b64 %__ccr_u2, %__ccr_u2, 10;\n\tor.b64 %__ccr_d, %__ccr_d, %__ccr_u2;\n\
         {divergent}\
         \tbra.uni $__ccr_e{label};\n\
         $__ccr_x{label}:\n\
         {exited}",
        divergent = call_report(RaceEventKind::DivergentBarrier, "%__ccr_me", "%__ccr_d", "0"),
        exited = exited_and_next(label),
    )
}

/// The end of a barrier's check: the report of threads that left (with the exit slot of
/// this epoch as `other`, when there is one), `exit`, and, at `$__ccr_c`, where the block
/// goes on when nothing was wrong, the next epoch.
fn exited_and_next(label: u32) -> String {
    format!(
        "\tcvt.u64.u32 %__ccr_u0, %__ccr_B;\n\
         \tld.shared.u64 %__ccr_z, [%__ccr_sh+32];\n\
         \tshr.u64 %__ccr_u1, %__ccr_z, 40;\n\tsetp.eq.u64 %__ccr_q6, %__ccr_u1, %__ccr_u0;\n\
         \tand.b64 %__ccr_d, %__ccr_z, 1099511627775;\n\
         \tselp.b64 %__ccr_d, %__ccr_d, 0, %__ccr_q6;\n\
         {exited}\
         $__ccr_e{label}:\n\
         \texit;\n\
         $__ccr_c{label}:\n\
         {next}",
        next = next_epoch(),
        exited = call_report(
            RaceEventKind::ExitedBarrier,
            "%__ccr_me",
            "%__ccr_d",
            "%__ccr_n"
        ),
    )
}

/// A user's `bar.red` after the counting barrier, non-aligned.
fn user_reduction(i: &Instr) -> String {
    format!("\t{} {};\n", i.non_aligned_barrier(), i.operands.join(", "))
}

/// The block epoch moves on (modulo 2^24) and the warp epoch starts again: `B` and the
/// epoch bits of `E` (which holds only the thread and the two epochs) together.
fn next_epoch() -> String {
    let keep = ((1u64 << bits::KIND_SHIFT) - 1) & !bits::WEPOCH_MASK;
    format!(
        "\tadd.u32 %__ccr_B, %__ccr_B, 1;\n\tand.b32 %__ccr_B, %__ccr_B, 16777215;\n\
         \tadd.u64 %__ccr_E, %__ccr_E, {};\n\tand.b64 %__ccr_E, %__ccr_E, {keep};\n",
        1u64 << bits::BEPOCH_SHIFT
    )
}

/// A block barrier of a kernel whose threads all meet its barriers in one order
/// ([`intervals::fixed_order`]): two threads of one epoch are at the same barrier statement,
/// so there is nothing to fold into the slots before it or to compare after it; the count
/// the barrier returns alone says whether threads left the block. When some did, the first
/// thread to claim the report word (zero since the shadow was cleared; the block ends after
/// this, so it is claimed once) reports, with the exit slot of this epoch as `other`. Cost
/// per barrier when nothing is wrong: the barrier, a comparison and a branch, and the epoch's
/// four instructions; no shared atomic and no shared load.
fn barrier_fixed(i: &Instr, id: u32, red: bool, label: u32) -> String {
    let mut s = format!(
        "\tbarrier.red.popc.u32 %__ccr_n, 0, 1;\n\
         \t@!%__ccr_on bra $__ccr_c{label};\n\
         \tsetp.lt.u32 %__ccr_q4, %__ccr_n, %__ccr_N;\n\
         \t@!%__ccr_q4 bra $__ccr_c{label};\n\
         \tatom.shared.exch.b32 %__ccr_t1, [%__ccr_sh+40], 1;\n\
         \tsetp.ne.u32 %__ccr_q2, %__ccr_t1, 0;\n\
         \t@%__ccr_q2 bra $__ccr_e{label};\n\
         \tcvt.u64.u32 %__ccr_u3, %__ccr_T;\n\
         \tor.b64 %__ccr_me, %__ccr_u3, {site};\n\
         {exited}",
        site = u64::from(id) << bits::SITE_SHIFT,
        exited = exited_and_next(label),
    );
    if red {
        s.push_str(&user_reduction(i));
    }
    s
}

/// Where a thread leaves the block: `(epoch, exit site, thread)` into the exit slot, by the
/// lowest active lane (with `max`, so the slot holds an exit of the latest epoch). At a branch
/// to the kernel's `ret` (`branch`), the lanes taking it also note that they recorded, so the
/// `ret` they reach does not overwrite the `return`'s line with its own. A barrier that
/// threads left before completes only once they have exited, so the threads released from it
/// find the slot of their epoch filled.
fn exit_record(id: u32, branch: bool, label: u32) -> String {
    let mark = if branch {
        "\tsetp.eq.u32 %__ccr_left, 0, 0;\n"
    } else {
        ""
    };
    let skip = if branch {
        String::new()
    } else {
        format!("\t@%__ccr_left bra $__ccr_o{label};\n")
    };
    format!(
        "\t@!%__ccr_on bra $__ccr_o{label};\n\
         {skip}{mark}\
         \tactivemask.b32 %__ccr_t1;\n\tmov.u32 %__ccr_t2, %lanemask_lt;\n\
         \tand.b32 %__ccr_t1, %__ccr_t1, %__ccr_t2;\n\tsetp.ne.u32 %__ccr_q3, %__ccr_t1, 0;\n\
         \t@%__ccr_q3 bra $__ccr_o{label};\n\
         \tcvt.u64.u32 %__ccr_u0, %__ccr_B;\n\tshl.b64 %__ccr_u0, %__ccr_u0, 40;\n\
         \tcvt.u64.u32 %__ccr_u1, %__ccr_T;\n\tor.b64 %__ccr_u0, %__ccr_u0, %__ccr_u1;\n\
         \tor.b64 %__ccr_u0, %__ccr_u0, {};\n\tred.shared.max.u64 [%__ccr_sh+32], %__ccr_u0;\n\
         \tmembar.cta;\n\
         $__ccr_o{label}:\n",
        u64::from(id) << 10,
    )
}

/// `__syncwarp(mask)`: the mask check before, and the call itself skipped when the mask
/// leaves out the calling lane (undefined behaviour, a hang on some GPUs).
fn warp_sync(i: &Instr, id: u32, label: u32) -> (String, String) {
    let mask = i.operands.first().map_or("-1", |m| m.trim());
    let mut s = format!(
        "\n\tmov.u32 %__ccr_t0, %laneid;\n\tmov.b32 %__ccr_t1, {mask};\n\
         \tshr.b32 %__ccr_t2, %__ccr_t1, %__ccr_t0;\n\tand.b32 %__ccr_t2, %__ccr_t2, 1;\n\
         \tsetp.eq.u32 %__ccr_q4, %__ccr_t2, 0;\n"
    );
    if let Some(g) = &i.guard {
        // Only a call that runs is checked.
        let _ = writeln!(s, "\tand.pred %__ccr_q4, %__ccr_q4, {};", g.operand());
    }
    let _ = write!(
        s,
        "\t@!%__ccr_q4 bra $__ccr_m{label};\n\
         \tor.b64 %__ccr_me, %__ccr_E, {};\n\
         \tcvt.u64.u32 %__ccr_y, %__ccr_t1;\n\
         {}\
         $__ccr_m{label}:\n",
        u64::from(id) << bits::SITE_SHIFT,
        call_report(
            RaceEventKind::WarpMask,
            "%__ccr_me",
            "%__ccr_y",
            "%__ccr_t1"
        )
    );
    // The call runs when its guard holds and the mask is good.
    let replaced = match &i.guard {
        None => format!(
            "@!%__ccr_q4 {} {};",
            i.opcode,
            i.operands.join(", ")
        ),
        Some(g) => format!(
            "{{\n\t.reg .pred %__ccr_g;\n\tnot.pred %__ccr_g, %__ccr_q4;\n\tand.pred %__ccr_g, %__ccr_g, {};\n\t@%__ccr_g {} {};\n\t}}",
            g.operand(),
            i.opcode,
            i.operands.join(", ")
        ),
    };
    (s, replaced)
}
