//! Checking against allocations (`InstrumentOptions::alloc_bases`): a launch interposer passes,
//! per buffer slot, the allocation `[A, A + S)` the pointer points into, and every check
//! measures from `A`. Hand-written PTX in the forms NVVM emits, instrumented, then run for one
//! thread by a small interpreter (below), so that what is asserted is what the emitted code
//! does: which accesses run, which are skipped, and what the fault record says.

mod common;
use std::collections::{BTreeMap, HashMap};

use common::well_formed;
use cudacheck_core::instrument::ptx::{parse, Function, StmtKind};
use cudacheck_core::instrument::{
    decode, hidden_params, hidden_params_for, instrument_ptx, instrument_ptx_with, BufferSlot,
    FaultRecord, InstrumentOptions, InstrumentedPtx, LaunchValues, SkipReason, Target,
    RECORD_BYTES,
};
use cudacheck_core::ir::{immediate, Address};

fn module(functions: &str) -> String {
    format!(".version 9.0\n.target sm_90\n.address_size 64\n{functions}\n\t.file\t1 \"k.cu\"\n")
}

fn kernel(params: &str, body: &str) -> String {
    format!(
        ".visible .entry k({params})\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<40>;\n\t.reg .f32 %f<40>;\n\t.reg .b64 %rd<40>;\n\t.loc\t1 7 3\n{body}\n\tret;\n}}\n"
    )
}

/// `k(float* a, float* b, int i)`.
const P3: &str = ".param .u64 k_param_0, .param .u64 k_param_1, .param .u32 k_param_2";

/// `k(Graph g, int e)` with `struct Graph { int* nindex; int* nlist; long n; }` by value.
const GRAPH: &str = ".param .align 8 .b8 k_param_0[24], .param .u32 k_param_1";

fn alloc() -> InstrumentOptions {
    InstrumentOptions::new().alloc_bases(true)
}

fn inst(text: &str, opts: &InstrumentOptions) -> InstrumentedPtx {
    let out = instrument_ptx_with(text, opts).unwrap_or_else(|e| panic!("{e}"));
    well_formed(&out.ptx);
    out
}

fn param_names(ptx: &str, kernel: &str) -> Vec<String> {
    let m = parse(ptx).unwrap();
    let f = m.functions.iter().find(|f| f.name == kernel).unwrap();
    f.params.iter().map(|p| p.name.clone()).collect()
}

// ---- a one-thread PTX interpreter ----------------------------------------------------------

/// Where the record and the module's sink live in the interpreter's memory.
const RECORD: u64 = 0x7000_0000;
const SINK: u64 = 0x7100_0000;

/// What one thread did: the user memory it touched (address, in order) and the fault record.
struct Run {
    touched: Vec<u64>,
    record: FaultRecord,
    /// Labels control reached, in order (a versioned loop's fast copy is `$__cc_vfast<n>`).
    labels: Vec<String>,
}

/// A launch's arguments: each parameter's bytes by name (hidden ones included).
#[derive(Default)]
struct Args(BTreeMap<String, Vec<u8>>);

impl Args {
    fn u64(mut self, name: &str, v: u64) -> Self {
        self.0.insert(name.to_string(), v.to_le_bytes().to_vec());
        self
    }
    fn u32(mut self, name: &str, v: u32) -> Self {
        self.0.insert(name.to_string(), v.to_le_bytes().to_vec());
        self
    }
    fn bytes(mut self, name: &str, b: Vec<u8>) -> Self {
        self.0.insert(name.to_string(), b);
        self
    }
    /// A slot's length and base (`__cc_len_<s>`, `__cc_base_<s>`), the record's address.
    fn slot(self, s: &str, base: u64, len: u64) -> Self {
        self.u64(&format!("__cc_len_{s}"), len)
            .u64(&format!("__cc_base_{s}"), base)
    }
    fn record(self) -> Self {
        self.u64("__cc_rec", RECORD)
    }
}

fn width(ty: &str) -> u32 {
    match ty {
        "pred" => 1,
        _ => ty[1..].parse().unwrap_or(64),
    }
}

fn mask(v: u64, w: u32) -> u64 {
    if w >= 64 {
        v
    } else {
        v & ((1u64 << w) - 1)
    }
}

/// `v`'s low `ty` bits as a number: sign-extended for `.s` types.
fn read(v: u64, ty: &str) -> i128 {
    let w = width(ty);
    let m = mask(v, w);
    if ty.starts_with('s') && w < 64 {
        let sh = 64 - w;
        i128::from(((m << sh) as i64) >> sh)
    } else if ty.starts_with('s') {
        i128::from(m as i64)
    } else {
        i128::from(m)
    }
}

