//! GPU tier: behaviour on a driver older than cudarc's bindings, simulated on the GPU machine's
//! CUDA 13 driver with `CUDACHECK_SIMULATE_DRIVER_VERSION` (the driver's version as
//! `cuDriverGetVersion` writes it): entry points newer than that version are treated as
//! absent. The variable is read once per process, so this file's single test sets it before
//! cudacheck first touches the driver (each test file is a process of its own).

use cudacheck::nvrtc::CudaSource;
use cudacheck::{EntryPoint, Error, Kernel, LaunchErrorKind};
use cudacheck_tests::{chain, gpu_or_skip};

const SRC: &str = r#"
extern "C" __global__ void fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * i;
}
"#;

#[test]
fn gpu_simulated_old_driver_gives_typed_errors_and_runs_the_rest() {
    // CUDA 11.7: before cuLaunchKernelEx (11.8), cuStreamGetCaptureInfo_v3 (12.3) and
    // cuFuncGetParamInfo (12.4).
    // SAFETY (edition 2021: set_var is safe): no other thread of this process reads the
    // environment yet; this is the file's only test.
    std::env::set_var("CUDACHECK_SIMULATE_DRIVER_VERSION", "11070");
    let Some(stream) = gpu_or_skip() else { return };

    let report = cudacheck::nvrtc::doctor_report();
    let text = report.to_string();
    assert!(text.contains("CUDA driver: 11.7"), "{text}");
    assert!(text.contains("no cuLaunchKernelEx"), "{text}");
    assert!(text.contains("no cuFuncGetParamInfo"), "{text}");

    let fill = Kernel::new(CudaSource::from_str("old.cu", SRC), "fill")
        .instrument(false)
        .sync(true)
        .build();
    let n = 1000usize;
    let mut out = cudacheck::alloc_copy(&stream, &vec![f32::NAN; n]).unwrap();
    // A plain launch needs nothing new: it runs (and its debug sync asks the older capture
    // query, cuStreamGetCaptureInfo_v2).
    unsafe {
        fill.launch(&stream)
            .grid(4)
            .block(256)
            .arg_mut(&mut out)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let host = stream.clone_dtoh(&out).unwrap();
    assert!(host.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32));

    // A cluster launch needs cuLaunchKernelEx: a typed error naming it and the version, before
    // the driver is asked anything.
    let e = unsafe {
        fill.launch(&stream)
            .grid(4)
            .block(256)
            .cluster((2, 1, 1))
            .arg_mut(&mut out)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_err();
    let Error::Launch(l) = &e else {
        panic!("expected a launch error, got {}", chain(&e));
    };
    let LaunchErrorKind::DriverTooOld(m) = &l.kind else {
        panic!("expected DriverTooOld, got {:?}", l.kind);
    };
    assert_eq!(m.entry, EntryPoint::LaunchKernelEx);
    let text = e.to_string();
    assert!(
        text.contains("`cuLaunchKernelEx` (CUDA 11.8 or newer)"),
        "{text}"
    );
    assert!(text.contains("this driver is CUDA 11.7"), "{text}");
    assert!(text.contains("or launch without a cluster"), "{text}");

    // A function the application loaded, with no cuFuncGetParamInfo: launches run without
    // the argument checks (its attributes still validate the configuration).
    let ctx = stream.context().clone();
    let compiled = cudacheck::nvrtc::compile(
        &CudaSource::from_str("old.cu", SRC),
        &cudacheck::nvrtc::CompileOptions::new({
            let (ma, mi) = ctx.compute_capability().unwrap();
            cudacheck::core::Arch::new(ma as u32, mi as u32)
        }),
    )
    .unwrap();
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .unwrap();
    let f = module.load_function("fill").unwrap();
    let app = Kernel::from_function(&ctx, f, "fill").unwrap();
    let info = app.load(&stream).unwrap();
    assert!(
        info.resources.params.is_empty(),
        "no parameter list without cuFuncGetParamInfo"
    );
    let mut out2 = cudacheck::alloc_copy(&stream, &vec![f32::NAN; n]).unwrap();
    unsafe {
        app.launch(&stream)
            .grid(4)
            .block(256)
            .sync(true)
            .arg_mut(&mut out2)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert_eq!(stream.clone_dtoh(&out2).unwrap(), host);
    let e = unsafe {
        app.launch(&stream)
            .grid(1)
            .block(2048)
            .arg_mut(&mut out2)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_err();
    assert!(e.to_string().contains("2048 threads"), "{e}");
}
