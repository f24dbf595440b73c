//! The kernels of huggingface/candle's `candle-kernels/src`, launched as candle's host code
//! launches them (`candle-core/src/cuda_backend/mod.rs`, `candle-nn/src/ops.rs`,
//! `candle-nn/src/rotary_emb.rs`, `candle-core/src/sort.rs` at the pinned commit): the same
//! argument order, `info` arrays (dims, then each operand's strides; null for a contiguous
//! layout where candle passes null), `LaunchConfig::for_num_elems` or the owner's own grid.
//!
//! Only kernel names, argument values and short keys that find a source line are written
//! here; the kernels' code is read from the checkout at run time.

use cudacheck::core::instrument::FaultKind;

use crate::call::{for_num_elems, Arg, Call, Data, Scalar, Ty};
use crate::case::{info_of, BugKind, Case, Corpus, Rng, Shape, Style, Written};
use crate::expect::{Expect, Line, Site};

/// Elements of the elementwise cases: 10 blocks of 1024, the last one partial.
const N: usize = 10_000;

fn case(file: &'static str, kernel: &'static str, style: Style) -> Case {
    Case::new(Corpus::Candle, file, kernel, style)
}

fn line(file: &'static str, key: &'static str) -> Line {
    Line { file, key }
}

/// A 1-D fault by the thread of global index `global` in blocks of 1024 (candle's
/// `for_num_elems`).
fn at1024(global: usize, index: usize) -> Vec<Site> {
    vec![Site::linear(global as u64, 1024, index as i64)]
}

fn oob(
    buffer: &'static str,
    len: usize,
    access: FaultKind,
    sites: Vec<Site>,
    count: Option<u32>,
    line: Line,
) -> Expect {
    Expect::OutOfBounds {
        buffer,
        len: len as u64,
        access,
        sites,
        count,
        line,
    }
}

// ---- unary.cu, affine.cu, cast.cu: (numel, num_dims, info, [param,] inp, out[, mul, add]) ----

/// A unary-style call on `shape` reading `x` (the layout's storage) into a fresh output.
fn unary_call(shape: &Shape, param: Option<Scalar>, x: Data, out: Ty) -> Call {
    let n = shape.numel();
    let mut args = vec![Arg::size(n), Arg::size(shape.dims.len()), info_of(shape)];
    if let Some(p) = param {
        args.push(Arg::Val(p));
    }
    args.push(Arg::input(x));
    args.push(Arg::output(out, n));
    Call::new(for_num_elems(n), args)
}

fn unary(
    rng: &mut Rng,
    kernel: &'static str,
    ty: Ty,
    param: Option<Scalar>,
    range: (f32, f32),
    strided: bool,
) -> Case {
    let style = if strided {
        Style::MacroStrided
    } else {
        Style::MacroElementwise
    };
    let mut c = case("unary.cu", kernel, style);
    let contiguous = Shape::contiguous(&[N]);
    let x = rng.floats(ty, N, range.0, range.1);
    c = c.variant(
        "contiguous, info null",
        unary_call(&contiguous, param, x, ty),
        Written::All,
    );
    if strided {
        let t = Shape::transposed(80, 125);
        let x = rng.floats(ty, t.storage(), range.0, range.1);
        c = c.variant(
            "transposed 80 x 125 view",
            unary_call(&t, param, x, ty),
            Written::All,
        );
    }
    c
}

fn unary_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    // uneg_f32 with both planted shape bugs.
    let neg = unary(rng, "uneg_f32", Ty::F32, None, (-1.0, 1.0), true);
    let healthy = neg.variants[0].call.clone();
    let site = line("unary.cu", "uneg_f32");
    // numel one past the buffers: thread N reads inp[N] (then writes out[N]).
    let numel = healthy.clone().with(0, Arg::size(N + 1));
    // A 2 x N/2 view whose row stride is one too many: only the last element, i = N - 1,
    // lands past the end (N/2 + 1 + N/2 - 1 = N).
    let bad = Shape::strided(&[2, N / 2], &[N / 2 + 1, 1]);
    let strides = healthy.clone().with(1, Arg::size(2)).with(2, info_of(&bad));
    v.push(
        neg.bug(
            BugKind::Numel,
            format!("numel = {} for buffers of {N}", N + 1),
            numel,
            oob("inp", N, FaultKind::Read, at1024(N, N), Some(2), site),
        )
        .bug(
            BugKind::Strides,
            format!(
                "info dims [2, {}] strides [{}, 1] (row stride one too many)",
                N / 2,
                N / 2 + 1
            ),
            strides,
            oob("inp", N, FaultKind::Read, at1024(N - 1, N), Some(1), site),
        ),
    );
    v.push(unary(rng, "uexp_f32", Ty::F32, None, (-4.0, 4.0), false));
    v.push(unary(rng, "ugelu_f32", Ty::F32, None, (-3.0, 3.0), true));
    v.push(unary(
        rng,
        "ugelu_erf_f32",
        Ty::F32,
        None,
        (-3.0, 3.0),
        false,
    ));
    v.push(unary(rng, "usilu_f32", Ty::F32, None, (-3.0, 3.0), false));
    v.push(unary(
        rng,
        "usigmoid_f32",
        Ty::F32,
        None,
        (-3.0, 3.0),
        false,
    ));
    v.push(unary(rng, "urecip_f64", Ty::F64, None, (0.5, 2.0), true));
    v.push(unary(rng, "ugelu_f16", Ty::F16, None, (-3.0, 3.0), false));
    v.push(unary(rng, "usqrt_bf16", Ty::Bf16, None, (0.0, 4.0), true));
    v.push(unary(
        rng,
        "uelu_f32",
        Ty::F32,
        Some(Scalar::F32(0.7)),
        (-2.0, 2.0),
        false,
    ));
    v.push(unary(
        rng,
        "upowf_f32",
        Ty::F32,
        Some(Scalar::F32(1.7)),
        (0.0, 3.0),
        true,
    ));
    v
}

