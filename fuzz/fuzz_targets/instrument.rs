//! Arbitrary bytes through the instrumenter: any UTF-8 input must give `Ok` or a typed error,
//! never a panic, and what comes back must keep the user's line numbers (after `#line`).
#![no_main]

use cudacheck_core::instrument::{final_line, instrument, InstrumentOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(out) = instrument(text, "fuzz.cu", &InstrumentOptions::default()) {
        let marker = "#line 1 \"fuzz.cu\"\n";
        let at = out
            .source
            .find(marker)
            .expect("#line directive after the prelude");
        let user = &out.source[at + marker.len()..];
        assert_eq!(
            final_line(user),
            final_line(text),
            "instrumenting changed where the last line lands"
        );
    }
});
