//! `--dry-run`: every case's kernel built with no GPU, plain and bounds-checked, exactly as a
//! launch on a device of `--arch` builds it: the plain CUBIN through `Kernel::check_offline`
//! (NVRTC, the same options and cache), and for each launch shape the case uses, NVRTC's PTX
//! instrumented for that shape (`instrument_ptx_with`) and assembled by nvJitLink. Reports
//! accesses left unchecked, and checks offline that each planted bug's expected line holds a
//! checked access (or an assertion) of the expected kind, so a wrong line key shows up here
//! rather than on the GPU.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use cudacheck::core::instrument::{instrument_ptx_with, FaultKind, InstrumentOptions, SiteKind};
use cudacheck::core::Arch;
use cudacheck::nvrtc::{self, CompileOptions, CudaSource};
use serde::Serialize;

use crate::case::Case;
use crate::expect::{find_line, Expect};

#[derive(Debug, Default, Serialize)]
pub struct DryResult {
    pub kernel: String,
    pub file: String,
    pub style: String,
    pub symbol: String,
    /// Launch shapes (block, dynamic shared bytes) built bounds-checked.
    pub shapes: Vec<String>,
    /// Accesses checked at run time, and of them proven in bounds, in the first shape's build.
    pub checked: u32,
    pub proven: u32,
    /// `file:line: instruction (reason)` of each access left unchecked.
    pub unchecked: Vec<String>,
    /// Each planted bug's expected line, and whether the build has an access there.
    pub bug_lines: Vec<String>,
    pub plain_ms: f64,
    pub checked_ms: f64,
    pub failure: Option<String>,
}

impl DryResult {
    pub fn passed(&self) -> bool {
        self.failure.is_none() && self.unchecked.is_empty()
    }
}

fn site_kind(k: FaultKind) -> SiteKind {
    match k {
        FaultKind::Write => SiteKind::Write,
        FaultKind::Atomic => SiteKind::Atomic,
        FaultKind::Assert => SiteKind::Assert,
        _ => SiteKind::Read,
    }
}

pub fn dry_case(case: &Case, path: &Path, arch: Arch) -> DryResult {
    let mut r = DryResult {
        kernel: case.label(),
        file: case.file.to_string(),
        style: case.style.to_string(),
        ..DryResult::default()
    };
    if let Err(e) = build(case, path, arch, &mut r) {
        r.failure = Some(e);
    }
    r
}

fn build(case: &Case, path: &Path, arch: Arch, r: &mut DryResult) -> Result<(), String> {
    let t = Instant::now();
    let k = crate::run::kernel(case, path, None)?;
    let plain = k
        .check_offline(arch)
        .map_err(|e| format!("plain build: {}", crate::run::one_line(&e)))?;
    r.symbol = plain.symbol.clone();
    r.plain_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let source = CudaSource::from_file(path).map_err(|e| e.to_string())?;
    let opts = CompileOptions {
        defines: case.defines.iter().map(|d| (d.to_string(), None)).collect(),
        name_expressions: vec![case.kernel.to_string()],
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let out = nvrtc::compile(&source, &opts).map_err(|e| format!("PTX build: {e}"))?;
    let ptx = out.ptx.unwrap_or_default();
    let shapes: BTreeSet<([u32; 3], u32)> = case
        .variants
        .iter()
        .map(|v| &v.call)
        .chain(case.bugs.iter().map(|b| &b.call))
        .map(|c| ([c.block.0, c.block.1, c.block.2], c.shared))
        .collect();
    let mut first = true;
    for (block, shared) in shapes {
        r.shapes.push(format!("block {block:?}, {shared} B shared"));
        let o = InstrumentOptions::new()
            .block(block)
            .dynamic_shared_bytes(shared);
        let inst = instrument_ptx_with(&ptx, &o).map_err(|e| format!("instrument: {e}"))?;
        let k = inst
            .kernel(&r.symbol)
            .ok_or_else(|| format!("the PTX has no kernel `{}`", r.symbol))?;
        nvrtc::assemble_ptx(&inst.ptx, arch, &source.name)
            .map_err(|e| format!("the bounds-checked build does not assemble: {e}"))?;
        if first {
            first = false;
            r.checked = k.coverage.checked + k.coverage.proven;
            r.proven = k.coverage.proven;
            r.unchecked = k
                .coverage
                .unchecked
                .iter()
                .map(|u| {
                    let at = u.loc.as_ref().map_or("?".to_string(), |l| l.to_string());
                    format!("{at}: {} ({})", u.instruction, u.reason)
                })
                .collect();
            for bug in &case.bugs {
                let (line, kind) = match &bug.expect {
                    Expect::OutOfBounds { line, access, .. } => (line, site_kind(*access)),
                    Expect::Assert { line, .. } => (line, SiteKind::Assert),
                };
                let dir = path.parent().unwrap_or(Path::new("."));
                let n = find_line(&dir.join(line.file), line.key)?;
                let hit = k.sites.iter().any(|s| {
                    s.kind == kind
                        && s.loc.as_ref().is_some_and(|l| {
                            l.line == n && l.file.rsplit('/').next() == Some(line.file)
                        })
                });
                let lines: BTreeSet<String> = k
                    .sites
                    .iter()
                    .filter(|s| s.kind == kind)
                    .filter_map(|s| s.loc.as_ref())
                    .map(|l| format!("{}:{}", l.file.rsplit('/').next().unwrap_or(""), l.line))
                    .collect();
                if !hit {
                    return Err(format!(
                        "{}: no {kind} site at {}:{n} (`{}`); the build's {kind} sites are at {}",
                        bug.kind,
                        line.file,
                        line.key,
                        lines.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
                r.bug_lines
                    .push(format!("{}: {kind} at {}:{n}", bug.kind, line.file));
            }
        }
    }
    r.checked_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(())
}
