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

/// The text of `ptx` from the `setp` that ends the check before `needle` (the instruction, as
/// emitted) to the end of the line after it.
fn check_of<'p>(ptx: &'p str, needle: &str) -> &'p str {
    let at = ptx
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in\n{ptx}"));
    let start = ptx[..at].rfind("setp.ge.").expect("a check before it");
    let after = at + ptx[at..].find('\n').unwrap() + 1;
    let end = after + ptx[after..].find('\n').unwrap();
    &ptx[start..end]
}

/// The cold block of site `site` (in the slow copy: `suffix` `__s`), up to its way back.
fn cold_of<'p>(ptx: &'p str, site: u32, suffix: &str) -> &'p str {
    let label = format!("$__cc_cold{site}{suffix}:");
    let at = ptx
        .find(&label)
        .unwrap_or_else(|| panic!("no {label}\n{ptx}"));
    let end = ptx[at..].find("bra $__cc_cont").unwrap() + at;
    &ptx[at..end]
}

/// Atomics and reductions on global memory (results/instrument_cost.md, 2026-11-26): a failed
/// check sends the address to the module's sink, the atomic runs there, and the branch to the
/// cold block (which records the fault and zeroes a returned value, as before) follows it; no
/// branch between the check and the atomic. In every address form: a register, a register plus
/// an offset (kept, the sink moved back by it), negative offsets, a guard, 8- and 16-byte
/// widths (with their alignment test), a generic address of a parameter's buffer.
#[test]
fn global_atomics_are_redirected_to_the_sink_not_branched_around() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n\tcvta.to.global.u64 %rd3, %rd1;\n\tmul.wide.s32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tatom.global.add.u32 %r2, [%rd6], %r3;\n\tadd.s64 %rd10, %rd3, %rd5;\n\tred.global.add.f32 [%rd10+8], %f1;\n\tadd.s64 %rd11, %rd3, %rd5;\n\t@%p1 atom.global.cas.b64 %rd7, [%rd11+-16], %rd8, %rd9;\n\tadd.s64 %rd12, %rd3, %rd5;\n\tred.global.v4.f32.add [%rd12], {%f1, %f2, %f3, %f4};\n\tadd.s64 %rd13, %rd2, %rd5;\n\tatom.exch.b32 %r4, [%rd13], %r3;";
    // The atomics' results are read: one nobody reads is a reduction (`reduce.rs`).
    let body = format!("{body}\n\tadd.s32 %r30, %r2, %r4;");
    let out = inst(&module(&kernel(P3, &body)));
    let k = &out.kernels[0];
    assert_eq!(k.coverage.checked, 5, "{:?}", k.coverage);
    // The sites are what they were: kind, buffer and width.
    assert_eq!(
        site_list(k),
        [
            (Target::Param(0), SiteKind::Atomic, 4),
            (Target::Param(0), SiteKind::Atomic, 4),
            (Target::Param(0), SiteKind::Atomic, 8),
            (Target::Param(0), SiteKind::Atomic, 16),
            (Target::Param(1), SiteKind::Atomic, 4),
        ]
    );
    let ptx = &out.ptx;
    // One sink per module, before the functions that use it, aligned for the widest atomic.
    assert_eq!(
        ptx.matches(".global .align 16 .b8 __cc_sink[16];").count(),
        1,
        "{ptx}"
    );
    assert!(ptx.find("__cc_sink[16]").unwrap() < ptx.find(".entry k(").unwrap());
    let forms = [
        (
            "atom.global.add.u32 %r2, [%__cc_a64], %r3;",
            "mov.u64 %__cc_a64, __cc_sink;\n\tselp.b64 %__cc_a64, %__cc_a64, %rd6, %__cc_p;\n\t",
        ),
        (
            "red.global.add.f32 [%__cc_a64+8], %f1;",
            "mov.u64 %__cc_a64, __cc_sink;\n\tadd.s64 %__cc_a64, %__cc_a64, -8;\n\tselp.b64 %__cc_a64, %__cc_a64, %rd10, %__cc_p;\n\t",
        ),
        (
            "@%p1 atom.global.cas.b64 %rd7, [%__cc_a64+-16], %rd8, %rd9;",
            "or.pred %__cc_p, %__cc_p, %__cc_v;\n\tmov.u64 %__cc_a64, __cc_sink;\n\tadd.s64 %__cc_a64, %__cc_a64, 16;\n\tselp.b64 %__cc_a64, %__cc_a64, %rd11, %__cc_p;\n\t",
        ),
        (
            "red.global.v4.f32.add [%__cc_a64], {%f1, %f2, %f3, %f4};",
            "or.pred %__cc_p, %__cc_p, %__cc_v;\n\tmov.u64 %__cc_a64, __cc_sink;\n\tselp.b64 %__cc_a64, %__cc_a64, %rd12, %__cc_p;\n\t",
        ),
        (
            "atom.exch.b32 %r4, [%__cc_a64], %r3;",
            "mov.u64 %__cc_a64, __cc_sink;\n\tcvta.global.u64 %__cc_a64, %__cc_a64;\n\tselp.b64 %__cc_a64, %__cc_a64, %rd13, %__cc_p;\n\t",
        ),
    ];
    for (site, (instr, redirect)) in forms.iter().enumerate() {
        let c = check_of(ptx, instr);
        let (check, rest) = c.split_once(instr).unwrap();
        assert!(check.ends_with(redirect), "site {site}:\n{c}");
        assert!(!check.contains("bra"), "no branch before the atomic:\n{c}");
        assert_eq!(
            rest.trim(),
            format!("@%__cc_p bra $__cc_cold{site};"),
            "the branch follows the atomic:\n{c}"
        );
    }
    // The guard stays on the check, and the user's addresses are read by no atomic.
    assert!(
        ptx.contains("setp.ge.and.u64 %__cc_p, %__cc_o, %__cc_u, %p1;"),
        "{ptx}"
    );
    for old in ["[%rd6]", "[%rd10+8]", "[%rd11+-16]", "[%rd12]", "[%rd13]"] {
        assert!(!ptx.contains(old), "{old} still accessed\n{ptx}");
    }
    // The cold blocks record as before (kind 4, the access's width) and zero a returned
    // value; a reduction returns none.
    for (site, bytes, zero) in [
        (0, 4, Some("mov.b32 %r2, 0;")),
        (1, 4, None),
        (2, 8, Some("mov.b64 %rd7, 0;")),
        (3, 16, None),
        (4, 4, Some("mov.b32 %r4, 0;")),
    ] {
        let cold = cold_of(ptx, site, "");
        assert!(
            cold.contains(&format!(
                "mov.u32 %__cc_x, {site};\n\tst.global.u32 [%__cc_r+8], %__cc_x;\n\tmov.u32 %__cc_x, 4;\n\tst.global.u32 [%__cc_r+12], %__cc_x;\n\tst.global.u64 [%__cc_r+16], %__cc_o;"
            )),
            "{cold}"
        );
        assert!(
            cold.contains(&format!(
                "mov.u32 %__cc_x, {bytes};\n\tst.global.u32 [%__cc_r+60]"
            )),
            "{cold}"
        );
        match zero {
            Some(z) => assert!(cold.contains(z), "{cold}"),
            None => assert!(!cold.contains("$__cc_skip{site}:\n\tmov.b"), "{cold}"),
        }
    }
}

