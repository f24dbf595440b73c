//! Static proofs from the launch shape: which accesses the interval analysis proves in bounds
//! (and so emits no check for), and which it must refuse. Hand-written PTX in NVVM's forms.

mod common;
use common::well_formed;
use cudacheck_core::instrument::{
    instrument_ptx, instrument_ptx_with, InstrumentOptions, InstrumentedPtx,
};

/// A 16 x 16 float tile (1024 bytes) and dynamic shared memory.
fn module(body: &str) -> String {
    format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n.shared .align 4 .b8 tile[1024];\n.extern .shared .align 16 .b8 smem[];\n.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<40>;\n\t.reg .f32 %f<40>;\n\t.reg .b64 %rd<40>;\n\t.loc\t1 7 3\n{body}\n\tret;\n}}\n\t.file\t1 \"k.cu\"\n"
    )
}

fn with(body: &str, opts: InstrumentOptions) -> InstrumentedPtx {
    let out = instrument_ptx_with(&module(body), &opts).unwrap_or_else(|e| panic!("{e}"));
    well_formed(&out.ptx);
    out
}

fn block(x: u32, y: u32) -> InstrumentOptions {
    InstrumentOptions::new().block([x, y, 1])
}

/// `tile[threadIdx.y][threadIdx.x]` as NVVM writes it: 32-bit shared addresses.
const TILE_YX: &str = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %tid.y;\n\tmov.u32 %r3, tile;\n\tshl.b32 %r4, %r2, 6;\n\tadd.s32 %r5, %r3, %r4;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r5, %r6;\n\tld.shared.f32 %f1, [%r7];\n\tst.shared.f32 [%r7], %f1;";

#[test]
fn a_tile_indexed_by_thread_ids_is_proven_for_a_block_that_fits() {
    let k = &with(TILE_YX, block(16, 16)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (2, 0));
    assert!(k.coverage.is_complete());
}

#[test]
fn the_same_tile_is_checked_for_a_block_that_does_not_fit() {
    let k = &with(TILE_YX, block(32, 16)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 2));
}

#[test]
fn the_same_tile_is_checked_without_a_known_block() {
    let out = instrument_ptx(&module(TILE_YX)).unwrap();
    well_formed(&out.ptx);
    assert_eq!(
        (
            out.kernels[0].coverage.proven,
            out.kernels[0].coverage.checked
        ),
        (0, 2)
    );
}

#[test]
fn the_last_element_is_proven_and_one_past_it_is_not() {
    // tid.x * 4 + 1020 for block 1: offset 1020 (the last float), then 1024 (past the end).
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, tile;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7+1020];\n\tld.shared.f32 %f2, [%r7+1024];";
    let k = &with(body, block(1, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (1, 1));
}

