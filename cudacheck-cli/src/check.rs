//! `cudacheck check`: compile each file for the target, read every kernel's resources from the
//! CUBIN and check the launch configuration against the target's limits.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cudacheck::nvrtc::{self, CompileOptions, CudaSource};
use cudacheck_core::cubin::{parse_ptxas_info, read_cubin};
use cudacheck_core::limits::ArchLimits;
use cudacheck_core::validate::{
    kernel_max_threads, max_threads_for_registers, occupancy, validate, LaunchConfig, Occupancy,
    ValidateOptions,
};
use cudacheck_core::{Dim3, KernelResources};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use crate::args::{parse_defines, CheckArgs};
use crate::collect::{collect, is_ptx};
use crate::render;
use cudacheck_core::instrument::demangle;

/// What `check` found for one kernel.
#[derive(Debug, Serialize)]
pub struct KernelReport {
    /// The name a person wrote (`scale<float>`), demangled from the CUBIN symbol.
    pub name: String,
    pub resources: KernelResources,
    /// The largest block this kernel can launch with on the target.
    pub max_threads_per_block: u32,
    /// The largest block its registers alone allow.
    pub max_threads_by_registers: u32,
    /// The block the occupancy below is for, and why that one.
    pub occupancy_block: Dim3,
    pub occupancy: Occupancy,
    /// Every limit the checked configuration breaks, as a person reads it.
    pub violations: Vec<String>,
}

/// What `check` found for one file.
#[derive(Debug, Serialize)]
pub struct FileReport {
    pub path: PathBuf,
    pub kernels: Vec<KernelReport>,
    /// Set when the file could not be read or compiled, or holds no kernel.
    pub error: Option<String>,
    /// Set for a file with nothing to check that is not an error: host code only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl FileReport {
    /// A file with nothing to report but why.
    fn failed(path: &Path, error: String) -> Self {
        FileReport {
            path: path.to_path_buf(),
            kernels: Vec::new(),
            error: Some(error),
            note: None,
        }
    }
}

/// The whole run, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub arch: String,
    pub nvrtc: String,
    pub config: Option<LaunchConfig>,
    pub files: Vec<FileReport>,
    pub kernels_checked: usize,
    pub kernels_with_violations: usize,
    pub files_with_errors: usize,
}

