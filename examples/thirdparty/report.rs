//! The reports: a line per kernel while the run goes, then a JSON file and a markdown file
//! (any other name gets markdown) with the differential table, the planted bugs with what each
//! fault said, and the totals.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cudacheck::core::Arch;
use serde::Serialize;

use crate::dry::DryResult;
use crate::run::CaseResult;

/// Where the sources came from, and the run's settings.
#[derive(Debug, Serialize)]
pub struct Meta {
    pub date: String,
    pub candle: String,
    pub candle_commit: String,
    pub mistral: String,
    pub mistral_commit: String,
    pub seed: String,
    pub jobs: usize,
}

/// The commit of a corpus directory: `.thirdparty-commit` in it or above it (written by
/// `scripts/thirdparty.sh bundle`), else git's answer, else "unknown".
fn commit_of(dir: &Path) -> String {
    for d in dir.ancestors() {
        if let Ok(s) = std::fs::read_to_string(d.join(".thirdparty-commit")) {
            return s.trim().to_string();
        }
    }
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

impl Meta {
    pub fn new(candle: &Path, mistral: Option<&Path>, seed: u64, jobs: usize) -> Meta {
        let date = std::process::Command::new("date")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        Meta {
            date,
            candle: candle.display().to_string(),
            candle_commit: commit_of(candle),
            mistral: mistral.map(|m| m.display().to_string()).unwrap_or_default(),
            mistral_commit: mistral.map(commit_of).unwrap_or_default(),
            seed: format!("{seed:#x}"),
            jobs,
        }
    }
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "ok  "
    } else {
        "FAIL"
    }
}

pub fn progress(r: &CaseResult) {
    let mut line = format!("{} {} ({})", mark(r.passed()), r.kernel, r.file);
    for v in &r.variants {
        line.push_str(&format!(
            "\n     {}: {}",
            v.label,
            v.failure.as_deref().unwrap_or("bit-identical")
        ));
    }
    for b in &r.bugs {
        let verdict = if b.mismatches.is_empty() {
            "named exactly".to_string()
        } else {
            b.mismatches.join("; ")
        };
        line.push_str(&format!(
            "\n     planted {} ({}): {verdict}; next launch {}\n{}",
            b.kind,
            b.what,
            b.after.as_deref().unwrap_or("healthy"),
            indent(&b.got_text)
        ));
    }
    if let Some(f) = &r.failure {
        line.push_str(&format!("\n     {f}"));
    }
    println!("{line}");
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("       | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn progress_dry(r: &DryResult) {
    let what = match &r.failure {
        Some(f) => f.clone(),
        None => format!(
            "{} accesses checked ({} proven), {} unchecked; {}",
            r.checked,
            r.proven,
            r.unchecked.len(),
            r.bug_lines.join(", ")
        ),
    };
    println!("{} {} ({}): {what}", mark(r.passed()), r.kernel, r.file);
    for u in &r.unchecked {
        println!("     unchecked: {u}");
    }
}

/// `|` and line breaks would end a markdown cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn write_all(outputs: &[PathBuf], json: &serde_json::Value, md: &str) -> bool {
    let mut ok = true;
    for p in outputs {
        let text = if p.extension().is_some_and(|e| e == "json") {
            serde_json::to_string_pretty(json).unwrap_or_default()
        } else {
            md.to_string()
        };
        if let Err(e) = std::fs::write(p, text) {
            eprintln!("thirdparty: {}: {e}", p.display());
            ok = false;
        }
    }
    ok
}

fn header(meta: &Meta, what: &str) -> String {
    let mut s = format!(
        "Third-party kernels, {what}, {}: candle @ {} (`{}`)",
        meta.date, meta.candle_commit, meta.candle
    );
    if !meta.mistral.is_empty() {
        s.push_str(&format!(
            ", mistral.rs @ {} (`{}`)",
            meta.mistral_commit, meta.mistral
        ));
    }
    s.push_str(&format!(", seed {}, {} jobs.\n\n", meta.seed, meta.jobs));
    s
}

