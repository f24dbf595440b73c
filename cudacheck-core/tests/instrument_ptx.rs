//! The PTX instrumenter on hand-written PTX in the forms NVVM emits: what is checked, against
//! what, how each kernel's signature grows, and that the output is well-formed PTX (every branch
//! target exists in its function). The NVRTC tier (tests/tests/nvrtc_instrument.rs) assembles
//! real kernels' output with ptxas; the GPU tier runs it.

mod common;
use common::well_formed;
use cudacheck_core::instrument::ptx::parse;
use cudacheck_core::instrument::{
    hidden_params, instrument_ptx, render_report, InstrumentedKernel, InstrumentedPtx, SiteKind,
    SkipReason, Target,
};

fn module(functions: &str) -> String {
    format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n.shared .align 4 .b8 tile[1024];\n.extern .shared .align 16 .b8 smem[];\n{functions}\n\t.file\t1 \"k.cu\"\n"
    )
}

fn kernel(params: &str, body: &str) -> String {
    format!(
        ".visible .entry k({params})\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<40>;\n\t.reg .f32 %f<40>;\n\t.reg .b64 %rd<40>;\n\t.loc\t1 7 3\n{body}\n\tret;\n}}\n"
    )
}

const P3: &str = ".param .u64 k_param_0, .param .u64 k_param_1, .param .u32 k_param_2";

/// Each site's target, kind and size, in site order.
fn site_list(k: &InstrumentedKernel) -> Vec<(Target, SiteKind, u32)> {
    k.sites
        .iter()
        .map(|s| (s.target.clone(), s.kind, s.bytes))
        .collect()
}

fn inst(text: &str) -> InstrumentedPtx {
    let out = instrument_ptx(text).unwrap_or_else(|e| panic!("{e}"));
    well_formed(&out.ptx);
    out
}

#[test]
fn every_kernel_takes_a_length_per_parameter_and_the_record() {
    let text = module(&format!(
        "{}\n.visible .entry bare()\n{{\n\tret;\n}}\n",
        kernel(P3, "")
    ));
    let out = inst(&text);
    let m = parse(&out.ptx).unwrap();
    let params = |name: &str| {
        m.functions
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .params
            .iter()
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        params("k"),
        [
            "k_param_0",
            "k_param_1",
            "k_param_2",
            "__cc_len_0",
            "__cc_len_1",
            "__cc_len_2",
            "__cc_rec"
        ]
    );
    assert_eq!(params("bare"), ["__cc_rec"]);
    assert_eq!(hidden_params(3), 4);
    assert_eq!(out.kernels[0].num_params, 3);
}

#[test]
fn parameter_accesses_are_checked_with_their_size_and_kind() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n\tmul.wide.u32 %rd5, %r1, 16;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd6];\n\tadd.s64 %rd7, %rd4, %rd5;\n\tst.global.v4.f32 [%rd7+16], {%f1, %f2, %f3, %f4};\n\tatom.global.add.f32 %f5, [%rd7], %f1;\n\tred.global.add.u32 [%rd7], %r1;";
    let out = inst(&module(&kernel(P3, body)));
    let k = &out.kernels[0];
    assert_eq!(k.coverage.checked, 4);
    assert!(k.coverage.is_complete());
    let s = site_list(k);
    assert_eq!(
        s,
        vec![
            (Target::Param(0), SiteKind::Read, 16),
            (Target::Param(1), SiteKind::Write, 16),
            (Target::Param(1), SiteKind::Atomic, 4),
            (Target::Param(1), SiteKind::Atomic, 4),
        ]
    );
    assert!(k.sites.iter().all(|s| s.loc.as_ref().is_some_and(|l| (
        l.file.as_str(),
        l.line,
        l.column
    ) == ("k.cu", 7, 3))));
}

#[test]
fn a_guarded_access_is_checked_only_under_its_guard() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\t@!%p1 st.global.f32 [%rd2], %f1;";
    let out = inst(&module(&kernel(P3, body)));
    assert!(
        out.ptx
            .contains("setp.ge.and.u64 %__cc_p, %__cc_o, %__cc_u, !%p1;"),
        "{}",
        out.ptx
    );
}

