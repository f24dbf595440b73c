//! A fast copy of a checked kernel whose failed checks leave it for good.
//!
//! # Why
//! A check's cold block records the fault and jumps back after the skipped access
//! (`$__cc_contN`), and a failed group check's exact copy jumps back after the group
//! (`$__cc_joinN`). Each way back is a control-flow merge in the middle of the user's code, and
//! `ptxas` allocates registers and schedules across those small blocks: on `nbody_accel` it
//! stopped pipelining the sixteen loads of the unrolled loop (79 registers and loads issued
//! ahead in the plain build, 72 and one load at a time checked; `results/instrument_cost.md`).
//! The same checks as *side exits*, branches that never come back, leave the plain schedule.
//!
//! # The transformation
//! The function body after the prologue is emitted twice:
//! - the **fast copy** runs first: the user's code with its checks, where a failed check jumps
//!   into the slow copy instead of to a cold block that comes back: to the slow copy's cold
//!   block of the same access (which records the fault with the offset the fast copy's check
//!   computed, gives a read 0 and continues in the slow copy), or to the slow copy's exact copy
//!   of the same group. A global atomic's failed check jumps only after the atomic, which ran on
//!   the module's sink (`emit.rs`), and the slow copy goes on after its copy of the atomic, so
//!   the atomic runs once either way;
//! - the **slow copy** is the checked code as it was, every label renamed (`L` to `L__s`).
//!
//! Both copies are the same instructions on the same registers (checks write only `%__cc_*`
//! temporaries), so at a jump from the fast copy the slow copy finds the state it would have
//! had, and behaves exactly as the checked build without this transformation: every access
//! checked, a bad one recorded and skipped, execution going on. A thread that never fails a
//! check never leaves the fast copy.
//!
//! # Where it is sound, and where it is used
//! Threads of one warp or block may run in different copies. That is harmless unless an
//! instruction needs its peers at the *same* instruction: barriers (`bar`, `barrier`), the
//! `.sync`/`.aligned` warp collectives, `mbarrier` and cluster barriers, and calls (a callee
//! may hold any of those). Functions with any of them, with local-memory accesses (measured:
//! a split `window_median` ran 6x slower), or with indirect branch tables, keep
//! the single checked body, as do functions with a label not starting with `$` (hand-written
//! inline assembly), whose name the slow copy's renaming could confuse with a variable. Checks inside nested scopes (`{ }`) have their cold paths inline;
//! the fast copy keeps those as they are (they come back, within the fast copy). The copy
//! doubles the code `ptxas` compiles, so it is only made where the merges cost most: functions
//! with a loop (a branch back to an earlier label).

use std::collections::BTreeSet;

use super::ptx::{Function, StmtKind};

/// Marks the start of the code to copy (after the prologue).
pub(crate) const BEGIN: &str = "// __cc_fast_begin\n";
/// Marks the end of the user's code and the start of the cold section.
pub(crate) const COLD: &str = "// __cc_fast_cold\n";
/// Marks the end of the cold section.
pub(crate) const END: &str = "// __cc_fast_end\n";

/// Whether `f`'s checked body may be split into a fast and a slow copy (see the module docs).
pub(crate) fn applies(f: &Function) -> bool {
    let mut labels_seen: BTreeSet<&str> = BTreeSet::new();
    let mut has_loop = false;
    for s in &f.stmts {
        match &s.kind {
            StmtKind::Label(l) => {
                // The slow copy renames labels as words: only `$` labels (NVVM's, and ours)
                // cannot also name a variable.
                if !l.starts_with('$') {
                    return false;
                }
                labels_seen.insert(l.as_str());
            }
            StmtKind::Open | StmtKind::Close => {}
            StmtKind::Directive(d) => {
                if d.contains(".branchtargets") || d.contains(".calltargets") {
                    return false;
                }
            }
            StmtKind::Instr(i) => {
                let op = i.op();
                let collective = matches!(op, "bar" | "barrier" | "mbarrier" | "call" | "brx")
                    || i.parts().any(|p| p == "sync" || p == "aligned")
                    || op.starts_with("barrier")
                    || op == "elect";
                // Local arrays: `window_median` (a per-thread array sorted in place) ran 6.0x
                // slower split than checked in one body on the H100 (1.0x); kept whole.
                let local = i.parts().any(|p| p == "local");
                if collective || local {
                    return false;
                }
                if op == "bra" {
                    let target = i.operands.first().map(String::as_str).unwrap_or("");
                    if labels_seen.contains(target.trim_end_matches(';')) {
                        has_loop = true;
                    }
                }
            }
            StmtKind::Loc(_) => {}
        }
    }
    has_loop
}

