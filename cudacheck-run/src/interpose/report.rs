//! Findings: what a fault record, a failed validation or a misaligned argument says, as a
//! person reads it on stderr (in the library's words) and as one JSON line. Each distinct
//! finding (kernel, kind, place) is reported once per process; every occurrence is counted.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use cudacheck_core::init::{decode_init, InitRecord, INIT_RECORD_OFFSET};
use cudacheck_core::instrument::{
    decode, BufferSlot, FaultKind, Site, SourceLoc, Target, WidestAccess,
};
use cudacheck_core::race::{decode_race, RaceEventKind, RACE_RECORD_OFFSET};
use cudacheck_core::PtxEntry;

use super::launch::Launch;
use super::module::Func;
use super::records::LaunchInfo;
use super::stack::Stack;
use super::state::{state, StackMode, EXITING, EXIT_STATUS};
use crate::protocol::{AllocationInfo, Finding, FindingKind, OnFault};

/// A launch that breaks the device's or the kernel's limits.
pub fn launch_error(func: &Func, l: &Launch, violations: Vec<String>) {
    let key = format!("launch {} {}", func.symbol, violations.join("|"));
    let mut msg = format!(
        "kernel `{}` launched with grid {}, block {}, {} bytes of dynamic shared memory: the \
         driver refuses this launch:",
        func.name,
        tuple(l.grid),
        tuple(l.block),
        l.shared
    );
    for v in &violations {
        let _ = write!(msg, "\n  - {v}");
    }
    let stack = Stack::maybe(state())
        .map(|s| s.symbolize())
        .unwrap_or_default();
    stack_lines(&mut msg, "launched at", &stack);
    emit(
        func,
        key,
        Finding {
            violations,
            launch_stack: stack,
            ..finding(FindingKind::LaunchError, func, l.grid, l.block, msg)
        },
    );
}

/// A pointer argument not aligned for the widest access the kernel makes through it.
pub fn misaligned(
    func: &Func,
    l: &Launch,
    entry: &PtxEntry,
    w: &WidestAccess,
    ptrs: &[u64],
    stack: Option<&Stack>,
) {
    let k = w.param as usize;
    let name = func.param_label(entry, k);
    let ptr = ptrs.get(k).copied().unwrap_or(0);
    let mut msg =
        format!(
        "kernel `{}` launched with grid {}, block {}: `{name}` is {ptr:#x}, not aligned for the \
         {}-byte accesses the kernel makes through it{}; the launch was left out (CUDA would \
         have stopped at a misaligned address and left the context unusable). Pass an address \
         that is a multiple of {}",
        func.name,
        tuple(l.grid),
        tuple(l.block),
        w.bytes,
        w.loc.as_ref().map(|l| format!(" (at {l})")).unwrap_or_default(),
        w.bytes
    );
    let stack = launch_stack(&mut msg, stack);
    emit(
        func,
        format!("misaligned {} {k}", func.symbol),
        Finding {
            param: Some(name),
            param_index: Some(w.param),
            access_bytes: Some(w.bytes),
            file: w.loc.as_ref().map(|l| l.file.clone()),
            line: w.loc.as_ref().map(|l| l.line),
            column: w.loc.as_ref().map(|l| l.column),
            launch_stack: stack,
            ..finding(FindingKind::Misaligned, func, l.grid, l.block, msg)
        },
    );
}

/// What a checked launch's record holds, if anything.
pub fn fault(info: &LaunchInfo, record: &[u8]) {
    // A read of unwritten memory is its own finding, whatever else the launch did.
    if let Some(rec) = record.get(INIT_RECORD_OFFSET..).and_then(decode_init) {
        uninitialized(info, &rec);
    }
    if let Some(rec) = decode(record).filter(|r| r.faulted != 0) {
        match rec.fault_kind() {
            Some(FaultKind::Assert) => assert_failed(info, &rec),
            _ => out_of_bounds(info, &rec),
        }
        return;
    }
    if let Some(race) = record
        .get(RACE_RECORD_OFFSET..)
        .and_then(decode_race)
        .filter(|r| r.faulted != 0)
    {
        race_found(info, &race);
    }
}

