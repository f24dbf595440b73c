//! Every raw call this module tree makes: `dlopen` through libloading, and NVRTC through
//! cudarc's raw bindings (`cudarc::nvrtc::sys`). Everything above this file is safe code.
//!
//! cudarc's bindings resolve each symbol on first use through `cudarc::nvrtc::sys::culib()`,
//! which panics when it cannot dlopen NVRTC or a symbol is missing. The functions here that call
//! into NVRTC therefore take a [`Bound`], a token that only [`check_cudarc_binding`] makes, after
//! it has proved that cudarc's loader will find the very library discovery opened and that the
//! library has every symbol listed in [`REQUIRED_SYMBOLS`].
//!
//! cudarc models `nvrtcResult` as a Rust enum (CUDA 13.0's values, 0..=17). A return value outside
//! it would be undefined behaviour; NVRTC 13.0 and older return none, and newer ones only add
//! `NVRTC_ERROR_BUSY` (18) for programs compiled from two threads at once, which we never do (one
//! program per call, never shared).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::ptr;

use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};
use libloading::Library;

/// The NVRTC functions cudacheck calls; discovery rejects a library lacking any of them, so
/// cudarc's lazy symbol lookup (which panics on a missing symbol) cannot fail later.
pub(crate) const REQUIRED_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcGetNumSupportedArchs",
    "nvrtcGetSupportedArchs",
    "nvrtcGetErrorString",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcAddNameExpression",
    "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetLoweredName",
];

/// glibc's `RTLD_NOLOAD` (`<bits/dlfcn.h>`): open only if already loaded. libloading does not
/// export it.
#[cfg(target_os = "linux")]
const RTLD_NOLOAD: c_int = 0x0004;

/// Proof that cudarc's NVRTC bindings resolve to the library discovery holds open.
#[derive(Debug)]
pub(crate) struct Bound(());

/// A failed NVRTC call: which function, and what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    pub call: &'static str,
    pub code: nvrtcResult,
}

impl CallError {
    /// NVRTC's own sentence for the code.
    pub fn message(&self, _: &Bound) -> String {
        // SAFETY: `Bound` proves cudarc's bindings resolve (see module docs);
        // nvrtcGetErrorString returns a pointer to a static NUL-terminated string, or null.
        let p = unsafe { sys::nvrtcGetErrorString(self.code) };
        if p.is_null() {
            return format!("{:?}", self.code);
        }
        // SAFETY: non-null, NUL-terminated and 'static per NVRTC's documentation.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn check(call: &'static str, code: nvrtcResult) -> Result<(), CallError> {
    if code == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(CallError { call, code })
    }
}

