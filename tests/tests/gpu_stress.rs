//! GPU tier: many threads, many streams, every visible device, nothing misattributed, nothing
//! lost.
//!
//! On each device, [`THREADS`] threads share [`STREAMS`] streams (launch `j` of thread `t` goes
//! to stream `(t + j) % STREAMS`, so each stream carries several threads' launches at once, and
//! a thread's buffers move between streams). Each thread runs a deterministic schedule of
//! launches of two kernels (`axpby`, and `gather` through an index buffer), bounds-checked or
//! plain, synchronizing, with planted mistakes at positions fixed by (device, thread, launch):
//!
//! - out-of-bounds reads that exactly one thread makes (`axpby` run one element past `x`;
//!   `gather` with one index past `in`), which must come back from their own launch as
//!   `Error::OutOfBounds` naming the kernel, the Rust launch site, the buffer, index, length,
//!   block and thread;
//! - bad configurations (a block of 2048 threads; 300 KiB of shared memory), which must come
//!   back as the right violation of that device's limits.
//!
//! Every other launch must succeed, its output (poisoned before the launch) equal to the CPU's.
//! The counts (launches, planted, found, misattributed, lost, spurious, wrong outputs) are
//! printed, and written as JSON to `$CUDACHECK_RESULTS_DIR/gpu_stress.json` when that is set.
//! A watchdog fails the test if the workers do not finish (a deadlock) within [`WATCHDOG`].
//! `CUDACHECK_STRESS_LAUNCHES` sets the launches per thread (default 600: 19 200 launches on
//! two devices, a few seconds on two H200s).

use std::fmt::Write as _;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cudacheck::core::instrument::FaultKind;
use cudacheck::core::validate::Violation;
use cudacheck::core::{Dim3, LimitsOrigin};
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel, LaunchErrorKind};
use cudacheck_tests::gpu_or_skip;

/// Threads per device.
const THREADS: usize = 16;
/// Streams per device, shared by its threads.
const STREAMS: usize = 4;
/// How long the workers may take before the test calls it a deadlock.
const WATCHDOG: Duration = Duration::from_secs(240);

const SOURCE: &str = r#"
// out[i] = a * x[i] + y[i]
extern "C" __global__ void axpby(float* out, const float* x, const float* y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i]; // LINE(axpby)
}

// out[i] = in[idx[i]]
extern "C" __global__ void gather(float* out, const float* in, const int* idx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[idx[i]]; // LINE(gather)
}
"#;

/// The line of `SOURCE` marked `LINE(kernel)`.
fn marker_line(kernel: &str) -> u32 {
    let marker = format!("LINE({kernel})");
    SOURCE
        .lines()
        .position(|l| l.contains(&marker))
        .map(|i| i as u32 + 1)
        .expect("every kernel has a marked line")
}

/// What launch `j` of thread `t` on device `d` is: fixed by the three numbers alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Axpby {
        checked: bool,
    },
    Gather {
        checked: bool,
    },
    /// `axpby` over one element more than `x` holds: thread `n` reads `x[n]`.
    OobAxpby,
    /// `gather` with `idx[k] = in.len() + extra`: thread `k` reads past `in`.
    OobGather {
        k: usize,
        extra: usize,
    },
    /// A block of 32 x 64 = 2048 threads.
    TooManyThreads {
        checked: bool,
    },
    /// 300 KiB of dynamic shared memory, more than any GPU allows per block.
    TooMuchShared {
        checked: bool,
    },
}

impl Plan {
    fn planted(self) -> bool {
        !matches!(self, Plan::Axpby { .. } | Plan::Gather { .. })
    }
}

/// splitmix64: a well-mixed hash of the position.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn plan(d: usize, t: usize, j: usize, n: usize) -> Plan {
    let h = mix(((d as u64) << 40) | ((t as u64) << 20) | j as u64);
    let checked = !(h >> 8).is_multiple_of(3);
    match h % 16 {
        0 => Plan::OobAxpby,
        1 => Plan::OobGather {
            k: (h >> 16) as usize % n,
            extra: (h >> 40) as usize % 1000,
        },
        2 => Plan::TooManyThreads { checked },
        3 => Plan::TooMuchShared { checked },
        _ if j.is_multiple_of(2) => Plan::Axpby { checked },
        _ => Plan::Gather { checked },
    }
}