/// Loads, stores, shared-memory atomics and generic atomics into shared memory keep the branch
/// before the access, exactly as before, beside a redirected global atomic; a module without a
/// redirected atomic has no sink.
#[test]
fn other_checked_accesses_keep_the_branch_before_the_access() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd3, %rd1;\n\tmul.wide.s32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tld.global.f32 %f1, [%rd6];\n\tadd.s64 %rd7, %rd3, %rd5;\n\tst.global.f32 [%rd7+4], %f1;\n\tmov.u32 %r2, tile;\n\tshl.b32 %r3, %r1, 2;\n\tadd.s32 %r4, %r2, %r3;\n\tatom.shared.add.u32 %r5, [%r4], 1;\n\tmov.u64 %rd8, tile;\n\tcvta.shared.u64 %rd9, %rd8;\n\tadd.s64 %rd10, %rd9, %rd5;\n\tatom.add.u32 %r6, [%rd10], 1;\n\tadd.s64 %rd11, %rd3, %rd5;\n\tatom.global.inc.u32 %r7, [%rd11], 9;";
    // The atomics' results are read: one nobody reads is a reduction (`reduce.rs`).
    let body = format!("{body}\n\tadd.s32 %r30, %r5, %r6;\n\tadd.s32 %r31, %r7, %r7;");
    let out = inst(&module(&kernel(P3, &body)));
    let k = &out.kernels[0];
    assert_eq!(k.coverage.checked, 5, "{:?}", k.coverage);
    let ptx = &out.ptx;
    for (site, instr) in [
        "ld.global.f32 %f1, [%rd6];",
        "st.global.f32 [%rd7+4], %f1;",
        "atom.shared.add.u32 %r5, [%r4], 1;",
        "atom.add.u32 %r6, [%rd10], 1;",
    ]
    .iter()
    .enumerate()
    {
        let c = check_of(ptx, instr);
        assert!(
            c.contains(&format!(
                "@%__cc_p bra $__cc_cold{site};\n\t{instr}\n$__cc_cont{site}:"
            )),
            "site {site}:\n{c}"
        );
        assert!(!c.contains("__cc_sink"), "site {site}:\n{c}");
    }
    assert!(
        ptx.contains("setp.ge.u64 %__cc_p, %__cc_o, %__cc_u;\n\t@%__cc_p bra $__cc_cold0;\n\tld.global.f32 %f1, [%rd6];"),
        "{ptx}"
    );
    // The global atomic beside them is redirected, and the module declares the sink once.
    let c = check_of(ptx, "atom.global.inc.u32 %r7, [%__cc_a64], 9;");
    assert!(c.ends_with("@%__cc_p bra $__cc_cold4;"), "{c}");
    assert_eq!(ptx.matches("selp.b64 %__cc_a64").count(), 1, "{ptx}");
    assert_eq!(ptx.matches(".b8 __cc_sink[16];").count(), 1, "{ptx}");
    // Without a global atomic, no sink.
    let body = body.rsplit_once("\n\tadd.s64 %rd11").unwrap().0;
    let out = inst(&module(&kernel(P3, body)));
    assert!(!out.ptx.contains("__cc_sink"), "{}", out.ptx);
}

