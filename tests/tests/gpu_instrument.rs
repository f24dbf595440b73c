//! GPU tier: bounds-checked launches on a real device.
//!
//! - Differential: every kernel of `kernels/`, bounds-checked and plain, on the same fresh
//!   random inputs (the seed is printed), into outputs poisoned before each launch: the outputs
//!   must be bit-identical.
//! - Planted bugs (`tests/cuda/planted/bugs.cu`): each returns `Error::OutOfBounds` or
//!   `Error::DeviceAssert` naming the exact buffer, index, length, thread and line, and the next
//!   launch on the same context works.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use cudacheck::core::instrument::FaultKind;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Error, Kernel};
use cudacheck_tests::{gpu_or_skip, kernel_files, kernel_source, repo_root};

// ---- a small PRNG ----------------------------------------------------------------------------

struct XorShift(u64);

impl XorShift {
    fn from_time() -> Self {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
            | 1;
        println!("differential seed: {seed:#x}");
        XorShift(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [-1, 1).
    fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
}

fn up<T: DeviceRepr + Clone>(s: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    cudacheck::alloc_copy(s, v).unwrap()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn div(a: usize, b: usize) -> u32 {
    a.div_ceil(b) as u32
}

/// Runs `launch(on)` for on = false (plain) and true (bounds-checked) and compares the bits.
fn same_bits(name: &str, mut launch: impl FnMut(bool) -> Vec<u32>) {
    let plain = launch(false);
    let checked = launch(true);
    assert_eq!(plain.len(), checked.len(), "{name}");
    let diff = plain.iter().zip(&checked).position(|(a, b)| a != b);
    assert!(
        diff.is_none(),
        "{name}: element {diff:?} differs between plain and bounds-checked launches"
    );
    // The kernel really wrote: a poisoned output would compare equal too.
    assert!(
        plain
            .iter()
            .any(|&b| b != f32::NAN.to_bits() && b != u32::MAX),
        "{name}: nothing written"
    );
}

fn k(file: &str, name: &str) -> Kernel {
    Kernel::new(kernel_source(file), name).sync(true).build()
}

#[test]
fn gpu_differential_every_kernel_is_bit_identical_instrumented() {
    let Some(s) = gpu_or_skip() else { return };
    let mut rng = XorShift::from_time();
    let covered = [
        "histogram.cu",
        "matmul.cu",
        "nbody.cu",
        "reduce.cu",
        "saxpy.cu",
        "scale.cu",
        "softmax.cu",
        "stencil2d.cu",
        "transpose.cu",
        "window_median.cu",
    ];
    for f in kernel_files() {
        assert!(
            covered.contains(&f.as_str()),
            "kernels/{f} has no differential launch"
        );
    }
    let nan = f32::NAN;

    // saxpy: y is read and written; both runs start from the same y.
    let n = 100_003;
    let (x, y0) = (rng.floats(n), rng.floats(n));
    let kern = k("saxpy.cu", "saxpy");
    same_bits("saxpy", |on| {
        let xd = up(&s, &x);
        let mut y = up(&s, &y0);
        unsafe {
            kern.launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg_mut(&mut y)
                .arg(&xd)
                .arg(&1.5f32)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&y).unwrap())
    });

    // scale<float> and scale<__half>
    let kern = k("scale.cu", "scale<float>");
    same_bits("scale<float>", |on| {
        let xd = up(&s, &x);
        let mut out = up(&s, &vec![nan; n]);
        unsafe {
            kern.launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&xd)
                .arg(&0.75f32)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    let xh: Vec<half::f16> = x.iter().map(|&v| half::f16::from_f32(v)).collect();
    let kern = k("scale.cu", "scale<__half>");
    same_bits("scale<__half>", |on| {
        let xd = up(&s, &xh);
        let mut out = up(&s, &vec![half::f16::NAN; n]);
        unsafe {
            kern.launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&xd)
                .arg(&0.75f32)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        s.clone_dtoh(&out)
            .unwrap()
            .iter()
            .map(|h| u32::from(h.to_bits()))
            .collect()
    });

    // histogram256: bins start from the same random counts (atomics add to them).
    let bytes: Vec<u8> = (0..1_000_001).map(|_| rng.next() as u8).collect();
    let bins0: Vec<u32> = (0..256).map(|_| rng.next() as u32 % 1000).collect();
    let kern = k("histogram.cu", "histogram256");
    same_bits("histogram256", |on| {
        let d = up(&s, &bytes);
        let mut bins = up(&s, &bins0);
        unsafe {
            kern.launch(&s)
                .grid(120)
                .block(256)
                .instrument(on)
                .arg_mut(&mut bins)
                .arg(&d)
                .arg(&(bytes.len() as i32))
                .run()
        }
        .unwrap();
        s.clone_dtoh(&bins).unwrap()
    });

    // matmul_tiled with sizes that are not multiples of the tile.
    let (m, nn, kk) = (100usize, 70usize, 50usize);
    let (a, b) = (rng.floats(m * kk), rng.floats(kk * nn));
    let kern = k("matmul.cu", "matmul_tiled");
    same_bits("matmul_tiled", |on| {
        let (ad, bd) = (up(&s, &a), up(&s, &b));
        let mut c = up(&s, &vec![nan; m * nn]);
        unsafe {
            kern.launch(&s)
                .grid((div(nn, 16), div(m, 16), 1))
                .block((16, 16, 1))
                .instrument(on)
                .arg_mut(&mut c)
                .arg(&ad)
                .arg(&bd)
                .arg(&(m as i32))
                .arg(&(nn as i32))
                .arg(&(kk as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&c).unwrap())
    });

    // nbody_accel on float4 bodies (masses positive).
    let nb = 1000;
    let pos: Vec<[f32; 4]> = (0..nb)
        .map(|_| [rng.f32(), rng.f32(), rng.f32(), rng.f32().abs() + 0.1])
        .collect();
    let kern = k("nbody.cu", "nbody_accel");
    same_bits("nbody_accel", |on| {
        let pd = up(&s, &pos);
        let mut acc = up(&s, &vec![[nan; 4]; nb]);
        unsafe {
            kern.launch(&s)
                .grid(div(nb, 128))
                .block(128)
                .instrument(on)
                .arg_mut(&mut acc)
                .arg(&pd)
                .arg(&(nb as i32))
                .arg(&0.01f32)
                .run()
        }
        .unwrap();
        s.clone_dtoh(&acc)
            .unwrap()
            .iter()
            .flatten()
            .map(|v| v.to_bits())
            .collect()
    });

    // reduce_sum with dynamic shared memory.
    let nr = 100_000;
    let xr = rng.floats(nr);
    let kern = k("reduce.cu", "reduce_sum");
    let blocks = nr.div_ceil(512);
    same_bits("reduce_sum", |on| {
        let xd = up(&s, &xr);
        let mut partial = up(&s, &vec![nan; blocks]);
        unsafe {
            kern.launch(&s)
                .grid(blocks as u32)
                .block(256)
                .shared_bytes(256 * 4)
                .instrument(on)
                .arg_mut(&mut partial)
                .arg(&xd)
                .arg(&(nr as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&partial).unwrap())
    });

    // softmax_rows
    let (rows, cols) = (64usize, 1000usize);
    let xs = rng.floats(rows * cols);
    let kern = k("softmax.cu", "softmax_rows");
    same_bits("softmax_rows", |on| {
        let xd = up(&s, &xs);
        let mut out = up(&s, &vec![nan; rows * cols]);
        unsafe {
            kern.launch(&s)
                .grid(rows as u32)
                .block(256)
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&xd)
                .arg(&(rows as i32))
                .arg(&(cols as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });

    // stencil2d and transpose on sizes that are not multiples of the block.
    let (w, h) = (100usize, 70usize);
    let grid2 = rng.floats(w * h);
    let kern = k("stencil2d.cu", "stencil2d");
    same_bits("stencil2d", |on| {
        let xd = up(&s, &grid2);
        let mut out = up(&s, &vec![nan; w * h]);
        unsafe {
            kern.launch(&s)
                .grid((div(w, 32), div(h, 8), 1))
                .block((32, 8, 1))
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&xd)
                .arg(&(w as i32))
                .arg(&(h as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    let kern = k("transpose.cu", "transpose");
    same_bits("transpose", |on| {
        let xd = up(&s, &grid2);
        let mut out = up(&s, &vec![nan; w * h]);
        // `in` is h rows x w cols.
        unsafe {
            kern.launch(&s)
                .grid((div(w, 32), div(h, 32), 1))
                .block((32, 8, 1))
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&xd)
                .arg(&(h as i32))
                .arg(&(w as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });

    // window_median
    let nw = 5000;
    let xw = rng.floats(nw);
    let kern = k("window_median.cu", "window_median");
    same_bits("window_median", |on| {
        let xd = up(&s, &xw);
        let mut out = up(&s, &vec![nan; nw]);
        unsafe {
            kern.launch(&s)
                .grid(div(nw, 128))
                .block(128)
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&xd)
                .arg(&(nw as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
}

// ---- planted bugs ----------------------------------------------------------------------------

fn bugs() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/planted/bugs.cu")).unwrap()
}

/// The 1-based line of `BUG(name)` in the planted source.
fn bug_line(name: &str) -> u32 {
    let marker = format!("BUG({name})");
    let src = bugs();
    let i = src
        .text
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in bugs.cu"));
    i as u32 + 1
}

fn planted(name: &str) -> Kernel {
    Kernel::new(bugs(), name).instrument(true).build()
}

/// What a planted out-of-bounds bug must report.
struct Expect {
    buffer: &'static str,
    index: i64,
    len: u64,
    access: FaultKind,
    block: (u32, u32, u32),
    thread: (u32, u32, u32),
}

/// Faults one thread makes at a planted bug: a read-modify-write is a read and a write.
fn faults_of(x: &Expect) -> u32 {
    if x.access == FaultKind::ReadWrite {
        2
    } else {
        1
    }
}

fn check_oob(name: &str, r: Result<(), Error>, x: Expect) {
    let e = r.expect_err(name);
    let Error::OutOfBounds(o) = &e else {
        panic!("{name}: expected OutOfBounds, got {e}")
    };
    let text = e.to_string();
    assert_eq!(&*o.kernel, name, "{text}");
    assert_eq!(o.buffer, x.buffer, "{text}");
    assert_eq!(o.index, x.index, "{text}");
    assert_eq!(o.len, x.len, "{text}");
    // PTX checks a read-modify-write (`a[i] += v`) as its read, then its write: the read is
    // the first fault.
    let access = if x.access == FaultKind::ReadWrite {
        FaultKind::Read
    } else {
        x.access
    };
    assert_eq!(o.access, access, "{text}");
    assert_eq!((o.block.x, o.block.y, o.block.z), x.block, "{text}");
    assert_eq!((o.thread.x, o.thread.y, o.thread.z), x.thread, "{text}");
    assert_eq!(o.line, bug_line(name), "{text}");
    assert_eq!(
        o.count,
        faults_of(&x),
        "{name}: exactly one thread faults: {text}"
    );
    assert!(o.file.ends_with("bugs.cu"), "{text}");
    let src_line = o.source_line.as_deref().unwrap_or("");
    assert!(src_line.contains(&format!("BUG({name})")), "{text}");
    // The message a person reads: the buffer, the index, the line with a caret.
    assert!(
        text.contains(&format!("of `{}`: index {}", x.buffer, x.index)),
        "{text}"
    );
    assert!(text.contains(&format!("bugs.cu:{}:", o.line)), "{text}");
    assert!(text.contains("^"), "{text}");
    assert!(text.contains("the context is still usable"), "{text}");
    println!("{name}:\n{text}\n");
}

/// The context is healthy after the bug: a correct kernel runs and writes what it should.
fn next_launch_works(s: &Arc<CudaStream>) {
    assert!(!cudacheck::is_poisoned(s));
    let fill = planted("fill");
    let n = 1000usize;
    let mut out = up(s, &vec![f32::NAN; n + 24]);
    unsafe {
        fill.launch(s)
            .grid(4)
            .block(256)
            .arg_mut(&mut out)
            .arg(&7.0f32)
            .arg(&(n as i32))
            .run()
    }
    .unwrap();
    let host = s.clone_dtoh(&out).unwrap();
    assert!(host[..n].iter().all(|&v| v == 7.0));
    assert!(host[n..].iter().all(|v| v.is_nan()));
}

#[test]
fn gpu_planted_out_of_bounds_bugs_are_named_exactly() {
    let Some(s) = gpu_or_skip() else { return };
    use FaultKind::*;
    let ones = |n: usize| up(&s, &vec![1.0f32; n]);
    let mut count = 0;

    // 1. off-by-one guard (write): thread 1000 = block 3, thread 232.
    let mut out = ones(1000);
    let r = unsafe {
        planted("off_by_one")
            .launch(&s)
            .grid(4)
            .block(256)
            .arg_mut(&mut out)
            .arg(&1000i32)
            .run()
    };
    check_oob(
        "off_by_one",
        r,
        Expect {
            buffer: "out",
            index: 1000,
            len: 1000,
            access: Write,
            block: (3, 0, 0),
            thread: (232, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 2. missing guard (read): `in` has 1023 elements, the grid 1024 threads.
    let (mut out, inp) = (ones(1024), ones(1023));
    let r = unsafe {
        planted("missing_guard")
            .launch(&s)
            .grid(4)
            .block(256)
            .arg_mut(&mut out)
            .arg(&inp)
            .arg(&1023i32)
            .run()
    };
    check_oob(
        "missing_guard",
        r,
        Expect {
            buffer: "in",
            index: 1023,
            len: 1023,
            access: Read,
            block: (3, 0, 0),
            thread: (255, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 3. negative index.
    let (mut out, inp) = (ones(512), ones(512));
    let r = unsafe {
        planted("negative_index")
            .launch(&s)
            .grid(2)
            .block(256)
            .arg_mut(&mut out)
            .arg(&inp)
            .arg(&512i32)
            .run()
    };
    check_oob(
        "negative_index",
        r,
        Expect {
            buffer: "in",
            index: -1,
            len: 512,
            access: Read,
            block: (0, 0, 0),
            thread: (0, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 4. row/column swap: 4 x 3 matrix, column 2: r = 3 reads m[3 * 4 + 2] = m[14].
    let (mut out, m) = (ones(1), ones(12));
    let r = unsafe {
        planted("col_sum")
            .launch(&s)
            .grid(1)
            .block(1)
            .arg_mut(&mut out)
            .arg(&m)
            .arg(&4i32)
            .arg(&3i32)
            .arg(&2i32)
            .run()
    };
    check_oob(
        "col_sum",
        r,
        Expect {
            buffer: "m",
            index: 14,
            len: 12,
            access: Read,
            block: (0, 0, 0),
            thread: (0, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 5. shared tile at tid + 1.
    let (mut out, inp) = (ones(256), ones(256));
    let r = unsafe {
        planted("shared_shift")
            .launch(&s)
            .grid(1)
            .block(256)
            .arg_mut(&mut out)
            .arg(&inp)
            .arg(&256i32)
            .run()
    };
    check_oob(
        "shared_shift",
        r,
        Expect {
            buffer: "tile",
            index: 256,
            len: 256,
            access: Read,
            block: (0, 0, 0),
            thread: (255, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 6. derived pointer `row = m + r * cols`: row[cols] of the last row.
    let mut m = ones(400);
    let r = unsafe {
        planted("row_fill")
            .launch(&s)
            .grid(4)
            .block(128)
            .arg_mut(&mut m)
            .arg(&4i32)
            .arg(&100i32)
            .arg(&2.0f32)
            .run()
    };
    check_oob(
        "row_fill",
        r,
        Expect {
            buffer: "m",
            index: 400,
            len: 400,
            access: Write,
            block: (3, 0, 0),
            thread: (100, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 7. atomic out of range: the one 255 byte sits at index 700 (block 2, thread 188).
    let mut data = vec![7u8; 1000];
    data[700] = 255;
    let (mut bins, d) = (up(&s, &vec![0u32; 256]), up(&s, &data));
    let r = unsafe {
        planted("histogram_bad")
            .launch(&s)
            .grid(4)
            .block(256)
            .arg_mut(&mut bins)
            .arg(&d)
            .arg(&1000i32)
            .run()
    };
    check_oob(
        "histogram_bad",
        r,
        Expect {
            buffer: "bins",
            index: 256,
            len: 256,
            access: Atomic,
            block: (2, 0, 0),
            thread: (188, 0, 0),
        },
    );
    // The in-range atomics landed, the bad one did not.
    let host = s.clone_dtoh(&bins).unwrap();
    assert_eq!(host[8], 999);
    assert_eq!(host.iter().map(|&v| v as u64).sum::<u64>(), 999);
    next_launch_works(&s);
    count += 1;

    // 8. dynamic shared overflow: 255 floats for 256 threads.
    let mut out = ones(256);
    let r = unsafe {
        planted("dyn_overflow")
            .launch(&s)
            .grid(1)
            .block(256)
            .shared_bytes(255 * 4)
            .arg_mut(&mut out)
            .arg(&256i32)
            .run()
    };
    check_oob(
        "dyn_overflow",
        r,
        Expect {
            buffer: "s",
            index: 255,
            len: 255,
            access: Write,
            block: (0, 0, 0),
            thread: (255, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 9. 2D grid, 40 x 30 image, blocks of 16 x 16: x = 40, y = 29.
    let mut img = ones(40 * 30);
    let r = unsafe {
        planted("grid2d")
            .launch(&s)
            .grid((3, 2, 1))
            .block((16, 16, 1))
            .arg_mut(&mut img)
            .arg(&40i32)
            .arg(&30i32)
            .run()
    };
    check_oob(
        "grid2d",
        r,
        Expect {
            buffer: "img",
            index: 1200,
            len: 1200,
            access: Write,
            block: (2, 1, 0),
            thread: (8, 13, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 10. 3D grid, 8 x 4 x 3 volume, blocks of 4 x 4 x 2: x = 8, y = 3, z = 2.
    let mut vol = ones(96);
    let r = unsafe {
        planted("grid3d")
            .launch(&s)
            .grid((3, 1, 2))
            .block((4, 4, 2))
            .arg_mut(&mut vol)
            .arg(&8i32)
            .arg(&4i32)
            .arg(&3i32)
            .run()
    };
    check_oob(
        "grid3d",
        r,
        Expect {
            buffer: "vol",
            index: 96,
            len: 96,
            access: Write,
            block: (2, 0, 1),
            thread: (0, 3, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 11. `*(out + (i + 1))`: i = 499 is block 3, thread 115.
    let (mut out, inp) = (ones(500), ones(500));
    let r = unsafe {
        planted("deref")
            .launch(&s)
            .grid(4)
            .block(128)
            .arg_mut(&mut out)
            .arg(&inp)
            .arg(&500i32)
            .run()
    };
    check_oob(
        "deref",
        r,
        Expect {
            buffer: "out",
            index: 500,
            len: 500,
            access: Write,
            block: (3, 0, 0),
            thread: (115, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 12. compound assignment `acc[i + 1] += in[i]`: i = 299 is block 2, thread 43.
    let (mut acc, inp) = (ones(300), ones(300));
    let r = unsafe {
        planted("accumulate")
            .launch(&s)
            .grid(3)
            .block(128)
            .arg_mut(&mut acc)
            .arg(&inp)
            .arg(&300i32)
            .run()
    };
    check_oob(
        "accumulate",
        r,
        Expect {
            buffer: "acc",
            index: 300,
            len: 300,
            access: ReadWrite,
            block: (2, 0, 0),
            thread: (43, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 13. static shared 2D array: t[8][7] at thread (7, 7).
    let mut out = ones(64);
    let r = unsafe {
        planted("tile2d")
            .launch(&s)
            .grid(1)
            .block((8, 8, 1))
            .arg_mut(&mut out)
            .run()
    };
    check_oob(
        "tile2d",
        r,
        Expect {
            // The 8x8 tile flattened: t[8][7] is element 71 of 64.
            buffer: "t",
            index: 71,
            len: 64,
            access: Read,
            block: (0, 0, 0),
            thread: (7, 7, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    // 14. local array: w[4 % 5] of 4, thread 4.
    let (mut out, inp) = (ones(5), ones(5));
    let r = unsafe {
        planted("local_window")
            .launch(&s)
            .grid(1)
            .block(32)
            .arg_mut(&mut out)
            .arg(&inp)
            .arg(&5i32)
            .run()
    };
    check_oob(
        "local_window",
        r,
        Expect {
            // PTX does not name a thread's local arrays: `w` is the thread's local frame.
            buffer: "local array",
            index: 4,
            len: 4,
            access: Read,
            block: (0, 0, 0),
            thread: (4, 0, 0),
        },
    );
    next_launch_works(&s);
    count += 1;

    assert_eq!(count, 14);
}

/// Accesses inside loops are checked once per launch on the host over every
/// iteration (`guard.rs`, `Counted`). A launch whose loop stays inside its buffers runs with
/// no device check and computes what the plain build computes; a launch whose column is past
/// the matrix, or whose loop runs one row too many, fails its host check, runs the build that
/// checks each access on the device, and is named with the exact index, thread and line; the
/// context stays usable.
#[test]
fn gpu_planted_bugs_in_host_checked_loops_are_named_exactly() {
    let Some(s) = gpu_or_skip() else { return };
    use FaultKind::*;
    let (rows, cols) = (37usize, 64usize);
    let data: Vec<f32> = (0..(rows + 1) * cols)
        .map(|i| (i % 97) as f32 * 0.25)
        .collect();

    // The loop stays inside `m` ((rows + 1) x cols floats): host-checked, no fault, and the
    // same sums as the plain build.
    let k = planted("loop_one_trip_too_many");
    let m = up(&s, &data);
    let run = |instrument: bool, out: &mut CudaSlice<f32>| unsafe {
        k.launch(&s)
            .grid(1)
            .block(64)
            .instrument(instrument)
            .arg_mut(out)
            .arg(&m)
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .run()
    };
    let mut checked = up(&s, &vec![f32::NAN; cols]);
    let mut plain = up(&s, &vec![f32::NAN; cols]);
    run(true, &mut checked).unwrap();
    run(false, &mut plain).unwrap();
    let (c, p) = (
        s.clone_dtoh(&checked).unwrap(),
        s.clone_dtoh(&plain).unwrap(),
    );
    assert!(c.iter().all(|v| !v.is_nan()));
    assert_eq!(
        c.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        p.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let cov = k.coverage().unwrap().unwrap();
    assert!(cov.is_complete());
    assert_eq!(
        cov.checked, 0,
        "every access of the loop is checked on the host: {cov:?}"
    );
    assert!(cov.host_checked >= 2, "{cov:?}");

    // One trip too many: `m` holds rows x cols + cols - 1 floats, so only the last column's
    // thread reads past it, at r = rows.
    let short = up(&s, &data[..rows * cols + cols - 1]);
    let mut out = up(&s, &vec![0.0f32; cols]);
    let r = unsafe {
        k.launch(&s)
            .grid(1)
            .block(64)
            .arg_mut(&mut out)
            .arg(&short)
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .run()
    };
    check_oob(
        "loop_one_trip_too_many",
        r,
        Expect {
            buffer: "m",
            index: (rows * cols + cols - 1) as i64,
            len: (rows * cols + cols - 1) as u64,
            access: Read,
            block: (0, 0, 0),
            thread: (63, 0, 0),
        },
    );
    next_launch_works(&s);

    // A column past the matrix: col = cols reads m[r * cols + cols]; the first such read out
    // of a rows x cols matrix is at r = rows - 1, index rows * cols.
    let k = planted("loop_column_past_end");
    let m = up(&s, &data[..rows * cols]);
    let mut out = up(&s, &[0.0f32; 1]);
    let r = unsafe {
        k.launch(&s)
            .grid(1)
            .block(1)
            .arg_mut(&mut out)
            .arg(&m)
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .arg(&(cols as i32))
            .run()
    };
    check_oob(
        "loop_column_past_end",
        r,
        Expect {
            buffer: "m",
            index: (rows * cols) as i64,
            len: (rows * cols) as u64,
            access: Read,
            block: (0, 0, 0),
            thread: (0, 0, 0),
        },
    );
    next_launch_works(&s);
    // The same kernel with a column inside the matrix: no fault.
    unsafe {
        k.launch(&s)
            .grid(1)
            .block(1)
            .arg_mut(&mut out)
            .arg(&m)
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .arg(&(cols as i32 - 1))
            .run()
    }
    .unwrap();
    let want: f32 = (0..rows).map(|r| data[r * cols + cols - 1]).sum();
    let got = s.clone_dtoh(&out).unwrap()[0];
    assert!((got - want).abs() <= want.abs() * 1e-5, "{got} vs {want}");
}

/// Loops whose bounds come from memory are versioned (each thread checks its
/// accesses' ranges once before the loop and runs it without their checks); a thread whose
/// range fails runs the checked loop, which names the exact index, thread and line, once.
#[test]
fn gpu_planted_bugs_in_versioned_loops_are_named_exactly() {
    let Some(s) = gpu_or_skip() else { return };
    use FaultKind::*;

    // CSR row sums over rows of 0..40 values.
    let rows = 300usize;
    let mut offsets = vec![0i32];
    for r in 0..rows {
        let len = (r * 7919 + 13) % 41;
        offsets.push(offsets[r] + len as i32);
    }
    let nnz = offsets[rows] as usize;
    let vals: Vec<f32> = (0..nnz).map(|i| (i % 97) as f32 * 0.25 - 3.0).collect();
    let k = planted("csr_row_sum");
    let (v, o) = (up(&s, &vals), up(&s, &offsets));
    same_bits("csr_row_sum", |on| {
        let mut out = up(&s, &vec![f32::NAN; rows]);
        unsafe {
            k.launch(&s)
                .grid(div(rows, 128))
                .block(128)
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&v)
                .arg(&o)
                .arg(&(rows as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    let cov = k.coverage().unwrap().unwrap();
    assert!(cov.versioned_loops >= 1 && cov.hoisted > 0, "{cov:?}");
    // The last offset one past the values: the last row reads `vals[nnz]`.
    let mut bad = offsets.clone();
    bad[rows] += 1;
    let o = up(&s, &bad);
    let mut out = up(&s, &vec![0.0f32; rows]);
    let r = unsafe {
        k.launch(&s)
            .grid(div(rows, 128))
            .block(128)
            .arg_mut(&mut out)
            .arg(&v)
            .arg(&o)
            .arg(&(rows as i32))
            .run()
    };
    check_oob(
        "csr_row_sum",
        r,
        Expect {
            buffer: "vals",
            index: nnz as i64,
            len: nnz as u64,
            access: Read,
            block: (((rows - 1) / 128) as u32, 0, 0),
            thread: (((rows - 1) % 128) as u32, 0, 0),
        },
    );
    next_launch_works(&s);

    // A warp per row, lanes striding over a length read from memory.
    let (rows, cols) = (8usize, 100usize);
    let m: Vec<f32> = (0..rows * cols)
        .map(|i| (i % 89) as f32 * 0.5 - 7.0)
        .collect();
    let k = planted("lane_stride_row");
    let dm = up(&s, &m);
    let lens = up(&s, &vec![cols as i32; rows]);
    same_bits("lane_stride_row", |on| {
        let mut out = up(&s, &vec![f32::NAN; rows]);
        unsafe {
            k.launch(&s)
                .grid(rows as u32)
                .block(32)
                .instrument(on)
                .arg_mut(&mut out)
                .arg(&dm)
                .arg(&lens)
                .arg(&(cols as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    let cov = k.coverage().unwrap().unwrap();
    assert!(cov.versioned_loops >= 1 && cov.hoisted > 0, "{cov:?}");
    // One trip too many in the last row: lane `cols % 32` reads the element past the matrix.
    let mut l = vec![cols as i32; rows];
    l[rows - 1] += 1;
    let lens = up(&s, &l);
    let mut out = up(&s, &vec![0.0f32; rows]);
    let r = unsafe {
        k.launch(&s)
            .grid(rows as u32)
            .block(32)
            .arg_mut(&mut out)
            .arg(&dm)
            .arg(&lens)
            .arg(&(cols as i32))
            .run()
    };
    check_oob(
        "lane_stride_row",
        r,
        Expect {
            buffer: "m",
            index: (rows * cols) as i64,
            len: (rows * cols) as u64,
            access: Read,
            block: ((rows - 1) as u32, 0, 0),
            thread: ((cols % 32) as u32, 0, 0),
        },
    );
    next_launch_works(&s);
}

#[test]
fn gpu_planted_assert_is_a_device_assert_and_the_context_lives() {
    let Some(s) = gpu_or_skip() else { return };
    let (mut out, inp) = (up(&s, &vec![0.0f32; 1023]), up(&s, &vec![3.0f32; 1023]));
    let r = unsafe {
        planted("checked_copy")
            .launch(&s)
            .grid(4)
            .block(256)
            .arg_mut(&mut out)
            .arg(&inp)
            .arg(&1023i32)
            .run()
    };
    let e = r.unwrap_err();
    let Error::DeviceAssert(a) = &e else {
        panic!("expected DeviceAssert, got {e}")
    };
    let text = e.to_string();
    assert_eq!(&*a.kernel, "checked_copy");
    assert_eq!(a.message, "i < n", "{text}");
    assert_eq!(a.line, bug_line("checked_copy"), "{text}");
    assert_eq!((a.block.x, a.thread.x), (3, 255), "{text}");
    assert_eq!(a.count, 1, "{text}");
    assert!(
        text.contains("assertion `i < n` failed in thread (255, 0, 0) of block (3, 0, 0)"),
        "{text}"
    );
    assert!(text.contains("assert(i < n);"), "{text}");
    println!("checked_copy:\n{text}\n");
    // The in-range threads still copied.
    assert!(s.clone_dtoh(&out).unwrap().iter().all(|&v| v == 3.0));
    next_launch_works(&s);
}

#[test]
fn gpu_launch_setting_wins_over_the_kernel_and_coverage_is_reported() {
    let Some(s) = gpu_or_skip() else { return };
    // The kernel says On; the launch says no: the plain build runs.
    let k = planted("fill");
    let mut out = up(&s, &vec![f32::NAN; 256]);
    unsafe {
        k.launch(&s)
            .grid(1)
            .block(256)
            .instrument(false)
            .arg_mut(&mut out)
            .arg(&2.0f32)
            .arg(&256i32)
            .run()
    }
    .unwrap();
    assert!(s.clone_dtoh(&out).unwrap().iter().all(|&v| v == 2.0));
    // An Off kernel launched with .instrument(true) is checked.
    let off = Kernel::new(bugs(), "off_by_one").instrument(false).build();
    let mut out = up(&s, &vec![0.0f32; 100]);
    let e = unsafe {
        off.launch(&s)
            .grid(1)
            .block(128)
            .instrument(true)
            .arg_mut(&mut out)
            .arg(&100i32)
            .run()
    }
    .unwrap_err();
    assert!(matches!(e, Error::OutOfBounds(_)), "{e}");
    let cov = off.coverage().unwrap().unwrap();
    // `if (i <= n) out[i]`: the guard bounds the index by `n`, so the access is checked on
    // the host (and, as above, on the device when the launch's `n` does not fit the buffer).
    assert_eq!(cov.checked + cov.host_checked, 1);
    assert!(cov.is_complete());
    next_launch_works(&s);
}

/// A `__half2` read through a `CudaSlice<f16>`, one pair past its end: the index counts the
/// buffer's `f16` elements (1024, not the 512th pair), and the report says whose elements.
#[test]
fn gpu_a_half2_read_past_an_f16_buffer_counts_in_f16_elements() {
    let Some(s) = gpu_or_skip() else { return };
    let src = CudaSource::from_str(
        "half2.cu",
        r#"#include <cuda_fp16.h>
extern "C" __global__ void half2_sum(float* out, const __half* x, int pairs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) {
        __half2 v = reinterpret_cast<const __half2*>(x)[i];
        out[i] = __low2float(v) + __high2float(v);
    }
}
"#,
    );
    let k = Kernel::new(src, "half2_sum")
        .instrument(true)
        .sync(true)
        .build();
    let n = 1024usize;
    let x = up(&s, &vec![half::f16::ONE; n]);
    let mut out = up(&s, &vec![f32::NAN; n / 2 + 1]);
    // One pair too many: thread 512 reads `f16` elements 1024 and 1025 of a 1024-long `x`.
    let pairs = (n / 2 + 1) as i32;
    let r = unsafe {
        k.launch(&s)
            .grid(3)
            .block(256)
            .arg_mut(&mut out)
            .arg(&x)
            .arg(&pairs)
            .run()
    };
    let e = r.expect_err("thread 512 reads past `x`");
    let Error::OutOfBounds(o) = &e else {
        panic!("expected OutOfBounds, got {e}")
    };
    let text = e.to_string();
    assert_eq!(
        (
            o.buffer.as_str(),
            o.index,
            o.len,
            o.elem_bytes,
            o.access_bytes
        ),
        ("x", 1024, 1024, 2, 4),
        "{text}"
    );
    assert_eq!(o.elem_type.as_deref(), Some("f16"), "{text}");
    assert!(
        text.contains(
            "read of `x`: index 1024 (in `f16` elements), but `x` has 1024 elements (a 4-byte \
             access covers elements 1024..1026)"
        ),
        "{text}"
    );
    // The pairs inside `x` were summed.
    let got = s.clone_dtoh(&out).unwrap();
    assert!(got[..n / 2].iter().all(|&v| v == 2.0), "{:?}", &got[..8]);
    next_launch_works(&s);
}

// ---- the forms real kernel libraries use (tests/cuda/forms.cu) -------------------------------

fn forms() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/forms.cu")).unwrap()
}

/// The 1-based line of `SITE(name)` in forms.cu.
fn site_line(name: &str) -> u32 {
    let marker = format!("SITE({name})");
    1 + forms()
        .text
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in forms.cu")) as u32
}

/// A kernel of forms.cu that synchronizes; `instrument` is the kernel's switch, unset for `None`.
fn form(name: &str, instrument: Option<bool>) -> Kernel {
    let k = Kernel::new(forms(), name).sync(true);
    match instrument {
        Some(on) => k.instrument(on),
        None => k,
    }
    .build()
}

/// What a planted bug in forms.cu must report.
struct FormExpect {
    kernel: &'static str,
    buffer: &'static str,
    index: i64,
    len: u64,
    access: FaultKind,
    block: u32,
    thread: u32,
    site: &'static str,
    count: u32,
}

fn check_form(r: Result<(), Error>, x: FormExpect) {
    let e = r.expect_err(x.kernel);
    let Error::OutOfBounds(o) = &e else {
        panic!("{}: expected OutOfBounds, got {e}", x.kernel)
    };
    let text = e.to_string();
    assert_eq!(&*o.kernel, x.kernel, "{text}");
    assert_eq!(o.buffer, x.buffer, "{text}");
    assert_eq!((o.index, o.len), (x.index, x.len), "{text}");
    // PTX checks a read-modify-write (`a[i] += v`) as its read, then its write: the read is
    // the first fault.
    let access = if x.access == FaultKind::ReadWrite {
        FaultKind::Read
    } else {
        x.access
    };
    assert_eq!(o.access, access, "{text}");
    assert_eq!((o.block.x, o.thread.x), (x.block, x.thread), "{text}");
    assert_eq!(o.line, site_line(x.site), "{text}");
    assert_eq!(o.count, x.count, "{text}");
    assert!(o.file.ends_with("forms.cu"), "{text}");
    assert!(text.contains("the context is still usable"), "{text}");
    println!("{}:\n{text}\n", x.kernel);
}

/// Info for the strided kernels: dims, then strides (`size_t`).
fn info(s: &Arc<CudaStream>, dims: &[u64], strides: &[u64]) -> CudaSlice<u64> {
    let v: Vec<u64> = dims.iter().chain(strides).copied().collect();
    up(s, &v)
}

#[test]
fn gpu_forms_are_bit_identical_instrumented() {
    let Some(s) = gpu_or_skip() else { return };
    let mut rng = XorShift::from_time();
    let n = 50_000usize;
    let x = rng.floats(n);
    // Macro-generated, contiguous and strided (a transposed 200 x 250 view), and in place.
    for (name, strided) in [("uneg_f32", false), ("usqr_f32", true)] {
        let k = form(name, None);
        same_bits(name, |on| {
            let inp = up(&s, &x);
            let inf = if strided {
                info(&s, &[200, 250], &[1, 200])
            } else {
                info(&s, &[n as u64], &[1])
            };
            let mut out = up(&s, &vec![f32::NAN; n]);
            unsafe {
                k.launch(&s)
                    .grid(64)
                    .block(256)
                    .instrument(on)
                    .arg(&(n as u64))
                    .arg(&(if strided { 2i32 } else { 1 }))
                    .arg(&inf)
                    .arg(&inp)
                    .arg_mut(&mut out)
                    .run()
            }
            .unwrap();
            bits(&s.clone_dtoh(&out).unwrap())
        });
    }
    let k = form("uneg_f32", None);
    same_bits("uneg_f32 in place", |on| {
        let inf = info(&s, &[n as u64], &[1]);
        let mut out = up(&s, &x);
        unsafe {
            k.launch(&s)
                .grid(64)
                .block(256)
                .instrument(on)
                .arg(&(n as u64))
                .arg(&1i32)
                .arg(&inf)
                .arg(&0u64)
                .arg_mut(&mut out)
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    // Gather through an index buffer and two inlined helpers.
    let ids: Vec<i64> = (0..n).map(|i| ((i * 7919) % n) as i64).collect();
    let k = form("gather", None);
    same_bits("gather", |on| {
        let (src, idd) = (up(&s, &x), up(&s, &ids));
        let mut out = up(&s, &vec![f32::NAN; n]);
        unsafe {
            k.launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg(&src)
                .arg(&idd)
                .arg_mut(&mut out)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    // float4 views.
    let k = form("copy_vec4", None);
    same_bits("copy_vec4", |on| {
        let a = up(&s, &x);
        let mut out = up(&s, &vec![f32::NAN; n]);
        unsafe {
            k.launch(&s)
                .grid(div(n / 4, 256))
                .block(256)
                .instrument(on)
                .arg(&a)
                .arg_mut(&mut out)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    // A template instantiation.
    let k = form("axpy<float>", None);
    let y0 = rng.floats(n);
    same_bits("axpy<float>", |on| {
        let xd = up(&s, &x);
        let mut y = up(&s, &y0);
        unsafe {
            k.launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg_mut(&mut y)
                .arg(&xd)
                .arg(&0.5f32)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&y).unwrap())
    });
    // Aligned dynamic shared memory.
    let k = form("reverse_block", None);
    same_bits("reverse_block", |on| {
        let inp = up(&s, &x);
        let mut out = up(&s, &vec![f32::NAN; n]);
        unsafe {
            k.launch(&s)
                .grid(div(n, 128))
                .block(128)
                .shared_bytes(128 * 4)
                .instrument(on)
                .arg(&inp)
                .arg_mut(&mut out)
                .arg(&(n as i32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
}

#[test]
fn gpu_forms_planted_bugs_are_named_exactly() {
    let Some(s) = gpu_or_skip() else { return };
    use FaultKind::*;
    let on = Some(true);
    let n = 1000usize;

    // 1. Macro-generated, `numel` one past the buffers: thread 1000 reads inp[1000] (the
    //    pointer is `inp ? inp : out`; the record's base names `inp`) and writes out[1000].
    let inp = up(&s, &vec![1.0f32; n]);
    let inf = info(&s, &[n as u64 + 1], &[1]);
    let mut out = up(&s, &vec![0.0f32; n]);
    let r = unsafe {
        form("uneg_f32", on)
            .launch(&s)
            .grid(4)
            .block(256)
            .arg(&(n as u64 + 1))
            .arg(&1i32)
            .arg(&inf)
            .arg(&inp)
            .arg_mut(&mut out)
            .run()
    };
    check_form(
        r,
        FormExpect {
            kernel: "uneg_f32",
            buffer: "inp",
            index: 1000,
            len: 1000,
            access: Read,
            block: 3,
            thread: 232,
            site: "uneg_f32",
            count: 2,
        },
    );
    // The in-range elements were still computed.
    assert!(s.clone_dtoh(&out).unwrap().iter().all(|&v| v == -1.0));
    next_launch_works(&s);

    // 2. The same kernel in place (`inp` null): the fault names `out`.
    let mut out = up(&s, &vec![1.0f32; n]);
    let r = unsafe {
        form("uneg_f32", on)
            .launch(&s)
            .grid(4)
            .block(256)
            .arg(&(n as u64 + 1))
            .arg(&1i32)
            .arg(&inf)
            .arg(&0u64)
            .arg_mut(&mut out)
            .run()
    };
    check_form(
        r,
        FormExpect {
            kernel: "uneg_f32",
            buffer: "out",
            index: 1000,
            len: 1000,
            access: Read,
            block: 3,
            thread: 232,
            site: "uneg_f32",
            count: 2,
        },
    );
    next_launch_works(&s);

    // 3. Wrong stride through the strided-index helper: stride 2 over 501 elements makes
    //    element 500 read inp[1000].
    let inf = info(&s, &[501, 1], &[2, 1]);
    let mut out = up(&s, &vec![0.0f32; n]);
    let r = unsafe {
        form("uneg_f32", on)
            .launch(&s)
            .grid(2)
            .block(256)
            .arg(&501u64)
            .arg(&2i32)
            .arg(&inf)
            .arg(&inp)
            .arg_mut(&mut out)
            .run()
    };
    check_form(
        r,
        FormExpect {
            kernel: "uneg_f32",
            buffer: "inp",
            index: 1000,
            len: 1000,
            access: Read,
            block: 1,
            thread: 244,
            site: "uneg_f32",
            count: 1,
        },
    );
    next_launch_works(&s);

    // 4. An index buffer with a bad entry, read two inlined helpers deep.
    let mut ids: Vec<i64> = (0..n as i64).collect();
    ids[77] = n as i64 + 5;
    let (src, idd) = (up(&s, &vec![2.0f32; n]), up(&s, &ids));
    let mut out = up(&s, &vec![0.0f32; n]);
    let r = unsafe {
        form("gather", on)
            .launch(&s)
            .grid(4)
            .block(256)
            .arg(&src)
            .arg(&idd)
            .arg_mut(&mut out)
            .arg(&(n as i32))
            .run()
    };
    let text = r.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    check_form(
        r,
        FormExpect {
            kernel: "gather",
            buffer: "src",
            index: 1005,
            len: 1000,
            access: Read,
            block: 0,
            thread: 77,
            site: "load_at",
            count: 1,
        },
    );
    assert!(text.contains("inlined into"), "{text}");
    next_launch_works(&s);

    // 5. float4 view with a partial trailing vector: 10 floats, n = 12 lets thread 2 read
    //    floats 8..12.
    let a = up(&s, &[1.0f32; 10]);
    let mut out = up(&s, &[0.0f32; 12]);
    let r = unsafe {
        form("copy_vec4", on)
            .launch(&s)
            .grid(1)
            .block(32)
            .arg(&a)
            .arg_mut(&mut out)
            .arg(&12i32)
            .run()
    };
    let text = r.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    check_form(
        r,
        FormExpect {
            kernel: "copy_vec4",
            buffer: "a",
            index: 8,
            len: 10,
            access: Read,
            block: 0,
            thread: 2,
            site: "copy_vec4",
            count: 1,
        },
    );
    assert!(
        text.contains("16-byte access covers elements 8..12"),
        "{text}"
    );
    next_launch_works(&s);

    // 6. A template instantiation with `n` past `x`.
    let xd = up(&s, &vec![1.0f64; 100]);
    let mut y = up(&s, &vec![0.0f64; 101]);
    let r = unsafe {
        form("axpy<double>", on)
            .launch(&s)
            .grid(1)
            .block(128)
            .arg_mut(&mut y)
            .arg(&xd)
            .arg(&2.0f64)
            .arg(&101i32)
            .run()
    };
    check_form(
        r,
        FormExpect {
            kernel: "axpy<double>",
            buffer: "x",
            index: 100,
            len: 100,
            access: Read,
            block: 0,
            thread: 100,
            site: "axpy",
            count: 1,
        },
    );
    next_launch_works(&s);

    // 7. Aligned dynamic shared memory one float short of the block: thread 127 writes s[127]
    //    (then thread 0 reads it back).
    let inp = up(&s, &vec![1.0f32; 128]);
    let mut out = up(&s, &vec![0.0f32; 128]);
    let r = unsafe {
        form("reverse_block", on)
            .launch(&s)
            .grid(1)
            .block(128)
            .shared_bytes(127 * 4)
            .arg(&inp)
            .arg_mut(&mut out)
            .arg(&128i32)
            .run()
    };
    check_form(
        r,
        FormExpect {
            kernel: "reverse_block",
            buffer: "smem",
            index: 127,
            len: 127,
            access: Write,
            block: 0,
            thread: 127,
            site: "reverse_block",
            count: 2,
        },
    );
    next_launch_works(&s);
}

#[test]
fn gpu_a_split_kernel_skips_each_bad_read_and_goes_on_in_its_slow_copy() {
    let Some(s) = gpu_or_skip() else { return };
    let mut rng = XorShift::from_time();
    let (n, w) = (10_000usize, 9usize);
    // Non-negative inputs: adding the 0 of a skipped read never changes a sum's bits.
    let x: Vec<f32> = (0..n + w - 1).map(|_| rng.f32().abs()).collect();
    let nan = f32::NAN;
    let run = |kern: &Kernel, input: &[f32], on: bool| -> (Result<(), Error>, Vec<f32>) {
        let xd = up(&s, input);
        let mut out = up(&s, &vec![nan; n]);
        let r = unsafe {
            kern.launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg(&xd)
                .arg_mut(&mut out)
                .arg(&(n as i32))
                .arg(&(w as i32))
                .run()
        };
        (r, s.clone_dtoh(&out).unwrap())
    };
    let kern = form("window_sum", Some(true));
    // In bounds (the buffer holds n + w - 1): plain and checked agree bit for bit.
    same_bits("window_sum", |on| {
        let (r, out) = run(&kern, &x, on);
        r.unwrap();
        bits(&out)
    });
    // The buffer holds n: the last w - 1 threads read past it, w(w-1)/2 reads in all.
    let (r, out) = run(&kern, &x[..n], true);
    let e = r.expect_err("window_sum reads past its buffer");
    let Error::OutOfBounds(o) = &e else {
        panic!("expected OutOfBounds, got {e}")
    };
    let text = e.to_string();
    assert_eq!((o.buffer.as_str(), o.len), ("in", n as u64), "{text}");
    assert!((n as i64..(n + w - 1) as i64).contains(&o.index), "{text}");
    let who = o.block.x as usize * 256 + o.thread.x as usize;
    assert!((n - w + 1..n).contains(&who), "{text}");
    assert_eq!(o.count as usize, w * (w - 1) / 2, "{text}");
    assert_eq!(o.line, site_line("window_sum"), "{text}");
    // Every thread finished, the faulting ones with 0 for each skipped read.
    for (i, got) in out.iter().enumerate() {
        let mut acc = 0.0f32;
        for k in 0..w {
            acc += if i + k < n { x[i + k] } else { 0.0 };
        }
        assert_eq!(
            got.to_bits(),
            acc.to_bits(),
            "out[{i}]: {got} vs {acc}\n{text}"
        );
    }
    println!("window_sum:\n{text}\n");
    next_launch_works(&s);
}

/// Candle's rope kernels gave different bits plain and bounds-checked, with no fault:
/// checks between a multiply and the subtract it feeds changed which product ptxas contracted
/// into an FMA (instrument/contract.rs). The rotation form of forms.cu, in f32 and f64, must be
/// bit-identical; and its `__ldg` read (`ld.global.nc` on a generic address, listed unchecked
/// before) is checked: `s` one element short is named exactly.
#[test]
fn gpu_rotary_form_is_bit_identical_and_its_ldg_read_is_checked() {
    let Some(s) = gpu_or_skip() else { return };
    let mut rng = XorShift::from_time();
    let (n_pairs, half) = (40_000usize, 64usize);
    let x = rng.floats(2 * n_pairs);
    let (c, sn) = (rng.floats(half), rng.floats(half));
    let k = form("rotate_f32", None);
    same_bits("rotate_f32", |on| {
        let (xd, cd, sd) = (up(&s, &x), up(&s, &c), up(&s, &sn));
        let mut out = up(&s, &vec![f32::NAN; 2 * n_pairs]);
        unsafe {
            k.launch(&s)
                .grid(div(n_pairs, 256))
                .block(256)
                .instrument(on)
                .arg(&xd)
                .arg(&cd)
                .arg(&sd)
                .arg_mut(&mut out)
                .arg(&(n_pairs as u32))
                .arg(&(half as u32))
                .run()
        }
        .unwrap();
        bits(&s.clone_dtoh(&out).unwrap())
    });
    let wide = |v: &[f32]| {
        v.iter()
            .map(|&f| f64::from(f) * 1.000_000_1)
            .collect::<Vec<f64>>()
    };
    let (x64, c64, s64) = (wide(&x), wide(&c), wide(&sn));
    let k = form("rotate_f64", None);
    same_bits("rotate_f64", |on| {
        let (xd, cd, sd) = (up(&s, &x64), up(&s, &c64), up(&s, &s64));
        let mut out = up(&s, &vec![f64::NAN; 2 * n_pairs]);
        unsafe {
            k.launch(&s)
                .grid(div(n_pairs, 256))
                .block(256)
                .instrument(on)
                .arg(&xd)
                .arg(&cd)
                .arg(&sd)
                .arg_mut(&mut out)
                .arg(&(n_pairs as u32))
                .arg(&(half as u32))
                .run()
        }
        .unwrap();
        s.clone_dtoh(&out)
            .unwrap()
            .iter()
            .flat_map(|v| {
                let b = v.to_bits();
                [b as u32, (b >> 32) as u32]
            })
            .collect()
    });

    // `s` one short of `half` = `n_pairs`: only the last pair's thread (999: block 3, thread
    // 231) reads past it, through `__ldg`.
    let n = 1000usize;
    let (xd, cd) = (up(&s, &vec![1.0f32; 2 * n]), up(&s, &vec![1.0f32; n]));
    let sd = up(&s, &vec![0.0f32; n - 1]);
    let mut out = up(&s, &vec![0.0f32; 2 * n]);
    let r = unsafe {
        form("rotate_f32", Some(true))
            .launch(&s)
            .grid(4)
            .block(256)
            .arg(&xd)
            .arg(&cd)
            .arg(&sd)
            .arg_mut(&mut out)
            .arg(&(n as u32))
            .arg(&(n as u32))
            .run()
    };
    check_form(
        r,
        FormExpect {
            kernel: "rotate_f32",
            buffer: "s",
            index: 999,
            len: 999,
            access: FaultKind::Read,
            block: 3,
            thread: 231,
            site: "rotate_ldg",
            count: 1,
        },
    );
    next_launch_works(&s);
}

/// A broadcasting binary op (candle's `BINARY_OP`, `bench/kernels/elementwise.cu`): with a
/// one-row `rhs`, the host checks of the contiguous path's `rhs[i]` fail for the launch (the
/// path is not taken, but the host cannot know), so the launch runs the build that checks just
/// those accesses on the device and keeps every other access's host check. Healthy: the
/// output is bit-identical to the plain launch and to the reference. Planted bug: `rhs`
/// strides of a full matrix over a one-row buffer: every read past the row is reported, with
/// buffer, index, length, thread and line, and the next launch works.
#[test]
fn gpu_a_broadcast_operand_failing_host_checks_is_checked_on_the_device() {
    let Some(s) = gpu_or_skip() else { return };
    let src = CudaSource::from_file(repo_root().join("bench/kernels/elementwise.cu")).unwrap();
    let line_of = |what: &str| {
        1 + src
            .text
            .lines()
            .position(|l| l.starts_with(what))
            .expect("in the file") as u32
    };
    let (invocation, definition) = (
        line_of("BINARY_OP(float, badd_f32"),
        line_of("#define BINARY_OP"),
    );
    let kernel = Kernel::new(src, "badd_f32").sync(true).build();
    let mut rng = XorShift::from_time();
    let (rows, cols) = (64usize, 1000usize);
    let n = rows * cols;
    let (a, b) = (rng.floats(n), rng.floats(cols));
    let (da, db) = (up(&s, &a), up(&s, &b));
    let run = |on: bool, rhs_strides: [u64; 2]| {
        let inf = info(
            &s,
            &[rows as u64, cols as u64, cols as u64, 1],
            &rhs_strides,
        );
        let mut out = up(&s, &vec![f32::NAN; n]);
        let r = unsafe {
            kernel
                .launch(&s)
                .grid(div(n, 256))
                .block(256)
                .instrument(on)
                .arg(&(n as u64))
                .arg(&2u64)
                .arg(&inf)
                .arg(&da)
                .arg(&db)
                .arg_mut(&mut out)
                .run()
        };
        (r, s.clone_dtoh(&out).unwrap())
    };
    let reference: Vec<f32> = (0..n).map(|i| a[i] + b[i % cols]).collect();
    let (r, plain) = run(false, [0, 1]);
    r.unwrap();
    let (r, checked) = run(true, [0, 1]);
    r.unwrap();
    assert_eq!(bits(&plain), bits(&reference));
    assert_eq!(bits(&checked), bits(&reference));

    let (r, _) = run(true, [cols as u64, 1]);
    let e = r.expect_err("rhs read past its row");
    let Error::OutOfBounds(o) = &e else {
        panic!("expected OutOfBounds, got {e}")
    };
    let text = e.to_string();
    println!("{text}");
    assert_eq!(o.buffer, "rhs", "{text}");
    assert_eq!(o.access, FaultKind::Read, "{text}");
    assert_eq!(o.len, cols as u64, "{text}");
    // One element per thread: the index is the thread's.
    let thread = i64::from(o.block.x) * 256 + i64::from(o.thread.x);
    assert_eq!(o.index, thread, "{text}");
    assert!((cols as i64..n as i64).contains(&o.index), "{text}");
    assert_eq!(o.count as usize, n - cols, "{text}");
    // The invocation that made the kernel, and the macro behind it.
    assert_eq!(o.line, invocation, "{text}");
    assert_eq!(
        o.macro_definition,
        Some(("BINARY_OP".to_string(), definition)),
        "{text}"
    );
    next_launch_works(&s);
}

/// What `ldmatrix_rows` (forms.cu) leaves in `out` for rows `row_of` of `tile` (`rows` rows
/// of 4 words per block): register j of lane t holds word t % 4 of the row lane 8 j + t / 4
/// gave (`x2`: registers 0 and 1 only, the others stay 0). A row outside the tile is read where
/// the checked build redirects it: the tile's start plus the row address modulo 16, row 0 here.
fn ldmatrix_reference(
    tile: &[u32],
    row_of: &[i32],
    rows: usize,
    blocks: usize,
    x2: bool,
) -> Vec<u32> {
    let mut out = vec![0u32; blocks * 32 * 4];
    for b in 0..blocks {
        for t in 0..32 {
            for j in 0..if x2 { 2 } else { 4 } {
                let r = row_of[8 * j + t / 4];
                let r = if (0..rows as i32).contains(&r) {
                    r as usize
                } else {
                    0
                };
                out[(b * 32 + t) * 4 + j] = tile[b * rows * 4 + r * 4 + t % 4];
            }
        }
    }
    out
}

#[test]
fn gpu_ldmatrix_rows_are_bit_identical_and_a_bad_row_is_redirected_and_named() {
    let Some(s) = gpu_or_skip() else { return };
    let mut rng = XorShift::from_time();
    let (rows, blocks) = (32usize, 8usize);
    let tile: Vec<u32> = (0..blocks * rows * 4).map(|_| rng.next() as u32).collect();
    // A permutation of the rows.
    let mut row_of: Vec<i32> = (0..32).collect();
    for k in (1..32).rev() {
        row_of.swap(k, (rng.next() % (k as u64 + 1)) as usize);
    }
    let run = |instrument: bool, row_of: &[i32], x2: bool, grid: usize| {
        let (td, rd) = (up(&s, &tile), up(&s, row_of));
        let mut out = up(&s, &vec![u32::MAX; blocks * 32 * 4]);
        let r = unsafe {
            form("ldmatrix_rows", Some(instrument))
                .launch(&s)
                .grid(grid as u32)
                .block(32)
                .shared_bytes((rows * 16) as u32)
                .arg(&td)
                .arg(&rd)
                .arg_mut(&mut out)
                .arg(&(rows as i32))
                .arg(&i32::from(x2))
                .run()
        };
        (r, s.clone_dtoh(&out).unwrap())
    };
    // Healthy, x4 and x2: plain and checked bit-identical, and equal to the reference.
    for x2 in [false, true] {
        let want = ldmatrix_reference(&tile, &row_of, rows, blocks, x2);
        for instrument in [false, true] {
            let (r, got) = run(instrument, &row_of, x2, blocks);
            r.unwrap_or_else(|e| panic!("x2 {x2}, instrument {instrument}: {e}"));
            let diff = got.iter().zip(&want).position(|(a, b)| a != b);
            assert!(
                diff.is_none(),
                "x2 {x2}, instrument {instrument}: word {diff:?} differs from the reference"
            );
        }
    }
    // x2 reads rows from lanes 0-15 only: whatever lanes 16-31 hold is no fault.
    let mut high_lanes_wild = row_of.clone();
    for r in &mut high_lanes_wild[16..] {
        *r = 1 << 20;
    }
    let (r, got) = run(true, &high_lanes_wild, true, blocks);
    r.expect("lanes an x2 ignores are not checked");
    assert_eq!(
        got,
        ldmatrix_reference(&tile, &high_lanes_wild, rows, blocks, true)
    );

    // Planted: lane 5 gives row 32 of a 32-row tile. The warp still executes `ldmatrix`
    // (lane 5's row comes from the tile's start), the fault names the tile, row 32 of 32,
    // lane 5 and the line of the `asm`, and every other word is right.
    let mut bad = row_of.clone();
    bad[5] = rows as i32;
    let (r, got) = run(true, &bad, false, 1);
    check_form(
        r,
        FormExpect {
            kernel: "ldmatrix_rows",
            buffer: "tile",
            index: rows as i64,
            len: rows as u64,
            access: FaultKind::CollectiveRead,
            block: 0,
            thread: 5,
            site: "ldmatrix",
            count: 1,
        },
    );
    let want = ldmatrix_reference(&tile, &bad, rows, 1, false);
    assert_eq!(
        &got[..32 * 4],
        &want[..32 * 4],
        "the other lanes' rows are right"
    );
    next_launch_works(&s);
}

// ---- atomics through a checked index (tests/cuda/atomics.cu) ---------------------------------

fn atomics() -> CudaSource {
    CudaSource::from_file(repo_root().join("tests/cuda/atomics.cu")).unwrap()
}

/// The 1-based line of `SITE(name)` in atomics.cu.
fn atomic_line(name: &str) -> u32 {
    let marker = format!("SITE({name})");
    1 + atomics()
        .text
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in atomics.cu")) as u32
}

fn atomic_kernel(name: &str) -> Kernel {
    Kernel::new(atomics(), name).instrument(true).build()
}

/// The checked build of `name`, made as a launch with a 256- or 128-thread block makes it,
/// sends a failed check's atomic to the module's sink and records the fault after it
/// (`instrument/emit.rs`, `sink_redirect`): the form these launches test. Without it the
/// launches below would pass too (the branch form skips the atomic with the same report);
/// this says which form they ran.
fn assert_redirected(name: &str, block: u32) {
    use cudacheck::core::instrument::{instrument_ptx_with, InstrumentOptions};
    use cudacheck::nvrtc::{compile, CompileOptions};
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(cudacheck::core::Arch::new(9, 0))
    };
    let ptx = compile(&atomics(), &opts).unwrap().ptx.unwrap();
    let inst = instrument_ptx_with(
        &ptx,
        &InstrumentOptions::new()
            .block([block, 1, 1])
            .host_checks(true),
    )
    .unwrap();
    let start = inst.ptx.find(&format!(".entry {name}(")).unwrap();
    let body = &inst.ptx[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let atom = body
        .lines()
        .find(|l| {
            let l = l.trim_start();
            (l.starts_with("atom.global") || l.starts_with("red.global"))
                && l.contains("[%__cc_a64]")
        })
        .unwrap_or_else(|| panic!("{name}: no redirected atomic\n{body}"));
    let after = &body[body.find(atom).unwrap() + atom.len()..];
    assert!(
        after.trim_start().starts_with("@%__cc_p bra $__cc_cold"),
        "{name}: {atom}"
    );
}

/// An out-of-bounds global atomic from atomics.cu: the exact buffer, index, length, block,
/// thread and line, one fault.
fn check_atomic_oob(
    name: &str,
    r: Result<(), Error>,
    (buffer, index, len): (&str, i64, u64),
    block: u32,
    thread: u32,
) {
    let e = r.expect_err(name);
    let Error::OutOfBounds(o) = &e else {
        panic!("{name}: expected OutOfBounds, got {e}")
    };
    let text = e.to_string();
    assert_eq!(&*o.kernel, name, "{text}");
    assert_eq!(
        (o.buffer.as_str(), o.index, o.len),
        (buffer, index, len),
        "{text}"
    );
    assert_eq!(o.access, FaultKind::Atomic, "{text}");
    assert_eq!((o.block.x, o.block.y, o.block.z), (block, 0, 0), "{text}");
    assert_eq!(
        (o.thread.x, o.thread.y, o.thread.z),
        (thread, 0, 0),
        "{text}"
    );
    assert_eq!(o.line, atomic_line(name), "{text}");
    assert!(o.file.ends_with("atomics.cu"), "{text}");
    assert_eq!(o.count, 1, "exactly one thread faults: {text}");
    assert!(
        text.contains(&format!("of `{buffer}`: index {index}")),
        "{text}"
    );
    assert!(text.contains("the context is still usable"), "{text}");
    println!("{name}:\n{text}\n");
}

/// A global atomic through a bad index runs on the module's sink instead of
/// branching around it, and is reported after it. Each kernel gets one index planted out of
/// bounds into outputs poisoned first: the error names that atomic exactly, every in-bounds
/// atomic landed as the CPU computes it (the bad one touched no element), an atomic's old value
/// is 0 for the bad thread and the element's old value for the others, and the next launch on
/// the context works. The reduction form (`red`), an atomic whose result is used (`atom`, 8
/// bytes), and a block-stride loop (the fast copy, whose failed check leaves for the slow copy
/// after the atomic ran on the sink).
#[test]
fn gpu_global_atomics_through_a_bad_index_are_named_and_the_rest_land() {
    let Some(s) = gpu_or_skip() else { return };
    assert_redirected("scatter_add_i32", 256);
    assert_redirected("scatter_add_u64_old", 256);
    assert_redirected("index_add_rows", 128);

    // 1. out[idx[i]] += val[i]: 4096 values into 1000 bins (with collisions); idx[3001] is one
    // past the end (block 11, thread 185).
    let (n, bins) = (4096usize, 1000usize);
    let mut idx: Vec<i32> = (0..n).map(|i| ((i * 7919) % bins) as i32).collect();
    idx[3001] = bins as i32;
    let val: Vec<i32> = (0..n).map(|i| (i as i32) * 3 + 1).collect();
    let poison: Vec<i32> = (0..bins).map(|j| 0x5a5a_0000 + j as i32).collect();
    let mut want = poison.clone();
    for i in 0..n {
        if let Some(w) = want.get_mut(idx[i] as usize) {
            *w = w.wrapping_add(val[i]);
        }
    }
    let mut out = up(&s, &poison);
    let (idx_d, val_d) = (up(&s, &idx), up(&s, &val));
    let r = unsafe {
        atomic_kernel("scatter_add_i32")
            .launch(&s)
            .grid(div(n, 256))
            .block(256)
            .arg_mut(&mut out)
            .arg(&idx_d)
            .arg(&val_d)
            .arg(&(n as i32))
            .run()
    };
    check_atomic_oob(
        "scatter_add_i32",
        r,
        ("out", bins as i64, bins as u64),
        11,
        185,
    );
    assert_eq!(s.clone_dtoh(&out).unwrap(), want, "scatter_add_i32");
    next_launch_works(&s);

    // 2. old[i] = atomicAdd(&out[idx[i]], val[i]) on u64: a permutation of 2048, thread 777
    // (block 3, thread 9) with index -1.
    let n = 2048usize;
    let mut idx: Vec<i32> = (0..n).map(|i| ((i * 1237) % n) as i32).collect();
    let untouched = idx[777] as usize;
    idx[777] = -1;
    let val: Vec<u64> = (0..n as u64).map(|i| (i << 20) + 7).collect();
    let init: Vec<u64> = (0..n as u64)
        .map(|j| 0xa5a5_0000_0000_0000 + 3 * j)
        .collect();
    let mut out = up(&s, &init);
    let mut old = up(&s, &vec![u64::MAX; n]);
    let (idx_d, val_d) = (up(&s, &idx), up(&s, &val));
    let r = unsafe {
        atomic_kernel("scatter_add_u64_old")
            .launch(&s)
            .grid(div(n, 256))
            .block(256)
            .arg_mut(&mut out)
            .arg_mut(&mut old)
            .arg(&idx_d)
            .arg(&val_d)
            .arg(&(n as i32))
            .run()
    };
    check_atomic_oob("scatter_add_u64_old", r, ("out", -1, n as u64), 3, 9);
    let (out, old) = (s.clone_dtoh(&out).unwrap(), s.clone_dtoh(&old).unwrap());
    for i in 0..n {
        if i == 777 {
            assert_eq!(old[i], 0, "the skipped atomic's result is 0");
            continue;
        }
        let j = idx[i] as usize;
        assert_eq!(old[i], init[j], "old[{i}]");
        assert_eq!(out[j], init[j].wrapping_add(val[i]), "out[{j}]");
    }
    assert_eq!(out[untouched], init[untouched], "the bad thread's element");
    next_launch_works(&s);

    // 3. index_add over rows (a loop: fast and slow copies): 64 source rows of 300 into 16
    // rows, `out` one element short; only row 50 goes to the last row, so only its element
    // 299 (thread 299 - 2 * 128 = 43 of block 50) is out of bounds.
    let (rows, dim, out_rows) = (64usize, 300usize, 16usize);
    let idx: Vec<i32> = (0..rows)
        .map(|r| if r == 50 { 15 } else { (r % 15) as i32 })
        .collect();
    let src: Vec<i32> = (0..rows * dim).map(|k| (k as i32) * 5 - 7).collect();
    let len = out_rows * dim - 1;
    let poison: Vec<i32> = (0..len).map(|k| -(k as i32) - 1_000_000).collect();
    let mut want = poison.clone();
    for r in 0..rows {
        for c in 0..dim {
            if let Some(w) = want.get_mut(idx[r] as usize * dim + c) {
                *w = w.wrapping_add(src[r * dim + c]);
            }
        }
    }
    let mut out = up(&s, &poison);
    let (src_d, idx_d) = (up(&s, &src), up(&s, &idx));
    let r = unsafe {
        atomic_kernel("index_add_rows")
            .launch(&s)
            .grid(rows as u32)
            .block(128)
            .arg_mut(&mut out)
            .arg(&src_d)
            .arg(&idx_d)
            .arg(&(rows as i32))
            .arg(&(dim as i32))
            .run()
    };
    check_atomic_oob("index_add_rows", r, ("out", len as i64, len as u64), 50, 43);
    assert_eq!(s.clone_dtoh(&out).unwrap(), want, "index_add_rows");
    next_launch_works(&s);
}