/// One thread's data: host copies and device buffers.
struct Work {
    device: usize,
    thread: usize,
    /// Elements of `x`, `y` and `out` a correct launch covers (the buffers hold `n + 1`).
    n: usize,
    x: Vec<f32>,
    y: Vec<f32>,
    inp: Vec<f32>,
    dx: CudaSlice<f32>,
    dy: CudaSlice<f32>,
    dout: CudaSlice<f32>,
    dinp: CudaSlice<f32>,
    didx: CudaSlice<i32>,
}

impl Work {
    fn new(device: usize, thread: usize, s: &Arc<CudaStream>) -> Work {
        let n = 2048 + 37 * thread + 101 * device;
        let m = 3000 + 13 * thread;
        let x: Vec<f32> = (0..=n).map(|i| (i % 64) as f32 * 0.25).collect();
        let y: Vec<f32> = (0..=n).map(|i| (i % 7) as f32 + device as f32).collect();
        let inp: Vec<f32> = (0..m).map(|i| i as f32 * 0.5 + thread as f32).collect();
        let up = |v: &[f32]| cudacheck::alloc_copy(s, v).unwrap();
        Work {
            device,
            thread,
            n,
            dx: up(&x),
            dy: up(&y),
            dout: up(&vec![f32::NAN; n + 1]),
            dinp: up(&inp),
            didx: cudacheck::alloc_zeros::<i32>(s, n).unwrap(),
            x,
            y,
            inp,
        }
    }

    /// `a` for launch `j`: distinct per launch, so one launch's output cannot pass for
    /// another's, and exact in `f32` products.
    fn a(&self, j: usize) -> f32 {
        ((self.thread * 31 + j * 7 + self.device * 13) % 64) as f32 * 0.5 + 0.5
    }

    /// `gather`'s indices for launch `j`, with the planted one when there is one.
    fn indices(&self, j: usize, planted: Option<(usize, usize)>) -> Vec<i32> {
        let m = self.inp.len();
        let mut idx: Vec<i32> = (0..self.n).map(|i| ((i * 7 + j) % m) as i32).collect();
        if let Some((k, extra)) = planted {
            idx[k] = (m + extra) as i32;
        }
        idx
    }
}

/// How one launch came out.
#[derive(Debug)]
enum Outcome {
    Ok,
    Found,
    /// A planted mistake came back as success.
    Lost(String),
    /// A planted mistake came back, but naming the wrong launch, kernel, buffer or thread, or
    /// as the wrong error.
    Misattributed(String),
    /// A launch without a mistake failed.
    Spurious(String),
    /// A launch succeeded (or was refused) but the output is not what it should be.
    WrongOutput(String),
}

#[derive(Debug, Default)]
struct Tally {
    launches: u64,
    planted_oob: u64,
    planted_config: u64,
    found: u64,
    misattributed: u64,
    lost: u64,
    spurious: u64,
    wrong_outputs: u64,
    /// The first few problems, for the failure message.
    problems: Vec<String>,
}

impl Tally {
    fn add(&mut self, p: Plan, o: Outcome, at: &str) {
        self.launches += 1;
        match p {
            Plan::OobAxpby | Plan::OobGather { .. } => self.planted_oob += 1,
            Plan::TooManyThreads { .. } | Plan::TooMuchShared { .. } => self.planted_config += 1,
            _ => {}
        }
        let (counter, label, text) = match o {
            Outcome::Ok => return,
            Outcome::Found => {
                self.found += 1;
                return;
            }
            Outcome::Lost(s) => (&mut self.lost, "lost", s),
            Outcome::Misattributed(s) => (&mut self.misattributed, "misattributed", s),
            Outcome::Spurious(s) => (&mut self.spurious, "spurious", s),
            Outcome::WrongOutput(s) => (&mut self.wrong_outputs, "wrong output", s),
        };
        *counter += 1;
        if self.problems.len() < 8 {
            self.problems.push(format!("{at}: {label}: {text}"));
        }
    }

