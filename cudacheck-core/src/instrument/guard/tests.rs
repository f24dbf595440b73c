//! The host checks the guards give, on small kernels.

use super::*;
use crate::instrument::{instrument_ptx_with, InstrumentOptions, InstrumentedKernel, LaunchValues};

/// A kernel `k(float* out, u32 n)` (and a third parameter `int* m`) with `body`.
fn kernel(body: &str) -> InstrumentedKernel {
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1, .param .u64 k_param_2)\n{{\n\
         \t.reg .pred %p<8>;\n\t.reg .f32 %f<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
         \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_1];\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.f32 %f1, 0f3F800000;\n{body}\n$L__END:\n\tret;\n}}\n"
    );
    let opts = InstrumentOptions::new().host_checks(true);
    let out = instrument_ptx_with(&ptx, &opts).unwrap();
    let k = out.kernels.into_iter().next().unwrap();
    assert!(k.coverage.is_complete());
    assert_eq!(
        k.coverage.checked + k.coverage.host_checked,
        1 + u32::from(body.contains("ld.global")),
        "one access: {k:?}"
    );
    k
}

/// Whether the launch (grid, block, `n`, `out`'s bytes) runs the access unchecked on the
/// device: it is host-checked, and the host check holds.
fn holds(k: &InstrumentedKernel, grid: u32, block: u32, n: u32, len: u64) -> bool {
    if k.host_checks.is_empty() {
        return false;
    }
    let scalars = [None, Some((u64::from(n), 4)), None];
    let v = LaunchValues {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        scalars: &scalars,
        lens: &[len, u64::MAX, u64::MAX],
    };
    k.host_checks_hold(&v)
}

const STORE: &str =
    "\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;";

/// `for (r = 0; r < n; r++) s += out[r * n + tid]` as NVRTC writes it: the address a
/// pointer stepping by `n * 4`, the counter tested at the bottom (a rotated loop).
const COLUMN: &str = "\tsetp.lt.s32 %p1, %r1, 1;\n\t@%p1 bra $L__END;\n\
    \tmov.u32 %r5, %tid.x;\n\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd5, %rd2, %rd3;\n\
    \tmul.wide.s32 %rd6, %r1, 4;\n\tmov.u32 %r6, 0;\n\
    $L__LOOP:\n\tld.global.f32 %f2, [%rd5];\n\tadd.f32 %f1, %f1, %f2;\n\
    \tadd.s64 %rd5, %rd5, %rd6;\n\tadd.s32 %r6, %r6, 1;\n\
    \tsetp.lt.s32 %p2, %r6, %r1;\n\t@%p2 bra $L__LOOP;\n\tst.global.f32 [%rd2], %f1;";

#[test]
fn a_column_loop_is_checked_once_per_launch_over_every_iteration() {
    let k = kernel(COLUMN);
    assert_eq!(k.coverage.host_checked, 2, "{k:?}");
    // rows = n = 100, one block of 100 threads (columns): the last read is element
    // 99 * 100 + 99, so 100 * 100 floats are exactly enough.
    assert!(holds(&k, 1, 100, 100, 100 * 100 * 4));
    assert!(!holds(&k, 1, 100, 100, 100 * 100 * 4 - 4));
    // A wider block reads past the last row's end.
    assert!(!holds(&k, 1, 101, 100, 100 * 100 * 4));
    // n = 0: the kernel returns before the loop, but the check assumes the first
    // iteration runs (it does not use the test before the loop): row 0 must fit.
    assert!(holds(&k, 1, 100, 0, 400));
    assert!(!holds(&k, 1, 100, 0, 396));
}

#[test]
fn one_iteration_too_many_fails_the_host_check() {
    // `r <= n`: rows 0..=n.
    let k = kernel(&COLUMN.replace("setp.lt.s32 %p2", "setp.le.s32 %p2"));
    assert!(!holds(&k, 1, 100, 100, 100 * 100 * 4));
    assert!(holds(&k, 1, 100, 100, 101 * 100 * 4));
}

#[test]
fn a_loop_tested_at_the_top_counts_the_iterations_that_pass_the_test() {
    let top = "\tmov.u32 %r5, %tid.x;\n\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd5, %rd2, %rd3;\n\
        \tmul.wide.s32 %rd6, %r1, 4;\n\tmov.u32 %r6, 0;\n\
        $L__TOP:\n\tsetp.ge.s32 %p2, %r6, %r1;\n\t@%p2 bra $L__DONE;\n\
        \tld.global.f32 %f2, [%rd5];\n\tadd.f32 %f1, %f1, %f2;\n\
        \tadd.s64 %rd5, %rd5, %rd6;\n\tadd.s32 %r6, %r6, 1;\n\tbra.uni $L__TOP;\n\
        $L__DONE:\n\tst.global.f32 [%rd2], %f1;";
    let k = kernel(top);
    assert!(holds(&k, 1, 64, 100, 100 * 100 * 4 - 36 * 4));
    assert!(!holds(&k, 1, 64, 100, 100 * 100 * 4 - 36 * 4 - 4));
}

