//! Mutated kernel sources through the whole bounds-checked build: whenever NVRTC compiles the
//! source for sm_90, its PTX must instrument and the instrumented PTX must assemble (nvJitLink).
//! Seed it with `kernels/*.cu` and `tests/cuda/*.cu`
//! (`cargo +nightly fuzz run instrument_compiles corpus/compiles ../kernels`); needs NVRTC and
//! nvJitLink (`eval "$(../scripts/setup-cuda.sh)"`). NVRTC is the cost.
#![no_main]

use cudacheck::nvrtc::{assemble_ptx, compile, CompileOptions, CudaSource};
use cudacheck_core::instrument::instrument_ptx;
use cudacheck_core::Arch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.contains('\0') {
        return;
    }
    let arch = Arch::new(9, 0);
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let Ok(out) = compile(&CudaSource::from_str("fuzz.cu", text), &opts) else {
        return;
    };
    let ptx = out.ptx.expect("asked for PTX");
    let inst = match instrument_ptx(&ptx) {
        Ok(i) => i,
        Err(e) => panic!("the instrumenter refused NVRTC's PTX: {e}\n---\n{text}"),
    };
    if let Err(e) = assemble_ptx(&inst.ptx, arch, "fuzz.cu") {
        panic!("the PTX assembles, its instrumented version does not:\n{e}\n---\n{text}");
    }
});