fn affine_cases(rng: &mut Rng) -> Vec<Case> {
    let call = |shape: &Shape, x: Data, ty: Ty, mul: Scalar, add: Scalar| {
        let mut c = unary_call(shape, None, x, ty);
        c.args.push(Arg::Val(mul));
        c.args.push(Arg::Val(add));
        c
    };
    let c = Shape::contiguous(&[N]);
    let t = Shape::transposed(80, 125);
    let f32_case = case("affine.cu", "affine_f32", Style::MacroStrided)
        .variant(
            "contiguous, info null",
            call(
                &c,
                rng.floats(Ty::F32, N, -1.0, 1.0),
                Ty::F32,
                Scalar::F32(1.5),
                Scalar::F32(-0.25),
            ),
            Written::All,
        )
        .variant(
            "transposed 80 x 125 view",
            call(
                &t,
                rng.floats(Ty::F32, t.storage(), -1.0, 1.0),
                Ty::F32,
                Scalar::F32(1.5),
                Scalar::F32(-0.25),
            ),
            Written::All,
        );
    let f16_case = case("affine.cu", "affine_f16", Style::MacroElementwise).variant(
        "contiguous, info null",
        call(
            &c,
            rng.floats(Ty::F16, N, -1.0, 1.0),
            Ty::F16,
            Scalar::F16(half::f16::from_f32(1.5)),
            Scalar::F16(half::f16::from_f32(-0.25)),
        ),
        Written::All,
    );
    vec![f32_case, f16_case]
}

fn cast_cases(rng: &mut Rng) -> Vec<Case> {
    let c = Shape::contiguous(&[N]);
    let t = Shape::transposed(80, 125);
    let mut v = Vec::new();
    // cast_f32_f16: contiguous and strided, and numel one past the buffers.
    let healthy = unary_call(&c, None, rng.floats(Ty::F32, N, -2.0, 2.0), Ty::F16);
    let numel = healthy.clone().with(0, Arg::size(N + 1));
    v.push(
        case("cast.cu", "cast_f32_f16", Style::TemplateHelper)
            .variant("contiguous, info null", healthy, Written::All)
            .variant(
                "transposed 80 x 125 view",
                unary_call(
                    &t,
                    None,
                    rng.floats(Ty::F32, t.storage(), -2.0, 2.0),
                    Ty::F16,
                ),
                Written::All,
            )
            .bug(
                BugKind::Numel,
                format!("numel = {} for buffers of {N}", N + 1),
                numel,
                oob(
                    "inp",
                    N,
                    FaultKind::Read,
                    at1024(N, N),
                    Some(2),
                    line("cast.cu", "out[i] = inp[i];"),
                ),
            ),
    );
    for (kernel, from, to, strided) in [
        ("cast_f16_f32", Ty::F16, Ty::F32, true),
        ("cast_bf16_f16", Ty::Bf16, Ty::F16, false),
        ("cast_f32_bf16", Ty::F32, Ty::Bf16, false),
        ("cast_f64_f32", Ty::F64, Ty::F32, true),
    ] {
        let mut k = case("cast.cu", kernel, Style::TemplateHelper).variant(
            "contiguous, info null",
            unary_call(&c, None, rng.floats(from, N, -2.0, 2.0), to),
            Written::All,
        );
        if strided {
            k = k.variant(
                "transposed 80 x 125 view",
                unary_call(&t, None, rng.floats(from, t.storage(), -2.0, 2.0), to),
                Written::All,
            );
        }
        v.push(k);
    }
    let u: Vec<u32> = rng.u32s(N, u32::MAX);
    v.push(
        case("cast.cu", "cast_u32_f32", Style::TemplateHelper).variant(
            "contiguous, info null",
            unary_call(&c, None, Data::U32(u), Ty::F32),
            Written::All,
        ),
    );
    v
}

// ---- binary.cu: (numel, num_dims, dims_and_strides, lhs, rhs, out) ----------------------------

