//! GPU tier: kernels shipped as PTX (`Kernel::from_ptx`) and kernels the application loaded
//! itself (`Kernel::from_function`), each next to raw cudarc launches of the same code on the
//! same stream and buffers, as a candle-style crate mixes them.
//!
//! The PTX is this repository's kernels compiled by NVRTC (candle's build script uses nvcc);
//! outputs are poisoned before each launch and compared bit for bit.

use std::sync::Arc;

use cudacheck::core::validate::Violation;
use cudacheck::core::Arch;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cudacheck::{Error, Kernel, LaunchErrorKind, PtxSource};
use cudacheck_tests::ptx::kernel_ptx;
use cudacheck_tests::{chain, gpu_or_skip, launch_kind};
use cudarc::nvrtc::Ptx;

fn arch_of(stream: &Arc<CudaStream>) -> Arch {
    let ctx = stream.context();
    let (major, minor) = ctx.compute_capability().expect("compute capability");
    Arch::new(major as u32, minor as u32)
}

fn poisoned(stream: &Arc<CudaStream>, n: usize) -> CudaSlice<f32> {
    cudacheck::alloc_copy(stream, &vec![f32::NAN; n]).unwrap()
}

fn from_ptx(ptx: &PtxSource, name: &str, instrument: bool) -> Kernel {
    Kernel::from_ptx(ptx.clone(), name)
        .instrument(instrument)
        .sync(true)
        .build()
}

/// saxpy and the tiled matmul from PTX: raw cudarc, cudacheck plain and cudacheck
/// bounds-checked write the same bits, saxpy what the CPU computes.
#[test]
fn gpu_ptx_kernels_match_raw_cudarc_launches_of_the_same_ptx() {
    let Some(stream) = gpu_or_skip() else { return };
    let arch = arch_of(&stream);
    let ctx = stream.context().clone();

    // saxpy
    let ptx = kernel_ptx("saxpy.cu", arch, true, &[]);
    let module = ctx.load_module(Ptx::from_src(ptx.text.clone())).unwrap();
    let raw = module.load_function("saxpy").unwrap();
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let dx = cudacheck::alloc_copy(&stream, &x).unwrap();
    let mut outs = Vec::new();
    for mode in 0..3 {
        let mut dy = cudacheck::alloc_copy(&stream, &y0).unwrap();
        let (a, n32) = (2.5f32, n as i32);
        if mode == 0 {
            let mut b = stream.launch_builder(&raw);
            b.arg(&mut dy).arg(&dx).arg(&a).arg(&n32);
            unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
        } else {
            let k = from_ptx(&ptx, "saxpy", mode == 2);
            unsafe {
                k.launch(&stream)
                    .grid((n as u32).div_ceil(256))
                    .block(256)
                    .arg_mut(&mut dy)
                    .arg(&dx)
                    .arg(&a)
                    .arg(&n32)
                    .run()
            }
            .unwrap_or_else(|e| panic!("{}", chain(&e)));
        }
        outs.push(stream.clone_dtoh(&dy).unwrap());
    }
    for i in 0..n {
        assert_eq!(outs[0][i], 2.5 * x[i] + y0[i], "raw cudarc, element {i}");
    }
    let bits = |v: &Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&outs[0]),
        bits(&outs[1]),
        "cudacheck plain vs raw cudarc"
    );
    assert_eq!(
        bits(&outs[0]),
        bits(&outs[2]),
        "cudacheck bounds-checked vs raw cudarc"
    );

    // matmul_tiled, sizes not multiples of the tile
    let ptx = kernel_ptx("matmul.cu", arch, true, &[]);
    let module = ctx.load_module(Ptx::from_src(ptx.text.clone())).unwrap();
    let raw = module.load_function("matmul_tiled").unwrap();
    let (m, k, nn) = (300usize, 200usize, 170usize);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..k * nn).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let (da, db) = (
        cudacheck::alloc_copy(&stream, &a).unwrap(),
        cudacheck::alloc_copy(&stream, &b).unwrap(),
    );
    let grid = ((nn as u32).div_ceil(16), (m as u32).div_ceil(16), 1);
    let (mi, ni, ki) = (m as i32, nn as i32, k as i32);
    let mut outs = Vec::new();
    for mode in 0..3 {
        let mut dc = poisoned(&stream, m * nn);
        if mode == 0 {
            let mut l = stream.launch_builder(&raw);
            l.arg(&mut dc).arg(&da).arg(&db).arg(&mi).arg(&ni).arg(&ki);
            let cfg = LaunchConfig {
                grid_dim: grid,
                block_dim: (16, 16, 1),
                shared_mem_bytes: 0,
            };
            unsafe { l.launch(cfg) }.unwrap();
        } else {
            let kern = from_ptx(&ptx, "matmul_tiled", mode == 2);
            unsafe {
                kern.launch(&stream)
                    .grid(grid)
                    .block((16, 16, 1))
                    .arg_mut(&mut dc)
                    .arg(&da)
                    .arg(&db)
                    .arg(&mi)
                    .arg(&ni)
                    .arg(&ki)
                    .run()
            }
            .unwrap_or_else(|e| panic!("{}", chain(&e)));
        }
        outs.push(stream.clone_dtoh(&dc).unwrap());
    }
    assert!(
        outs[0].iter().all(|v| !v.is_nan()),
        "raw matmul wrote every element"
    );
    assert_eq!(
        bits(&outs[0]),
        bits(&outs[1]),
        "matmul: cudacheck plain vs raw cudarc"
    );
    assert_eq!(
        bits(&outs[0]),
        bits(&outs[2]),
        "matmul: bounds-checked vs raw cudarc"
    );
}

