//! GPU tier: the launch-time runtime against a real device.
//!
//! Every test starts with [`gpu_or_skip`]: without a driver or a GPU it prints
//! `skipped (GPU tier): <reason>` and passes (unless `CUDACHECK_REQUIRE_GPU=1`).
//!
//! # Poisoning tests run in child processes
//!
//! A sticky fault (out-of-bounds write, failed device `assert`) poisons the device's primary
//! context for the whole process, and the tests of this binary share that context on parallel
//! threads. So each poisoning test is split in two: `gpu_<name>` spawns this test binary again
//! running only `child_<name>` with `CUDACHECK_GPU_CHILD=1`, and asserts that the child passed;
//! `child_<name>` does the real work and assertions, and returns at once when the variable is
//! not set (so a normal run does not execute it in-process).
//!
//! Child processes are also the only recovery that works on the drivers tested: NVIDIA keeps a
//! sticky fault for the life of the process, and `cudacheck::recover` reports that as
//! `Error::Unrecoverable` (its test accepts a working reset too, and then launches on it).
//!
//! Every kernel writes into outputs poisoned beforehand (NaN or a sentinel) and is compared
//! with a CPU reference; every planted mistake asserts the error variant and the words a
//! person reads.

use std::sync::Arc;

use cudacheck::core::validate::{occupancy, Violation};
use cudacheck::core::Axis;
use cudacheck::cudarc::driver::{CudaContext, CudaStream};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel, LaunchErrorKind};
use cudacheck_tests::{
    chain, child_passes, gpu_or_skip, is_gpu_child, kernel_files, kernel_source, launch_kind,
};

/// Small kernels for planted mistakes.
const PLANTED: &str = r#"
#include <assert.h>
extern "C" __global__ void fill(float* out, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}
extern "C" __global__ void __launch_bounds__(128) bounded(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)i;
}
extern "C" __global__ void dyn_shared(float* out, int n) {
    extern __shared__ float s[];
    int words = 64 * 1024 / 4;
    for (int j = threadIdx.x; j < words; j += blockDim.x) s[j] = (float)j;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = s[words - 1 - threadIdx.x];
}
extern "C" __global__ void oob_write(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // 2^38 floats = 1 TiB past the buffer: no allocation is there.
    if (i < n) out[i + (1ll << 38)] = 1.0f;
}
extern "C" __global__ void boom(int x) {
    assert(x == 0);
}
"#;

// These tests are about plain launches (faults that reach the driver, exact resources), so
// bounds checking, on by default in debug builds, is turned off (tests/tests/gpu_instrument.rs
// covers it).
fn planted(name: &str) -> Kernel {
    Kernel::new(CudaSource::from_str("planted.cu", PLANTED), name)
        .instrument(false)
        .sync(true)
        .build()
}

