//! GPU tier: barriers that only part of a block reaches, and lanes of one warp at two barrier
//! statements, in race-checked launches (`tests/cuda/barriers/partial.cu`). Each kernel runs
//! three times: correct (`planted == 0`) race-checked, whose outputs must be bit-identical to
//! the plain build's; planted, which must give `Error::BarrierMisuse` of the kind its `expect:`
//! line names, at its marked barrier, with a thread that arrives there, the other side (a
//! thread that left, or one at the other barrier) and the arrival count worked out here from
//! the kernel's own conditions; then correct again, race-checked, in the same context (the
//! context is healthy). The planted half-warps case hung race-checked launches before
//! barriers became non-aligned: a hang here is a failure by timeout.

use std::collections::BTreeMap;
use std::sync::Arc;

use cudacheck::cudarc::driver::CudaStream;
use cudacheck::nvrtc::CudaSource;
use cudacheck::{BarrierMisuse, BarrierMisuseKind, Error, Kernel};
use cudacheck_core::Dim3;
use cudacheck_tests::{chain, gpu_or_skip, repo_root};

struct Case {
    name: String,
    expect: String,
    grid: u32,
    block: (u32, u32),
    /// Marker (`BARRIER-1`, `EXIT-1`) to its 1-based line.
    markers: BTreeMap<String, u32>,
    /// The kernel's lines, signature to closing brace.
    lines: (u32, u32),
    /// The line of its early `return`, when the planted mistake is one.
    early_return: Option<u32>,
}

impl Case {
    fn threads(&self) -> u32 {
        self.block.0 * self.block.1
    }
    fn elements(&self) -> usize {
        (self.grid * self.threads()) as usize
    }
    /// The `n` argument: the tail case's data ends 20 elements before its last block does.
    fn n(&self) -> i32 {
        let all = self.elements() as i32;
        if self.name == "tail_block_return" {
            all - 20
        } else {
            all
        }
    }
}

fn source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/barriers/partial.cu")).unwrap()
}

fn cases() -> Vec<Case> {
    let src = source();
    let lines: Vec<&str> = src.text.lines().collect();
    let mut out: Vec<Case> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        let line = k as u32 + 1;
        if let Some(rest) = l.strip_prefix("extern \"C\" __global__ void ") {
            let field = |f: &str| -> u32 {
                lines[k - 1]
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{f}=")))
                    .unwrap_or_else(|| panic!("line {line}: no {f}= on the launch line"))
                    .parse()
                    .unwrap()
            };
            let expect = lines[k - 2]
                .strip_prefix("// expect: ")
                .unwrap_or_else(|| panic!("line {line}: no expect line"))
                .trim()
                .to_string();
            out.push(Case {
                name: rest.split('(').next().unwrap().to_string(),
                expect,
                grid: field("grid"),
                block: (field("bx"), field("by")),
                markers: BTreeMap::new(),
                lines: (line, line),
                early_return: None,
            });
        }
        if let Some(c) = out.last_mut() {
            if *l == "}" && c.lines.1 == c.lines.0 {
                c.lines.1 = line;
            }
            for m in ["BARRIER-1", "BARRIER-2", "EXIT-1"] {
                if l.contains(&format!("// {m}")) {
                    c.markers.insert(m.to_string(), line);
                    if m == "EXIT-1" && l.contains("return") {
                        c.early_return = Some(line);
                    }
                }
            }
        }
    }
    out
}

/// Inputs with both signs (the vote kernel's outcome depends on them).
fn inputs(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37) % 23) as f32 * 0.25 - 2.0)
        .collect()
}

