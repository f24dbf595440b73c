//! GPU tier: misaligned wide accesses. A `float4`, `half2` or 8-byte access
//! at an address not aligned to its width raises CUDA error 716 and poisons the context; a
//! bounds-checked launch reports it as `Error::Misaligned` (buffer, byte offset, alignment,
//! thread, line) and the context stays usable. A buffer argument that is itself misaligned (an
//! offset view) is refused on the host before the kernel runs; a misaligned address the kernel
//! computes (a skew) is found on the device and the access skipped. Outputs are poisoned
//! before each launch and compared with what the CPU computes.

use std::sync::Arc;

use cudacheck::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel, Misaligned};
use cudacheck_tests::{chain, gpu_or_skip, repo_root};

fn source() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/planted/misaligned.cu")).unwrap()
}

fn line_of(name: &str) -> u32 {
    let marker = format!("ACCESS({name})");
    let src = source();
    src.text
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker}")) as u32
        + 1
}

fn kernel(name: &str) -> Kernel {
    Kernel::new(source(), name)
        .instrument(true)
        .sync(true)
        .build()
}

fn up<T: DeviceRepr + Clone>(s: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    cudacheck::alloc_copy(s, v).unwrap()
}

fn misaligned(name: &str, r: Result<(), Error>) -> Box<Misaligned> {
    let e = r.expect_err(name);
    let text = chain(&e);
    println!("{name}:\n{text}\n");
    match e {
        Error::Misaligned(m) => {
            assert_eq!(&*m.kernel, name, "{text}");
            assert_eq!(m.line, line_of(name), "{text}");
            assert!(m.file.ends_with("misaligned.cu"), "{text}");
            assert!(text.contains("the context is still usable"), "{text}");
            m
        }
        other => panic!("{name}: expected Error::Misaligned, got {}", chain(&other)),
    }
}

fn floats(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.25 - 7.0).collect()
}

/// A `float4` read through a view one `float` past an aligned allocation: refused before the
/// kernel runs (the output keeps its poison); then the aligned view copies exactly.
#[test]
fn gpu_misaligned_float4_view_is_refused_on_the_host_and_the_context_lives() {
    let Some(s) = gpu_or_skip() else { return };
    let k = kernel("copy4");
    let n4 = 256usize;
    let host_in = floats(4 * n4 + 4);
    let input = up(&s, &host_in);
    let mut out = up(&s, &vec![f32::NAN; 4 * n4]);
    let view = input.slice(1..1 + 4 * n4);
    let r = unsafe {
        k.launch(&s)
            .grid(1)
            .block(256)
            .arg_mut(&mut out)
            .arg(&view)
            .arg(&(n4 as i32))
            .run()
    };
    let m = misaligned("copy4", r);
    assert_eq!(
        (m.buffer.as_str(), m.alignment, m.misalignment, m.thread),
        ("in", 16, 4, None)
    );
    assert!(s.clone_dtoh(&out).unwrap().iter().all(|v| v.is_nan()));
    assert!(!cudacheck::is_poisoned(&s));
    let view = input.slice(4..4 + 4 * n4);
    unsafe {
        k.launch(&s)
            .grid(1)
            .block(256)
            .arg_mut(&mut out)
            .arg(&view)
            .arg(&(n4 as i32))
            .run()
    }
    .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let got = s.clone_dtoh(&out).unwrap();
    assert_eq!(got, host_in[4..4 + 4 * n4]);
}