#[test]
fn a_counter_that_may_wrap_fails_the_host_check() {
    // Step 2 and `r < n` with n = i32::MAX: `r + 2` could wrap past the test.
    let k = kernel(&COLUMN.replace("add.s32 %r6, %r6, 1;", "add.s32 %r6, %r6, 2;"));
    assert!(holds(&k, 1, 1, 5, 1 << 20));
    assert!(!holds(&k, 1, 1, i32::MAX as u32, u64::MAX / 2));
}

fn guarded(index: &str, guard: &str, store: &str) -> String {
    format!("{index}\n{guard}\n\t@%p1 bra $L__END;\n{store}")
}

const GID: &str = "\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmov.u32 %r5, %tid.x;\n\tmad.lo.s32 %r2, %r3, %r4, %r5;";

#[test]
fn an_unsigned_guard_on_the_index_is_checked_on_the_host() {
    let k = kernel(&guarded(GID, "\tsetp.ge.u32 %p1, %r2, %r1;", STORE));
    assert_eq!(k.coverage.host_checked, 1);
    assert_eq!(k.host_checks[0].param, 0);
    // n elements fit: holds whatever the grid.
    assert!(holds(&k, 1 << 20, 256, 1000, 4000));
    // `n` past the buffer (the planted bug): the fully checked build runs.
    assert!(!holds(&k, 1 << 20, 256, 1001, 4000));
    // n == 0: the access never runs.
    assert!(holds(&k, 8, 256, 0, 0));
    // The operand order reversed, and a negated branch.
    let k = kernel(&guarded(
        GID,
        "\tsetp.gt.u32 %p1, %r1, %r2;\n\tnot.pred %p1, %p1;",
        STORE,
    ));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 1 << 20, 256, 1000, 4000));
    assert!(!holds(&k, 1 << 20, 256, 1001, 4000));
}

/// `if (i >= n) __trap();` (or an early `exit`/`return`): the block falls through past the
/// guarded end only where its guard fails, so what follows knows `i < n`.
#[test]
fn a_guard_that_traps_or_returns_bounds_what_follows() {
    for end in ["trap", "exit", "ret"] {
        let k = kernel(&format!(
            "{GID}\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 {end};\n{STORE}"
        ));
        assert_eq!(k.coverage.host_checked, 1, "{end}: {k:?}");
        assert!(holds(&k, 1 << 20, 256, 1000, 4000), "{end}");
        assert!(!holds(&k, 1 << 20, 256, 1001, 4000), "{end}");
        // The guard the other way round (`@!%p1`): the access runs where `i >= n`.
        let k = kernel(&format!(
            "{GID}\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@!%p1 {end};\n{STORE}"
        ));
        assert!(!holds(&k, 1 << 20, 256, 1000, 4000), "{end}");
    }
}

#[test]
fn a_signed_guard_needs_a_non_negative_index() {
    // i = blockIdx.x * blockDim.x + threadIdx.x, `i < n` signed: i >= 0 while the grid's
    // threads fit in an int.
    let k = kernel(&guarded(
        GID,
        "\tsetp.ge.s32 %p1, %r2, %r1;",
        "\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;",
    ));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 1000, 256, 1000, 4000));
    // 2^24 blocks of 256: i wraps negative past 2^31, `i < n` holds for it.
    assert!(!holds(&k, 1 << 24, 256, 1000, 4000));
    // i = threadIdx.x - 5 may be negative: never proven.
    let k = kernel(&guarded(
        "\tmov.u32 %r5, %tid.x;\n\tadd.s32 %r2, %r5, -5;",
        "\tsetp.ge.s32 %p1, %r2, %r1;",
        "\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;",
    ));
    assert!(!holds(&k, 1, 256, 10, 1 << 20));
}

