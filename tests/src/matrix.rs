//! The NVRTC matrix: every NVRTC release the NVRTC tier compiles with, each with the CUDA
//! headers of its own release. `scripts/setup-cuda.sh` installs them and exports
//! [`MATRIX_VAR`] as `LABEL=LIB` words (`12.4=/…/libnvrtc.so.12 13.5=/…/libnvrtc.so.13`).
//!
//! NVRTC is found once per process, so a matrix test runs a test of its own binary again in
//! a child process per release, with `CUDACHECK_NVRTC` pointing at that release's library.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cudacheck::nvrtc::headers::{COMPAT_HEADERS, HOST_ONLY_HEADERS, IMPLICIT_HEADER_NAME};
use cudacheck::nvrtc::{Diagnostic, Severity};

/// The variable listing the matrix.
pub const MATRIX_VAR: &str = "CUDACHECK_NVRTC_MATRIX";

/// The variable a matrix child runs with: the label of the release it must have loaded.
pub const LABEL_VAR: &str = "CUDACHECK_MATRIX_LABEL";

/// One release of the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// `major.minor`, as `nvrtcVersion` reports it and `cudacheck doctor` prints it.
    pub label: String,
    pub lib: PathBuf,
}

/// Parses [`MATRIX_VAR`]'s value.
///
/// # Panics
///
/// On a word that is not `LABEL=PATH`.
pub fn parse_matrix(value: &str) -> Vec<Release> {
    value
        .split_whitespace()
        .map(|word| {
            let (label, lib) = word
                .split_once('=')
                .unwrap_or_else(|| panic!("{MATRIX_VAR}: `{word}` is not LABEL=LIBRARY"));
            Release {
                label: label.to_string(),
                lib: PathBuf::from(lib),
            }
        })
        .collect()
}

