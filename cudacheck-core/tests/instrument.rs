//! The instrumenter, on the rewrite forms one by one and on the project's kernels.

use std::path::PathBuf;

use cudacheck_core::instrument::{
    decode, final_line, instrument, render_report, FaultRecord, InstrumentError, InstrumentOptions,
    Instrumented, SiteKind, SkipReason, RECORD_BYTES,
};

fn inst(src: &str) -> Instrumented {
    match instrument(src, "t.cu", &InstrumentOptions::default()) {
        Ok(i) => i,
        Err(e) => panic!("instrument failed: {e}"),
    }
}

/// The rewritten user part (after the `#line 1` directive).
fn body(i: &Instrumented) -> &str {
    let at = i
        .source
        .find("#line 1 \"t.cu\"\n")
        .expect("#line directive");
    &i.source[at + "#line 1 \"t.cu\"\n".len()..]
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Writes every kernels/*.cu instrumented to target/instrumented/, for compiling with NVRTC
/// (scripts/check-instrumented.py), and checks each instruments with every access covered.
#[test]
fn project_kernels_instrument_and_are_written_out() {
    let dir = workspace().join("kernels");
    let out_dir = workspace().join("target").join("instrumented");
    std::fs::create_dir_all(&out_dir).expect("create target/instrumented");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("kernels/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    for path in names {
        let text = std::fs::read_to_string(&path).expect("read kernel");
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let out = instrument(&text, &file, &InstrumentOptions::default()).expect("instrument");
        assert!(!out.kernels.is_empty(), "{file}: no kernels");
        for k in &out.kernels {
            assert!(k.coverage.instrumented > 0, "{file}: {}", k.name);
        }
        std::fs::write(out_dir.join(&file), &out.source).expect("write");
        std::fs::write(
            out_dir.join(format!("{file}.report.txt")),
            render_report(&out),
        )
        .expect("write report");
    }
}

/// The line `n` (1-based) of the rewritten user part.
fn line(i: &Instrumented, n: usize) -> &str {
    body(i).lines().nth(n - 1).unwrap_or("")
}

fn skipped(i: &Instrumented, k: usize) -> Vec<SkipReason> {
    i.kernels[k]
        .coverage
        .skipped
        .iter()
        .map(|s| s.reason.clone())
        .collect()
}

#[test]
fn pointer_params_reads_and_writes() {
    let src = "extern \"C\" __global__ void saxpy(float* y, const float* x, float a, int n)\n{\n    int i = threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];\n}\n";
    let i = inst(src);
    assert_eq!(
        line(&i, 4),
        "    if (i < n) __cc_at(y, __cc_rec, 0u, __CC_WRITE, __cc_slot, (i), __cc_len[0]) = a * \
         __cc_rd(x, __cc_rec, 1u, __CC_READ, __cc_slot, (i), __cc_len[1]) + \
         __cc_rd(y, __cc_rec, 2u, __CC_READ, __cc_slot, (i), __cc_len[0]);"
    );
    let k = &i.kernels[0];
    assert_eq!(k.name, "saxpy");
    assert_eq!(k.num_params, 4);
    assert_eq!(k.len_slots(), 5);
    assert_eq!(
        k.pointer_params,
        vec![(0, "y".to_string()), (1, "x".to_string())]
    );
    let kinds: Vec<_> = k
        .sites
        .iter()
        .map(|s| (s.buffer.as_str(), s.kind, s.line, s.column))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("y", SiteKind::Write, 4, 16),
            ("x", SiteKind::Read, 4, 27),
            ("y", SiteKind::Read, 4, 34)
        ]
    );
    assert_eq!(k.coverage.instrumented, 3);
    assert!(k.coverage.is_complete());
    // The per-thread slot is declared on the line of the opening brace.
    assert_eq!(line(&i, 2), "{ __cc_slot_t __cc_slot; __CC_ASSUME_BLOCK();");
}

#[test]
fn hidden_params_are_appended_to_definitions_declarations_and_instantiations() {
    let src = "__global__ void a(float* p, int n);\n__global__ void a(float* p, int n) { p[0] = n; }\n__global__ void b(void) { }\n__global__ void c() { }\ntemplate <typename T> __global__ void t(T* p) { p[1] = 0; }\ntemplate __global__ void t<float>(float*);\n__device__ void helper(float* p) { p[0] = 1; }\n";
    let i = inst(src);
    let h = "const unsigned long long* __restrict__ __cc_len, __cc_record* __cc_rec";
    assert_eq!(
        line(&i, 1),
        format!("__global__ void a(float* p, int n, {h});")
    );
    assert!(line(&i, 2).starts_with(&format!("__global__ void a(float* p, int n, {h}) {{")));
    assert_eq!(line(&i, 3), format!("__global__ void b({h}) {{ }}"));
    assert_eq!(line(&i, 4), format!("__global__ void c({h}) {{ }}"));
    assert_eq!(
        line(&i, 6),
        format!("template __global__ void t<float>(float*, {h});")
    );
    // Device functions are not kernels: untouched.
    assert_eq!(
        line(&i, 7),
        "__device__ void helper(float* p) { p[0] = 1; }"
    );
    let names: Vec<_> = i.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "t"]);
    assert_eq!(i.kernels[1].num_params, 0);
    // No slot where nothing is checked (it would only draw an unused-variable warning).
    assert!(!line(&i, 3).contains("__cc_slot"));
}

#[test]
fn line_numbers_are_kept_and_line_directive_follows_prelude() {
    let src = std::fs::read_to_string(workspace().join("kernels/stencil2d.cu")).unwrap();
    let out = instrument(&src, "stencil2d.cu", &InstrumentOptions::default()).unwrap();
    let (pre, user) = out
        .source
        .split_once("#line 1 \"stencil2d.cu\"\n")
        .expect("#line");
    assert!(pre.contains("struct __cc_record"));
    assert_eq!(user.lines().count(), src.lines().count());
    for (a, b) in src.lines().zip(user.lines()) {
        // Lines without accesses are byte-for-byte the user's.
        if !a.contains('[') && !a.contains(')') && a != "{" {
            assert_eq!(a, b);
        }
    }
    let s = out.kernels[0]
        .sites
        .iter()
        .find(|s| s.buffer == "out")
        .unwrap();
    assert_eq!((s.line, s.column, s.kind), (26, 9, SiteKind::Write));
}

#[test]
fn compound_assignment_increment_member_and_arrow_are_classified() {
    let src = "struct P { float x; float a[4]; };\n__global__ void k(float* p, P* ps) {\n  p[0] += 1; p[1]++; --p[2]; ps[3].x = 3; ps[4].a[1] = 4; ps->x = 5; float v = ps[5].x;\n}\n";
    let i = inst(src);
    let kinds: Vec<_> = i.kernels[0].sites.iter().map(|s| s.kind).collect();
    use SiteKind::*;
    assert_eq!(
        kinds,
        [ReadWrite, ReadWrite, ReadWrite, Write, Write, Write, Read]
    );
    assert!(line(&i, 3)
        .contains("(&__cc_at(ps, __cc_rec, 5u, __CC_WRITE, __cc_slot, (0), __cc_len[1]))->x = 5;"));
}

#[test]
fn atomics_and_global_loads_land_in_global_memory() {
    let src = "__global__ void k(unsigned* bins, const float* in) {\n  atomicAdd(&bins[3], 1u); atomicAdd(bins + 4, 1u); float v = __ldg(&in[5]);\n}\n";
    let i = inst(src);
    assert_eq!(
        line(&i, 2),
        "  atomicAdd(&__cc_at(bins, __cc_rec, 0u, __CC_ATOMIC | __CC_GLOBAL, __cc_slot, (3), __cc_len[0]), 1u); \
         atomicAdd(&__cc_at(bins, __cc_rec, 1u, __CC_ATOMIC | __CC_GLOBAL, __cc_slot, (4), __cc_len[0]), 1u); \
         float v = __ldg(&__cc_at(in, __cc_rec, 2u, __CC_READ | __CC_GLOBAL, __cc_slot, (5), __cc_len[1]));"
    );
    let kinds: Vec<_> = i.kernels[0].sites.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [SiteKind::Atomic, SiteKind::Atomic, SiteKind::Read]);
}

#[test]
fn dereference_forms_are_checked() {
    let src = "__global__ void k(const float* in, float* out) {\n  out[0] = *(in + 7) + *in + *(8 + in) + *(in - 1);\n}\n";
    let i = inst(src);
    let l = line(&i, 2);
    assert!(
        l.contains("__cc_rd(in, __cc_rec, 1u, __CC_READ, __cc_slot, (7), __cc_len[0])"),
        "{l}"
    );
    assert!(
        l.contains("__cc_rd(in, __cc_rec, 2u, __CC_READ, __cc_slot, (0), __cc_len[0])"),
        "{l}"
    );
    assert!(
        l.contains("__cc_rd(in, __cc_rec, 3u, __CC_READ, __cc_slot, (8), __cc_len[0])"),
        "{l}"
    );
    assert!(
        l.contains("__cc_rd(in, __cc_rec, 4u, __CC_READ, __cc_slot, (-(1)), __cc_len[0])"),
        "{l}"
    );
    assert_eq!(i.kernels[0].coverage.instrumented, 5);
}

#[test]
fn aliases_carry_their_base_offset() {
    let src = "__global__ void k(float* p, int n, int r) {\n  float* row = p + r * n; row[1] = 0;\n  float* cell = &row[3]; cell[0] = 1;\n}\n";
    let i = inst(src);
    assert_eq!(
        line(&i, 2),
        "  long long __cc_base_row = (long long)(r * n); float* row = p + __cc_base_row; \
         __cc_at_off(row, __cc_rec, 0u, __CC_WRITE, __cc_slot, __cc_base_row, (1), __cc_len[0]) = 0;"
    );
    assert_eq!(
        line(&i, 3),
        "  long long __cc_base_cell = (long long)(3); float* cell = row + __cc_base_cell; \
         __cc_at_off(cell, __cc_rec, 1u, __CC_WRITE, __cc_slot, __cc_base_row + __cc_base_cell, (0), __cc_len[0]) = 1;"
    );
    assert_eq!(i.kernels[0].sites[1].buffer, "cell");
}

#[test]
fn rewrites_spanning_lines_keep_the_line_count() {
    let src = "__global__ void k(float* p, int n) {\n  float* row = p +\n      n;\n  float v = *(p +\n 2);\n  row[0] = v;\n}\n";
    let i = inst(src);
    assert_eq!(body(&i).lines().count(), src.lines().count());
    assert!(
        line(&i, 6).starts_with("  __cc_at_off(row, __cc_rec, 1u, __CC_WRITE"),
        "{}",
        body(&i)
    );
}

#[test]
fn static_shared_arrays_are_checked_per_dimension() {
    let src = "#define N 4\n__global__ void k(const float* in) {\n  __shared__ float tile[N][N + 1];\n  tile[threadIdx.y][threadIdx.x] = in[0];\n  float* r = tile[1];\n}\n";
    let i = inst(src);
    assert!(line(&i, 4).starts_with(
        "  __cc_at_md(&(tile)[0][0], __cc_rec, 0u, __CC_WRITE | __CC_SHARED, __cc_slot, (threadIdx.y), (N), (threadIdx.x), (N + 1)) = "
    ));
    assert_eq!(
        skipped(&i, 0),
        [SkipReason::PartialIndex {
            dims: 2,
            indexed: 1
        }]
    );
    assert_eq!(
        i.kernels[0].coverage.skipped[0].reason.to_string(),
        "the array has 2 dimensions but only 1 are indexed here"
    );
}

#[test]
fn extern_shared_is_checked_against_dynamic_bytes() {
    let src = "extern __shared__ float s_file[];\n__global__ void k(float* out, int n) {\n  extern __shared__ double s[];\n  s[threadIdx.x] = 1.0; out[0] = s_file[2];\n}\n";
    let i = inst(src);
    let l = line(&i, 4);
    assert!(l.starts_with(
        "  __cc_at(&(s)[0], __cc_rec, 0u, __CC_WRITE | __CC_SHARED, __cc_slot, (threadIdx.x), __CC_DYN_BYTES(__cc_len[2]) / sizeof((s)[0])) = 1.0;"
    ), "{l}");
    assert!(l.contains("__cc_rd(&(s_file)[0], __cc_rec, 2u, __CC_READ | __CC_SHARED, __cc_slot, (2), __CC_DYN_BYTES(__cc_len[2]) / sizeof((s_file)[0]))"), "{l}");
}

#[test]
fn local_arrays_follow_the_option() {
    let src =
        "__global__ void k(float* out) {\n  float w[8]; w[threadIdx.x] = 0; out[0] = w[1];\n}\n";
    assert_eq!(inst(src).kernels[0].coverage.instrumented, 3);
    let mut opts = InstrumentOptions::default();
    opts.check_local_arrays = false;
    let i = instrument(src, "t.cu", &opts).unwrap();
    assert_eq!(i.kernels[0].coverage.instrumented, 1);
    assert!(line(&i, 2).contains("float w[8]; w[threadIdx.x] = 0;"));
}

#[test]
fn reassigned_pointer_is_skipped_not_miscounted() {
    let src = "__global__ void k(float* p, int n) {\n  p += n;\n  p[0] = 2;\n}\n";
    let i = inst(src);
    assert_eq!(line(&i, 3), "  p[0] = 2;");
    assert_eq!(i.kernels[0].coverage.instrumented, 0);
    assert_eq!(
        skipped(&i, 0),
        [SkipReason::PointerReassigned { name: "p".into() }]
    );
    let s = &i.kernels[0].coverage.skipped[0];
    assert_eq!((s.line, s.column, s.text.as_str()), (3, 3, "p[0]"));
}

#[test]
fn casts_unknown_pointers_asm_macros_and_calls_are_reported() {
    let src = "#define AT(i) in[i]\n__device__ void foo(float* p, int n);\n__global__ void k(float* p, const float* in, int n) {\n  ((float4*)p)[0].x = 1; reinterpret_cast<float2*>(p)[1].x = 2; float4* q4 = (float4*)p; q4[1].y = 0;\n  float* q; q = p; q[2] = 0;\n  foo(p, n); foo(&p[n], 0); float v = AT(3);\n  asm volatile(\"st.global.f32 [%0], %1;\" :: \"l\"(p), \"f\"(v));\n}\n";
    let i = inst(src);
    assert_eq!(
        skipped(&i, 0),
        [
            SkipReason::PointerCast,
            SkipReason::PointerCast,
            SkipReason::PointerCast,
            SkipReason::UnknownAlias { name: "q".into() },
            SkipReason::PassedToFunction {
                function: "foo".into()
            },
            SkipReason::AddressEscapes,
            SkipReason::MacroBody {
                macro_name: "AT".into()
            },
            SkipReason::InlineAsm,
        ]
    );
    assert_eq!(i.kernels[0].coverage.instrumented, 0);
    // `&p[n]` may point one past the end: not rewritten.
    assert!(line(&i, 6).contains("foo(&p[n], 0)"));
    let report = render_report(&i);
    assert!(
        report.contains(
            "t.cu:6:7: `p`: the buffer is passed to `foo`, whose accesses are not checked"
        ),
        "{report}"
    );
    assert!(
        report.contains("kernel `k` (line 3): 0 accesses checked, 8 left unchecked:"),
        "{report}"
    );
}

#[test]
fn pointer_to_pointer_checks_the_outer_level_only() {
    let src = "__global__ void k(float** pp, float* out) {\n  out[0] = pp[1][2];\n}\n";
    let i = inst(src);
    assert!(line(&i, 2)
        .contains("__cc_rd(pp, __cc_rec, 1u, __CC_READ, __cc_slot, (1), __cc_len[0])[2]"));
    assert_eq!(skipped(&i, 0), [SkipReason::NestedPointer]);
}

#[test]
fn assertions_record_condition_text() {
    let src = "__global__ void k(int n, float v) {\n  assert(n > 0 && \"positive\");\n  CUDACHECK_ASSERT(v == v, \"nan\");\n}\n";
    let i = inst(src);
    assert_eq!(
        line(&i, 2),
        "  __cc_assert((n > 0 && \"positive\"), 0u, \"n > 0 && \\\"positive\\\"\", __LINE__, __cc_rec);"
    );
    assert_eq!(
        line(&i, 3),
        "  __cc_assert((v == v), 1u, (\"nan\"), __LINE__, __cc_rec);"
    );
    let k = &i.kernels[0];
    assert_eq!(k.sites[0].kind, SiteKind::Assert);
    assert_eq!(k.sites[0].buffer, "n > 0 && \"positive\"");
    assert_eq!(k.coverage.instrumented, 0);
    assert!(render_report(&i).contains("0 accesses checked, 2 assertions, none left unchecked"));

    let mut opts = InstrumentOptions::default();
    opts.file_name_in_records = true;
    let i = instrument(src, "dir/t.cu", &opts).unwrap();
    assert!(i
        .source
        .contains("\"dir/t.cu:2: n > 0 && \\\"positive\\\"\""));
    opts.rewrite_asserts = false;
    let i = instrument(src, "t.cu", &opts).unwrap();
    assert!(i.source.contains("  assert(n > 0 && \"positive\");"));
}

#[test]
fn long_assert_messages_are_cut_to_fit_the_record() {
    let cond = format!("n > {}", "1".repeat(100));
    let src = format!("__global__ void k(long n) {{ assert({cond}); }}\n");
    let i = inst(&src);
    let msg = format!("\"{}\"", &cond[..63]);
    assert!(i.source.contains(&msg), "{}", i.source);
}

#[test]
fn sites_are_unique_across_kernels_and_found_by_id() {
    let src = "__global__ void a(float* p) { p[0] = 1; }\nnamespace ns {\n#ifdef FOO\n__global__ void b(float* q) { q[1] = p2; }\n#else\n__global__ void b(float* q) { q[2] = 0; }\n#endif\n}\n";
    let i = inst(src);
    let names: Vec<_> = i.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "b"]);
    let (k, s) = i.site(2).expect("site 2");
    assert_eq!((k.name.as_str(), s.line, s.buffer.as_str()), ("b", 6, "q"));
    assert!(i.site(3).is_none());
}

#[test]
fn shadowing_local_is_not_the_parameter() {
    let src = "__global__ void k(float* p) {\n  { float p[2]; p[1] = 0; }\n  p[3] = 1;\n}\n";
    let i = inst(src);
    assert!(line(&i, 2).contains(
        "__cc_at_md(&(p)[0], __cc_rec, 0u, __CC_WRITE | __CC_LOCAL, __cc_slot, (1), (2))"
    ));
    assert!(
        line(&i, 3).contains("__cc_at(p, __cc_rec, 1u, __CC_WRITE, __cc_slot, (3), __cc_len[0])")
    );
}

#[test]
fn nul_bytes_are_a_typed_error() {
    let err = instrument(
        "__global__ void k() {}\n\0",
        "bin.cu",
        &InstrumentOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        InstrumentError::NulByte {
            file_name: "bin.cu".into(),
            offset: 23,
            line: 2
        }
    );
    assert!(err.to_string().contains("bin.cu:2: byte 23 is a NUL byte"));
}

#[test]
fn syntax_errors_leave_the_other_kernels_instrumented() {
    let src = "__global__ void bad(float* p) { p[0] = 1 + ; p[1] = 2; }\n__global__ void good(float* q) { q[1] = 2; }\n";
    let i = inst(src);
    let good = i.kernel("good").expect("good kernel");
    assert_eq!(good.coverage.instrumented, 1);
    // The unreadable statement is copied as written and reported; the next one is checked.
    let bad = i.kernel("bad").expect("bad kernel");
    assert_eq!(skipped(&i, 0), [SkipReason::SyntaxError]);
    assert_eq!(bad.coverage.instrumented, 1);
    assert!(line(&i, 1).contains("p[0] = 1 + ;"), "{}", line(&i, 1));
}

#[test]
fn prelude_record_size_matches_rust() {
    let i = inst("__global__ void k() {}\n");
    assert!(i.source.contains(&format!(
        "static_assert(sizeof(__cc_record) == {RECORD_BYTES},"
    )));
    assert_eq!(RECORD_BYTES, 128);
    let mut r = FaultRecord::empty();
    r.faulted = 1;
    r.site = 9;
    r.thread = [33, 0, 0];
    assert_eq!(decode(&r.to_bytes()), Some(r));
}

#[test]
fn no_panic_on_mutated_sources() {
    // A deterministic stand-in for the fuzz target (fuzz/fuzz_targets/instrument.rs): splice,
    // cut and duplicate pieces of real kernels and random bytes.
    let mut corpus = Vec::new();
    for entry in std::fs::read_dir(workspace().join("kernels")).unwrap() {
        corpus.push(std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    corpus.push("__global__ void k(float* p) { float* r = p + 1; r[(p[0]]) = *(p - ; }".into());
    corpus.push(format!(
        "__global__ void k(float* p) {{ p[{}0{}] = 1; }}",
        "(".repeat(3000),
        ")".repeat(3000)
    ));
    corpus.push(format!(
        "__global__ void k(float* p) {{ {} }}",
        "{ p[0] = 1; ".repeat(400)
    ));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let pieces = [
        "[",
        "]",
        "(",
        ")",
        "*",
        "&",
        "+",
        "p",
        "__global__",
        "{",
        "}",
        ";",
        "=",
        "\u{e9}",
        "\"",
        "#define X in[i]\n",
        "extern __shared__",
        "assert(",
        "->",
        "atomicAdd(&",
    ];
    let mut runs = 0;
    for n in 0..10_000 {
        let base = &corpus[n % corpus.len()];
        let mut bytes: Vec<char> = base.chars().collect();
        for _ in 0..(rnd() % 8) {
            let at = (rnd() as usize) % (bytes.len() + 1);
            match rnd() % 3 {
                0 => {
                    let p = pieces[(rnd() as usize) % pieces.len()];
                    for (j, c) in p.chars().enumerate() {
                        bytes.insert(at + j, c);
                    }
                }
                1 => {
                    let end = (at + (rnd() as usize) % 40).min(bytes.len());
                    bytes.drain(at..end);
                }
                _ => {
                    let c = char::from_u32((rnd() % 0x250) as u32).unwrap_or('x');
                    bytes.insert(at, c);
                }
            }
        }
        let text: String = bytes.into_iter().collect();
        if let Ok(out) = instrument(&text, "fuzz.cu", &InstrumentOptions::default()) {
            let (_, user) = out
                .source
                .split_once("#line 1 \"fuzz.cu\"\n")
                .expect("#line");
            assert_eq!(final_line(user), final_line(&text), "{text}");
        }
        runs += 1;
    }
    assert_eq!(runs, 10_000);
}

#[test]
fn loop_counters_below_the_extent_are_not_checked_again() {
    let src = "#define T 16\n__global__ void k(float* out) {\n  __shared__ float a[T][T];\n  float acc = 0.0f;\n  for (int kk = 0; kk < T; ++kk) acc += a[threadIdx.y][kk];\n  for (int kk = 0; kk <= T; ++kk) acc += a[threadIdx.y][kk];\n  for (int kk = 0; kk < T; ++kk) { acc += a[kk][0]; kk += 2; }\n  for (int kk = 0; kk < T + 1; kk++) acc += a[0][kk];\n  out[0] = acc;\n}\n";
    let i = inst(src);
    // Proven: the bound is the extent, the counter starts at 0 and only the loop steps it.
    assert!(
        line(&i, 5).contains("(threadIdx.y), (T), (kk), -(T))"),
        "{}",
        line(&i, 5)
    );
    // `<=` (the classic off-by-one), a counter the body changes, and another bound: checked.
    assert!(line(&i, 6).contains("(kk), (T))"), "{}", line(&i, 6));
    assert!(
        line(&i, 7).contains("(kk), (T), (0), (T))"),
        "{}",
        line(&i, 7)
    );
    assert!(
        line(&i, 8).contains("(0), (T), (kk), (T))"),
        "{}",
        line(&i, 8)
    );
    assert_eq!(i.kernels[0].coverage.instrumented, 5);
}

#[test]
fn an_extent_written_over_several_lines_does_not_add_lines() {
    // Reduced from a fuzzer find: the extent was repeated at each access, newlines and all.
    let src = "__global__ void k(float* out) {\n  float w[4\n    + 1];\n  w[1] = 2.0f;\n  out[0] = w[1];\n}\n";
    let i = inst(src);
    assert_eq!(
        body(&i).lines().count(),
        src.lines().count(),
        "{}",
        body(&i)
    );
    assert!(
        line(&i, 4).contains("w[1] = 2.0f;"),
        "left unchecked: {}",
        line(&i, 4)
    );
}
