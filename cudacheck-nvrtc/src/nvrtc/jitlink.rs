//! nvJitLink: assembling PTX into a CUBIN without a GPU.
//!
//! Bounds checking rewrites the PTX NVRTC produces (see `cudacheck_core::instrument`); the
//! rewrite then goes through ptxas, which nvJitLink embeds. nvJitLink ships beside NVRTC in the
//! CUDA toolkit (`lib64/libnvJitLink.so.13`) and in the `nvidia-nvjitlink` pip wheel (the same
//! `nvidia/cu13/lib` folder as NVRTC's wheel), so it is looked for where `CUDACHECK_NVJITLINK`
//! points, then next to the NVRTC in use, then through the system loader. Using the
//! library rather than the driver's JIT keeps one path for the offline CLI and the runtime, and
//! gives a CUBIN whose resources the same reader checks.
//!
//! cudarc has no nvJitLink bindings; the raw calls are `jitlink_ffi.rs`'s, and this module is
//! safe code.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use thiserror::Error;

use super::discover::{loaded_nvrtc, nvrtc};
use super::jitlink_ffi::{bind, JitCallError, JitLinkLib, Linker};
use super::locate::locate;
use crate::stats::{count, Event};
use cudacheck_core::Arch;

/// Where `CUDACHECK_NVJITLINK` may point: a `libnvJitLink.so*` file or its directory.
pub const NVJITLINK_ENV_VAR: &str = "CUDACHECK_NVJITLINK";

/// A loaded nvJitLink.
#[derive(Debug)]
pub struct JitLink {
    /// The library file.
    pub path: PathBuf,
    /// `(major, minor)`.
    pub version: (u32, u32),
    lib: JitLinkLib,
}

/// No usable nvJitLink was found.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "bounds checking needs nvJitLink (libnvJitLink.so.13) to assemble the checked PTX, and none \
     was found; searched: {}. Install it beside NVRTC (`pip install nvidia-nvjitlink==13.0.88`, or \
     the CUDA toolkit's lib64), or point {NVJITLINK_ENV_VAR} at it",
    searched.join("; ")
)]
pub struct JitLinkNotFound {
    /// Each place looked at, and why it did not serve.
    pub searched: Vec<String>,
}

/// PTX that nvJitLink (ptxas) did not assemble.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AssembleError {
    #[error(transparent)]
    NotFound(#[from] JitLinkNotFound),
    #[error("ptxas rejected the PTX of `{name}` for {arch}: {log}")]
    Rejected {
        name: String,
        arch: String,
        log: String,
    },
    #[error("nvJitLink's {call} failed with code {code}")]
    Call { call: &'static str, code: i32 },
    #[error("the PTX of `{name}` contains a NUL byte at offset {offset}")]
    Nul { name: String, offset: usize },
}

/// A CUBIN and ptxas's report (`-verbose`), which carries spills like NVRTC's `-Xptxas -v`.
#[derive(Clone, Debug)]
pub struct Assembled {
    pub cubin: Vec<u8>,
    pub info_log: String,
}

fn candidates_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("libnvJitLink.so"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.reverse();
    v
}

fn load(path: &Path) -> Result<JitLink, String> {
    let (lib, version) = bind(path)?;
    Ok(JitLink {
        path: path.to_path_buf(),
        version,
        lib,
    })
}

/// Finds nvJitLink once per process: where `CUDACHECK_NVJITLINK` points, then beside the NVRTC
/// in use (without loading NVRTC when it is not loaded yet and can be located), then the
/// system loader.
///
/// # Errors
/// [`JitLinkNotFound`] listing every place looked at.
pub fn jitlink() -> Result<&'static JitLink, JitLinkNotFound> {
    JL.get_or_init(discover).as_ref().map_err(Clone::clone)
}

static JL: OnceLock<Result<JitLink, JitLinkNotFound>> = OnceLock::new();

/// The files to try before the system loader, in order: where `CUDACHECK_NVJITLINK` points,
/// then those beside the NVRTC in use (`nvrtc_dir`). Places without one are noted in
/// `searched`.
fn places(nvrtc_dir: Option<&Path>, searched: &mut Vec<String>) -> Vec<PathBuf> {
    let mut places: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os(NVJITLINK_ENV_VAR) {
        let p = PathBuf::from(v);
        if p.is_dir() {
            places.extend(candidates_in(&p));
        } else {
            places.push(p);
        }
    }
    if let Some(dir) = nvrtc_dir {
        let found = candidates_in(dir);
        if found.is_empty() {
            searched.push(format!(
                "{} (beside NVRTC): no libnvJitLink.so*",
                dir.display()
            ));
        }
        places.extend(found);
    }
    places
}

