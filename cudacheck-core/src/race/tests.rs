//! The race checker's plan and code on small PTX kernels (no NVRTC, no GPU): what is checked,
//! what is refused and why, and that the user's instructions stay as they were.

use super::*;

/// A bounds-checked-looking kernel (it has the fault record parameter) with `body`.
fn kernel(decls: &str, body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n{decls}\n\
         .visible .entry k(.param .u64 k_param_0, .param .u64 __cc_rec)\n{{\n\
         \t.reg .b32 %r<20>;\n\t.reg .f32 %f<10>;\n\t.reg .b64 %rd<10>;\n\t.reg .pred %p<5>;\n\
         \t.shared .align 4 .b8 tile[1024];\n\
         {body}\n\tret;\n}}\n"
    )
}

fn race(ptx: &str) -> RacePtx {
    race_ptx(ptx, &RaceOptions::new(0)).unwrap()
}

#[test]
fn shared_accesses_and_barriers_are_checked_and_the_user_code_kept() {
    let body = "\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 2;\n\tmov.u32 %r3, tile;\n\
                \tadd.s32 %r4, %r3, %r2;\n\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n\
                \tld.shared.f32 %f2, [%r4+4];\n\tatom.shared.add.u32 %r5, [tile+64], 1;";
    let ptx = kernel("", body);
    let r = race(&ptx);
    let k = &r.kernels[0];
    assert_eq!(k.coverage.checked, 3, "{:?}", k.coverage);
    assert_eq!(k.coverage.barriers, 1);
    assert!(k.coverage.is_complete());
    assert!(k.shadow);
    let kinds: Vec<RaceSiteKind> = k.sites.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            RaceSiteKind::Write,
            RaceSiteKind::Barrier,
            RaceSiteKind::Read,
            RaceSiteKind::Atomic,
            RaceSiteKind::Exit
        ]
    );
    // Every access names `tile`, through the address chain or directly.
    for s in k.sites.iter().filter(|s| s.bytes > 0) {
        assert_eq!(s.array.as_deref(), Some("tile"), "{s:?}");
    }
    // The user's instructions are all still there, unchanged, but for the barrier: the
    // counting barrier (non-aligned) stands in for it.
    for line in body.lines().filter(|l| !l.contains("bar.sync")) {
        assert!(r.ptx.contains(line.trim()), "lost `{line}`");
    }
    assert!(r.ptx.contains(".extern .shared .align 16 .b8 __ccr_dyn[];"));
    assert!(r
        .ptx
        .contains("atom.global.cas.b32 %__ccr_r, [%__ccr_rec], 0, 1;"));
    // Writes swap themselves into W; reads load it.
    assert!(r.ptx.contains("atom.shared.exch.b64"));
    assert!(r.ptx.contains("red.shared.max.u64"));
}

#[test]
fn kernels_without_shared_memory_are_left_as_they_are() {
    let ptx = kernel(
        "",
        "\tld.param.u64 %rd1, [k_param_0];\n\tld.global.f32 %f1, [%rd1];\n\tst.global.f32 [%rd1], %f1;",
    );
    let r = race(&ptx);
    assert_eq!(r.ptx, ptx);
    assert_eq!(r.kernels[0].coverage, RaceCoverage::default());
    assert!(!r.kernels[0].shadow);
}

#[test]
fn named_barriers_with_a_count_and_mbarriers_leave_the_kernel_unchecked_with_the_reason() {
    for (body, word) in [
        (
            "\tst.shared.f32 [tile], %f1;\n\tbar.sync 1, 64;",
            "thread count",
        ),
        ("\tst.shared.f32 [tile], %f1;\n\tbar.arrive 1, 64;", "split"),
        (
            "\tst.shared.f32 [tile], %f1;\n\tmbarrier.init.shared.b64 [tile+8], 32;",
            "does not model",
        ),
        (
            "\tst.shared.f32 [tile], %f1;\n\tbarrier.cluster.arrive;",
            "cluster",
        ),
    ] {
        let ptx = kernel("", body);
        let r = race(&ptx);
        let why = r.kernels[0]
            .coverage
            .not_checked
            .clone()
            .unwrap_or_default();
        assert!(why.contains(word), "{body}: {why}");
        assert_eq!(r.ptx, ptx, "{body}: a refused kernel is left unchanged");
    }
}