struct Machine<'a> {
    f: &'a Function,
    args: &'a Args,
    regs: HashMap<String, u64>,
    preds: HashMap<String, bool>,
    mem: HashMap<u64, u8>,
    run: Run,
}

impl Machine<'_> {
    fn val(&self, op: &str) -> u64 {
        let op = op.trim();
        if let Some(v) = immediate(op) {
            return v as u64;
        }
        match op {
            "%tid.x" | "%tid.y" | "%tid.z" | "%ctaid.x" | "%ctaid.y" | "%ctaid.z" | "%laneid" => 0,
            "%ntid.x" => 128,
            "%ntid.y" | "%ntid.z" | "%nctaid.x" | "%nctaid.y" | "%nctaid.z" => 1,
            "__cc_sink" => SINK,
            _ => *self
                .regs
                .get(op)
                .unwrap_or_else(|| panic!("{op} read before it is written")),
        }
    }

    fn pred(&self, p: &str) -> bool {
        match p.trim().strip_prefix('!') {
            Some(q) => !self.preds[q],
            None => self.preds[p.trim()],
        }
    }

    fn set(&mut self, d: &str, v: u64, w: u32) {
        self.regs.insert(d.trim().to_string(), mask(v, w));
    }

    fn load(&self, addr: u64, bytes: u32) -> u64 {
        (0..u64::from(bytes)).fold(0, |acc, k| {
            acc | u64::from(*self.mem.get(&(addr + k)).unwrap_or(&0)) << (8 * k)
        })
    }

    fn store(&mut self, addr: u64, v: u64, bytes: u32) {
        for k in 0..u64::from(bytes) {
            self.mem.insert(addr + k, (v >> (8 * k)) as u8);
        }
    }

    /// A user access (not the record's bytes) is logged.
    fn touch(&mut self, addr: u64) {
        if !(RECORD..RECORD + RECORD_BYTES as u64).contains(&addr) {
            self.run.touched.push(addr);
        }
    }

    fn address(&self, op: &str) -> u64 {
        let a = Address::parse(op).unwrap_or_else(|| panic!("no address: {op}"));
        self.val(a.base).wrapping_add(a.offset as u64)
    }

    /// Runs one instruction; `Some(label)` for a taken branch, `None` after `ret`.
    fn step(&mut self, k: usize) -> Option<Option<String>> {
        let StmtKind::Instr(i) = &self.f.stmts[k].kind else {
            return Some(None);
        };
        if let Some(g) = &i.guard {
            if self.preds[g.pred.as_str()] == g.negated {
                return Some(None);
            }
        }
        let parts: Vec<&str> = i.parts().collect();
        let ty = *parts.last().unwrap();
        let o = &i.operands;
        let v = |k: usize| self.val(&o[k]);
        let w = width(ty);
        let dests = |d: &str| -> Vec<String> {
            d.trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .split(',')
                .map(|s| s.trim().to_string())
                .collect()
        };
        match parts[0] {
            "ret" | "exit" => return None,
            "bra" => return Some(Some(o[0].trim().to_string())),
            "ld" if i.has("param") => {
                let a = Address::parse(&o[1]).unwrap();
                let bytes = &self.args.0[a.base];
                let at = a.offset as usize;
                let n = (w / 8) as usize;
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(&bytes[at..at + n]);
                self.set(&o[0], u64::from_le_bytes(b), w);
            }
            "ld" => {
                let addr = self.address(&o[1]);
                self.touch(addr);
                for d in dests(&o[0]) {
                    let x = self.load(addr, w / 8);
                    self.set(&d, x, w);
                }
            }
            "st" => {
                let addr = self.address(&o[0]);
                self.touch(addr);
                let x = self.val(dests(&o[1])[0].as_str());
                self.store(addr, x, w / 8);
            }
            "red" => {
                let addr = self.address(&o[0]);
                self.touch(addr);
            }
            "atom" => {
                let addr = self.address(&o[1]);
                let old = self.load(addr, w / 8);
                let new = match parts[2] {
                    "add" => old.wrapping_add(v(2)),
                    "cas" if old == mask(v(2), w) => v(3),
                    "cas" => old,
                    op => panic!("atom.{op}"),
                };
                self.touch(addr);
                self.store(addr, new, w / 8);
                self.set(&o[0], old, w);
            }
            "mov" if ty == "pred" => {
                let x = v(1) != 0;
                self.preds.insert(o[0].clone(), x);
            }
            "mov" | "cvta" => {
                let x = v(1);
                self.set(&o[0], x, w);
            }
            "cvt" => {
                let x = read(v(1), parts[2]);
                self.set(&o[0], x as u64, width(parts[1]));
            }
            "add" => self.set(&o[0], v(1).wrapping_add(v(2)), w),
            "sub" => self.set(&o[0], v(1).wrapping_sub(v(2)), w),
            "neg" => self.set(&o[0], 0u64.wrapping_sub(v(1)), w),
            "shl" => self.set(&o[0], v(1).wrapping_shl(v(2) as u32), w),
            "shr" => self.set(&o[0], (read(v(1), ty) >> v(2)) as u64, w),
            "and" if ty == "pred" => {
                let x = self.pred(&o[1]) && self.pred(&o[2]);
                self.preds.insert(o[0].clone(), x);
            }
            "or" if ty == "pred" => {
                let x = self.pred(&o[1]) || self.pred(&o[2]);
                self.preds.insert(o[0].clone(), x);
            }
            "and" => self.set(&o[0], v(1) & v(2), w),
            "or" => self.set(&o[0], v(1) | v(2), w),
            "max" => self.set(&o[0], read(v(1), ty).max(read(v(2), ty)) as u64, w),
            "min" => self.set(&o[0], read(v(1), ty).min(read(v(2), ty)) as u64, w),
            "mul" | "mad" => {
                let p = read(v(1), ty) * read(v(2), ty);
                let r = match parts[1] {
                    "hi" => (p >> w) as u64,
                    "wide" => p as u64,
                    _ => p as u64,
                };
                let r = if parts[0] == "mad" {
                    r.wrapping_add(v(3))
                } else {
                    r
                };
                let dw = if parts[1] == "wide" { 2 * w } else { w };
                self.set(&o[0], r, dw);
            }
            "div" | "rem" => {
                let (a, b) = (read(v(1), ty), read(v(2), ty));
                let r = if parts[0] == "div" { a / b } else { a % b };
                self.set(&o[0], r as u64, w);
            }
            "selp" => {
                let x = if self.pred(&o[3]) { v(1) } else { v(2) };
                self.set(&o[0], x, w);
            }
            "setp" => {
                let (a, b) = (read(v(1), ty), read(v(2), ty));
                let mut r = match parts[1] {
                    "lt" | "lo" => a < b,
                    "le" | "ls" => a <= b,
                    "gt" | "hi" => a > b,
                    "ge" | "hs" => a >= b,
                    "eq" => a == b,
                    "ne" => a != b,
                    c => panic!("setp.{c}"),
                };
                match parts[2] {
                    "and" => r &= self.pred(&o[3]),
                    "or" => r |= self.pred(&o[3]),
                    _ => {}
                }
                let mut d = o[0].split('|');
                self.preds.insert(d.next().unwrap().trim().to_string(), r);
                if let Some(q) = d.next() {
                    self.preds.insert(q.trim().to_string(), !r);
                }
            }
            op => panic!("the interpreter does not know {op}: {i:?}"),
        }
        Some(None)
    }
}

