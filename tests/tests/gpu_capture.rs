//! GPU tier: checked launches inside CUDA stream capture, replayed as a graph.
//!
//! A plain kernel launched with `.sync(true)` (which must skip its synchronization under
//! capture) and a bounds-checked kernel are captured into one graph and replayed several
//! times into poisoned outputs, compared with a CPU reference; a planted out-of-bounds read in
//! a captured bounds-checked launch is reported by `capture::Checks::check` after every replay.

use std::sync::Arc;

use cudacheck::capture::Checks;
use cudacheck::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudacheck::cudarc::driver::{CudaGraph, CudaSlice, CudaStream};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{CaptureError, Error, Kernel, LaunchErrorKind};
use cudacheck_tests::gpu_or_skip;

const SRC: &str = r#"
extern "C" __global__ void axpy(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void shifted_double(float* out, const float* in, int n, int shift)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i + shift]; // BUG(shifted_double) when shift > 0
}
"#;

const N: usize = 1000;
const BLOCK: u32 = 128;

fn grid() -> u32 {
    (N as u32).div_ceil(BLOCK)
}

/// A non-default stream (the legacy default stream cannot be captured) of device 0, in a
/// context without cudarc's cross-stream event tracking: its waits on events recorded outside
/// the capture would join the capture (cudarc's own graph tests avoid them too).
fn capture_stream() -> Option<Arc<CudaStream>> {
    let s = gpu_or_skip()?;
    let ctx = s.context().clone();
    // SAFETY: every buffer of these tests is used on the one stream made below.
    unsafe { ctx.disable_event_tracking() };
    Some(ctx.new_stream().expect("new stream"))
}

fn source() -> CudaSource {
    CudaSource::from_str("capture.cu", SRC)
}

/// `axpy`, plain, asking to synchronize after each launch (what a debug build does).
fn axpy() -> Kernel {
    Kernel::new(source(), "axpy")
        .instrument(false)
        .sync(true)
        .build()
}

fn shifted_double() -> Kernel {
    Kernel::new(source(), "shifted_double")
        .instrument(true)
        .build()
}

fn begin(stream: &Arc<CudaStream>) {
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .expect("begin capture");
}

fn end(stream: &Arc<CudaStream>) -> CudaGraph {
    stream
        .end_capture(CUgraphInstantiate_flags(0))
        .expect("end capture")
        .expect("a graph")
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = (0..N).map(|i| (i as f32).sin()).collect();
    let y0: Vec<f32> = (0..N).map(|i| 0.5 - i as f32 / N as f32).collect();
    (x, y0)
}

/// Launches `shifted_double(out, x, N, shift)` on `stream`.
fn launch_shifted(
    k: &Kernel,
    stream: &Arc<CudaStream>,
    out: &mut CudaSlice<f32>,
    x: &CudaSlice<f32>,
    shift: i32,
) -> Result<(), Error> {
    // SAFETY: bounds-checked: the one out-of-bounds read (shift > 0) is dropped by the checks.
    unsafe {
        k.launch(stream)
            .grid(grid())
            .block(BLOCK)
            .arg_mut(out)
            .arg(x)
            .arg(&(N as i32))
            .arg(&shift)
            .run()
    }
}

#[test]
fn gpu_captured_graph_replays_plain_and_checked_kernels() {
    let Some(s) = capture_stream() else { return };
    let (x, y0) = inputs();
    let a = 1.5f32;
    let (plain, checked) = (axpy(), shifted_double());
    let xd = cudacheck::alloc_copy(&s, &x).unwrap();
    let mut y = cudacheck::alloc_copy(&s, &y0).unwrap();
    let mut z = cudacheck::alloc_copy(&s, &vec![f32::NAN; N]).unwrap();
    // Compiled and loaded before the capture, as a program warms up before capturing.
    let launch_axpy = |y: &mut CudaSlice<f32>| {
        // SAFETY: axpy touches y[i] and x[i] for i < N only; both hold N floats.
        unsafe {
            plain
                .launch(&s)
                .grid(grid())
                .block(BLOCK)
                .arg_mut(y)
                .arg(&xd)
                .arg(&a)
                .arg(&(N as i32))
                .run()
        }
    };
    launch_axpy(&mut y).unwrap();
    launch_shifted(&checked, &s, &mut z, &xd, 0).unwrap();

    begin(&s);
    let checks = Checks::begin(&s).unwrap();
    launch_axpy(&mut y).expect("a plain launch that would synchronize is captured");
    launch_shifted(&checked, &s, &mut z, &xd, 0).expect("a checked launch is captured");
    let graph = end(&s);
    assert_eq!(checks.len(), 1, "one bounds-checked launch was captured");

    let want_y: Vec<f32> = x.iter().zip(&y0).map(|(&x, &y)| a.mul_add(x, y)).collect();
    let want_z: Vec<f32> = x.iter().map(|&x| 2.0 * x).collect();
    for replay in 0..3 {
        s.memcpy_htod(&y0, &mut y).unwrap();
        s.memcpy_htod(&vec![f32::NAN; N], &mut z).unwrap();
        graph.launch().unwrap();
        checks
            .check(&s)
            .unwrap_or_else(|e| panic!("replay {replay}: {e}"));
        assert_eq!(s.clone_dtoh(&y).unwrap(), want_y, "replay {replay}: axpy");
        assert_eq!(
            s.clone_dtoh(&z).unwrap(),
            want_z,
            "replay {replay}: shifted_double"
        );
    }
}