fn run(s: &Arc<CudaStream>, c: &Case, races: bool, planted: bool) -> Result<Vec<f32>, Error> {
    let k = Kernel::new(source(), &c.name)
        .instrument(races)
        .races(races)
        .sync(true)
        .build();
    let input = cudacheck::alloc_copy(s, &inputs(c.elements())).unwrap();
    let mut out = cudacheck::alloc_copy(s, &vec![f32::NAN; c.elements()]).unwrap();
    unsafe {
        k.launch(s)
            .grid(c.grid)
            .block((c.block.0, c.block.1, 1))
            .arg_mut(&mut out)
            .arg(&input)
            .arg(&c.n())
            .arg(&i32::from(planted))
            .run()
    }?;
    Ok(s.clone_dtoh(&out).unwrap())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

fn linear(t: Dim3, c: &Case) -> u32 {
    t.x + t.y * c.block.0
}

/// Whether thread `t` (linear) of block `b` leaves the block before the first barrier that
/// not all threads reach, in the planted version: each kernel's condition, written out again.
fn leaves(c: &Case, b: u32, t: u32) -> bool {
    match c.name.as_str() {
        "rows_stage_tile" => t / 16 >= 4,
        // Warp 0 runs two steps, the others more: warp 0 is gone at the third step's barrier.
        "scan_steps_per_warp" => t < 32,
        "settle_rounds" => t & 32 != 0,
        "any_negative_vote" => t >= 64,
        "tail_block_return" => (b * 64 + t) as i32 >= c.n(),
        "group_sync_some_lanes" => t & 31 < 8,
        other => panic!("no condition written for {other}"),
    }
}

/// What is wrong with the report of planted case `c`, if anything.
fn inexact(c: &Case, e: &BarrierMisuse) -> Vec<String> {
    let mut why = Vec::new();
    let b1 = c.markers["BARRIER-1"];
    let t = linear(e.call.thread, c);
    if e.block.x >= c.grid || e.block.y != 0 {
        why.push(format!("block {}", e.block));
    }
    match c.expect.as_str() {
        "exited" => {
            let block = e.block.x;
            let arrived = (0..c.threads()).filter(|&u| !leaves(c, block, u)).count() as u32;
            let want = BarrierMisuseKind::Exited {
                arrived,
                expected: c.threads(),
            };
            if e.kind != want {
                why.push(format!("kind {:?}, expected {want:?}", e.kind));
            }
            if e.call.line != b1 {
                why.push(format!("barrier at line {}, marked {b1}", e.call.line));
            }
            if leaves(c, block, t) {
                why.push(format!("thread {t} named at the barrier leaves before it"));
            }
            match &e.other {
                None => why.push("no thread that left is named".into()),
                Some(o) => {
                    if !leaves(c, block, linear(o.thread, c)) {
                        why.push(format!("thread {} named as leaving reaches it", o.thread));
                    }
                    // An early `return` is named at its line; another way out (a `break`, the
                    // end of a branch) at the kernel's `ret`, wherever the compiler put it.
                    match c.early_return {
                        Some(r) if o.line != r => {
                            why.push(format!("exit at line {}, the `return` is at {r}", o.line))
                        }
                        _ if o.line < c.lines.0 || o.line > c.lines.1 => {
                            why.push(format!("exit at line {}, outside the kernel", o.line))
                        }
                        _ => {}
                    }
                }
            }
            if c.name == "tail_block_return" && block != c.grid - 1 {
                why.push(format!(
                    "block {block}: only the last block is partly outside"
                ));
            }
        }
        "divergent" => {
            let b2 = c.markers["BARRIER-2"];
            // Lanes 16..31 of each warp wait at BARRIER-1, lanes 0..15 at BARRIER-2.
            let side =
                |line: u32, t: u32| (line == b1 && t & 16 != 0) || (line == b2 && t & 16 == 0);
            if e.kind != BarrierMisuseKind::Divergent {
                why.push(format!("kind {:?}", e.kind));
            }
            if !side(e.call.line, t) {
                why.push(format!("thread {t} is not at line {}", e.call.line));
            }
            match &e.other {
                Some(o) if side(o.line, linear(o.thread, c)) && o.line != e.call.line => {}
                o => why.push(format!("other side {o:?}")),
            }
        }
        other => why.push(format!("unknown expect `{other}`")),
    }
    why
}

#[test]
fn gpu_partial_barriers_are_reported_and_correct_twins_match_the_plain_build() {
    let Some(s) = gpu_or_skip() else { return };
    let all = cases();
    assert_eq!(
        all.len(),
        7,
        "{:?}",
        all.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
    let mut failures = Vec::new();
    for c in &all {
        let plain = run(&s, c, false, false).unwrap();
        // The correct twin: no report, the plain build's bits.
        match run(&s, c, true, false) {
            Ok(checked) if bits(&checked) == bits(&plain) => {}
            Ok(_) => failures.push(format!("{}: correct twin's outputs differ", c.name)),
            Err(e) => failures.push(format!("{}: correct twin reported: {}", c.name, chain(&e))),
        }
        match run(&s, c, true, true) {
            Err(Error::BarrierMisuse(e)) => {
                let text = e.to_string();
                println!("{}:\n{text}\n", c.name);
                let why = inexact(c, &e);
                if !why.is_empty() {
                    failures.push(format!("{}: {}\n{text}", c.name, why.join("; ")));
                }
                if c.expect == "exited" && !text.contains("guard the work, not the barrier") {
                    failures.push(format!("{}: no fix in the message\n{text}", c.name));
                }
            }
            Err(other) => failures.push(format!(
                "{}: expected a barrier error, got: {}",
                c.name,
                chain(&other)
            )),
            Ok(_) => failures.push(format!("{}: nothing reported", c.name)),
        }
        // The next launch, in the same context, is healthy.
        match run(&s, c, true, false) {
            Ok(again) if bits(&again) == bits(&plain) => {}
            Ok(_) => failures.push(format!("{}: the next launch's outputs differ", c.name)),
            Err(e) => failures.push(format!("{}: the next launch failed: {}", c.name, chain(&e))),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The cases as this file reads them (no GPU): every kernel has its launch, its marked
/// barrier, and, for the exited ones, a condition under which some but not all of a block's
/// threads leave.
#[test]
fn the_cases_and_their_conditions_are_read_from_the_source() {
    let all = cases();
    assert_eq!(all.len(), 7);
    for c in &all {
        assert!(c.markers.contains_key("BARRIER-1"), "{}", c.name);
        assert!(c.lines.1 > c.lines.0 + 3, "{}: {:?}", c.name, c.lines);
        match c.expect.as_str() {
            "exited" => {
                let last = c.grid - 1;
                let arrived = (0..c.threads()).filter(|&t| !leaves(c, last, t)).count();
                assert!(
                    arrived > 0 && arrived < c.threads() as usize,
                    "{}: {arrived} of {} arrive",
                    c.name,
                    c.threads()
                );
            }
            "divergent" => assert!(c.markers.contains_key("BARRIER-2"), "{}", c.name),
            other => panic!("{}: expect `{other}`", c.name),
        }
    }
}