pub fn run(args: &CheckArgs) -> ExitCode {
    let files = match collect(&args.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // PTX modules need no NVRTC (nvJitLink assembles them): only CUDA sources ask for it.
    let nvrtc = if files.iter().all(|f| is_ptx(f)) {
        None
    } else {
        match nvrtc::nvrtc() {
            Ok(n) => Some(n),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let limits = ArchLimits::for_arch(args.arch);
    let config = args.block.map(|block| LaunchConfig {
        grid: args.grid.unwrap_or(Dim3::new(1, 1, 1)),
        block,
        dynamic_shared_bytes: args.dynamic_smem,
        cluster: None,
    });

    let reports = match check_files(&files, args, &limits, config.as_ref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the threads that compile in parallel: {e}");
            return ExitCode::from(2);
        }
    };

    let kernels_checked = reports.iter().map(|f| f.kernels.len()).sum();
    let kernels_with_violations = reports
        .iter()
        .flat_map(|f| &f.kernels)
        .filter(|k| !k.violations.is_empty())
        .count();
    let files_with_errors = reports.iter().filter(|f| f.error.is_some()).count();
    let report = Report {
        arch: args.arch.sm_name(),
        nvrtc: nvrtc.map_or_else(
            || "none, PTX only".to_string(),
            |n| format!("{}.{}", n.version.0, n.version.1),
        ),
        config,
        files: reports,
        kernels_checked,
        kernels_with_violations,
        files_with_errors,
    };
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: cannot write the report as JSON: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", render::text(&report, &limits));
    }
    if files_with_errors > 0 {
        ExitCode::from(2)
    } else if kernels_with_violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Checks every file, one per core at a time (NVRTC compiles in parallel from several
/// threads), and returns the reports in the order of `files`, so the output is the same as a
/// sequential run's whatever order the compiles run and finish in.
fn check_files(
    files: &[PathBuf],
    args: &CheckArgs,
    limits: &ArchLimits,
    config: Option<&LaunchConfig>,
) -> Result<Vec<FileReport>, rayon::ThreadPoolBuildError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.map_or(0, |j| j as usize))
        .build()?;
    // A bar only for a person watching: never in pipes, logs or --json output.
    let bar = if files.len() > 1 && std::io::stderr().is_terminal() && !args.json {
        let style = ProgressStyle::with_template("{bar:30} {pos}/{len} files {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::new(files.len() as u64).with_style(style);
        bar.set_message("compiling");
        bar
    } else {
        ProgressBar::hidden()
    };
    // Largest source first: a long compile started last would run alone at the end while the
    // other cores idle (the source's size is a fair guess of its compile time). `par_bridge`
    // hands the files out one at a time in this order, to whichever thread is free.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(std::fs::metadata(&files[i]).map_or(0, |m| m.len())));
    let mut reports: Vec<(usize, FileReport)> = pool.install(|| {
        order
            .into_iter()
            .par_bridge()
            .map(|i| {
                let report = check_file(&files[i], args, limits, config);
                bar.inc(1);
                bar.set_message(format!("checked {}", files[i].display()));
                (i, report)
            })
            .collect()
    });
    bar.finish_and_clear();
    reports.sort_by_key(|(i, _)| *i);
    Ok(reports.into_iter().map(|(_, r)| r).collect())
}

/// The note for a file whose device code is functions other files' kernels call.
const DEVICE_FUNCTIONS_ONLY: &str = "device functions only: `__device__` but no `__global__` in \
     the file or its headers (the kernels that call them are in other files), so there is no \
     kernel to check";

fn check_file(
    path: &Path,
    args: &CheckArgs,
    limits: &ArchLimits,
    config: Option<&LaunchConfig>,
) -> FileReport {
    let fail = |error: String| FileReport::failed(path, error);
    let source = match CudaSource::from_file(path) {
        Ok(s) => s,
        Err(e) => return fail(e.to_string()),
    };
    if is_ptx(path) {
        return check_ptx(path, &source, args, limits, config);
    }
    let opts = CompileOptions {
        include_dirs: args.include.clone(),
        defines: parse_defines(&args.define),
        max_registers: args.max_registers,
        ptxas_verbose: true,
        ..CompileOptions::new(args.arch)
    };
    let compiled = match nvrtc::compile(&source, &opts) {
        Ok(c) => c,
        Err(e) => return fail(e.to_string()),
    };
    let info = match read_cubin(&compiled.cubin) {
        Ok(i) => i,
        Err(e) => return fail(format!("cannot read the CUBIN NVRTC produced: {e}")),
    };
    // An empty file is more likely a wrong path than a host-only file: it stays an error.
    if info.kernels.is_empty() && !source.text.trim().is_empty() {
        let note = match nvrtc::device_code(&source, &args.include) {
            nvrtc::DeviceCode::None => Some(crate::instrument::HOST_ONLY),
            nvrtc::DeviceCode::FunctionsOnly => Some(DEVICE_FUNCTIONS_ONLY),
            _ => None,
        };
        if let Some(note) = note {
            return FileReport {
                path: path.to_path_buf(),
                kernels: Vec::new(),
                error: None,
                note: Some(note.to_string()),
            };
        }
    }
    if info.kernels.is_empty() {
        return fail(
            "no kernels: the file defines no `__global__` function that NVRTC emitted \
             (templates need an explicit instantiation to be checked)"
                .to_string(),
        );
    }
    // The CUBIN does not record spills; NVRTC's ptxas report does (see cubin::parse_ptxas_info).
    FileReport {
        path: path.to_path_buf(),
        kernels: kernel_reports(
            info.kernels,
            &compiled.log,
            Shared::FromCubin,
            limits,
            config,
        ),
        error: None,
        note: None,
    }
}

/// A PTX module: assembled for the target by nvJitLink (the ptxas a driver's JIT or NVRTC
/// runs), then reported like a compiled source.
fn check_ptx(
    path: &Path,
    source: &CudaSource,
    args: &CheckArgs,
    limits: &ArchLimits,
    config: Option<&LaunchConfig>,
) -> FileReport {
    let fail = |error: String| FileReport::failed(path, error);
    let assembled = match nvrtc::assemble_ptx(&source.text, args.arch, &source.name) {
        Ok(a) => a,
        Err(e) => return fail(e.to_string()),
    };
    let info = match read_cubin(&assembled.cubin) {
        Ok(i) => i,
        Err(e) => return fail(format!("cannot read the CUBIN ptxas produced: {e}")),
    };
    // A linked image lists the module's non-inlined device functions (`__cuda_sm20_div_u64`)
    // beside its kernels: only the PTX's `.entry`s are kernels.
    let mut kernels = info.kernels;
    if let Ok(entries) = cudacheck_core::ptx_entries(&source.text) {
        kernels.retain(|k| entries.iter().any(|e| e.symbol == k.symbol));
    }
    if kernels.is_empty() {
        return fail("no kernels: the PTX module has no `.entry`".to_string());
    }
    FileReport {
        path: path.to_path_buf(),
        kernels: kernel_reports(
            kernels,
            &assembled.info_log,
            Shared::FromPtxas,
            limits,
            config,
        ),
        error: None,
        note: None,
    }
}

/// Where a kernel's static shared memory comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shared {
    /// The CUBIN's shared section, less what it marks as reserved (NVRTC's CUBINs).
    FromCubin,
    /// ptxas's report: nvJitLink's sm_90 CUBIN counts the 1 KiB the driver reserves per block
    /// in the kernel's shared section without marking it.
    FromPtxas,
}

/// Every kernel of a CUBIN, with what the CUBIN does not record taken from ptxas's report.
fn kernel_reports(
    kernels: Vec<KernelResources>,
    ptxas_log: &str,
    shared: Shared,
    limits: &ArchLimits,
    config: Option<&LaunchConfig>,
) -> Vec<KernelReport> {
    let ptxas = parse_ptxas_info(ptxas_log).unwrap_or_default();
    kernels
        .into_iter()
        .map(|mut res| {
            if let Some(p) = ptxas.iter().find(|p| p.name == res.symbol) {
                res.spill_store_bytes = p.spill_store_bytes;
                res.spill_load_bytes = p.spill_load_bytes;
                if shared == Shared::FromPtxas {
                    res.static_shared_bytes = p.static_shared_bytes;
                }
            }
            kernel_report(res, limits, config)
        })
        .collect()
}

fn kernel_report(
    res: KernelResources,
    limits: &ArchLimits,
    config: Option<&LaunchConfig>,
) -> KernelReport {
    let max_threads = kernel_max_threads(&res, limits);
    let by_regs = max_threads_for_registers(res.registers, limits);
    let (occupancy_block, dynamic) = match config {
        Some(c) => (c.block, c.dynamic_shared_bytes),
        None => (Dim3::x(max_threads), 0),
    };
    let block_threads = u32::try_from(occupancy_block.volume()).unwrap_or(u32::MAX);
    let occ = occupancy(&res, block_threads, dynamic, limits);
    let violations = match config {
        Some(c) => match validate(&res, c, limits, &ValidateOptions::default()) {
            Ok(_) => Vec::new(),
            Err(vs) => vs.iter().map(|v| v.to_string()).collect(),
        },
        None => Vec::new(),
    };
    KernelReport {
        name: demangle(&res.symbol),
        resources: res,
        max_threads_per_block: max_threads,
        max_threads_by_registers: by_regs,
        occupancy_block,
        occupancy: occ,
        violations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_template_kernels_to_name_expressions() {
        assert_eq!(demangle("_Z5scaleIfEvPT_PKS0_fi"), "scale<float>");
        assert_eq!(demangle("saxpy"), "saxpy");
    }
}