/// Runs kernel `k` of `ptx` for thread 0 of block 0 with `args`.
fn run(ptx: &str, args: &Args) -> Run {
    let m = parse(ptx).unwrap();
    let f = m.functions.iter().find(|f| f.name == "k").unwrap();
    let labels: HashMap<&str, usize> = f
        .stmts
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match &s.kind {
            StmtKind::Label(l) => Some((l.as_str(), k)),
            _ => None,
        })
        .collect();
    let mut mach = Machine {
        f,
        args,
        regs: HashMap::new(),
        preds: HashMap::new(),
        mem: HashMap::new(),
        run: Run {
            touched: Vec::new(),
            record: FaultRecord::empty(),
            labels: Vec::new(),
        },
    };
    let mut k = 0;
    for _ in 0..100_000 {
        match mach.step(k) {
            None => break,
            Some(Some(label)) => {
                mach.run.labels.push(label.clone());
                k = labels[label.as_str()];
            }
            Some(None) => k += 1,
        }
        assert!(k < f.stmts.len(), "ran off the end of the function");
    }
    let bytes: Vec<u8> = (0..RECORD_BYTES as u64)
        .map(|k| *mach.mem.get(&(RECORD + k)).unwrap_or(&0))
        .collect();
    mach.run.record = decode(&bytes).unwrap();
    mach.run
}