/// libloading's error with its cause (`dlopen failed: libfoo.so: cannot open shared object
/// file`): its own Display stops at the first half.
pub(crate) fn describe(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Opens a shared library by path (or, without a slash, by the system loader's search).
pub(crate) fn open_library(path: &Path) -> Result<Library, libloading::Error> {
    // SAFETY: loading runs the library's initialisers. We only open NVIDIA's libnvrtc,
    // libnvrtc-builtins and libcuda, whose initialisers have no preconditions on our side.
    unsafe { Library::new(path) }
}

/// Opens a library by soname only if it is already loaded in this process.
#[cfg(target_os = "linux")]
pub(crate) fn open_if_loaded(soname: &str) -> Option<Library> {
    use libloading::os::unix::{Library as UnixLibrary, RTLD_LAZY};
    // SAFETY: with RTLD_NOLOAD nothing new is loaded, so no initialiser runs; we only take a
    // reference on an object already in the process.
    let lib = unsafe { UnixLibrary::open(Some(soname), RTLD_LAZY | RTLD_NOLOAD) }.ok()?;
    Some(lib.into())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn open_if_loaded(_soname: &str) -> Option<Library> {
    None
}

/// The address `name` resolves to in `lib`, to tell whether two handles are one object.
pub(crate) fn symbol_address(lib: &Library, name: &str) -> Option<usize> {
    // SAFETY: the symbol is read as an opaque pointer and never called or dereferenced.
    let sym = unsafe { lib.get::<*const c_void>(name.as_bytes()) }.ok()?;
    Some(*sym as usize)
}

/// Mirrors `cudarc::nvrtc::sys::culib()`: it dlopens cudarc's candidate names in order and keeps
/// the first that loads. Doing the same here (without cudarc's panic) tells whether cudarc will
/// land on `ours`: glibc answers a bare soname with an already-loaded object of that DT_SONAME
/// (or the same file), so once `ours` is open, `libnvrtc.so.13` resolves to it. It will not when
/// an earlier candidate (plain `libnvrtc.so`) is a different library on the loader's path.
///
/// # Errors
/// A sentence saying why cudarc would not use `ours`.
pub(crate) fn check_cudarc_binding(ours: &Library) -> Result<Bound, String> {
    for name in REQUIRED_SYMBOLS {
        if symbol_address(ours, name).is_none() {
            return Err(format!(
                "it has no `{name}` (NVRTC older than 11.2?); cudacheck needs NVRTC 12 or 13"
            ));
        }
    }
    let ours_at = symbol_address(ours, "nvrtcVersion");
    for candidate in cudarc::get_lib_name_candidates("nvrtc") {
        let Ok(lib) = open_library(Path::new(&candidate)) else {
            continue;
        };
        return if symbol_address(&lib, "nvrtcVersion") == ours_at {
            Ok(Bound(()))
        } else {
            Err(format!(
                "cudarc would load a different libnvrtc: `{candidate}` from the system \
                 loader's path comes first in its search"
            ))
        };
    }
    Err("its soname is none of those cudarc looks for (libnvrtc.so.13, .12, ...)".to_string())
}

/// `nvrtcVersion`.
pub(crate) fn version(_: &Bound) -> Result<(i32, i32), CallError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: `Bound` proves the binding; both out-pointers are valid for writes.
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// `nvrtcGetSupportedArchs`, as `sm_XY` names.
pub(crate) fn supported_arches(_: &Bound) -> Result<Vec<String>, CallError> {
    let mut n: c_int = 0;
    // SAFETY: `Bound` proves the binding; `n` is valid for writes.
    check("nvrtcGetNumSupportedArchs", unsafe {
        sys::nvrtcGetNumSupportedArchs(&mut n)
    })?;
    let mut archs = vec![0 as c_int; usize::try_from(n).unwrap_or(0)];
    if !archs.is_empty() {
        // SAFETY: `archs` has room for the `n` ints NVRTC just said it will write.
        check("nvrtcGetSupportedArchs", unsafe {
            sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
        })?;
    }
    Ok(archs.iter().map(|a| format!("sm_{a}")).collect())
}

/// An NVRTC program, destroyed when dropped, on every path.
pub(crate) struct Program<'b> {
    raw: nvrtcProgram,
    _bound: &'b Bound,
}

impl<'b> Program<'b> {
    /// `nvrtcCreateProgram` with in-memory headers (`(include name, contents)`).
    pub fn create(
        bound: &'b Bound,
        source: &CStr,
        name: &CStr,
        headers: &[(CString, CString)],
    ) -> Result<Self, CallError> {
        let contents: Vec<*const c_char> = headers.iter().map(|(_, c)| c.as_ptr()).collect();
        let names: Vec<*const c_char> = headers.iter().map(|(n, _)| n.as_ptr()).collect();
        let count = c_int::try_from(headers.len()).map_err(|_| CallError {
            call: "nvrtcCreateProgram",
            code: nvrtcResult::NVRTC_ERROR_INVALID_INPUT,
        })?;
        let mut raw: nvrtcProgram = ptr::null_mut();
        // SAFETY: `bound` proves the binding; every pointer is a NUL-terminated string that
        // outlives the call (NVRTC copies sources and headers), the two arrays have `count`
        // entries, and `raw` is valid for writes.
        let code = unsafe {
            sys::nvrtcCreateProgram(
                &mut raw,
                source.as_ptr(),
                name.as_ptr(),
                count,
                if count == 0 {
                    ptr::null()
                } else {
                    contents.as_ptr()
                },
                if count == 0 {
                    ptr::null()
                } else {
                    names.as_ptr()
                },
            )
        };
        check("nvrtcCreateProgram", code)?;
        Ok(Program { raw, _bound: bound })
    }

    /// `nvrtcAddNameExpression`.
    pub fn add_name_expression(&mut self, expr: &CStr) -> Result<(), CallError> {
        // SAFETY: `self.raw` is a live program; NVRTC copies the string.
        let code = unsafe { sys::nvrtcAddNameExpression(self.raw, expr.as_ptr()) };
        check("nvrtcAddNameExpression", code)
    }

    /// `nvrtcCompileProgram`; returns its code, since a failed compilation still has a log.
    pub fn compile(&mut self, options: &[CString]) -> nvrtcResult {
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let Ok(n) = c_int::try_from(ptrs.len()) else {
            return nvrtcResult::NVRTC_ERROR_INVALID_OPTION;
        };
        // SAFETY: `self.raw` is live; `ptrs` holds `n` NUL-terminated strings that outlive the
        // call.
        unsafe { sys::nvrtcCompileProgram(self.raw, n, ptrs.as_ptr()) }
    }

    /// `nvrtcGetProgramLog`, lossily decoded (EDG echoes source lines, which may not be UTF-8).
    pub fn log(&self) -> Result<String, CallError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; `size` is valid for writes.
        check("nvrtcGetProgramLogSize", unsafe {
            sys::nvrtcGetProgramLogSize(self.raw, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has the `size` bytes (NUL included) NVRTC said it will write.
        check("nvrtcGetProgramLog", unsafe {
            sys::nvrtcGetProgramLog(self.raw, buf.as_mut_ptr().cast())
        })?;
        Ok(String::from_utf8_lossy(until_nul(&buf)).into_owned())
    }

    /// `nvrtcGetCUBIN`; empty when the program was compiled for a virtual architecture.
    pub fn cubin(&self) -> Result<Vec<u8>, CallError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; `size` is valid for writes.
        check("nvrtcGetCUBINSize", unsafe {
            sys::nvrtcGetCUBINSize(self.raw, &mut size)
        })?;
        let mut buf = vec![0u8; size];
        if size > 0 {
            // SAFETY: `buf` has the `size` bytes NVRTC said it will write.
            check("nvrtcGetCUBIN", unsafe {
                sys::nvrtcGetCUBIN(self.raw, buf.as_mut_ptr().cast())
            })?;
        }
        Ok(buf)
    }

    /// `nvrtcGetPTX`.
    pub fn ptx(&self) -> Result<String, CallError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; `size` is valid for writes.
        check("nvrtcGetPTXSize", unsafe {
            sys::nvrtcGetPTXSize(self.raw, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has the `size` bytes (NUL included) NVRTC said it will write.
        check("nvrtcGetPTX", unsafe {
            sys::nvrtcGetPTX(self.raw, buf.as_mut_ptr().cast())
        })?;
        Ok(String::from_utf8_lossy(until_nul(&buf)).into_owned())
    }

    /// `nvrtcGetLoweredName`: the mangled name of a name expression added before compiling.
    pub fn lowered_name(&self, expr: &CStr) -> Result<String, CallError> {
        let mut out: *const c_char = ptr::null();
        // SAFETY: `self.raw` is live and compiled; `out` is valid for writes.
        check("nvrtcGetLoweredName", unsafe {
            sys::nvrtcGetLoweredName(self.raw, expr.as_ptr(), &mut out)
        })?;
        if out.is_null() {
            return Err(CallError {
                call: "nvrtcGetLoweredName",
                code: nvrtcResult::NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID,
            });
        }
        // SAFETY: NVRTC returned a NUL-terminated string owned by the program, which is alive;
        // we copy it out before the program can be destroyed.
        Ok(unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned())
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: `self.raw` came from nvrtcCreateProgram and is destroyed exactly once, here.
        // A failure to destroy cannot be acted on in drop; NVRTC documents none for a valid
        // program.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.raw) };
    }
}

fn until_nul(buf: &[u8]) -> &[u8] {
    buf.iter().position(|&b| b == 0).map_or(buf, |n| &buf[..n])
}

/// The CUDA driver's version through cudarc, or why there is none. cudarc's driver loader also
/// panics when libcuda is absent, so this first opens `libcuda.so.1` itself.
pub(crate) fn driver_version() -> Result<(Library, i32), String> {
    let lib = open_library(Path::new("libcuda.so.1"))
        .map_err(|e| format!("libcuda.so.1 does not load: {}", describe(&e)))?;
    // SAFETY: is_culib_present only tries to dlopen cudarc's candidate names; it cannot panic.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("libcuda.so.1 loads, but cudarc finds none of its candidate names".into());
    }
    if symbol_address(&lib, "cuDriverGetVersion").is_none() {
        return Err("libcuda.so.1 has no cuDriverGetVersion".into());
    }
    let mut v: c_int = 0;
    // SAFETY: cudarc's driver library is present (checked above, so its loader does not panic)
    // and exports cuDriverGetVersion; the out-pointer is valid. cuDriverGetVersion needs no
    // cuInit.
    let code = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if code != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuDriverGetVersion failed: {code:?}"));
    }
    Ok((lib, v))
}