#[test]
fn a_guard_on_another_or_redefined_register_proves_nothing() {
    // The guard is on %r6, the index is %r2.
    let k = kernel(&guarded(
        &format!("{GID}\n\tmov.u32 %r6, %tid.y;"),
        "\tsetp.ge.u32 %p1, %r6, %r1;",
        STORE,
    ));
    // Only the grid bounds it: holds for a small grid, not for a large one.
    assert!(!holds(&k, 1 << 20, 256, 10, 4000));
    // The index is redefined after the guard.
    let k = kernel(&guarded(
        GID,
        "\tsetp.ge.u32 %p1, %r2, %r1;",
        &format!("\tadd.s32 %r2, %r2, 100;\n{STORE}"),
    ));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
    // The predicate's register redefined between the compare and the branch.
    let k = kernel(&format!(
        "{GID}\n\tsetp.ge.u32 %p1, %r2, %r1;\n\tadd.s32 %r2, %r2, 7;\n\t@%p1 bra $L__END;\n{STORE}"
    ));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
}

#[test]
fn a_guard_that_does_not_dominate_proves_nothing() {
    // if (i < n) { x = 1 } ; out[i] = x: both paths reach the store.
    let k = kernel(&format!(
        "{GID}\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__J;\n\tmov.f32 %f1, 0f40000000;\n$L__J:\n{STORE}"
    ));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
    // The branch taken on the guard's success (the access under `i >= n`).
    let k = kernel(&format!(
        "{GID}\n\tsetp.lt.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n{STORE}"
    ));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
}

#[test]
fn a_bound_loaded_from_memory_is_no_parameter() {
    let k = kernel(&guarded(
        &format!("{GID}\n\tld.param.u64 %rd9, [k_param_2];\n\tcvta.to.global.u64 %rd10, %rd9;\n\tld.global.u32 %r7, [%rd10];"),
        "\tsetp.ge.u32 %p1, %r2, %r7;",
        STORE,
    ));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
}

#[test]
fn an_access_past_the_guarded_index_needs_room_for_it() {
    // if (i < n) out[i + 1] = ...
    let k = kernel(&guarded(
        GID,
        "\tsetp.ge.u32 %p1, %r2, %r1;",
        "\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4+4], %f1;",
    ));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(!holds(&k, 1 << 20, 256, 1000, 4000));
    assert!(holds(&k, 1 << 20, 256, 1000, 4004));
}

#[test]
fn a_grid_stride_loop_is_an_induction_variable() {
    // for (i = tid; i < n; i += blockDim.x) out[i] = ...  (signed, as NVVM writes it)
    let body = "\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r4, %ntid.x;\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n$L__LOOP:\n\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;\n\tadd.s32 %r2, %r2, %r4;\n\tsetp.lt.s32 %p2, %r2, %r1;\n\t@%p2 bra $L__LOOP;";
    let k = kernel(body);
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 1, 256, 5000, 20000));
    assert!(!holds(&k, 1, 256, 5001, 20000));
    // n + blockDim.x past i32::MAX: the increment could wrap negative.
    assert!(!holds(&k, 1, 256, i32::MAX as u32 - 10, u64::MAX));
    // A back edge that does not test the register: no bound at the step.
    let body = "\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r4, %ntid.x;\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n$L__LOOP:\n\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;\n\tadd.s32 %r2, %r2, %r4;\n\tbra $L__LOOP;";
    let k = kernel(body);
    assert!(!holds(&k, 1, 256, 5000, 20000));
}

#[test]
fn two_dimensional_guards_combine_through_or() {
    // if (row < n && col < 64) out[row * 64 + col]
    let body = "\tmov.u32 %r2, %tid.y;\n\tmov.u32 %r3, %tid.x;\n\tsetp.ge.s32 %p2, %r2, %r1;\n\tsetp.gt.s32 %p3, %r3, 63;\n\tor.pred %p1, %p2, %p3;\n\t@%p1 bra $L__END;\n\tshl.b32 %r4, %r2, 6;\n\tadd.s32 %r5, %r4, %r3;\n\tmul.wide.s32 %rd3, %r5, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;";
    let k = kernel(body);
    assert_eq!(k.coverage.host_checked, 1);
    let v = |n: u32, len: u64| {
        let scalars = [None, Some((u64::from(n), 4)), None];
        k.host_checks_hold(&LaunchValues {
            grid: [1, 1, 1],
            block: [128, 8, 1],
            scalars: &scalars,
            lens: &[len, u64::MAX, u64::MAX],
        })
    };
    assert!(v(4, 4 * 64 * 4));
    assert!(!v(5, 4 * 64 * 4));
    // Without the host-check option nothing changes.
    let ptx_opts = InstrumentOptions::new();
    assert!(!ptx_opts.host_checks);
}

