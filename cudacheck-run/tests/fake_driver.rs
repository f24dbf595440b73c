//! The interposer's plumbing, offline: a fake `libcuda.so.1` (`fake_driver/fake_cuda.c`, an
//! H100 whose device memory is host memory) under a C program that uses the driver API
//! (`fake_driver/program.c`), with the interposer preloaded as `cudacheck run` preloads it.
//!
//! Each way a program reaches the driver has its tests: linked (`-lcuda`), `dlopen` + `dlsym`,
//! and `cuGetProcAddress` (the CUDA runtime's way). For each:
//!
//! 1. without the interposer, the program and the fake work and nothing is reported
//!    (`fake_driver_alone_*`, pure tier: a C compiler is all they need);
//! 2. with it, the good launch goes to the bounds-checked build with the hidden parameters the
//!    instrumenter declares (a length and a base per slot, then the fault record), the refused
//!    one goes to the driver as the program made it and is reported as a launch error, and the
//!    summary counts both (`nvrtc_fake_driver_checks_*`);
//! 3. with an off-by-one bug in the program and the fake writing the fault record as the
//!    build's first device check does, the out-of-bounds access is reported against the
//!    parameter, the allocation and the thread (`nvrtc_fake_driver_reports_*`).
//!
//! Cases 2 and 3 need nvJitLink (the checked build is assembled before it is loaded): they are
//! the NVRTC tier, where a missing nvJitLink is a failure under `CUDACHECK_REQUIRE_NVRTC=1` and
//! a printed skip elsewhere. Without a C compiler every test here prints why and passes.
//!
//! The interposer is `CUDACHECK_PRELOAD_SO` when set, else this crate built as a shared
//! object into `target/tmp/fake-driver-interposer` (a first build takes a minute or two;
//! later ones only what changed).

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cudacheck_run::protocol::{self, Finding, FindingKind, ProcessSummary};

const FAKE_SOURCE: &str = include_str!("fake_driver/fake_cuda.c");
const PROGRAM_SOURCE: &str = include_str!("fake_driver/program.c");
/// The driver entry points the interposer resolves, declared once in its `driver_api!`.
const FFI_SOURCE: &str = include_str!("../src/interpose/ffi.rs");

/// Floats per buffer of the program (`N` in program.c), and the bytes of each.
const ELEMENTS: u64 = 1000;
const BUFFER_BYTES: u64 = ELEMENTS * 4;
/// What a slot bounded by no allocation takes as its length (with base 0): every address
/// below 2^63 passes (`InstrumentOptions::alloc_bases`).
const ANY_LEN: u64 = i64::MAX as u64;
/// How the fake driver and the programs are compiled (part of their directory's name).
const C_FLAGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-O1"];
const DRIVER_FLAGS: &[&str] = &[
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-Wl,-soname,libcuda.so.1",
];
/// A run that takes longer has hung (a lock, a wait for an event that never completes).
const RUN_LIMIT: Duration = Duration::from_secs(60);

// ---- what is built once per test process ---------------------------------------------------

/// How a program reaches the driver (program.c's `ROUTE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Linked,
    Dlsym,
    GetProcAddress,
}

impl Route {
    const ALL: [Route; 3] = [Route::Linked, Route::Dlsym, Route::GetProcAddress];

    fn define(self) -> &'static str {
        match self {
            Route::Linked => "-DROUTE=1",
            Route::Dlsym => "-DROUTE=2",
            Route::GetProcAddress => "-DROUTE=3",
        }
    }

    fn binary(self) -> &'static str {
        match self {
            Route::Linked => "program-linked",
            Route::Dlsym => "program-dlsym",
            Route::GetProcAddress => "program-get-proc-address",
        }
    }
}

/// The fake driver's directory (`libcuda.so.1`, and `libcuda.so` for `-lcuda`) and the three
/// programs in it.
struct Built {
    dir: PathBuf,
}

impl Built {
    fn driver(&self) -> PathBuf {
        self.dir.join("libcuda.so.1")
    }

    fn program(&self, route: Route) -> PathBuf {
        self.dir.join(route.binary())
    }
}