/// `out = op(lhs, rhs)` over `dims`, each operand with its own strides; the info array is
/// null when both are contiguous, as candle passes it.
fn binary_call(dims: &[usize], l: &Shape, r: &Shape, lhs: Data, rhs: Data, out: Ty) -> Call {
    let n: usize = dims.iter().product();
    let info = if l.is_contiguous() && r.is_contiguous() {
        Arg::Null
    } else {
        Arg::info(&[dims, l.strides.as_slice(), r.strides.as_slice()].concat())
    };
    Call::new(
        for_num_elems(n),
        vec![
            Arg::size(n),
            Arg::size(dims.len()),
            info,
            Arg::input(lhs),
            Arg::input(rhs),
            Arg::output(out, n),
        ],
    )
}

fn binary_cases(rng: &mut Rng) -> Vec<Case> {
    let (rows, cols) = (80usize, 125usize);
    let dims = [rows, cols];
    let c = Shape::contiguous(&dims);
    let row = Shape::strided(&dims, &[0, 1]); // a [cols] vector broadcast over the rows
    let col = Shape::strided(&dims, &[1, 0]); // a [rows] vector broadcast over the columns
    let t = Shape::transposed(rows, cols);
    let mut v = Vec::new();

    // badd_f32: contiguous, and rhs broadcast along the rows (the `lhs_cont` branch); the
    // planted bug forgets to zero the broadcast stride.
    let f = |rng: &mut Rng, n| rng.floats(Ty::F32, n, -1.0, 1.0);
    let healthy = binary_call(&dims, &c, &c, f(rng, N), f(rng, N), Ty::F32);
    let bcols = N / 2;
    let bad = binary_call(
        &[2, bcols],
        &Shape::contiguous(&[2, bcols]),
        &Shape::strided(&[2, bcols], &[1, 1]),
        f(rng, N),
        f(rng, bcols),
        Ty::F32,
    );
    v.push(
        case("binary.cu", "badd_f32", Style::MacroStrided)
            .variant("contiguous, info null", healthy, Written::All)
            .variant(
                "rhs [125] broadcast to [80, 125] (strides [0, 1])",
                binary_call(&dims, &c, &row, f(rng, N), f(rng, cols), Ty::F32),
                Written::All,
            )
            .bug(
                BugKind::Strides,
                format!(
                    "rhs [{bcols}] broadcast to [2, {bcols}] with strides [1, 1] instead of [0, 1]"
                ),
                bad,
                oob(
                    "rhs",
                    bcols,
                    FaultKind::Read,
                    at1024(N - 1, bcols),
                    Some(1),
                    line("binary.cu", "badd_f32"),
                ),
            ),
    );
    // bmul_f32: neither operand contiguous (the last branch).
    v.push(case("binary.cu", "bmul_f32", Style::MacroStrided).variant(
        "lhs transposed, rhs [80] broadcast over columns",
        binary_call(&dims, &t, &col, f(rng, N), f(rng, rows), Ty::F32),
        Written::All,
    ));
    let h = |rng: &mut Rng| rng.floats(Ty::F16, N, -1.0, 1.0);
    v.push(
        case("binary.cu", "bsub_f16", Style::MacroElementwise).variant(
            "contiguous, info null",
            binary_call(&dims, &c, &c, h(rng), h(rng), Ty::F16),
            Written::All,
        ),
    );
    let d = |rng: &mut Rng| rng.floats(Ty::F64, N, 0.5, 1.5);
    v.push(
        case("binary.cu", "bdiv_f64", Style::MacroElementwise).variant(
            "contiguous, info null",
            binary_call(&dims, &c, &c, d(rng), d(rng), Ty::F64),
            Written::All,
        ),
    );
    v.push(
        case("binary.cu", "bmaximum_f32", Style::MacroStrided).variant(
            "lhs transposed, rhs contiguous (the `rhs_cont` branch)",
            binary_call(&dims, &t, &c, f(rng, N), f(rng, N), Ty::F32),
            Written::All,
        ),
    );
    // eq_f32 writes u8; half the pairs are equal.
    let lhs = rng.f32s(N, -1.0, 1.0);
    let rhs: Vec<f32> = lhs
        .iter()
        .map(|&x| if rng.below(2) == 0 { x } else { -x })
        .collect();
    v.push(
        case("binary.cu", "eq_f32", Style::MacroElementwise).variant(
            "contiguous, info null, u8 output",
            binary_call(&dims, &c, &c, Data::F32(lhs), Data::F32(rhs), Ty::U8),
            Written::All,
        ),
    );
    v
}

// ---- fill.cu --------------------------------------------------------------------------------