#[test]
fn calls_to_functions_that_synchronize_leave_the_kernel_unchecked() {
    let func = ".func f()\n{\n\tbar.sync 0;\n\tret;\n}\n";
    let ptx = kernel(func, "\tst.shared.f32 [tile], %f1;\n\tcall f, ();");
    let r = race(&ptx);
    let why = r.kernels[0]
        .coverage
        .not_checked
        .clone()
        .unwrap_or_default();
    assert!(why.contains("`f`"), "{why}");
}

#[test]
fn collective_shared_accesses_are_listed_unchecked() {
    let ptx = kernel(
        "",
        "\tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\
         \tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [tile];",
    );
    let r = race(&ptx);
    let c = &r.kernels[0].coverage;
    assert_eq!(c.checked, 1);
    assert_eq!(c.unchecked.len(), 1, "{c:?}");
    assert!(c.unchecked[0].instruction.starts_with("ldmatrix"));
    assert!(c.unchecked[0].reason.contains("warp-collective access"));
}

#[test]
fn guarded_accesses_are_checked_only_when_they_run() {
    let ptx = kernel(
        "",
        "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 st.shared.f32 [tile], %f1;",
    );
    let r = race(&ptx);
    assert_eq!(r.kernels[0].coverage.checked, 1);
    assert!(r.ptx.contains("@!%p1 bra $__ccr_s"), "{}", r.ptx);
    assert!(r.ptx.contains("@%p1 st.shared.f32 [tile], %f1;"));
}

#[test]
fn syncwarp_masks_are_checked_and_a_bad_call_skipped() {
    let ptx = kernel("", "\tst.shared.f32 [tile], %f1;\n\tbar.warp.sync 65535;");
    let r = race(&ptx);
    let k = &r.kernels[0];
    assert_eq!(k.coverage.warp_syncs, 1);
    assert!(
        r.ptx.contains("@!%__ccr_q4 bar.warp.sync 65535;"),
        "{}",
        r.ptx
    );
    assert!(r.ptx.contains("%laneid"));
    assert!(!r.ptx.contains("\tbar.warp.sync 65535;"));
}

#[test]
fn generic_accesses_are_checked_only_when_proven_shared() {
    let ptx = kernel(
        "",
        "\tmov.u64 %rd1, tile;\n\tcvta.shared.u64 %rd2, %rd1;\n\tst.f32 [%rd2], %f1;\n\
         \tld.param.u64 %rd3, [k_param_0];\n\tst.f32 [%rd3], %f1;",
    );
    let r = race(&ptx);
    let k = &r.kernels[0];
    assert_eq!(k.coverage.checked, 1, "{:?}", k.coverage);
    assert_eq!(k.sites[0].array.as_deref(), Some("tile"));
    assert!(r.ptx.contains("cvta.to.shared.u64 %__ccr_u0, %rd2;"));
}

#[test]
fn a_module_without_the_fault_record_is_not_race_checked() {
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry k()\n{\n\t.shared .align 4 .b8 t[64];\n\t.reg .f32 %f<2>;\n\
               \tst.shared.f32 [t], %f1;\n\tret;\n}\n";
    let r = race(ptx);
    assert_eq!(r.ptx, ptx);
    assert!(r.kernels[0]
        .coverage
        .not_checked
        .as_deref()
        .is_some_and(|w| w.contains("not bounds-checked")));
}