/// The C compiler: `$CC`, else `cc`, if it runs.
fn c_compiler() -> Result<String, String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    match Command::new(&cc).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(cc),
        Ok(o) => Err(format!("`{cc} --version` failed ({})", o.status)),
        Err(e) => Err(format!("no C compiler: `{cc}` could not be run: {e}")),
    }
}

/// Compiles the fake driver and the programs, once per process, into a directory of
/// `target/tmp` named by what they are built from (a second test process finds it made).
fn built() -> Result<&'static Built, String> {
    static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();
    BUILT
        .get_or_init(compile_all)
        .as_ref()
        .map_err(Clone::clone)
}

fn compile_all() -> Result<Built, String> {
    let cc = c_compiler()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (FAKE_SOURCE, PROGRAM_SOURCE, &cc, C_FLAGS, DRIVER_FLAGS).hash(&mut h);
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-driver");
    let dir = base.join(format!("{:016x}", h.finish()));
    if dir.join(Route::GetProcAddress.binary()).is_file() {
        return Ok(Built { dir });
    }
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    // Built beside, then renamed into place: a test process running at the same time sees
    // either nothing or everything.
    let work = tempfile::tempdir_in(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    let w = work.path();
    let fake_c = w.join("fake_cuda.c");
    let program_c = w.join("program.c");
    std::fs::write(&fake_c, FAKE_SOURCE).map_err(|e| e.to_string())?;
    std::fs::write(&program_c, PROGRAM_SOURCE).map_err(|e| e.to_string())?;
    compile(
        Command::new(&cc)
            .args(C_FLAGS)
            .args(DRIVER_FLAGS)
            .arg("-o")
            .arg(w.join("libcuda.so.1"))
            .arg(&fake_c)
            .arg("-lpthread"),
    )?;
    std::os::unix::fs::symlink("libcuda.so.1", w.join("libcuda.so")).map_err(|e| e.to_string())?;
    for route in Route::ALL {
        let mut cmd = Command::new(&cc);
        cmd.args(C_FLAGS)
            .arg(route.define())
            .arg("-o")
            .arg(w.join(route.binary()))
            .arg(&program_c);
        match route {
            Route::Linked => cmd.arg("-L").arg(w).arg("-lcuda"),
            Route::Dlsym | Route::GetProcAddress => cmd.arg("-ldl"),
        };
        compile(&mut cmd)?;
    }
    let work = work.keep();
    if std::fs::rename(&work, &dir).is_err() {
        // Another process put the same build there first.
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(Built { dir })
}

fn compile(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        // A compile error in our own C is a failure of the test, not a reason to skip it.
        panic!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

/// The interposer: `CUDACHECK_PRELOAD_SO`, or this crate built as the CLI builds it.
fn interposer() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        if let Some(p) = std::env::var_os("CUDACHECK_PRELOAD_SO") {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "CUDACHECK_PRELOAD_SO={} is no file",
                p.display()
            );
            return p;
        }
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-driver-interposer");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args([
                "rustc",
                "--lib",
                "--features",
                "interpose",
                "--crate-type",
                "cdylib",
            ])
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("cargo could not be run to build the interposer");
        assert!(
            out.status.success(),
            "building the interposer (cudacheck-run as a shared object) failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let so = target.join("debug").join("libcudacheck_run.so");
        assert!(
            so.is_file(),
            "the interposer was not built at {}",
            so.display()
        );
        so
    })
}

/// Whether nvJitLink (which the checked builds are assembled with) is here; prints why not and
/// returns `false` when it is not, unless `CUDACHECK_REQUIRE_NVRTC=1` (the NVRTC tier's rule,
/// as `cudacheck_tests::nvrtc_or_skip` applies it to NVRTC), where its absence is a failure.
fn nvjitlink_or_skip() -> bool {
    match cudacheck::nvrtc::jitlink() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("CUDACHECK_REQUIRE_NVRTC").as_deref() == Ok("1") {
                panic!("CUDACHECK_REQUIRE_NVRTC=1 but nvJitLink was not found:\n{e}");
            }
            println!(
                "skipped (NVRTC tier): nvJitLink not found ({e}); run scripts/setup-cuda.sh or \
                 set CUDACHECK_NVJITLINK"
            );
            false
        }
    }
}

