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
//! cudarc has no nvJitLink bindings; the seven functions are resolved here with libloading.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::Library;
use thiserror::Error;

use super::ffi::{describe, open_library};
use cudacheck_core::Arch;

/// Where `CUDACHECK_NVJITLINK` may point: a `libnvJitLink.so*` file or its directory.
pub const NVJITLINK_ENV_VAR: &str = "CUDACHECK_NVJITLINK";

/// `NVJITLINK_INPUT_PTX` (nvJitLink.h).
const INPUT_PTX: c_int = 2;

type Handle = *mut c_void;
type CreateFn = unsafe extern "C" fn(*mut Handle, c_uint, *const *const c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Handle) -> c_int;
type AddDataFn = unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> c_int;
type CompleteFn = unsafe extern "C" fn(Handle) -> c_int;
type SizeFn = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int;

/// A loaded nvJitLink.
#[derive(Debug)]
pub struct JitLink {
    /// The library file.
    pub path: PathBuf,
    /// `(major, minor)`.
    pub version: (u32, u32),
    fns: Fns,
    _lib: Library,
}

#[derive(Debug, Clone, Copy)]
struct Fns {
    create: CreateFn,
    destroy: DestroyFn,
    add_data: AddDataFn,
    complete: CompleteFn,
    cubin_size: SizeFn,
    cubin: GetFn,
    error_log_size: SizeFn,
    error_log: GetFn,
    info_log_size: SizeFn,
    info_log: GetFn,
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
    let lib = open_library(path).map_err(|e| describe(&e))?;
    // SAFETY: each symbol is read as the function type nvJitLink.h declares for it (CUDA 12 and
    // 13 keep these signatures); the library stays loaded in the returned value, so the copied
    // function pointers stay valid as long as it lives.
    let fns = unsafe {
        macro_rules! sym {
            ($name:literal) => {
                *lib.get($name)
                    .map_err(|e| format!("{}: {}", stringify!($name), describe(&e)))?
            };
        }
        Fns {
            create: sym!(b"nvJitLinkCreate"),
            destroy: sym!(b"nvJitLinkDestroy"),
            add_data: sym!(b"nvJitLinkAddData"),
            complete: sym!(b"nvJitLinkComplete"),
            cubin_size: sym!(b"nvJitLinkGetLinkedCubinSize"),
            cubin: sym!(b"nvJitLinkGetLinkedCubin"),
            error_log_size: sym!(b"nvJitLinkGetErrorLogSize"),
            error_log: sym!(b"nvJitLinkGetErrorLog"),
            info_log_size: sym!(b"nvJitLinkGetInfoLogSize"),
            info_log: sym!(b"nvJitLinkGetInfoLog"),
        }
    };
    let (mut major, mut minor) = (0u32, 0u32);
    // SAFETY: nvJitLinkVersion writes two unsigned ints through valid pointers.
    let version: Result<VersionFn, _> = unsafe { lib.get(b"nvJitLinkVersion").map(|s| *s) };
    if let Ok(v) = version {
        // SAFETY: as above.
        unsafe { v(&mut major, &mut minor) };
    }
    Ok(JitLink {
        path: path.to_path_buf(),
        version: (major, minor),
        fns,
        _lib: lib,
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
    let lib = match super::loaded_nvrtc() {
        Some(n) => n.path.clone(),
        None => match super::locate() {
            Some(l) => l.path.clone(),
            None => super::nvrtc().ok()?.path.clone(),
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
            let dir = match super::loaded_nvrtc() {
                Some(n) => n.path.parent().map(Path::to_path_buf),
                None => super::locate()?.path.parent().map(Path::to_path_buf),
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

/// Frees an nvJitLink handle when dropped.
struct Linker<'a> {
    jl: &'a JitLink,
    h: Handle,
}

impl Drop for Linker<'_> {
    fn drop(&mut self) {
        // SAFETY: `h` came from nvJitLinkCreate and is destroyed once, here.
        unsafe { (self.jl.fns.destroy)(&mut self.h) };
    }
}

impl Linker<'_> {
    fn read(&self, size: SizeFn, get: GetFn, call: &'static str) -> Result<Vec<u8>, AssembleError> {
        let mut n = 0usize;
        // SAFETY: `h` is live; `n` is valid for writes.
        let code = unsafe { size(self.h, &mut n) };
        if code != 0 {
            return Err(AssembleError::Call { call, code });
        }
        let mut buf = vec![0u8; n.max(1)];
        // SAFETY: `buf` holds the `n` bytes nvJitLink said it writes.
        let code = unsafe { get(self.h, buf.as_mut_ptr().cast()) };
        if code != 0 {
            return Err(AssembleError::Call { call, code });
        }
        buf.truncate(n);
        Ok(buf)
    }

    fn log(&self, size: SizeFn, get: GetFn) -> String {
        self.read(size, get, "log")
            .map(|b| {
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..end]).trim().to_string()
            })
            .unwrap_or_default()
    }
}

/// Assembles `ptx` for `arch` into a CUBIN with ptxas's default optimisation.
///
/// # Errors
/// [`AssembleError::NotFound`] without nvJitLink, [`AssembleError::Rejected`] with ptxas's log
/// when the PTX does not assemble, [`AssembleError::Call`] for other failures.
pub fn assemble_ptx(ptx: &str, arch: Arch, name: &str) -> Result<Assembled, AssembleError> {
    let jl = jitlink()?;
    crate::cache::stats::count(crate::cache::stats::Event::Assembly);
    let arch_opt = CString::new(format!("-arch={}", arch.sm_name())).expect("no NUL in sm_XY");
    let verbose = CString::new("-verbose").expect("static");
    let opts = [arch_opt.as_ptr(), verbose.as_ptr()];
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: `opts` holds two valid C strings alive for the call; `h` is valid for writes.
    let code = unsafe { (jl.fns.create)(&mut h, opts.len() as c_uint, opts.as_ptr()) };
    if code != 0 || h.is_null() {
        return Err(AssembleError::Call {
            call: "nvJitLinkCreate",
            code,
        });
    }
    let linker = Linker { jl, h };
    let c_ptx = CString::new(ptx).map_err(|e| AssembleError::Nul {
        name: name.to_string(),
        offset: e.nul_position(),
    })?;
    let c_name = CString::new(name.replace('\0', "")).expect("NULs removed");
    let bytes = c_ptx.as_bytes_with_nul();
    let rejected = |l: &Linker<'_>| AssembleError::Rejected {
        name: name.to_string(),
        arch: arch.sm_name(),
        log: l.log(jl.fns.error_log_size, jl.fns.error_log),
    };
    // SAFETY: `bytes` and `c_name` outlive the call; nvJitLink copies the input.
    let code = unsafe {
        (jl.fns.add_data)(
            linker.h,
            INPUT_PTX,
            bytes.as_ptr().cast(),
            bytes.len(),
            c_name.as_ptr(),
        )
    };
    if code != 0 {
        return Err(rejected(&linker));
    }
    // SAFETY: the handle is live.
    let code = unsafe { (jl.fns.complete)(linker.h) };
    if code != 0 {
        return Err(rejected(&linker));
    }
    let cubin = linker.read(jl.fns.cubin_size, jl.fns.cubin, "nvJitLinkGetLinkedCubin")?;
    let info_log = linker.log(jl.fns.info_log_size, jl.fns.info_log);
    Ok(Assembled { cubin, info_log })
}