/// Applies the transformation to every function marked with [`BEGIN`], [`COLD`] and [`END`]
/// in `text` (and removes the markers).
pub(crate) fn split(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut rest = text;
    while let Some(b) = rest.find(BEGIN) {
        let after_b = &rest[b + BEGIN.len()..];
        let (Some(c), Some(e)) = (after_b.find(COLD), after_b.find(END)) else {
            break;
        };
        if e < c {
            break;
        }
        out.push_str(&rest[..b]);
        let main = &after_b[..c];
        let cold = &after_b[c + COLD.len()..e];
        out.push_str(&copies(main, cold));
        rest = &after_b[e + END.len()..];
    }
    out.push_str(rest);
    out
}

/// The label a line defines, if it is a label line (`$L__BB0_3:`).
fn label_def(line: &str) -> Option<&str> {
    let t = line.trim();
    let name = t.strip_suffix(':')?;
    (!name.is_empty() && name.chars().all(is_ident_char)).then_some(name)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

/// `text` with every whole-word occurrence of a name in `names` given the suffix `__s`.
fn rename(text: &str, names: &BTreeSet<&str>) -> String {
    rename_with(text, names, "__s")
}

/// `text` with every whole-word occurrence of a name in `names` given `suffix`.
pub(crate) fn rename_with(text: &str, names: &BTreeSet<&str>, suffix: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(word);
        if names.contains(word.as_str()) {
            out.push_str(suffix);
        }
        word.clear();
    };
    for ch in text.chars() {
        if is_ident_char(ch) {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The fast copy of `main`, then the slow copy of `main` and `cold`.
fn copies(main: &str, cold: &str) -> String {
    let mut labels: BTreeSet<&str> = BTreeSet::new();
    let mut cold_labels: BTreeSet<&str> = BTreeSet::new();
    for l in main.lines() {
        labels.extend(label_def(l));
    }
    for l in cold.lines() {
        if let Some(n) = label_def(l) {
            labels.insert(n);
            cold_labels.insert(n);
        }
    }
    // The fast copy: branches into the cold section go to the slow copy's.
    let mut fast = String::with_capacity(main.len());
    for line in main.lines() {
        let target = line
            .trim()
            .strip_prefix("@%__cc_p bra ")
            .map(|t| t.trim_end_matches(';').trim());
        if target.is_some_and(|t| cold_labels.contains(t)) {
            let t = line.trim_end().trim_end_matches(';');
            fast.push_str(t);
            fast.push_str("__s;\n");
        } else {
            fast.push_str(line);
            fast.push('\n');
        }
    }
    // Labels of the fast copy that nothing in it reaches any more (the ways back) go: a label
    // is a block boundary to ptxas.
    let mut used: BTreeSet<String> = BTreeSet::new();
    for line in fast.lines().filter(|l| label_def(l).is_none()) {
        let mut word = String::new();
        for ch in line.chars().chain(std::iter::once(' ')) {
            if is_ident_char(ch) {
                word.push(ch);
            } else if !word.is_empty() {
                used.insert(std::mem::take(&mut word));
            }
        }
    }
    let fast: String = fast
        .lines()
        .filter(|l| label_def(l).map_or(true, |n| used.contains(n)))
        .flat_map(|l| [l, "\n"])
        .collect();
    let mut out = fast;
    out.push_str("\t// ---- cudacheck: the slow copy, entered only from a failed check ----\n");
    out.push_str(&rename(main, &labels));
    out.push_str(&rename(cold, &labels));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(body: &str) -> Function {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .pred %p<2>;\n{body}\n\tret;\n}}\n"
        );
        let m = super::super::ptx::parse(&text).unwrap();
        m.functions.into_iter().next().unwrap()
    }

    #[test]
    fn only_loops_without_collectives_and_with_dollar_labels_are_split() {
        let looped = "$L__BB0_1:\n\tadd.s32 %r1, %r1, 1;\n\t@%p1 bra $L__BB0_1;";
        assert!(applies(&function(looped)));
        assert!(!applies(&function("\tadd.s32 %r1, %r1, 1;")), "no loop");
        let barrier = format!("{looped}\n\tbar.sync 0;");
        assert!(!applies(&function(&barrier)), "a barrier");
        let shfl = format!("{looped}\n\tshfl.sync.down.b32 %r2, %r1, 1, 31, -1;");
        assert!(!applies(&function(&shfl)), "a warp collective");
        let local = format!("{looped}\n\tst.local.f32 [%rd1], %f1;");
        assert!(!applies(&function(&local)), "local memory");
        let own = "LOOP:\n\tadd.s32 %r1, %r1, 1;\n\t@%p1 bra LOOP;";
        assert!(!applies(&function(own)), "a hand-written label");
    }

    #[test]
    fn labels_and_renaming_are_whole_words() {
        assert_eq!(label_def("$L__BB0_3:"), Some("$L__BB0_3"));
        assert_eq!(label_def("\tld.global.f32 %f1, [%rd1];"), None);
        let names: BTreeSet<&str> = ["$L__BB0_3", "$__cc_cold1"].into_iter().collect();
        assert_eq!(
            rename("@%p bra $L__BB0_3;\n$L__BB0_30:\nbra $__cc_cold1;", &names),
            "@%p bra $L__BB0_3__s;\n$L__BB0_30:\nbra $__cc_cold1__s;"
        );
    }

    #[test]
    fn the_fast_copy_leaves_for_the_slow_copy_and_never_comes_back() {
        let main = "$L__BB0_1:\n\tsetp.ge.u64 %__cc_p, %__cc_o, 5;\n\t@%__cc_p bra $__cc_cold0;\n\tld.global.f32 %f1, [%rd1];\n$__cc_cont0:\n\t@%p1 bra $L__BB0_1;\n\tret;\n";
        let cold = "\n$__cc_cold0:\n\tmov.b32 %f1, 0;\n\tbra $__cc_cont0;\n";
        let out = copies(main, cold);
        let (fast, slow) = out.split_once("the slow copy").unwrap();
        assert!(fast.contains("@%__cc_p bra $__cc_cold0__s;"), "{fast}");
        assert!(
            !fast.contains("$__cc_cont0:"),
            "the way back is gone: {fast}"
        );
        assert!(
            fast.contains("$L__BB0_1:") && fast.contains("bra $L__BB0_1;"),
            "{fast}"
        );
        assert!(slow.contains("$__cc_cold0__s:") && slow.contains("bra $__cc_cont0__s;"));
        assert!(slow.contains("$__cc_cont0__s:") && slow.contains("bra $L__BB0_1__s;"));
        assert!(!slow.contains("$__cc_cold0;"), "{slow}");
    }

    #[test]
    fn split_handles_every_marked_function_and_leaves_the_rest() {
        let text = format!(
            "A\n{BEGIN}$L1:\n\t@%__cc_p bra $__cc_cold0;\n\tbra $L1;\n{COLD}$__cc_cold0:\n\tbra $L1;\n{END}}}\nB\n"
        );
        let out = split(&text);
        assert!(out.starts_with("A\n") && out.ends_with("}\nB\n"), "{out}");
        assert!(!out.contains("__cc_fast"), "markers removed: {out}");
        assert_eq!(out.matches("$L1__s:").count(), 1, "{out}");
        assert_eq!(split("no markers"), "no markers");
    }
}