/// The fake driver and the programs, or `None` after printing why they cannot be built.
fn built_or_skip() -> Option<&'static Built> {
    match built() {
        Ok(b) => Some(b),
        Err(why) => {
            println!("skipped (no C compiler): {why}");
            None
        }
    }
}

// ---- one run of a program ------------------------------------------------------------------

/// How a program is run.
#[derive(Clone, Copy, Debug)]
struct Setup {
    route: Route,
    /// With the interposer preloaded.
    interposed: bool,
    /// The program passes `n = 1001` (one element more than its buffers hold) and the fake
    /// writes the fault record of the checked build's first device check.
    off_by_one: bool,
    /// Reads of memory nothing wrote are checked too (`--init`).
    init: bool,
}

/// One launch as the fake driver logged it.
#[derive(Debug)]
struct LaunchLine {
    kernel: String,
    grid: [u32; 3],
    block: [u32; 3],
    params: usize,
    hidden: bool,
    result: i32,
    /// Every parameter's value, by its PTX name.
    values: BTreeMap<String, u64>,
}

impl LaunchLine {
    fn parse(line: &str) -> LaunchLine {
        let mut fields = BTreeMap::new();
        for word in line.split_whitespace().skip(1) {
            if let Some((k, v)) = word.split_once('=') {
                fields.insert(k.to_string(), v.to_string());
            }
        }
        let get = |k: &str| {
            fields
                .get(k)
                .unwrap_or_else(|| panic!("the launch log line has no `{k}`: {line}"))
                .clone()
        };
        let dims = |k: &str| -> [u32; 3] {
            let v: Vec<u32> = get(k).split(',').map(|n| n.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        };
        let values = fields
            .iter()
            .filter_map(|(k, v)| {
                let hex = v.strip_prefix("0x")?;
                Some((k.clone(), u64::from_str_radix(hex, 16).ok()?))
            })
            .collect();
        LaunchLine {
            kernel: get("kernel"),
            grid: dims("grid"),
            block: dims("block"),
            params: get("params").parse().unwrap(),
            hidden: get("hidden") == "1",
            result: get("result").parse().unwrap(),
            values,
        }
    }

    fn value(&self, name: &str) -> u64 {
        *self
            .values
            .get(name)
            .unwrap_or_else(|| panic!("the launch passed no `{name}`: {self:?}"))
    }
}

/// What a run left behind.
struct Ran {
    setup: Setup,
    status: ExitStatus,
    stdout: String,
    stderr: String,
    launches: Vec<LaunchLine>,
    log: String,
    findings: Vec<Finding>,
    json: String,
    summaries: Vec<ProcessSummary>,
    /// The program's two buffers, as it printed them.
    x: u64,
    y: u64,
}

impl Ran {
    /// Everything a failed assertion should show.
    fn context(&self) -> String {
        format!(
            "\n--- {:?}: {}\n--- stdout:\n{}\n--- stderr:\n{}\n--- the fake driver's launch log:\n{}\
             \n--- findings (JSON lines):\n{}\n--- summaries: {:#?}",
            self.setup, self.status, self.stdout, self.stderr, self.log, self.json, self.summaries
        )
    }
}

/// Runs the program of `setup.route` under the fake driver (and the interposer, if asked).
fn run(built: &Built, setup: Setup) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (log, json, summaries) = (
        t.join("launches.log"),
        t.join("findings.jsonl"),
        t.join("sum"),
    );
    std::fs::create_dir(&summaries).unwrap();
    let (out_path, err_path) = (t.join("stdout"), t.join("stderr"));
    let mut cmd = Command::new(built.program(setup.route));
    for v in protocol::ALL_ENV {
        cmd.env_remove(v);
    }
    let library_path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(rest) if !rest.is_empty() => {
            let mut p = built.dir.clone().into_os_string();
            p.push(":");
            p.push(rest);
            p
        }
        _ => built.dir.clone().into_os_string(),
    };
    cmd.env("LD_LIBRARY_PATH", library_path)
        .env_remove("LD_PRELOAD")
        .env_remove("FAKE_CUDA_FAULT")
        .env("FAKE_CUDA_LOG", &log)
        .env(protocol::ENV_JSON, &json)
        .env(protocol::ENV_SUMMARY_DIR, &summaries)
        // The checked builds go to a cache of this run's own, not the user's.
        .env("CUDACHECK_CACHE_DIR", t.join("cache"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    if setup.interposed {
        cmd.env("LD_PRELOAD", interposer());
    }
    if setup.init {
        cmd.env(protocol::ENV_INIT, "1");
    }
    if setup.off_by_one {
        cmd.arg((ELEMENTS + 1).to_string())
            .env("FAKE_CUDA_FAULT", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{:?} did not end within {RUN_LIMIT:?}; stderr so far:\n{}",
                setup,
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let (stdout, log_text, json_text) = (read(&out_path), read(&log), read(&json));
    let address = |name: &str| -> u64 {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix("=0x"))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or(0)
    };
    let findings = json_text
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("a finding is not JSON ({e}): {l}"))
        })
        .collect();
    Ran {
        setup,
        status,
        x: address("x"),
        y: address("y"),
        stderr: read(&err_path),
        launches: log_text.lines().map(LaunchLine::parse).collect(),
        log: log_text,
        findings,
        json: json_text,
        summaries: protocol::read_summaries(&summaries),
        stdout,
    }
}