fn assert_failed(info: &LaunchInfo, rec: &cudacheck_core::instrument::FaultRecord) {
    let func = &info.func;
    let site = info.sites.site(rec.site);
    let (loc, inner) = user_loc(
        site.and_then(|s| s.loc.as_ref()),
        site.and_then(|s| s.inlined_at.as_ref()),
    );
    let line = loc.as_ref().map_or(rec.assert_line, |l| l.line);
    let mut msg = format!(
        "kernel `{}` launched with grid {}, block {}: assertion failed: {}; first by thread {} of \
         block {}",
        func.name,
        tuple(info.grid),
        tuple(info.block),
        rec.message(),
        tuple(rec.thread),
        tuple(rec.block)
    );
    snippet(&mut msg, loc.as_ref(), site, inner.as_ref());
    let _ = write!(
        msg,
        "\n   = {} in this launch; the thread ended there instead of trapping, so the context \
         is still usable",
        plural(rec.count, "failed assertion", "failed assertions")
    );
    let stack = launch_stack(&mut msg, info.stack.as_deref());
    emit(
        func,
        format!("assert {} {}", func.symbol, rec.site),
        Finding {
            thread: Some(rec.thread),
            block: Some(rec.block),
            file: loc.as_ref().map(|l| l.file.clone()),
            line: Some(line),
            column: loc.as_ref().map(|l| l.column),
            count: Some(rec.count),
            launch_stack: stack,
            ..finding(FindingKind::DeviceAssert, func, info.grid, info.block, msg)
        },
    );
}

/// What a finding about one access of a launch says beside its message.
struct AccessFinding<'a> {
    param: Option<String>,
    param_index: Option<u32>,
    access: &'a str,
    byte_offset: Option<i64>,
    access_bytes: u32,
    allocation: Option<AllocationInfo>,
    thread: [u32; 3],
    block: [u32; 3],
    loc: Option<&'a SourceLoc>,
    count: u32,
    stack: Vec<String>,
}

impl AccessFinding<'_> {
    fn finding(self, base: Finding) -> Finding {
        Finding {
            param: self.param,
            param_index: self.param_index,
            access: Some(self.access.to_string()),
            byte_offset: self.byte_offset,
            access_bytes: Some(self.access_bytes),
            index: self
                .byte_offset
                .map(|o| o.div_euclid(i64::from(self.access_bytes))),
            allocation: self.allocation,
            thread: Some(self.thread),
            block: Some(self.block),
            file: self.loc.map(|l| l.file.clone()),
            line: self.loc.map(|l| l.line),
            column: self.loc.map(|l| l.column),
            count: Some(self.count),
            launch_stack: self.stack,
            ..base
        }
    }
}

/// An allocation as a finding names it.
fn allocation_info(a: &super::alloc::Allocation) -> AllocationInfo {
    AllocationInfo {
        base: format!("{:#x}", a.base),
        bytes: a.bytes,
        api: a.api.to_string(),
        stack: a.stack.as_ref().map(Stack::symbolize).unwrap_or_default(),
    }
}