fn fill_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    // fill_f32(buf, value, numel)
    let healthy = Call::new(
        for_num_elems(N),
        vec![Arg::output(Ty::F32, N), Arg::f32(0.625), Arg::size(N)],
    );
    let numel = healthy.clone().with(2, Arg::size(N + 1));
    v.push(
        case("fill.cu", "fill_f32", Style::TemplateHelper)
            .variant("fill 10000", healthy, Written::All)
            .bug(
                BugKind::Numel,
                format!("numel = {} for a buffer of {N}", N + 1),
                numel,
                oob(
                    "buf",
                    N,
                    FaultKind::Write,
                    at1024(N, N),
                    Some(1),
                    line("fill.cu", "buf[i] = value;"),
                ),
            ),
    );
    v.push(case("fill.cu", "fill_f16", Style::TemplateHelper).variant(
        "fill 10000 halves",
        Call::new(
            for_num_elems(N),
            vec![
                Arg::output(Ty::F16, N),
                Arg::Val(Scalar::F16(half::f16::from_f32(-1.25))),
                Arg::size(N),
            ],
        ),
        Written::All,
    ));
    // copy2d(src, dst, d1, d2, src_s, dst_s): a 64 x 100 block between row strides 128 and
    // 120. The bug: a 2 x 3000 source whose rows are 3000 apart, copied with src_s = 3001.
    let copy = |src: Data, d1: usize, d2: usize, src_s: usize, dst_s: usize| {
        Call::new(
            for_num_elems(d1 * d2),
            vec![
                Arg::input(src),
                Arg::output(Ty::F32, d1 * dst_s),
                Arg::u32(d1 as u32),
                Arg::u32(d2 as u32),
                Arg::u32(src_s as u32),
                Arg::u32(dst_s as u32),
            ],
        )
    };
    let healthy = copy(rng.floats(Ty::F32, 64 * 128, -1.0, 1.0), 64, 100, 128, 120);
    let d2 = 3000;
    let bad = copy(rng.floats(Ty::F32, 2 * d2, -1.0, 1.0), 2, d2, d2 + 1, d2);
    v.push(
        case("fill.cu", "copy2d_f32", Style::TemplateHelper)
            .variant(
                "64 x 100 block, src_s 128, dst_s 120",
                healthy,
                Written::AtLeast(6400),
            )
            .bug(
                BugKind::Strides,
                format!("src_s = {} for a 2 x {d2} source", d2 + 1),
                bad,
                oob(
                    "src",
                    2 * d2,
                    FaultKind::Read,
                    at1024(2 * d2 - 1, 2 * d2),
                    Some(1),
                    line("fill.cu", "dst[idx1 * dst_s + idx2]"),
                ),
            ),
    );
    // const_set_f32 through a transposed layout: writes out[strided_i].
    let t = Shape::transposed(80, 125);
    v.push(
        case("fill.cu", "const_set_f32", Style::MacroStrided).variant(
            "transposed 80 x 125 view",
            Call::new(
                for_num_elems(t.numel()),
                vec![
                    Arg::size(t.numel()),
                    Arg::size(2),
                    info_of(&t),
                    Arg::f32(3.5),
                    Arg::output(Ty::F32, t.storage()),
                ],
            ),
            Written::All,
        ),
    );
    v
}

// ---- ternary.cu: (numel, num_dims, info, ids, t, f, out); info is never null ---------------

fn where_call(dims: &[usize], s: [&Shape; 3], ids: Data, t: Data, f: Data, out: Ty) -> Call {
    let n: usize = dims.iter().product();
    let info = [
        dims,
        s[0].strides.as_slice(),
        s[1].strides.as_slice(),
        s[2].strides.as_slice(),
    ]
    .concat();
    Call::new(
        for_num_elems(n),
        vec![
            Arg::size(n),
            Arg::size(dims.len()),
            Arg::info(&info),
            Arg::input(ids),
            Arg::input(t),
            Arg::input(f),
            Arg::output(out, n),
        ],
    )
}

fn where_cases(rng: &mut Rng) -> Vec<Case> {
    let dims = [80usize, 125];
    let c = Shape::contiguous(&dims);
    let row = Shape::strided(&dims, &[0, 1]);
    let bits = |rng: &mut Rng, n: usize| Data::U8((0..n).map(|_| rng.below(2) as u8).collect());
    let mut v = Vec::new();
    let healthy = where_call(
        &dims,
        [&c, &c, &c],
        bits(rng, N),
        rng.floats(Ty::F32, N, -1.0, 1.0),
        rng.floats(Ty::F32, N, -1.0, 1.0),
        Ty::F32,
    );
    let numel = healthy.clone().with(0, Arg::size(N + 1));
    // t's row stride one too many on a 2 x N/2 layout, the condition all true: only the last
    // element reads t past its end.
    let half = N / 2;
    let cs = Shape::contiguous(&[2, half]);
    let bad = where_call(
        &[2, half],
        [&cs, &Shape::strided(&[2, half], &[half + 1, 1]), &cs],
        Data::U8(vec![1; N]),
        rng.floats(Ty::F32, N, -1.0, 1.0),
        rng.floats(Ty::F32, N, -1.0, 1.0),
        Ty::F32,
    );
    let site = line("ternary.cu", "where_u8_f32");
    v.push(
        case("ternary.cu", "where_u8_f32", Style::MacroStrided)
            .variant("contiguous", healthy, Written::All)
            .variant(
                "t broadcast along rows (strides [0, 1])",
                where_call(
                    &dims,
                    [&c, &row, &c],
                    bits(rng, N),
                    rng.floats(Ty::F32, 125, -1.0, 1.0),
                    rng.floats(Ty::F32, N, -1.0, 1.0),
                    Ty::F32,
                ),
                Written::All,
            )
            .bug(
                BugKind::Numel,
                format!("numel = {} for buffers of {N}", N + 1),
                numel,
                oob("ids", N, FaultKind::Read, at1024(N, N), None, site),
            )
            .bug(
                BugKind::Strides,
                format!("t strides [{}, 1] on dims [2, {half}]", half + 1),
                bad,
                oob("t", N, FaultKind::Read, at1024(N - 1, N), Some(1), site),
            ),
    );
    let ids64 = Data::I64((0..N).map(|_| rng.below(3) as i64 - 1).collect());
    v.push(
        case("ternary.cu", "where_i64_f16", Style::MacroElementwise).variant(
            "contiguous, i64 condition",
            where_call(
                &dims,
                [&c, &c, &c],
                ids64,
                rng.floats(Ty::F16, N, -1.0, 1.0),
                rng.floats(Ty::F16, N, -1.0, 1.0),
                Ty::F16,
            ),
            Written::All,
        ),
    );
    let ids32 = Data::U32(rng.u32s(N, 2));
    v.push(
        case("ternary.cu", "where_u32_f64", Style::MacroStrided).variant(
            "f broadcast along rows",
            where_call(
                &dims,
                [&c, &c, &row],
                ids32,
                rng.floats(Ty::F64, N, -1.0, 1.0),
                rng.floats(Ty::F64, 125, -1.0, 1.0),
                Ty::F64,
            ),
            Written::All,
        ),
    );
    v
}

