//! Kernels of EricLBuehler/mistral.rs: template kernels launched by name expression,
//! vectorized ones (`float4`, four halves in a `uint64_t`), one in a namespace, and index
//! tensors without asserts. Each is launched with the grid, block and arguments of the C
//! launcher beside it in the same file (`launch_fused_glu`, `gptoss_swiglu_f32`,
//! `launch_indexed_row_copy`, `rotary_embedding_positions`, `launch_dequant_fp8_vector_kernel_*`).
//!
//! Only kernel names, argument values and short keys that find a source line are written
//! here; the kernels' code is read from the checkout at run time.

use cudacheck::core::instrument::FaultKind;

use crate::call::{Arg, Call, Data, Scalar, Ty};
use crate::case::{BugKind, Case, Corpus, Rng, Style, Written};
use crate::expect::{Expect, Line, Site};

const OPS: &str = "mistralrs-quant/kernels/ops/ops.cu";

fn case(file: &'static str, kernel: &'static str, style: Style) -> Case {
    Case::new(Corpus::Mistral, file, kernel, style)
}

fn line(file: &'static str, key: &'static str) -> Line {
    Line { file, key }
}

/// The launchers' configuration: 256 threads per block, as many blocks as `n` needs.
fn threads256(n: usize) -> ((u32, u32, u32), (u32, u32, u32)) {
    ((n.div_ceil(256) as u32, 1, 1), (256, 1, 1))
}

/// `launch_fused_glu`'s vector path: (a, b, output as T4, cols_vec, a_row_stride,
/// b_row_stride, output_vecs, activation); a and b rows may be padded.
fn glu_vec4(rng: &mut Rng, rows: usize, cols: usize, a_stride: usize, a_len: usize) -> Call {
    let vecs = rows * cols / 4;
    Call::new(
        threads256(vecs),
        vec![
            Arg::input(rng.floats(Ty::F32, a_len, -3.0, 3.0)),
            Arg::input(rng.floats(Ty::F32, rows * cols, -1.0, 1.0)),
            Arg::output(Ty::F32, rows * cols),
            Arg::u32((cols / 4) as u32),
            Arg::u32(a_stride as u32),
            Arg::u32(cols as u32),
            Arg::Val(Scalar::U64(vecs as u64)),
            Arg::i32(0), // GLU_SILU
        ],
    )
}