fn violations(e: &Error) -> &[Violation] {
    match launch_kind(e) {
        LaunchErrorKind::InvalidConfig { violations } => violations,
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

/// `fill` with `n` outputs, checked: every element set to `v`, the tail sentinel untouched.
fn fill_and_check(stream: &Arc<CudaStream>, v: f32) {
    let fill = planted("fill");
    let n = 1000usize;
    let mut out = cudacheck::alloc_copy(stream, &vec![f32::NAN; n + 24]).unwrap();
    unsafe {
        fill.launch(stream)
            .grid(4)
            .block(256)
            .arg_mut(&mut out)
            .arg(&v)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let host = stream.clone_dtoh(&out).unwrap();
    assert!(host[..n].iter().all(|&x| x == v), "fill wrote wrong values");
    assert!(host[n..].iter().all(|x| x.is_nan()), "fill wrote past n");
}

#[test]
fn gpu_saxpy_matches_the_cpu() {
    let Some(stream) = gpu_or_skip() else { return };
    let saxpy = Kernel::new(kernel_source("saxpy.cu"), "saxpy").build();
    let n = 100_003usize;
    let pad = 77;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n + pad)
        .map(|i| if i < n { (i % 13) as f32 } else { -12345.0 })
        .collect();
    let a = 2.5f32;
    let dx = cudacheck::alloc_copy(&stream, &x).unwrap();
    let mut dy = cudacheck::alloc_copy(&stream, &y0).unwrap();
    unsafe {
        saxpy
            .launch(&stream)
            .grid((n as u32).div_ceil(256))
            .block(256)
            .arg_mut(&mut dy)
            .arg(&dx)
            .arg(&a)
            .arg(&(n as i32))
            .sync(true)
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let y = stream.clone_dtoh(&dy).unwrap();
    for i in 0..n {
        assert_eq!(y[i], a * x[i] + y0[i], "element {i}");
    }
    assert!(y[n..].iter().all(|&v| v == -12345.0), "saxpy wrote past n");

    let info = saxpy.load(&stream).unwrap();
    assert_eq!(info.symbol, "saxpy");
    assert_eq!(info.resources.params.len(), 4);
    assert_eq!(
        info.arch.major as i32,
        stream.context().compute_capability().unwrap().0
    );
}

#[test]
fn gpu_zero_block_is_refused_and_the_context_stays_healthy() {
    let Some(stream) = gpu_or_skip() else { return };
    let fill = planted("fill");
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 16).unwrap();
    let e = unsafe {
        fill.launch(&stream)
            .grid(1)
            .block(0)
            .arg_mut(&mut out)
            .arg(&1.0f32)
            .arg(&16i32)
            .run()
    }
    .unwrap_err();
    let v = violations(&e);
    assert!(
        matches!(v[0], Violation::ZeroExtent { axis: Axis::X, .. }),
        "{v:?}"
    );
    let text = e.to_string();
    assert!(text.starts_with("kernel `fill` launched at "), "{text}");
    assert!(text.contains("gpu_runtime.rs"), "{text}");
    assert!(text.contains("block (0, 1, 1) is 0 along x"), "{text}");
    // Nothing reached the GPU: the context is healthy and a good launch works.
    cudacheck::check(&stream).unwrap();
    fill_and_check(&stream, 3.0);
}

#[test]
fn gpu_grid_y_too_big() {
    let Some(stream) = gpu_or_skip() else { return };
    let fill = planted("fill");
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 16).unwrap();
    let e = unsafe {
        fill.launch(&stream)
            .grid((1, 70_000, 1))
            .block(32)
            .arg_mut(&mut out)
            .arg(&1.0f32)
            .arg(&16i32)
            .run()
    }
    .unwrap_err();
    let v = violations(&e);
    assert!(
        matches!(
            v[0],
            Violation::GridDimTooLarge {
                axis: Axis::Y,
                requested: 70_000,
                allowed: 65_535,
                ..
            }
        ),
        "{v:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y"),
        "{text}"
    );
    assert!(
        text.contains("device 0 ("),
        "limits name the device: {text}"
    );
    cudacheck::check(&stream).unwrap();
}

#[test]
fn gpu_2048_threads_per_block() {
    let Some(stream) = gpu_or_skip() else { return };
    let fill = planted("fill");
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 16).unwrap();
    let e = unsafe {
        fill.launch(&stream)
            .grid(1)
            .block((32, 64, 1))
            .arg_mut(&mut out)
            .arg(&1.0f32)
            .arg(&16i32)
            .run()
    }
    .unwrap_err();
    let v = violations(&e);
    assert!(
        v.iter().any(|x| matches!(
            x,
            Violation::TooManyThreadsPerBlock {
                requested: 2048,
                allowed: 1024,
                ..
            }
        )),
        "{v:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("block (32, 64, 1) has 2048 threads"),
        "{text}"
    );
    assert!(
        text.contains("Use fewer threads per block and more blocks"),
        "{text}"
    );
}

