//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use cudacheck_core::{Arch, Dim3};

/// Check CUDA kernels against a GPU architecture's limits, with no GPU present.
#[derive(Debug, Parser)]
#[command(name = "cudacheck", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compile kernels with NVRTC, report their resources and check a launch configuration.
    Check(CheckArgs),
    /// Print where NVRTC, the CUDA headers and the driver were found.
    Doctor,
    /// Build kernels bounds-checked (NVRTC, the PTX rewrite, ptxas) and report per kernel what
    /// is checked and what is not, with file:line and why.
    Instrument(InstrumentArgs),
    /// Show the module cache (where it is, its size and entries) or clear it.
    Cache(CacheArgs),
    /// Record the compiled resources of every `#[checked_kernel]` with an `arch` into the
    /// crate's `.cudacheck/` directory (commit it), for builds where NVRTC is absent.
    Prepare(PrepareArgs),
    /// Run a program (and its children) with every CUDA kernel launch validated and, where the
    /// kernel's module carries PTX, bounds-checked: `cudacheck run -- cargo test`.
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Check shared-memory races and barriers too.
    #[arg(long)]
    pub races: bool,
    /// Check reads of global memory that nothing wrote since it was allocated (no kernel,
    /// copy or memset): each is reported with the allocation, offset, thread and line.
    #[arg(long)]
    pub init: bool,
    /// Only validate launches (no bounds-checked builds).
    #[arg(long)]
    pub no_bounds: bool,
    /// Append one JSON line per finding to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Exit with N when anything was found (else the program's own status).
    #[arg(long, value_name = "N")]
    pub error_exitcode: Option<u8>,
    /// After the first finding: go on (the bad access was suppressed), or stop the process.
    #[arg(long, value_enum, default_value = "continue")]
    pub on_fault: OnFaultArg,
    /// Host call stacks in reports: `first` captures every allocation's and the first launch's
    /// of each kernel with each block and shared memory size; `all` every launch's (a few
    /// microseconds each); `off` none.
    #[arg(long, value_enum, default_value = "first")]
    pub stacks: StacksArg,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StacksArg {
    First,
    All,
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnFaultArg {
    Continue,
    Abort,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Compare with the checked-in `.cudacheck/` directories instead of writing them; exit 1
    /// when they differ (for CI).
    #[arg(long)]
    pub check: bool,
    /// With `--check`: compare with this directory instead of the crates' `.cudacheck/`.
    #[arg(long, requires = "check", value_name = "DIR")]
    pub compare_with: Option<std::path::PathBuf>,
    /// Arguments for `cargo check` (`-p my-crate`, `--manifest-path ..`, `--features ..`);
    /// `--all-targets` is added.
    #[arg(last = true)]
    pub cargo_args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: Option<CacheAction>,
    /// Machine-readable output (same as `cache info --json`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Where the cache is, whether it is on, its entries and size (the default).
    Info {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Delete every entry.
    Clear,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// `.cu` or `.ptx` files, or directories searched (recursively) for them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Target architecture: sm_70 ... sm_121 (also `90`, `9.0`, `compute_90`).
    #[arg(long, default_value = "sm_90", value_parser = parse_arch)]
    pub arch: Arch,
    /// Block size to check, `X[,Y[,Z]]`.
    #[arg(long, value_parser = parse_dim)]
    pub block: Option<Dim3>,
    /// Grid size to check, `X[,Y[,Z]]` (default 1 when --block is given).
    #[arg(long, value_parser = parse_dim)]
    pub grid: Option<Dim3>,
    /// Dynamic shared memory per block, bytes.
    #[arg(long = "dynamic-smem", default_value_t = 0)]
    pub dynamic_smem: u32,
    /// Extra include directory (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Preprocessor definition `NAME` or `NAME=VALUE` (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// Cap registers per thread (NVRTC --maxrregcount).
    #[arg(long)]
    pub max_registers: Option<u32>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Files compiled at once (default: one per core).
    #[arg(short = 'j', long, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
}

#[derive(Debug, Args)]
pub struct InstrumentArgs {
    /// `.cu` or `.ptx` files, or directories searched (recursively) for them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Target architecture: sm_75 ... sm_121 (also `90`, `9.0`, `compute_90`).
    #[arg(long, default_value = "sm_90", value_parser = parse_arch)]
    pub arch: Arch,
    /// Extra include directory (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Preprocessor definition `NAME` or `NAME=VALUE` (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// Print the coverage report (the default output; kept for scripts that pass it).
    #[arg(long)]
    pub report: bool,
    /// Machine-readable coverage report.
    #[arg(long)]
    pub json: bool,
    /// Print the bounds-checked PTX instead of the report.
    #[arg(long, conflicts_with = "json")]
    pub ptx: bool,
    /// Build for launches with this block, `X[,Y[,Z]]`, as a launch with that block does:
    /// accesses the block's size proves in bounds get no check.
    #[arg(long, value_parser = parse_dim)]
    pub block: Option<Dim3>,
    /// Build for launches with this many bytes of dynamic shared memory (`extern __shared__`
    /// arrays then have a known length), as such a launch does.
    #[arg(long = "dynamic-smem")]
    pub dynamic_smem: Option<u32>,
    /// Also build the race-checked kernels (shared-memory races and barrier errors, as a
    /// launch with races on runs them) and report what is race-checked and what is not.
    #[arg(long)]
    pub races: bool,
    /// Also build the init-checked kernels (reads of global memory nothing wrote, as
    /// `cudacheck run --init` runs them) and report what is checked and what is not.
    #[arg(long)]
    pub init: bool,
}

/// `-D NAME` / `-D NAME=VALUE` as NVRTC options take them.
pub fn parse_defines(defines: &[String]) -> Vec<(String, Option<String>)> {
    defines
        .iter()
        .map(|d| match d.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (d.clone(), None),
        })
        .collect()
}

fn parse_arch(s: &str) -> Result<Arch, String> {
    s.parse::<Arch>().map_err(|e| e.to_string())
}

/// `256`, `16,16`, `32,8,1` (also with `x` or spaces as separators). Zero and overflowing
/// products are accepted here on purpose: they are limit violations the checker reports
/// with its full explanation, not usage errors.
pub fn parse_dim(s: &str) -> Result<Dim3, String> {
    let parts: Vec<&str> = s
        .split(|c: char| c == ',' || c == 'x' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!(
            "`{s}` is not a dimension: write X, X,Y or X,Y,Z (e.g. 256 or 16,16)"
        ));
    }
    let mut v = [1u32; 3];
    for (slot, p) in v.iter_mut().zip(&parts) {
        *slot = p.parse().map_err(|_| {
            format!(
                "`{p}` in `{s}` is not a whole number from 0 to {}",
                u32::MAX
            )
        })?;
    }
    Ok(Dim3::from(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_parse_in_every_spelling() {
        assert_eq!(parse_dim("256").unwrap(), Dim3::new(256, 1, 1));
        assert_eq!(parse_dim("16,16").unwrap(), Dim3::new(16, 16, 1));
        assert_eq!(parse_dim("32x8x2").unwrap(), Dim3::new(32, 8, 2));
        assert_eq!(parse_dim("0").unwrap(), Dim3::new(0, 1, 1));
    }

    #[test]
    fn bad_dims_say_how_to_write_them() {
        assert!(parse_dim("").unwrap_err().contains("X,Y,Z"));
        assert!(parse_dim("1,2,3,4").unwrap_err().contains("X,Y,Z"));
        assert!(parse_dim("-1").unwrap_err().contains("whole number"));
        assert!(parse_dim("99999999999")
            .unwrap_err()
            .contains("whole number"));
    }
}
