//! The one rewrite of NVRTC's PTX before it is instrumented: every edit the normalizing passes
//! want, from one parse, applied once.
//!
//! - [`super::contract`]: contraction-candidate multiplies moved next to their adds, so that
//!   checks do not change `ptxas`'s floating-point contraction;
//! - [`super::reduce`]: atomics whose result nothing reads written as reductions, as NVRTC's
//!   own assembler compiles them.
//!
//! Both keep the program's meaning (their module docs say why); the instrumenter then
//! analyses and checks the normalized text, and the plain build is unchanged.

use super::ptx::parse;
use super::{contract, reduce};
use crate::ir::edit::Edits;

/// `text` normalized for instrumenting (see the module docs). Text that does not parse is
/// returned unchanged (the instrumenter reports the error).
pub(crate) fn normalize(text: &str) -> String {
    let Ok(m) = parse(text) else {
        return text.to_string();
    };
    let mut moves = Vec::new();
    let mut edits = Edits::new();
    for f in &m.functions {
        moves.extend(contract::moves(f));
        for (span, with) in reduce::reductions(f) {
            edits.replace(span, with);
        }
    }
    if moves.is_empty() && edits.is_empty() {
        return text.to_string();
    }
    // Lines moved to one place keep their order.
    moves.sort_by_key(|(span, at)| (*at, span.start));
    for (span, at) in &moves {
        edits.insert(*at, format!("{}\n\t", &text[span.clone()]));
    }
    for (span, _) in moves {
        edits.remove(span);
    }
    edits.apply(text)
}
