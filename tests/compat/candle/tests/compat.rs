//! cudacheck inside a crate with candle's cudarc line (see Cargo.toml): the pure and NVRTC
//! tiers of `../../common.rs`, and on a GPU a checked launch between candle-style raw cudarc
//! launches (PTX loaded with `load_module`, launched with `launch_builder`), all sharing one
//! `CudaContext`, `CudaStream` and the same `CudaSlice`s.

#[path = "../../common.rs"]
mod common;

use cudacheck::core::Arch;
use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

common::fixture_tests!();

#[test]
fn gpu_checked_and_raw_cudarc_launches_share_context_stream_and_buffers() {
    let test = "gpu_checked_and_raw_cudarc_launches_share_context_stream_and_buffers";
    let Some(stream) = common::gpu_stream(test) else {
        return;
    };
    let ctx = stream.context().clone();
    // candle's way: PTX made ahead of time (candle's build script runs nvcc; here cudacheck's
    // NVRTC), loaded and launched by raw cudarc.
    let mut opts = CompileOptions::new(Arch::new(9, 0));
    opts.ptx = true;
    let ptx = compile(&CudaSource::from_str("saxpy.cu", common::SAXPY_CU), &opts)
        .expect("NVRTC")
        .ptx
        .expect("PTX was asked for");
    let module = ctx.load_module(Ptx::from_src(ptx)).expect("load_module");
    let raw = module.load_function("saxpy").expect("load_function");

    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let dx = stream.clone_htod(&x).expect("copy x");
    let mut dy = stream.clone_htod(&y0).expect("copy y");
    let raw_saxpy = |dy: &mut cudarc::driver::CudaSlice<f32>, a: f32| {
        let n_arg = n as i32;
        let mut b = stream.launch_builder(&raw);
        b.arg(dy).arg(&dx).arg(&a).arg(&n_arg);
        // SAFETY: saxpy touches x[i], y[i] for i < n, and both hold n elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.expect("raw launch");
    };
    raw_saxpy(&mut dy, 2.0);
    common::gpu_checked_saxpy(&stream, &mut dy, &dx, 3.0, n).unwrap_or_else(|e| panic!("{e}"));
    raw_saxpy(&mut dy, 0.5);
    let y = stream.clone_dtoh(&dy).expect("copy back");
    for i in 0..n {
        // Every product and sum is exact in f32 (small multiples of 0.25).
        let want = ((y0[i] + 2.0 * x[i]) + 3.0 * x[i]) + 0.5 * x[i];
        assert_eq!(y[i], want, "element {i}");
    }
    common::gpu_bad_block_is_typed(&stream);
    // The context is still healthy for raw cudarc after cudacheck refused a launch.
    raw_saxpy(&mut dy, 1.0);
    stream.synchronize().expect("raw cudarc after the refusal");
}