// ---- the tests -----------------------------------------------------------------------------

/// `a[i - 4]` read, `a[i]` written: `a` may be a view into the middle of its allocation.
const NEGATIVE: &str = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_2];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.s32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.u32 %r2, [%rd4+-16];\n\tst.global.u32 [%rd4], %r2;";

/// An allocation of 256 bytes at `A`, and a view 64 bytes into it.
const A: u64 = 1 << 32;
const VIEW: u64 = A + 64;
const S: u64 = 256;

/// Arguments of `k(a, b, i)` for `NEGATIVE` with `a` the view, checked against its allocation.
fn view_args(i: i32) -> Args {
    Args::default()
        .u64("k_param_0", VIEW)
        .u64("k_param_1", 0)
        .u32("k_param_2", i as u32)
        .slot("0", A, S)
        .slot("1", 0, i64::MAX as u64)
        .slot("2", 0, i64::MAX as u64)
        .record()
}

#[test]
fn hidden_parameters_are_a_length_and_a_base_per_slot_then_the_record() {
    let text = module(&format!(
        "{}\n.visible .entry bare()\n{{\n\tret;\n}}\n",
        kernel(P3, NEGATIVE)
    ));
    let out = inst(&text, &alloc());
    assert_eq!(
        param_names(&out.ptx, "k"),
        [
            "k_param_0",
            "k_param_1",
            "k_param_2",
            "__cc_len_0",
            "__cc_len_1",
            "__cc_len_2",
            "__cc_base_0",
            "__cc_base_1",
            "__cc_base_2",
            "__cc_rec"
        ]
    );
    assert_eq!(param_names(&out.ptx, "bare"), ["__cc_rec"]);
    let k = out.kernel("k").unwrap();
    assert!(k.alloc_bases);
    let slot = |param, offset| BufferSlot { param, offset };
    assert_eq!(k.slots, [slot(0, 0), slot(1, 0), slot(2, 0)]);
    assert_eq!(k.hidden_params(), 7);
    assert_eq!(hidden_params_for(k.slots.len(), &alloc()), 7);
    assert_eq!(out.kernel("bare").unwrap().hidden_params(), 1);
    // Without the option: one length per parameter, the record; no slots.
    let lib = inst(&text, &InstrumentOptions::new());
    let k = lib.kernel("k").unwrap();
    assert!(!k.alloc_bases && k.slots.is_empty());
    assert_eq!(k.hidden_params(), hidden_params(3));
    assert_eq!(hidden_params_for(3, &InstrumentOptions::new()), 4);
}

#[test]
fn with_the_option_off_checks_measure_from_the_argument_as_before() {
    let text = module(&kernel(P3, NEGATIVE));
    let off = InstrumentOptions::new().alloc_bases(false);
    let out = inst(&text, &off);
    assert_eq!(
        out,
        instrument_ptx(&text).unwrap(),
        "off is the default build"
    );
    assert!(!out.ptx.contains("__cc_base"), "{}", out.ptx);
    assert!(
        out.ptx.contains("ld.param.u64 %__cc_u, [k_param_0];"),
        "{}",
        out.ptx
    );
    // The library's meaning: the buffer starts at the argument, so `a[i - 4]` with i = 0 is
    // 16 bytes before it, whatever the length; the write `a[0]` is in bounds.
    let args = view_args(0).u64("__cc_len_0", A + S - VIEW);
    let r = run(&out.ptx, &args);
    assert_eq!(r.record.faulted, 1);
    assert_eq!(r.record.offset, -16);
    assert_eq!(r.record.base(), 0, "a single buffer's base is not recorded");
    assert_eq!(r.touched, [VIEW], "the read is skipped, the write runs");
}

#[test]
fn checks_load_the_allocation_base_not_the_argument() {
    let out = inst(&module(&kernel(P3, NEGATIVE)), &alloc());
    assert_eq!(out.kernels[0].coverage.checked, 2);
    let lines: Vec<&str> = out.ptx.lines().map(str::trim).collect();
    // Each check's offset (the two accesses' range check, and each one's own in the exact
    // copy it falls back to) is taken from the base loaded just before it.
    let subs: Vec<usize> = (0..lines.len())
        .filter(|&k| lines[k].starts_with("sub.s64 %__cc_o,"))
        .collect();
    assert!(subs.len() >= 2, "{}", out.ptx);
    for k in subs {
        assert_eq!(
            &lines[k - 2..k],
            [
                "ld.param.u64 %__cc_u, [__cc_base_0];",
                "cvta.to.global.u64 %__cc_u, %__cc_u;"
            ],
            "{}",
            out.ptx
        );
    }
    // No check reads the argument itself.
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("ld.param.u64 %__cc") && l.contains("[k_param_")),
        "{}",
        out.ptx
    );
}