/// Every release of the matrix, or `None` after printing why the matrix is skipped.
///
/// # Panics
///
/// When [`MATRIX_VAR`] is unset although `CUDACHECK_REQUIRE_NVRTC=1` (CI sets both through
/// `scripts/setup-cuda.sh`), or names a library that does not exist: a missing release is a
/// failure, never a skip.
pub fn releases_or_skip() -> Option<Vec<Release>> {
    let Some(value) = std::env::var_os(MATRIX_VAR) else {
        if std::env::var("CUDACHECK_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("{MATRIX_VAR} is not set; scripts/setup-cuda.sh exports it");
        }
        println!("skipped (NVRTC tier): {MATRIX_VAR} is not set (see scripts/setup-cuda.sh)");
        return None;
    };
    let releases = parse_matrix(&value.to_string_lossy());
    assert!(!releases.is_empty(), "{MATRIX_VAR} lists no release");
    let missing: Vec<String> = releases
        .iter()
        .filter(|r| !r.lib.is_file())
        .map(|r| format!("{}={}", r.label, r.lib.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "{MATRIX_VAR} lists libraries that do not exist (run scripts/setup-cuda.sh): {missing:?}"
    );
    Some(releases)
}

/// Whether `release` is the NVRTC this process loaded.
fn is_own(release: &Release) -> bool {
    let own = cudacheck::nvrtc::nvrtc()
        .ok()
        .and_then(|n| n.path.canonicalize().ok());
    own.is_some() && release.lib.canonicalize().ok() == own
}

/// What one child run gave.
#[derive(Debug)]
pub struct ChildRun {
    pub passed: bool,
    pub output: String,
    pub took: Duration,
}

/// Runs this test binary again with `args` (a filter and harness options) under `release`'s
/// NVRTC, with the module cache off (every compile is NVRTC's own) and [`LABEL_VAR`] set.
///
/// # Panics
///
/// When the test binary cannot be started.
pub fn run_under(release: &Release, args: &[&str]) -> ChildRun {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let start = Instant::now();
    let out = std::process::Command::new(exe)
        .args(args)
        .env("CUDACHECK_NVRTC", &release.lib)
        .env("CUDACHECK_CACHE", "0")
        .env(LABEL_VAR, &release.label)
        .output()
        .unwrap_or_else(|e| panic!("could not run the test binary: {e}"));
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    ChildRun {
        passed: out.status.success(),
        output,
        took: start.elapsed(),
    }
}

/// How many tests a test binary's output says passed (the sum over its `test result:` lines).
pub fn passed_count(output: &str) -> usize {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("test result: "))
        .filter_map(|l| {
            l.split(" passed;")
                .next()?
                .rsplit(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

/// How many tests this test binary holds that `args` (a filter and harness options) select.
///
/// # Panics
///
/// When the test binary cannot be started.
pub fn listed_count(args: &[&str]) -> usize {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let out = std::process::Command::new(exe)
        .args(args)
        .args(["--list", "--format", "terse"])
        .output()
        .unwrap_or_else(|e| panic!("could not run the test binary: {e}"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.ends_with(": test"))
        .count()
}

/// Runs this test binary again under every release of the matrix but this process's own,
/// whose tests ran in this process already; see [`run_each`].
///
/// # Panics
///
/// As [`run_each`] does.
pub fn under_every_other_release(args: &[&str]) {
    let Some(releases) = releases_or_skip() else {
        return;
    };
    let (own, others): (Vec<Release>, Vec<Release>) = releases.into_iter().partition(is_own);
    for r in own {
        println!(
            "NVRTC {}: this process's own, covered by its tests",
            r.label
        );
    }
    run_each(&others, args);
}

/// Runs this test binary again under every release of the matrix, this process's own
/// included (in a child too, so that nothing comes from the module cache); see [`run_each`].
///
/// # Panics
///
/// As [`run_each`] does.
pub fn under_every_release(args: &[&str]) {
    if let Some(releases) = releases_or_skip() {
        run_each(&releases, args);
    }
}

/// Runs this test binary again under each of `releases` ([`run_under`] with `args`), printing
/// each one's time, and asserts that each passed every test `args` selects (at least one, so
/// a filter that matches nothing fails). Every release runs before the assertion: one
/// release's failure does not hide another's.
///
/// # Panics
///
/// When a release failed, or `args` select no test, or as [`releases_or_skip`] does.
fn run_each(releases: &[Release], args: &[&str]) {
    let selected = listed_count(args);
    assert!(selected > 0, "{args:?} selects no test");
    let mut failed = Vec::new();
    for r in releases {
        let run = run_under(r, args);
        let passed = passed_count(&run.output);
        println!(
            "NVRTC {} ({}): {passed} of {selected} passed in {:.1} s",
            r.label,
            r.lib.display(),
            run.took.as_secs_f64()
        );
        if !run.passed || passed != selected {
            failed.push(format!(
                "NVRTC {}: {passed} of {selected} passed:\n{}",
                r.label, run.output
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Whether `file`, as a diagnostic names it, is one of the headers cudacheck hands NVRTC in
/// memory (their names carry no directory; a project's own `stdint.h` has its path).
fn is_ours(file: &str) -> bool {
    file == IMPLICIT_HEADER_NAME
        || COMPAT_HEADERS.iter().any(|(name, _)| *name == file)
        || HOST_ONLY_HEADERS.contains(&file)
}

/// The warnings cudacheck's own headers caused: those inside one of them, redefinitions of a
/// macro one of them defined first ("incompatible redefinition of macro `X` (declared at line
/// N of stdint.h)", reported in the header that came second), and those naming what cudacheck
/// appends to a file (`__cudacheck_launched_…`, reported in the user's file).
pub fn warnings_from_our_headers(diagnostics: &[Diagnostic]) -> Vec<&Diagnostic> {
    diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .filter(|d| {
            is_ours(&d.file)
                || d.message.contains("__cudacheck")
                || d.message
                    .split(" of ")
                    .skip(1)
                    .any(|rest| is_ours(rest.trim_end_matches(')')))
        })
        .collect()
}

/// Whether every one of `dirs` lies under `root` (both as they are on disk).
pub fn all_under(dirs: &[PathBuf], root: &Path) -> bool {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    dirs.iter().all(|d| {
        d.canonicalize()
            .unwrap_or_else(|_| d.clone())
            .starts_with(&root)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_variable_parses_as_setup_cuda_writes_it() {
        let m = parse_matrix("12.4=/a/libnvrtc.so.12  13.5=/b/libnvrtc.so.13\n");
        assert_eq!(
            m,
            [
                Release {
                    label: "12.4".into(),
                    lib: "/a/libnvrtc.so.12".into()
                },
                Release {
                    label: "13.5".into(),
                    lib: "/b/libnvrtc.so.13".into()
                }
            ]
        );
    }

    #[test]
    fn passed_counts_sum_the_result_lines() {
        let out = "running 2 tests\ntest a ... ok\n\ntest result: ok. 2 passed; 0 failed; \
                   1 ignored; 0 measured; 5 filtered out\n\ntest result: ok. 0 passed; 0 \
                   failed; 0 ignored\n";
        assert_eq!(passed_count(out), 2);
        assert_eq!(passed_count("test result: FAILED. 3 passed; 1 failed;"), 3);
        assert_eq!(passed_count("no tests ran"), 0);
    }

    fn warning(file: &str, message: &str) -> Diagnostic {
        let mut d = Diagnostic::without_location(file, Severity::Warning, message);
        d.line = Some(1);
        d
    }

    #[test]
    fn warnings_in_our_headers_or_redefining_their_macros_are_ours() {
        let diags = [
            warning("stdint.h", "incompatible redefinition of macro \"INT8_C\""),
            warning(
                "/cuda/include/cccl/cuda/std/cmath",
                "incompatible redefinition of macro \"INFINITY\" (declared at line 60 of math.h)",
            ),
            warning(
                "/proj/stdint.h",
                "variable \"x\" was declared but never referenced",
            ),
            warning(
                "/proj/k.cu",
                "function \"__cudacheck_launched_1f_0\" was declared but never referenced",
            ),
            warning(
                "/proj/k.cu",
                "incompatible redefinition of macro \"N\" (declared at line 2 of /proj/a.h)",
            ),
        ];
        let ours: Vec<&str> = warnings_from_our_headers(&diags)
            .iter()
            .map(|d| d.file.as_str())
            .collect();
        assert_eq!(
            ours,
            [
                "stdint.h",
                "/cuda/include/cccl/cuda/std/cmath",
                "/proj/k.cu"
            ]
        );
    }
}