// ---- what every run must show --------------------------------------------------------------

/// The program ended well: every call answered as the driver should, the refused launch
/// included, and the sum it read back is right (so the launch that ran had its arguments).
fn assert_exited_0(r: &Ran) {
    assert!(r.status.success(), "the program failed{}", r.context());
    assert!(
        r.x != 0 && r.y != 0,
        "the program printed no buffer addresses{}",
        r.context()
    );
}

/// The second launch, a block of 2048 threads, reached the driver as the program made it
/// (its own three parameters, no checked build) and the driver refused it.
fn assert_refused_launch_passed_through(r: &Ran) {
    let bad = &r.launches[1];
    assert_eq!(bad.kernel, "add", "{}", r.context());
    assert_eq!(
        (bad.grid, bad.block),
        ([1, 1, 1], [2048, 1, 1]),
        "{}",
        r.context()
    );
    assert!(
        !bad.hidden,
        "the refused launch went to a checked build{}",
        r.context()
    );
    assert_eq!(bad.params, 3, "{}", r.context());
    assert_eq!(bad.result, 1, "the driver did not refuse it{}", r.context());
}

/// The first launch ran the bounds-checked build: the program's arguments, then a length and
/// a base per slot (one slot per parameter: `add` has no struct parameters), then the fault
/// record. The pointers are bounded by their allocations; the `int` by nothing.
fn assert_good_launch_checked(r: &Ran, n: u64) {
    let good = &r.launches[0];
    let user = 3;
    assert_eq!(good.kernel, "add", "{}", r.context());
    assert_eq!(
        (good.grid, good.block),
        ([4, 1, 1], [256, 1, 1]),
        "{}",
        r.context()
    );
    assert!(
        good.hidden,
        "the good launch did not run the checked build{}",
        r.context()
    );
    assert_eq!(good.params, user + 2 * user + 1, "{}", r.context());
    assert_eq!(good.result, 0, "{}", r.context());
    let expected = [
        ("add_param_0", r.x),
        ("add_param_1", r.y),
        ("add_param_2", n),
        ("__cc_len_0", BUFFER_BYTES),
        ("__cc_len_1", BUFFER_BYTES),
        ("__cc_len_2", ANY_LEN),
        ("__cc_base_0", r.x),
        ("__cc_base_1", r.y),
        ("__cc_base_2", 0),
    ];
    for (name, want) in expected {
        assert_eq!(good.value(name), want, "parameter `{name}`{}", r.context());
    }
    let rec = good.value("__cc_rec");
    let inside = |base: u64| (base..base + BUFFER_BYTES).contains(&rec);
    assert!(
        rec != 0 && !inside(r.x) && !inside(r.y),
        "the fault record's address {rec:#x} is no record of the interposer's own{}",
        r.context()
    );
}

