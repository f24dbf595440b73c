//! The styles set (`--set styles`): kernels of `bench/styles/` in styles the first set lacks,
//! each with its half (`tune` or `held-out`, fixed before any tuning: `bench/styles/README.md`)
//! and the buffer its planted twin overruns.

use super::*;
use cudacheck::ByValue;
use half::bf16;

const CONV: &str = "styles/conv.cu";
const WIN: &str = "styles/window.cu";
const QUANT: &str = "styles/quant.cu";
const SPARSE: &str = "styles/sparse.cu";
const ROWS: &str = "styles/rows.cu";

const fn tune(planted: &'static str) -> Option<Styled> {
    Some(Styled {
        half: Half::Tune,
        planted,
    })
}

const fn held(planted: &'static str) -> Option<Styled> {
    Some(Styled {
        half: Half::HeldOut,
        planted,
    })
}

/// A grid of 16 blocks per SM of an H100, for grid-stride loops.
const STRIDE_GRID: u32 = 132 * 16;

fn bytes(r: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| (r.next() >> 24) as u8).collect()
}

/// Small integers as floats, in [-4, 4]: sums of a few products are exact in any order.
fn small_ints(r: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| r.below(9) as f32 - 4.0).collect()
}

fn as_bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain numbers (f32, f16, i64, u8), no padding; read within the vector.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        .to_vec()
}

fn f32_at(b: &[u8], i: usize) -> f32 {
    f32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().unwrap())
}

/// `got` equals `want` byte for byte, or where the first difference is.
fn same_bytes(got: &[u8], want: &[u8], elem: usize) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} bytes, the reference has {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(at) => Err(format!("element {} differs from the reference", at / elem)),
    }
}

/// `struct Strided4` of `bench/styles/conv.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Strided4 {
    size: [i64; 4],
    stride: [i64; 4],
    perm: [i32; 4],
}
// SAFETY: `#[repr(C)]` with the CUDA struct's layout (80 bytes, 8-aligned).
unsafe impl DeviceRepr for Strided4 {}

/// `struct AxpbyParams` of `bench/styles/rows.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct AxpbyParams {
    x_off: i64,
    y_off: i64,
    out_off: i64,
    n: i64,
    a: f32,
    b: f32,
}
// SAFETY: `#[repr(C)]` with the CUDA struct's layout (40 bytes, 8-aligned).
unsafe impl DeviceRepr for AxpbyParams {}

/// `struct Particle` of `bench/styles/rows.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Particle {
    p: [f32; 3],
    v: [f32; 3],
    mass: f32,
    alive: i32,
}
// SAFETY: `#[repr(C)]`, eight 4-byte fields as the CUDA struct.
unsafe impl DeviceRepr for Particle {}

impl Poison for Particle {
    const POISON: Particle = Particle {
        p: [f32::NAN; 3],
        v: [f32::NAN; 3],
        mass: f32::NAN,
        alive: -1,
    };
}