/// The directory of the NVRTC in use: the loaded one, else the one a load would take (found
/// without loading it), else the one loading finds.
fn nvrtc_dir() -> Option<PathBuf> {
    let lib = match loaded_nvrtc() {
        Some(n) => n.path.clone(),
        None => match locate() {
            Some(l) => l.path.clone(),
            None => nvrtc().ok()?.path.clone(),
        },
    };
    lib.parent().map(Path::to_path_buf)
}

/// The file [`jitlink`] would load, found without loading anything (NVRTC included): the
/// first of its places, or `None` where only the system loader could say. Its stamp is part
/// of a bounds-checked build's cache key; the build is stored only when the library loaded is
/// this one.
pub(crate) fn locate_jitlink() -> Option<&'static Path> {
    static LOCATED: OnceLock<Option<PathBuf>> = OnceLock::new();
    LOCATED
        .get_or_init(|| {
            let dir = match loaded_nvrtc() {
                Some(n) => n.path.parent().map(Path::to_path_buf),
                None => locate()?.path.parent().map(Path::to_path_buf),
            };
            places(dir.as_deref(), &mut Vec::new())
                .into_iter()
                .find(|p| p.is_file())
        })
        .as_deref()
}

/// The loaded nvJitLink, if this process loaded one.
pub(crate) fn loaded_jitlink() -> Option<&'static JitLink> {
    JL.get().and_then(|r| r.as_ref().ok())
}

fn discover() -> Result<JitLink, JitLinkNotFound> {
    // As `CUDACHECK_NVRTC=none` does for NVRTC: nvJitLink absent, for tests of that case.
    if std::env::var_os(NVJITLINK_ENV_VAR).is_some_and(|v| v == "none") {
        return Err(JitLinkNotFound {
            searched: vec![format!(
                "{NVJITLINK_ENV_VAR}=none: nvJitLink is made absent"
            )],
        });
    }
    let mut searched = Vec::new();
    let places = places(nvrtc_dir().as_deref(), &mut searched);
    for p in &places {
        match load(p) {
            Ok(j) => return Ok(j),
            Err(e) => searched.push(format!("{}: {e}", p.display())),
        }
    }
    for soname in [
        "libnvJitLink.so.13",
        "libnvJitLink.so.12",
        "libnvJitLink.so",
    ] {
        match load(Path::new(soname)) {
            Ok(j) => return Ok(j),
            Err(e) => searched.push(format!("{soname} (system loader): {e}")),
        }
    }
    Err(JitLinkNotFound { searched })
}

impl From<JitCallError> for AssembleError {
    fn from(e: JitCallError) -> Self {
        AssembleError::Call {
            call: e.call,
            code: e.code,
        }
    }
}

/// Assembles `ptx` for `arch` into a CUBIN with ptxas's default optimisation.
///
/// # Errors
/// [`AssembleError::NotFound`] without nvJitLink, [`AssembleError::Rejected`] with ptxas's log
/// when the PTX does not assemble, [`AssembleError::Call`] for other failures.
pub fn assemble_ptx(ptx: &str, arch: Arch, name: &str) -> Result<Assembled, AssembleError> {
    let jl = jitlink()?;
    count(Event::Assembly);
    let options = [
        CString::new(format!("-arch={}", arch.sm_name())).expect("no NUL in sm_XY"),
        CString::new("-verbose").expect("static"),
    ];
    let linker = Linker::create(&jl.lib, &options)?;
    let c_ptx = CString::new(ptx).map_err(|e| AssembleError::Nul {
        name: name.to_string(),
        offset: e.nul_position(),
    })?;
    let c_name = CString::new(name.replace('\0', "")).expect("NULs removed");
    let rejected = |l: &Linker<'_>| AssembleError::Rejected {
        name: name.to_string(),
        arch: arch.sm_name(),
        log: l.error_log(),
    };
    if linker.add_ptx(&c_ptx, &c_name).is_err() || linker.complete().is_err() {
        return Err(rejected(&linker));
    }
    let cubin = linker.cubin()?;
    let info_log = linker.info_log();
    Ok(Assembled { cubin, info_log })
}