#[test]
fn a_wide_access_must_fit_whole() {
    // A float4 at byte 1008 ends at 1024 (in bounds); at 1012 it does not.
    let body = "\tmov.u32 %r3, tile;\n\tld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r3+1008];\n\tld.shared.v4.f32 {%f5, %f6, %f7, %f8}, [%r3+1012];";
    let k = &with(body, block(1, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (1, 1));
}

#[test]
fn an_index_that_may_wrap_is_not_proven() {
    // (tid.x * 2^30) mod 2^32 is small for some threads, but the product wraps: unknown.
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, tile;\n\tmul.lo.s32 %r6, %r1, 1073741824;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7];";
    let k = &with(body, block(8, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_negative_index_is_not_proven() {
    // tid.x - 1 is -1 for thread 0.
    let body = "\tmov.u32 %r1, %tid.x;\n\tadd.s32 %r2, %r1, -1;\n\tmov.u32 %r3, tile;\n\tshl.b32 %r6, %r2, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7];";
    let k = &with(body, block(8, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_loop_carried_index_is_not_proven() {
    // for (i = 0; ; ++i) tile[i]: grows around the loop without a bound the analysis sees.
    let body = "\tmov.u32 %r1, 0;\n\tmov.u32 %r3, tile;\n$L1:\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7];\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 256;\n\t@%p1 bra $L1;";
    let k = &with(body, block(1, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_loop_carried_pointer_is_not_proven() {
    let body = "\tmov.u32 %r3, tile;\n$L1:\n\tld.shared.f32 %f1, [%r3];\n\tadd.s32 %r3, %r3, 4;\n\t@%p1 bra $L1;";
    let k = &with(body, block(1, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_halving_loop_keeps_its_upper_bound() {
    // for (s = blockDim.x / 2; s > 0; s >>= 1) tile[tid + s]: below 2 * blockDim.x.
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ntid.x;\n\tshr.u32 %r4, %r2, 1;\n\tmov.u32 %r3, tile;\n$L1:\n\tadd.s32 %r5, %r1, %r4;\n\tshl.b32 %r6, %r5, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7];\n\tshr.u32 %r4, %r4, 1;\n\tsetp.ne.s32 %p1, %r4, 0;\n\t@%p1 bra $L1;";
    // tid + s < 128 + 64 floats = 768 bytes: in bounds for block 128; not for block 256.
    assert_eq!(with(body, block(128, 1)).kernels[0].coverage.proven, 1);
    assert_eq!(with(body, block(256, 1)).kernels[0].coverage.checked, 1);
}

#[test]
fn a_register_with_an_unmodelled_definition_is_unknown() {
    // %r6 is also written by a shuffle (a compound destination): its value is anyone's.
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, tile;\n\tshl.b32 %r6, %r1, 2;\n\tshfl.sync.down.b32 %r6|%p2, %r6, 1, 31, -1;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7];";
    let k = &with(body, block(8, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_loaded_index_is_unknown() {
    let body = "\tld.param.u32 %r1, [k_param_1];\n\tmov.u32 %r3, tile;\n\tand.b32 %r2, %r1, 255;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tld.shared.f32 %f1, [%r7];\n\tshl.b32 %r8, %r2, 2;\n\tadd.s32 %r9, %r3, %r8;\n\tld.shared.f32 %f2, [%r9];";
    // The masked one (below 256 floats) is proven, the raw one is not.
    let k = &with(body, block(1, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (1, 1));
}

#[test]
fn a_remainder_by_a_constant_bounds_an_unknown_index() {
    let body = "\tld.param.u32 %r1, [k_param_1];\n\tmov.u32 %r3, tile;\n\trem.u32 %r2, %r1, 256;\n\tmul.wide.u32 %rd1, %r2, 4;\n\tmov.u64 %rd2, tile;\n\tadd.s64 %rd3, %rd2, %rd1;\n\tld.shared.f32 %f2, [%rd3];";
    let k = &with(body, InstrumentOptions::new()).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (1, 0));
}

#[test]
fn dynamic_shared_memory_is_proven_only_with_its_size() {
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, smem;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tst.shared.f32 [%r7], %f1;";
    let known = block(256, 1).dynamic_shared_bytes(1024);
    assert_eq!(with(body, known).kernels[0].coverage.proven, 1);
    let small = block(256, 1).dynamic_shared_bytes(1020);
    assert_eq!(with(body, small).kernels[0].coverage.checked, 1);
    assert_eq!(with(body, block(256, 1)).kernels[0].coverage.checked, 1);
}

#[test]
fn parameter_buffers_are_never_proven() {
    // Their length is only known at run time, whatever the block.
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.f32 %f1, [%rd2];";
    let k = &with(body, block(1, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_generic_view_of_the_tile_is_proven_too() {
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u64 %rd1, tile;\n\tcvta.shared.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.f32 %f1, [%rd4];";
    let k = &with(body, block(256, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (1, 0));
}

#[test]
fn a_value_read_before_the_loop_that_reuses_its_register_is_proven() {
    // NVVM reuses %r1 (tid.x) as the loop's `t * 16 + tid.x`; the tile address is computed
    // from it before the loop, where it is still tid.x.
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, tile;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n$L1:\n\tst.shared.f32 [%r7], %f1;\n\tadd.s32 %r1, %r1, 16;\n\tsetp.lt.u32 %p1, %r1, 4096;\n\t@%p1 bra $L1;";
    let k = &with(body, block(256, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (1, 0));
}

#[test]
fn a_value_read_after_a_label_sees_every_definition() {
    // The same address computed after the loop head: %r1 may be any later value there.
    let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, tile;\n$L1:\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tst.shared.f32 [%r7], %f1;\n\tadd.s32 %r1, %r1, 16;\n\tsetp.lt.u32 %p1, %r1, 4096;\n\t@%p1 bra $L1;";
    let k = &with(body, block(256, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

#[test]
fn a_guarded_redefinition_is_not_certain() {
    // @p mov %r1, 1000: after it %r1 is tid.x or 1000.
    let body = "\tmov.u32 %r1, %tid.x;\n\t@%p1 mov.u32 %r1, 1000;\n\tmov.u32 %r3, tile;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r3, %r6;\n\tst.shared.f32 [%r7], %f1;";
    let k = &with(body, block(16, 1)).kernels[0];
    assert_eq!((k.coverage.proven, k.coverage.checked), (0, 1));
}

// ---- one check per group ----

/// Four float4 loads through one global pointer, as an unrolled loop reads them.
const UNROLLED: &str = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r1, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];\n\tadd.f32 %f20, %f1, %f2;\n\tld.global.v4.f32 {%f5, %f6, %f7, %f8}, [%rd4+16];\n\tld.global.v4.f32 {%f9, %f10, %f11, %f12}, [%rd4+32];\n\tld.global.v4.f32 {%f13, %f14, %f15, %f16}, [%rd4+48];";

fn plain(body: &str) -> InstrumentedPtx {
    with(body, InstrumentOptions::new())
}

/// The instrumented text between the function's `$__cc_slowN:` label and its `bra $__cc_joinN`.
fn slow_copies(ptx: &str) -> Vec<&str> {
    ptx.match_indices("$__cc_slow")
        .filter(|(at, _)| {
            ptx[*at..]
                .split_once(':')
                .is_some_and(|(l, _)| !l.contains(';'))
        })
        .filter_map(|(at, _)| {
            let rest = &ptx[at..];
            rest.find("bra $__cc_join").map(|end| &rest[..end])
        })
        .filter(|s| s.lines().next().is_some_and(|l| l.ends_with(':')))
        .collect()
}

#[test]
fn unrolled_loads_through_one_register_form_one_group() {
    let out = plain(UNROLLED);
    let k = &out.kernels[0];
    assert_eq!((k.coverage.checked, k.coverage.grouped), (4, 4));
    assert_eq!(k.sites.len(), 4, "each access keeps its site");
    let copies = slow_copies(&out.ptx);
    assert_eq!(copies.len(), 1, "{}", out.ptx);
    // The slow copy holds the four accesses, each behind its own check.
    let copy = copies[0];
    assert_eq!(copy.matches("ld.global.v4.f32").count(), 4, "{copy}");
    for s in &k.sites {
        assert!(
            copy.contains(&format!("bra $__cc_cold{};", s.id)),
            "site {}: {copy}",
            s.id
        );
    }
    // The fast copy runs without them: one guarded branch for the group before the first load.
    let fast = &out.ptx[..out.ptx.find("$__cc_slow").unwrap()];
    assert_eq!(fast.matches("bra $__cc_cold").count(), 0, "{fast}");
}

#[test]
fn a_redefinition_in_between_splits_the_group() {
    let body = UNROLLED.replace(
        "\tld.global.v4.f32 {%f9",
        "\tadd.s64 %rd4, %rd4, 64;\n\tld.global.v4.f32 {%f9",
    );
    let out = plain(&body);
    let k = &out.kernels[0];
    // [%rd4], [%rd4+16] | [%rd4+32], [%rd4+48] after the redefinition: two groups.
    assert_eq!(k.coverage.grouped, 4);
    assert_eq!(slow_copies(&out.ptx).len(), 2);
}

#[test]
fn a_label_in_between_splits_the_group() {
    let body = UNROLLED.replace("\tld.global.v4.f32 {%f9", "$L7:\n\tld.global.v4.f32 {%f9");
    let out = plain(&body);
    assert_eq!(slow_copies(&out.ptx).len(), 2);
}

#[test]
fn a_barrier_in_between_splits_the_group() {
    // Threads of one warp may take different copies; `bar.sync` must be one instruction for all.
    let body = UNROLLED.replace(
        "\tld.global.v4.f32 {%f9",
        "\tbar.sync 0;\n\tld.global.v4.f32 {%f9",
    );
    let out = plain(&body);
    let copies = slow_copies(&out.ptx);
    assert_eq!(copies.len(), 2);
    assert!(copies.iter().all(|c| !c.contains("bar.sync")));
}

#[test]
fn a_lone_access_is_not_a_group() {
    let body = UNROLLED.replace("\tadd.f32 %f20, %f1, %f2;\n", "\tbra $L9;\n$L9:\n");
    let out = plain(&body);
    let k = &out.kernels[0];
    // [%rd4] alone before the branch; the three after it form one group.
    assert_eq!(k.coverage.grouped, 3);
}

#[test]
fn accesses_of_another_buffer_in_between_end_the_group() {
    let body = UNROLLED.replace(
        "\tld.global.v4.f32 {%f9",
        "\tld.param.u64 %rd5, [k_param_1];\n\tcvta.to.global.u64 %rd6, %rd5;\n\tst.global.f32 [%rd6], %f1;\n\tld.global.v4.f32 {%f9",
    );
    let out = plain(&body);
    assert_eq!(out.kernels[0].coverage.grouped, 4);
    assert_eq!(slow_copies(&out.ptx).len(), 2);
}