#[test]
fn a_negative_index_inside_the_allocation_passes_and_below_it_faults() {
    let out = inst(&module(&kernel(P3, NEGATIVE)), &alloc());
    // i = 0 reads 16 bytes below the view: inside the allocation.
    let r = run(&out.ptx, &view_args(0));
    assert_eq!(r.record.faulted, 0, "{:?}", r.record);
    assert_eq!(r.touched, [VIEW - 16, VIEW]);
    // i = -12 reads the allocation's first element; i = -13 one element before it.
    let r = run(&out.ptx, &view_args(-12));
    assert_eq!(r.record.faulted, 0, "{:?}", r.record);
    assert_eq!(r.touched, [A, VIEW - 48]);
    let r = run(&out.ptx, &view_args(-13));
    assert_eq!(r.record.faulted, 1);
    assert_eq!(r.touched, [VIEW - 52], "the read below A is skipped");
    // The last element (A + S - 4) is written with i = 47, one past it with i = 48; with
    // i = 52 the read is past the end too.
    let r = run(&out.ptx, &view_args(47));
    assert_eq!(r.record.faulted, 0, "{:?}", r.record);
    assert_eq!(r.touched, [A + S - 20, A + S - 4]);
    let r = run(&out.ptx, &view_args(48));
    assert_eq!((r.record.faulted, r.record.count), (1, 1));
    assert_eq!(r.record.offset, S as i64);
    assert_eq!(r.touched, [A + S - 16]);
    let r = run(&out.ptx, &view_args(52));
    assert_eq!((r.record.faulted, r.record.count), (1, 2), "read and write");
    assert_eq!(r.touched, Vec::<u64>::new());
}

#[test]
fn the_fault_record_measures_from_the_allocation_start() {
    let out = inst(&module(&kernel(P3, NEGATIVE)), &alloc());
    let r = run(&out.ptx, &view_args(-13));
    let rec = r.record;
    assert_eq!(rec.faulted, 1);
    // The read of `a[-17]`: 68 bytes below the view, 4 below the allocation.
    assert_eq!(
        out.kernels[0].site(rec.site).unwrap().target,
        Target::Param(0)
    );
    assert_eq!(rec.offset, -4, "offset from A");
    assert_eq!(rec.base(), A, "base is A");
    assert_eq!(rec.len, S, "len is S as passed");
    assert_eq!(rec.bytes, 4);
    // What an interposer reports: the offset from the argument.
    let from_view = rec.offset + rec.base() as i64 - VIEW as i64;
    assert_eq!(from_view, -68);
}

#[test]
fn a_pointer_selected_between_parameters_uses_their_allocation_bases() {
    // `(a ? a : b)[i - 1]`: the shadow follows the pointer's buffer.
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n\tld.param.u32 %r1, [k_param_2];\n\tsetp.eq.s64 %p1, %rd1, 0;\n\tselp.b64 %rd3, %rd2, %rd1, %p1;\n\tcvta.to.global.u64 %rd4, %rd3;\n\tmul.wide.s32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd4, %rd5;\n\tld.global.u32 %r2, [%rd6+-4];";
    let out = inst(&module(&kernel(P3, body)), &alloc());
    let k = &out.kernels[0];
    assert_eq!(
        k.sites[0].target,
        Target::OneOf(vec![Target::Param(0), Target::Param(1)])
    );
    let b = 1u64 << 36;
    let args = |a: u64, i: i32| {
        Args::default()
            .u64("k_param_0", a)
            .u64("k_param_1", b + 8)
            .u32("k_param_2", i as u32)
            .slot("0", VIEW - 64, S)
            .slot("1", b, 16)
            .slot("2", 0, i64::MAX as u64)
            .record()
    };
    // `a` (a view 64 bytes in), i = 0: 4 bytes below the pointer, inside.
    let r = run(&out.ptx, &args(VIEW, 0));
    assert_eq!((r.record.faulted, r.touched.clone()), (0, vec![VIEW - 4]));
    // `b` (8 bytes into 16), i = -2: b - 4, outside, recorded against b's allocation.
    let r = run(&out.ptx, &args(0, -2));
    assert_eq!(r.record.faulted, 1);
    assert_eq!(
        (r.record.base(), r.record.offset, r.record.len),
        (b, -4, 16)
    );
    let r = run(&out.ptx, &args(0, -1));
    assert_eq!((r.record.faulted, r.touched), (0, vec![b]));
}

