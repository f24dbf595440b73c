//! The CUDA text injected at the top of every instrumented source: the fault record, the
//! checked-access helpers (`__cc_at`, `__cc_at_md`) and the assertion hooks.

use super::record::RECORD_BYTES;

/// The prelude as written, with `@CC_RECORD_BYTES@` where the record size goes.
const TEMPLATE: &str = include_str!("prelude.cuh");

/// The prelude with the record size filled in from [`FaultRecord`](super::FaultRecord), so its
/// `static_assert(sizeof(__cc_record) == N)` fails under NVRTC if the two layouts drift apart.
pub fn prelude() -> String {
    TEMPLATE.replace("@CC_RECORD_BYTES@", &RECORD_BYTES.to_string())
}

/// How many lines [`prelude`] has, for callers mapping output lines back (the `#line` directive
/// after it makes NVRTC do that itself).
pub fn prelude_lines() -> usize {
    TEMPLATE.lines().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_size_is_filled_in() {
        let p = prelude();
        assert!(
            p.contains("static_assert(sizeof(__cc_record) == 128,"),
            "{p}"
        );
        assert!(!p.contains('@'));
    }
}