#[test]
fn gpu_registers_times_threads_too_many() {
    let Some(stream) = gpu_or_skip() else { return };
    let nbody = Kernel::new(kernel_source("nbody.cu"), "nbody_accel")
        .instrument(false)
        .build();
    let info = nbody.load(&stream).unwrap();
    let regs = info.attributes.num_regs;
    let n = 1024usize;
    let mut accel = cudacheck::alloc_zeros::<[f32; 4]>(&stream, n).unwrap();
    let pos = cudacheck::alloc_zeros::<[f32; 4]>(&stream, n).unwrap();
    let r = unsafe {
        nbody
            .launch(&stream)
            .grid(1)
            .block(1024)
            .arg_mut(&mut accel)
            .arg(&pos)
            .arg(&(n as i32))
            .arg(&0.01f32)
            .run()
    };
    // The registers are what NVRTC chose; assert the rule, with the device's own numbers.
    if regs > 64 {
        let e = r.unwrap_err();
        let v = violations(&e);
        assert!(
            v.iter()
                .any(|x| matches!(x, Violation::TooManyRegistersPerBlock { threads: 1024, .. })),
            "{v:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains(&format!("{regs} registers per thread x 1024 threads")),
            "{text}"
        );
        assert!(
            text.contains("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "The largest block that fits is {} threads",
                info.attributes.max_threads_per_block
            )),
            "the offline maximum equals the driver's: {text}"
        );
    } else {
        r.unwrap_or_else(|e| panic!("{regs} registers fit 1024 threads: {}", chain(&e)));
    }
}

#[test]
fn gpu_dynamic_shared_64k_needs_opt_in() {
    let Some(stream) = gpu_or_skip() else { return };
    let n = 256usize;
    // Refused when opting in is disabled.
    let strict = Kernel::new(CudaSource::from_str("planted.cu", PLANTED), "dyn_shared")
        .shared_opt_in(false)
        .sync(true)
        .build();
    let mut out = cudacheck::alloc_copy(&stream, &vec![f32::NAN; n]).unwrap();
    let e = unsafe {
        strict
            .launch(&stream)
            .grid(1)
            .block(256)
            .shared_bytes(64 * 1024)
            .arg_mut(&mut out)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_err();
    let v = violations(&e);
    assert!(
        matches!(
            v[0],
            Violation::SharedMemoryNeedsOptIn {
                dynamic_bytes: 65_536,
                allowed: 49_152,
                ..
            }
        ),
        "{v:?}"
    );
    assert!(
        e.to_string()
            .contains("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"),
        "{e}"
    );
    // Works once cudacheck may opt in (the default).
    let k = planted("dyn_shared");
    unsafe {
        k.launch(&stream)
            .grid(1)
            .block(256)
            .shared_bytes(64 * 1024)
            .arg_mut(&mut out)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let host = stream.clone_dtoh(&out).unwrap();
    let words = 64 * 1024 / 4;
    for (t, &x) in host.iter().enumerate() {
        assert_eq!(x, (words - 1 - t) as f32, "thread {t}");
    }
}

#[test]
fn gpu_static_shared_over_48k_is_a_compile_error() {
    let Some(stream) = gpu_or_skip() else { return };
    let src = r#"extern "C" __global__ void big(float* out) {
        __shared__ float s[16384];
        s[threadIdx.x] = 1.0f; __syncthreads();
        out[threadIdx.x] = s[(threadIdx.x + 1) % 16384];
    }"#;
    let k = Kernel::new(CudaSource::from_str("big.cu", src), "big").build();
    let e = k.load(&stream).unwrap_err();
    assert!(matches!(e, Error::Compile { .. }), "{}", chain(&e));
    let text = chain(&e);
    assert!(text.contains("could not compile kernel `big`"), "{text}");
    assert!(text.contains("too much shared data"), "{text}");
}

#[test]
fn gpu_launch_bounds_exceeded() {
    let Some(stream) = gpu_or_skip() else { return };
    let k = planted("bounded");
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 256).unwrap();
    let e = unsafe {
        k.launch(&stream)
            .grid(1)
            .block(256)
            .arg_mut(&mut out)
            .arg(&256i32)
            .run()
    }
    .unwrap_err();
    let v = violations(&e);
    assert!(
        v.iter().any(|x| matches!(
            x,
            Violation::LaunchBoundsExceeded {
                requested: 256,
                allowed: 128,
                ..
            }
        )),
        "{v:?}"
    );
    assert!(e.to_string().contains("__launch_bounds__(128)"), "{e}");
    let info = k.load(&stream).unwrap();
    assert_eq!(info.attributes.max_threads_per_block, 128);
}

