use super::*;
use crate::instrument::instrument_ptx;

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// `out[i] = in[i] + 1` over `n`, then an `atomicAdd` into `bins[in[i]]`.
fn kernel(body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)\n{{\n\
         .reg .pred %p<3>;\n.reg .b32 %r<9>;\n.reg .f32 %f<4>;\n.reg .b64 %rd<12>;\n\
         ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\nld.param.u64 %rd3, [k_param_2];\n\
         cvta.to.global.u64 %rd4, %rd1;\ncvta.to.global.u64 %rd5, %rd2;\ncvta.to.global.u64 %rd6, %rd3;\n\
         mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd7, %r1, 4;\nadd.s64 %rd8, %rd4, %rd7;\nadd.s64 %rd9, %rd5, %rd7;\n\
         {body}\nret;\n}}\n"
    )
}

fn checked(body: &str) -> InitPtx {
    let bounds = instrument_ptx(&kernel(body)).unwrap();
    init_ptx(&bounds.ptx).unwrap()
}

#[test]
fn reads_are_checked_and_writes_marked() {
    let out = checked(
        "ld.global.f32 %f1, [%rd8];\nadd.f32 %f2, %f1, 0f3F800000;\nst.global.f32 [%rd9+4], %f2;",
    );
    let k = &out.kernels[0];
    assert_eq!((k.coverage.checked, k.coverage.marked), (1, 1));
    assert!(k.coverage.unchecked.is_empty() && k.coverage.not_checked.is_none());
    assert_eq!(k.sites.len(), 1);
    assert_eq!((k.sites[0].kind, k.sites[0].bytes), (InitSiteKind::Read, 4));
    assert!(out
        .ptx
        .contains(".visible .global .align 8 .u64 __cc_init_dir;"));
    // The store's bits are or-ed in only when some are missing; the read's cold block records.
    assert_eq!(out.ptx.matches("red.global.or.b32").count(), 1);
    assert_eq!(out.ptx.matches("$__cci_c1:").count(), 1);
    assert!(out.ptx.contains(&format!(
        "add.s64 %__cci_rec, %__cci_rec, {INIT_RECORD_OFFSET};"
    )));
    // The store's address keeps its constant offset.
    assert!(out.ptx.contains("add.s64 %__cci_a, %rd9, 4;"));
    // The shadow word is read through L1; the read's cold block reads it again past L1 and
    // goes back without recording when its bits are set by now.
    assert_eq!(
        out.ptx
            .matches("ld.global.u32 %__cci_w, [%__cci_t];")
            .count(),
        2
    );
    let cold = out.ptx.find("$__cci_c1:").unwrap();
    let again = out.ptx[cold..]
        .find("ld.volatile.global.u32 %__cci_w, [%__cci_t];")
        .unwrap();
    let record = out.ptx[cold..]
        .find("atom.global.add.u32 %__cci_x, [%__cci_rec+4]")
        .unwrap();
    assert!(again < record);
    assert!(out.ptx[cold + again..cold + record].contains("@%__cci_p bra $__cci_b1;"));
}

#[test]
fn atomics_read_then_mark_and_exchanges_only_mark() {
    let out = checked("atom.global.add.u32 %r2, [%rd8], 1;\natom.global.exch.b32 %r3, [%rd9], 5;\nred.global.add.u32 [%rd9], 1;");
    let k = &out.kernels[0];
    // The bounds rewrite may copy the code (a slow copy): every copy is checked.
    let exchanges = out.ptx.matches("atom.global.exch.b32 %r3").count() as u32;
    let atomics = out.ptx.matches("red.global.add.u32 [").count() as u32;
    assert!(exchanges >= 1 && atomics >= 2);
    assert_eq!(
        (k.coverage.checked, k.coverage.marked),
        (atomics, atomics + exchanges)
    );
    assert_eq!(k.sites.len() as u32, k.coverage.checked);
    assert!(k.sites.iter().all(|s| s.kind == InitSiteKind::Atomic));
    assert_eq!(
        out.ptx.matches("red.global.or.b32").count() as u32,
        k.coverage.marked
    );
}