    fn merge(&mut self, o: Tally) {
        self.launches += o.launches;
        self.planted_oob += o.planted_oob;
        self.planted_config += o.planted_config;
        self.found += o.found;
        self.misattributed += o.misattributed;
        self.lost += o.lost;
        self.spurious += o.spurious;
        self.wrong_outputs += o.wrong_outputs;
        for p in o.problems {
            if self.problems.len() < 16 {
                self.problems.push(p);
            }
        }
    }

    fn planted(&self) -> u64 {
        self.planted_oob + self.planted_config
    }
}

/// The launch's result and the line of its `.run()`: the site its error must name.
type Ran = (Result<(), Error>, u32);

struct Kernels {
    axpby: Kernel,
    gather: Kernel,
}

/// Whether launch plan `p` runs bounds-checked (planted out-of-bounds launches always do).
fn checked(p: Plan) -> bool {
    match p {
        Plan::Axpby { checked }
        | Plan::Gather { checked }
        | Plan::TooManyThreads { checked }
        | Plan::TooMuchShared { checked } => checked,
        Plan::OobAxpby | Plan::OobGather { .. } => true,
    }
}

/// What a launch refused before reaching the GPU leaves in the output: the poison.
fn untouched(n: usize) -> Vec<f32> {
    vec![f32::NAN; n + 1]
}

/// Launch `j` (`p`: `Axpby`, `OobAxpby` or `TooManyThreads`) of `axpby` over `w`'s first n
/// elements: n + 1 for the planted launch, whose view of `x` holds n (thread n reads `x[n]`);
/// a block of 2048 threads for the bad configuration. The launch, and what its output should be.
fn axpby(k: &Kernels, w: &mut Work, s: &Arc<CudaStream>, j: usize, p: Plan) -> (Ran, Vec<f32>) {
    let (n, a) = (w.n, w.a(j));
    let planted = p == Plan::OobAxpby;
    let too_many_threads = matches!(p, Plan::TooManyThreads { .. });
    let n_kernel = if planted { n + 1 } else { n };
    let block = if too_many_threads {
        Dim3::new(32, 64, 1)
    } else {
        Dim3::x(256)
    };
    let xv = w.dx.slice(..n);
    let n_kernel_i32 = n_kernel as i32;
    let mut launch = k.axpby.launch(s);
    launch
        .grid(n_kernel.div_ceil(256) as u32)
        .block(block)
        .instrument(checked(p))
        .arg_mut(&mut w.dout)
        .arg(&xv)
        .arg(&w.dy)
        .arg(&a)
        .arg(&n_kernel_i32);
    #[rustfmt::skip]
    let ran = (unsafe { launch.run() }, line!());
    if too_many_threads {
        return (ran, untouched(n));
    }
    let mut want: Vec<f32> = (0..n).map(|i| a * w.x[i] + w.y[i]).collect();
    // Past the view, the read gave 0.
    want.push(if planted { w.y[n] } else { f32::NAN });
    (ran, want)
}

