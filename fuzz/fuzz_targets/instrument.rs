//! Arbitrary bytes through the PTX reader and instrumenter: any UTF-8 input must give `Ok` or a
//! typed error, never a panic; what comes back must read again as PTX with the same functions,
//! and every kernel's accesses must be accounted for (checked, proven or listed).
#![no_main]

use cudacheck_core::instrument::{instrument_ptx, ptx};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(out) = instrument_ptx(text) else {
        return;
    };
    let before = ptx::parse(text).expect("instrument_ptx read it");
    let after = ptx::parse(&out.ptx).expect("the instrumented PTX reads again");
    let names = |m: &ptx::Module| {
        m.functions
            .iter()
            .map(|f| f.name.clone())
            .collect::<Vec<_>>()
    };
    let mut expected = names(&before);
    expected.extend(["__cc_assertfail".to_string()]);
    let mut got = names(&after);
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "functions changed");
    let entries = before.functions.iter().filter(|f| f.entry).count();
    assert_eq!(out.kernels.len(), entries);
});
