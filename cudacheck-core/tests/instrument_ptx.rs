//! The PTX instrumenter on hand-written PTX in the forms NVVM emits: what is checked, against
//! what, how each kernel's signature grows, and that the output is well-formed PTX (every branch
//! target exists in its function). The NVRTC tier (tests/tests/nvrtc_instrument.rs) assembles
//! real kernels' output with ptxas; the GPU tier runs it.

mod common;
use common::well_formed;
use cudacheck_core::instrument::ptx::parse;
use cudacheck_core::instrument::{
    hidden_params, instrument_ptx, render_report, InstrumentedPtx, SiteKind, SkipReason, Target,
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
    let s: Vec<(Target, SiteKind, u32)> = k
        .sites
        .iter()
        .map(|s| (s.target.clone(), s.kind, s.bytes))
        .collect();
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
            "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u64 %rd3, [%rd2];\n\tcvta.to.global.u64 %rd4, %rd3;\n\tld.global.f32 %f1, [%rd4];\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];\n\t{ // callseq 0, 0\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n\t.param .b32 param1;\n\tst.param.b32 [param1+0], 0;\n\t.param .b32 retval0;\n\tcall.uni (retval0), _Z4loadPKfi, (param0, param1);\n\tld.param.f32 %f2, [retval0+0];\n\t}"
        )
    ));
    let out = inst(&text);
    let k = &out.kernels[0];
    let reasons: Vec<&SkipReason> = k.coverage.unchecked.iter().map(|u| &u.reason).collect();
    assert!(reasons.contains(&&SkipReason::LoadedPointer), "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| matches!(r, SkipReason::Collective { op } if op.starts_with("ldmatrix"))),
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