#[test]
fn a_group_check_measures_from_the_allocation_base() {
    // Four reads through one register, `a[i - 2 .. i + 2]`: one range check for all four.
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_2];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.s32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.u32 %r2, [%rd4+-8];\n\tld.global.u32 %r3, [%rd4+-4];\n\tld.global.u32 %r4, [%rd4];\n\tld.global.u32 %r5, [%rd4+4];";
    let out = inst(&module(&kernel(P3, body)), &alloc());
    let c = &out.kernels[0].coverage;
    assert_eq!((c.group_checks, c.grouped), (1, 4), "{c:?}");
    // All four below the view, inside the allocation: the group passes.
    let r = run(&out.ptx, &view_args(-14));
    assert_eq!(r.record.faulted, 0, "{:?}", r.record);
    assert_eq!(r.touched, [A, A + 4, A + 8, A + 12]);
    assert!(!r.labels.iter().any(|l| l.starts_with("$__cc_slow")));
    // One element lower: the exact copy runs and names the first read, 4 bytes below A.
    let r = run(&out.ptx, &view_args(-15));
    assert!(r.labels.iter().any(|l| l.starts_with("$__cc_slow")));
    assert_eq!((r.record.faulted, r.record.count), (1, 1));
    assert_eq!((r.record.offset, r.record.base()), (-4, A));
    assert_eq!(r.touched, [A, A + 4, A + 8]);
}

#[test]
fn a_versioned_loop_prechecks_against_the_allocation_base() {
    // `for (j = 0; j < i; j++) s += a[j - 4];` (the count in the third parameter), as NVRTC
    // writes it: a pointer stepped by 4 beside a counter.
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_2];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tsetp.lt.s32 %p1, %r1, 1;\n\tmov.u32 %r5, 0;\n\t@%p1 bra $L__END;\n\tadd.s64 %rd5, %rd2, -16;\n\tmov.u32 %r3, 0;\n$L__LOOP:\n\tld.global.u32 %r4, [%rd5];\n\tadd.s32 %r5, %r5, %r4;\n\tadd.s64 %rd5, %rd5, 4;\n\tadd.s32 %r3, %r3, 1;\n\tsetp.lt.s32 %p2, %r3, %r1;\n\t@%p2 bra $L__LOOP;\n$L__END:\n\tst.global.u32 [%rd2], %r5;";
    let out = inst(&module(&kernel(P3, body)), &alloc());
    let c = &out.kernels[0].coverage;
    assert_eq!((c.versioned_loops, c.hoisted), (1, 1), "{c:?}");
    let start = out.ptx.find("the loop's hoisted checks").unwrap();
    let end = start + out.ptx[start..].find("bra $__cc_vfast0;").unwrap();
    let precheck = &out.ptx[start..end];
    assert!(precheck.contains("[__cc_base_0];"), "{precheck}");
    assert!(precheck.contains("[__cc_len_0];"), "{precheck}");
    assert!(!precheck.contains("[k_param_0]"), "{precheck}");
    // 52 reads from 16 bytes below the view to the allocation's last element: the precheck
    // passes and the loop without checks runs.
    let r = run(&out.ptx, &view_args(52));
    assert_eq!(r.record.faulted, 0, "{:?}", r.record);
    assert!(
        r.labels.iter().any(|l| l == "$__cc_vfast0"),
        "{:?}",
        r.labels
    );
    assert_eq!(r.touched.len(), 53);
    assert_eq!(r.touched[0], VIEW - 16);
    assert_eq!(r.touched[51], A + S - 4);
    // One more: the precheck fails, the checked loop names the read at A + S.
    let r = run(&out.ptx, &view_args(53));
    assert!(!r.labels.iter().any(|l| l == "$__cc_vfast0"));
    assert_eq!(
        (r.record.faulted, r.record.offset, r.record.len),
        (1, S as i64, S)
    );
}

#[test]
fn an_atomic_outside_the_allocation_runs_on_the_sink() {
    // `atomicAdd(&a[i - 1], 1)` with its result used.
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_2];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.s32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tatom.global.add.u32 %r2, [%rd4+-4], 1;\n\tst.global.u32 [%rd2], %r2;";
    let out = inst(&module(&kernel(P3, body)), &alloc());
    assert!(out.ptx.contains("__cc_sink"), "{}", out.ptx);
    let r = run(&out.ptx, &view_args(-15));
    assert_eq!((r.record.faulted, r.touched.clone()), (0, vec![A, VIEW]));
    let r = run(&out.ptx, &view_args(-16));
    assert_eq!((r.record.faulted, r.record.offset), (1, -4));
    assert_eq!(r.touched, [SINK, VIEW], "the atomic ran on the sink");
}