fn out_of_bounds(info: &LaunchInfo, rec: &cudacheck_core::instrument::FaultRecord) {
    let func = &info.func;
    let site = info.sites.site(rec.site);
    let (loc, inner) = user_loc(
        site.and_then(|s| s.loc.as_ref()),
        site.and_then(|s| s.inlined_at.as_ref()),
    );
    let access_bytes = rec.bytes.max(1);
    // Which slot: the site's, or, where the pointer could be one of several, the one whose
    // allocation the record's base is.
    let slot_of = |t: &Target| match t {
        Target::Param(k) => Some(BufferSlot {
            param: *k,
            offset: 0,
        }),
        Target::Field(slot) => Some(*slot),
        _ => None,
    };
    let bound = match site.map(|s| &s.target) {
        Some(Target::OneOf(ts)) => ts.iter().filter_map(slot_of).find_map(|slot| {
            info.bounds
                .iter()
                .find(|b| b.slot == slot && b.base == rec.base())
        }),
        Some(t) => slot_of(t).and_then(|slot| info.bounds.iter().find(|b| b.slot == slot)),
        None => None,
    };
    let access = match rec.fault_kind() {
        Some(FaultKind::Write) => "write",
        Some(FaultKind::Atomic) | Some(FaultKind::ReadWrite) => "atomic",
        _ => "read",
    };
    let what = match rec.fault_kind() {
        Some(FaultKind::Write) => "out-of-bounds write",
        Some(FaultKind::Atomic) | Some(FaultKind::ReadWrite) => "out-of-bounds atomic",
        Some(FaultKind::CollectiveRead) => "out-of-bounds warp-collective read",
        _ => "out-of-bounds read",
    };
    let mut msg = format!(
        "kernel `{}` launched with grid {}, block {}: {what}",
        func.name,
        tuple(info.grid),
        tuple(info.block)
    );
    let (mut allocation, mut param_name) = (None, None);
    let param = bound.map(|b| b.slot.param);
    let byte_offset = match bound {
        Some(b) => {
            let k = b.slot.param;
            // A pointer field of a struct passed by value is named by its byte offset (PTX
            // keeps no field names).
            let by_value = info
                .entry
                .params
                .get(k as usize)
                .is_some_and(|p| p.size > 8);
            let name = match (b.slot.offset, by_value) {
                (0, false) => func.param_label(&info.entry, k as usize),
                (off, _) => format!(
                    "the pointer at byte {off} of {}",
                    func.param_label(&info.entry, k as usize)
                ),
            };
            // The record's offset is from the allocation's start (the build's base); the
            // report counts from the pointer the kernel was given.
            let off = rec.offset - (b.ptr as i64 - b.base as i64);
            let into = b.ptr.wrapping_sub(b.base);
            let _ = write!(
                msg,
                " through `{name}` (parameter {k}): byte offset {off} from `{name}` (index {} in \
                 {access_bytes}-byte elements, the access's width)",
                off.div_euclid(i64::from(access_bytes))
            );
            if b.len == 0 && b.ptr == 0 {
                let _ = write!(msg, "; `{name}` is a null pointer");
            } else if let Some(a) = &b.alloc {
                let _ = write!(
                    msg,
                    "; `{name}` points {into} bytes into an allocation of {} bytes at {:#x} \
                     ({}), so the access is {}",
                    a.bytes,
                    a.base,
                    a.api,
                    if rec.offset < 0 {
                        format!("{} bytes before its start", -rec.offset)
                    } else {
                        let end = rec.offset + i64::from(access_bytes) - a.bytes as i64;
                        format!("{end} bytes past its end")
                    }
                );
                allocation = Some(allocation_info(a));
            } else {
                let _ = write!(msg, "; `{name}` points into no allocation the program made");
            }
            param_name = Some(name);
            Some(off)
        }
        None => {
            let array = match site.map(|s| &s.target) {
                Some(Target::Var(v)) => format!("`{v}`"),
                _ => "a buffer".to_string(),
            };
            let _ = write!(
                msg,
                " of {array}: byte offset {}, but it has {} bytes",
                rec.offset, rec.len
            );
            Some(rec.offset)
        }
    };
    let _ = write!(
        msg,
        "; first by thread {} of block {}",
        tuple(rec.thread),
        tuple(rec.block)
    );
    snippet(&mut msg, loc.as_ref(), site, inner.as_ref());
    let effect = match access {
        "write" => "the write was skipped",
        "atomic" => "the atomic was skipped",
        _ => "the read gave 0",
    };
    let _ = write!(
        msg,
        "\n   = {} in this launch (the first is shown); {effect}, so no memory outside the \
         allocation was touched and the context is still usable",
        plural(rec.count, "out-of-bounds access", "out-of-bounds accesses")
    );
    let stack = launch_stack(&mut msg, info.stack.as_deref());
    if let Some(a) = &allocation {
        stack_lines(&mut msg, "allocated at", &a.stack);
    }
    emit(
        func,
        format!("oob {} {} {:?}", func.symbol, rec.site, param),
        AccessFinding {
            param: param_name,
            param_index: param,
            access,
            byte_offset,
            access_bytes,
            allocation,
            thread: rec.thread,
            block: rec.block,
            loc: loc.as_ref(),
            count: rec.count,
            stack,
        }
        .finding(finding(
            FindingKind::OutOfBounds,
            func,
            info.grid,
            info.block,
            msg,
        )),
    );
}

