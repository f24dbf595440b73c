//! Arbitrary text through the NVRTC log parser and the rustc-style rendering of what it
//! finds: never a panic, and everything a diagnostic holds was in the log (the property is
//! `cudacheck::nvrtc::check_parse_log`, which the pure-tier tests check too). Bytes that are
//! not UTF-8 are replaced, as a log read lossily would be. Seeded with small hand-written logs
//! in NVRTC 13.0's format (`corpus/nvrtc_log/seed-*`).
#![no_main]

use cudacheck::nvrtc::check_parse_log;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = check_parse_log(&String::from_utf8_lossy(data)) {
        panic!("{why}");
    }
});