// ---- indexing.cu ----------------------------------------------------------------------------

/// Index-select and gather shapes: src [L, S, R], ids of M entries (gather: ids [L, M, R]).
const L: usize = 4;
const S: usize = 50;
const M: usize = 60;
const R: usize = 32;
/// The entry the planted bug makes bad, and its bad value (S + 7).
const K: usize = 17;
const BAD: usize = S + 7;

/// is_*: (numel, num_dims, info = ids dims ++ ids strides, ids, inp, out, left, src_dim,
/// ids_dim, right).
fn index_select(ids: Data, inp: Data, out: Ty) -> Call {
    let n = L * M * R;
    Call::new(
        for_num_elems(n),
        vec![
            Arg::size(n),
            Arg::size(1),
            Arg::info(&[M, 1]),
            Arg::input(ids),
            Arg::input(inp),
            Arg::output(out, n),
            Arg::size(L),
            Arg::size(S),
            Arg::size(M),
            Arg::size(R),
        ],
    )
}

/// gather: (numel, ids [L, M, R], inp [L, S, R], out, left, src_dim, ids_dim, right).
fn gather(ids: Data, inp: Data) -> Call {
    let n = L * M * R;
    Call::new(
        for_num_elems(n),
        vec![
            Arg::size(n),
            Arg::input(ids),
            Arg::input(inp),
            Arg::output(Ty::F32, n),
            Arg::size(L),
            Arg::size(S),
            Arg::size(M),
            Arg::size(R),
        ],
    )
}

/// The threads of an index-select whose output element uses ids[K]: (l, K, r) for every l
/// and r; those of the last l go past `inp` (the others land in a later row of it, which a
/// whole-buffer check cannot tell from a right index).
fn select_sites(only_last_row: bool) -> Vec<Site> {
    let rows = if only_last_row { L - 1..L } else { 0..L };
    rows.flat_map(|l| {
        (0..R).map(move |r| {
            let dst = (l * M + K) * R + r;
            Site::linear(dst as u64, 1024, ((l * S + BAD) * R + r) as i64)
        })
    })
    .collect()
}