#[test]
fn shadow_sizes_cover_every_word_with_a_margin() {
    // 1 KiB static + 512 B dynamic: 384 words plus the margin, 24 bytes each, plus the slots.
    let b = shadow_bytes(1024, 512);
    assert!(b >= 48 + 24 * 384, "{b}");
    assert!(b < 48 + 24 * 384 + 24 * 100, "{b}");
    assert_eq!(shadow_bytes(u32::MAX, u32::MAX), u32::MAX);
    // One record per word: 8 bytes each.
    let one = shadow_bytes_with(1, 1024, 512);
    assert!(
        (48 + 8 * 384..48 + 8 * 384 + 8 * 100).contains(&one),
        "{one}"
    );
    assert_eq!(shadow_bytes_with(3, 1024, 512), b);
}

#[test]
fn reads_with_no_write_in_their_barrier_interval_get_no_check() {
    // A GEMM's shape: the tile is written, a barrier, read in a loop, a barrier, around again.
    let body = "$L_top:\n\tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\
                \tmov.u32 %r1, 0;\n$L_k:\n\tld.shared.f32 %f2, [tile+4];\n\tadd.s32 %r1, %r1, 1;\n\
                \tsetp.lt.s32 %p1, %r1, 16;\n\t@%p1 bra $L_k;\n\tbar.sync 0;\n\
                \tsetp.lt.s32 %p2, %r2, 4;\n\t@%p2 bra $L_top;";
    let r = race(&kernel("", body));
    let c = &r.kernels[0].coverage;
    assert_eq!((c.checked, c.proven), (2, 1), "{c:?}");
    // The write keeps its check; the read has none.
    assert_eq!(r.ptx.matches("atom.shared.exch.b64").count(), 1);
    assert!(!r.ptx.contains("ld.shared.u64 %__ccr_x, [%__ccr_t5]"));
    // No checked read, so no reader records: one record per word, which the write alone
    // looks at, and a shadow a third the size.
    let k = &r.kernels[0];
    assert_eq!(k.shadow_records, 1);
    assert!(!r.ptx.contains("ld.shared.u64 %__ccr_y"), "{}", r.ptx);
    assert!(r.ptx.contains("mad.lo.u32 %__ccr_t1, %__ccr_nw, 8, 63;"));
    assert_eq!(k.shadow_bytes(1024, 0), shadow_bytes_with(1, 1024, 0));
    assert!(3 * k.shadow_bytes(1024, 0) <= shadow_bytes(1024, 0) + 128);

    // Without the barrier between them, the read may race with the next round's write.
    let racy = body.replacen("\tbar.sync 0;\n\tsetp.lt.s32 %p2", "\tsetp.lt.s32 %p2", 1);
    let r = race(&kernel("", &racy));
    let c = &r.kernels[0].coverage;
    assert_eq!((c.checked, c.proven), (2, 0), "{c:?}");
    assert_eq!(r.kernels[0].shadow_records, 3);
    assert!(r.ptx.contains("ld.shared.u64 %__ccr_x, [%__ccr_t5]"));

    // Atomics alone in their interval cannot race with each other.
    let hist = "\tst.shared.u32 [tile], 0;\n\tbar.sync 0;\n\tatom.shared.add.u32 %r3, [tile], 1;\n\
                \tbar.sync 0;\n\tld.shared.u32 %r4, [tile];";
    let r = race(&kernel("", hist));
    let c = &r.kernels[0].coverage;
    assert_eq!((c.checked, c.proven), (3, 2), "{c:?}");
}

/// The rewritten code of `ptx` (its lines, trimmed) without the reporting function.
fn kernel_lines(r: &RacePtx) -> Vec<String> {
    let at = r.ptx.find(".entry k(").unwrap();
    r.ptx[at..].lines().map(|l| l.trim().to_string()).collect()
}

