//! `cudacheck doctor`: what cudacheck found on this machine, for a person to read.

use std::fmt;
use std::path::PathBuf;

use cudacheck_nvrtc::nvrtc::headers::{cuda_include_dirs_here, HeaderDir};
use cudacheck_nvrtc::nvrtc::{nvrtc, Nvrtc, NvrtcNotFound};

/// The CUDA driver, if this machine has one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverStatus {
    Present {
        /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
        version: i32,
        /// The entry points cudacheck uses that this driver lacks, and what that rules out.
        missing: Vec<crate::driver::MissingEntryPoint>,
    },
    /// No usable driver; the string says why (`libcuda.so.1 does not load: ...`).
    Absent { reason: String },
}

/// NVRTC, CUDA headers and the CUDA driver as found here. Never panics to build.
#[derive(Debug)]
#[non_exhaustive]
pub struct DoctorReport {
    pub nvrtc: Result<&'static Nvrtc, NvrtcNotFound>,
    pub header_dirs: Vec<HeaderDir>,
    pub driver: DriverStatus,
}

/// Looks at NVRTC (loading it if not yet loaded), the CUDA header directories and the driver.
pub fn doctor_report() -> DoctorReport {
    let nvrtc = nvrtc();
    let header_dirs: Vec<PathBuf> = match &nvrtc {
        Ok(n) => n.include_dirs.clone(),
        Err(_) => cuda_include_dirs_here(),
    };
    let driver = match crate::driver::driver_version() {
        Ok(version) => DriverStatus::Present {
            version: version.0,
            missing: crate::driver::EntryPoint::ALL
                .into_iter()
                .filter_map(crate::driver::missing)
                .collect(),
        },
        Err(e) => DriverStatus::Absent { reason: e.reason },
    };
    DoctorReport {
        nvrtc,
        header_dirs: header_dirs.iter().map(|d| HeaderDir::inspect(d)).collect(),
        driver,
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.nvrtc {
            Ok(n) => {
                writeln!(
                    f,
                    "NVRTC: {}.{} at {}",
                    n.version.0,
                    n.version.1,
                    n.path.display()
                )?;
                writeln!(f, "  found by: {}", n.found_by)?;
                match &n.builtins {
                    Some(b) => writeln!(f, "  builtins: {}", b.display())?,
                    None => writeln!(
                        f,
                        "  builtins: not found beside it (compiles will fail unless the loader \
                         finds libnvrtc-builtins)"
                    )?,
                }
                writeln!(f, "  architectures: {}", n.supported_arches.join(", "))?;
            }
            Err(e) => {
                writeln!(f, "NVRTC: not found")?;
                for line in e.to_string().lines() {
                    writeln!(f, "  {line}")?;
                }
            }
        }
        // What `#[checked_kernel]` checks at `cargo build` on this machine (the macro finds
        // NVRTC the same way).
        match &self.nvrtc {
            Ok(n) => writeln!(
                f,
                "cargo build checks: a #[checked_kernel] with `arch` is compiled with NVRTC \
                 {}.{} and its literal block/grid/shared checked against its registers and \
                 shared memory (`cudacheck prepare` records them for builds without NVRTC)",
                n.version.0, n.version.1
            )?,
            Err(_) => writeln!(
                f,
                "cargo build checks: no NVRTC, so a #[checked_kernel] with `arch` uses what \
                 `cudacheck prepare` recorded in its crate's `{}/` when present and fresh, else \
                 the limits its source and architecture decide (the build never fails for want \
                 of NVRTC)",
                cudacheck_nvrtc::prepared::DIR_NAME
            )?,
        }
        if self.header_dirs.is_empty() {
            writeln!(
                f,
                "CUDA headers: none found (cuda_fp16.h, cuda/std/* will not resolve); install \
                 nvidia-cuda-runtime and nvidia-cuda-cccl, or the CUDA toolkit"
            )?;
        } else {
            let any = |pick: fn(&HeaderDir) -> bool| yes_no(self.header_dirs.iter().any(pick));
            writeln!(
                f,
                "CUDA headers: cuda_fp16.h: {}, cuda_bf16.h: {}, cuda/std/: {}",
                any(|d| d.has_cuda_fp16),
                any(|d| d.has_cuda_bf16),
                any(|d| d.has_cuda_std)
            )?;
            for d in &self.header_dirs {
                let held: Vec<&str> = [
                    (d.has_cuda_fp16, "cuda_fp16.h"),
                    (d.has_cuda_bf16, "cuda_bf16.h"),
                    (d.has_cuda_std, "cuda/std/"),
                ]
                .iter()
                .filter(|(has, _)| *has)
                .map(|(_, name)| *name)
                .collect();
                if held.is_empty() {
                    writeln!(f, "  {}", d.path.display())?;
                } else {
                    writeln!(f, "  {} ({})", d.path.display(), held.join(", "))?;
                }
            }
        }
        match &self.driver {
            DriverStatus::Present { version, missing } => {
                let v = crate::driver::CudaVersion(*version);
                write!(f, "CUDA driver: {v} (launch-time checks available)")?;
                if let Some(n) = self.nvrtc.as_ref().ok().filter(|n| n.version.0 > v.major()) {
                    write!(
                        f,
                        "\n  NVRTC {}.{} makes CUBINs this driver cannot load: point \
                         CUDACHECK_NVRTC at an NVRTC {}.x, or update the driver",
                        n.version.0,
                        n.version.1,
                        v.major()
                    )?;
                }
                if missing.is_empty() {
                    write!(f, "\n  every driver entry point cudacheck uses is present")
                } else {
                    for m in missing {
                        write!(
                            f,
                            "\n  no {}: {} unavailable (needs CUDA {})",
                            m.entry.symbol(),
                            m.entry.used_for(),
                            m.entry.since()
                        )?;
                    }
                    Ok(())
                }
            }
            DriverStatus::Absent { reason } => {
                write!(f, "CUDA driver: none ({reason}); offline checks only")
            }
        }
    }
}