#[allow(clippy::too_many_lines)]
pub(super) fn specs() -> Vec<Spec> {
    vec![
        // ---- conv.cu: tune, held-out, tune, ... ----
        Spec {
            name: "im2col_bump",
            style: "im2col, image pointer bumped through the padding, grid-stride",
            file: CONV,
            kernel: "im2col_bump",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("im"),
            setup: |s, k, sp| {
                let (c, h, w, kk, pad) = (128usize, 224usize, 224usize, 3usize, 1usize);
                let (oh, ow) = (h + 2 * pad - kk + 1, w + 2 * pad - kk + 1);
                let img = Rng::new(101).floats(c * h * w);
                let mut want = vec![0f32; c * kk * kk * oh * ow];
                for ch in 0..c {
                    for t in 0..kk * kk {
                        for y in 0..oh {
                            for x in 0..ow {
                                let (iy, ix) = ((y + t / kk) as i64 - 1, (x + t % kk) as i64 - 1);
                                if iy >= 0 && ix >= 0 && iy < h as i64 && ix < w as i64 {
                                    want[((ch * kk * kk + t) * oh + y) * ow + x] =
                                        img[(ch * h + iy as usize) * w + ix as usize];
                                }
                            }
                        }
                    }
                }
                let im = up(s, &img)?;
                let col = Out::<f32>::poisoned(s, want.len())?;
                let want = as_bytes(&want);
                let d = [c, h, w, kk, pad, 1, oh, ow].map(|x| x as i32);
                bench!(s, k, sp, format!("{c} x {h} x {w}, 3x3, pad 1"), grid: STRIDE_GRID,
                    outs: [col],
                    |l| l.arg(&im).arg_mut(&mut col.d).arg(&d[0]).arg(&d[1]).arg(&d[2])
                        .arg(&d[3]).arg(&d[4]).arg(&d[5]).arg(&d[6]).arg(&d[7]))
                .map(|b| b.checked_by(move |got| same_bytes(got, &want, 4)))
            },
        },
        Spec {
            name: "col2im_s1",
            style: "col2im, a thread per pixel summing the taps that cover it",
            file: CONV,
            kernel: "col2im_s1",
            block: (256, 1, 1),
            shared: 0,
            styled: held("col"),
            setup: |s, k, sp| {
                let (c, h, w, kk, pad) = (128usize, 224usize, 224usize, 3usize, 1usize);
                let (oh, ow) = (h, w);
                let col = up(s, &Rng::new(102).floats(c * kk * kk * oh * ow))?;
                let im = Out::<f32>::poisoned(s, c * h * w)?;
                let d = [c, h, w, kk, pad, oh, ow].map(|x| x as i32);
                bench!(s, k, sp, format!("{c} x {h} x {w}, 3x3, pad 1"), grid: div(c * h * w, 256),
                    outs: [im],
                    |l| l.arg(&col).arg_mut(&mut im.d).arg(&d[0]).arg(&d[1]).arg(&d[2])
                        .arg(&d[3]).arg(&d[4]).arg(&d[5]).arg(&d[6]))
            },
        },
        Spec {
            name: "conv3x3_pad_bump",
            style:
                "direct 3x3 convolution, zero padding, input and weight pointers bumped per channel",
            file: CONV,
            kernel: "conv3x3_pad_bump",
            block: (32, 8, 1),
            shared: 0,
            styled: tune("wt"),
            setup: |s, k, sp| {
                let (ci, co, h, w) = (32usize, 32usize, 512usize, 512usize);
                let mut r = Rng::new(103);
                let (inp, wt, bias) = (
                    up(s, &r.floats(ci * h * w))?,
                    up(s, &r.floats(co * ci * 9))?,
                    up(s, &r.floats(co))?,
                );
                let out = Out::<f32>::poisoned(s, co * h * w)?;
                bench!(s, k, sp, format!("{ci} to {co} channels, {h} x {w}"),
                    grid: (div(w, 32), div(h, 8), co as u32), outs: [out],
                    |l| l.arg(&inp).arg(&wt).arg(&bias).arg_mut(&mut out.d).arg(&(ci as i32))
                        .arg(&(h as i32)).arg(&(w as i32)))
            },
        },
        Spec {
            name: "pixel_shuffle_f16",
            style: "depth to space, half, 64-bit grid-stride loop",
            file: CONV,
            kernel: "pixel_shuffle_f16",
            block: (256, 1, 1),
            shared: 0,
            styled: held("in[67108864]"),
            setup: |s, k, sp| {
                let (n, c, h, w, r) = (16usize, 64usize, 128usize, 128usize, 2usize);
                let x = Rng::new(104).halves(n * c * r * r * h * w);
                let (oh, ow) = (h * r, w * r);
                let mut want = vec![f16::ZERO; x.len()];
                for (o, v) in want.iter_mut().enumerate() {
                    let (w2, h2, nc) = (o % ow, o / ow % oh, o / (ow * oh));
                    let (ch, b) = (nc % c, nc / c);
                    let ic = (ch * r + h2 % r) * r + w2 % r;
                    *v = x[((b * c * r * r + ic) * h + h2 / r) * w + w2 / r];
                }
                let inp = up(s, &x)?;
                let out = Out::<f16>::poisoned(s, x.len())?;
                let want = as_bytes(&want);
                let d = [n, c, h, w, r].map(|v| v as i32);
                bench!(s, k, sp, format!("{n} x {} x {h} x {w} halves, r = {r}", c * r * r),
                    grid: STRIDE_GRID, outs: [out],
                    |l| l.arg(&inp).arg_mut(&mut out.d).arg(&d[0]).arg(&d[1]).arg(&d[2])
                        .arg(&d[3]).arg(&d[4]))
                .map(|b| b.checked_by(move |got| same_bytes(got, &want, 2)))
            },
        },
        Spec {
            name: "nhwc_to_nchw_u8",
            style: "channels-last to channels-first bytes through a 32 x 33 shared tile",
            file: CONV,
            kernel: "nhwc_to_nchw_u8",
            block: (32, 8, 1),
            shared: 0,
            styled: tune("in"),
            setup: |s, k, sp| {
                let (n, hw, c) = (32usize, 223 * 223usize, 96usize);
                let x = bytes(&mut Rng::new(105), n * hw * c);
                let mut want = vec![0u8; x.len()];
                for b in 0..n {
                    for p in 0..hw {
                        for ch in 0..c {
                            want[(b * c + ch) * hw + p] = x[(b * hw + p) * c + ch];
                        }
                    }
                }
                let inp = up(s, &x)?;
                let out = Out::<u8>::poisoned(s, x.len())?;
                bench!(s, k, sp, format!("{n} x 223 x 223 x {c} bytes"),
                    grid: (div(hw, 32), div(c, 32), n as u32), outs: [out],
                    |l| l.arg(&inp).arg_mut(&mut out.d).arg(&(hw as i32)).arg(&(c as i32)))
                .map(|b| b.checked_by(move |got| same_bytes(got, &want, 1)))
            },
        },
        Spec {
            name: "permute4_strided",
            style:
                "4-d permute through sizes/strides/permutation struct passed by value, int64 math",
            file: CONV,
            kernel: "permute4_strided",
            block: (256, 1, 1),
            shared: 0,
            styled: held("in"),
            setup: |s, k, sp| {
                let size = [32i64, 64, 128, 128];
                let n = size.iter().product::<i64>() as usize;
                let st = ByValue(Strided4 {
                    size,
                    stride: [64 * 128 * 128, 128 * 128, 128, 1],
                    perm: [0, 2, 3, 1],
                });
                let inp = up(s, &Rng::new(106).floats(n))?;
                let out = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, "32 x 64 x 128 x 128, NCHW to NHWC".into(), grid: STRIDE_GRID,
                    outs: [out], |l| l.arg(&inp).arg_mut(&mut out.d).arg(&st))
            },
        },
        // ---- window.cu: tune, held-out, tune, ... ----
        Spec {
            name: "maxpool3s2_argmax",
            style: "3x3 max pool, stride 2, padding 1, int64 argmax indices",
            file: WIN,
            kernel: "maxpool3s2_argmax",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("in"),
            setup: |s, k, sp| {
                let (nc, h, w) = (1024usize, 257usize, 257usize);
                let (oh, ow) = ((h - 1) / 2 + 1, (w - 1) / 2 + 1);
                let x = Rng::new(107).floats(nc * h * w);
                let inp = up(s, &x)?;
                let out = Out::<f32>::poisoned(s, nc * oh * ow)?;
                let arg = Out::<i64>::poisoned(s, nc * oh * ow)?;
                let m = nc * oh * ow;
                let d = [nc, h, w, oh, ow].map(|v| v as i32);
                bench!(s, k, sp, format!("{nc} planes of {h} x {w}"), grid: div(m, 256),
                    outs: [out, arg],
                    |l| l.arg(&inp).arg_mut(&mut out.d).arg_mut(&mut arg.d).arg(&d[0])
                        .arg(&d[1]).arg(&d[2]).arg(&d[3]).arg(&d[4]))
                .map(|b| {
                    // Property: each maximum is the input at its argmax, inside its window, and
                    // no element of the window is larger.
                    b.checked_by(move |got| {
                        for i in 0..m {
                            let v = f32_at(got, i);
                            let a = i64::from_ne_bytes(
                                got[4 * m + 8 * i..4 * m + 8 * i + 8].try_into().unwrap(),
                            );
                            let (o_x, o_y, p) = (i % ow, i / ow % oh, i / (ow * oh));
                            let (ay, ax) = (a / w as i64, a % w as i64);
                            let (y0, x0) = (2 * o_y as i64 - 1, 2 * o_x as i64 - 1);
                            let inside =
                                a >= 0 && ay >= y0 && ay < y0 + 3 && ax >= x0 && ax < x0 + 3;
                            let plane = &x[p * h * w..(p + 1) * h * w];
                            let larger = (y0.max(0)..(y0 + 3).min(h as i64)).any(|y| {
                                (x0.max(0)..(x0 + 3).min(w as i64))
                                    .any(|xx| plane[(y * w as i64 + xx) as usize] > v)
                            });
                            if !inside || plane[a.max(0) as usize] != v || larger {
                                return Err(format!("output {i}: max {v} at {a}"));
                            }
                        }
                        Ok(())
                    })
                })
            },
        },
        Spec {
            name: "sobel_clamp_ldg",
            style: "Sobel, clamped edges through an image accessor and a templated __ldg helper",
            file: WIN,
            kernel: "sobel_clamp_ldg",
            block: (32, 8, 1),
            shared: 0,
            styled: held("img"),
            setup: |s, k, sp| {
                let (w, h) = (8192usize, 8192usize);
                let img = up(s, &Rng::new(108).floats(w * h))?;
                let out = Out::<f32>::poisoned(s, w * h)?;
                bench!(s, k, sp, format!("{w} x {h} floats"), grid: (div(w, 32), div(h, 8), 1),
                    outs: [out],
                    |l| l.arg(&img).arg_mut(&mut out.d).arg(&(w as i32)).arg(&(h as i32)))
            },
        },
        Spec {
            name: "gauss5_minmax_f16",
            style: "5x5 Gaussian on half, min/max edges, __constant__ taps, unrolled",
            file: WIN,
            kernel: "gauss5_minmax_f16",
            block: (32, 8, 1),
            shared: 0,
            styled: tune("in"),
            setup: |s, k, sp| {
                let (w, h) = (8192usize, 8192usize);
                let img = up(s, &Rng::new(109).halves(w * h))?;
                let out = Out::<f16>::poisoned(s, w * h)?;
                bench!(s, k, sp, format!("{w} x {h} halves"), grid: (div(w, 32), div(h, 8), 1),
                    outs: [out],
                    |l| l.arg(&img).arg_mut(&mut out.d).arg(&(w as i32)).arg(&(h as i32)))
            },
        },
        Spec {
            name: "resize_bilinear_rgb8",
            style:
                "bilinear resize of interleaved RGB bytes, half-pixel centres, clamped neighbours",
            file: WIN,
            kernel: "resize_bilinear_rgb8",
            block: (32, 8, 1),
            shared: 0,
            styled: held("src"),
            setup: |s, k, sp| {
                let (h, w, oh, ow) = (4096usize, 4096usize, 8192usize, 8192usize);
                let src = up(s, &bytes(&mut Rng::new(110), h * w * 3))?;
                let dst = Out::<u8>::poisoned(s, oh * ow * 3)?;
                let d = [h, w, oh, ow].map(|v| v as i32);
                bench!(s, k, sp, format!("{h} x {w} to {oh} x {ow} RGB"),
                    grid: (div(ow, 32), div(oh, 8), 1), outs: [dst],
                    |l| l.arg(&src).arg_mut(&mut dst.d).arg(&d[0]).arg(&d[1]).arg(&d[2])
                        .arg(&d[3]))
            },
        },
        Spec {
            name: "grid_sample_bilinear",
            style: "grid sample, zero padding, per-corner guards, channel pointers bumped",
            file: WIN,
            kernel: "grid_sample_bilinear",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("input"),
            setup: |s, k, sp| {
                let (n, c, h, w, oh, ow) =
                    (16usize, 32usize, 128usize, 128usize, 256usize, 256usize);
                let mut r = Rng::new(111);
                let input = up(s, &r.floats(n * c * h * w))?;
                let grid: Vec<f32> = r.floats(n * oh * ow * 2).iter().map(|v| v * 1.1).collect();
                let grid = up(s, &grid)?;
                let out = Out::<f32>::poisoned(s, n * c * oh * ow)?;
                let d = [n, c, h, w, oh, ow].map(|v| v as i32);
                bench!(s, k, sp, format!("{n} x {c} x {h} x {w} to {oh} x {ow}"),
                    grid: div(n * oh * ow, 256), outs: [out],
                    |l| l.arg(&input).arg(&grid).arg_mut(&mut out.d).arg(&d[0]).arg(&d[1])
                        .arg(&d[2]).arg(&d[3]).arg(&d[4]).arg(&d[5]))
            },
        },
        Spec {
            name: "upsample_trilinear2x",
            style: "3-d trilinear 2x upsampling, min-clamped far neighbours, 64-bit grid-stride",
            file: WIN,
            kernel: "upsample_trilinear2x",
            block: (256, 1, 1),
            shared: 0,
            styled: held("in"),
            setup: |s, k, sp| {
                let (nc, d) = (32usize, 64usize);
                let inp = up(s, &Rng::new(112).floats(nc * d * d * d))?;
                let out = Out::<f32>::poisoned(s, nc * 8 * d * d * d)?;
                let di = d as i32;
                bench!(s, k, sp, format!("{nc} volumes of {d}^3"), grid: STRIDE_GRID,
                    outs: [out],
                    |l| l.arg(&inp).arg_mut(&mut out.d).arg(&(nc as i32)).arg(&di).arg(&di)
                        .arg(&di))
            },
        },
        Spec {
            name: "avgpool2_pitched",
            style: "2x2 average pool of a pitched image, 2-d grid-stride loop",
            file: WIN,
            kernel: "avgpool2_pitched",
            block: (32, 8, 1),
            shared: 0,
            styled: tune("in"),
            setup: |s, k, sp| {
                let (w, h) = (8192usize, 8192usize);
                let (in_pitch, ow, oh) = (w + 64, w / 2, h / 2);
                let out_pitch = ow + 32;
                let inp = up(s, &Rng::new(113).floats(h * in_pitch))?;
                let out = Out::<f32>::poisoned(s, oh * out_pitch)?;
                bench!(s, k, sp, format!("{w} x {h}, pitch {in_pitch}"), grid: (16, 128, 1),
                    outs: [out],
                    |l| l.arg(&inp).arg(&in_pitch).arg_mut(&mut out.d).arg(&out_pitch)
                        .arg(&(ow as i32)).arg(&(oh as i32)))
            },
        },
        // ---- quant.cu: tune, held-out, ... ----
        Spec {
            name: "dequant_int4_matvec",
            style: "4-bit weights a 32-bit word at a time, half group scales, x read as float4",
            file: QUANT,
            kernel: "dequant_int4_matvec",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("x[16384]"),
            setup: |s, k, sp| {
                let (rows, cols) = (32768usize, 16384usize);
                let mut r = Rng::new(114);
                let w = up(s, &bytes(&mut r, rows * cols / 2))?;
                let scales: Vec<f16> = r
                    .floats(rows * cols / 32)
                    .iter()
                    .map(|v| f16::from_f32(v * 0.01))
                    .collect();
                let (scales, x) = (up(s, &scales)?, up(s, &r.floats(cols))?);
                let y = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} x {cols} int4"), grid: div(rows, 8),
                    outs: [y],
                    |l| l.arg(&w).arg(&scales).arg(&x).arg_mut(&mut y.d).arg(&(rows as i32))
                        .arg(&(cols as i32)))
            },
        },
        Spec {
            name: "unpack_int2_f16",
            style: "2-bit weights four to a byte, per-row scale and zero point, half2 stores",
            file: QUANT,
            kernel: "unpack_int2_f16",
            block: (256, 1, 1),
            shared: 0,
            styled: held("zero"),
            setup: |s, k, sp| {
                let (rows, cols) = (16384usize, 8192usize);
                let mut r = Rng::new(115);
                let packed = up(s, &bytes(&mut r, rows * cols / 4))?;
                let scale = up(s, &r.floats(rows))?;
                let zero: Vec<u8> = (0..rows).map(|_| r.below(4) as u8).collect();
                let zero = up(s, &zero)?;
                let out = Out::<f16>::poisoned(s, rows * cols)?;
                bench!(s, k, sp, format!("{rows} x {cols} int2"), grid: div(rows * cols / 4, 256),
                    outs: [out],
                    |l| l.arg(&packed).arg(&scale).arg(&zero).arg_mut(&mut out.d)
                        .arg(&(rows as i32)).arg(&(cols as i32)))
            },
        },
        Spec {
            name: "apply_bitmask",
            style: "bit-packed mask, 32 bits a word, 64-bit grid-stride loop",
            file: QUANT,
            kernel: "apply_bitmask",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("mask"),
            setup: |s, k, sp| {
                let n = 1usize << 26;
                let mut r = Rng::new(116);
                let xs = r.floats(n);
                let words: Vec<u32> = (0..n / 32).map(|_| r.next() as u32).collect();
                let scale = 1.25f32;
                let want: Vec<f32> = (0..n)
                    .map(|i| {
                        if words[i / 32] >> (i % 32) & 1 == 1 {
                            xs[i] * scale
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let (x, mask) = (up(s, &xs)?, up(s, &words)?);
                let out = Out::<f32>::poisoned(s, n)?;
                let want = as_bytes(&want);
                bench!(s, k, sp, format!("{n} floats"), grid: STRIDE_GRID, outs: [out],
                    |l| l.arg(&x).arg(&mask).arg_mut(&mut out.d).arg(&scale).arg(&(n as i64)))
                .map(|b| b.checked_by(move |got| same_bytes(got, &want, 4)))
            },
        },
        Spec {
            name: "quantize_rows_int8",
            style: "bf16 rows to int8 with a scale per row, block max-abs reduction",
            file: QUANT,
            kernel: "quantize_rows_int8",
            block: (256, 1, 1),
            shared: 0,
            styled: held("scales[32768]"),
            setup: |s, k, sp| {
                let (rows, cols) = (32768usize, 4096usize);
                let x: Vec<bf16> = Rng::new(117)
                    .floats(rows * cols)
                    .into_iter()
                    .map(bf16::from_f32)
                    .collect();
                let x = up(s, &x)?;
                let q = Out::<i8>::poisoned(s, rows * cols)?;
                let scales = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} x {cols} bf16"), grid: rows as u32,
                    outs: [q, scales],
                    |l| l.arg(&x).arg_mut(&mut q.d).arg_mut(&mut scales.d).arg(&(cols as i32)))
            },
        },
        // ---- sparse.cu: held-out, tune, ... (starts held-out: the halves are 15 and 15) ----
        Spec {
            name: "embedding_bag_sum",
            style:
                "embedding bag, int64 indices and offsets, the last bag ending at the indices' end",
            file: SPARSE,
            kernel: "embedding_bag_sum",
            block: (128, 1, 1),
            shared: 0,
            styled: held("offsets[65536]"),
            setup: |s, k, sp| {
                let (num, d, bags) = (262_144usize, 128usize, 65_536usize);
                let mut r = Rng::new(118);
                let mut offsets = Vec::with_capacity(bags);
                let mut indices = Vec::new();
                for _ in 0..bags {
                    offsets.push(indices.len() as i64);
                    for _ in 0..1 + r.below(40) {
                        indices.push(r.below(num as u64) as i64);
                    }
                }
                let n_idx = indices.len();
                let table = up(s, &r.floats(num * d))?;
                let (indices, offsets) = (up(s, &indices)?, up(s, &offsets)?);
                let out = Out::<f32>::poisoned(s, bags * d)?;
                bench!(s, k, sp, format!("{bags} bags of {n_idx} rows of {d}"),
                    grid: bags as u32, outs: [out],
                    |l| l.arg(&table).arg(&indices).arg(&offsets).arg_mut(&mut out.d)
                        .arg(&(bags as i32)).arg(&(n_idx as i64)).arg(&(d as i32)))
            },
        },
        Spec {
            name: "ragged_mean_h2",
            style: "ragged batch by cumulative sequence lengths, half2 reads, float2 means",
            file: SPARSE,
            kernel: "ragged_mean_h2",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("values"),
            setup: |s, k, sp| {
                let (batch, d2) = (256usize, 256usize);
                let mut r = Rng::new(119);
                let mut cu = vec![0i32];
                for _ in 0..batch {
                    cu.push(cu[cu.len() - 1] + 1 + r.below(2048) as i32);
                }
                let total = cu[batch] as usize;
                let values = up(s, &r.halves(total * d2 * 2))?;
                let cu = up(s, &cu)?;
                let out = Out::<f32>::poisoned(s, batch * d2 * 2)?;
                bench!(s, k, sp, format!("{batch} sequences, {total} rows of {} halves", 2 * d2),
                    grid: (div(d2, 256), batch as u32, 1), outs: [out],
                    |l| l.arg(&values).arg(&cu).arg_mut(&mut out.d).arg(&(batch as i32))
                        .arg(&(d2 as i32)))
            },
        },
        Spec {
            name: "spmv_ell",
            style: "ELL SpMV, column-major slots, -1 padding",
            file: SPARSE,
            kernel: "spmv_ell",
            block: (256, 1, 1),
            shared: 0,
            styled: held("cols"),
            setup: |s, k, sp| {
                let (rows, kk) = (4usize << 20, 16usize);
                let mut r = Rng::new(120);
                let mut cols = vec![-1i32; rows * kk];
                for row in 0..rows {
                    for slot in 0..4 + r.below(13) as usize {
                        cols[slot * rows + row] = r.below(rows as u64) as i32;
                    }
                }
                let (cols, vals, x) = (
                    up(s, &cols)?,
                    up(s, &r.floats(rows * kk))?,
                    up(s, &r.floats(rows))?,
                );
                let y = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} rows, {kk} slots"), grid: div(rows, 256),
                    outs: [y],
                    |l| l.arg(&cols).arg(&vals).arg(&x).arg_mut(&mut y.d).arg(&(rows as i32))
                        .arg(&(kk as i32)))
            },
        },
        Spec {
            name: "spmv_coo_atomic",
            style: "COO SpMV, atomicAdd per nonzero, grid-stride, dropped entries",
            file: SPARSE,
            kernel: "spmv_coo_atomic",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("row[33554432]"),
            setup: |s, k, sp| {
                let (n, nnz) = (4usize << 20, 32usize << 20);
                let mut r = Rng::new(121);
                let rows: Vec<i32> = (0..nnz)
                    .map(|_| {
                        if r.below(64) == 0 {
                            -1
                        } else {
                            r.below(n as u64) as i32
                        }
                    })
                    .collect();
                let cols: Vec<i32> = (0..nnz).map(|_| r.below(n as u64) as i32).collect();
                let (vals, xs) = (small_ints(&mut r, nnz), small_ints(&mut r, n));
                let mut want = vec![0f32; n];
                for i in 0..nnz {
                    if rows[i] >= 0 {
                        want[rows[i] as usize] += vals[i] * xs[cols[i] as usize];
                    }
                }
                let (row, col, val, x) = (up(s, &rows)?, up(s, &cols)?, up(s, &vals)?, up(s, &xs)?);
                let y = Out::<f32>::zeroed(s, n)?;
                let want = as_bytes(&want);
                bench!(s, k, sp, format!("{n} x {n}, {nnz} nonzeros"), grid: STRIDE_GRID,
                    outs: [y],
                    |l| l.arg(&row).arg(&col).arg(&val).arg(&x).arg_mut(&mut y.d)
                        .arg(&(nnz as i32)))
                .map(|b| b.checked_by(move |got| same_bytes(got, &want, 4)))
            },
        },
        Spec {
            name: "tri_lower_matvec_packed",
            style: "triangular loop (j <= i) over packed rows, 64-bit row offsets, warp per row",
            file: SPARSE,
            kernel: "tri_lower_matvec_packed",
            block: (256, 1, 1),
            shared: 0,
            styled: held("L"),
            setup: |s, k, sp| {
                let n = 16384usize;
                let mut r = Rng::new(122);
                let (lm, x) = (up(s, &r.floats(n * (n + 1) / 2))?, up(s, &r.floats(n))?);
                let y = Out::<f32>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} x {n} packed"), grid: div(n, 8), outs: [y],
                    |l| l.arg(&lm).arg(&x).arg_mut(&mut y.d).arg(&(n as i32)))
            },
        },
        // ---- rows.cu: tune, held-out, tune, ... ----
        Spec {
            name: "rope_half2",
            style: "rotary embedding on half2 pairs, cos/sin cache, int64 positions",
            file: ROWS,
            kernel: "rope_half2",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("cos_sin"),
            setup: |s, k, sp| {
                let (tokens, heads, dim) = (16384usize, 32usize, 128usize);
                let mut r = Rng::new(123);
                let x = up(s, &r.halves(tokens * heads * dim))?;
                let cs = up(s, &r.floats(tokens * dim))?;
                let pos = up(s, &(0..tokens as i64).collect::<Vec<_>>())?;
                let out = Out::<f16>::poisoned(s, tokens * heads * dim)?;
                bench!(s, k, sp, format!("{tokens} tokens x {heads} heads x {dim}"),
                    grid: div(tokens * heads * dim / 2, 256), outs: [out],
                    |l| l.arg(&x).arg(&cs).arg(&pos).arg_mut(&mut out.d).arg(&(tokens as i32))
                        .arg(&(heads as i32)).arg(&(dim as i32)))
            },
        },
        Spec {
            name: "argmax_rows_warp",
            style: "argmax per row, a warp per row, float4 reads, shuffle reduction with ties",
            file: ROWS,
            kernel: "argmax_rows_warp",
            block: (256, 1, 1),
            shared: 0,
            styled: held("x"),
            setup: |s, k, sp| {
                let (rows, cols) = (4096usize, 32000usize);
                let xs = Rng::new(124).floats(rows * cols);
                let x = up(s, &xs)?;
                let idx = Out::<i64>::poisoned(s, rows)?;
                let val = Out::<f32>::poisoned(s, rows)?;
                bench!(s, k, sp, format!("{rows} x {cols}"), grid: div(rows, 8),
                    outs: [idx, val],
                    |l| l.arg(&x).arg_mut(&mut idx.d).arg_mut(&mut val.d).arg(&(rows as i32))
                        .arg(&(cols as i32)))
                .map(|b| {
                    b.checked_by(move |got| {
                        for row in 0..rows {
                            let r = &xs[row * cols..(row + 1) * cols];
                            let best = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                            let at = r.iter().position(|&v| v == best).unwrap() as i64;
                            let i =
                                i64::from_ne_bytes(got[8 * row..8 * row + 8].try_into().unwrap());
                            let v = f32_at(&got[8 * rows..], row);
                            if (i, v) != (at, best) {
                                return Err(format!("row {row}: {v} at {i}, not {best} at {at}"));
                            }
                        }
                        Ok(())
                    })
                })
            },
        },
        Spec {
            name: "attn_row_online_f16",
            style: "attention row per warp, half2 dims, shuffle dot, online softmax, key prefetch",
            file: ROWS,
            kernel: "attn_row_online_f16",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("k"),
            setup: |s, k, sp| {
                let (nq, nk) = (8192usize, 2048usize);
                let mut r = Rng::new(125);
                let (q, kk, v) = (
                    up(s, &r.halves(nq * 64))?,
                    up(s, &r.halves(nk * 64))?,
                    up(s, &r.halves(nk * 64))?,
                );
                let out = Out::<f16>::poisoned(s, nq * 64)?;
                bench!(s, k, sp, format!("{nq} queries x {nk} keys, d = 64"), grid: div(nq, 8),
                    outs: [out],
                    |l| l.arg(&q).arg(&kk).arg(&v).arg_mut(&mut out.d).arg(&(nq as i32))
                        .arg(&(nk as i32)).arg(&0.125f32))
            },
        },
        Spec {
            name: "layernorm_bwd_dx",
            style: "LayerNorm backward, block per row, two shared-memory sums",
            file: ROWS,
            kernel: "layernorm_bwd_dx",
            block: (256, 1, 1),
            shared: 0,
            styled: held("mean"),
            setup: |s, k, sp| {
                let (rows, d) = (32768usize, 1024usize);
                let mut r = Rng::new(126);
                let (x, dy, gamma) = (
                    up(s, &r.floats(rows * d))?,
                    up(s, &r.floats(rows * d))?,
                    up(s, &r.floats(d))?,
                );
                let mean = up(s, &r.floats(rows))?;
                let rstd: Vec<f32> = r.floats(rows).iter().map(|v| 1.0 + v.abs()).collect();
                let rstd = up(s, &rstd)?;
                let dx = Out::<f32>::poisoned(s, rows * d)?;
                bench!(s, k, sp, format!("{rows} x {d}"), grid: rows as u32, outs: [dx],
                    |l| l.arg(&x).arg(&dy).arg(&gamma).arg(&mean).arg(&rstd)
                        .arg_mut(&mut dx.d).arg(&(d as i32)))
            },
        },
        Spec {
            name: "bitonic_step_kv",
            style: "one bitonic sort step (k, j), keys with a payload, in place",
            file: ROWS,
            kernel: "bitonic_step_kv",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("keys"),
            setup: |s, k, sp| {
                let n = 1usize << 26;
                let mut r = Rng::new(127);
                let keys: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
                let vals: Vec<i32> = (0..n as i32).collect();
                let keys = Out::from_host(s, &keys)?;
                let vals = Out::from_host(s, &vals)?;
                let (j, kk) = (1u32 << 10, 1u32 << 20);
                bench!(s, k, sp, format!("{n} keys, step k = {kk}, j = {j}"), grid: div(n, 256),
                    outs: [keys, vals],
                    |l| l.arg_mut(&mut keys.d).arg_mut(&mut vals.d).arg(&j).arg(&kk)
                        .arg(&(n as u32)))
            },
        },
        Spec {
            name: "bucket_count_warp_agg",
            style: "warp-aggregated atomics (__match_any_sync), counts per bucket",
            file: ROWS,
            kernel: "bucket_count_warp_agg",
            block: (256, 1, 1),
            shared: 0,
            styled: held("counts[1000]"),
            setup: |s, k, sp| {
                let (n, buckets) = (1usize << 26, 1000usize);
                let mut r = Rng::new(128);
                // Neighbours mostly share a bucket, as sorted or clustered keys do.
                let keys: Vec<u32> = (0..n)
                    .map(|i| (i as u32 >> 4) + r.below(2) as u32)
                    .collect();
                let (keys, vals) = (up(s, &keys)?, up(s, &r.floats(n))?);
                let counts = Out::<i32>::zeroed(s, buckets)?;
                bench!(s, k, sp, format!("{n} keys, {buckets} buckets"), grid: div(n, 256),
                    outs: [counts],
                    |l| l.arg(&keys).arg(&vals).arg_mut(&mut counts.d).arg(&0.0f32)
                        .arg(&(buckets as i32)).arg(&(n as i32)))
            },
        },
        Spec {
            name: "particles_step_aos",
            style: "array of 32-byte structs, whole-struct loads and stores, grid-stride",
            file: ROWS,
            kernel: "particles_step_aos",
            block: (256, 1, 1),
            shared: 0,
            styled: tune("in"),
            setup: |s, k, sp| {
                let n = 8usize << 20;
                let mut r = Rng::new(129);
                let ps: Vec<Particle> = (0..n)
                    .map(|_| Particle {
                        p: [r.f32(), r.f32(), r.f32()],
                        v: [r.f32(), r.f32(), r.f32()],
                        mass: 1.0 + r.f32().abs(),
                        alive: i32::from(r.below(10) != 0),
                    })
                    .collect();
                let inp = up(s, &ps)?;
                let out = Out::<Particle>::poisoned(s, n)?;
                bench!(s, k, sp, format!("{n} particles"), grid: STRIDE_GRID, outs: [out],
                    |l| l.arg(&inp).arg_mut(&mut out.d).arg(&0.01f32).arg(&(n as i32)))
            },
        },
        Spec {
            name: "axpby_unroll4",
            style: "#pragma unroll 4 with a remainder loop, offsets from a struct of params",
            file: ROWS,
            kernel: "axpby_unroll4",
            block: (256, 1, 1),
            shared: 0,
            styled: held("y"),
            setup: |s, k, sp| {
                let n = (1usize << 26) + 3;
                let p = AxpbyParams {
                    x_off: 3,
                    y_off: 5,
                    out_off: 7,
                    n: n as i64,
                    a: 1.5,
                    b: -0.5,
                };
                let mut r = Rng::new(130);
                let (x, y) = (up(s, &r.floats(3 + n))?, up(s, &r.floats(5 + n))?);
                let out = Out::<f32>::poisoned(s, 7 + n)?;
                let p = ByValue(p);
                bench!(s, k, sp, format!("{n} floats at offsets 3, 5, 7"), grid: STRIDE_GRID,
                    outs: [out],
                    |l| l.arg(&x).arg(&y).arg_mut(&mut out.d).arg(&p))
            },
        },
    ]
}