#[test]
fn gpu_wrong_arg_count() {
    let Some(stream) = gpu_or_skip() else { return };
    let saxpy = Kernel::new(kernel_source("saxpy.cu"), "saxpy").build();
    let mut y = cudacheck::alloc_zeros::<f32>(&stream, 256).unwrap();
    let x = cudacheck::alloc_zeros::<f32>(&stream, 256).unwrap();
    let e = unsafe {
        saxpy
            .launch(&stream)
            .grid(1)
            .block(256)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&2.0f32)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(
            launch_kind(&e),
            LaunchErrorKind::ArgCount {
                expected: 4,
                given: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("3 arguments were passed but the kernel takes 4 parameters"),
        "{e}"
    );
    // A wrong size: a double where the kernel takes a float.
    let e = unsafe {
        saxpy
            .launch(&stream)
            .grid(1)
            .block(256)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&2.0f64)
            .arg(&256i32)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(
            launch_kind(&e),
            LaunchErrorKind::ArgSize {
                index: 2,
                given_bytes: 8,
                expected_bytes: 4,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("argument 2 is 8 bytes (f64)"), "{e}");
}

#[test]
fn gpu_buffer_from_another_context() {
    let Some(stream) = gpu_or_skip() else { return };
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let other_stream = other.default_stream();
    let mut foreign = other_stream.alloc_zeros::<f32>(256).unwrap();
    let fill = planted("fill");
    let e = unsafe {
        fill.launch(&stream)
            .grid(1)
            .block(256)
            .arg_mut(&mut foreign)
            .arg(&1.0f32)
            .arg(&256i32)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(
            launch_kind(&e),
            LaunchErrorKind::ForeignBuffer {
                index: 0,
                buffer_device: 0,
                stream_device: 0,
                same_device: true,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("argument 0 (`out`) is a buffer of device 0 in a different context"),
        "{e}"
    );
    drop(foreign);
    drop(other_stream);
    drop(other);
    fill_and_check(&stream, 5.0);
}

#[test]
fn gpu_requires_violated() {
    let Some(stream) = gpu_or_skip() else { return };
    let fill = planted("fill");
    let mut out = cudacheck::alloc_copy(&stream, &[f32::NAN; 8]).unwrap();
    let n = 100i32;
    let len = out.len();
    let e = unsafe {
        fill.launch(&stream)
            .grid(1)
            .block(128)
            .require(len >= n as usize, "out.len() >= n as usize")
            .arg_mut(&mut out)
            .arg(&1.0f32)
            .arg(&n)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::RequirementFailed {
                clause: "out.len() >= n as usize",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("requirement `out.len() >= n as usize` does not hold"),
        "{e}"
    );
    // Nothing ran: the buffer keeps its poison.
    let host = stream.clone_dtoh(&out).unwrap();
    assert!(host.iter().all(|x| x.is_nan()));
}

#[test]
fn gpu_out_of_memory_says_how_much() {
    let Some(stream) = gpu_or_skip() else { return };
    let e = cudacheck::alloc_zeros::<u8>(&stream, 1 << 50).unwrap_err();
    let Error::OutOfMemory {
        requested,
        free,
        total,
        ..
    } = &e
    else {
        panic!("{}", chain(&e))
    };
    assert_eq!(*requested, 1 << 50);
    assert!(*free <= *total && *total > 0);
    let text = e.to_string();
    assert!(
        text.contains("asked for 1125899906842624 bytes (1.0 PiB)"),
        "{text}"
    );
    assert!(
        text.contains("more than the device's entire memory"),
        "{text}"
    );
    fill_and_check(&stream, 7.0);
}

#[test]
fn gpu_clusters_on_sm90() {
    let Some(stream) = gpu_or_skip() else { return };
    let (major, _) = stream.context().compute_capability().unwrap();
    let fill = planted("fill");
    let n = 1024usize;
    let mut out = cudacheck::alloc_copy(&stream, &vec![f32::NAN; n]).unwrap();
    let r = unsafe {
        fill.launch(&stream)
            .grid(4)
            .block(256)
            .cluster(2)
            .arg_mut(&mut out)
            .arg(&9.0f32)
            .arg(&(n as i32))
            .run()
    };
    if major < 9 {
        let e = r.unwrap_err();
        assert!(matches!(
            violations(&e)[0],
            Violation::ClustersUnsupported { .. }
        ));
        return;
    }
    r.unwrap_or_else(|e| panic!("{}", chain(&e)));
    let host = stream.clone_dtoh(&out).unwrap();
    assert!(host.iter().all(|&x| x == 9.0));
    let e = unsafe {
        fill.launch(&stream)
            .grid(5)
            .block(256)
            .cluster(2)
            .arg_mut(&mut out)
            .arg(&9.0f32)
            .arg(&(n as i32))
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(
            violations(&e)[0],
            Violation::GridNotClusterMultiple { axis: Axis::X, .. }
        ),
        "{e}"
    );
}

/// Every kernel of `kernels/` by name (name expressions for templates), on the device's arch.
const KERNELS: &[(&str, &str)] = &[
    ("histogram.cu", "histogram256"),
    ("matmul.cu", "matmul_tiled"),
    ("nbody.cu", "nbody_accel"),
    ("reduce.cu", "reduce_sum"),
    ("saxpy.cu", "saxpy"),
    ("scale.cu", "scale<float>"),
    ("scale.cu", "scale<__half>"),
    ("softmax.cu", "softmax_rows"),
    ("stencil2d.cu", "stencil2d"),
    ("transpose.cu", "transpose"),
    ("window_median.cu", "window_median"),
];

#[test]
fn gpu_offline_numbers_equal_the_drivers() {
    let Some(stream) = gpu_or_skip() else { return };
    for file in kernel_files() {
        assert!(
            KERNELS.iter().any(|(f, _)| *f == file),
            "kernels/{file} is not in KERNELS; add its kernels"
        );
    }
    let mut checked = 0;
    for &(file, name) in KERNELS {
        let k = Kernel::new(kernel_source(file), name).build();
        let info = k
            .load(&stream)
            .unwrap_or_else(|e| panic!("{file} {name}: {}", chain(&e)));
        let r = &info.resources;
        let a = &info.attributes;
        assert_eq!(r.registers, a.num_regs, "{name}: registers");
        assert_eq!(
            r.static_shared_bytes, a.shared_size_bytes,
            "{name}: static shared"
        );
        assert_eq!(r.local_bytes, a.local_size_bytes, "{name}: local bytes");
        assert_eq!(
            info.max_threads_per_block, a.max_threads_per_block,
            "{name}: max threads per block"
        );
        for block in [32u32, 128, 256, 512, 1024] {
            if block > a.max_threads_per_block {
                continue;
            }
            let offline = occupancy(r, block, 0, &info.limits).blocks_per_sm;
            let device = k.device_occupancy(&stream, block, 0).unwrap();
            assert_eq!(offline, device, "{name}: blocks per SM at {block} threads");
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} occupancy comparisons ran");
}

// ---- poisoning tests: each runs in a child process ------------------------------------------

fn in_child(test: &str) {
    if gpu_or_skip().is_some() {
        child_passes(test);
    }
}

#[test]
fn gpu_out_of_bounds_in_debug_names_the_launch() {
    in_child("child_out_of_bounds_debug");
}

#[test]
fn child_out_of_bounds_debug() {
    if !is_gpu_child() {
        return;
    }
    let stream = gpu_or_skip().expect("the parent checked for a GPU");
    let k = planted("oob_write");
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 256).unwrap();
    let mut launch = k.launch(&stream);
    launch.grid(1).block(256).arg_mut(&mut out).arg(&256i32);
    #[rustfmt::skip]
    let (result, line) = (unsafe { launch.run() }, line!());
    let e = result.unwrap_err();
    let Error::Fault {
        kernel,
        site,
        fault,
        ..
    } = &e
    else {
        panic!("{}", chain(&e))
    };
    assert_eq!(&**kernel, "oob_write");
    assert_eq!(site.line(), line, "the Rust launch site");
    assert_eq!(fault.name, "CUDA_ERROR_ILLEGAL_ADDRESS");
    let text = chain(&e);
    assert!(text.contains("kernel `oob_write` launched at "), "{text}");
    assert!(text.contains("outside any allocation"), "{text}");
    // Every later call names the first fault and its launch.
    let e = cudacheck::check(&stream).unwrap_err();
    let Error::ContextPoisoned {
        first_fault,
        launch,
        ..
    } = &e
    else {
        panic!("{}", chain(&e))
    };
    assert_eq!(first_fault.code, 700);
    assert_eq!(launch.as_ref().map(|l| &*l.kernel), Some("oob_write"));
    assert!(e.to_string().contains("raised by launch #"), "{e}");
    assert!(cudacheck::is_poisoned(&stream));
}

#[test]
fn gpu_out_of_bounds_in_release_names_the_recent_launches() {
    in_child("child_out_of_bounds_release");
}

#[test]
fn child_out_of_bounds_release() {
    if !is_gpu_child() {
        return;
    }
    let stream = gpu_or_skip().expect("the parent checked for a GPU");
    let fill = Kernel::new(CudaSource::from_str("planted.cu", PLANTED), "fill")
        .instrument(false)
        .sync(false)
        .build();
    let oob = Kernel::new(CudaSource::from_str("planted.cu", PLANTED), "oob_write")
        .instrument(false)
        .sync(false)
        .build();
    let mut out = cudacheck::alloc_zeros::<f32>(&stream, 256).unwrap();
    let launch_fill = |out: &mut cudacheck::cudarc::driver::CudaSlice<f32>| unsafe {
        fill.launch(&stream)
            .grid(1)
            .block(256)
            .arg_mut(out)
            .arg(&1.0f32)
            .arg(&256i32)
            .run()
    };
    launch_fill(&mut out).unwrap();
    // Release mode does not wait: the faulting launch itself returns Ok.
    unsafe {
        oob.launch(&stream)
            .grid(1)
            .block(256)
            .arg_mut(&mut out)
            .arg(&256i32)
            .run()
    }
    .unwrap();
    // The fault surfaces at a later cudacheck call: a launch or the explicit synchronize.
    let e = match launch_fill(&mut out) {
        Err(e) => e,
        Ok(()) => cudacheck::synchronize(&stream).unwrap_err(),
    };
    let Error::AsyncFault {
        fault, suspects, ..
    } = &e
    else {
        panic!("{}", chain(&e))
    };
    assert_eq!(fault.code, 700);
    assert!(
        suspects.iter().any(|s| &*s.kernel == "oob_write"),
        "{suspects:?}"
    );
    let text = e.to_string();
    assert!(text.contains("`oob_write` at "), "{text}");
    assert!(text.contains("CUDACHECK_SYNC=1"), "{text}");
    let e = launch_fill(&mut out).unwrap_err();
    assert!(matches!(e, Error::ContextPoisoned { .. }), "{}", chain(&e));
}

#[test]
fn gpu_device_assert_poisons_and_recover_works() {
    in_child("child_device_assert_and_recover");
    // The fault died with the child: this process's context, and the device, work.
    if let Some(stream) = gpu_or_skip() {
        fill_and_check(&stream, 13.0);
    }
}

#[test]
fn child_device_assert_and_recover() {
    if !is_gpu_child() {
        return;
    }
    let stream = gpu_or_skip().expect("the parent checked for a GPU");
    let boom = planted("boom");
    let e = unsafe { boom.launch(&stream).grid(1).block(1).arg(&1i32).run() }.unwrap_err();
    let Error::Fault { kernel, fault, .. } = &e else {
        panic!("{}", chain(&e))
    };
    assert_eq!(&**kernel, "boom");
    assert_eq!(fault.name, "CUDA_ERROR_ASSERT");
    assert!(
        chain(&e).contains("device-side assert() failed"),
        "{}",
        chain(&e)
    );

    // The next call on the context is refused, naming the first fault: here an allocation.
    let e = cudacheck::alloc_zeros::<f32>(&stream, 16).unwrap_err();
    let Error::ContextPoisoned {
        first_fault,
        launch,
        ..
    } = &e
    else {
        panic!("{}", chain(&e))
    };
    assert_eq!(first_fault.code, 710);
    assert_eq!(launch.as_ref().map(|l| &*l.kernel), Some("boom"));
    let text = e.to_string();
    assert!(text.contains("raised by launch #1 of `boom`"), "{text}");
    assert!(text.contains("must be restarted"), "{text}");
    // A launch is refused the same way, before reaching the driver.
    let fill = planted("fill");
    let e = unsafe { fill.launch(&stream).grid(1).block(16).arg(&1.0f32).run() }.unwrap_err();
    assert!(matches!(e, Error::ContextPoisoned { .. }), "{}", chain(&e));

    // No buffers of the old context are left: try the reset. NVIDIA documents these faults
    // as lasting for the process; the drivers tested (580.x) keep them even in a new context.
    match cudacheck::recover(&stream) {
        Ok(fresh) => {
            assert!(!cudacheck::is_poisoned(&fresh));
            fill_and_check(&fresh, 11.0);
            cudacheck::check(&fresh).unwrap();
        }
        Err(e) => {
            let Error::Unrecoverable { still, device: 0 } = &e else {
                panic!("{}", chain(&e))
            };
            assert_eq!(still.code, 710);
            let text = e.to_string();
            assert!(text.contains("terminated and relaunched"), "{text}");
            assert!(text.contains("child process"), "{text}");
        }
    }
}

/// A release launch does not ask the driver which context is current (`launch_bound` in
/// `cudacheck/src/launch/mod.rs`): it launches, and binds the stream's context only when the
/// driver refuses the launch for want of it. That is sound only if the driver, when the
/// stream's context is not current, either refuses the launch and runs nothing or runs it in
/// the stream's context; this pins both for raw `cuLaunchKernel` (no context current, and
/// another context current), and that a cudacheck launch from either state runs the kernel.
#[test]
fn gpu_launch_binds_the_context_when_another_is_current() {
    use cudacheck::cudarc::driver::{sys, CudaSlice, DevicePtrMut};
    use cudarc::nvrtc::Ptx;
    let Some(stream) = gpu_or_skip() else { return };
    let ctx = stream.context().clone();
    let (major, minor) = ctx.compute_capability().unwrap();
    let arch = cudacheck::core::Arch::new(major as u32, minor as u32);
    let source = CudaSource::from_str("planted.cu", PLANTED);
    let compiled = cudacheck::nvrtc::compile(&source, &cudacheck::nvrtc::CompileOptions::new(arch))
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let module = ctx
        .load_module(Ptx::from_binary(compiled.cubin.clone()))
        .unwrap();
    let raw_fill = module.load_function("fill").unwrap();
    let n = 256usize;
    let mut out = cudacheck::alloc_copy(&stream, &vec![f32::NAN; n]).unwrap();
    // Creating a context pushes it on this thread's stack, above the primary one.
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let current = || {
        let mut c: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `c` is a valid out-pointer.
        assert_eq!(
            unsafe { sys::cuCtxGetCurrent(&mut c) },
            sys::CUresult::CUDA_SUCCESS
        );
        c
    };
    // No context current: pop the stack empty (`cuCtxSetCurrent(NULL)` pops its top).
    let none_current = || {
        for _ in 0..16 {
            if current().is_null() {
                return;
            }
            // SAFETY: popping this thread's stack is always allowed.
            unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) };
        }
        panic!("the context stack did not empty");
    };
    let other_current = || {
        // SAFETY: `other` is alive until the end of the test.
        unsafe { sys::cuCtxSetCurrent(other.cu_ctx()) };
        assert_eq!(current(), other.cu_ctx());
    };
    // A raw `fill(out, v, n)`, then what it did, seen from the stream's context.
    let raw_launch = |out: &mut CudaSlice<f32>, v: f32| -> sys::CUresult {
        let (ptr, _sync) = out.device_ptr_mut(&stream);
        let (mut p, mut v, mut k) = (ptr, v, n as i32);
        let mut params = [
            &mut p as *mut _ as *mut std::ffi::c_void,
            &mut v as *mut _ as *mut std::ffi::c_void,
            &mut k as *mut _ as *mut std::ffi::c_void,
        ];
        // SAFETY: `fill` takes (float*, float, int) and writes out[i] for i < n, and `out`
        // holds n floats; the call itself is what is being tested.
        unsafe {
            sys::cuLaunchKernel(
                raw_fill.cu_function(),
                1,
                1,
                1,
                n as u32,
                1,
                1,
                0,
                stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    };
    let outcome = |state: &str, r: sys::CUresult, out: &mut CudaSlice<f32>, v: f32| {
        ctx.bind_to_thread().unwrap();
        stream.synchronize().unwrap();
        let host = stream.clone_dtoh(out).unwrap();
        match r {
            sys::CUresult::CUDA_ERROR_INVALID_CONTEXT
            | sys::CUresult::CUDA_ERROR_INVALID_HANDLE => {
                assert!(
                    host.iter().all(|x| x.is_nan()),
                    "{state}: refused, yet it wrote"
                );
            }
            sys::CUresult::CUDA_SUCCESS => {
                assert!(
                    host.iter().all(|&x| x == v),
                    "{state}: accepted, yet it did not run"
                );
            }
            other => panic!("{state}: {other:?}"),
        }
        println!("raw cuLaunchKernel with {state}: {r:?}");
        stream.memcpy_htod(&vec![f32::NAN; n], out).unwrap();
    };
    none_current();
    let r = raw_launch(&mut out, 1.0);
    outcome("no context current", r, &mut out, 1.0);
    other_current();
    let r = raw_launch(&mut out, 1.0);
    outcome("another context current", r, &mut out, 1.0);

    // cudacheck's release launch from both states: it runs, in the stream's context.
    let fill = Kernel::new(source, "fill")
        .instrument(false)
        .sync(false)
        .build();
    fill.load(&stream).unwrap();
    for (state, v) in [
        ("no context current", 2.0f32),
        ("another context current", 3.0),
    ] {
        if v == 2.0 {
            none_current();
        } else {
            other_current();
        }
        // SAFETY: `fill` writes out[i] for i < n only, and `out` holds n floats.
        unsafe {
            fill.launch(&stream)
                .grid(1)
                .block(n as u32)
                .arg_mut(&mut out)
                .arg(&v)
                .arg(&(n as i32))
                .run()
        }
        .unwrap_or_else(|e| panic!("{state}: {}", chain(&e)));
        stream.synchronize().unwrap();
        let host = stream.clone_dtoh(&out).unwrap();
        assert!(host.iter().all(|&x| x == v), "{state}: fill did not run");
    }
    drop(out);
    drop(other);
    fill_and_check(&stream, 4.0);
}