fn indexing_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    let ids = rng.u32s(M, S as u32);
    let mut bad_ids = ids.clone();
    bad_ids[K] = BAD as u32;
    let inp = rng.floats(Ty::F32, L * S * R, -1.0, 1.0);
    let healthy = index_select(Data::U32(ids), inp.clone(), Ty::F32);
    let bad = index_select(Data::U32(bad_ids), inp, Ty::F32);
    let assert_line = line("indexing.cu", "assert(ids[id_i] < src_dim_size)");
    // As candle builds it (asserts on): its own assert catches the bad id first.
    v.push(
        case("indexing.cu", "is_u32_f32", Style::Indexing)
            .variant(
                "src [4, 50, 32], 60 ids along dim 1",
                healthy.clone(),
                Written::All,
            )
            .bug(
                BugKind::BadIndex,
                format!("ids[{K}] = {BAD} for a dimension of {S}"),
                bad.clone(),
                Expect::Assert {
                    message: "ids[id_i] < src_dim_size",
                    sites: select_sites(false),
                    line: assert_line,
                },
            ),
    );
    // With the asserts compiled out, the access itself is caught.
    v.push(
        case("indexing.cu", "is_u32_f32", Style::Indexing)
            .defines(&["NDEBUG"])
            .variant("src [4, 50, 32], 60 ids along dim 1", healthy, Written::All)
            .bug(
                BugKind::BadIndex,
                format!("ids[{K}] = {BAD} for a dimension of {S}"),
                bad,
                oob(
                    "inp",
                    L * S * R,
                    FaultKind::Read,
                    select_sites(true),
                    Some(R as u32),
                    line("indexing.cu", "out[dst_i] = inp[strided_i];"),
                ),
            ),
    );
    let ids64 = Data::I64((0..M).map(|_| rng.below(S as u64) as i64).collect());
    v.push(case("indexing.cu", "is_i64_f16", Style::Indexing).variant(
        "src [4, 50, 32] halves, 60 i64 ids",
        index_select(ids64, rng.floats(Ty::F16, L * S * R, -1.0, 1.0), Ty::F16),
        Written::All,
    ));

    // gather: one thread per ids element; the bad one sits in the last row of dim 0, so its
    // element lies past the end of inp.
    let gids = rng.u32s(L * M * R, S as u32);
    let pos = ((L - 1) * M + K) * R + 5;
    let mut gbad = gids.clone();
    gbad[pos] = BAD as u32;
    let ginp = rng.floats(Ty::F32, L * S * R, -1.0, 1.0);
    let healthy = gather(Data::U32(gids), ginp.clone());
    let bad = gather(Data::U32(gbad), ginp);
    let index = (((L - 1) * S + BAD) * R + 5) as i64;
    let one = vec![Site::linear(pos as u64, 1024, index)];
    v.push(
        case("indexing.cu", "gather_u32_f32", Style::Indexing)
            .variant(
                "src [4, 50, 32], ids [4, 60, 32] along dim 1",
                healthy.clone(),
                Written::All,
            )
            .bug(
                BugKind::BadIndex,
                format!("ids[{pos}] = {BAD} for a dimension of {S}"),
                bad.clone(),
                Expect::Assert {
                    message: "idx < src_dim_size",
                    sites: one.clone(),
                    line: line("indexing.cu", "assert(idx < src_dim_size)"),
                },
            ),
    );
    v.push(
        case("indexing.cu", "gather_u32_f32", Style::Indexing)
            .defines(&["NDEBUG"])
            .variant(
                "src [4, 50, 32], ids [4, 60, 32] along dim 1",
                healthy,
                Written::All,
            )
            .bug(
                BugKind::BadIndex,
                format!("ids[{pos}] = {BAD} for a dimension of {S}"),
                bad,
                oob(
                    "inp",
                    L * S * R,
                    FaultKind::Read,
                    one,
                    Some(1),
                    line("indexing.cu", "out[i] = inp[src_i];"),
                ),
            ),
    );

    // index_add / scatter / scatter_add: one thread per (left, right) pair loops over the
    // indexed dimension, so duplicates accumulate in a fixed order. dst [L, D, R].
    const D: usize = 40;
    let ia_ids = Data::U32(rng.u32s(M, D as u32));
    v.push(case("indexing.cu", "ia_u32_f32", Style::Indexing).variant(
        "index_add: src [4, 60, 32] into dst [4, 40, 32]",
        Call::new(
            for_num_elems(L * R),
            vec![
                Arg::input(ia_ids),
                Arg::size(M),
                Arg::input(rng.floats(Ty::F32, L * M * R, -1.0, 1.0)),
                Arg::in_out(rng.floats(Ty::F32, L * D * R, -1.0, 1.0)),
                Arg::size(L),
                Arg::size(M),
                Arg::size(D),
                Arg::size(R),
            ],
        ),
        Written::Changed,
    ));
    let scatter = |rng: &mut Rng, ids: Data| {
        Call::new(
            for_num_elems(L * R),
            vec![
                Arg::input(ids),
                Arg::input(rng.floats(Ty::F32, L * S * R, -1.0, 1.0)),
                Arg::in_out(rng.floats(Ty::F32, L * D * R, -1.0, 1.0)),
                Arg::size(L),
                Arg::size(S),
                Arg::size(D),
                Arg::size(R),
            ],
        )
    };
    let sids = Data::U32(rng.u32s(L * S * R, D as u32));
    v.push(case("indexing.cu", "s_u32_f32", Style::Indexing).variant(
        "scatter: src [4, 50, 32] into dst [4, 40, 32]",
        scatter(rng, sids),
        Written::Changed,
    ));
    let said = Data::I64((0..L * S * R).map(|_| rng.below(D as u64) as i64).collect());
    v.push(case("indexing.cu", "sa_i64_f32", Style::Indexing).variant(
        "scatter_add: src [4, 50, 32] into dst [4, 40, 32]",
        scatter(rng, said),
        Written::Changed,
    ));
    v
}

// ---- reduce.cu ------------------------------------------------------------------------------

