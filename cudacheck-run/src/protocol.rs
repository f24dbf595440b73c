//! What the launcher (`cudacheck run`) and the interposer it preloads say to each other: the
//! environment variables that carry the options into every process of the command, and the
//! records the interposer writes back (findings as JSON lines, one summary per process). One
//! definition, used on both sides, so neither can drift from the other.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Check shared-memory races and barriers too (`1`), beside bounds.
pub const ENV_RACES: &str = "CUDACHECK_RUN_RACES";
/// Check reads of global memory nothing wrote too (`1`), beside bounds.
pub const ENV_INIT: &str = "CUDACHECK_RUN_INIT";
/// With `--init`: `always` makes every checked launch look up global memory's shadow, even one
/// that can reach only memory known written (what that lookup costs, for measuring it); unset
/// or anything else, only launches that need it do.
pub const ENV_INIT_LOOKUPS: &str = "CUDACHECK_RUN_INIT_LOOKUPS";
/// Bounds-check kernels that carry PTX (`1`, the default) or only validate launches (`0`).
pub const ENV_BOUNDS: &str = "CUDACHECK_RUN_BOUNDS";
/// Append one JSON line per finding to this file.
pub const ENV_JSON: &str = "CUDACHECK_RUN_JSON";
/// `continue` (the default) or `abort`: what a process does after its first finding.
pub const ENV_ON_FAULT: &str = "CUDACHECK_RUN_ON_FAULT";
/// The exit status a process aborted by `abort` ends with.
pub const ENV_ABORT_STATUS: &str = "CUDACHECK_RUN_ABORT_STATUS";
/// A directory where each process that used CUDA leaves its summary (`<pid>.json`); without
/// it, each such process prints its summary on stderr at exit.
pub const ENV_SUMMARY_DIR: &str = "CUDACHECK_RUN_SUMMARY_DIR";
/// Which host call stacks to capture: `first` (the default: of the first launch of each
/// kernel and shape, and of every allocation), `all` (of every launch too), `off`.
pub const ENV_STACKS: &str = "CUDACHECK_RUN_STACKS";

/// Every variable above, for `cudacheck run --help` and for tests that clear them.
pub const ALL_ENV: &[&str] = &[
    ENV_RACES,
    ENV_INIT,
    ENV_INIT_LOOKUPS,
    ENV_BOUNDS,
    ENV_JSON,
    ENV_ON_FAULT,
    ENV_ABORT_STATUS,
    ENV_SUMMARY_DIR,
    ENV_STACKS,
];

/// What a process does after a finding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFault {
    /// Report it and go on: the bad access was suppressed, the context is usable.
    #[default]
    Continue,
    /// Report it, print the summary and exit with [`ENV_ABORT_STATUS`] (default 1).
    Abort,
}

impl OnFault {
    /// The value of [`ENV_ON_FAULT`]; anything unknown is `continue`.
    pub fn from_env_value(v: Option<&str>) -> Self {
        match v {
            Some("abort") => OnFault::Abort,
            _ => OnFault::Continue,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OnFault::Continue => "continue",
            OnFault::Abort => "abort",
        }
    }
}

/// What kind of thing was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    OutOfBounds,
    DeviceAssert,
    Misaligned,
    LaunchError,
    Race,
    Barrier,
    /// A read of global memory that nothing wrote since it was allocated (`--init`).
    Uninitialized,
}

/// The allocation a pointer argument points into, as the interposer saw it made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocationInfo {
    /// Its first byte, as `0x...`.
    pub base: String,
    pub bytes: u64,
    /// The driver entry point that made it (`cuMemAlloc_v2`, `cuMemAllocAsync`...).
    pub api: String,
    /// The host call stack of that call, innermost first, when captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// One finding, one JSON line of [`ENV_JSON`]'s file. Fields that do not apply to a kind are
/// `null` (or absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub pid: u32,
    /// The kernel as C++ names it (`scale<float>`), or its symbol.
    pub kernel: String,
    pub symbol: String,
    /// The parameter accessed through: its PTX name, or `argument N`.
    pub param: Option<String>,
    pub param_index: Option<u32>,
    /// `read`, `write`, `atomic`.
    pub access: Option<String>,
    /// The address the access used, relative to the pointer argument, in bytes.
    pub byte_offset: Option<i64>,
    pub access_bytes: Option<u32>,
    /// `byte_offset / access_bytes`: the index in elements of the access's width.
    pub index: Option<i64>,
    pub allocation: Option<AllocationInfo>,
    pub thread: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub grid_dim: [u32; 3],
    pub block_dim: [u32; 3],
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// How many accesses of the launch failed (the first is described).
    pub count: Option<u32>,
    /// For a launch error: each rule the configuration breaks, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
    /// The host call stack of the launch, innermost first, when captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch_stack: Vec<String>,
    /// The report as a person reads it on stderr.
    pub message: String,
}

