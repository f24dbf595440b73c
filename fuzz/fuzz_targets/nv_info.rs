//! Arbitrary bytes through the `.nv.info` attribute decoder on its own, as one section's
//! contents: the records account for every byte (re-encoded, they give the input back), a
//! failure is at a record boundary with everything before it decoding, never a panic (the
//! property is `cudacheck_core::cubin::fuzz::check_nv_info`, which the pure-tier tests check
//! too). Seeded with the `.nv.info*` sections of the CUBINs in `cudacheck-core/tests/data`
//! (`corpus/nv_info/seed-*`): `cargo +nightly fuzz run nv_info corpus/nv_info`.
#![no_main]

use cudacheck_core::cubin::fuzz::check_nv_info;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = check_nv_info(data) {
        panic!("{why}");
    }
});