#[test]
fn gpu_ptx_bad_block_and_too_much_shared_memory_are_typed() {
    let Some(stream) = gpu_or_skip() else { return };
    let ptx = kernel_ptx("saxpy.cu", arch_of(&stream), false, &[]);
    let k = from_ptx(&ptx, "saxpy", false);
    let mut y = poisoned(&stream, 64);
    let x = poisoned(&stream, 64);
    let e = unsafe {
        k.launch(&stream)
            .grid(1)
            .block(2048)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&1.0f32)
            .arg(&64i32)
            .run()
    }
    .unwrap_err();
    let LaunchErrorKind::InvalidConfig { violations } = launch_kind(&e) else {
        panic!("expected InvalidConfig: {e}");
    };
    assert!(
        violations.iter().any(|v| matches!(
            v,
            Violation::TooManyThreadsPerBlock {
                requested: 2048,
                ..
            }
        )),
        "{violations:?}"
    );
    assert!(e.to_string().contains("2048 threads"), "{e}");
    let e = unsafe {
        k.launch(&stream)
            .grid(1)
            .block(64)
            .shared_bytes(1 << 20)
            .arg_mut(&mut y)
            .arg(&x)
            .arg(&1.0f32)
            .arg(&64i32)
            .run()
    }
    .unwrap_err();
    let LaunchErrorKind::InvalidConfig { violations } = launch_kind(&e) else {
        panic!("expected InvalidConfig: {e}");
    };
    assert!(!violations.is_empty());
    assert!(e.to_string().contains("shared memory"), "{e}");
}

/// `numel` one past the buffers, bounds-checked: named by parameter index (the compiler's PTX
/// names say nothing more), index and length, thread, and the `.cu` line the PTX's `.loc`
/// names; without line information, the report says how to get it. The next launch is healthy.
#[test]
fn gpu_ptx_planted_numel_is_named_by_parameter_and_line() {
    let Some(stream) = gpu_or_skip() else { return };
    let arch = arch_of(&stream);
    for lineinfo in [true, false] {
        let ptx = kernel_ptx("saxpy.cu", arch, lineinfo, &[]);
        let k = from_ptx(&ptx, "saxpy", true);
        let n = 1000usize;
        let x = cudacheck::alloc_copy(&stream, &vec![1.0f32; n]).unwrap();
        let mut y = cudacheck::alloc_copy(&stream, &vec![2.0f32; n]).unwrap();
        let bad = (n + 1) as i32;
        let e = unsafe {
            k.launch(&stream)
                .grid(4)
                .block(256)
                .arg_mut(&mut y)
                .arg(&x)
                .arg(&3.0f32)
                .arg(&bad)
                .run()
        }
        .unwrap_err();
        let Error::OutOfBounds(o) = &e else {
            panic!("expected OutOfBounds, got {}", chain(&e));
        };
        let text = e.to_string();
        assert!(
            o.buffer == "argument 1" || o.buffer == "argument 0",
            "{text}"
        );
        assert_eq!(o.index, n as i64, "{text}");
        assert_eq!(o.len, n as u64, "{text}");
        assert_eq!((o.block.x, o.thread.x), (3, (n % 256) as u32), "{text}");
        if lineinfo {
            assert!(o.file.ends_with("saxpy.cu"), "{text}");
            assert_eq!(o.line, 6, "{text}");
            assert!(text.contains("y[i] = a * x[i] + y[i];"), "{text}");
        } else {
            assert!(
                text.contains("no line information: build the PTX with `nvcc -lineinfo`"),
                "{text}"
            );
        }
        // Healthy afterwards, and the planted launch wrote nothing out of bounds.
        let good = n as i32;
        unsafe {
            k.launch(&stream)
                .grid(4)
                .block(256)
                .arg_mut(&mut y)
                .arg(&x)
                .arg(&3.0f32)
                .arg(&good)
                .run()
        }
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
        let host = stream.clone_dtoh(&y).unwrap();
        assert!(
            host.iter().all(|&v| v == 2.0 + 3.0 + 3.0),
            "lineinfo {lineinfo}"
        );
    }
}