/// `if (i - 1 >= 0 && i < n) out[i - 1] = ...` as NVVM folds `a >= 0 && b >= 0`:
/// `(a | b) < 0`. `comb` is the instruction combining `i - 1` and `i`.
fn sign_test(comb: &str, hoisted: bool) -> InstrumentedKernel {
    let addr = "\tmul.wide.s32 %rd3, %r6, 4;\n\tadd.s64 %rd4, %rd2, %rd3;";
    let guard = format!(
        "\t{comb} %r7, %r6, %r2;\n\tsetp.lt.s32 %p1, %r7, 0;\n\tsetp.ge.s32 %p2, %r2, %r1;\n\tor.pred %p3, %p1, %p2;\n\t@%p3 bra $L__END;"
    );
    let (before, after) = if hoisted {
        (addr, String::new())
    } else {
        ("", addr.to_string())
    };
    kernel(&format!(
        "{GID}\n\tadd.s32 %r6, %r2, -1;\n{before}\n{guard}\n{after}\n\tst.global.f32 [%rd4], %f1;"
    ))
}

#[test]
fn an_or_of_two_values_tested_for_sign_bounds_both() {
    for hoisted in [false, true] {
        let k = sign_test("or.b32", hoisted);
        assert_eq!(k.coverage.host_checked, 1);
        // i in [1, n): i - 1 in [0, n - 2], the last 4 bytes at 4n - 8.
        assert!(holds(&k, 1 << 20, 256, 1000, 4 * 999), "hoisted: {hoisted}");
        assert!(
            !holds(&k, 1 << 20, 256, 1000, 4 * 998),
            "hoisted: {hoisted}"
        );
    }
    // `min(a, b) >= 0` says as much.
    let k = sign_test("min.s32", false);
    assert!(holds(&k, 1 << 20, 256, 1000, 4 * 999));
    // `(a & b) >= 0` says only that one of them is: i = 0 gives i - 1 = -1.
    let k = sign_test("and.b32", false);
    assert!(!holds(&k, 1 << 20, 256, 1000, u64::MAX / 2));
    // An unsigned `max` says nothing about a lower bound.
    let k = sign_test("max.u32", false);
    assert!(!holds(&k, 1 << 20, 256, 1000, u64::MAX / 2));
}

#[test]
fn a_guard_on_the_index_plus_a_constant_bounds_the_index() {
    // if (i - 1 >= 0 && i < n) out[i - 1] = ..., with the address from `i` and a -4 byte
    // displacement (how NVVM shares one address among neighbours).
    let body = format!(
        "{GID}\n\tadd.s32 %r6, %r2, -1;\n\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tsetp.lt.s32 %p1, %r6, 0;\n\tsetp.ge.s32 %p2, %r2, %r1;\n\tor.pred %p3, %p1, %p2;\n\t@%p3 bra $L__END;\n\tst.global.f32 [%rd4+-4], %f1;"
    );
    let k = kernel(&body);
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 1 << 20, 256, 1000, 4 * 999));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4 * 998));
    // Without the `i - 1 >= 0` test, thread 0 writes 4 bytes before the buffer.
    let k = kernel(&body.replace("or.pred %p3, %p1, %p2", "mov.pred %p3, %p2"));
    assert!(!holds(&k, 1 << 20, 256, 1000, u64::MAX / 2));
}

#[test]
fn a_bound_of_a_parameter_minus_one_is_a_parameter_bound() {
    // if (i < n - 1) out[i + 1] = ...
    let k = kernel(&guarded(
        &format!("{GID}\n\tadd.s32 %r9, %r1, -1;"),
        "\tsetp.ge.s32 %p1, %r2, %r9;",
        "\tmul.wide.s32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4+4], %f1;",
    ));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 1 << 20, 256, 1000, 4000));
    assert!(!holds(&k, 1 << 20, 256, 1000, 3996));
    // n = 0: n - 1 is -1 as the signed compare reads it, no thread passes the guard.
    assert!(holds(&k, 1 << 20, 256, 0, 0));
}