/// A read of global memory nothing wrote (`--init`).
fn uninitialized(info: &LaunchInfo, rec: &InitRecord) {
    let func = &info.func;
    let site = info.sites.init.as_ref().and_then(|k| k.site(rec.site));
    let (loc, inner) = user_loc(
        site.and_then(|s| s.loc.as_ref()),
        site.and_then(|s| s.inlined_at.as_ref()),
    );
    let access_bytes = rec.bytes.max(1);
    let addr = rec.address + u64::from(rec.first_missing());
    let shared = rec.space == 1;
    // The allocation as the launch saw it (the program may have freed it since, before this
    // record was read), else as the interposer knows it now.
    let alloc = if shared {
        None
    } else {
        info.bounds
            .iter()
            .filter_map(|b| b.alloc.as_ref())
            .find(|a| addr >= a.base && addr < a.base.saturating_add(a.bytes))
            .cloned()
            .or_else(|| state().allocs.find(addr))
    };
    let what = match site.map(|s| s.kind) {
        Some(cudacheck_core::init::InitSiteKind::Atomic) => "atomic update of",
        _ => "read of",
    };
    let mut msg = format!(
        "kernel `{}` launched with grid {}, block {}: {what} uninitialized {} memory",
        func.name,
        tuple(info.grid),
        tuple(info.block),
        if shared { "shared" } else { "global" }
    );
    // The argument that points into the allocation, if one does.
    let bound = alloc
        .as_ref()
        .and_then(|a| info.bounds.iter().find(|b| b.base == a.base && b.ptr != 0));
    let (mut param_name, mut byte_offset, mut allocation) = (None, None, None);
    if let Some(a) = &alloc {
        let off = (addr - a.base) as i64;
        match bound {
            Some(b) => {
                let name = func.param_label(&info.entry, b.slot.param as usize);
                let from = addr as i64 - b.ptr as i64;
                let _ = write!(
                    msg,
                    " through `{name}` (parameter {}): byte offset {from} from `{name}` (index {} \
                     in {access_bytes}-byte elements)",
                    b.slot.param,
                    from.div_euclid(i64::from(access_bytes))
                );
                param_name = Some(name);
                byte_offset = Some(from);
            }
            None => byte_offset = Some(off),
        }
        let _ = write!(
            msg,
            "; byte {off} of an allocation of {} bytes at {:#x} ({}) that no kernel, copy or \
             memset wrote since it was made",
            a.bytes, a.base, a.api
        );
        allocation = Some(allocation_info(a));
    } else if shared {
        let _ = write!(
            msg,
            " at shared address {addr:#x}, which no thread of the block wrote since the block began"
        );
    } else {
        let _ = write!(msg, " at {addr:#x}");
    }
    let _ = write!(
        msg,
        "; first by thread {} of block {}",
        tuple(rec.thread),
        tuple(rec.block)
    );
    snippet(&mut msg, loc.as_ref(), None, inner.as_ref());
    let _ = write!(
        msg,
        "\n   = {} in this launch (the first is shown); the reads went ahead and got whatever \
         the memory held",
        plural(
            rec.count,
            "read of unwritten memory",
            "reads of unwritten memory"
        )
    );
    let stack = launch_stack(&mut msg, info.stack.as_deref());
    if let Some(a) = &allocation {
        stack_lines(&mut msg, "allocated at", &a.stack);
    }
    emit(
        func,
        format!("uninit {} {}", func.symbol, rec.site),
        AccessFinding {
            param_index: bound.map(|b| b.slot.param),
            param: param_name,
            access: if what == "read of" { "read" } else { "atomic" },
            byte_offset,
            access_bytes,
            allocation,
            thread: rec.thread,
            block: rec.block,
            loc: loc.as_ref(),
            count: rec.count,
            stack,
        }
        .finding(finding(
            FindingKind::Uninitialized,
            func,
            info.grid,
            info.block,
            msg,
        )),
    );
}

