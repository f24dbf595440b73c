//! Bounds checking on third-party kernel libraries: kernels of
//! huggingface/candle's `candle-kernels` and of EricLBuehler/mistral.rs, compiled from their
//! unchanged source files (read at run time from a checkout outside this repository, never
//! copied into it) and launched the way their owners' host code launches them.
//!
//! For each kernel:
//! - **differential**: random inputs (the seed is printed), outputs poisoned (every byte 0xFF)
//!   before each launch, launched plain and bounds-checked; the outputs must be bit-identical
//!   and written;
//! - **planted shape bugs** (launched bounds-checked only): `numel` larger than the buffers,
//!   strides that send one index past the end, an index tensor with one bad entry. Each must
//!   come back as `Error::OutOfBounds` naming the buffer (its parameter name in the source),
//!   an index past its length, the length, the thread and block, and the line in the
//!   third-party file (or `Error::DeviceAssert` where the kernel's own `assert` catches the
//!   bad index first); then a healthy launch of the same kernel on the same stream must
//!   succeed and write what the plain launch wrote.
//!
//! ```sh
//! cargo run --release -p cudacheck-examples --example thirdparty -- \
//!     --candle path/to/candle/candle-kernels/src \
//!     --mistral path/to/mistral.rs out.json out.md
//! # no GPU: build every kernel plain and bounds-checked for sm_90, report coverage
//! ... --example thirdparty -- --dry-run --arch sm_90 --candle DIR --mistral DIR out.json out.md
//! ```
//!
//! **PTX mode** (`--ptx DIR`): candle's kernels as candle ships them, PTX its build
//! script made with nvcc (`DIR/<file stem>.ptx`, one per `candle-kernels/src/*.cu`). Only the
//! candle cases whose PTX is there, and that add no `-D` option of their own, run, each kernel three ways on the same stream: the PTX
//! loaded by raw cudarc (`load_module`, `load_function`) and launched as
//! `Kernel::from_function`; `Kernel::from_ptx` plain; and `Kernel::from_ptx` bounds-checked.
//! All three must write the same bits. Planted bugs run bounds-checked from the PTX: a buffer
//! is then named `argument N` (nvcc names parameters `<symbol>_param_N`), which must be a
//! buffer of the reported length; the line is the `.cu` line of the PTX's `.loc` (build the
//! PTX with `-lineinfo`).
//!
//! Options: `--candle DIR` (`THIRDPARTY_CANDLE`), `--mistral DIR` (`THIRDPARTY_MISTRAL`;
//! without it the mistral.rs kernels are left out), `--seed N`, `--jobs N` (cases run in
//! parallel, one stream each; default: the cores, at most 16), `--only SUBSTRING`,
//! `--dry-run`, `--arch sm_XY` (dry run; default sm_90). Exit status 0 when every kernel
//! passed, 1 when any failed, 2 on a usage error. `scripts/thirdparty.sh` bundles it for the
//! GPU machine.

#[path = "thirdparty/call.rs"]
mod call;
#[path = "thirdparty/candle.rs"]
mod candle;
#[path = "thirdparty/case.rs"]
mod case;
#[path = "thirdparty/dry.rs"]
mod dry;
#[path = "thirdparty/expect.rs"]
mod expect;
#[path = "thirdparty/mistral.rs"]
mod mistral;
#[path = "thirdparty/report.rs"]
mod report;
#[path = "thirdparty/run.rs"]
mod run;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cudacheck::core::Arch;

use case::{Case, Corpus, Rng};

struct Options {
    candle: PathBuf,
    mistral: Option<PathBuf>,
    seed: u64,
    jobs: usize,
    only: Option<String>,
    dry_run: bool,
    arch: Arch,
    /// PTX mode: the directory of candle's build-time PTX.
    ptx: Option<PathBuf>,
    outputs: Vec<PathBuf>,
}

const USAGE: &str = "usage: thirdparty --candle DIR [--mistral DIR] [--ptx DIR] [--seed N] \
                     [--jobs N] [--only SUBSTRING] [--dry-run [--arch sm_XY]] OUT.json OUT.md";