#[test]
fn block_barriers_become_counting_non_aligned_barriers() {
    let body = "\tmov.u32 %r1, %tid.x;\n\tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\
                \tld.shared.f32 %f2, [tile+4];\n\tbarrier.sync.aligned 0;\n\
                \tst.shared.f32 [tile+8], %f2;";
    let r = race(&kernel("", body));
    assert_eq!(r.kernels[0].coverage.barriers, 2);
    let lines = kernel_lines(&r);
    let counting = lines
        .iter()
        .filter(|l| *l == "barrier.red.popc.u32 %__ccr_n, 0, 1;")
        .count();
    assert_eq!(counting, 2, "{}", r.ptx);
    // No aligned block barrier is left: lanes of one warp may arrive separately.
    for l in &lines {
        assert!(
            !l.starts_with("bar.sync") && !l.contains(".aligned"),
            "aligned barrier left: `{l}`"
        );
    }
    // Fewer arrivals than threads: a report of the `ExitedBarrier` kind, then every thread
    // ends; the count is compared with the block's size.
    assert!(r.ptx.contains("setp.lt.u32 %__ccr_q4, %__ccr_n, %__ccr_N;"));
    assert!(r.ptx.contains(&format!(
        "mov.u32 %__ccr_r, {};\n\tst.global.u32 [%__ccr_rec+8], %__ccr_r;",
        RaceEventKind::ExitedBarrier.code()
    )));
}

#[test]
fn a_users_barrier_reduction_keeps_its_operation_after_the_counting_barrier() {
    for (user, kept) in [
        (
            "bar.red.popc.u32 %r2, 0, %p1;",
            "barrier.red.popc.u32 %r2, 0, %p1;",
        ),
        (
            "bar.red.and.pred %p2, 0, %p1;",
            "barrier.red.and.pred %p2, 0, %p1;",
        ),
        (
            "barrier.red.or.aligned.pred %p2, 0, !%p1;",
            "barrier.red.or.pred %p2, 0, !%p1;",
        ),
    ] {
        let body = format!(
            "\tst.shared.f32 [tile], %f1;\n\tsetp.gt.f32 %p1, %f1, 0f00000000;\n\t{user}\n\
             \tld.shared.f32 %f2, [tile+4];"
        );
        let r = race(&kernel("", &body));
        let lines = kernel_lines(&r);
        let counting = lines
            .iter()
            .position(|l| l == "barrier.red.popc.u32 %__ccr_n, 0, 1;")
            .unwrap_or_else(|| panic!("{user}: no counting barrier"));
        let users = lines
            .iter()
            .position(|l| l == kept)
            .unwrap_or_else(|| panic!("{user}: not kept as `{kept}`:\n{}", r.ptx));
        assert!(counting < users, "{user}: the check must come first");
        assert!(
            !lines.iter().any(|l| l == user),
            "{user}: aligned form left"
        );
    }
}

#[test]
fn a_guarded_barrier_keeps_its_guard_around_the_whole_check() {
    let body = "\tsetp.lt.u32 %p1, %r1, 64;\n\tst.shared.f32 [tile], %f1;\n\t@%p1 bar.sync 0;\n\
                \tld.shared.f32 %f2, [tile+4];";
    let r = race(&kernel("", body));
    let lines = kernel_lines(&r);
    let skip = lines
        .iter()
        .position(|l| l.starts_with("@!%p1 bra $__ccr_g"))
        .expect("the guard skips the check");
    let counting = lines
        .iter()
        .position(|l| l == "barrier.red.popc.u32 %__ccr_n, 0, 1;")
        .unwrap();
    assert!(skip < counting);
    assert!(!lines.iter().any(|l| l.contains("bar.sync")));
}

#[test]
fn exits_are_recorded_only_in_kernels_with_barriers() {
    let with = race(&kernel(
        "",
        "\tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\tld.shared.f32 %f2, [tile+4];",
    ));
    let exits: Vec<&RaceSite> = with.kernels[0]
        .sites
        .iter()
        .filter(|s| s.kind == RaceSiteKind::Exit)
        .collect();
    assert_eq!(exits.len(), 1, "{:?}", with.kernels[0].sites);
    // The exit slot sits after the two barrier slots; the first shadow word after it.
    assert!(with
        .ptx
        .contains("red.shared.max.u64 [%__ccr_sh+32], %__ccr_u0;"));
    assert!(with.ptx.contains("add.u32 %__ccr_W, %__ccr_sh, 48;"));
    let without = race(&kernel(
        "",
        "\tst.shared.f32 [tile], %f1;\n\tld.shared.f32 %f2, [tile+4];",
    ));
    assert!(without.kernels[0]
        .sites
        .iter()
        .all(|s| s.kind != RaceSiteKind::Exit));
    assert!(!without.ptx.contains("[%__ccr_sh+32]"));
}

