//! Arbitrary bytes through the CUBIN reader: kernels or a typed error that prints, never a
//! panic, and each kernel listed is a name in the file, once (the property is
//! `cudacheck_core::cubin::fuzz::check_read_cubin`, which the pure-tier tests check too).
//! Seeded with CUBINs from `cudacheck-core/tests/data` (`corpus/cubin/seed-*`):
//! `cargo +nightly fuzz run cubin corpus/cubin -- -max_total_time=300`.
#![no_main]

use cudacheck_core::cubin::fuzz::check_read_cubin;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = check_read_cubin(data) {
        panic!("{why}");
    }
});
