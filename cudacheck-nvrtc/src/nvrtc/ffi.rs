//! Every raw call this module tree makes: `dlopen` through libloading, and NVRTC through a
//! table of function pointers resolved from the library discovery opened. Everything above
//! this file is safe code.
//!
//! cudacheck does not call NVRTC through cudarc's bindings: those exist only with cudarc's
//! `nvrtc` feature, and with the application's `dynamic-linking` they are linked to whatever
//! libnvrtc the link step found, not to the one discovery chose. Resolving the few functions
//! we call from our own handle works under every linking mode the application picks, and a
//! library lacking one of them is rejected at discovery, never a panic later.
//!
//! `nvrtcResult` is read as a plain `c_int` ([`Code`]): a value a newer NVRTC adds is just
//! another number, never an invalid enum.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::path::Path;
use std::ptr;

use libloading::Library;

/// An NVRTC program handle (`RawProgram`, an opaque pointer).
type RawProgram = *mut c_void;

/// `nvrtcResult`, as the C ABI returns it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Code(pub c_int);

impl Code {
    pub const SUCCESS: Code = Code(0);
    pub const INVALID_INPUT: Code = Code(3);
    pub const INVALID_OPTION: Code = Code(5);
    pub const COMPILATION: Code = Code(6);
    pub const NAME_EXPRESSION_NOT_VALID: Code = Code(11);

    /// The enumerator's name in `nvrtc.h` (CUDA 13.0), or the number for one we do not know.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 19] = [
            "NVRTC_SUCCESS",
            "NVRTC_ERROR_OUT_OF_MEMORY",
            "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
            "NVRTC_ERROR_INVALID_INPUT",
            "NVRTC_ERROR_INVALID_PROGRAM",
            "NVRTC_ERROR_INVALID_OPTION",
            "NVRTC_ERROR_COMPILATION",
            "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
            "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
            "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
            "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
            "NVRTC_ERROR_INTERNAL_ERROR",
            "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
            "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED",
            "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED",
            "NVRTC_ERROR_PCH_CREATE",
            "NVRTC_ERROR_CANCELLED",
            "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
            "NVRTC_ERROR_BUSY",
        ];
        usize::try_from(self.0)
            .ok()
            .and_then(|i| NAMES.get(i).copied())
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "nvrtcResult({})", self.0),
        }
    }
}

type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type NumArchsFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type ArchsFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
type CreateFn = unsafe extern "C" fn(
    *mut RawProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut RawProgram) -> c_int;
