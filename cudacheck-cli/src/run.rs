//! `cudacheck run [OPTIONS] -- COMMAND [ARGS]`: runs the command with the interposer preloaded
//! into it and every process it starts, then prints what each process that used CUDA did and
//! found.
//!
//! The interposer travels inside this binary (`build.rs`) and is written once, by content, to
//! the user's cache directory, from where `LD_PRELOAD` names it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use cudacheck_run::protocol::{self, OnFault};

use crate::args::{OnFaultArg, RunArgs, StacksArg};

/// The interposer, built by `build.rs`.
static PRELOAD: &[u8] = include_bytes!(env!("CUDACHECK_PRELOAD_SO_PATH"));

/// `CUDACHECK_RUN_PRELOAD=FILE`: preload this shared object instead of the one carried inside
/// (for trying a build of the interposer without rebuilding the CLI).
const ENV_PRELOAD: &str = "CUDACHECK_RUN_PRELOAD";

pub fn run(args: &RunArgs) -> ExitCode {
    if !cfg!(target_os = "linux") {
        eprintln!("cudacheck run: preloading the interposer needs Linux");
        return ExitCode::from(2);
    }
    let so = match std::env::var_os(ENV_PRELOAD) {
        Some(p) => PathBuf::from(p),
        None => match installed_preload() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("cudacheck run: the interposer could not be written out: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let summaries = match tempfile::Builder::new().prefix("cudacheck-run-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cudacheck run: no temporary directory for the processes' summaries: {e}");
            return ExitCode::from(2);
        }
    };
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .env(
            "LD_PRELOAD",
            preload_list(&so, std::env::var_os("LD_PRELOAD")),
        )
        .env(protocol::ENV_SUMMARY_DIR, summaries.path())
        .env(protocol::ENV_RACES, flag(args.races))
        .env(protocol::ENV_INIT, flag(args.init))
        .env(protocol::ENV_BOUNDS, flag(!args.no_bounds))
        .env(
            protocol::ENV_STACKS,
            match args.stacks {
                StacksArg::First => "first",
                StacksArg::All => "all",
                StacksArg::Off => "off",
            },
        )
        .env(protocol::ENV_ON_FAULT, on_fault(args.on_fault).as_str())
        .env(
            protocol::ENV_ABORT_STATUS,
            args.error_exitcode.unwrap_or(1).to_string(),
        );
    match &args.json {
        Some(path) => {
            let path = absolute(path);
            // A new run's findings, not an older run's: the file starts empty.
            if let Err(e) = std::fs::write(&path, b"") {
                eprintln!("cudacheck run: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
            cmd.env(protocol::ENV_JSON, path);
        }
        None => {
            cmd.env_remove(protocol::ENV_JSON);
        }
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "cudacheck run: could not start `{}`: {e}",
                Path::new(program).display()
            );
            return ExitCode::from(127);
        }
    };
    let processes = protocol::read_summaries(summaries.path());
    for p in &processes {
        eprint!("{}", p.render());
    }
    let findings: u64 = processes.iter().map(|p| p.findings).sum();
    if processes.is_empty() {
        eprintln!("cudacheck run: no process of the command used CUDA");
    } else if processes.len() > 1 {
        eprintln!(
            "cudacheck run: {} processes used CUDA; {findings} finding(s) in all",
            processes.len()
        );
    }
    match (findings > 0, args.error_exitcode) {
        (true, Some(n)) => ExitCode::from(n),
        _ => exit_code_of(status),
    }
}

fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

fn on_fault(a: OnFaultArg) -> OnFault {
    match a {
        OnFaultArg::Continue => OnFault::Continue,
        OnFaultArg::Abort => OnFault::Abort,
    }
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Ours first, then whatever the user preloads already.
fn preload_list(so: &Path, existing: Option<OsString>) -> OsString {
    let mut list = OsString::from(so.as_os_str());
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        list.push(":");
        list.push(e);
    }
    list
}

/// The program's status, or 128 plus the signal that ended it (as a shell reports it).
fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        _ => ExitCode::from(1),
    }
}

/// The interposer written out under the cache directory, named by its content, so that every
/// run of this binary reuses one file and a different build never overwrites one in use.
fn installed_preload() -> std::io::Result<PathBuf> {
    let dir = dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("cudacheck")
        .join("run");
    std::fs::create_dir_all(&dir)?;
    let hash = blake3::hash(PRELOAD).to_hex();
    let path = dir.join(format!("libcudacheck_run-{}.so", &hash[..16]));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == PRELOAD.len() as u64) {
        return Ok(path);
    }
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, PRELOAD)?;
    // Readable by whoever runs the command (a temporary file is the owner's alone).
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_is_preloaded_first_and_the_users_kept() {
        let l = preload_list(Path::new("/c/ours.so"), Some("/x/theirs.so".into()));
        assert_eq!(l, OsString::from("/c/ours.so:/x/theirs.so"));
        let l = preload_list(Path::new("/c/ours.so"), Some("".into()));
        assert_eq!(l, OsString::from("/c/ours.so"));
    }

    #[test]
    fn the_carried_interposer_is_a_shared_object() {
        assert!(PRELOAD.len() > 1024);
        assert_eq!(&PRELOAD[..4], b"\x7fELF");
    }
}