/// In a kernel with a loop, the fast copy's redirected atomic leaves for the slow copy's cold
/// block after running on the sink (it never comes back, and the slow copy goes on after the
/// atomic, which ran once); atomics of a group keep the group's one range check, and its
/// exact copy redirects each of them.
#[test]
fn redirected_atomics_in_the_fast_copy_and_in_groups() {
    let body = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd3, %rd1;\n\tmov.u64 %rd5, 0;\n$L__BB0_1:\n\tadd.s64 %rd6, %rd3, %rd5;\n\tred.global.add.u32 [%rd6], %r1;\n\tred.global.add.u32 [%rd6+4], %r1;\n\tld.global.u32 %r2, [%rd3];\n\tmul.wide.s32 %rd7, %r2, 4;\n\tadd.s64 %rd8, %rd3, %rd7;\n\tatom.global.max.s32 %r3, [%rd8], %r1;\n\tadd.s64 %rd5, %rd5, 8;\n\tsetp.lt.u64 %p1, %rd5, 4096;\n\t@%p1 bra $L__BB0_1;";
    // The atomics' results are read: one nobody reads is a reduction (`reduce.rs`).
    let body = format!("{body}\n\tadd.s32 %r30, %r3, %r3;");
    let out = inst(&module(&kernel(P3, &body)));
    let k = &out.kernels[0];
    assert_eq!(
        (k.coverage.grouped, k.coverage.group_checks),
        (2, 1),
        "{:?}",
        k.coverage
    );
    let ptx = &out.ptx;
    let (fast, slow) = ptx
        .split_once("the slow copy, entered only from a failed check")
        .expect("split");
    // The fast copy: the group's check leaves for the slow copy's exact copy; the single
    // atomic runs on the chosen address and then leaves for the slow copy's cold block.
    assert!(fast.contains("red.global.add.u32 [%rd6], %r1;"), "{fast}");
    let atom = "atom.global.max.s32 %r3, [%__cc_a64], %r1;";
    let c = check_of(fast, atom);
    assert!(!c.split_once(atom).unwrap().0.contains("bra"), "{c}");
    assert!(c.ends_with("@%__cc_p bra $__cc_cold3__s;"), "{c}");
    assert!(!fast.contains("$__cc_cont"), "{fast}");
    // The slow copy: the same atomic, the way back after it, the cold block zeroing %r3.
    assert!(
        slow.contains(&format!(
            "{atom}\n\t@%__cc_p bra $__cc_cold3__s;\n$__cc_cont3__s:"
        )),
        "{slow}"
    );
    // The group's exact copy: each member redirected, each with its own site.
    let copy = &slow[slow.find("$__cc_slow").unwrap()..];
    assert!(
        copy.contains("red.global.add.u32 [%__cc_a64], %r1;\n\t@%__cc_p bra $__cc_cold0__s;"),
        "{copy}"
    );
    assert!(
        copy.contains("red.global.add.u32 [%__cc_a64+4], %r1;\n\t@%__cc_p bra $__cc_cold1__s;"),
        "{copy}"
    );
    assert!(cold_of(slow, 3, "__s").contains("mov.b32 %r3, 0;"));
}

/// A global atomic on a `__device__` array at a constant offset past its end (checked, since it
/// fails at run time): the array's address is taken first, then redirected like a register.
#[test]
fn a_global_atomic_on_a_symbol_is_redirected_too() {
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.global .align 4 .b8 gbuf[64];\n.visible .entry k()\n{\n\t.reg .b32 %r<4>;\n\tmov.u32 %r1, %tid.x;\n\tatom.global.add.u32 %r2, [gbuf+64], %r1;\n\tadd.s32 %r3, %r2, %r2;\n\tret;\n}\n";
    let out = inst(text);
    assert_eq!(out.kernels[0].coverage.checked, 1);
    let c = check_of(&out.ptx, "atom.global.add.u32 %r2, [%__cc_a64+64], %r1;");
    assert!(
        c.contains("mov.u64 %__cc_u, gbuf;\n\tmov.u64 %__cc_a64, __cc_sink;\n\tadd.s64 %__cc_a64, %__cc_a64, -64;\n\tselp.b64 %__cc_a64, %__cc_a64, %__cc_u, %__cc_p;"),
        "{c}"
    );
    assert!(c.ends_with("@%__cc_p bra $__cc_cold0;"), "{c}");
}