/// A barrier misuse replaces a race already in the record (the race is often its effect);
/// a race never replaces anything.
#[test]
fn the_report_lets_a_barrier_misuse_replace_a_race() {
    let r = race(&kernel(
        "",
        "\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra $L_a;\n\
         \tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\tbra.uni $L_end;\n\
         $L_a:\n\tst.shared.f32 [tile+4], %f1;\n\tbar.sync 0;\n$L_end:",
    ));
    // No function to call: the report is inline (a call keeps the calling convention's
    // registers in every kernel).
    assert!(!r.ptx.contains("call "), "{}", r.ptx);
    let lines = kernel_lines(&r);
    let race = RaceEventKind::Race.code();
    let divergent = RaceEventKind::DivergentBarrier.code();
    // A barrier misuse takes the record over from a race; a race never replaces anything.
    let takeover = format!("atom.global.cas.b32 %__ccr_r, [%__ccr_rec+8], {race}, {divergent};");
    assert!(lines.contains(&takeover), "{}", r.ptx);
    assert!(!lines.iter().any(
        |l| l.starts_with("atom.global.cas.b32 %__ccr_r, [%__ccr_rec+8]")
            && l.ends_with(&format!(", {race};"))
    ));
    // Every report counts, the first claims the record; the record is after the bounds one.
    assert!(lines.contains(&"atom.global.add.u32 %__ccr_r, [%__ccr_rec+4], 1;".to_string()));
    assert!(lines.contains(&"atom.global.cas.b32 %__ccr_r, [%__ccr_rec], 0, 1;".to_string()));
    assert!(lines.contains(&format!(
        "add.s64 %__ccr_rec, %__ccr_rec, {RACE_RECORD_OFFSET};"
    )));
    assert!(lines.contains(&"st.global.u64 [%__ccr_rec+16], %__ccr_me;".to_string()));
}

/// `if (i >= n) return;` is a branch to the kernel's one `ret`: the branch records the exit
/// (with the `return`'s line), and the `ret` it reaches leaves that record alone.
#[test]
fn an_early_return_is_recorded_at_its_branch() {
    let body = "\t.loc 1 3 5\n\tsetp.ge.u32 %p1, %r1, 100;\n\t@%p1 bra $L_end;\n\
                \t.loc 1 4 5\n\tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\
                \tld.shared.f32 %f2, [tile+4];\n$L_end:\n\t.loc 1 9 1";
    let ptx = kernel(".file 1 \"k.cu\"", body);
    let r = race(&ptx);
    let k = &r.kernels[0];
    let exits: Vec<u32> = k
        .sites
        .iter()
        .filter(|s| s.kind == RaceSiteKind::Exit)
        .map(|s| s.loc.as_ref().map_or(0, |l| l.line))
        .collect();
    assert_eq!(exits, [3, 9], "{:?}", k.sites);
    let lines = kernel_lines(&r);
    let branch = lines.iter().position(|l| l == "@%p1 bra $L_end;").unwrap();
    let mark = lines
        .iter()
        .position(|l| l == "setp.eq.u32 %__ccr_left, 0, 0;")
        .expect("the branch's lanes note that they recorded");
    assert!(mark < branch);
    let ret = lines.iter().rposition(|l| l == "ret;").unwrap();
    let skip = lines
        .iter()
        .rposition(|l| l.starts_with("@%__ccr_left bra $__ccr_o"))
        .expect("the ret skips a recorded exit");
    assert!(branch < skip && skip < ret);
}

