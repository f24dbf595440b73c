//! `cudacheck`: check CUDA kernels against a target architecture, with no GPU.
//!
//! ```text
//! cudacheck check kernels/ --arch sm_90 --block 256
//! cudacheck doctor
//! cudacheck instrument --json kernels/
//! cudacheck cache info
//! cudacheck prepare -- -p my-crate
//! cudacheck run -- cargo test
//! ```
//!
//! Exit status: 0 when every kernel is clean, 1 when a launch configuration violates a limit,
//! 2 on compile errors or bad usage; `run` exits with the program's status (or
//! `--error-exitcode` when something was found).

mod args;
mod cache;
mod check;
mod collect;
mod instrument;
mod prepare;
mod render;
mod run;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Doctor => {
            println!("{}", cudacheck::nvrtc::doctor_report());
            ExitCode::SUCCESS
        }
        Command::Instrument(args) => instrument::run(&args),
        Command::Cache(args) => cache::run(&args),
        Command::Prepare(args) => prepare::run(&args),
        Command::Run(args) => run::run(&args),
    }
}