/// `for (unsigned d = 0; d < n; d++) x = buf[n - 1 - d]` with a 64-bit `n`, as NVVM
/// rotates it: `n == 0` skips the loop, the body reads `(n + ~d) & mask`, the latch tests
/// `zext(d + 1) < n`. `init` sets `d` before the loop.
fn rotated_loop(init: &str, latch: &str) -> InstrumentedKernel {
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{{\n\
         \t.reg .pred %p<8>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
         \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd5, [k_param_1];\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n\
         \tsetp.eq.s64 %p1, %rd5, 0;\n\t@%p1 bra $L__END;\n\t{init}\n\
         $L__LOOP:\n\tnot.b32 %r2, %r1;\n\tcvt.u64.u32 %rd6, %r2;\n\tadd.s64 %rd7, %rd6, %rd5;\n\
         \tshl.b64 %rd8, %rd7, 3;\n\tand.b64 %rd9, %rd8, 34359738360;\n\
         \tadd.s64 %rd10, %rd2, %rd9;\n\tld.global.u64 %rd11, [%rd10];\n\
         \tadd.s32 %r1, %r1, 1;\n\tcvt.u64.u32 %rd12, %r1;\n{latch}\n\
         $L__END:\n\tret;\n}}\n"
    );
    let opts = InstrumentOptions::new().host_checks(true);
    let out = instrument_ptx_with(&ptx, &opts).unwrap();
    out.kernels.into_iter().next().unwrap()
}

fn loop_holds(k: &InstrumentedKernel, n: u64, len: u64) -> bool {
    !k.host_checks.is_empty()
        && k.host_checks_hold(&LaunchValues {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            scalars: &[None, Some((n, 8))],
            lens: &[len, u64::MAX],
        })
}

/// `for (i = 0; i < n; ++i) if (tid != 0) *p++ = 1; else p++;` as a rotated loop with
/// the store in a conditional block before the pointer's update.
fn conditional_store_loop(store_after_update: bool) -> InstrumentedKernel {
    let store = "\tsetp.eq.s32 %p2, %r5, 0;\n\t@%p2 bra $L__SKIP;\n\tst.global.u64 [%rd6], %rd5;\n$L__SKIP:";
    let update = "\tadd.s64 %rd6, %rd6, 8;";
    let (first, second) = if store_after_update {
        (update, store)
    } else {
        (store, update)
    };
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{{\n\
         \t.reg .pred %p<8>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
         \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd5, [k_param_1];\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r5, %tid.x;\n\
         \tsetp.eq.s64 %p1, %rd5, 0;\n\t@%p1 bra $L__END;\n\
         \tmov.u64 %rd7, 0;\n\tmov.u64 %rd6, %rd2;\n\
         $L__LOOP:\n{first}\n{second}\n\tadd.s64 %rd7, %rd7, 1;\n\
         \tsetp.lt.u64 %p3, %rd7, %rd5;\n\t@%p3 bra $L__LOOP;\n\
         $L__END:\n\tret;\n}}\n"
    );
    let opts = InstrumentOptions::new().host_checks(true);
    let out = instrument_ptx_with(&ptx, &opts).unwrap();
    out.kernels.into_iter().next().unwrap()
}

#[test]
fn a_conditional_access_before_the_update_is_counted_from_the_iteration() {
    // The store runs before the pointer's update in every iteration (its block neither
    // dominates nor is dominated by the update's): iterations 0..n write elements 0..n.
    let k = conditional_store_loop(false);
    assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
    assert!(loop_holds(&k, 1000, 8000));
    assert!(!loop_holds(&k, 1000, 7999));
    // After the update, it writes elements 1..=n.
    let k = conditional_store_loop(true);
    assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
    assert!(loop_holds(&k, 1000, 8008));
    assert!(!loop_holds(&k, 1000, 8000));
}

#[test]
fn a_rotated_loop_from_a_constant_is_bounded_by_its_latch() {
    let latch = "\tsetp.lt.u64 %p2, %rd12, %rd5;\n\t@%p2 bra $L__LOOP;";
    let k = rotated_loop("mov.u32 %r1, 0;", latch);
    assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
    // d in [0, n): reads elements n - 1 down to 0.
    assert!(loop_holds(&k, 2, 16));
    assert!(loop_holds(&k, 1000, 8000));
    assert!(!loop_holds(&k, 2, 8));
    // A bound past 32 bits is not read as its low 32 bits (that would claim d < 1 and
    // offset 0): nothing is claimed, while the loop does read far past 16 bytes.
    assert!(!loop_holds(&k, (1 << 32) + 1, 16));
    // Starting anywhere but a constant, the first iteration is not bounded by the latch.
    let k = rotated_loop("mov.u32 %r1, %tid.x;", latch);
    assert!(!loop_holds(&k, 2, 16));
    // A latch that does not test the counter bounds nothing.
    let k = rotated_loop(
        "mov.u32 %r1, 0;",
        "\tsetp.lt.u64 %p2, %rd11, %rd5;\n\t@%p2 bra $L__LOOP;",
    );
    assert!(!loop_holds(&k, 2, 16));
}