#[test]
fn copies_of_one_barrier_statement_share_its_site() {
    // Two copies of the `__syncthreads()` at line 7 (a loop unrolled with a remainder) and one
    // at line 9: two barrier sites, the copies sharing theirs.
    let body = "\t.file 1 \"k.cu\"\n\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 2;\n\
                \tmov.u32 %r3, tile;\n\tadd.s32 %r4, %r3, %r2;\n\
                \t.loc 1 6 5\n\tst.shared.f32 [%r4], %f1;\n\
                \t.loc 1 7 9\n\tbar.sync 0;\n\
                \t.loc 1 8 5\n\tld.shared.f32 %f2, [%r4+4];\n\
                \t.loc 1 7 9\n\tbar.sync 0;\n\
                \t.loc 1 8 5\n\tld.shared.f32 %f3, [%r4+8];\n\
                \t.loc 1 9 9\n\tbar.sync 0;\n\
                \t.loc 1 10 5\n\tst.shared.f32 [%r4], %f3;";
    let r = race(&kernel("", body));
    let k = &r.kernels[0];
    assert_eq!(k.coverage.barriers, 3, "every copy is counted and checked");
    let barriers: Vec<u32> = k
        .sites
        .iter()
        .filter(|s| s.kind == RaceSiteKind::Barrier)
        .map(|s| s.loc.as_ref().map_or(0, |l| l.line))
        .collect();
    assert_eq!(barriers, [7, 9], "{:?}", k.sites);
}

/// Whether the race-checked kernel folds its barriers into the divergence slots.
fn folds_into_slots(r: &RacePtx) -> bool {
    kernel_lines(r)
        .iter()
        .any(|l| l.starts_with("red.shared.max.u64 [%__ccr_t9"))
}

#[test]
fn barriers_met_in_one_order_need_no_divergence_slots() {
    // Straight-line barriers, an early return before them: every thread that stays meets
    // them in one order; only the count is checked.
    let body = "\tmov.u32 %r1, %tid.x;\n\tsetp.gt.u32 %p1, %r1, 100;\n\t@%p1 bra $L_end;\n\
                \tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\
                \tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_skip;\n\
                \tld.shared.f32 %f2, [tile+4];\n\
                $L_skip:\n\tbar.sync 0;\n\tst.shared.f32 [tile+8], %f2;\n$L_end:";
    let r = race(&kernel("", body));
    let k = &r.kernels[0];
    assert_eq!(k.coverage.barriers, 2);
    assert!(!folds_into_slots(&r), "{}", r.ptx);
    let lines = kernel_lines(&r);
    let counting = lines
        .iter()
        .filter(|l| *l == "barrier.red.popc.u32 %__ccr_n, 0, 1;")
        .count();
    assert_eq!(counting, 2);
    // Threads that left are still found, by the count, and reported once per block.
    assert_eq!(
        lines
            .iter()
            .filter(|l| *l == "setp.lt.u32 %__ccr_q4, %__ccr_n, %__ccr_N;")
            .count(),
        2
    );
    assert!(lines
        .iter()
        .any(|l| l == "atom.shared.exch.b32 %__ccr_t1, [%__ccr_sh+40], 1;"));
    assert!(r.ptx.contains(&format!(
        "mov.u32 %__ccr_r, {};\n\tst.global.u32 [%__ccr_rec+8], %__ccr_r;",
        RaceEventKind::ExitedBarrier.code()
    )));
    assert!(!r.ptx.contains(&format!(
        "mov.u32 %__ccr_r, {};\n\tst.global.u32 [%__ccr_rec+8], %__ccr_r;",
        RaceEventKind::DivergentBarrier.code()
    )));
    // The early return is still recorded for the report.
    assert!(k.sites.iter().any(|s| s.kind == RaceSiteKind::Exit));
}