#[test]
fn a_pointer_selected_between_buffers_is_checked_against_the_one_it_holds() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n\tsetp.eq.s64 %p1, %rd1, 0;\n\tselp.b64 %rd3, %rd2, %rd1, %p1;\n\tcvta.to.global.u64 %rd4, %rd3;\n\tld.global.f32 %f1, [%rd4];";
    let out = inst(&module(&kernel(P3, body)));
    let k = &out.kernels[0];
    assert_eq!(
        k.sites[0].target,
        Target::OneOf(vec![Target::Param(0), Target::Param(1)])
    );
    // The shadow is updated beside each definition and the check uses it.
    assert!(out.ptx.contains("selp.b64 %__cc_sb0"), "{}", out.ptx);
    assert!(
        out.ptx.contains("sub.s64 %__cc_o, %rd4, %__cc_sb"),
        "{}",
        out.ptx
    );
}

#[test]
fn shared_arrays_static_dynamic_and_32_bit() {
    let body = "\tmov.u64 %rd1, tile;\n\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.shared.f32 [%rd3], %f1;\n\tld.shared.f32 %f2, [tile+1020];\n\tmov.u32 %r2, smem;\n\tadd.s32 %r3, %r2, %r1;\n\tld.shared.u8 %r4, [%r3];";
    let out = inst(&module(&kernel("", body)));
    let k = &out.kernels[0];
    assert_eq!((k.coverage.checked, k.coverage.proven), (2, 1));
    assert_eq!(k.sites[0].target, Target::Var("tile".into()));
    assert_eq!(k.sites[1].target, Target::Var("smem".into()));
    // The dynamic array is checked against the launch's dynamic shared size, in 32 bits.
    assert!(out.ptx.contains("%dynamic_smem_size"), "{}", out.ptx);
    assert!(
        out.ptx.contains("sub.s32 %__cc_o32, %r3, %__cc_x;"),
        "{}",
        out.ptx
    );
}

#[test]
fn an_assert_records_and_ends_the_thread_instead_of_trapping() {
    let text = format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n.extern .func __assertfail\n(\n\t.param .b64 __assertfail_param_0,\n\t.param .b64 __assertfail_param_1,\n\t.param .b32 __assertfail_param_2,\n\t.param .b64 __assertfail_param_3,\n\t.param .b64 __assertfail_param_4\n)\n;\n{}",
        kernel(
            "",
            "\t{ // callseq 0, 0\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n\t.param .b64 param1;\n\tst.param.b64 [param1+0], %rd1;\n\t.param .b32 param2;\n\tst.param.b32 [param2+0], 9;\n\t.param .b64 param3;\n\tst.param.b64 [param3+0], %rd1;\n\t.param .b64 param4;\n\tst.param.b64 [param4+0], 1;\n\tcall.uni \n\t__assertfail, \n\t(\n\tparam0, \n\tparam1, \n\tparam2, \n\tparam3, \n\tparam4\n\t);\n\t} // callseq 0"
        )
    );
    let out = inst(&text);
    let k = &out.kernels[0];
    assert_eq!(k.sites[0].kind, SiteKind::Assert);
    assert!(
        out.ptx.contains("__cc_a0, __cc_a1);\n\texit;"),
        "{}",
        out.ptx
    );
    assert!(
        !out.ptx.contains("call.uni \n\t__assertfail"),
        "{}",
        out.ptx
    );
    assert!(out.ptx.contains("exit;"), "{}", out.ptx);
}

#[test]
fn accesses_in_inline_assembly_scopes_keep_their_cold_path_in_scope() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\t// begin inline asm\n\t{ .reg .b32 t;\n\tld.global.u32 t, [%rd2];\n\t}\n\t// end inline asm";
    let out = inst(&module(&kernel(P3, body)));
    assert_eq!(out.kernels[0].coverage.checked, 1);
    // well_formed() (in inst) checked the labels; the cold block sits inside the braces.
    let open = out.ptx.find("{ .reg .b32 t;").unwrap();
    let close = out.ptx[open..].find("\n\t}").unwrap() + open;
    assert!(out.ptx[open..close].contains("$__cc_cold0:"), "{}", out.ptx);
}

