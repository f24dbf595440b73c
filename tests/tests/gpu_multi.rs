//! GPU tier, two devices: one `Kernel` value compiled and loaded per device; a buffer of one
//! device passed to a launch on the other (refused, naming the parameter and both devices, or
//! allowed once `cudacheck::enable_peer_access` turned peer access on); and a sticky fault on
//! device 1 beside work on device 0: device 1's error names its own launches only, and device 0
//! either keeps working or (what NVIDIA's driver 580 does: it reports a sticky fault to every
//! context of the process) answers with device 1's fault, never blaming its own launches.
//!
//! Every test needs two devices: with fewer it prints `skipped (GPU tier): <reason>` and passes,
//! unless `CUDACHECK_REQUIRE_GPUS=2`, where it fails.
//!
//! Two tests change what lasts for the whole process, so each runs in a child process (the
//! `gpu_` test spawns this binary again running only its `child_` half, as in gpu_runtime.rs):
//! the sticky fault (the driver keeps it for the life of the process) and peer access (the
//! memory-pool grant is device-wide and cannot be taken back by cudacheck).
//!
//! Every kernel writes into outputs poisoned beforehand and is compared with a CPU reference.

use std::sync::Arc;

use cudacheck::core::instrument::FaultKind;
use cudacheck::core::LimitsOrigin;
use cudacheck::cudarc::driver::sys::{self, CUresult};
use cudacheck::cudarc::driver::{CudaContext, CudaStream};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel, LaunchErrorKind, PeerSupport};
use cudacheck_tests::{chain, child_passes, gpus_or_skip, is_gpu_child, kernel_source};

fn saxpy() -> Kernel {
    Kernel::new(kernel_source("saxpy.cu"), "saxpy")
        .sync(true)
        .build()
}

/// saxpy's inputs: values whose products and sums are exact in `f32`, so that the device's
/// fused multiply-add and the CPU's separate operations agree bit for bit.
fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let x = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let y = (0..n).map(|i| (i % 13) as f32).collect();
    (x, y)
}

/// `y` followed by `pad` NaNs: the tail a correct launch leaves alone.
fn padded(y: &[f32], pad: usize) -> Vec<f32> {
    let mut v = y.to_vec();
    v.resize(y.len() + pad, f32::NAN);
    v
}

/// Runs `saxpy` (y = a x + y over n elements) on `stream`, plain or bounds-checked, and
/// compares with the CPU; `Err` says what went wrong (the caller decides whether to panic).
fn saxpy_on(k: &Kernel, stream: &Arc<CudaStream>, a: f32, checked: bool) -> Result<(), String> {
    let device = stream.context().ordinal();
    let n = 50_001usize;
    let (x, y0) = inputs(n);
    let dx = cudacheck::alloc_copy(stream, &x).map_err(|e| chain(&e))?;
    let mut dy = cudacheck::alloc_copy(stream, &padded(&y0, 64)).map_err(|e| chain(&e))?;
    unsafe {
        k.launch(stream)
            .grid(n.div_ceil(256) as u32)
            .block(256)
            .instrument(checked)
            .arg_mut(&mut dy)
            .arg(&dx)
            .arg(&a)
            .arg(&(n as i32))
            .run()
    }
    .map_err(|e| format!("device {device}: {}", chain(&e)))?;
    let got = stream
        .clone_dtoh(&dy)
        .map_err(|e| format!("device {device}: copy back: {e:?}"))?;
    for i in 0..n {
        let want = a * x[i] + y0[i];
        if got[i].to_bits() != want.to_bits() {
            return Err(format!(
                "device {device} (checked: {checked}): y[{i}] = {} but the CPU says {want}",
                got[i]
            ));
        }
    }
    if !got[n..].iter().all(|v| v.is_nan()) {
        return Err(format!("device {device}: saxpy wrote past n"));
    }
    Ok(())
}

/// What `cuDeviceCanAccessPeer` answers for kernels of `from` reading memory of `to`.
fn can_access_peer(from: &CudaContext, to: &CudaContext) -> bool {
    let mut can = 0;
    // SAFETY: `can` is a valid out-pointer; both devices belong to live contexts.
    let r = unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) };
    assert_eq!(r, CUresult::CUDA_SUCCESS, "cuDeviceCanAccessPeer");
    can != 0
}