/// Launch `j` (`p`: `Gather`, `OobGather` or `TooMuchShared`) of `gather` of `w`'s n elements
/// through indices uploaded for it, one past `in` when planted; 300 KiB of shared memory for
/// the bad configuration. The launch, and what its output should be.
fn gather(k: &Kernels, w: &mut Work, s: &Arc<CudaStream>, j: usize, p: Plan) -> (Ran, Vec<f32>) {
    let n = w.n;
    let planted = match p {
        Plan::OobGather { k, extra } => Some((k, extra)),
        _ => None,
    };
    let too_much_shared = matches!(p, Plan::TooMuchShared { .. });
    let idx = w.indices(j, planted);
    if let Err(e) = s.memcpy_htod(&idx, &mut w.didx) {
        panic!("uploading the indices: {e:?}");
    }
    let shared = if too_much_shared { 300 * 1024 } else { 0 };
    let n_i32 = n as i32;
    let mut launch = k.gather.launch(s);
    launch
        .grid(n.div_ceil(256) as u32)
        .block(256)
        .shared_bytes(shared)
        .instrument(checked(p))
        .arg_mut(&mut w.dout)
        .arg(&w.dinp)
        .arg(&w.didx)
        .arg(&n_i32);
    #[rustfmt::skip]
    let ran = (unsafe { launch.run() }, line!());
    if too_much_shared {
        return (ran, untouched(n));
    }
    let mut want: Vec<f32> = idx
        .iter()
        .map(|&i| w.inp.get(i as usize).copied().unwrap_or(0.0))
        .collect();
    want.push(f32::NAN);
    (ran, want)
}

/// Runs launch `j` of `w`'s schedule on `s` and judges it.
fn one_launch(k: &Kernels, w: &mut Work, s: &Arc<CudaStream>, j: usize, p: Plan) -> Outcome {
    let n = w.n;
    // Poison the output: a launch that writes nothing, or writes for another launch, shows.
    if let Err(e) = s.memcpy_htod(&vec![f32::NAN; n + 1], &mut w.dout) {
        return Outcome::Spurious(format!("poisoning the output: {e:?}"));
    }
    let ((result, line), expected) = match p {
        Plan::Axpby { .. } | Plan::OobAxpby | Plan::TooManyThreads { .. } => axpby(k, w, s, j, p),
        Plan::Gather { .. } | Plan::OobGather { .. } | Plan::TooMuchShared { .. } => {
            gather(k, w, s, j, p)
        }
    };
    let verdict = judge(w, p, result, line);
    if matches!(verdict, Outcome::Ok | Outcome::Found) {
        if let Some(wrong) = compare_output(w, s, &expected) {
            return Outcome::WrongOutput(wrong);
        }
    }
    verdict
}

/// Whether the launch's result is the one its plan calls for.
fn judge(w: &Work, p: Plan, result: Result<(), Error>, line: u32) -> Outcome {
    let e = match (result, p.planted()) {
        (Ok(()), false) => return Outcome::Ok,
        (Ok(()), true) => return Outcome::Lost(format!("{p:?} returned Ok")),
        (Err(e), false) => return Outcome::Spurious(e.to_string()),
        (Err(e), true) => e,
    };
    let wrong = |why: &str| Outcome::Misattributed(format!("{p:?}: {why}: {e}"));
    match p {
        Plan::OobAxpby | Plan::OobGather { .. } => {
            let Error::OutOfBounds(o) = &e else {
                return wrong("not OutOfBounds");
            };
            let (kernel, buffer, index, len, at) = match p {
                Plan::OobAxpby => ("axpby", "x", w.n as i64, w.n as u64, w.n),
                Plan::OobGather { k, extra } => {
                    let m = w.inp.len();
                    ("gather", "in", (m + extra) as i64, m as u64, k)
                }
                _ => unreachable!(),
            };
            let block = (at / 256) as u32;
            let thread = (at % 256) as u32;
            if &*o.kernel != kernel {
                return wrong("the wrong kernel");
            }
            if o.site.line() != line || !o.site.file().ends_with("gpu_stress.rs") {
                return wrong("the wrong launch site");
            }
            if o.buffer != buffer || o.index != index || o.len != len {
                return wrong("the wrong buffer, index or length");
            }
            if o.access != FaultKind::Read {
                return wrong("not a read");
            }
            if (o.block.x, o.block.y, o.thread.x, o.thread.y) != (block, 0, thread, 0) {
                return wrong("the wrong block or thread");
            }
            if o.count != 1 || o.line != marker_line(kernel) || !o.file.ends_with("stress.cu") {
                return wrong("the wrong count or source line");
            }
            Outcome::Found
        }
        Plan::TooManyThreads { .. } | Plan::TooMuchShared { .. } => {
            let Error::Launch(l) = &e else {
                return wrong("not a launch error");
            };
            let kernel = if matches!(p, Plan::TooManyThreads { .. }) {
                "axpby"
            } else {
                "gather"
            };
            if l.kernel != kernel {
                return wrong("the wrong kernel");
            }
            if l.site.line() != line || !l.site.file().ends_with("gpu_stress.rs") {
                return wrong("the wrong launch site");
            }
            let LaunchErrorKind::InvalidConfig { violations } = &l.kind else {
                return wrong("not an invalid configuration");
            };
            let this_device = |target: &LimitsOrigin| matches!(target, LimitsOrigin::Device { ordinal, .. } if *ordinal as usize == w.device);
            let right = violations.iter().any(|v| match (p, v) {
                (
                    Plan::TooManyThreads { .. },
                    Violation::TooManyThreadsPerBlock {
                        requested, target, ..
                    },
                ) => *requested == 2048 && this_device(target),
                (
                    Plan::TooMuchShared { .. },
                    Violation::SharedMemoryTooLarge {
                        dynamic_bytes,
                        target,
                        ..
                    },
                ) => *dynamic_bytes == 300 * 1024 && this_device(target),
                _ => false,
            });
            if right {
                Outcome::Found
            } else {
                wrong("not the planted violation of this device's limits")
            }
        }
        Plan::Axpby { .. } | Plan::Gather { .. } => unreachable!("not planted"),
    }
}