fn race_found(info: &LaunchInfo, r: &cudacheck_core::race::RaceRecord) {
    let func = &info.func;
    let table = info.sites.races.as_ref();
    let site_of = |id: u32| table.and_then(|t| t.site(id));
    let at = |id: u32| {
        site_of(id)
            .and_then(|s| s.loc.clone())
            .map(|l| l.to_string())
            .unwrap_or_else(|| "?".to_string())
    };
    let block_dim = info.block;
    let thread = |linear: u32| {
        let (bx, by) = (block_dim[0].max(1), block_dim[1].max(1));
        [linear % bx, (linear / bx) % by, linear / (bx * by)]
    };
    let (kind, what) =
        match r.event() {
            Some(RaceEventKind::DivergentBarrier) => (
                FindingKind::Barrier,
                format!(
                "threads of block {} met at different barriers: thread {} at {}, thread {} at {}",
                tuple(r.block),
                tuple(thread(r.current.thread())),
                at(r.current.site()),
                tuple(thread(r.other.thread())),
                at(r.other.site())
            ),
            ),
            Some(RaceEventKind::ExitedBarrier) => {
                let expected = block_dim.iter().map(|d| (*d).max(1)).product::<u32>();
                let left = if r.other.0 == 0 {
                    "where they went is not known".to_string()
                } else {
                    format!(
                        "thread {} left the block at {}",
                        tuple(thread(r.other.thread())),
                        at(r.other.site())
                    )
                };
                (
                    FindingKind::Barrier,
                    format!(
                        "barrier at {} reached by {} of the {expected} threads of block {} \
                         (thread {} waited there); the others had left the block: {left}. CUDA \
                         requires every thread of the block to reach a barrier in conditional \
                         code; current GPUs release it when the others exit, so the program runs \
                         on, and compute-sanitizer's synccheck does not report it. Guard the \
                         work, not the barrier: let every thread reach it",
                        at(r.current.site()),
                        r.offset,
                        tuple(r.block),
                        tuple(thread(r.current.thread())),
                    ),
                )
            }
            Some(RaceEventKind::WarpMask) => (
                FindingKind::Barrier,
                format!(
                "`__syncwarp({:#x})` leaves out the lane calling it (thread {} of block {}, at {})",
                r.offset,
                tuple(thread(r.current.thread())),
                tuple(r.block),
                at(r.current.site())
            ),
            ),
            _ => {
                let array = site_of(r.current.site())
                    .and_then(|s| s.array.clone())
                    .unwrap_or_else(|| "shared memory".to_string());
                (
                    FindingKind::Race,
                    format!(
                    "shared-memory race on `{array}` (byte {}) in block {}: {} by thread {} at {} \
                     and {} by thread {} at {}, with no barrier between",
                    r.offset,
                    tuple(r.block),
                    r.current.kind().map_or("access".to_string(), |k| k.to_string()),
                    tuple(thread(r.current.thread())),
                    at(r.current.site()),
                    r.other.kind().map_or("access".to_string(), |k| k.to_string()),
                    tuple(thread(r.other.thread())),
                    at(r.other.site())
                ),
                )
            }
        };
    let mut msg = format!(
        "kernel `{}` launched with grid {}, block {}: {what}",
        func.name,
        tuple(info.grid),
        tuple(info.block)
    );
    let stack = launch_stack(&mut msg, info.stack.as_deref());
    let loc = site_of(r.current.site()).and_then(|s| s.loc.clone());
    emit(
        func,
        format!(
            "race {} {} {}",
            func.symbol,
            r.current.site(),
            r.other.site()
        ),
        Finding {
            thread: Some(thread(r.current.thread())),
            block: Some(r.block),
            file: loc.as_ref().map(|l| l.file.clone()),
            line: loc.as_ref().map(|l| l.line),
            column: loc.as_ref().map(|l| l.column),
            count: Some(r.count),
            launch_stack: stack,
            ..finding(kind, func, info.grid, info.block, msg)
        },
    );
}

/// A finding with the fields every kind has.
fn finding(
    kind: FindingKind,
    func: &Func,
    grid: [u32; 3],
    block: [u32; 3],
    message: String,
) -> Finding {
    Finding {
        kind,
        pid: std::process::id(),
        kernel: func.name.clone(),
        symbol: func.symbol.clone(),
        param: None,
        param_index: None,
        access: None,
        byte_offset: None,
        access_bytes: None,
        index: None,
        allocation: None,
        thread: None,
        block: None,
        grid_dim: grid,
        block_dim: block,
        file: None,
        line: None,
        column: None,
        count: None,
        violations: Vec::new(),
        launch_stack: Vec::new(),
        message,
    }
}

