//! Mutated kernel sources through NVRTC: whenever the original compiles for sm_90, the
//! bounds-checked rewrite of it must compile too. Seed it with `kernels/*.cu`
//! (`cargo +nightly fuzz run instrument_compiles corpus/compiles ../kernels`); needs NVRTC
//! (`eval "$(../scripts/setup-cuda.sh)"`). About 20 inputs a second: NVRTC is the cost.
#![no_main]

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck_core::instrument::{instrument, InstrumentOptions};
use cudacheck_core::Arch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.contains('\0') {
        return;
    }
    let opts = CompileOptions::new(Arch::new(9, 0));
    if compile(&CudaSource::from_str("fuzz.cu", text), &opts).is_err() {
        return;
    }
    let Ok(out) = instrument(text, "fuzz.cu", &InstrumentOptions::default()) else {
        panic!("the instrumenter refused a source NVRTC compiles");
    };
    if let Err(e) = compile(&CudaSource::from_str("fuzz.cu", &out.source), &opts) {
        panic!("the original compiles, its instrumented version does not:\n{e}\n---\n{text}");
    }
});
