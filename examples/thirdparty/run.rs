//! The GPU run of one case: every healthy launch plain and bounds-checked with the outputs
//! compared bit for bit, then every planted bug (bounds-checked only) matched against its
//! expectation, each followed by a healthy bounds-checked launch of the same kernel on the same
//! stream that must succeed and write what the plain launch wrote.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use cudacheck::cudarc::driver::CudaStream;
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel, PtxSource};
use serde::Serialize;

use crate::call::Data;
use crate::case::{Case, Variant, Written};
use crate::expect::{self, Got};

#[derive(Debug, Default, Serialize)]
pub struct VariantResult {
    pub label: String,
    /// Every output byte equal between the plain and the bounds-checked launch.
    pub identical: bool,
    /// Elements of the outputs compared.
    pub elements: usize,
    /// Elements the plain launch left poisoned (every byte 0xFF).
    pub unwritten: usize,
    /// The first launch of each kind includes compiling (plain) or instrumenting and
    /// assembling (checked) the kernel.
    pub plain_ms: f64,
    pub checked_ms: f64,
    /// Why the variant failed, if it did.
    pub failure: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct BugResult {
    pub kind: String,
    pub what: String,
    pub expected: String,
    pub got_variant: String,
    pub got_what: String,
    pub got_block: [u32; 3],
    pub got_thread: [u32; 3],
    pub got_at: String,
    pub got_count: u32,
    /// The error as a person reads it.
    pub got_text: String,
    /// Where the report differs from the expectation (empty: it matched).
    pub mismatches: Vec<String>,
    /// The healthy launch after the bug: `None` when it ran and wrote what the plain launch
    /// wrote, else why not.
    pub after: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct CaseResult {
    pub kernel: String,
    pub file: String,
    pub style: String,
    pub variants: Vec<VariantResult>,
    pub bugs: Vec<BugResult>,
    /// PTX mode: bad configurations of the first healthy launch (a block of 2048 threads,
    /// 1 MiB of dynamic shared memory), each launched from PTX and through raw cudarc's load,
    /// and how cudacheck refused them (`None`: as `Error::Launch` with `InvalidConfig`).
    pub refusals: Vec<(String, Option<String>)>,
    /// A failure before any launch (the source could not be read).
    pub failure: Option<String>,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
            && self.variants.iter().all(|v| v.failure.is_none())
            && self
                .bugs
                .iter()
                .all(|b| b.mismatches.is_empty() && b.after.is_none())
            && self.refusals.iter().all(|(_, why)| why.is_none())
    }
}

/// The kernel a case launches, built from the whole source file, or in PTX mode from the
/// file's build-time PTX.
pub fn kernel(case: &Case, path: &Path, ptx: Option<&Path>) -> Result<Kernel, String> {
    if let Some(ptx) = ptx {
        let p = PtxSource::from_file(ptx).map_err(|e| e.to_string())?;
        return Ok(Kernel::from_ptx(p, case.kernel).sync(true).build());
    }
    let src = CudaSource::from_file(path).map_err(|e| e.to_string())?;
    let mut b = Kernel::new(src, case.kernel).sync(true);
    for d in case.defines {
        b = b.define(d, None);
    }
    Ok(b.build())
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn flat(outs: &[Data]) -> Vec<u8> {
    outs.iter().flat_map(Data::to_bytes).collect()
}

/// In PTX mode, the same PTX loaded by raw cudarc, as candle loads it, wrapped as a kernel the
/// application loaded (`Kernel::from_function`): plain launches only.
fn raw_cudarc(case: &Case, ptx: &Path, s: &Arc<CudaStream>) -> Result<Kernel, String> {
    let text = std::fs::read_to_string(ptx).map_err(|e| format!("{}: {e}", ptx.display()))?;
    let entries = cudacheck::core::ptx_entries(&text).map_err(|e| e.to_string())?;
    let symbol = cudacheck::core::find_entry(&entries, case.kernel)
        .ok_or_else(|| format!("{} has no kernel `{}`", ptx.display(), case.kernel))?
        .symbol
        .clone();
    let ctx = s.context();
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(text))
        .map_err(|e| format!("cudarc load_module: {e:?}"))?;
    let f = module
        .load_function(&symbol)
        .map_err(|e| format!("cudarc load_function: {e:?}"))?;
    Kernel::from_function(ctx, f, case.kernel).map_err(|e| e.to_string())
}

/// The healthy launch compared: plain, then bounds-checked (and in PTX mode raw cudarc's
/// load of the same PTX first). Returns the plain outputs.
fn differential(
    k: &Kernel,
    raw: Option<&Kernel>,
    s: &Arc<CudaStream>,
    v: &Variant,
    r: &mut VariantResult,
) -> Result<Vec<Data>, String> {
    if let Some(raw) = raw {
        // SAFETY: as below.
        let theirs =
            unsafe { v.call.run(raw, s, false) }.map_err(|e| format!("raw cudarc launch: {e}"))?;
        let mine = unsafe { v.call.run(k, s, false) }.map_err(|e| format!("plain launch: {e}"))?;
        if flat(&theirs) != flat(&mine) {
            return Err(
                "outputs differ between raw cudarc's load of the PTX and the plain \
                        launch from PTX"
                    .into(),
            );
        }
    }
    let t = Instant::now();
    // SAFETY: a healthy call's buffers are sized the way the kernel's owners size them
    // (`candle.rs`, `mistral.rs`), so the plain launch stays inside them.
    let plain = unsafe { v.call.run(k, s, false) }.map_err(|e| format!("plain launch: {e}"))?;
    r.plain_ms = ms(t);
    let t = Instant::now();
    // SAFETY: as above; bounds-checked besides.
    let checked =
        unsafe { v.call.run(k, s, true) }.map_err(|e| format!("bounds-checked launch: {e}"))?;
    r.checked_ms = ms(t);
    let (a, b) = (flat(&plain), flat(&checked));
    r.elements = plain.iter().map(Data::len).sum();
    r.unwritten = plain.iter().map(Data::poisoned).sum();
    r.identical = a == b;
    if !r.identical {
        let byte = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len());
        return Err(format!(
            "outputs differ between the plain and the bounds-checked launch (first at byte {byte})"
        ));
    }
    let written = r.elements - r.unwritten;
    let ok = match v.written {
        Written::All => r.unwritten == 0,
        Written::AtLeast(n) => written >= n,
        Written::Changed => {
            let before: Vec<u8> = v
                .call
                .outputs()
                .into_iter()
                .flat_map(Data::to_bytes)
                .collect();
            before != a
        }
    };
    if !ok {
        return Err(format!(
            "the kernel did not write its outputs ({written} of {} elements written, {:?} expected)",
            r.elements, v.written
        ));
    }
    Ok(plain)
}