/// `nindex[e]` and `nlist[e]` of `g`, and `g.n` read as a 64-bit integer (compared, never an
/// address).
const GRAPH_BODY: &str = "\tld.param.u64 %rd1, [k_param_0+8];\n\tld.param.u64 %rd2, [k_param_0];\n\tld.param.u64 %rd8, [k_param_0+16];\n\tld.param.u32 %r1, [k_param_1];\n\tcvt.s64.s32 %rd9, %r1;\n\tsetp.ge.s64 %p1, %rd9, %rd8;\n\t@%p1 bra $L__END;\n\tcvta.to.global.u64 %rd3, %rd2;\n\tcvta.to.global.u64 %rd4, %rd1;\n\tmul.wide.s32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tld.global.u32 %r2, [%rd6];\n\tadd.s64 %rd7, %rd4, %rd5;\n\tst.global.u32 [%rd7], %r2;\n$L__END:";

/// `g` with `nindex` at `ni` and `nlist` at `nl`, `n` = 1000.
fn graph(ni: u64, nl: u64) -> Vec<u8> {
    [ni, nl, 1000]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

#[test]
fn struct_pointer_fields_are_slots_of_their_own() {
    let out = inst(&module(&kernel(GRAPH, GRAPH_BODY)), &alloc());
    let k = &out.kernels[0];
    assert!(k.coverage.is_complete(), "{:?}", k.coverage.unchecked);
    let slot = |param, offset| BufferSlot { param, offset };
    // `n` (at 16) is never an address: no slot.
    assert_eq!(k.slots, [slot(0, 0), slot(0, 8), slot(1, 0)]);
    assert_eq!(
        param_names(&out.ptx, "k")[2..],
        [
            "__cc_len_0",
            "__cc_len_0_8",
            "__cc_len_1",
            "__cc_base_0",
            "__cc_base_0_8",
            "__cc_base_1",
            "__cc_rec"
        ]
    );
    assert_eq!(k.hidden_params(), 7);
    let targets: Vec<&Target> = k.sites.iter().map(|s| &s.target).collect();
    assert_eq!(
        targets,
        [&Target::Field(slot(0, 0)), &Target::Field(slot(0, 8))]
    );
    assert_eq!(slot(0, 8).to_string(), "parameter 0 at byte 8");
    // Nothing of a struct is a plain parameter's: no alignment check of it on the host.
    assert!(k.widest.is_empty(), "{:?}", k.widest);

    // Both arrays are views two elements into their allocations, 10 elements from there
    // (`nlist` `nl_len` bytes).
    let (ni, nl) = (1u64 << 33, 1u64 << 34);
    let args = |e: i32, nl_len: u64| {
        Args::default()
            .bytes("k_param_0", graph(ni, nl))
            .u32("k_param_1", e as u32)
            .slot("0", ni - 8, 48)
            .slot("0_8", nl - 8, nl_len + 8)
            .slot("1", 0, i64::MAX as u64)
            .record()
    };
    let r = run(&out.ptx, &args(9, 40));
    assert_eq!((r.record.faulted, r.touched), (0, vec![ni + 36, nl + 36]));
    let r = run(&out.ptx, &args(-2, 40));
    assert_eq!((r.record.faulted, r.touched), (0, vec![ni - 8, nl - 8]));
    // `nlist` one element shorter: its write is the fault, against its own slot.
    let r = run(&out.ptx, &args(9, 36));
    assert_eq!(r.record.faulted, 1);
    assert_eq!(
        k.site(r.record.site).unwrap().target,
        Target::Field(slot(0, 8))
    );
    assert_eq!(
        (r.record.base(), r.record.offset, r.record.len),
        (nl - 8, 44, 44)
    );
    assert_eq!(r.touched, [ni + 36]);
    // One element before both allocations: two faults, the first `nindex`'s.
    let r = run(&out.ptx, &args(-3, 40));
    assert_eq!((r.record.faulted, r.record.count), (1, 2));
    assert_eq!(
        k.site(r.record.site).unwrap().target,
        Target::Field(slot(0, 0))
    );
    assert_eq!((r.record.base(), r.record.offset), (ni - 8, -4));
    assert!(r.touched.is_empty());
}

#[test]
fn struct_pointer_fields_stay_unchecked_without_the_option() {
    let out = inst(
        &module(&kernel(GRAPH, GRAPH_BODY)),
        &InstrumentOptions::new(),
    );
    let k = &out.kernels[0];
    // Never checked against the parameter as if it were a pointer: listed unchecked, as a
    // struct's field where the field is the address, as computed where an index is added
    // to it (`analyze.rs` reads an untraced value plus an integer as an integer).
    assert_eq!(k.coverage.checked, 0);
    assert!(k.sites.is_empty());
    assert_eq!(k.coverage.unchecked.len(), 2);
    for u in &k.coverage.unchecked {
        assert!(
            matches!(u.reason, SkipReason::StructField | SkipReason::Computed),
            "{:?}",
            u.reason
        );
    }
    let direct = "\tld.param.u64 %rd1, [k_param_0+8];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];";
    let out = inst(&module(&kernel(GRAPH, direct)), &InstrumentOptions::new());
    let reasons: Vec<&SkipReason> = out.kernels[0]
        .coverage
        .unchecked
        .iter()
        .map(|u| &u.reason)
        .collect();
    assert_eq!(reasons, [&SkipReason::StructField]);
}

#[test]
fn host_checks_stay_relative_to_the_argument() {
    // `if (i < n) a[i] = 1` (n the third parameter): checked on the host against the bytes
    // from the argument to its allocation's end.
    let store = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_2];\n\tmov.u32 %r2, %tid.x;\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.u32 [%rd4+OFF], %r1;\n$L__END:";
    let opts = alloc().host_checks(true);
    let holds = |off: i64, n: u32, len: u64| {
        let out = inst(
            &module(&kernel(P3, &store.replace("OFF", &off.to_string()))),
            &opts,
        );
        let k = &out.kernels[0];
        assert_eq!(k.coverage.checked + k.coverage.host_checked, 1);
        if k.coverage.host_checked == 0 {
            return None;
        }
        let scalars = [None, None, Some((u64::from(n), 4))];
        let lens = [len, i64::MAX as u64, i64::MAX as u64];
        let v = LaunchValues {
            grid: [1, 1, 1],
            block: [128, 1, 1],
            scalars: &scalars,
            lens: &lens,
        };
        Some(k.host_checks_hold(&v))
    };
    // The view has A + S - p = 192 bytes: 48 elements.
    let len = A + S - VIEW;
    assert_eq!(holds(0, 48, len), Some(true));
    assert_eq!(holds(0, 49, len), Some(false));
    // `a[i - 1]`: 4 bytes below the argument for i = 0, inside the allocation, but a host
    // check does not know the allocation; it never holds, whatever the length (the launch
    // then runs the build that checks it on the device, against the allocation).
    assert_eq!(holds(-4, 48, len), Some(false));
    assert_eq!(holds(-4, 1, i64::MAX as u64), Some(false));
}