fn parse() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0x9e37_79b9, |d| d.as_nanos() as u64);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut o = Options {
        candle: PathBuf::new(),
        mistral: env("THIRDPARTY_MISTRAL"),
        seed,
        jobs: cores.min(16),
        only: None,
        dry_run: false,
        arch: Arch::new(9, 0),
        ptx: None,
        outputs: Vec::new(),
    };
    let mut candle = env("THIRDPARTY_CANDLE");
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--candle" => candle = Some(value()?.into()),
            "--mistral" => o.mistral = Some(value()?.into()),
            "--seed" => {
                let v = value()?;
                let v = v.trim_start_matches("0x");
                o.seed = u64::from_str_radix(v, 16).map_err(|e| format!("--seed: {e}"))?;
            }
            "--jobs" => o.jobs = value()?.parse().map_err(|e| format!("--jobs: {e}"))?,
            "--only" => o.only = Some(value()?),
            "--dry-run" => o.dry_run = true,
            "--arch" => o.arch = value()?.parse().map_err(|e| format!("--arch: {e}"))?,
            "--ptx" => o.ptx = Some(value()?.into()),
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => o.outputs.push(a.into()),
        }
    }
    o.candle = candle.ok_or("--candle DIR (or THIRDPARTY_CANDLE) is required")?;
    o.jobs = o.jobs.max(1);
    Ok(o)
}

/// The cases to run, in report order; every case's data comes from its own generator seeded
/// from the run's seed, so the inputs do not depend on which cases run.
fn cases(o: &Options) -> Vec<Case> {
    let mut v = candle::cases(&mut Rng::new(o.seed));
    if o.mistral.is_some() {
        v.extend(mistral::cases(&mut Rng::new(
            o.seed ^ 0x6d69_7374_7261_6c00,
        )));
    }
    if let Some(only) = &o.only {
        v.retain(|c| c.label().contains(only.as_str()));
    }
    if o.ptx.is_some() {
        // A case with its own `-D` options (`-DNDEBUG`) is another build of the file: the
        // module candle ships is built without them.
        v.retain(|c| c.defines.is_empty() && ptx_path(o, c).is_some_and(|p| p.is_file()));
    }
    v
}

/// The build-time PTX of a candle case's file, in PTX mode.
fn ptx_path(o: &Options, c: &Case) -> Option<PathBuf> {
    let dir = o.ptx.as_ref()?;
    (c.corpus == Corpus::Candle).then(|| {
        let stem = std::path::Path::new(c.file).file_stem().unwrap_or_default();
        dir.join(stem).with_extension("ptx")
    })
}

fn source_path(o: &Options, c: &Case) -> PathBuf {
    match c.corpus {
        Corpus::Candle => o.candle.join(c.file),
        Corpus::Mistral => o.mistral.clone().unwrap_or_default().join(c.file),
    }
}

/// Runs `work` on every case, `jobs` at a time; results in case order.
fn parallel<R: Send>(
    cases: &[Case],
    jobs: usize,
    work: impl Fn(usize, &Case) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for worker in 0..jobs.min(cases.len()) {
            let (next, results, work) = (&next, &results, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(c) = cases.get(i) else { break };
                let r = work(worker, c);
                results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.expect("every case ran"))
        .collect()
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("thirdparty: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let cases = cases(&o);
    let meta = report::Meta::new(&o.candle, o.mistral.as_deref(), o.seed, o.jobs);
    println!(
        "thirdparty: {} kernels, seed {:#x}, {} jobs",
        cases.len(),
        o.seed,
        o.jobs
    );
    let t = Instant::now();
    let ok = if o.dry_run {
        let results = parallel(&cases, o.jobs, |_, c| {
            let r = dry::dry_case(c, &source_path(&o, c), o.arch);
            report::progress_dry(&r);
            r
        });
        report::write_dry(&o.outputs, &meta, o.arch, &results, t.elapsed())
    } else {
        let s = match cudacheck::default_stream(0) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("thirdparty needs a GPU (or --dry-run): {e}");
                return ExitCode::from(1);
            }
        };
        // One stream per worker: a planted bug and the healthy launch after it share one.
        let mut streams = vec![s.clone()];
        for _ in 1..o.jobs {
            match s.context().new_stream() {
                Ok(x) => streams.push(x),
                Err(e) => {
                    eprintln!("thirdparty: a stream: {e:?}");
                    return ExitCode::from(1);
                }
            }
        }
        let results = parallel(&cases, o.jobs, |w, c| {
            let r = run::run_case(
                c,
                &source_path(&o, c),
                ptx_path(&o, c).as_deref(),
                &streams[w],
            );
            report::progress(&r);
            r
        });
        let device = s.context().name().unwrap_or_default();
        let poisoned = cudacheck::is_poisoned(&s);
        report::write_gpu(&o.outputs, &meta, &device, poisoned, &results, t.elapsed())
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