#[test]
fn what_cannot_be_checked_is_listed_with_its_reason() {
    let text = module(&format!(
        ".func (.param .b32 func_retval0) _Z4loadPKfi(.param .b64 _Z4loadPKfi_param_0, .param .b32 _Z4loadPKfi_param_1)\n{{\n\t.reg .b64 %rd<4>;\n\t.reg .f32 %f<2>;\n\t.loc\t1 2 10\n\tld.param.u64 %rd1, [_Z4loadPKfi_param_0];\n\tld.global.f32 %f1, [%rd1];\n\tst.param.f32 [func_retval0+0], %f1;\n\tret;\n}}\n{}",
        kernel(
            P3,
            "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u64 %rd3, [%rd2];\n\tcvta.to.global.u64 %rd4, %rd3;\n\tld.global.f32 %f1, [%rd4];\n\tstmatrix.sync.aligned.m8n8.x4.shared.b16 [%r5], {%r1, %r2, %r3, %r4};\n\t{ // callseq 0, 0\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n\t.param .b32 param1;\n\tst.param.b32 [param1+0], 0;\n\t.param .b32 retval0;\n\tcall.uni (retval0), _Z4loadPKfi, (param0, param1);\n\tld.param.f32 %f2, [retval0+0];\n\t}"
        )
    ));
    let out = inst(&text);
    let k = &out.kernels[0];
    let reasons: Vec<&SkipReason> = k.coverage.unchecked.iter().map(|u| &u.reason).collect();
    assert!(reasons.contains(&&SkipReason::LoadedPointer), "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| matches!(r, SkipReason::Collective { op } if op.starts_with("stmatrix"))),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| matches!(r, SkipReason::NotInlined { function } if function == "load")),
        "{reasons:?}"
    );
    // The pointer table itself is read through a checked access.
    assert_eq!(k.coverage.checked, 1);
    let report = render_report("k.cu", &out.kernels);
    assert!(
        report.contains("k.cu:2:10: `ld.global.f32`: the access is in device function `load`"),
        "{report}"
    );
}

#[test]
fn text_that_is_not_ptx_is_a_typed_error_or_nothing() {
    assert!(instrument_ptx(".visible .entry k()\n{\n ld.global.f32 %f1, [%rd1];").is_err());
    let out = instrument_ptx("hello").unwrap();
    assert!(out.kernels.is_empty());
}