#[test]
fn guarded_accesses_are_checked_under_their_guard() {
    let out =
        checked("setp.lt.u32 %p1, %r1, 7;\n@%p1 ld.global.nc.v4.f32 {%f1, %f2, %f3, %f1}, [%rd8];");
    assert!(out.ptx.contains("@!%p1 bra $__cci_s1;"));
    let k = &out.kernels[0];
    assert_eq!(k.sites[0].bytes, 16);
    assert!(out.ptx.contains("shl.b32 %__cci_m, 65535, %__cci_b;"));
}

/// A kernel with a shared tile: `tile[t + 1] = x; y = tile[t]`, and a local array.
fn shared_kernel(extra: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 k_param_0)\n{{\n.reg .b32 %r<6>;\n.reg .b64 %rd<4>;\n\
         .local .align 4 .b8 frame[16];\n\
         .shared .align 4 .b8 tile[128];\nmov.u32 %r1, tile;\nmov.u32 %r3, %tid.x;\nshl.b32 %r4, %r3, 2;\n\
         add.s32 %r5, %r1, %r4;\nst.shared.u32 [%r5+4], %r3;\nbar.sync 0;\nld.shared.u32 %r2, [%r5];\n\
         st.local.u32 [frame], %r2;\nld.shared.u32 %r2, [tile+8];\n{extra}\nret;\n}}\n"
    )
}

#[test]
fn shared_reads_are_checked_against_the_blocks_own_writes() {
    let inst = instrument_ptx(&shared_kernel("")).unwrap();
    let out = init_ptx_with(&inst.ptx, &InitOptions::new(64)).unwrap();
    let k = &out.kernels[0];
    assert!(k.shared_shadow, "{:?}", k.coverage);
    // Two shared reads (one through the array's name), one shared store; the local store is
    // not looked at.
    assert_eq!((k.coverage.checked, k.coverage.marked), (2, 1));
    assert!(k.coverage.shared_not_checked.is_none());
    assert!(out
        .ptx
        .contains(".extern .shared .align 16 .b8 __cci_dyn[];"));
    // The shadow goes after the launch's 64 bytes, rounded to 16: 64 + 15.
    assert!(out.ptx.contains("add.u32 %__cci_sb, %__cci_sb, 79;"));
    assert!(out.ptx.contains("mov.u32 %__cci_sa, tile;"));
    assert!(out.ptx.contains("red.shared.or.b32 [%__cci_sw], %__cci_m;"));
    // Cleared before the program's code, behind one barrier.
    let clear = out.ptx.find("$__cci_cleared:").unwrap();
    assert!(out.ptx[clear..]
        .trim_start_matches("$__cci_cleared:")
        .trim_start()
        .starts_with("bar.sync 0;"));
    assert!(clear < out.ptx.find("st.shared.u32 [%r5+4]").unwrap());
    assert!(shared_shadow_bytes(128, 64) >= 4 * (128 + 64) / 32 + 16);
}

#[test]
fn shared_memory_is_left_to_the_race_checker_and_to_kernels_that_write_it_unseen() {
    let inst = instrument_ptx(&shared_kernel("")).unwrap();
    let raced = crate::race::race_ptx(&inst.ptx, &crate::race::RaceOptions::new(0)).unwrap();
    let out = init_ptx(&raced.ptx).unwrap();
    let k = &out.kernels[0];
    assert!(!k.shared_shadow);
    assert_eq!((k.coverage.checked, k.coverage.marked), (0, 0));
    assert!(k
        .coverage
        .shared_not_checked
        .as_deref()
        .is_some_and(|w| w.contains("race")));

    let inst = instrument_ptx(&shared_kernel(
        "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r5], {%r2};",
    ))
    .unwrap();
    let out = init_ptx(&inst.ptx).unwrap();
    let k = &out.kernels[0];
    assert!(!k.shared_shadow && k.coverage.not_checked.is_none());
    assert!(
        k.coverage
            .shared_not_checked
            .as_deref()
            .is_some_and(|w| w.contains("stmatrix")),
        "{:?}",
        k.coverage
    );
    assert!(!out.ptx.contains("__cci_dyn"));
}