/// `None` when the output equals `expected` bit for bit (NaN for NaN), else what differs.
fn compare_output(w: &Work, s: &Arc<CudaStream>, expected: &[f32]) -> Option<String> {
    let got = match s.clone_dtoh(&w.dout) {
        Ok(v) => v,
        Err(e) => return Some(format!("copying the output back: {e:?}")),
    };
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let i = got.iter().zip(expected).position(|(&a, &b)| !same(a, b))?;
    Some(format!(
        "out[{i}] = {} but should be {} ({} of {} elements differ)",
        got[i],
        expected[i],
        got.iter()
            .zip(expected)
            .filter(|(a, b)| !same(**a, **b))
            .count(),
        expected.len()
    ))
}

fn worker(
    k: Arc<Kernels>,
    streams: Vec<Arc<CudaStream>>,
    d: usize,
    t: usize,
    launches: usize,
    start: Arc<Barrier>,
) -> Tally {
    let mut w = Work::new(d, t, &streams[t % STREAMS]);
    // The data is on the device before anyone launches.
    cudacheck::synchronize(&streams[t % STREAMS]).unwrap();
    let mut tally = Tally::default();
    start.wait();
    for j in 0..launches {
        let s = &streams[(t + j) % STREAMS];
        let p = plan(d, t, j, w.n);
        let o = one_launch(&k, &mut w, s, j, p);
        tally.add(
            p,
            o,
            &format!(
                "device {d}, thread {t}, launch {j} (stream {})",
                (t + j) % STREAMS
            ),
        );
    }
    tally
}