/// A host call stack as reports show it: the program's frames only (none of the interposer's),
/// ending at `main`, which made every call of the test program.
fn assert_program_stack(stack: &[String], what: &str, r: &Ran) {
    assert!(
        stack.last().is_some_and(|f| f.starts_with("main (")),
        "the {what} stack does not end at `main`: {stack:?}{}",
        r.context()
    );
    assert!(
        stack.iter().all(|f| !f.contains("cudacheck_run")),
        "the {what} stack shows the interposer's own frames: {stack:?}{}",
        r.context()
    );
}

/// The refused launch is reported once, in the device's words.
fn assert_launch_error_reported(r: &Ran) {
    let errors: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::LaunchError)
        .collect();
    assert_eq!(errors.len(), 1, "one launch error{}", r.context());
    let f = errors[0];
    assert_eq!(f.kernel, "add", "{}", r.context());
    assert_eq!(
        (f.grid_dim, f.block_dim),
        ([1, 1, 1], [2048, 1, 1]),
        "{}",
        r.context()
    );
    assert!(
        f.violations
            .iter()
            .any(|v| v.contains("2048 threads") && v.contains("at most 1024")),
        "no violation names the 2048 threads and the limit of 1024{}",
        r.context()
    );
    assert!(
        r.stderr
            .contains("kernel `add` launched with grid (1, 1, 1), block (2048, 1, 1)"),
        "the launch error is not on stderr{}",
        r.context()
    );
    assert_program_stack(&f.launch_stack, "launch", r);
}

/// The process's summary: `add` launched twice, once bounds-checked; the program's two
/// allocations (not the interposer's own record arena).
fn assert_summary(r: &Ran, findings: u64) {
    assert_eq!(
        r.summaries.len(),
        1,
        "one summary per process{}",
        r.context()
    );
    let s = &r.summaries[0];
    assert_eq!(s.kernels.len(), 1, "{}", r.context());
    let k = &s.kernels[0];
    assert_eq!(
        (
            k.kernel.as_str(),
            k.launches,
            k.checked_launches,
            k.findings
        ),
        ("add", 2, 1, findings),
        "{}",
        r.context()
    );
    assert_eq!(k.unchecked_because, None, "{}", r.context());
    assert_eq!(
        (s.launches, s.checked_launches, s.findings, s.allocations),
        (2, 1, findings, 2),
        "{}",
        r.context()
    );
    assert!(
        s.notes.is_empty(),
        "the interposer fell back somewhere{}",
        r.context()
    );
}

// ---- the scenarios -------------------------------------------------------------------------

fn alone(route: Route) {
    let Some(b) = built_or_skip() else { return };
    let setup = Setup {
        route,
        interposed: false,
        off_by_one: false,
        init: false,
    };
    let r = run(b, setup);
    assert_exited_0(&r);
    assert_eq!(r.launches.len(), 2, "{}", r.context());
    let good = &r.launches[0];
    assert!(
        !good.hidden && good.params == 3 && good.result == 0,
        "{}",
        r.context()
    );
    assert_eq!(good.value("add_param_2"), ELEMENTS, "{}", r.context());
    assert_refused_launch_passed_through(&r);
    assert!(
        r.findings.is_empty() && r.json.is_empty(),
        "{}",
        r.context()
    );
    assert!(r.summaries.is_empty(), "{}", r.context());
    assert!(!r.stderr.contains("cudacheck"), "{}", r.context());
}

/// The good launch is checked, the refused one passes through and is reported. With `init`
/// (`--init`) the launch runs the init-checked build and the interposer keeps its shadow
/// through the fake's allocations, copies and memsets without falling back anywhere: the
/// program's copies wrote everything its kernel reads, so nothing more is reported, and the
/// program's buffers are whole 8-byte multiples, so no shadow update launches a kernel of the
/// interposer's own.
fn checks_launches(route: Route, init: bool) {
    let Some(b) = built_or_skip() else { return };
    if !nvjitlink_or_skip() {
        return;
    }
    let setup = Setup {
        route,
        interposed: true,
        off_by_one: false,
        init,
    };
    let r = run(b, setup);
    assert_exited_0(&r);
    assert_eq!(r.launches.len(), 2, "{}", r.context());
    assert_good_launch_checked(&r, ELEMENTS);
    assert_refused_launch_passed_through(&r);
    assert_launch_error_reported(&r);
    assert_eq!(
        r.findings.len(),
        1,
        "nothing but the launch error{}",
        r.context()
    );
    assert_summary(&r, 1);
}