/// fast_*: (src_numel, el_to_sum_per_block, num_dims, info, src, dst): `rows` outputs, each
/// reducing `cols` elements; one block per output of min(1024, cols).next_power_of_two()
/// threads (candle's FastReduce).
fn fast_reduce(shape: &Shape, src: Data, out: Ty) -> Call {
    let cols = *shape.dims.last().expect("a reduced dim");
    let rows = shape.numel() / cols;
    let block = cols.min(1024).next_power_of_two() as u32;
    Call::new(
        ((rows as u32, 1, 1), (block, 1, 1)),
        vec![
            Arg::size(shape.numel()),
            Arg::size(cols),
            Arg::size(shape.dims.len()),
            Arg::info(&[shape.dims.as_slice(), shape.strides.as_slice()].concat()),
            Arg::input(src),
            Arg::output(out, rows),
        ],
    )
}

fn reduce_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    let (rows, cols) = (64usize, 1000usize);
    let c = Shape::contiguous(&[rows, cols]);
    // Summing dim 0 of a [1000, 64] tensor: the reduced dim goes last, with its stride.
    let t = Shape::transposed(rows, cols);
    let healthy = fast_reduce(&c, rng.floats(Ty::F32, rows * cols, -1.0, 1.0), Ty::F32);
    let bad_shape = Shape::strided(&[2, cols], &[cols + 1, 1]);
    let bad = fast_reduce(
        &bad_shape,
        rng.floats(Ty::F32, 2 * cols, -1.0, 1.0),
        Ty::F32,
    );
    v.push(
        case("reduce.cu", "fast_sum_f32", Style::Reduction)
            .variant("sum over the last dim of [64, 1000]", healthy, Written::All)
            .variant(
                "sum over dim 0 of [1000, 64] (strided)",
                fast_reduce(&t, rng.floats(Ty::F32, rows * cols, -1.0, 1.0), Ty::F32),
                Written::All,
            )
            .bug(
                BugKind::Strides,
                format!("info dims [2, {cols}] strides [{}, 1]", cols + 1),
                bad,
                oob(
                    "src",
                    2 * cols,
                    FaultKind::Read,
                    vec![Site::at(
                        [1, 0, 0],
                        [cols as u32 - 1, 0, 0],
                        2 * cols as i64,
                    )],
                    Some(1),
                    line("reduce.cu", "shr[tid] += src[strided_i];"),
                ),
            ),
    );
    v.push(case("reduce.cu", "fast_max_f32", Style::Reduction).variant(
        "max over dim 0 of [1000, 64] (strided)",
        fast_reduce(&t, rng.floats(Ty::F32, rows * cols, -1.0, 1.0), Ty::F32),
        Written::All,
    ));
    v.push(
        case("reduce.cu", "fast_argmax_f32", Style::Reduction).variant(
            "argmax over the last dim of [64, 1000], u32 output",
            fast_reduce(&c, rng.floats(Ty::F32, rows * cols, -1.0, 1.0), Ty::U32),
            Written::All,
        ),
    );
    v.push(case("reduce.cu", "fast_min_f64", Style::Reduction).variant(
        "min over the last dim of [64, 1000]",
        fast_reduce(&c, rng.floats(Ty::F64, rows * cols, -1.0, 1.0), Ty::F64),
        Written::All,
    ));
    // softmax: grid (rows), block (1, 32, 1) (candle-nn's SoftmaxLastDim).
    v.push(case("reduce.cu", "softmax_f32", Style::Reduction).variant(
        "64 rows of 1000",
        Call::new(
            ((rows as u32, 1, 1), (1, 32, 1)),
            vec![
                Arg::input(rng.floats(Ty::F32, rows * cols, -4.0, 4.0)),
                Arg::output(Ty::F32, rows * cols),
                Arg::i32(cols as i32),
            ],
        ),
        Written::All,
    ));
    // rmsnorm / layernorm: grid (rows), block_size 32 below 1024 columns, else 1024.
    let norm = |rng: &mut Rng, layer: bool, rows: usize, cols: usize| {
        let bs = if cols < 1024 { 32 } else { 1024 };
        let mut args = vec![
            Arg::input(rng.floats(Ty::F32, rows * cols, -2.0, 2.0)),
            Arg::output(Ty::F32, rows * cols),
            Arg::input(rng.floats(Ty::F32, cols, 0.5, 1.5)),
        ];
        if layer {
            args.push(Arg::input(rng.floats(Ty::F32, cols, -0.5, 0.5)));
        }
        args.extend([Arg::i32(cols as i32), Arg::i32(bs), Arg::f32(1e-5)]);
        Call::new(((rows as u32, 1, 1), (bs as u32, 1, 1)), args)
    };
    v.push(
        case("reduce.cu", "rmsnorm_f32", Style::Reduction)
            .variant(
                "64 rows of 1000 (block 32)",
                norm(rng, false, 64, 1000),
                Written::All,
            )
            .variant(
                "16 rows of 2048 (block 1024)",
                norm(rng, false, 16, 2048),
                Written::All,
            ),
    );
    v.push(
        case("reduce.cu", "layernorm_f32", Style::Reduction)
            .variant(
                "64 rows of 1000 (block 32)",
                norm(rng, true, 64, 1000),
                Written::All,
            )
            .variant(
                "16 rows of 2048 (block 1024)",
                norm(rng, true, 16, 2048),
                Written::All,
            ),
    );
    // rope variants (candle-nn's rotary_emb): src (b, h, t, d) or (b, t, h, d), cos/sin
    // [t, d / 2], for_num_elems(el / 2).
    let (b, h, tt, d) = (2usize, 4usize, 16usize, 64usize);
    let el = b * h * tt * d;
    let rope = |rng: &mut Rng, tail: Vec<Arg>| {
        let mut args = vec![
            Arg::input(rng.floats(Ty::F32, el, -1.0, 1.0)),
            Arg::input(rng.floats(Ty::F32, tt * d / 2, -1.0, 1.0)),
            Arg::input(rng.floats(Ty::F32, tt * d / 2, -1.0, 1.0)),
            Arg::output(Ty::F32, el),
        ];
        args.extend(tail);
        Call::new(for_num_elems(el / 2), args)
    };
    let u = |x: usize| Arg::u32(x as u32);
    v.push(
        case("reduce.cu", "rope_f32", Style::TemplateHelper).variant(
            "(b, h, t, d) = (2, 4, 16, 64)",
            rope(rng, vec![u(b * h), u(tt * d), u(d), u(0)]),
            Written::All,
        ),
    );
    v.push(
        case("reduce.cu", "rope_i_f32", Style::TemplateHelper).variant(
            "(b, h, t, d) = (2, 4, 16, 64), interleaved",
            rope(rng, vec![u(b * h), u(tt * d), u(0)]),
            Written::All,
        ),
    );
    v.push(
        case("reduce.cu", "rope_thd_f32", Style::TemplateHelper).variant(
            "(b, t, h, d) = (2, 16, 4, 64)",
            rope(rng, vec![u(b), u(tt), u(h), u(d), u(0)]),
            Written::All,
        ),
    );
    v
}

