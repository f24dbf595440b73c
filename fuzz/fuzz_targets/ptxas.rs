//! Arbitrary text through the `ptxas -v` report parser: kernels or a typed error naming a line
//! of the input, never a panic, and every kernel it names is quoted in the input (the property
//! is `cudacheck_core::cubin::fuzz::check_ptxas`, which the pure-tier tests check too). Bytes
//! that are not UTF-8 are replaced, as a log read lossily would be. Seeded with the ptxas logs
//! saved beside the CUBIN fixtures (`corpus/ptxas/seed-*`).
#![no_main]

use cudacheck_core::cubin::fuzz::check_ptxas;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = check_ptxas(&String::from_utf8_lossy(data)) {
        panic!("{why}");
    }
});
