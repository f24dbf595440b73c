//! `cudacheck instrument`: build each file bounds-checked exactly as a launch would (NVRTC to
//! PTX with line information, the PTX rewrite, ptxas through nvJitLink) and report per kernel
//! how many accesses are checked and which are not, with file:line and why. The report comes
//! from a build that assembled: a file whose checked build does not is an error (exit 2).
//! A `.ptx` file (a module compiled ahead of time) is rewritten as it is, with no NVRTC.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cudacheck::nvrtc::{self, assemble_ptx, CompileOptions, CudaSource};
use cudacheck_core::init::{init_ptx, render_init_report, InitKernel};
use cudacheck_core::instrument::{
    instrument_ptx_with, render_report, InstrumentOptions, InstrumentedKernel,
};
use cudacheck_core::race::{race_ptx, render_race_report, RaceKernel, RaceOptions};
use serde::Serialize;

use crate::args::{parse_defines, InstrumentArgs};
use crate::collect::collect;

#[derive(Debug, Serialize)]
struct UncheckedEntry {
    file: String,
    line: u32,
    column: u32,
    instruction: String,
    reason: String,
}

#[derive(Debug, Serialize)]
struct KernelEntry {
    /// `scale<float>`, or the symbol for `extern "C"` kernels.
    name: String,
    symbol: String,
    /// Accesses checked at run time plus those proven in bounds.
    checked: u32,
    /// Of `checked`, those proven in bounds with no run-time check.
    proven: u32,
    /// Of `checked`, those checked once per launch on the host: the user's guard bounds them
    /// by the launch's arguments (a launch whose arguments do not keep them in bounds runs
    /// the build with a device check for each).
    host_checked: u32,
    /// Of `checked`, those each thread checks once before their loop, on the device, over
    /// every iteration (a versioned loop: the loop then runs without their checks).
    hoisted: u32,
    /// The loops so versioned.
    versioned_loops: u32,
    unchecked: Vec<UncheckedEntry>,
    /// With `--races`: what the race-checked build checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    races: Option<RaceEntry>,
    /// With `--init`: what the init-checked build checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    init: Option<InitEntry>,
}

#[derive(Debug, Serialize)]
struct InitEntry {
    /// Global reads (and atomics, which read) whose bytes are tested for a write before them.
    checked: u32,
    /// Global writes (and atomics) that mark their bytes written.
    marked: u32,
    /// Why the kernel is not init-checked at all, when it is not: its launches then count
    /// every allocation they can reach as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_checked: Option<String>,
    unchecked: Vec<UncheckedEntry>,
}

fn init_entry(k: &InitKernel) -> InitEntry {
    let c = &k.coverage;
    InitEntry {
        checked: c.checked,
        marked: c.marked,
        not_checked: c.not_checked.clone(),
        unchecked: c
            .unchecked
            .iter()
            .map(|u| unchecked_entry(u.loc.as_ref(), &u.instruction, &u.reason))
            .collect(),
    }
}

#[derive(Debug, Serialize)]
struct RaceEntry {
    /// Shared-memory accesses race-checked.
    checked: u32,
    /// Of `checked`, those that cannot race (nothing in their barrier interval conflicts, or
    /// they are proven thread-private there): no check runs for them.
    proven: u32,
    /// Of `proven`, those proven thread-private in their barrier interval (no other thread
    /// of the block can touch their bytes there).
    thread_private: u32,
    /// Every access with no check, and why.
    proven_accesses: Vec<ProvenEntry>,
    /// Block barriers with a divergence check.
    barriers: u32,
    /// `__syncwarp` calls with a mask check.
    warp_syncs: u32,
    /// Why the kernel is not race-checked at all, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_checked: Option<String>,
    unchecked: Vec<UncheckedEntry>,
}

/// A shared access with no race check, as the JSON lists it.
#[derive(Debug, Serialize)]
struct ProvenEntry {
    file: String,
    line: u32,
    column: u32,
    /// `read`, `write` or `atomic`.
    access: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    array: Option<String>,
    /// Why it cannot race.
    why: String,
}