/// Runs `case` on `s`; `path` is its source file, `ptx` its build-time PTX in PTX mode.
pub fn run_case(case: &Case, path: &Path, ptx: Option<&Path>, s: &Arc<CudaStream>) -> CaseResult {
    let mut res = CaseResult {
        kernel: case.label(),
        file: case.file.to_string(),
        style: case.style.to_string(),
        ..CaseResult::default()
    };
    let k = match kernel(case, path, ptx) {
        Ok(k) => k,
        Err(e) => {
            res.failure = Some(e);
            return res;
        }
    };
    let raw = match ptx.map(|p| raw_cudarc(case, p, s)).transpose() {
        Ok(r) => r,
        Err(e) => {
            res.failure = Some(e);
            return res;
        }
    };
    let mut first_plain = None;
    for v in &case.variants {
        let mut r = VariantResult {
            label: v.label.clone(),
            ..VariantResult::default()
        };
        match differential(&k, raw.as_ref(), s, v, &mut r) {
            Ok(plain) => {
                if first_plain.is_none() {
                    first_plain = Some(plain);
                }
            }
            Err(e) => r.failure = Some(e),
        }
        res.variants.push(r);
    }
    if let (Some(raw), Some(v)) = (raw.as_ref(), case.variants.first()) {
        res.refusals = refusals(&k, raw, s, v);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    for bug in &case.bugs {
        // SAFETY: a planted bug is launched bounds-checked only: its out-of-bounds accesses
        // are skipped, and the rest stays inside the buffers.
        let r = unsafe { bug.call.run(&k, s, true) };
        // From PTX a buffer is `argument N`: which arguments are buffers of which length.
        let lens = ptx.map(|_| bug.call.buffer_lens());
        let (got, mismatches) = expect::check(&r, &bug.expect, dir, lens.as_deref());
        let after = healthy_after(&k, s, case, first_plain.as_deref());
        res.bugs.push(bug_result(bug, got, mismatches, after));
    }
    res
}

/// PTX mode: the first healthy launch with a block no GPU runs and with more shared memory than
/// any GPU has, from PTX and through raw cudarc's load: each must be refused before the
/// driver sees it, as `InvalidConfig`.
fn refusals(
    k: &Kernel,
    raw: &Kernel,
    s: &Arc<CudaStream>,
    v: &Variant,
) -> Vec<(String, Option<String>)> {
    let mut big_block = v.call.clone();
    big_block.block = (2048, 1, 1);
    let mut big_shared = v.call.clone();
    big_shared.shared = 1 << 20;
    let mut out = Vec::new();
    for (what, call) in [
        ("block of 2048 threads", &big_block),
        ("1 MiB of dynamic shared memory", &big_shared),
    ] {
        for (by, kernel) in [("from PTX", k), ("loaded by cudarc", raw)] {
            // SAFETY: the launch is refused before it reaches the driver (checked below).
            let r = unsafe { call.run(kernel, s, false) };
            let why = match &r {
                Err(Error::Launch(l))
                    if matches!(l.kind, cudacheck::LaunchErrorKind::InvalidConfig { .. }) =>
                {
                    None
                }
                Err(e) => Some(format!("refused otherwise: {}", one_line(e))),
                Ok(_) => Some("launched".to_string()),
            };
            out.push((format!("{what}, {by}"), why));
        }
    }
    out
}

fn bug_result(
    bug: &crate::case::Bug,
    got: Got,
    mismatches: Vec<String>,
    after: Option<String>,
) -> BugResult {
    BugResult {
        kind: bug.kind.to_string(),
        what: bug.what.clone(),
        expected: bug.expect.summary(),
        got_variant: got.variant,
        got_what: got.what,
        got_block: got.block,
        got_thread: got.thread,
        got_at: got.at,
        got_count: got.count,
        got_text: got.text,
        mismatches,
        after,
    }
}

/// The first healthy launch again, bounds-checked, after a planted bug: it must run and
/// write exactly what the plain launch wrote.
fn healthy_after(
    k: &Kernel,
    s: &Arc<CudaStream>,
    case: &Case,
    plain: Option<&[Data]>,
) -> Option<String> {
    if cudacheck::is_poisoned(s) {
        return Some("the context is poisoned".into());
    }
    let v = case.variants.first()?;
    // SAFETY: a healthy call, as in `differential`.
    match unsafe { v.call.run(k, s, true) } {
        Err(e) => Some(format!("the next launch failed: {}", one_line(&e))),
        Ok(out) => match plain {
            Some(p) if flat(p) == flat(&out) => None,
            Some(_) => Some("the next launch wrote other values than the plain launch".into()),
            None => Some("no plain result to compare with".into()),
        },
    }
}

pub fn one_line(e: &Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}