#[test]
fn barriers_in_branches_or_loops_keep_the_divergence_check() {
    // One barrier in each branch of a conditional.
    let branches = "\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra $L_a;\n\
                    \tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\tbra.uni $L_end;\n\
                    $L_a:\n\tst.shared.f32 [tile+4], %f1;\n\tbar.sync 0;\n$L_end:";
    // A barrier in a loop, then one after it: a thread that leaves the loop early meets
    // the second while others are at the first.
    let looped = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, 0;\n$L_loop:\n\
                  \tst.shared.f32 [tile], %f1;\n\tbar.sync 0;\n\tadd.s32 %r2, %r2, 1;\n\
                  \tsetp.lt.u32 %p1, %r2, %r1;\n\t@%p1 bra $L_loop;\n\
                  \tbar.sync 0;\n\tld.shared.f32 %f2, [tile+4];";
    // A guarded barrier.
    let guarded = "\tsetp.lt.u32 %p1, %r1, 64;\n\tst.shared.f32 [tile], %f1;\n\t@%p1 bar.sync 0;\n\
                   \tld.shared.f32 %f2, [tile+4];";
    for (what, body) in [("branches", branches), ("loop", looped), ("guard", guarded)] {
        let r = race(&kernel("", body));
        assert!(
            folds_into_slots(&r),
            "{what}: no divergence check:\n{}",
            r.ptx
        );
        assert!(
            r.ptx.contains(&format!(
                "mov.u32 %__ccr_r, {};\n\tst.global.u32 [%__ccr_rec+8], %__ccr_r;",
                RaceEventKind::DivergentBarrier.code()
            )),
            "{what}"
        );
    }
}

/// The race rewrite reads each kernel's facts (`ir::Facts`): one graph and one definitions map
/// per kernel, which the address tracer and the barrier intervals share, built by nobody else.
#[test]
fn each_kernel_builds_one_graph_and_one_definitions_map() {
    let body = "\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 2;\n\tmov.u32 %r3, tile;\n\
                \tadd.s32 %r4, %r3, %r2;\n\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n\
                \tld.shared.f32 %f2, [%r4+4];\n\tbar.sync 0;\n\tst.shared.f32 [%r4], %f2;";
    let one = kernel("", body);
    // The same kernel twice, under two names.
    let entry = one.find(".visible .entry").unwrap();
    let two = format!("{one}{}", one[entry..].replace(".entry k(", ".entry k2("));
    let defs = || crate::ir::loops::DEFINITIONS_BUILT.with(std::cell::Cell::get);
    let cfgs = || crate::ir::cfg::CFGS_BUILT.with(std::cell::Cell::get);
    let (d0, c0) = (defs(), cfgs());
    let r = race(&two);
    assert_eq!(r.kernels.len(), 2);
    // Both kernels are planned through the tracer (the array is found) and the intervals.
    assert!(r
        .kernels
        .iter()
        .all(|k| k.coverage.checked == 3 && k.coverage.barriers == 2));
    assert!(r
        .kernels
        .iter()
        .all(|k| k.sites.iter().any(|s| s.array.as_deref() == Some("tile"))));
    assert_eq!(defs() - d0, 2, "one definitions map per kernel");
    assert_eq!(cfgs() - c0, 2, "one graph per kernel");
}

/// A tree step `if (t <= last) s[t] += s[t + 128]` after `s[t] = ...` and a barrier, in the
/// form NVRTC writes it (64-bit addresses from `mul.wide` of `%tid.x`).
fn tree_step(last: u32) -> String {
    kernel(
        "",
        &format!(
            "\tmov.u32 %r1, %tid.x;\n\tmul.wide.s32 %rd1, %r1, 4;\n\tmov.u64 %rd2, tile;\n\
             \tadd.s64 %rd3, %rd2, %rd1;\n\tst.shared.f32 [%rd3], %f1;\n\tbar.sync 0;\n\
             \tsetp.gt.s32 %p1, %r1, {last};\n\t@%p1 bra $L_done;\n\
             \tld.shared.f32 %f2, [%rd3];\n\tld.shared.f32 %f3, [%rd3+512];\n\
             \tadd.f32 %f4, %f2, %f3;\n\tst.shared.f32 [%rd3], %f4;\n$L_done:\n\tbar.sync 0;"
        ),
    )
}

fn proofs(k: &RaceKernel) -> Vec<Option<RaceProof>> {
    k.sites
        .iter()
        .filter(|s| s.bytes > 0)
        .map(|s| s.proven)
        .collect()
}