#[test]
fn a_bound_computed_from_parameters_is_a_launch_value() {
    // if (i < 2 * n + 1) out[i] = ...
    let k = kernel(&guarded(
        &format!("{GID}\n\tshl.b32 %r9, %r1, 1;\n\tadd.s32 %r10, %r9, 1;"),
        "\tsetp.ge.s32 %p1, %r2, %r10;",
        STORE,
    ));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 1 << 20, 256, 1000, 4 * 2001));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4 * 2000));
    // n = 2^31: 2n + 1 wraps to 1 in 32 bits, as on the device: only thread 0 writes.
    assert!(holds(&k, 1 << 20, 256, 1 << 31, 4));
    assert!(!holds(&k, 1 << 20, 256, 1 << 31, 0));
}

#[test]
fn quotients_and_remainders_bound_decomposed_indices() {
    // i < n: (i / 16) and (i % 16) as NVVM writes them (`rem` from the quotient),
    // out[(i / 16) * 16 + i % 16]
    let body = format!(
        "{GID}\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\tdiv.s32 %r6, %r2, 16;\n\tmul.lo.s32 %r7, %r6, 16;\n\tsub.s32 %r8, %r2, %r7;\n\tshl.b32 %r9, %r6, 4;\n\tadd.s32 %r10, %r9, %r8;\n\tmul.wide.s32 %rd3, %r10, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
    );
    let k = kernel(&body);
    assert_eq!(k.coverage.host_checked, 1);
    // Intervals: quotient [0, 62], remainder [0, 15]: up to element 1007 for n = 1000.
    assert!(holds(&k, 1 << 20, 256, 1000, 4 * 1008));
    assert!(!holds(&k, 1 << 20, 256, 1000, 4 * 1007));
}

/// `out[idx]` with `idx` from `i = gid` (64 bits) and `c = n` through NVVM's 64-bit
/// division with a 32-bit fast path; `div`/`rem` name the operation, `test` the branch
/// into the fast path and `index` how the offset is made of the quotient `%rd9` and the
/// remainder `%rd10`.
fn fast_path_division(test: &str, index: &str) -> String {
    format!(
        "{GID}\n\tcvt.u64.u32 %rd5, %r2;\n\tcvt.u64.u32 %rd6, %r1;\n\
         \tor.b64 %rd7, %rd5, %rd6;\n\tand.b64 %rd8, %rd7, -4294967296;\n\
         \tsetp.eq.s64 %p2, %rd8, 0;\n\t{test}\n\
         \tdiv.s64 %rd9, %rd5, %rd6;\n\tmul.lo.s64 %rd11, %rd9, %rd6;\n\
         \tsub.s64 %rd10, %rd5, %rd11;\n\tbra.uni $L__J;\n\
         $L__N:\n\tcvt.u32.u64 %r6, %rd6;\n\tcvt.u32.u64 %r7, %rd5;\n\
         \tdiv.u32 %r8, %r7, %r6;\n\tmul.lo.s32 %r9, %r8, %r6;\n\tsub.s32 %r10, %r7, %r9;\n\
         \tcvt.u64.u32 %rd9, %r8;\n\tcvt.u64.u32 %rd10, %r10;\n\
         $L__J:\n{index}\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
    )
}

#[test]
fn a_64_bit_division_with_a_32_bit_fast_path_is_one_value() {
    let ptx = |body: String| {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1, .param .u64 k_param_2)\n{{\n\
             \t.reg .pred %p<8>;\n\t.reg .f32 %f<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
             \tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_1];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.f32 %f1, 0f3F800000;\n{body}\n$L__END:\n\tret;\n}}\n"
        )
    };
    let rem = "\tshl.b64 %rd3, %rd10, 2;";
    let value = |body: String, reg: &str| {
        let m = crate::ir::read::parse(&ptx(body)).unwrap();
        let f = &m.functions[0];
        let facts = crate::ir::Facts::new(f);
        let g = Guards::new(&facts).unwrap();
        g.budget.set(2000);
        g.wide_division(reg, 0)
    };
    let good = fast_path_division("@%p2 bra $L__N;", rem);
    assert!(matches!(
        value(good.clone(), "%rd10"),
        Some(HostExpr::Rem(..))
    ));
    assert!(matches!(value(good, "%rd9"), Some(HostExpr::Div(..))));
    // The fast path entered when the high halves are not zero, or on a test of something
    // else, or with an operand changed after the test: not one value.
    let flipped = fast_path_division("@!%p2 bra $L__N;", rem);
    assert!(value(flipped, "%rd10").is_none());
    let other = fast_path_division("@%p2 bra $L__N;", rem)
        .replace("or.b64 %rd7, %rd5, %rd6;", "or.b64 %rd7, %rd5, %rd5;");
    assert!(value(other, "%rd10").is_none());
    let changed = fast_path_division("@%p2 bra $L__N;", rem).replace(
        "cvt.u32.u64 %r6, %rd6;",
        "add.s64 %rd6, %rd6, 1;\n\tcvt.u32.u64 %r6, %rd6;",
    );
    assert!(value(changed, "%rd10").is_none());

    // As an access sees it: out[i % n] holds with n elements, not with n - 1.
    let k = kernel(&fast_path_division("@%p2 bra $L__N;", rem));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 64, 256, 1000, 4 * 1000));
    assert!(!holds(&k, 64, 256, 1000, 4 * 999));
    // out[i / n]: the quotient is below 16384 / 1000 + 1 for 64 x 256 threads.
    let k = kernel(&fast_path_division(
        "@%p2 bra $L__N;",
        "\tshl.b64 %rd3, %rd9, 2;",
    ));
    assert!(holds(&k, 64, 256, 1000, 4 * 17));
    assert!(!holds(&k, 64, 256, 1000, 4 * 16));
}

