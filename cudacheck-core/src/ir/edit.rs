//! Edits to a text, and the one place they are applied.
//!
//! Every rewrite of PTX in this crate is a list of [`Edits`] against the text it read: the
//! normalizing pre-pass (`instrument::normalize`), the bounds-checking and race-checking
//! rewrites, the copies of a function's body or of a loop that the instrumenter makes
//! (`instrument::fast`, `instrument::version`: a copy is the same edits applied to the same
//! range, its labels renamed through [`relabel`]), and the module subset a launch assembles
//! ([`crate::ptx_subset`]). An edit names the bytes it replaces by their span in the text that
//! was read, so nothing is searched for in rewritten text and nothing is marked in-band.
//!
//! ```
//! use cudacheck_core::ir::edit::Edits;
//!
//! let text = "ld.global.f32 %f1, [%rd1];\nret;";
//! let mut e = Edits::new();
//! e.insert(0, "// check\n");
//! e.replace(14..17, "%f2");
//! e.insert(26, "\n// after");
//! assert_eq!(e.apply(text), "// check\nld.global.f32 %f2, [%rd1];\n// after\nret;");
//! ```

use std::ops::Range;

use super::opcode::{effects, Flow};
use super::read::{Stmt, StmtKind};

/// Insertions and replacements by byte span in one text.
///
/// They are applied in the order of their spans' starts; edits with one start in the order
/// they were added (so code inserted before an instruction and the instruction's replacement,
/// both at its start, come out in that order). An edit that starts inside a span an earlier
/// edit replaced is dropped: the text it edits is gone. An insertion at the end of a replaced
/// span comes after the replacement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edits {
    items: Vec<(Range<usize>, String)>,
}

impl Edits {
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `text` at byte `at`.
    pub fn insert(&mut self, at: usize, text: impl Into<String>) {
        self.items.push((at..at, text.into()));
    }

    /// Replaces the bytes `span` by `text`.
    pub fn replace(&mut self, span: Range<usize>, text: impl Into<String>) {
        self.items.push((span, text.into()));
    }

    /// Removes the bytes `span`.
    pub fn remove(&mut self, span: Range<usize>) {
        self.replace(span, String::new());
    }

    /// Adds `other`'s edits after this list's.
    pub fn append(&mut self, other: Edits) {
        self.items.extend(other.items);
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `text` with every edit applied.
    pub fn apply(&self, text: &str) -> String {
        self.render(text, 0..text.len())
    }

    /// The bytes `range` of `text` with the edits inside it applied: those whose span lies in
    /// `range`, an insertion at its end included.
    pub fn render(&self, text: &str, range: Range<usize>) -> String {
        let mut order: Vec<&(Range<usize>, String)> = self
            .items
            .iter()
            .filter(|(s, _)| s.start >= range.start && s.end <= range.end && s.start <= s.end)
            .collect();
        // Stable: one start keeps the order of addition.
        order.sort_by_key(|(s, _)| s.start);
        let added: usize = order.iter().map(|(_, t)| t.len()).sum();
        let mut out = String::with_capacity(range.len() + added);
        let mut cursor = range.start;
        for (span, with) in order {
            if span.start < cursor {
                continue;
            }
            out.push_str(&text[cursor..span.start]);
            out.push_str(with);
            cursor = span.end;
        }
        out.push_str(&text[cursor..range.end]);
        out
    }
}

/// Edits renaming labels: the name of every label statement of `stmts` (read from `text`)
/// and the target of every branch among them that `rename` maps to a new name. A branch's
/// target is its last operand (the opcode table's [`Flow::Branch`]), the last word of its
/// span.
pub fn relabel(
    text: &str,
    stmts: &[Stmt],
    rename: impl Fn(&str) -> Option<String>,
    edits: &mut Edits,
) {
    for s in stmts {
        match &s.kind {
            StmtKind::Label(l) => {
                if let Some(new) = rename(l) {
                    edits.replace(s.span.start..s.span.start + l.len(), new);
                }
            }
            StmtKind::Instr(i) => {
                let Flow::Branch(target) = effects(i).flow else {
                    continue;
                };
                let Some(new) = rename(target) else { continue };
                if let Some(at) = text[s.span.clone()].rfind(target) {
                    let start = s.span.start + at;
                    edits.replace(start..start + target.len(), new);
                }
            }
            _ => {}
        }
    }
}

/// The labels `stmts` define.
pub fn labels(stmts: &[Stmt]) -> std::collections::BTreeSet<String> {
    stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Label(l) => Some(l.clone()),
            _ => None,
        })
        .collect()
}

/// The targets of the branches among `stmts`.
pub fn branch_targets(stmts: &[Stmt]) -> impl Iterator<Item = &str> {
    stmts.iter().filter_map(|s| match &s.kind {
        StmtKind::Instr(i) => match effects(i).flow {
            Flow::Branch(t) => Some(t),
            _ => None,
        },
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::read::statements;

    #[test]
    fn edits_apply_in_span_order_and_insertion_order_at_one_start() {
        let text = "abcdef";
        let mut e = Edits::new();
        e.insert(3, "2");
        e.insert(0, "<");
        e.insert(3, "3");
        e.replace(3..4, "D");
        e.insert(4, "|");
        e.insert(6, ">");
        assert_eq!(e.apply(text), "<abc23D|ef>");
    }

    #[test]
    fn an_edit_inside_a_replaced_span_is_dropped() {
        let mut e = Edits::new();
        e.replace(1..5, "X");
        e.insert(2, "lost");
        e.replace(3..4, "lost");
        e.insert(5, "kept");
        assert_eq!(e.apply("abcdefg"), "aXkeptfg");
    }

    #[test]
    fn render_applies_the_edits_of_its_range_only() {
        let mut e = Edits::new();
        e.insert(0, "[");
        e.replace(2..3, "C");
        e.insert(4, "]");
        e.insert(5, "!");
        assert_eq!(e.render("abcdef", 1..4), "bCd]");
        assert_eq!(e.render("abcdef", 0..6), "[abCd]e!f");
        assert_eq!(Edits::new().render("abcdef", 2..5), "cde");
    }

    #[test]
    fn labels_and_branch_targets_are_renamed_and_nothing_else() {
        let text = "$L1:\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 8;\n\t@%p1 bra $L1;\n\tbra.uni L2;\nL2:\n\tmov.u32 %r2, L2_x;\n";
        let stmts = statements(text).expect("reads");
        let mut e = Edits::new();
        relabel(
            text,
            &stmts,
            |l| (l == "$L1" || l == "L2").then(|| format!("{l}__s")),
            &mut e,
        );
        assert_eq!(
            e.apply(text),
            "$L1__s:\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 8;\n\t@%p1 bra $L1__s;\n\tbra.uni L2__s;\nL2__s:\n\tmov.u32 %r2, L2_x;\n"
        );
        let targets: Vec<&str> = branch_targets(&stmts).collect();
        assert_eq!(targets, ["$L1", "L2"]);
        assert_eq!(
            labels(&stmts).into_iter().collect::<Vec<_>>(),
            ["$L1", "L2"]
        );
    }
}