#[test]
fn gpu_captured_out_of_bounds_is_reported_after_each_replay() {
    let Some(s) = capture_stream() else { return };
    let (x, _) = inputs();
    let checked = shifted_double();
    let xd = cudacheck::alloc_copy(&s, &x).unwrap();
    let mut z = cudacheck::alloc_copy(&s, &vec![f32::NAN; N]).unwrap();
    launch_shifted(&checked, &s, &mut z, &xd, 0).unwrap();

    begin(&s);
    let checks = Checks::begin(&s).unwrap();
    launch_shifted(&checked, &s, &mut z, &xd, 1).expect("captured, not run");
    let graph = end(&s);

    let bug_line = SRC
        .lines()
        .position(|l| l.contains("BUG(shifted_double)"))
        .map(|i| i as u32 + 1)
        .unwrap();
    // in[i + 1] for i < N: the last thread reads in[N]; the check drops the read (gives 0).
    let mut want: Vec<f32> = x[1..].iter().map(|&v| 2.0 * v).collect();
    want.push(0.0);
    for replay in 0..2 {
        s.memcpy_htod(&vec![f32::NAN; N], &mut z).unwrap();
        graph.launch().unwrap();
        let e = checks.check(&s).expect_err("the planted read is reported");
        let text = e.to_string();
        let Error::OutOfBounds(o) = &e else {
            panic!("replay {replay}: expected OutOfBounds, got {text}")
        };
        assert_eq!(&*o.kernel, "shifted_double", "{text}");
        assert_eq!(o.buffer, "in", "{text}");
        assert_eq!(o.index, N as i64, "{text}");
        assert_eq!(o.len, N as u64, "{text}");
        assert_eq!(o.line, bug_line, "{text}");
        // The graph zeroes the record before each run: one fault per replay, not a sum.
        assert_eq!(o.count, 1, "replay {replay}: {text}");
        assert!(o.site.file().ends_with("gpu_capture.rs"), "{text}");
        assert!(text.contains("the context is still usable"), "{text}");
        assert_eq!(s.clone_dtoh(&z).unwrap(), want, "replay {replay}");
    }
    // And it is: an eager launch works and checks clean.
    launch_shifted(&checked, &s, &mut z, &xd, 0).unwrap();
}

#[test]
fn gpu_captured_checked_launch_without_checks_is_refused() {
    let Some(s) = capture_stream() else { return };
    let checked = shifted_double();
    let xd = cudacheck::alloc_copy(&s, &vec![1.0f32; N]).unwrap();
    let mut z = cudacheck::alloc_zeros::<f32>(&s, N).unwrap();
    launch_shifted(&checked, &s, &mut z, &xd, 0).unwrap();

    begin(&s);
    let r = launch_shifted(&checked, &s, &mut z, &xd, 0);
    let _ = s.end_capture(CUgraphInstantiate_flags(0));
    let e = r.expect_err("no Checks for this capture");
    let Error::Launch(l) = &e else {
        panic!("expected a refused launch, got {e}")
    };
    assert!(
        matches!(l.kind, LaunchErrorKind::CapturedWithoutChecks),
        "{e}"
    );
    assert!(e.to_string().contains("Checks::begin(&stream)"), "{e}");
}

#[test]
fn gpu_checks_outside_a_capture_are_refused() {
    let Some(s) = capture_stream() else { return };
    let e = Checks::begin(&s).expect_err("the stream is not capturing");
    assert!(
        matches!(e, Error::Capture(CaptureError::NotCapturing)),
        "{e}"
    );
}