#[test]
fn a_write_the_shadow_cannot_follow_leaves_the_kernel_unchanged() {
    let out = checked(
        "ld.global.f32 %f1, [%rd8];\ncp.async.bulk.global.shared::cta.bulk_group [%rd9], [%r1], 16;",
    );
    let k = &out.kernels[0];
    assert!(
        k.coverage
            .not_checked
            .as_deref()
            .is_some_and(|w| w.contains("bulk copy")),
        "{:?}",
        k.coverage
    );
    assert!(k.sites.is_empty());
    assert!(!out.ptx.contains("%__cci_"));
    let report = render_init_report("k.cu", &out.kernels);
    assert!(
        report.contains("not init-checked: writes global memory with a bulk copy"),
        "{report}"
    );
}

#[test]
fn a_function_it_calls_counts() {
    let ptx = format!(
        "{HEAD}.func f(.param .b64 f_param_0)\n{{\n.reg .b64 %rd<3>;\n.reg .b32 %r<3>;\nld.param.u64 %rd1, [f_param_0];\n\
         ld.global.u32 %r1, [%rd1];\nst.global.u32 [%rd1+4], %r1;\nret;\n}}\n\
         .visible .entry k(.param .u64 k_param_0)\n{{\n.reg .b64 %rd<3>;\nld.param.u64 %rd1, [k_param_0];\n\
         {{\n.param .b64 param0;\nst.param.b64 [param0], %rd1;\ncall.uni f, (param0);\n}}\nret;\n}}\n"
    );
    let out = init_ptx(&ptx).unwrap();
    assert_eq!(out.kernels.len(), 1);
    // The function's write is marked, its read listed unchecked (no record there).
    assert!(out.ptx.contains("red.global.or.b32"));
    let report = render_init_report("k.cu", &out.kernels);
    assert!(report.contains("0 reads checked"), "{report}");
}

#[test]
fn reports_name_what_is_checked() {
    let out = checked("ld.global.f32 %f1, [%rd8];\nst.global.f32 [%rd9], %f1;");
    let r = render_init_report("k.cu", &out.kernels);
    assert!(
        r.contains("kernel `k`: 1 read checked, 1 write marked, none left unchecked"),
        "{r}"
    );
}

#[test]
fn a_shared_only_build_leaves_global_memory_alone() {
    // Global reads and writes: nothing left to check, the build is the bounds-checked one.
    let body =
        "ld.global.f32 %f1, [%rd8];\nadd.f32 %f2, %f1, 0f3F800000;\nst.global.f32 [%rd9+4], %f2;";
    let bounds = instrument_ptx(&kernel(body)).unwrap();
    let out = init_ptx_with(&bounds.ptx, &InitOptions::default().shared_only()).unwrap();
    assert_eq!(out.ptx, bounds.ptx);
    assert!(!out.kernels[0].shared_shadow);
    // A shared tile keeps its checks; the global store beside it gets none.
    let inst = instrument_ptx(&shared_kernel("ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd2, %rd1;\nst.global.u32 [%rd2], %r2;")).unwrap();
    let full = init_ptx_with(&inst.ptx, &InitOptions::new(64)).unwrap();
    let shared = init_ptx_with(&inst.ptx, &InitOptions::new(64).shared_only()).unwrap();
    assert!(shared.kernels[0].shared_shadow);
    assert!(shared.ptx.contains("red.shared.or.b32"));
    assert!(!shared.ptx.contains("red.global.or.b32"));
    assert!(full.ptx.contains("red.global.or.b32"));
    assert!(!shared.ptx.contains("ld.global.u32 %__cci_w"));
    assert!(full.ptx.contains("ld.global.u32 %__cci_w"));
}