#[test]
fn tree_step_accesses_are_thread_private_for_a_one_row_block() {
    let ptx = tree_step(127);
    let r = race_ptx(&ptx, &RaceOptions::new(0).block([256, 1, 1])).unwrap();
    let k = &r.kernels[0];
    assert_eq!(
        proofs(k),
        [Some(RaceProof::ThreadPrivate); 4],
        "{:?}",
        k.sites
    );
    assert_eq!((k.coverage.proven, k.coverage.thread_private), (4, 4));
    assert_eq!(k.shadow_records, 1);
    assert!(
        !r.ptx.contains("atom.shared.exch.b64"),
        "a write is still checked"
    );
    // Without the launch's block, nothing is proven by the indices: the writes keep their
    // checks, and the reads too (the interval has a write of `tile`).
    let k = race(&ptx).kernels.remove(0);
    assert_eq!(proofs(&k), [None; 4]);
}

#[test]
fn a_tree_step_whose_guard_lets_a_reader_meet_a_writer_keeps_its_checks() {
    // `t <= 128`: thread 0 reads s[128], which thread 128 writes in the same interval.
    let r = race_ptx(&tree_step(128), &RaceOptions::new(0).block([256, 1, 1])).unwrap();
    let k = &r.kernels[0];
    // The first write (alone in its interval) and the read of s[t] (only its own thread
    // writes s[t]) are private; the racing read of s[t + 128] and the write of s[t] are not.
    assert_eq!(
        proofs(k),
        [
            Some(RaceProof::ThreadPrivate),
            Some(RaceProof::ThreadPrivate),
            None,
            None
        ],
        "{:?}",
        k.sites
    );
}

#[test]
fn an_index_in_tid_x_is_not_private_in_a_block_of_two_rows() {
    let r = race_ptx(&tree_step(127), &RaceOptions::new(0).block([128, 2, 1])).unwrap();
    let k = &r.kernels[0];
    // Both rows write s[t]; the read of s[t + 128] meets no write of either row.
    assert_eq!(
        proofs(k),
        [None, None, Some(RaceProof::ThreadPrivate), None],
        "{:?}",
        k.sites
    );
}

/// `for (c = t; c < n; c += step) s[c] = s[c] * 2` with `step` from `%ntid.x` or not.
fn stride_loop(step: &str) -> String {
    kernel(
        "",
        &format!(
            "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, {step};\n\tmov.u64 %rd2, tile;\n\
             \tmov.u32 %r3, %r1;\n$L_loop:\n\tmul.wide.s32 %rd1, %r3, 4;\n\
             \tadd.s64 %rd3, %rd2, %rd1;\n\tld.shared.f32 %f1, [%rd3];\n\
             \tadd.f32 %f2, %f1, %f1;\n\tst.shared.f32 [%rd3], %f2;\n\
             \tadd.s32 %r3, %r3, %r2;\n\tsetp.lt.s32 %p1, %r3, 256;\n\t@%p1 bra $L_loop;"
        ),
    )
}

#[test]
fn block_stride_loops_are_private_only_when_stepped_by_a_power_of_two_block() {
    let opts = |x| RaceOptions::new(0).block([x, 1, 1]);
    let k = race_ptx(&stride_loop("%ntid.x"), &opts(64))
        .unwrap()
        .kernels
        .remove(0);
    assert_eq!(proofs(&k), [Some(RaceProof::ThreadPrivate); 2]);
    // 96 does not divide 2^32: `t + 96 n` wraps onto other threads' residues.
    let k = race_ptx(&stride_loop("%ntid.x"), &opts(96))
        .unwrap()
        .kernels
        .remove(0);
    assert_eq!(proofs(&k), [None; 2]);
    // A step that is not the block's width.
    let k = race_ptx(&stride_loop("32"), &opts(64))
        .unwrap()
        .kernels
        .remove(0);
    assert_eq!(proofs(&k), [None; 2]);
}