fn race_entry(k: &RaceKernel) -> RaceEntry {
    let c = &k.coverage;
    RaceEntry {
        checked: c.checked,
        proven: c.proven,
        thread_private: c.thread_private,
        proven_accesses: k
            .sites
            .iter()
            .filter_map(|s| {
                let why = s.proven?;
                let (file, line, column) = s.loc.as_ref().map_or((String::new(), 0, 0), |l| {
                    (l.file.clone(), l.line, l.column)
                });
                Some(ProvenEntry {
                    file,
                    line,
                    column,
                    access: s.kind.to_string(),
                    array: s.array.clone(),
                    why: why.to_string(),
                })
            })
            .collect(),
        barriers: c.barriers,
        warp_syncs: c.warp_syncs,
        not_checked: c.not_checked.clone(),
        unchecked: c
            .unchecked
            .iter()
            .map(|u| unchecked_entry(u.loc.as_ref(), &u.instruction, &u.reason))
            .collect(),
    }
}

/// An unchecked access as the JSON lists it.
fn unchecked_entry(
    loc: Option<&cudacheck_core::instrument::SourceLoc>,
    instruction: &str,
    reason: &dyn std::fmt::Display,
) -> UncheckedEntry {
    let (file, line, column) = loc.map_or((String::new(), 0, 0), |l| {
        (l.file.clone(), l.line, l.column)
    });
    UncheckedEntry {
        file,
        line,
        column,
        instruction: instruction.to_string(),
        reason: reason.to_string(),
    }
}

/// One file's builds: the bounds-checked kernels, the race-checked ones (with `--races`), the
/// init-checked ones (with `--init`) and the PTX of the last build made.
type Built = (
    Vec<InstrumentedKernel>,
    Vec<RaceKernel>,
    Vec<InitKernel>,
    String,
);

/// The init-checked build of a (race-checked or) bounds-checked module, assembled as a launch
/// would.
fn with_init(
    ptx: String,
    args: &InstrumentArgs,
    name: &str,
) -> Result<(Vec<InitKernel>, String), String> {
    if !args.init {
        return Ok((Vec::new(), ptx));
    }
    let r = init_ptx(&ptx).map_err(|e| e.to_string())?;
    if let Err(e) = assemble_ptx(&r.ptx, args.arch, name) {
        if args.ptx {
            // What ptxas refused, for the report that follows.
            println!("{}", r.ptx);
        }
        return Err(format!("the init-checked build does not assemble: {e}"));
    }
    Ok((r.kernels, r.ptx))
}

/// The race- and init-checked builds the options ask for, on top of the bounds-checked one.
fn with_checks(
    inst: cudacheck_core::instrument::InstrumentedPtx,
    args: &InstrumentArgs,
    name: &str,
) -> Result<Built, String> {
    let (races, ptx) = with_races(inst.ptx, args, name)?;
    let (init, ptx) = with_init(ptx, args, name)?;
    Ok((inst.kernels, races, init, ptx))
}

/// The race-checked build of a bounds-checked module, assembled as a launch would.
fn with_races(
    inst_ptx: String,
    args: &InstrumentArgs,
    name: &str,
) -> Result<(Vec<RaceKernel>, String), String> {
    if !args.races {
        return Ok((Vec::new(), inst_ptx));
    }
    let mut opts = RaceOptions::new(args.dynamic_smem.unwrap_or(0));
    if let Some(b) = args.block {
        opts = opts.block([b.x, b.y, b.z]);
    }
    let r = race_ptx(&inst_ptx, &opts).map_err(|e| e.to_string())?;
    if let Err(e) = assemble_ptx(&r.ptx, args.arch, name) {
        if args.ptx {
            // What ptxas refused, for the report that follows.
            println!("{}", r.ptx);
        }
        return Err(format!("the race-checked build does not assemble: {e}"));
    }
    Ok((r.kernels, r.ptx))
}

#[derive(Debug, Serialize)]
struct FileEntry {
    path: PathBuf,
    kernels: Vec<KernelEntry>,
    /// Set when the file could not be read, compiled, instrumented or assembled.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Set for a file with nothing to instrument that is not an error: host code only.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    arch: String,
    files: Vec<FileEntry>,
}

/// What `instrument` and `check` say of a file with no device code at all.
pub(crate) const HOST_ONLY: &str =
    "host code only: no `__global__` or `__device__` in the file or its headers, \
                         so nothing runs on the GPU to check";

