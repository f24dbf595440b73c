//! PTX of this repository's kernels, made with NVRTC the way a candle-style crate's build script
//! makes its modules with nvcc: for the PTX tests of the NVRTC and GPU tiers.

use cudacheck::core::Arch;
use cudacheck::nvrtc::{compile, CompileOptions};
use cudacheck::PtxSource;

use crate::kernel_source;

/// The PTX of `kernels/<file>` for `arch`, with line information (`-lineinfo`) or without (as
/// nvcc writes it without `-lineinfo`),
/// named `<file stem>.ptx`. `instantiate` are name expressions NVRTC instantiates (templates).
///
/// # Panics
///
/// When NVRTC is missing or the file does not compile.
pub fn kernel_ptx(file: &str, arch: Arch, lineinfo: bool, instantiate: &[&str]) -> PtxSource {
    let mut opts = CompileOptions::new(arch);
    opts.ptx = true;
    opts.name_expressions = instantiate.iter().map(|s| s.to_string()).collect();
    if lineinfo {
        opts.extra_options.push("--generate-line-info".to_string());
    }
    let out = compile(&kernel_source(file), &opts)
        .unwrap_or_else(|e| panic!("NVRTC could not compile {file}: {e}"));
    let stem = file.trim_end_matches(".cu");
    let mut text = out.ptx.expect("PTX was asked for");
    if !lineinfo {
        // cudacheck's PTX always carries lines (bounds checking reports them); nvcc's carries
        // none without `-lineinfo`: no `.loc` and no `.file`.
        text = text
            .lines()
            .filter(|l| !l.trim_start().starts_with(".loc") && !l.trim_start().starts_with(".file"))
            .map(|l| format!("{l}\n"))
            .collect();
    }
    PtxSource::from_str(format!("{stem}.ptx"), text)
}
