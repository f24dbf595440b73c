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

use std::ops::Range;

use super::ptx::parse;
use super::{contract, reduce};

/// `text` normalized for instrumenting (see the module docs). Text that does not parse is
/// returned unchanged (the instrumenter reports the error).
pub(crate) fn normalize(text: &str) -> String {
    let Ok(m) = parse(text) else {
        return text.to_string();
    };
    // (byte offset, order among insertions at one offset, text) and removed spans. A
    // replacement is its span removed and its text inserted where the span started.
    let mut inserts: Vec<(usize, usize, String)> = Vec::new();
    let mut removed: Vec<Range<usize>> = Vec::new();
    for f in &m.functions {
        for (span, at) in contract::moves(f) {
            inserts.push((at, span.start, format!("{}\n\t", &text[span.clone()])));
            removed.push(span);
        }
        for (span, with) in reduce::reductions(f) {
            inserts.push((span.start, span.start, with));
            removed.push(span);
        }
    }
    if removed.is_empty() {
        return text.to_string();
    }
    inserts.sort_by_key(|(at, order, _)| (*at, *order));
    removed.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len() + 64);
    let mut pos = 0;
    let mut ins = inserts.iter().peekable();
    let mut rem = removed.iter().peekable();
    loop {
        let next_ins = ins.peek().map(|(at, _, _)| *at);
        let next_rem = rem.peek().map(|r| r.start);
        match (next_ins, next_rem) {
            (None, None) => break,
            (Some(a), r) if r.map_or(true, |r| a <= r) => {
                out.push_str(&text[pos..a]);
                pos = a;
                out.push_str(&ins.next().expect("peeked").2);
            }
            (_, Some(_)) => {
                let r = rem.next().expect("peeked");
                out.push_str(&text[pos..r.start]);
                pos = r.end;
            }
            (Some(_), None) => unreachable!("handled above"),
        }
    }
    out.push_str(&text[pos..]);
    out
}