fn in_child(test: &str) {
    if gpus_or_skip(2).is_some() {
        child_passes(test);
    }
}

// ---- one kernel, two devices ---------------------------------------------------------------

#[test]
fn gpu_one_kernel_value_is_compiled_and_loaded_per_device() {
    let Some(streams) = gpus_or_skip(2) else {
        return;
    };
    let k = saxpy();
    for (d, s) in streams.iter().enumerate() {
        let info = k.load(s).unwrap_or_else(|e| panic!("{}", chain(&e)));
        let LimitsOrigin::Device { ordinal, name } = &info.limits.origin else {
            panic!(
                "device {d}: limits not from the device: {:?}",
                info.limits.origin
            )
        };
        assert_eq!(*ordinal as usize, d, "{name}");
        // The limits launches are checked against are this device's own.
        assert_eq!(info.limits, cudacheck::device_limits(s).unwrap());
        let (major, minor) = s.context().compute_capability().unwrap();
        assert_eq!(
            (info.arch.major, info.arch.minor),
            (major as u32, minor as u32),
            "compiled for the device's own architecture"
        );
        assert_eq!(info.limits.arch, info.arch);
        assert_eq!(info.symbol, "saxpy");
        assert!(info.attributes.num_regs > 0, "{info:?}");
        assert_eq!(
            info.max_threads_per_block, info.attributes.max_threads_per_block,
            "device {d}: offline and driver disagree"
        );
        println!(
            "device {d} ({name}): saxpy for sm_{}{}, {} registers, at most {} threads per block",
            info.arch.major, info.arch.minor, info.attributes.num_regs, info.max_threads_per_block
        );
    }
    // Interleaved: a module of one device's context launched on the other would fail or
    // compute with the wrong `a`.
    for checked in [false, true] {
        for (d, s) in streams.iter().enumerate() {
            let a = 2.0 + d as f32 + if checked { 0.5 } else { 0.0 };
            saxpy_on(&k, s, a, checked).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn gpu_one_kernel_value_launched_from_a_thread_per_device() {
    let Some(streams) = gpus_or_skip(2) else {
        return;
    };
    // A fresh kernel: both devices' first launches (compile once, load per context) race.
    let k = saxpy();
    let threads: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(d, s)| {
            let k = k.clone();
            std::thread::spawn(move || {
                for round in 0..6 {
                    let a = 1.0 + d as f32 + round as f32 * 0.5;
                    saxpy_on(&k, &s, a, round % 2 == 1)?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for t in threads {
        t.join()
            .expect("a launching thread panicked")
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

// ---- a buffer of the other device ----------------------------------------------------------

#[test]
fn gpu_buffer_of_device_1_on_device_0_names_the_parameter_and_both_devices() {
    let Some(streams) = gpus_or_skip(2) else {
        return;
    };
    let (s0, s1) = (&streams[0], &streams[1]);
    // A second stream puts device 0's context into cudarc's multi-stream mode, where each use
    // of a buffer records an ordering event: the refused launch must not leave cudarc an
    // error to return from the next call on that context.
    let s0b = s0.context().new_stream().unwrap();
    let k = saxpy();
    let n = 1024usize;
    let x0 = cudacheck::alloc_copy(&s0b, &vec![1.0f32; n]).unwrap();
    let mut y1 = cudacheck::alloc_copy(s1, &vec![f32::NAN; n]).unwrap();
    let can = can_access_peer(s0.context(), s1.context());
    for checked in [false, true] {
        let n_i32 = n as i32;
        let mut launch = k.launch(&s0b);
        launch
            .grid(4)
            .block(256)
            .instrument(checked)
            .arg_mut(&mut y1)
            .arg(&x0)
            .arg(&2.0f32)
            .arg(&n_i32);
        #[rustfmt::skip]
        let (r, line) = (unsafe { launch.run() }, line!());
        let e = r.expect_err("a buffer of device 1 on a launch on device 0");
        let Error::Launch(l) = &e else {
            panic!("not a launch error: {}", chain(&e))
        };
        assert_eq!(l.kernel, "saxpy");
        assert_eq!(l.site.line(), line, "the Rust launch site");
        assert!(l.site.file().ends_with("gpu_multi.rs"), "{}", l.site);
        let LaunchErrorKind::ForeignBuffer {
            index,
            param,
            buffer_device,
            stream_device,
            same_device,
            peer,
        } = &l.kind
        else {
            panic!("not a foreign buffer: {}", chain(&e))
        };
        assert_eq!(
            (*index, param.as_deref(), *buffer_device, *stream_device),
            (0, Some("y"), 1, 0)
        );
        assert!(!same_device);
        let expected = if can {
            PeerSupport::Possible
        } else {
            PeerSupport::Unsupported
        };
        assert_eq!(*peer, expected, "what cuDeviceCanAccessPeer says");
        let text = e.to_string();
        assert!(
            text.contains(
                "argument 0 (`y`) is a buffer of device 1, but the stream runs on device 0"
            ),
            "{text}"
        );
        if can {
            assert!(
                text.contains("cudacheck::enable_peer_access(stream.context()"),
                "{text}"
            );
        } else {
            assert!(text.contains("cannot access memory of device 1"), "{text}");
        }
        println!("checked: {checked}: {text}");
    }
    // Device 0's context is untouched: cudarc's next calls on it work, and so does a launch.
    let mut y0 = cudacheck::alloc_copy(&s0b, &vec![1.0f32; n]).unwrap();
    unsafe {
        k.launch(&s0b)
            .grid(4)
            .block(256)
            .arg_mut(&mut y0)
            .arg(&x0)
            .arg(&2.0f32)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert!(s0b.clone_dtoh(&y0).unwrap().iter().all(|&v| v == 3.0));
    // Nothing was written to device 1's buffer.
    assert!(s1.clone_dtoh(&y1).unwrap().iter().all(|v| v.is_nan()));
}

#[test]
fn gpu_peer_access_lets_device_0_use_a_buffer_of_device_1() {
    in_child("child_peer_access");
}

#[test]
fn child_peer_access() {
    if !is_gpu_child() {
        return;
    }
    let streams = gpus_or_skip(2).expect("the parent checked for two GPUs");
    let (c0, c1) = (streams[0].context(), streams[1].context());
    // Multi-stream mode on both sides: the buffer's ordering events and the launch's stream
    // belong to different contexts.
    let (s0, s1) = (c0.new_stream().unwrap(), c1.new_stream().unwrap());
    let can = can_access_peer(c0, c1);
    println!("cuDeviceCanAccessPeer(device 0 -> device 1): {can}");
    let k = saxpy();
    let n = 50_001usize;
    let pad = 64;
    let (x, y) = inputs(n);
    // x holds one element more than n: the out-of-bounds launch below runs past y only.
    let mut x_long = x.clone();
    x_long.push(1.0);
    let dx0 = cudacheck::alloc_copy(&s0, &x_long).unwrap();
    let mut dy1 = cudacheck::alloc_copy(&s1, &padded(&y, pad)).unwrap();
    let launch_on_0 = |dy1: &mut cudacheck::cudarc::driver::CudaSlice<f32>, checked: bool| unsafe {
        k.launch(&s0)
            .grid(n.div_ceil(256) as u32)
            .block(256)
            .instrument(checked)
            .arg_mut(dy1)
            .arg(&dx0)
            .arg(&2.0f32)
            .arg(&(n as i32))
            .run()
    };

    // Before: refused, saying whether enabling would help.
    let e = launch_on_0(&mut dy1, false).unwrap_err();
    let expected = if can {
        PeerSupport::Possible
    } else {
        PeerSupport::Unsupported
    };
    assert!(
        matches!(&e, Error::Launch(l) if matches!(&l.kind, LaunchErrorKind::ForeignBuffer { peer, .. } if *peer == expected)),
        "{}",
        chain(&e)
    );
    match cudacheck::enable_peer_access(c0, c1) {
        Ok(()) => assert!(can, "enabled although cuDeviceCanAccessPeer says no"),
        Err(Error::PeerAccess(p)) if !can => {
            assert_eq!((p.from, p.to, p.driver.clone()), (0, 1, None));
            println!("measured: no peer access between device 0 and device 1: {p}");
            return;
        }
        Err(e) => panic!("{}", chain(&e)),
    }
    // Enabling twice is not an error.
    cudacheck::enable_peer_access(c0, c1).unwrap_or_else(|e| panic!("{}", chain(&e)));

    // Now a kernel on device 0 reads and writes device 1's memory, plain and bounds-checked.
    for checked in [false, true] {
        s1.memcpy_htod(&padded(&y, pad), &mut dy1).unwrap();
        launch_on_0(&mut dy1, checked).unwrap_or_else(|e| panic!("{}", chain(&e)));
        let got = s1.clone_dtoh(&dy1).unwrap();
        for i in 0..n {
            assert_eq!(got[i], 2.0 * x[i] + y[i], "checked: {checked}, y[{i}]");
        }
        assert!(got[n..].iter().all(|v| v.is_nan()), "wrote past n");
    }
    println!("measured: device 0 ran saxpy on a buffer of device 1 after enable_peer_access");

    // A peer buffer is bounds-checked against its own length: a view of n - 1 elements.
    s1.memcpy_htod(&padded(&y, pad), &mut dy1).unwrap();
    let short = n - 1;
    let mut view = dy1.slice_mut(..short);
    let n_i32 = n as i32;
    let mut launch = k.launch(&s0);
    launch
        .grid(n.div_ceil(256) as u32)
        .block(256)
        .instrument(true)
        .arg_mut(&mut view)
        .arg(&dx0)
        .arg(&2.0f32)
        .arg(&n_i32);
    #[rustfmt::skip]
    let (r, line) = (unsafe { launch.run() }, line!());
    let e = r.unwrap_err();
    let Error::OutOfBounds(o) = &e else {
        panic!("{}", chain(&e))
    };
    assert_eq!(&*o.kernel, "saxpy");
    assert_eq!(o.site.line(), line);
    assert_eq!(o.buffer, "y", "{e}");
    assert_eq!((o.index, o.len), (short as i64, short as u64), "{e}");
    // y[i] = a * x[i] + y[i] reads y[i] first.
    assert_eq!(o.access, FaultKind::Read, "{e}");
    let (b, t) = ((short / 256) as u32, (short % 256) as u32);
    assert_eq!((o.block.x, o.thread.x), (b, t), "{e}");
    // Thread `short` alone runs past the view, with a read and then a write of y[short].
    assert_eq!(o.count, 2, "{e}");
    let got = s1.clone_dtoh(&dy1).unwrap();
    assert_eq!(got[short], y[short], "the write past the view was dropped");
    assert_eq!(got[short - 1], 2.0 * x[short - 1] + y[short - 1]);

    // Peer access is one way: device 1 still may not use device 0's buffers.
    let mut y0 = cudacheck::alloc_copy(&s0, &vec![0.0f32; n]).unwrap();
    let dx1 = cudacheck::alloc_copy(&s1, &x).unwrap();
    let e = unsafe {
        k.launch(&s1)
            .grid(n.div_ceil(256) as u32)
            .block(256)
            .arg_mut(&mut y0)
            .arg(&dx1)
            .arg(&2.0f32)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(&e, Error::Launch(l) if matches!(&l.kind, LaunchErrorKind::ForeignBuffer { buffer_device: 0, stream_device: 1, .. })),
        "{}",
        chain(&e)
    );
}

// ---- a sticky fault on device 1 ------------------------------------------------------------

const PLANTED: &str = r#"
extern "C" __global__ void fill(float* out, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}
extern "C" __global__ void oob_write(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // 2^38 floats = 1 TiB past the buffer: no allocation is there.
    if (i < n) out[i + (1ll << 38)] = 1.0f;
}
"#;

/// A plain kernel that does not wait (a release build's launch): its fault surfaces later.
fn release_kernel(name: &str) -> Kernel {
    Kernel::new(CudaSource::from_str("planted.cu", PLANTED), name)
        .instrument(false)
        .sync(false)
        .build()
}

#[test]
fn gpu_sticky_fault_on_device_1_is_named_on_both_devices() {
    let Some(streams) = gpus_or_skip(2) else {
        return;
    };
    child_passes("child_sticky_fault_on_device_1");
    // The fault died with the child: both devices work in this process.
    let k = saxpy();
    for s in &streams {
        saxpy_on(&k, s, 1.5, false).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn child_sticky_fault_on_device_1() {
    if !is_gpu_child() {
        return;
    }
    let streams = gpus_or_skip(2).expect("the parent checked for two GPUs");
    let (s0, s1) = (&streams[0], &streams[1]);
    let fill = release_kernel("fill");
    let oob = release_kernel("oob_write");
    let n = 256usize;
    let mut out0 = cudacheck::alloc_zeros::<f32>(s0, n).unwrap();
    let mut out1 = cudacheck::alloc_zeros::<f32>(s1, n).unwrap();

    // Device 0 launches first, without waiting: its launches are in device 0's ring only.
    let mut device0_lines = Vec::new();
    for _ in 0..3 {
        let n_i32 = n as i32;
        let mut launch = fill.launch(s0);
        launch
            .grid(1)
            .block(256)
            .arg_mut(&mut out0)
            .arg(&7.0f32)
            .arg(&n_i32);
        #[rustfmt::skip]
        let (r, line) = (unsafe { launch.run() }, line!());
        r.unwrap_or_else(|e| panic!("{}", chain(&e)));
        device0_lines.push(line);
    }
    // Device 1: a correct launch, then one writing 1 TiB past its buffer (a fault the driver
    // sees: the launch is plain). Release launches return at once.
    let fill_on_1 = |out1: &mut cudacheck::cudarc::driver::CudaSlice<f32>| unsafe {
        fill.launch(s1)
            .grid(1)
            .block(256)
            .arg_mut(out1)
            .arg(&1.0f32)
            .arg(&(n as i32))
            .run()
    };
    fill_on_1(&mut out1).unwrap_or_else(|e| panic!("{}", chain(&e)));
    let n_i32 = n as i32;
    let mut launch = oob.launch(s1);
    launch.grid(1).block(256).arg_mut(&mut out1).arg(&n_i32);
    #[rustfmt::skip]
    let (r, oob_line) = (unsafe { launch.run() }, line!());
    r.unwrap_or_else(|e| panic!("a release launch returns before the fault: {}", chain(&e)));

    // The fault surfaces on device 1, naming device 1's launches and stream only.
    let e = cudacheck::synchronize(s1).unwrap_err();
    let Error::AsyncFault {
        device,
        fault,
        stream,
        suspects,
        ..
    } = &e
    else {
        panic!("{}", chain(&e))
    };
    assert_eq!(*device, 1, "{e}");
    assert_eq!(fault.code, 700, "{e}");
    assert_eq!(*stream, s1.cu_stream() as u64);
    assert!(
        suspects
            .iter()
            .any(|r| &*r.kernel == "oob_write" && r.site.line() == oob_line),
        "{e}"
    );
    for r in suspects {
        assert_eq!(
            r.stream,
            s1.cu_stream() as u64,
            "a suspect of another stream: {r}"
        );
        assert!(
            !device0_lines.contains(&r.site.line()),
            "a launch of device 0 named as a suspect of device 1's fault: {r}"
        );
    }
    assert!(e.to_string().contains("on this stream"), "{e}");
    println!("device 1's fault: {e}");
    let e = cudacheck::check(s1).unwrap_err();
    assert!(
        matches!(&e, Error::ContextPoisoned { device: 1, first_fault, .. } if first_fault.code == 700),
        "{}",
        chain(&e)
    );
    assert!(cudacheck::is_poisoned(s1));
    let e = fill_on_1(&mut out1).unwrap_err();
    assert!(
        matches!(&e, Error::ContextPoisoned { device: 1, .. }),
        "{}",
        chain(&e)
    );

    // Device 0: what the driver does to the other device's context is measured here. cudacheck
    // itself never marks device 0 poisoned for device 1's fault.
    assert!(!cudacheck::is_poisoned(s0));
    let device0 = match cudacheck::synchronize(s0) {
        Ok(()) => device0_works(s0, &out0),
        Err(e) => {
            // The driver reported device 1's fault to device 0's context too. cudacheck must
            // say so: device 1's fault and suspects, never device 0's own launches.
            device0_names_device_1s_fault(&e, s1, oob_line, &device0_lines);
            // Every later call on device 0 answers the same.
            let again = cudacheck::alloc_zeros::<f32>(s0, 16).unwrap_err();
            device0_names_device_1s_fault(&again, s1, oob_line, &device0_lines);
            Err(e.to_string())
        }
    };
    match &device0 {
        Ok(()) => println!(
            "measured: after a sticky fault (CUDA_ERROR_ILLEGAL_ADDRESS) on device 1, device 0 \
             kept working in the same process: earlier output intact, new plain and \
             bounds-checked launches correct"
        ),
        Err(why) => println!(
            "measured: after a sticky fault on device 1, the driver failed device 0's next \
             synchronize with it too; cudacheck reported: {why}"
        ),
    }
    write_measurement(&device0);
}

/// Device 0's work after device 1's fault, when the driver let device 0 go on: the output of
/// its launches before the fault, and new plain and bounds-checked launches.
fn device0_works(
    s0: &Arc<CudaStream>,
    out0: &cudacheck::cudarc::driver::CudaSlice<f32>,
) -> Result<(), String> {
    let host = s0.clone_dtoh(out0).unwrap();
    assert!(
        host.iter().all(|&v| v == 7.0),
        "device 0's launches before the fault lost their output"
    );
    let k = saxpy();
    for (a, checked) in [(2.0, false), (3.0, true)] {
        saxpy_on(&k, s0, a, checked).unwrap_or_else(|e| panic!("{e}"));
    }
    cudacheck::check(s0).unwrap_or_else(|e| panic!("{}", chain(&e)));
    Ok(())
}

/// `e`, an error of device 0, is `ContextPoisoned` by device 1's fault, naming device 1's
/// launches (its `oob_write` among them) and none of device 0's.
fn device0_names_device_1s_fault(
    e: &Error,
    s1: &Arc<CudaStream>,
    oob_line: u32,
    device0_lines: &[u32],
) {
    let Error::ContextPoisoned {
        device,
        fault_device,
        first_fault,
        launch,
        suspects,
    } = e
    else {
        panic!("device 0: {}", chain(e))
    };
    assert_eq!((*device, *fault_device), (0, 1), "{e}");
    assert_eq!(first_fault.code, 700, "{e}");
    assert!(launch.is_none(), "{e}");
    assert!(
        suspects
            .iter()
            .any(|r| &*r.kernel == "oob_write" && r.site.line() == oob_line),
        "{e}"
    );
    for r in suspects {
        assert_eq!(r.stream, s1.cu_stream() as u64, "{e}");
        assert!(!device0_lines.contains(&r.site.line()), "{e}");
    }
    let text = e.to_string();
    assert!(
        text.contains("device 0 is poisoned by an earlier fault on device 1"),
        "{text}"
    );
}

/// `gpu_multi_sticky.json` under `CUDACHECK_RESULTS_DIR`, when set.
fn write_measurement(device0: &Result<(), String>) {
    let Ok(dir) = std::env::var("CUDACHECK_RESULTS_DIR") else {
        return;
    };
    let v = serde_json::json!({
        "test": "gpu_sticky_fault_on_device_1_is_named_on_both_devices",
        "fault": "CUDA_ERROR_ILLEGAL_ADDRESS (700) on device 1, plain kernel",
        "device1": "ContextPoisoned for the rest of the process",
        "device0_after": match device0 {
            Ok(()) => "works".to_string(),
            Err(why) => format!("fails: {why}"),
        },
    });
    let path = std::path::Path::new(&dir).join("gpu_multi_sticky.json");
    let _ = std::fs::create_dir_all(&dir);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