#[test]
fn ldmatrix_rows_are_checked_and_a_bad_row_is_redirected_not_skipped() {
    // Marlin's form: a generic pointer into dynamic shared memory, back to a 32-bit shared
    // address; and an `x2` (lanes 0-15 give addresses) into a fixed array with an offset.
    let body = "\tmov.u64 %rd1, smem;\n\tcvta.shared.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r1, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tcvta.to.shared.u64 %rd5, %rd4;\n\tcvt.u32.u64 %r2, %rd5;\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r2];\n\tmov.u32 %r3, tile;\n\tshl.b32 %r4, %r1, 4;\n\tadd.s32 %r5, %r3, %r4;\n\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r14, %r15}, [%r5+32];\n\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r16}, [smem+40];\n\tmov.u64 %rd6, tile;\n\tcvta.shared.u64 %rd7, %rd6;\n\tadd.s64 %rd8, %rd7, %rd3;\n\tldmatrix.sync.aligned.m8n8.x4.trans.b16 {%r17, %r18, %r19, %r20}, [%rd8];";
    let out = inst(&module(&kernel(P3, body)));
    let k = &out.kernels[0];
    assert_eq!(k.coverage.checked, 4, "{:?}", k.coverage);
    assert!(k.coverage.is_complete(), "{:?}", k.coverage);
    let s = site_list(k);
    assert_eq!(
        s,
        [
            (Target::Var("smem".into()), SiteKind::Read, 16),
            (Target::Var("tile".into()), SiteKind::Read, 16),
            (Target::Var("smem".into()), SiteKind::Read, 16),
            (Target::Var("tile".into()), SiteKind::Read, 16)
        ]
    );
    let ptx = &out.ptx;
    let at = |needle: &str| {
        ptx.find(needle)
            .unwrap_or_else(|| panic!("`{needle}` not in\n{ptx}"))
    };
    // Both instructions now read the chosen address; every lane still executes them.
    let x4 = at("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%__cc_a32];");
    let x2 = at("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r14, %r15}, [%__cc_a32];");
    assert!(!ptx.contains("[%r2]") && !ptx.contains("[%r5+32]"), "{ptx}");
    // Before each: the address, then the array's start where the check failed.
    let before_x4 = &ptx[..x4];
    let r = before_x4
        .rfind("mov.u32 %__cc_a32, %r2;")
        .expect("address copied");
    assert!(
        before_x4[r..].contains(
            "@%__cc_p mov.u32 %__cc_a32, smem;\n\t@%__cc_p and.b32 %__cc_y, %__cc_o32, 15;\n\t@%__cc_p add.s32 %__cc_a32, %__cc_a32, %__cc_y;"
        ),
        "the row keeps its alignment\n{ptx}"
    );
    let before_x2 = &ptx[x4..x2];
    assert!(before_x2.contains("mov.u32 %__cc_a32, %r5;\n\tadd.s32 %__cc_a32, %__cc_a32, 32;\n\t@%__cc_p mov.u32 %__cc_a32, tile;"), "{ptx}");
    // Lane conditions come before the redirect, which reads `%__cc_y` after them.
    assert!(before_x2.find("%laneid").unwrap() < before_x2.find("@%__cc_p and.b32").unwrap());
    // Lanes 16-31 give no address to an x2: their registers are not checked.
    assert!(
        before_x2.contains(
            "mov.u32 %__cc_y, %laneid;\n\tsetp.lt.and.u32 %__cc_p, %__cc_y, 16, %__cc_p;"
        ),
        "{ptx}"
    );
    assert!(
        !before_x4.contains("%laneid"),
        "an x4 uses all 32 lanes\n{ptx}"
    );
    // A symbol plus an offset (hand-written PTX): the redirect keeps the offset's remainder.
    let x1 = at("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r16}, [%__cc_a32];");
    assert!(
        ptx[x2..x1].contains("mov.u32 %__cc_a32, smem;\n\tadd.s32 %__cc_a32, %__cc_a32, 40;\n\t@%__cc_p mov.u32 %__cc_a32, smem;\n\t@%__cc_p add.s32 %__cc_a32, %__cc_a32, 8;"),
        "{ptx}"
    );
    // A generic pointer (candle's form): the array's generic address, the remainder in 64 bits.
    let generic =
        at("ldmatrix.sync.aligned.m8n8.x4.trans.b16 {%r17, %r18, %r19, %r20}, [%__cc_a64];");
    assert!(
        ptx[x1..generic].contains("mov.u64 %__cc_a64, %rd8;\n\t@%__cc_p mov.u64 %__cc_a64, tile;\n\t@%__cc_p cvta.shared.u64 %__cc_a64, %__cc_a64;\n\t@%__cc_p and.b64 %__cc_u, %__cc_o, 15;\n\t@%__cc_p add.s64 %__cc_a64, %__cc_a64, %__cc_u;"),
        "{ptx}"
    );
    // The fault is recorded after the instruction (no branch between check and instruction)...
    assert!(!before_x4[r..].contains("bra"), "{ptx}");
    let after_x4 = &ptx[x4..];
    let line_end = after_x4.find('\n').unwrap();
    assert!(
        after_x4[line_end..]
            .trim_start()
            .starts_with("@%__cc_p bra $__cc_cold0;"),
        "{ptx}"
    );
    // ... with kind 6 (a redirected collective read), and the destinations are not zeroed.
    let cold = &ptx[at("$__cc_cold0:")..];
    let cold = &cold[..cold.find("bra $__cc_cont").unwrap()];
    assert!(
        cold.contains("mov.u32 %__cc_x, 6;\n\tst.global.u32 [%__cc_r+12]"),
        "{cold}"
    );
    assert!(!cold.contains("%r10, 0"), "{cold}");
}

/// Text that is not PTX may name a load without its address operand (found by the fuzz
/// target `instrument`): instrumenting it gives a result or an error, never a panic.
#[test]
fn a_load_without_its_address_operand_does_not_panic() {
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry k(.param .u64 k_param_0)\n{\n\
               \t.reg .f32 %f<2>;\n\t.reg .b64 %rd<3>;\n\
               \tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
               \tld.global.f32 %f1;\n\tst.global.f32 [%rd2], %f1;\n\tret;\n}\n";
    let out = cudacheck_core::instrument::instrument_ptx(ptx).unwrap();
    assert_eq!(out.kernels.len(), 1);
    assert_eq!(
        out.kernels[0].widest.len(),
        1,
        "the store's width is still known"
    );
}
