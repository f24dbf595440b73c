//! Loop versioning: checks hoisted out of loops, and the loops where that would be wrong.

use cudacheck_core::instrument::{final_line, instrument, InstrumentOptions, Instrumented};

fn inst(src: &str) -> Instrumented {
    match instrument(src, "t.cu", &InstrumentOptions::default()) {
        Ok(i) => i,
        Err(e) => panic!("instrument failed: {e}"),
    }
}

/// The rewritten user part (after the prelude's `#line 1` directive).
fn user(i: &Instrumented) -> &str {
    let marker = "#line 1 \"t.cu\"\n";
    let at = i.source.find(marker).expect("#line directive");
    &i.source[at + marker.len()..]
}

/// How many loops were versioned (each has one `= true` flag).
fn versioned(i: &Instrumented) -> usize {
    user(i).matches("= true; asm volatile(").count()
}

/// Every hoisted access names a flag that is declared in both copies of its loop.
fn flags_are_declared(i: &Instrumented) {
    let text = user(i);
    for (at, _) in text.match_indices("<__cc_h") {
        let id: String = text[at + 7..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        for value in ["true", "false"] {
            let decl = format!("constexpr bool __cc_h{id} = {value};");
            assert!(text.contains(&decl), "no `{decl}` for a use of __cc_h{id}");
        }
    }
}

fn kernel(body: &str) -> String {
    format!(
        "#define U 4\n__global__ void k(float* out, const float* in, const int* idx, int n) {{\n  \
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n{body}\n}}\n"
    )
}

#[test]
fn an_unrolled_loop_is_checked_once_at_its_first_and_last_index() {
    let src = kernel(
        "  float acc[U];\n  for (int u = 0; u < U; ++u) acc[u] = 0.0f;\n  int j = 0;\n  \
         for (; j + U <= n; j += U) {\n#pragma unroll\n    \
         for (int u = 0; u < U; ++u) acc[u] += in[j + u];\n  }\n  out[i] = acc[0];",
    );
    let i = inst(&src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    flags_are_declared(&i);
    // Both ends of `j + u` for u in 0..=U-1, in 64-bit arithmetic, against `in`'s length.
    assert!(
        text.contains("__cc_in(((long long)(j)) + (((long long)(int)(0))), __cc_len[1])"),
        "{text}"
    );
    assert!(
        text.contains("__cc_in(((long long)(j)) + (((long long)(U) - 1)), __cc_len[1])"),
        "{text}"
    );
    assert!(text.contains("((long long)(int)(0)) <= ((long long)(U) - 1)"));
    // One read in two copies: proven in the first, checked in the second.
    assert_eq!(text.matches("__cc_rd<__cc_h").count(), 2, "{text}");
    // The unroll pragma moved into both copies; its line is left empty.
    assert_eq!(text.matches("_Pragma(\"unroll\")").count(), 2, "{text}");
    assert!(!text.contains("#pragma unroll"), "{text}");
    // `acc` is what the copies leave behind.
    assert_eq!(text.matches("__cc_opaque(acc);").count(), 2, "{text}");
    // The outer loop has no counter of its own and `out[i]` is outside every loop.
    assert!(text.contains("__cc_at(out,"), "{text}");
    let k = &i.kernels[0];
    assert_eq!(k.coverage.hoisted, 1);
    // `in`, `out` and the three uses of the local array `acc`.
    assert_eq!(k.coverage.instrumented, 5);
    assert_eq!(final_line(text), final_line(&src));
}

#[test]
fn a_grid_stride_loop_checks_its_first_and_last_index_and_a_positive_step() {
    let src =
        kernel("  for (int t = i; t < n; t += gridDim.x * blockDim.x) out[t] = 2.0f * in[t];");
    let i = inst(&src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    flags_are_declared(&i);
    assert!(
        text.contains("((long long)(gridDim.x * blockDim.x)) > 0"),
        "{text}"
    );
    assert!(
        text.contains("__cc_in((((long long)(n) - 1)), __cc_len[0])"),
        "{text}"
    );
    assert!(
        text.contains("__cc_in((((long long)(int)(i))), __cc_len[1])"),
        "{text}"
    );
    assert_eq!(i.kernels[0].coverage.hoisted, 2);
    assert_eq!(final_line(text), final_line(&src));
}

#[test]
fn an_alias_is_checked_at_its_base_plus_each_end() {
    let src = "__global__ void k(float* out, int cols) {\n  \
               float* row = out + blockIdx.x * cols;\n  \
               for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = 0.0f;\n}\n";
    let i = inst(src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    assert!(
        text.contains("__cc_in((__cc_base_row) + (((long long)(cols) - 1)), __cc_len[0])"),
        "{text}"
    );
    assert!(text.contains("__cc_at_off<__cc_h"), "{text}");
}

#[test]
fn dynamic_shared_memory_is_checked_against_the_launch_size_once() {
    let src = "__global__ void k(float* out) {\n  extern __shared__ float s[];\n  \
               for (int t = threadIdx.x; t < 256; t += blockDim.x) s[t] = 0.0f;\n  \
               out[0] = s[0];\n}\n";
    let i = inst(src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    assert!(
        text.contains(
            "__cc_in((((long long)(256) - 1)), __CC_DYN_BYTES(__cc_len[1]) / sizeof((s)[0]))"
        ),
        "{text}"
    );
}

#[test]
fn an_index_that_does_not_change_in_the_loop_is_checked_once() {
    let src =
        kernel("  float s = 0.0f;\n  for (int u = 0; u < n; ++u) s += in[i] * u;\n  out[i] = s;");
    let i = inst(&src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    assert!(
        text.contains("__cc_in(((long long)(i)), __cc_len[1])"),
        "{text}"
    );
    assert_eq!(text.matches("__cc_opaque(s);").count(), 2, "{text}");
}

#[test]
fn loops_where_hoisting_would_be_unsound_keep_every_check() {
    let cases: &[(&str, &str)] = &[
        ("a barrier", "  for (int u = 0; u < U; ++u) { out[u] = in[u]; __syncthreads(); }"),
        (
            "a warp shuffle",
            "  float v = 0.0f;\n  for (int u = 0; u < U; ++u) v += __shfl_down_sync(0xffffffffu, in[u], 1);\n  out[i] = v;",
        ),
        ("a call that might synchronize", "  for (int u = 0; u < U; ++u) out[u] = helper(in[u]);"),
        ("the counter used twice", "  for (int u = 0; u < U; ++u) out[u * u] = 0.0f;"),
        ("a non-monotone index", "  for (int u = 0; u < n; ++u) out[u % 7] = 0.0f;"),
        ("an index read from memory", "  for (int u = 0; u < U; ++u) out[idx[u]] = 0.0f;"),
        ("a cast in the index", "  for (int u = 0; u < U; ++u) out[(unsigned char)(i + u)] = 0.0f;"),
        ("a division in the index", "  for (int u = 0; u < U; ++u) out[(i + u) / 2] = 0.0f;"),
        (
            "an index variable the loop changes",
            "  int b = i;\n  for (int u = 0; u < U; ++u) { out[b + u] = 0.0f; b += 2; }",
        ),
        ("a counter the body changes", "  for (int u = 0; u < n; ++u) { out[u] = 0.0f; u += 1; }"),
        ("a bound the body changes", "  int m = n;\n  for (int u = 0; u < m; ++u) { out[u] = 0.0f; --m; }"),
        (
            "a __shared__ scalar in the index",
            "  __shared__ int base;\n  for (int u = 0; u < U; ++u) out[base + u] = 0.0f;",
        ),
        ("a reference in the index", "  int& r = i;\n  for (int u = 0; u < U; ++u) out[r + u] = 0.0f;"),
        (
            "a __shared__ array declared in the loop",
            "  for (int u = 0; u < U; ++u) { __shared__ float t[4]; t[0] = 1.0f; out[u] = t[0]; }",
        ),
        ("an 8-bit counter", "  for (char u = 0; u < 100; ++u) out[u] = 0.0f;"),
        ("a counter stepped down", "  for (int u = n - 1; u < n; u -= 1) out[u] = 0.0f;"),
        ("inline assembly", "  for (int u = 0; u < U; ++u) { asm volatile(\"\"); out[u] = 0.0f; }"),
        ("a macro that is not a constant", "  for (int u = 0; u < LIMIT; ++u) out[u] = 0.0f;"),
    ];
    for (why, body) in cases {
        let src = format!(
            "#define LIMIT n\n__device__ float helper(float x) {{ return x; }}\n{}",
            kernel(body)
        );
        let i = inst(&src);
        let text = user(&i);
        assert!(!text.contains(">(out,"), "{why}: `out` hoisted\n{text}");
        if body.contains("idx[") {
            // `idx[u]` itself may be hoisted; the `out` access it indexes may not.
            continue;
        }
        assert_eq!(versioned(&i), 0, "{why}: versioned\n{text}");
        assert!(!text.contains("<__cc_h"), "{why}: hoisted\n{text}");
        assert!(!text.contains("__cc_v"), "{why}\n{text}");
        assert!(
            i.kernels[0].coverage.instrumented >= 1,
            "{why}: the access is still checked"
        );
        assert_eq!(i.kernels[0].coverage.hoisted, 0, "{why}");
    }
}

#[test]
fn a_loop_around_a_versioned_loop_is_not_versioned_itself() {
    let src = kernel(
        "  for (int r = 0; r < U; ++r) {\n    out[r] = 1.0f;\n    \
         for (int c = 0; c < n; ++c) out[r * n + c] += in[r * n + c];\n  }",
    );
    let i = inst(&src);
    let text = user(&i);
    // The inner loop is versioned (r does not change in it); the outer loop's own hoisted
    // access keeps its check, so the code is at most twice the original.
    assert_eq!(versioned(&i), 1, "{text}");
    assert!(text.contains("__cc_at<false>(out,"), "{text}");
    flags_are_declared(&i);
    assert_eq!(i.kernels[0].coverage.hoisted, 2);
    assert_eq!(final_line(text), final_line(&src));
}

#[test]
fn the_second_copy_starts_on_the_loops_own_line() {
    let src = kernel(
        "  float s = 0.0f;\n  for (int u = 0; u < U; ++u) {\n    s += in[i + u];\n    \
         assert(s < 1e30f);\n  }\n  out[i] = s;",
    );
    let i = inst(&src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    // The loop is on line 5 of the file; the directive restarts the numbering there.
    assert!(text.contains("\n#line 5 \"t.cu\"\n"), "{text}");
    assert_eq!(final_line(text), final_line(&src));
    // The assertion site is one site, used by both copies.
    let asserts = i.kernels[0]
        .sites
        .iter()
        .filter(|s| s.buffer.contains("1e30f"))
        .count();
    assert_eq!(asserts, 1);
}

#[test]
fn the_second_copy_follows_the_users_own_line_directives() {
    // Reduced from a fuzzer find: a `#line` in the user's file renumbers what follows, so the
    // directive before the second copy must use that numbering (and that file name).
    let src = kernel(
        "#line 40 \"gen.cu\"\n  float s = 0.0f;\n  for (int u = 0; u < U; ++u)\n    s += in[i + u];\n  out[i] = s;",
    );
    let i = inst(&src);
    let text = user(&i);
    assert_eq!(versioned(&i), 1, "{text}");
    assert!(text.contains("\n#line 41 \"gen.cu\"\n"), "{text}");
    assert_eq!(final_line(text), final_line(&src));
    assert_eq!(final_line(&src), 45);
}