type AddNameFn = unsafe extern "C" fn(RawProgram, *const c_char) -> c_int;
type CompileFn = unsafe extern "C" fn(RawProgram, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(RawProgram, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(RawProgram, *mut c_char) -> c_int;
type LoweredFn = unsafe extern "C" fn(RawProgram, *const c_char, *mut *const c_char) -> c_int;

/// The NVRTC functions cudacheck calls, resolved from one library. Only [`bind`] makes one,
/// after finding every symbol, so holding a `Bound` proves each pointer is callable.
#[derive(Debug)]
pub(crate) struct Bound {
    version: VersionFn,
    num_archs: NumArchsFn,
    archs: ArchsFn,
    error_string: ErrorStringFn,
    create: CreateFn,
    destroy: DestroyFn,
    add_name: AddNameFn,
    compile: CompileFn,
    log_size: SizeFn,
    log: GetFn,
    cubin_size: SizeFn,
    cubin: GetFn,
    ptx_size: SizeFn,
    ptx: GetFn,
    lowered: LoweredFn,
}

impl Bound {
    /// Where `nvrtcVersion` points, to prove which library the calls go to.
    #[cfg(test)]
    pub(crate) fn version_address(&self) -> usize {
        self.version as usize
    }
}

/// A failed NVRTC call: which function, and what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    pub call: &'static str,
    pub code: Code,
}

impl CallError {
    /// NVRTC's own sentence for the code.
    pub fn message(&self, bound: &Bound) -> String {
        // SAFETY: `bound.error_string` was resolved as `nvrtcGetErrorString` (see `bind`); it
        // returns a pointer to a static NUL-terminated string, or null, for any code.
        let p = unsafe { (bound.error_string)(self.code.0) };
        if p.is_null() {
            return format!("{:?}", self.code);
        }
        // SAFETY: non-null, NUL-terminated and 'static per NVRTC's documentation.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn check(call: &'static str, code: c_int) -> Result<(), CallError> {
    if code == Code::SUCCESS.0 {
        Ok(())
    } else {
        Err(CallError {
            call,
            code: Code(code),
        })
    }
}

/// A library load error read as the system loader reports it, with its cause (one wording for
/// NVRTC, nvJitLink and the driver).
#[doc(hidden)]
pub fn describe_load_error(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Load errors read as the driver's loader reads them (one function for both).
pub(crate) use describe_load_error as describe;

/// Opens a shared library by path (or, without a slash, by the system loader's search).
pub(crate) fn open_library(path: &Path) -> Result<Library, libloading::Error> {
    // SAFETY: loading runs the library's initialisers. We only open NVIDIA's libnvrtc,
    // libnvrtc-builtins and libcuda, whose initialisers have no preconditions on our side.
    unsafe { Library::new(path) }
}

/// glibc's `RTLD_NOLOAD` (`<bits/dlfcn.h>`): open only if already loaded. libloading does not
/// export it.
#[cfg(target_os = "linux")]
const RTLD_NOLOAD: c_int = 0x0004;

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
#[cfg(test)]
pub(crate) fn symbol_address(lib: &Library, name: &str) -> Option<usize> {
    // SAFETY: the symbol is read as an opaque pointer and never called or dereferenced.
    let sym = unsafe { lib.get::<*const c_void>(name.as_bytes()) }.ok()?;
    Some(*sym as usize)
}

/// Resolves every function cudacheck calls from `lib`. The pointers stay valid while `lib` is
/// loaded: the caller keeps the `Library` beside the `Bound` for the life of the process
/// (`discover::Nvrtc` holds both and is never dropped once made).
///
/// # Errors
/// A sentence naming the first missing function.
pub(crate) fn bind(lib: &Library) -> Result<Bound, String> {
    fn get<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
        // SAFETY: `T` is the function type `nvrtc.h` declares for `name` (each call below
        // names the symbol next to its type alias); the pointer is only called while `lib`
        // stays loaded (see `bind`'s docs).
        unsafe { lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|_| {
                format!(
                    "it has no `{name}` (NVRTC older than 11.2?); cudacheck needs NVRTC 12 or 13"
                )
            })
    }
    Ok(Bound {
        version: get(lib, "nvrtcVersion")?,
        num_archs: get(lib, "nvrtcGetNumSupportedArchs")?,
        archs: get(lib, "nvrtcGetSupportedArchs")?,
        error_string: get(lib, "nvrtcGetErrorString")?,
        create: get(lib, "nvrtcCreateProgram")?,
        destroy: get(lib, "nvrtcDestroyProgram")?,
        add_name: get(lib, "nvrtcAddNameExpression")?,
        compile: get(lib, "nvrtcCompileProgram")?,
        log_size: get(lib, "nvrtcGetProgramLogSize")?,
        log: get(lib, "nvrtcGetProgramLog")?,
        cubin_size: get(lib, "nvrtcGetCUBINSize")?,
        cubin: get(lib, "nvrtcGetCUBIN")?,
        ptx_size: get(lib, "nvrtcGetPTXSize")?,
        ptx: get(lib, "nvrtcGetPTX")?,
        lowered: get(lib, "nvrtcGetLoweredName")?,
    })
}

/// `nvrtcVersion`.
pub(crate) fn version(b: &Bound) -> Result<(i32, i32), CallError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: `Bound` holds the resolved function; both out-pointers are valid for writes.
    check("nvrtcVersion", unsafe {
        (b.version)(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// `nvrtcGetSupportedArchs`, as `sm_XY` names.
pub(crate) fn supported_arches(b: &Bound) -> Result<Vec<String>, CallError> {
    let mut n: c_int = 0;
    // SAFETY: `Bound` holds the resolved function; `n` is valid for writes.
    check("nvrtcGetNumSupportedArchs", unsafe {
        (b.num_archs)(&mut n)
    })?;
    let mut archs = vec![0 as c_int; usize::try_from(n).unwrap_or(0)];
    if !archs.is_empty() {
        // SAFETY: `archs` has room for the `n` ints NVRTC just said it will write.
        check("nvrtcGetSupportedArchs", unsafe {
            (b.archs)(archs.as_mut_ptr())
        })?;
    }
    Ok(archs.iter().map(|a| format!("sm_{a}")).collect())
}

/// An NVRTC program, destroyed when dropped, on every path.
pub(crate) struct Program<'b> {
    raw: RawProgram,
    b: &'b Bound,
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
            code: Code::INVALID_INPUT,
        })?;
        let mut raw: RawProgram = ptr::null_mut();
        // SAFETY: `bound` proves the binding; every pointer is a NUL-terminated string that
        // outlives the call (NVRTC copies sources and headers), the two arrays have `count`
        // entries, and `raw` is valid for writes.
        let code = unsafe {
            (bound.create)(
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
        Ok(Program { raw, b: bound })
    }

    /// `nvrtcAddNameExpression`.
    pub fn add_name_expression(&mut self, expr: &CStr) -> Result<(), CallError> {
        // SAFETY: `self.raw` is a live program; NVRTC copies the string.
        let code = unsafe { (self.b.add_name)(self.raw, expr.as_ptr()) };
        check("nvrtcAddNameExpression", code)
    }

    /// `nvrtcCompileProgram`; returns its code, since a failed compilation still has a log.
    pub fn compile(&mut self, options: &[CString]) -> Code {
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let Ok(n) = c_int::try_from(ptrs.len()) else {
            return Code::INVALID_OPTION;
        };
        // SAFETY: `self.raw` is live; `ptrs` holds `n` NUL-terminated strings that outlive the
        // call.
        Code(unsafe { (self.b.compile)(self.raw, n, ptrs.as_ptr()) })
    }

    /// `nvrtcGetProgramLog`, lossily decoded (EDG echoes source lines, which may not be UTF-8).
    pub fn log(&self) -> Result<String, CallError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; `size` is valid for writes.
        check("nvrtcGetProgramLogSize", unsafe {
            (self.b.log_size)(self.raw, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has the `size` bytes (NUL included) NVRTC said it will write.
        check("nvrtcGetProgramLog", unsafe {
            (self.b.log)(self.raw, buf.as_mut_ptr().cast())
        })?;
        Ok(String::from_utf8_lossy(until_nul(&buf)).into_owned())
    }

    /// `nvrtcGetCUBIN`; empty when the program was compiled for a virtual architecture.
    pub fn cubin(&self) -> Result<Vec<u8>, CallError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; `size` is valid for writes.
        check("nvrtcGetCUBINSize", unsafe {
            (self.b.cubin_size)(self.raw, &mut size)
        })?;
        let mut buf = vec![0u8; size];
        if size > 0 {
            // SAFETY: `buf` has the `size` bytes NVRTC said it will write.
            check("nvrtcGetCUBIN", unsafe {
                (self.b.cubin)(self.raw, buf.as_mut_ptr().cast())
            })?;
        }
        Ok(buf)
    }

    /// `nvrtcGetPTX`.
    pub fn ptx(&self) -> Result<String, CallError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; `size` is valid for writes.
        check("nvrtcGetPTXSize", unsafe {
            (self.b.ptx_size)(self.raw, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has the `size` bytes (NUL included) NVRTC said it will write.
        check("nvrtcGetPTX", unsafe {
            (self.b.ptx)(self.raw, buf.as_mut_ptr().cast())
        })?;
        Ok(String::from_utf8_lossy(until_nul(&buf)).into_owned())
    }

    /// `nvrtcGetLoweredName`: the mangled name of a name expression added before compiling.
    pub fn lowered_name(&self, expr: &CStr) -> Result<String, CallError> {
        let mut out: *const c_char = ptr::null();
        // SAFETY: `self.raw` is live and compiled; `out` is valid for writes.
        check("nvrtcGetLoweredName", unsafe {
            (self.b.lowered)(self.raw, expr.as_ptr(), &mut out)
        })?;
        if out.is_null() {
            return Err(CallError {
                call: "nvrtcGetLoweredName",
                code: Code::NAME_EXPRESSION_NOT_VALID,
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
        let _ = unsafe { (self.b.destroy)(&mut self.raw) };
    }
}

fn until_nul(buf: &[u8]) -> &[u8] {
    buf.iter().position(|&b| b == 0).map_or(buf, |n| &buf[..n])
}