#[test]
fn an_inequality_to_an_end_of_the_range_narrows_it() {
    // if (tid != 0) out[tid - 1]: tid in [1, block - 1], so elements 0..block - 2.
    let body = |cmp: &str| {
        format!(
            "{GID}\n\tsetp.{cmp}.s32 %p2, %r5, 0;\n\t@%p2 bra $L__END;\n\tadd.s32 %r6, %r5, -1;\n\
             \tmul.wide.s32 %rd3, %r6, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
        )
    };
    let k = kernel(&body("eq"));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 4, 256, 1, 4 * 255));
    assert!(!holds(&k, 4, 256, 1, 4 * 254));
    // `tid != 5` takes nothing off [0, 255]: element -1 stays possible.
    let k = kernel(&body("eq").replace("%r5, 0;", "%r5, 5;"));
    assert!(!holds(&k, 4, 256, 1, 4 * 255));
    // The branch on the equality itself: only tid == 0 reaches the store, at element -1.
    let k = kernel(&body("ne"));
    assert!(!holds(&k, 4, 256, 1, 1 << 20));
}

#[test]
fn a_signed_remainder_by_a_power_of_two_is_a_remainder() {
    // if (i < n) out[i % 16], `i` an int: NVVM's `i - ((i + bias) & -16)`.
    let rem = |sign_shift: u32| {
        format!(
            "{GID}\n\tsetp.ge.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\
             \tshr.s32 %r6, %r2, 31;\n\tshr.u32 %r7, %r6, {sign_shift};\n\tadd.s32 %r8, %r2, %r7;\n\
             \tand.b32 %r9, %r8, -16;\n\tsub.s32 %r10, %r2, %r9;\n\
             \tmul.wide.s32 %rd3, %r10, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
        )
    };
    let k = kernel(&rem(28));
    assert_eq!(k.coverage.host_checked, 1);
    assert!(holds(&k, 64, 256, 1000, 4 * 16));
    assert!(!holds(&k, 64, 256, 1000, 4 * 15));
    // Fewer than 16 elements guarded: the remainder is the index itself.
    assert!(holds(&k, 64, 256, 10, 4 * 10));
    assert!(!holds(&k, 64, 256, 10, 4 * 9));
    // A bias that is not `2^k - 1` for a negative `i` is not this idiom: not a remainder.
    let k = kernel(&rem(27));
    assert!(!holds(&k, 64, 256, 1000, 4 * 16));
}

#[test]
fn a_value_merged_after_a_branch_is_bounded_by_both_definitions() {
    // r6 = (tid < n) ? tid : 7 (set on two paths), out[r6]: the hull of both, not
    // everything from the smaller start up.
    let body = format!(
        "{GID}\n\tsetp.ge.u32 %p1, %r5, %r1;\n\t@%p1 bra $L__A;\n\tmov.u32 %r6, %r5;\n\
         \tbra.uni $L__B;\n$L__A:\n\tmov.u32 %r6, 7;\n$L__B:\n\
         \tmul.wide.u32 %rd3, %r6, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.f32 [%rd4], %f1;"
    );
    let k = kernel(&body);
    assert_eq!(k.coverage.host_checked, 1);
    // Block of 256, n = 1000: tid in [0, 255], or 7.
    assert!(holds(&k, 4, 256, 1000, 4 * 256));
    assert!(!holds(&k, 4, 256, 1000, 4 * 255));
    // n = 4: tid in [0, 3] or 7: up to element 7.
    assert!(holds(&k, 4, 256, 4, 4 * 8));
    assert!(!holds(&k, 4, 256, 4, 4 * 7));
}