fn reports_out_of_bounds(route: Route) {
    let Some(b) = built_or_skip() else { return };
    if !nvjitlink_or_skip() {
        return;
    }
    let setup = Setup {
        route,
        interposed: true,
        off_by_one: true,
        init: false,
    };
    let r = run(b, setup);
    assert_exited_0(&r);
    assert_eq!(r.launches.len(), 2, "{}", r.context());
    assert_good_launch_checked(&r, ELEMENTS + 1);
    assert_refused_launch_passed_through(&r);
    assert_launch_error_reported(&r);
    let oob: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::OutOfBounds)
        .collect();
    assert_eq!(oob.len(), 1, "one out-of-bounds finding{}", r.context());
    let f = oob[0];
    assert_eq!(
        (f.kernel.as_str(), f.symbol.as_str()),
        ("add", "add"),
        "{}",
        r.context()
    );
    assert_eq!(
        (f.grid_dim, f.block_dim),
        ([4, 1, 1], [256, 1, 1]),
        "{}",
        r.context()
    );
    assert_eq!(f.access.as_deref(), Some("read"), "{}", r.context());
    // Element 1000 (one past the end) is thread 232 of block 3 in blocks of 256.
    assert_eq!(
        (f.thread, f.block),
        (Some([232, 0, 0]), Some([3, 0, 0])),
        "{}",
        r.context()
    );
    assert_eq!(
        (f.byte_offset, f.index, f.access_bytes, f.count),
        (
            Some(BUFFER_BYTES as i64),
            Some(ELEMENTS as i64),
            Some(4),
            Some(1)
        ),
        "{}",
        r.context()
    );
    // The parameter is the site's; whichever it is, its allocation is the one reported.
    let k = f
        .param_index
        .unwrap_or_else(|| panic!("no parameter named{}", r.context()));
    assert!(f.param.is_some(), "{}", r.context());
    let pointer = match k {
        0 => r.x,
        1 => r.y,
        _ => panic!("parameter {k} is not a pointer of `add`{}", r.context()),
    };
    let a = f
        .allocation
        .as_ref()
        .unwrap_or_else(|| panic!("no allocation named{}", r.context()));
    assert_eq!(a.base, format!("{pointer:#x}"), "{}", r.context());
    assert_eq!(a.bytes, BUFFER_BYTES, "{}", r.context());
    assert!(a.api.contains("cuMemAlloc"), "{}", r.context());
    assert_program_stack(&a.stack, "allocation", &r);
    assert_program_stack(&f.launch_stack, "launch", &r);
    assert_eq!(
        (f.file.as_deref(), f.line),
        (Some("add.cu"), Some(3)),
        "the site's line is the kernel's access{}",
        r.context()
    );
    assert!(
        r.stderr.contains("out-of-bounds read") && r.stderr.contains("4 bytes past its end"),
        "the finding is not on stderr in words{}",
        r.context()
    );
    assert_summary(&r, 2);
}

#[test]
fn nvrtc_fake_driver_checks_launches_with_init_linked() {
    checks_launches(Route::Linked, true);
}

#[test]
fn nvrtc_fake_driver_checks_launches_with_init_dlsym() {
    checks_launches(Route::Dlsym, true);
}

#[test]
fn nvrtc_fake_driver_checks_launches_with_init_get_proc_address() {
    checks_launches(Route::GetProcAddress, true);
}

#[test]
fn fake_driver_alone_linked() {
    alone(Route::Linked);
}

#[test]
fn fake_driver_alone_dlsym() {
    alone(Route::Dlsym);
}

#[test]
fn fake_driver_alone_get_proc_address() {
    alone(Route::GetProcAddress);
}