#[test]
fn struct_fields_are_checked_on_the_device_even_with_host_checks() {
    // `if (tid < m) dst[tid] = src[tid]`, `m` the third parameter: host-checkable where `src`
    // and `dst` are parameters; as fields of a struct the launch has no length to give the
    // host check (its lengths are per parameter), so they are checked on the device.
    let body = "	ld.param.u64 %rd1, [k_param_1];
	ld.param.u64 %rd2, [k_param_0];
	ld.param.u32 %r9, [k_param_2];
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p1, %r1, %r9;
	@%p1 bra $L__END;
	cvta.to.global.u64 %rd3, %rd2;
	cvta.to.global.u64 %rd4, %rd1;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd3, %rd5;
	ld.global.u32 %r2, [%rd6];
	add.s64 %rd7, %rd4, %rd5;
	st.global.u32 [%rd7], %r2;
$L__END:";
    let opts = alloc().host_checks(true);
    let plain = inst(&module(&kernel(P3, body)), &opts);
    let c = &plain.kernels[0].coverage;
    assert_eq!((c.checked, c.host_checked), (0, 2), "{c:?}");
    let fields = body
        .replace("[k_param_1]", "[k_param_0+8]")
        .replace("[k_param_0];", "[k_param_0+0];");
    let params = ".param .align 8 .b8 k_param_0[16], .param .u32 k_param_1, .param .u32 k_param_2";
    let out = inst(&module(&kernel(params, &fields)), &opts);
    let c = &out.kernels[0].coverage;
    assert_eq!((c.checked, c.host_checked), (2, 0), "{c:?}");
}