#[test]
fn gpu_stress_threads_streams_devices_nothing_misattributed_nothing_lost() {
    let Some(first) = gpu_or_skip() else { return };
    let devices = cudacheck::device_count().unwrap();
    let launches: usize = std::env::var("CUDACHECK_STRESS_LAUNCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let source = CudaSource::from_str("stress.cu", SOURCE);
    let kernels = Arc::new(Kernels {
        axpby: Kernel::new(source.clone(), "axpby").sync(true).build(),
        gather: Kernel::new(source, "gather").sync(true).build(),
    });
    // Each device's streams: its primary context's STREAMS new streams.
    let mut names = Vec::new();
    let per_device: Vec<Vec<Arc<CudaStream>>> = (0..devices)
        .map(|d| {
            let s = if d == 0 {
                Arc::clone(&first)
            } else {
                cudacheck::default_stream(d).unwrap()
            };
            names.push(cudacheck::device_limits(&s).unwrap().origin.to_string());
            (0..STREAMS)
                .map(|_| s.context().new_stream().unwrap())
                .collect()
        })
        .collect();

    let started = Instant::now();
    let start = Arc::new(Barrier::new(devices * THREADS));
    let (tx, rx) = mpsc::channel();
    for (d, streams) in per_device.iter().enumerate() {
        for t in 0..THREADS {
            let (k, streams, start, tx) = (
                Arc::clone(&kernels),
                streams.clone(),
                Arc::clone(&start),
                tx.clone(),
            );
            std::thread::spawn(move || {
                let tally = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    worker(k, streams, d, t, launches, start)
                }));
                let _ = tx.send((d, t, tally));
            });
        }
    }
    drop(tx);
    let mut total = Tally::default();
    let deadline = started + WATCHDOG;
    for _ in 0..devices * THREADS {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, _, Ok(tally))) => total.merge(tally),
            Ok((d, t, Err(panic))) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("device {d}, thread {t} panicked: {why}");
            }
            Err(_) => panic!(
                "deadlock: the workers did not finish within {} s ({} launches judged so far)",
                WATCHDOG.as_secs(),
                total.launches
            ),
        }
    }
    let seconds = started.elapsed().as_secs_f64();

    let mut summary = String::new();
    let _ = write!(
        summary,
        "gpu_stress: {devices} device(s) x {THREADS} threads x {STREAMS} streams, {launches} \
         launches per thread: {} launches, {} planted ({} out of bounds, {} bad \
         configurations), {} found, {} misattributed, {} lost, {} spurious, {} wrong outputs, \
         {seconds:.1} s",
        total.launches,
        total.planted(),
        total.planted_oob,
        total.planted_config,
        total.found,
        total.misattributed,
        total.lost,
        total.spurious,
        total.wrong_outputs,
    );
    println!("{summary}");
    if let Ok(dir) = std::env::var("CUDACHECK_RESULTS_DIR") {
        let v = serde_json::json!({
            "test": "gpu_stress_threads_streams_devices_nothing_misattributed_nothing_lost",
            "devices": devices,
            "device_names": names,
            "threads_per_device": THREADS,
            "streams_per_device": STREAMS,
            "launches_per_thread": launches,
            "launches": total.launches,
            "planted": total.planted(),
            "planted_out_of_bounds": total.planted_oob,
            "planted_bad_configurations": total.planted_config,
            "found": total.found,
            "misattributed": total.misattributed,
            "lost": total.lost,
            "spurious": total.spurious,
            "wrong_outputs": total.wrong_outputs,
            "duration_s": seconds,
            "unix_time": SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        });
        let path = std::path::Path::new(&dir).join("gpu_stress.json");
        let _ = std::fs::create_dir_all(&dir);
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let problems = total.problems.join("\n  ");
    assert_eq!(
        total.launches,
        (devices * THREADS * launches) as u64,
        "every launch was judged"
    );
    assert!(
        total.planted_oob > 0 && total.planted_config > 0,
        "the schedule planted nothing"
    );
    assert_eq!(
        (
            total.misattributed,
            total.lost,
            total.spurious,
            total.wrong_outputs
        ),
        (0, 0, 0, 0),
        "{summary}\n  {problems}"
    );
    assert_eq!(total.found, total.planted(), "{summary}\n  {problems}");
}

#[test]
fn stress_schedule_plants_each_kind() {
    // The pure tier's check of the schedule: it really plants each kind of mistake, many
    // times, on each device.
    let mut kinds = [0u32; 4];
    for d in 0..2 {
        for t in 0..THREADS {
            for j in 0..150 {
                match plan(d, t, j, 2048) {
                    Plan::OobAxpby => kinds[0] += 1,
                    Plan::OobGather { k, .. } => {
                        assert!(k < 2048);
                        kinds[1] += 1
                    }
                    Plan::TooManyThreads { .. } => kinds[2] += 1,
                    Plan::TooMuchShared { .. } => kinds[3] += 1,
                    _ => {}
                }
            }
        }
    }
    assert!(kinds.iter().all(|&k| k > 50), "{kinds:?}");
}