#[test]
fn nvrtc_fake_driver_checks_launches_linked() {
    checks_launches(Route::Linked, false);
}

#[test]
fn nvrtc_fake_driver_checks_launches_dlsym() {
    checks_launches(Route::Dlsym, false);
}

#[test]
fn nvrtc_fake_driver_checks_launches_get_proc_address() {
    checks_launches(Route::GetProcAddress, false);
}

#[test]
fn nvrtc_fake_driver_reports_out_of_bounds_linked() {
    reports_out_of_bounds(Route::Linked);
}

#[test]
fn nvrtc_fake_driver_reports_out_of_bounds_dlsym() {
    reports_out_of_bounds(Route::Dlsym);
}

#[test]
fn nvrtc_fake_driver_reports_out_of_bounds_get_proc_address() {
    reports_out_of_bounds(Route::GetProcAddress);
}

// ---- the fake covers what the interposer resolves ------------------------------------------

/// Every entry point named in `ffi.rs`'s `driver_api!` invocation (hooked and used).
fn resolved_entry_points() -> Vec<String> {
    let start = FFI_SOURCE
        .find("\ndriver_api! {")
        .expect("ffi.rs invokes driver_api!");
    let body = &FFI_SOURCE[start..];
    let end = body[1..].find("\n}").map_or(body.len(), |e| e + 1);
    body[..end]
        .split("fn ")
        .skip(1)
        .filter_map(|s| {
            let name: String = s
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            name.starts_with("cu").then_some(name)
        })
        .collect()
}

type GetProcAddressV2 =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> c_int;

/// The fake exports every entry point the interposer resolves, and answers `cuGetProcAddress`
/// for each with that function (or its `_v2`, as the real driver answers): a hook whose real entry point is missing answers
/// CUDA_ERROR_NOT_INITIALIZED, which would make the other tests fail for the fake's sake.
#[test]
fn fake_driver_defines_every_entry_point_the_interposer_resolves() {
    let Some(b) = built_or_skip() else { return };
    let names = resolved_entry_points();
    for must in [
        "cuLaunchKernel",
        "cuMemAlloc_v2",
        "cuCtxGetCurrent",
        "cuEventQuery",
    ] {
        assert!(
            names.iter().any(|n| n == must),
            "{must} not read from ffi.rs: {names:?}"
        );
    }
    let path = CString::new(b.driver().into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: dlopen of our own library by a NUL-terminated path; RTLD_LOCAL keeps its names
    // out of this process's global scope.
    let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!lib.is_null(), "the fake driver could not be opened");
    let symbol = |name: &str| {
        let c = CString::new(name).unwrap();
        // SAFETY: a handle from dlopen and a NUL-terminated name.
        unsafe { libc::dlsym(lib, c.as_ptr()) }
    };
    let get = symbol("cuGetProcAddress_v2");
    assert!(!get.is_null(), "the fake has no cuGetProcAddress_v2");
    // SAFETY: the fake's cuGetProcAddress_v2, of this signature (fake_cuda.c).
    let get: GetProcAddressV2 = unsafe { std::mem::transmute(get) };
    let mut missing = Vec::new();
    let mut unanswered = Vec::new();
    for name in &names {
        let f = symbol(name);
        if f.is_null() {
            missing.push(name.clone());
            continue;
        }
        // As the real driver, the newest version: `cuGetProcAddress` is `cuGetProcAddress_v2`.
        let newest = Some(symbol(&format!("{name}_v2")))
            .filter(|p| !p.is_null())
            .unwrap_or(f);
        let c = CString::new(name.as_str()).unwrap();
        let (mut p, mut status) = (std::ptr::null_mut(), -1);
        // SAFETY: a NUL-terminated name and valid out-pointers.
        let r = unsafe { get(c.as_ptr(), &mut p, 13000, 0, &mut status) };
        if r != 0 || status != 0 || p != newest {
            unanswered.push(name.clone());
        }
    }
    assert!(missing.is_empty(), "the fake driver lacks {missing:?}");
    assert!(
        unanswered.is_empty(),
        "cuGetProcAddress_v2 of the fake does not answer {unanswered:?}"
    );
}