/// Writes the GPU run's reports; true when every kernel passed.
pub fn write_gpu(
    outputs: &[PathBuf],
    meta: &Meta,
    device: &str,
    poisoned: bool,
    results: &[CaseResult],
    took: Duration,
) -> bool {
    let passed = results.iter().filter(|r| r.passed()).count();
    let bugs: Vec<_> = results
        .iter()
        .flat_map(|r| r.bugs.iter().map(move |b| (r, b)))
        .collect();
    let bugs_ok = bugs
        .iter()
        .filter(|(_, b)| b.mismatches.is_empty() && b.after.is_none())
        .count();
    let launches: usize = results.iter().map(|r| r.variants.len()).sum();
    let identical = results
        .iter()
        .flat_map(|r| &r.variants)
        .filter(|v| v.identical)
        .count();
    let mut md = header(meta, &format!("on {device}"));
    md.push_str(&format!(
        "{passed} of {} kernels passed; {identical} of {launches} healthy launches bit-identical \
         plain vs bounds-checked; {bugs_ok} of {} planted bugs named exactly with the next \
         launch healthy; context poisoned at the end: {poisoned}; {:.1} s.\n\n",
        results.len(),
        bugs.len(),
        took.as_secs_f64()
    ));
    let refusals: Vec<_> = results
        .iter()
        .flat_map(|r| r.refusals.iter().map(move |x| (r, x)))
        .collect();
    if !refusals.is_empty() {
        let typed = refusals
            .iter()
            .filter(|(_, (_, why))| why.is_none())
            .count();
        md.push_str(&format!(
            "Bad configurations (PTX mode): {typed} of {} refused as `InvalidConfig` before the \
             driver saw them (a block of 2048 threads and 1 MiB of dynamic shared memory, from \
             PTX and through raw cudarc's load).\n\n",
            refusals.len()
        ));
        for (r, (what, why)) in refusals.iter().filter(|(_, (_, why))| why.is_some()) {
            md.push_str(&format!(
                "- `{}` {what}: {}\n",
                r.kernel,
                why.as_deref().unwrap_or("")
            ));
        }
    }
    md.push_str(
        "| kernel | file | style | launches (plain vs checked) | bit-identical | first plain / checked launch (ms) |\n\
         |---|---|---|---|---|---:|\n",
    );
    for r in results {
        let labels: Vec<String> = r
            .variants
            .iter()
            .map(|v| match &v.failure {
                None => v.label.clone(),
                Some(f) => format!("{}: **{}**", v.label, f),
            })
            .collect();
        let identical = !r.variants.is_empty()
            && r.variants
                .iter()
                .all(|v| v.identical && v.failure.is_none());
        let first = r.variants.first();
        md.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {:.0} / {:.0} |\n",
            r.kernel,
            r.file,
            r.style,
            cell(&match &r.failure {
                Some(f) => format!("**{f}**"),
                None => labels.join("; "),
            }),
            if identical { "yes" } else { "**no**" },
            first.map_or(0.0, |v| v.plain_ms),
            first.map_or(0.0, |v| v.checked_ms),
        ));
    }
    md.push_str(
        "\n| kernel | planted bug | expected | the fault said | matched | next launch |\n\
         |---|---|---|---|---|---|\n",
    );
    for (r, b) in &bugs {
        let said = format!(
            "{} {} by thread {:?} of block {:?} at {} ({} in all)",
            b.got_variant, b.got_what, b.got_thread, b.got_block, b.got_at, b.got_count
        );
        md.push_str(&format!(
            "| `{}` | {}: {} | {} | {} | {} | {} |\n",
            r.kernel,
            b.kind,
            cell(&b.what),
            cell(&b.expected),
            cell(&said),
            if b.mismatches.is_empty() {
                "yes".to_string()
            } else {
                format!("**no**: {}", cell(&b.mismatches.join("; ")))
            },
            cell(b.after.as_deref().unwrap_or("healthy, same output")),
        ));
    }
    md.push_str("\nThe faults as printed:\n\n```text\n");
    for (r, b) in &bugs {
        md.push_str(&format!("{} ({}):\n{}\n\n", r.kernel, b.kind, b.got_text));
    }
    md.push_str("```\n");
    print!("\n{md}");
    let json = serde_json::json!({
        "meta": meta,
        "device": device,
        "context_poisoned_at_end": poisoned,
        "seconds": took.as_secs_f64(),
        "kernels": results.len(),
        "kernels_passed": passed,
        "planted_bugs": bugs.len(),
        "planted_bugs_named": bugs_ok,
        "results": results,
    });
    let written = write_all(outputs, &json, &md);
    written && passed == results.len() && !poisoned
}

/// Writes the dry run's reports; true when every kernel built both ways with every access
/// checked and every planted bug's line found.
pub fn write_dry(
    outputs: &[PathBuf],
    meta: &Meta,
    arch: Arch,
    results: &[DryResult],
    took: Duration,
) -> bool {
    let passed = results.iter().filter(|r| r.passed()).count();
    let mut md = header(meta, &format!("dry run (no GPU) for {}", arch.sm_name()));
    md.push_str(&format!(
        "{passed} of {} kernels built plain and bounds-checked (NVRTC, the PTX rewrite, \
         nvJitLink) with every access checked; {:.1} s.\n\n\
         | kernel | file | style | checked (proven) | unchecked | planted bugs' lines | build (ms, plain / checked) |\n\
         |---|---|---|---:|---|---|---:|\n",
        results.len(),
        took.as_secs_f64()
    ));
    for r in results {
        let unchecked = match &r.failure {
            Some(f) => format!("**{f}**"),
            None if r.unchecked.is_empty() => "none".into(),
            None => format!("**{}**", r.unchecked.join("; ")),
        };
        md.push_str(&format!(
            "| `{}` | {} | {} | {} ({}) | {} | {} | {:.0} / {:.0} |\n",
            r.kernel,
            r.file,
            r.style,
            r.checked,
            r.proven,
            cell(&unchecked),
            cell(&r.bug_lines.join("; ")),
            r.plain_ms,
            r.checked_ms
        ));
    }
    print!("\n{md}");
    let json = serde_json::json!({
        "meta": meta,
        "arch": arch.sm_name(),
        "seconds": took.as_secs_f64(),
        "kernels": results.len(),
        "kernels_passed": passed,
        "results": results,
    });
    write_all(outputs, &json, &md) && passed == results.len()
}