/// A function the application loaded with cudarc: validated from the driver's attributes and
/// parameter list, same errors; bounds checking is refused with the reason.
#[test]
fn gpu_function_loaded_by_the_application_is_validated() {
    let Some(stream) = gpu_or_skip() else { return };
    let ctx = stream.context().clone();
    let ptx = kernel_ptx("matmul.cu", arch_of(&stream), false, &[]);
    let module = ctx.load_module(Ptx::from_src(ptx.text.clone())).unwrap();
    let f = module.load_function("matmul_tiled").unwrap();
    let k = Kernel::from_function(&ctx, f, "matmul_tiled").unwrap();
    let info = k.load(&stream).unwrap();
    assert_eq!(
        info.resources.params.len(),
        6,
        "cuFuncGetParamInfo on this CUDA 13 driver"
    );
    assert_eq!(
        info.max_threads_per_block, 256,
        "the kernel's __launch_bounds__(TILE * TILE)"
    );
    let (m, nn, kk) = (40usize, 33usize, 17usize);
    let a = cudacheck::alloc_copy(&stream, &vec![1.0f32; m * kk]).unwrap();
    let b = cudacheck::alloc_copy(&stream, &vec![2.0f32; kk * nn]).unwrap();
    let mut c = poisoned(&stream, m * nn);
    let (mi, ni, ki) = (m as i32, nn as i32, kk as i32);
    unsafe {
        k.launch(&stream)
            .grid((3, 3, 1))
            .block((16, 16, 1))
            .sync(true)
            .arg_mut(&mut c)
            .arg(&a)
            .arg(&b)
            .arg(&mi)
            .arg(&ni)
            .arg(&ki)
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let host = stream.clone_dtoh(&c).unwrap();
    assert!(
        host.iter().all(|&v| v == 2.0 * kk as f32),
        "matmul of ones and twos"
    );

    // 32 x 32 = 1024 threads: allowed by the device, not by the kernel's launch bounds.
    let e = unsafe {
        k.launch(&stream)
            .grid(1)
            .block((32, 32, 1))
            .arg_mut(&mut c)
            .arg(&a)
            .arg(&b)
            .arg(&mi)
            .arg(&ni)
            .arg(&ki)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(launch_kind(&e), LaunchErrorKind::InvalidConfig { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("1024"), "{e}");
    // Five arguments for six parameters.
    let e = unsafe {
        k.launch(&stream)
            .grid(1)
            .block((16, 16, 1))
            .arg_mut(&mut c)
            .arg(&a)
            .arg(&b)
            .arg(&mi)
            .arg(&ni)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(
            launch_kind(&e),
            LaunchErrorKind::ArgCount {
                expected: 6,
                given: 5,
                ..
            }
        ),
        "{e}"
    );
    // Bounds checking needs the code.
    let e = unsafe {
        k.launch(&stream)
            .grid(1)
            .block((16, 16, 1))
            .instrument(true)
            .arg_mut(&mut c)
            .arg(&a)
            .arg(&b)
            .arg(&mi)
            .arg(&ni)
            .arg(&ki)
            .run()
    }
    .unwrap_err();
    assert!(
        matches!(e, Error::LoadedByApplication { .. }),
        "{}",
        chain(&e)
    );
    assert!(e.to_string().contains("Kernel::from_ptx"), "{e}");
}