fn ops_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    // fused_glu_kernel_vec4<float, float4>: 64 rows of 1024, a's rows padded to 1032 (16-byte
    // aligned, so the launcher takes the vector path).
    let healthy = glu_vec4(rng, 64, 1024, 1032, 64 * 1032);
    // numel: one vector more than 2 rows hold: thread 512 reads a[2048..2052].
    let numel = glu_vec4(rng, 2, 1024, 1024, 2048)
        .with(6, Arg::Val(Scalar::U64(513)))
        .grid((3, 1, 1));
    // strides: a's rows taken as 1028 apart (padded) when they are 1024 apart: only the last
    // vector of row 1 (thread 511) reaches past a's 2048 floats.
    let strides = glu_vec4(rng, 2, 1024, 1028, 2048);
    let site = line("ops.cu", "T4 a4 = *reinterpret_cast");
    let oob = |index: i64, global: u64, count| Expect::OutOfBounds {
        buffer: "a",
        len: 2048,
        access: FaultKind::Read,
        sites: vec![Site::linear(global, 256, index)],
        count: Some(count),
        line: site,
    };
    v.push(
        case(
            OPS,
            "fused_glu_kernel_vec4<float, float4>",
            Style::Vectorized,
        )
        .variant("64 x 1024, a rows padded to 1032", healthy, Written::All)
        .bug(
            BugKind::Numel,
            "output_vecs = 513 for 2 rows of 256 vectors",
            numel,
            oob(2048, 512, 3),
        )
        .bug(
            BugKind::Strides,
            "a_row_stride = 1028 for rows 1024 apart (2 rows)",
            strides,
            oob(2048, 511, 1),
        ),
    );
    // The scalar kernel, as the launcher picks it for a column count not divisible by 4.
    let (rows, cols) = (64usize, 1000usize);
    v.push(
        case(OPS, "fused_glu_kernel<float>", Style::Template).variant(
            "64 x 1000, gelu",
            Call::new(
                threads256(rows * cols),
                vec![
                    Arg::input(rng.floats(Ty::F32, rows * cols, -3.0, 3.0)),
                    Arg::input(rng.floats(Ty::F32, rows * cols, -1.0, 1.0)),
                    Arg::output(Ty::F32, rows * cols),
                    Arg::u32(cols as u32),
                    Arg::u32(cols as u32),
                    Arg::u32(cols as u32),
                    Arg::Val(Scalar::U64((rows * cols) as u64)),
                    Arg::i32(1), // GLU_GELU
                ],
            ),
            Written::All,
        ),
    );
    // gptoss_swiglu_kernel_vec4: (gate, up, output as T4, N4, alpha, limit).
    let n = 8192usize;
    let swiglu = |rng: &mut Rng, ty: Ty, n4: usize| {
        Call::new(
            threads256(n4),
            vec![
                Arg::input(rng.floats(ty, n, -8.0, 8.0)),
                Arg::input(rng.floats(ty, n, -8.0, 8.0)),
                Arg::output(ty, n),
                Arg::u32(n4 as u32),
                Arg::f32(1.702),
                Arg::f32(7.0),
            ],
        )
    };
    let healthy = swiglu(rng, Ty::F32, n / 4);
    let numel = swiglu(rng, Ty::F32, n / 4 + 1);
    v.push(
        case(
            OPS,
            "gptoss_swiglu_kernel_vec4<float, float4>",
            Style::Vectorized,
        )
        .variant("8192 floats as 2048 float4", healthy, Written::All)
        .bug(
            BugKind::Numel,
            format!("N4 = {} for buffers of {} float4", n / 4 + 1, n / 4),
            numel,
            Expect::OutOfBounds {
                buffer: "gate",
                len: n as u64,
                access: FaultKind::Read,
                sites: vec![Site::linear((n / 4) as u64, 256, n as i64)],
                count: Some(3),
                line: line("ops.cu", "T4 g4 = gate[idx];"),
            },
        ),
    );
    v.push(
        case(
            OPS,
            "gptoss_swiglu_kernel_vec4<__half, uint64_t>",
            Style::Vectorized,
        )
        .variant(
            "8192 halves as 2048 uint64_t",
            swiglu(rng, Ty::F16, n / 4),
            Written::All,
        ),
    );
    // fused_split_glu_kernel_vec4: (input as T4, output as T4, split_vecs, output_vecs,
    // activation); each input row holds the gate half, then the up half.
    let (rows, split) = (64usize, 512usize);
    let vecs = rows * split / 4;
    v.push(
        case(
            OPS,
            "fused_split_glu_kernel_vec4<float, float4>",
            Style::Vectorized,
        )
        .variant(
            "64 rows, split 512",
            Call::new(
                threads256(vecs),
                vec![
                    Arg::input(rng.floats(Ty::F32, rows * 2 * split, -3.0, 3.0)),
                    Arg::output(Ty::F32, rows * split),
                    Arg::u32((split / 4) as u32),
                    Arg::Val(Scalar::U64(vecs as u64)),
                    Arg::i32(3), // GLU_GELU_ERF
                ],
            ),
            Written::All,
        ),
    );
    let n = 10_000usize;
    v.push(case(OPS, "softcap_f32_kernel", Style::Template).variant(
        "10000 floats, cap 30",
        Call::new(
            threads256(n),
            vec![
                Arg::input(rng.floats(Ty::F32, n, -100.0, 100.0)),
                Arg::output(Ty::F32, n),
                Arg::u32(n as u32),
                Arg::f32(30.0),
            ],
        ),
        Written::All,
    ));
    v
}