/// A `float4` read at `in + 1`, computed by the kernel: every thread's read is misaligned,
/// found on the device, skipped (it gives 0); then `in + 4` copies exactly.
#[test]
fn gpu_misaligned_float4_skew_is_found_on_the_device_and_skipped() {
    let Some(s) = gpu_or_skip() else { return };
    let k = kernel("copy4_skewed");
    let n4 = 256usize;
    let host_in = floats(4 * n4 + 4);
    let input = up(&s, &host_in);
    let mut out = up(&s, &vec![f32::NAN; 4 * n4]);
    let run = |out: &mut CudaSlice<f32>, skew: i32| unsafe {
        k.launch(&s)
            .grid(2)
            .block(128)
            .arg_mut(out)
            .arg(&input)
            .arg(&skew)
            .arg(&(n4 as i32))
            .run()
    };
    let m = misaligned("copy4_skewed", run(&mut out, 1));
    assert_eq!((m.buffer.as_str(), m.alignment), ("in", 16), "{m}");
    assert_eq!(m.misalignment, 4, "{m}");
    assert_eq!(m.byte_offset.rem_euclid(16), 4, "{m}");
    assert!(m.thread.is_some() && m.block.is_some(), "{m}");
    assert_eq!(
        m.count as usize, n4,
        "every thread's read is misaligned: {m}"
    );
    // Each skipped read gave zeros, which the (aligned) store wrote.
    assert!(s.clone_dtoh(&out).unwrap().iter().all(|&v| v == 0.0));
    assert!(!cudacheck::is_poisoned(&s));
    run(&mut out, 4).unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert_eq!(s.clone_dtoh(&out).unwrap(), host_in[4..4 + 4 * n4]);
}

/// `half2` stores into a view one `__half` past an aligned allocation: refused; then the
/// aligned view is filled.
#[test]
fn gpu_misaligned_half2_store_through_a_view_is_refused() {
    let Some(s) = gpu_or_skip() else { return };
    let k = kernel("fill_half2");
    let n2 = 300usize;
    let poison = half::f16::from_bits(0x7e00);
    let mut buf = up(&s, &vec![poison; 2 * n2 + 2]);
    let run = |buf: &mut CudaSlice<half::f16>, from: usize| {
        let mut view = buf.slice_mut(from..from + 2 * n2);
        unsafe {
            k.launch(&s)
                .grid(2)
                .block(256)
                .arg_mut(&mut view)
                .arg(&1.5f32)
                .arg(&(n2 as i32))
                .run()
        }
    };
    let m = misaligned("fill_half2", run(&mut buf, 1));
    assert_eq!(
        (m.buffer.as_str(), m.alignment, m.misalignment, m.thread),
        ("out", 4, 2, None)
    );
    let host = s.clone_dtoh(&buf).unwrap();
    assert!(host.iter().all(|v| v.to_bits() == 0x7e00), "nothing ran");
    run(&mut buf, 2).unwrap_or_else(|e| panic!("{}", chain(&e)));
    let host = s.clone_dtoh(&buf).unwrap();
    assert!(host[..2].iter().all(|v| v.to_bits() == 0x7e00));
    assert!(host[2..].iter().all(|v| v.to_f32() == 1.5));
}

/// 8-byte reads at a 4-byte skew: found on the device; at an 8-byte skew, exact.
#[test]
fn gpu_misaligned_8_byte_read_is_found_on_the_device() {
    let Some(s) = gpu_or_skip() else { return };
    let k = kernel("read8");
    let n = 500usize;
    let values: Vec<f64> = (0..n + 2).map(|i| i as f64 * 1.5 - 3.0).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let input = up(&s, &bytes);
    let mut out = up(&s, &vec![f64::NAN; n]);
    let run = |out: &mut CudaSlice<f64>, skew: i32| unsafe {
        k.launch(&s)
            .grid(2)
            .block(256)
            .arg_mut(out)
            .arg(&input)
            .arg(&skew)
            .arg(&(n as i32))
            .run()
    };
    let m = misaligned("read8", run(&mut out, 4));
    assert_eq!(
        (m.buffer.as_str(), m.alignment, m.misalignment),
        ("bytes", 8, 4),
        "{m}"
    );
    assert!(m.thread.is_some(), "{m}");
    assert!(!cudacheck::is_poisoned(&s));
    run(&mut out, 8).unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert_eq!(s.clone_dtoh(&out).unwrap(), values[1..n + 1]);
}