/// Reports a finding the first time its key is seen; counts it every time.
fn emit(func: &Func, key: String, f: Finding) {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let s = state();
    func.count_finding();
    s.findings.fetch_add(1, Ordering::Relaxed);
    let fresh = SEEN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key);
    if !fresh {
        return;
    }
    eprintln!("cudacheck run: {}", f.message);
    if let Some(path) = &s.opts.json {
        if let Ok(mut line) = serde_json::to_vec(&f) {
            line.push(b'\n');
            // One write per line, appended: lines of several processes do not interleave.
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(&line));
        }
    }
    if s.opts.on_fault == OnFault::Abort {
        eprintln!("cudacheck run: stopping at the first finding (--on-fault abort)");
        if EXITING.load(Ordering::SeqCst) {
            // Found while the process exits: the summary is still to be written, then the
            // exit handler ends the process with this status.
            EXIT_STATUS.store(s.opts.abort_status, Ordering::SeqCst);
        } else {
            std::process::exit(s.opts.abort_status);
        }
    }
}

/// Where to point a person: the access's line, or, where it sits in a toolkit header inlined
/// into the program's code (`atomicAdd` of `device_atomic_functions.hpp`), the program's line
/// that called it; the header's line comes second.
fn user_loc(
    loc: Option<&SourceLoc>,
    inlined_at: Option<&SourceLoc>,
) -> (Option<SourceLoc>, Option<SourceLoc>) {
    match (loc, inlined_at) {
        (Some(l), Some(at)) if in_toolkit(&l.file) => (Some(at.clone()), Some(l.clone())),
        (l, _) => (l.cloned(), None),
    }
}

/// Whether `file` is one of the CUDA toolkit's headers (under a toolkit include directory).
fn in_toolkit(file: &str) -> bool {
    std::path::Path::new(file)
        .ancestors()
        .skip(1)
        .take(4)
        .any(cudacheck::nvrtc::headers::is_toolkit_include_dir)
}

fn snippet(
    msg: &mut String,
    loc: Option<&SourceLoc>,
    site: Option<&Site>,
    toolkit: Option<&SourceLoc>,
) {
    let Some(l) = loc else {
        msg.push_str("\n  (no line information: build the program with -lineinfo)");
        return;
    };
    let _ = write!(msg, "\n  --> {}:{}:{}", l.file, l.line, l.column);
    if let Some(text) = line_text(&l.file, l.line) {
        let pad = " ".repeat(l.line.to_string().len());
        let _ = write!(msg, "\n{pad} |\n{} | {text}\n{pad} |", l.line);
    }
    match (toolkit, site.and_then(|s| s.inlined_at.as_ref())) {
        (Some(t), _) => {
            let _ = write!(
                msg,
                "\n   = the access itself is in the toolkit's {t}, inlined here"
            );
        }
        (None, Some(at)) => {
            let _ = write!(msg, "\n   = in code inlined into {at}");
        }
        _ => {}
    }
}

/// Line `line` of `file`, when the file can be read (the program's sources on this machine).
fn line_text(file: &str, line: u32) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let l = text.lines().nth(line.checked_sub(1)? as usize)?;
    Some(l.trim_end().to_string())
}

/// How a report introduces a launch's host stack: under `--stacks first` it is the stack of
/// the first launch of the kernel with this shape, which says so.
fn launched_at() -> &'static str {
    match state().opts.stacks {
        StackMode::First => "launched at (the first launch of this kernel with this block and shared memory; `--stacks all` records every launch's)",
        _ => "launched at",
    }
}

/// The launch's host stack, symbolized, and said under `msg` (empty without one).
fn launch_stack(msg: &mut String, stack: Option<&Stack>) -> Vec<String> {
    let stack = stack.map(Stack::symbolize).unwrap_or_default();
    stack_lines(msg, launched_at(), &stack);
    stack
}

fn stack_lines(msg: &mut String, title: &str, frames: &[String]) {
    if frames.is_empty() {
        return;
    }
    let _ = write!(msg, "\n   = {title}:");
    for f in frames {
        let _ = write!(msg, "\n       {f}");
    }
}

fn tuple(v: [u32; 3]) -> String {
    cudacheck_core::Dim3::new(v[0], v[1], v[2]).to_string()
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