/// How one kernel was handled in a process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSummary {
    pub kernel: String,
    pub launches: u64,
    /// Launches that ran the bounds-checked build.
    pub checked_launches: u64,
    /// Why some launches ran unchecked (the first reason seen), if any did.
    pub unchecked_because: Option<String>,
    pub findings: u64,
}

/// What one process did under the interposer: written at exit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSummary {
    pub pid: u32,
    /// The program (`argv[0]`).
    pub program: String,
    pub kernels: Vec<KernelSummary>,
    pub launches: u64,
    pub checked_launches: u64,
    pub findings: u64,
    /// With `--init`: the checked launches that looked up the shadow of global memory; the
    /// others could reach only memory known written, and checked shared memory alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_global_launches: Option<u64>,
    /// Allocations seen (every family), for the record.
    pub allocations: u64,
    /// Seconds spent making checked builds (instrumenting and assembling, or reading them from
    /// the module cache), loading them (the driver's JIT), and reading fault records.
    #[serde(default)]
    pub seconds_building: f64,
    #[serde(default)]
    pub seconds_loading: f64,
    #[serde(default)]
    pub seconds_reading: f64,
    /// Things the interposer could not do and fell back from, once each, in words.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl ProcessSummary {
    /// The summary for a person: one line, then one line per kernel.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let checked = self
            .kernels
            .iter()
            .filter(|k| k.checked_launches > 0)
            .count();
        let mut s = format!(
            "cudacheck run: {} (pid {}): {} kernel(s), {} launch(es), {} bounds-checked; {} kernel(s) \
             checked, {} only validated; {} finding(s)\n",
            self.program,
            self.pid,
            self.kernels.len(),
            self.launches,
            self.checked_launches,
            checked,
            self.kernels.len() - checked,
            self.findings
        );
        for k in &self.kernels {
            let how = match (&k.unchecked_because, k.checked_launches) {
                (None, _) => "bounds-checked".to_string(),
                (Some(why), 0) => format!("validated only: {why}"),
                (Some(why), n) => format!("bounds-checked {n} time(s); otherwise {why}"),
            };
            let _ = writeln!(
                s,
                "  {}: {} launch(es), {how}{}",
                k.kernel,
                k.launches,
                if k.findings > 0 {
                    format!(", {} finding(s)", k.findings)
                } else {
                    String::new()
                }
            );
        }
        if let Some(n) = self.init_global_launches {
            let _ = writeln!(
                s,
                "  init: {n} of {} checked launch(es) looked up global memory's shadow; the \
                 others reached only memory known written",
                self.checked_launches
            );
        }
        if self.checked_launches > 0 {
            let _ = writeln!(
                s,
                "  time: {:.2} s making checked builds, {:.2} s loading them, {:.2} s reading \
                 fault records",
                self.seconds_building, self.seconds_loading, self.seconds_reading
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        s
    }
}

/// The summary file of process `pid` under `dir`.
pub fn summary_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.json"))
}

/// Every summary left in `dir`, by pid.
pub fn read_summaries(dir: &Path) -> Vec<ProcessSummary> {
    let mut out: Vec<ProcessSummary> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect();
    out.sort_by_key(|s| s.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_round_trips_and_reads_back_from_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let s = ProcessSummary {
            pid: 42,
            program: "prog".into(),
            kernels: vec![KernelSummary {
                kernel: "saxpy".into(),
                launches: 3,
                checked_launches: 3,
                unchecked_because: None,
                findings: 1,
            }],
            launches: 3,
            checked_launches: 3,
            findings: 1,
            init_global_launches: Some(1),
            allocations: 2,
            seconds_building: 0.5,
            seconds_loading: 0.25,
            seconds_reading: 0.0,
            notes: vec![],
        };
        std::fs::write(
            summary_path(dir.path(), 42),
            serde_json::to_vec(&s).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.path().join("junk.json"), b"{").unwrap();
        assert_eq!(read_summaries(dir.path()), vec![s.clone()]);
        let text = s.render();
        assert!(text.starts_with("cudacheck run: prog (pid 42): 1 kernel(s), 3 launch(es)"));
        assert!(text.contains("saxpy: 3 launch(es), bounds-checked, 1 finding(s)"));
        assert!(text.contains("init: 1 of 3 checked launch(es) looked up global memory's shadow"));
        // Without `--init` the field is left out, and a summary without it reads back.
        let off = ProcessSummary {
            init_global_launches: None,
            ..s
        };
        let json = serde_json::to_string(&off).unwrap();
        assert!(!json.contains("init_global"));
        assert_eq!(serde_json::from_str::<ProcessSummary>(&json).unwrap(), off);
        assert!(!off.render().contains("init:"));
    }

    #[test]
    fn on_fault_reads_its_variable() {
        assert_eq!(OnFault::from_env_value(Some("abort")), OnFault::Abort);
        assert_eq!(OnFault::from_env_value(Some("x")), OnFault::Continue);
        assert_eq!(OnFault::from_env_value(None), OnFault::Continue);
    }
}