#[test]
fn a_guarded_shared_array_access_is_checked_against_the_array() {
    // __shared__ float tile[16]; if (tid.x < n) tile[tid.x] = 1  (n a parameter)
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .shared .align 4 .b8 tile[64];\n\
        .visible .entry k(.param .u32 k_param_0)\n{\n\
        \t.reg .pred %p<4>;\n\t.reg .f32 %f<2>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<8>;\n\
        \tld.param.u32 %r1, [k_param_0];\n\tmov.u32 %r2, %tid.x;\n\
        \tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n\
        \tmov.u64 %rd1, tile;\n\tmul.wide.u32 %rd2, %r2, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\
        \tmov.f32 %f1, 0f3F800000;\n\tst.shared.f32 [%rd3], %f1;\n\
        $L__END:\n\tret;\n}\n";
    let opts = InstrumentOptions::new().host_checks(true);
    let out = instrument_ptx_with(ptx, &opts).unwrap();
    let k = &out.kernels[0];
    assert_eq!(k.coverage.host_checked, 1, "{:?}", k.coverage);
    assert_eq!(k.host_checks[0].array_bytes, Some(64));
    let holds = |block: u32, n: u32| {
        k.host_checks_hold(&LaunchValues {
            grid: [1, 1, 1],
            block: [block, 1, 1],
            scalars: &[Some((u64::from(n), 4))],
            lens: &[u64::MAX],
        })
    };
    // The guard or the block keeps tid.x below 16: in bounds whatever the lengths say.
    assert!(holds(16, 1000));
    assert!(holds(256, 16));
    assert!(!holds(256, 17));
    assert!(!holds(32, 1000));
}

#[test]
fn a_reused_register_has_the_value_of_the_definition_that_reaches() {
    // r2 = tid; if (r2 < n) out[r2] = ...; then r2 counts a loop of its own.
    let body = format!(
        "\tmov.u32 %r2, %tid.x;\n\tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__END;\n{STORE}\n\
         $L__LOOP:\n\tadd.s32 %r2, %r2, 7;\n\tsetp.lt.u32 %p2, %r2, 1000;\n\t@%p2 bra $L__LOOP;"
    );
    let k = kernel(&body);
    assert_eq!(k.coverage.host_checked, 1);
    // The store sees tid, below n: as if the loop were not there.
    assert!(holds(&k, 1, 256, 100, 400));
    assert!(!holds(&k, 1, 256, 101, 400));
    assert!(holds(&k, 1, 64, 1000, 256));
}

#[test]
fn expressions_round_trip_through_json() {
    let k = kernel(&guarded(GID, "\tsetp.ge.u32 %p1, %r2, %r1;", STORE));
    let j = serde_json::to_string(&k).unwrap();
    let back: InstrumentedKernel = serde_json::from_str(&j).unwrap();
    assert_eq!(back, k);
}

/// The rewrite builds each kernel's facts once: one definitions map per kernel, however many
/// analyses (provenance, loops, the guards, loop versioning) read it.
#[test]
fn each_kernel_builds_its_definitions_map_once() {
    let kernel = |name: &str| {
        format!(
            ".visible .entry {name}(.param .u64 {name}_param_0, .param .u32 {name}_param_1)\n{{\n\
             \t.reg .pred %p<8>;\n\t.reg .f32 %f<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\
             \tld.param.u64 %rd1, [{name}_param_0];\n\tld.param.u32 %r1, [{name}_param_1];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.f32 %f1, 0f3F800000;\n{COLUMN}\n\
             $L__END:\n\tret;\n}}\n"
        )
    };
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n{}{}",
        kernel("a"),
        kernel("b")
    );
    let built = || crate::ir::loops::DEFINITIONS_BUILT.with(std::cell::Cell::get);
    for opts in [
        InstrumentOptions::new(),
        InstrumentOptions::new().host_checks(true),
    ] {
        let before = built();
        let out = instrument_ptx_with(&ptx, &opts).unwrap();
        assert_eq!(out.kernels.len(), 2);
        // The loop's accesses reach the guards (host checks) or loop versioning (device).
        assert!(out.kernels.iter().all(|k| k.coverage.is_complete()));
        assert_eq!(built() - before, 2, "one definitions map per kernel");
    }
}
