//! The human-readable report of `cudacheck check`.

use std::fmt::Write;

use cudacheck_core::limits::ArchLimits;

use crate::check::{KernelReport, Report};

/// The report as a person reads it: a block per kernel, then one summary line.
pub fn text(report: &Report, limits: &ArchLimits) -> String {
    let mut out = String::new();
    let cfg = match &report.config {
        Some(c) => format!(
            ", checking grid {} block {} with {} B dynamic shared memory",
            c.grid, c.block, c.dynamic_shared_bytes
        ),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "cudacheck: checking {} file(s) for {} (NVRTC {}){cfg}",
        report.files.len(),
        report.arch,
        report.nvrtc
    );
    for file in &report.files {
        let _ = writeln!(out, "\n{}", file.path.display());
        if let Some(err) = &file.error {
            for line in err.lines() {
                let _ = writeln!(out, "  {line}");
            }
            continue;
        }
        if let Some(note) = &file.note {
            let _ = writeln!(out, "  {note}");
        }
        for k in &file.kernels {
            kernel(&mut out, k, limits);
        }
    }
    let _ = writeln!(
        out,
        "\nsummary: {} kernel(s) in {} file(s) checked for {}: {} with violations, {} file(s) with errors",
        report.kernels_checked,
        report.files.len(),
        report.arch,
        report.kernels_with_violations,
        report.files_with_errors
    );
    out
}

fn kernel(out: &mut String, k: &KernelReport, limits: &ArchLimits) {
    let r = &k.resources;
    let _ = writeln!(out, "  kernel `{}`", k.name);
    if k.name != r.symbol {
        let _ = writeln!(out, "    symbol           {}", r.symbol);
    }
    let _ = writeln!(out, "    registers        {} per thread", r.registers);
    let _ = writeln!(out, "    shared (static)  {} B", r.static_shared_bytes);
    let _ = writeln!(
        out,
        "    local            {} B stack frame, {} B spill stores, {} B spill loads",
        r.local_bytes, r.spill_store_bytes, r.spill_load_bytes
    );
    let _ = writeln!(
        out,
        "    parameters       {} B in {} parameter(s)",
        r.param_bytes,
        r.params.len()
    );
    if let Some(n) = r.max_threads_per_block {
        let min = r
            .min_blocks_per_sm
            .map(|m| format!(", min {m} blocks/SM"))
            .unwrap_or_default();
        let _ = writeln!(out, "    launch bounds    {n} threads{min}");
    }
    if let Some(b) = r.required_block {
        let _ = writeln!(out, "    required block   {b}");
    }
    let why = if k.max_threads_per_block < k.max_threads_by_registers {
        "its launch bounds".to_string()
    } else if k.max_threads_by_registers < limits.max_threads_per_block {
        format!("its {} registers per thread", r.registers)
    } else {
        format!("the {} limit", limits.origin)
    };
    let _ = writeln!(
        out,
        "    max block        {} threads (set by {why})",
        k.max_threads_per_block
    );
    let o = &k.occupancy;
    let _ = writeln!(
        out,
        "    occupancy        {:.0}% at block {}: {} block(s)/SM, {}/{} warps, limited by {}",
        o.ratio() * 100.0,
        k.occupancy_block,
        o.blocks_per_sm,
        o.active_warps_per_sm,
        o.max_warps_per_sm,
        o.limiter
    );
    if k.violations.is_empty() {
        let _ = writeln!(out, "    ok");
    }
    for v in &k.violations {
        let _ = writeln!(out, "    error: {v}");
    }
}