// ---- sort.cu, conv.cu -----------------------------------------------------------------------

fn sort_conv_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    // asort: grid (nrows), block min(ncols_pad, 1024), ncols_pad u32s of dynamic shared.
    let (nrows, ncols) = (16usize, 1000usize);
    let pad = ncols.next_power_of_two();
    v.push(
        case("sort.cu", "asort_asc_f32", Style::SortDynamicShared).variant(
            "16 rows of 1000, padded to 1024",
            Call::new(
                ((nrows as u32, 1, 1), (pad.min(1024) as u32, 1, 1)),
                vec![
                    Arg::input(rng.floats(Ty::F32, nrows * ncols, -1.0, 1.0)),
                    Arg::output(Ty::U32, nrows * ncols),
                    Arg::i32(ncols as i32),
                    Arg::i32(pad as i32),
                ],
            )
            .shared((pad * 4) as u32),
            Written::All,
        ),
    );
    // max_pool2d / upsample_nearest2d: info = dims ++ strides of the (b, c, w, h) input.
    let dims = [2usize, 3, 32, 24];
    let shape = Shape::contiguous(&dims);
    let info = Arg::info(&[shape.dims.as_slice(), shape.strides.as_slice()].concat());
    let numel = shape.numel();
    let (k, stride) = (2usize, 2usize);
    let (out_w, out_h) = ((dims[2] - k) / stride + 1, (dims[3] - k) / stride + 1);
    let pooled = dims[0] * dims[1] * out_w * out_h;
    v.push(
        case("conv.cu", "max_pool2d_f32", Style::TemplateHelper).variant(
            "(2, 3, 32, 24), 2 x 2 window, stride 2",
            Call::new(
                for_num_elems(pooled),
                vec![
                    Arg::size(numel),
                    Arg::size(k),
                    Arg::size(k),
                    Arg::size(stride),
                    Arg::size(stride),
                    info.clone(),
                    Arg::input(rng.floats(Ty::F32, numel, -1.0, 1.0)),
                    Arg::output(Ty::F32, pooled),
                ],
            ),
            Written::All,
        ),
    );
    let (uw, uh) = (48usize, 40usize);
    let up = dims[0] * dims[1] * uw * uh;
    v.push(
        case("conv.cu", "upsample_nearest2d_f32", Style::TemplateHelper).variant(
            "(2, 3, 32, 24) to 48 x 40",
            Call::new(
                for_num_elems(up),
                vec![
                    Arg::size(uw),
                    Arg::size(uh),
                    Arg::Val(Scalar::F64(dims[2] as f64 / uw as f64)),
                    Arg::Val(Scalar::F64(dims[3] as f64 / uh as f64)),
                    info,
                    Arg::input(rng.floats(Ty::F32, numel, -1.0, 1.0)),
                    Arg::output(Ty::F32, up),
                ],
            ),
            Written::All,
        ),
    );
    v
}

/// Every candle case, its data drawn from `rng`.
pub fn cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = unary_cases(rng);
    v.extend(affine_cases(rng));
    v.extend(cast_cases(rng));
    v.extend(binary_cases(rng));
    v.extend(fill_cases(rng));
    v.extend(where_cases(rng));
    v.extend(indexing_cases(rng));
    v.extend(reduce_cases(rng));
    v.extend(sort_conv_cases(rng));
    v
}