/// Distinct values below `n`, `k` of them (a partial shuffle).
fn distinct(rng: &mut Rng, n: usize, k: usize) -> Vec<u32> {
    let mut all: Vec<u32> = (0..n as u32).collect();
    for i in 0..k {
        let j = i + rng.below((n - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(k);
    all
}

fn index_cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = Vec::new();
    // indexed_row_copy_kernel<T>(src, dst, dst_rows, rows, row_elements): row r of src goes
    // to row dst_rows[r] of dst; distinct rows, so no two threads write one element.
    let (rows, e, d) = (48usize, 100usize, 64usize);
    let copy = |rng: &mut Rng, dst_rows: Vec<u32>| {
        Call::new(
            threads256(rows * e),
            vec![
                Arg::input(rng.floats(Ty::F32, rows * e, -1.0, 1.0)),
                Arg::in_out(rng.floats(Ty::F32, d * e, -1.0, 1.0)),
                Arg::input(Data::U32(dst_rows)),
                Arg::i32(rows as i32),
                Arg::Val(Scalar::I64(e as i64)),
            ],
        )
    };
    let dst_rows = distinct(rng, d, rows);
    let healthy = copy(rng, dst_rows.clone());
    let k = 30usize;
    let mut bad_rows = dst_rows;
    bad_rows[k] = (d + 7) as u32;
    let bad = copy(rng, bad_rows);
    let sites = (0..e)
        .map(|c| Site::linear((k * e + c) as u64, 256, ((d + 7) * e + c) as i64))
        .collect();
    v.push(
        case(
            "mistralrs-core/src/cuda/indexed_copy.cu",
            "indexed_row_copy_kernel<float>",
            Style::Indexing,
        )
        .variant("48 rows of 100 into 64 rows", healthy, Written::Changed)
        .bug(
            BugKind::BadIndex,
            format!("dst_rows[{k}] = {} for a destination of {d} rows", d + 7),
            bad,
            Expect::OutOfBounds {
                buffer: "dst",
                len: (d * e) as u64,
                access: FaultKind::Write,
                sites,
                count: Some(e as u32),
                line: line("indexed_copy.cu", "dst[static_cast<int64_t>(dst_rows[row])"),
            },
        ),
    );

    // vllm::rotary_embedding{,_positions}_kernel<float, true> (GPT-NeoX style): grid
    // num_tokens, block min(num_heads * rot_dim, 512); query and key rotated in place.
    let (tokens, heads, kv_heads, head_size) = (32usize, 8usize, 2usize, 64usize);
    let rot = head_size / 2;
    let block = (heads * rot).min(512) as u32;
    let cfg = ((tokens as u32, 1, 1), (block, 1, 1));
    let qk = |rng: &mut Rng| {
        vec![
            Arg::in_out(rng.floats(Ty::F32, tokens * heads * head_size, -1.0, 1.0)),
            Arg::in_out(rng.floats(Ty::F32, tokens * kv_heads * head_size, -1.0, 1.0)),
        ]
    };
    // query_stride, key_stride, num_heads, num_kv_heads, head_size
    let tail = || {
        vec![
            Arg::Val(Scalar::I64((heads * head_size) as i64)),
            Arg::Val(Scalar::I64((kv_heads * head_size) as i64)),
            Arg::i32(heads as i32),
            Arg::i32(kv_heads as i32),
            Arg::i32(head_size as i32),
        ]
    };
    let mut args = qk(rng);
    args.push(Arg::input(rng.floats(Ty::F32, tokens * rot, -1.0, 1.0)));
    args.push(Arg::input(rng.floats(Ty::F32, tokens * rot, -1.0, 1.0)));
    args.push(Arg::i32(rot as i32));
    args.extend(tail());
    v.push(
        case(
            "mistralrs-quant/kernels/rotary/rotary.cu",
            "vllm::rotary_embedding_kernel<float, true>",
            Style::Template,
        )
        .variant(
            "32 tokens, 8 + 2 heads of 64",
            Call::new(cfg, args),
            Written::Changed,
        ),
    );
    let positions = 128usize;
    let with_positions = |rng: &mut Rng, pos: Vec<u32>| {
        let mut args = qk(rng);
        args.push(Arg::input(rng.floats(Ty::F32, positions * rot, -1.0, 1.0)));
        args.push(Arg::input(rng.floats(Ty::F32, positions * rot, -1.0, 1.0)));
        args.push(Arg::input(Data::U32(pos)));
        args.push(Arg::i32(rot as i32));
        args.push(Arg::i32(tokens as i32));
        args.extend(tail());
        Call::new(cfg, args)
    };
    // No planted bug here: cudacheck leaves this kernel's `__ldg` reads of cos_cache and
    // sin_cache unchecked ("the address is in a different address space than the access",
    // `--dry-run`), so a bad position would really read out of bounds in a checked launch.
    let pos = rng.u32s(tokens, positions as u32);
    v.push(
        case(
            "mistralrs-quant/kernels/rotary/rotary.cu",
            "vllm::rotary_embedding_positions_kernel<float, true>",
            Style::Indexing,
        )
        .variant(
            "32 tokens at positions below 128, 8 + 2 heads of 64",
            with_positions(rng, pos),
            Written::Changed,
        ),
    );
    v
}

fn fp8_cases(rng: &mut Rng) -> Vec<Case> {
    const FILE: &str = "mistralrs-quant/kernels/vector_fp8/vector_fp8.cu";
    let mut v = Vec::new();
    // dequant_fp8_vector_kernel<T>(weight, scale, output, num_elements): one block of 256 per
    // 128-element vector.
    let w = 1000usize;
    let vectors = w.div_ceil(128);
    let dequant = |rng: &mut Rng, num: usize| {
        // Finite e4m3 bytes (0x7F and 0xFF are NaN).
        let bytes = (0..w).map(|_| (rng.below(0x7F) as u8) | (rng.below(2) as u8) << 7);
        Call::new(
            ((vectors as u32, 1, 1), (256, 1, 1)),
            vec![
                Arg::input(Data::U8(bytes.collect())),
                Arg::input(rng.floats(Ty::F32, vectors, 0.01, 0.1)),
                Arg::output(Ty::F32, w),
                Arg::size(num),
            ],
        )
    };
    let healthy = dequant(rng, w);
    let numel = dequant(rng, w + 1);
    v.push(
        case(FILE, "dequant_fp8_vector_kernel<float>", Style::Template)
            .variant("1000 e4m3 values, 8 scales", healthy, Written::All)
            .bug(
                BugKind::Numel,
                format!("num_elements = {} for buffers of {w}", w + 1),
                numel,
                Expect::OutOfBounds {
                    buffer: "weight",
                    len: w as u64,
                    access: FaultKind::Read,
                    sites: vec![Site::at([7, 0, 0], [(w - 7 * 128) as u32, 0, 0], w as i64)],
                    count: Some(2),
                    line: line("vector_fp8.cu", "weight[global_idx].__x"),
                },
            ),
    );
    v.push(
        case(FILE, "quant_fp8_vector_kernel<float>", Style::Template).variant(
            "1000 floats into e4m3 and 8 scales",
            Call::new(
                ((vectors as u32, 1, 1), (256, 1, 1)),
                vec![
                    Arg::input(rng.floats(Ty::F32, w, -5.0, 5.0)),
                    Arg::output(Ty::U8, w),
                    Arg::output(Ty::F32, vectors),
                    Arg::size(w),
                ],
            ),
            Written::All,
        ),
    );
    v
}

/// Every mistral.rs case, its data drawn from `rng`.
pub fn cases(rng: &mut Rng) -> Vec<Case> {
    let mut v = ops_cases(rng);
    v.extend(index_cases(rng));
    v.extend(fp8_cases(rng));
    v
}