/// One file's checked build: its kernels, the instrumented PTX, or why there is none (no
/// kernels and no error: host code only).
fn build(path: &Path, args: &InstrumentArgs) -> Result<Built, String> {
    let source = CudaSource::from_file(path).map_err(|e| e.to_string())?;
    if crate::collect::is_ptx(path) {
        // Already compiled (a candle-style build-time module): rewritten as it is.
        let inst = instrument_ptx_with(&source.text, &shape_of(args)).map_err(|e| e.to_string())?;
        if inst.kernels.is_empty() {
            return Err("no kernels: the PTX module has no `.entry`".to_string());
        }
        assemble_ptx(&inst.ptx, args.arch, &source.name)
            .map_err(|e| format!("the bounds-checked build does not assemble: {e}"))?;
        return with_checks(inst, args, &source.name);
    }
    let opts = CompileOptions {
        include_dirs: args.include.clone(),
        defines: parse_defines(&args.define),
        ptx: true,
        ..CompileOptions::new(args.arch)
    };
    let out = nvrtc::compile(&source, &opts).map_err(|e| e.to_string())?;
    let ptx = out.ptx.unwrap_or_default();
    let inst = instrument_ptx_with(&ptx, &shape_of(args)).map_err(|e| e.to_string())?;
    if inst.kernels.is_empty()
        && !source.text.trim().is_empty()
        && !nvrtc::has_device_code(&source, &args.include)
    {
        return Ok((Vec::new(), Vec::new(), Vec::new(), String::new()));
    }
    if inst.kernels.is_empty() {
        return Err(
            "no kernels: the file defines no `__global__` function that NVRTC emitted \
                    (templates need an explicit instantiation)"
                .to_string(),
        );
    }
    assemble_ptx(&inst.ptx, args.arch, &source.name)
        .map_err(|e| format!("the bounds-checked build does not assemble: {e}"))?;
    with_checks(inst, args, &source.name)
}

/// The launch shape the build is specialised for, as a launch with it would be.
fn shape_of(args: &InstrumentArgs) -> InstrumentOptions {
    let mut shape = InstrumentOptions::new().host_checks(true);
    shape.block = args.block.map(|b| [b.x, b.y, b.z]);
    shape.dynamic_shared_bytes = args.dynamic_smem;
    shape
}

fn entry(k: &InstrumentedKernel, races: &[RaceKernel], init: &[InitKernel]) -> KernelEntry {
    let c = &k.coverage;
    KernelEntry {
        name: k.name.clone(),
        symbol: k.symbol.clone(),
        checked: c.checked + c.proven + c.host_checked,
        proven: c.proven,
        host_checked: c.host_checked,
        hoisted: c.hoisted,
        versioned_loops: c.versioned_loops,
        unchecked: c
            .unchecked
            .iter()
            .map(|u| unchecked_entry(u.loc.as_ref(), &u.instruction, &u.reason))
            .collect(),
        races: races.iter().find(|r| r.symbol == k.symbol).map(race_entry),
        init: init.iter().find(|r| r.symbol == k.symbol).map(init_entry),
    }
}

pub fn run(args: &InstrumentArgs) -> ExitCode {
    if let Some(b) = args.block.filter(|b| b.x == 0 || b.y == 0 || b.z == 0) {
        eprintln!("error: --block {b}: a block has at least one thread along each axis");
        return ExitCode::from(2);
    }
    let files = match collect(&args.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut report = Report {
        arch: args.arch.sm_name(),
        files: Vec::new(),
    };
    let mut failed = false;
    for path in &files {
        match build(path, args) {
            Ok((kernels, ..)) if kernels.is_empty() => {
                let note = HOST_ONLY.to_string();
                if !args.json && !args.ptx {
                    println!("{}: {note}", path.display());
                }
                report.files.push(FileEntry {
                    path: path.clone(),
                    kernels: Vec::new(),
                    error: None,
                    note: Some(note),
                });
            }
            Ok((kernels, races, init, ptx)) => {
                if args.ptx {
                    println!("{ptx}");
                } else if !args.json {
                    print!("{}", render_report(&path.display().to_string(), &kernels));
                    if args.races {
                        print!(
                            "{}",
                            render_race_report(&path.display().to_string(), &races)
                        );
                    }
                    if args.init {
                        print!("{}", render_init_report(&path.display().to_string(), &init));
                    }
                }
                report.files.push(FileEntry {
                    path: path.clone(),
                    kernels: kernels.iter().map(|k| entry(k, &races, &init)).collect(),
                    error: None,
                    note: None,
                });
            }
            Err(e) => {
                failed = true;
                if !args.json {
                    eprintln!("error: {}: {e}", path.display());
                }
                report.files.push(FileEntry {
                    path: path.clone(),
                    kernels: Vec::new(),
                    error: Some(e),
                    note: None,
                });
            }
        }
    }
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: cannot write the report as JSON: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
