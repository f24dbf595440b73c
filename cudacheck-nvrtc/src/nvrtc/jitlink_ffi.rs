//! nvJitLink's C interface: the only raw calls into nvJitLink (cudarc has no bindings; the
//! functions are resolved with libloading). Everything above it, `jitlink.rs`, is safe code.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::path::Path;

use libloading::Library;

use super::ffi::{describe, open_library};

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

/// A loaded libnvJitLink and its functions; they stay valid while it lives.
#[derive(Debug)]
pub(crate) struct JitLinkLib {
    fns: Fns,
    _lib: Library,
}

/// A failed nvJitLink call: its name and status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JitCallError {
    pub call: &'static str,
    pub code: i32,
}

fn check(call: &'static str, code: c_int) -> Result<(), JitCallError> {
    if code == 0 {
        Ok(())
    } else {
        Err(JitCallError { call, code })
    }
}

/// Loads the library at `path` (or by soname, through the system loader) and resolves every
/// function; the version is `(0, 0)` where `nvJitLinkVersion` is missing (CUDA 12.0).
///
/// # Errors
/// Why it does not serve, in words.
pub(crate) fn bind(path: &Path) -> Result<(JitLinkLib, (u32, u32)), String> {
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
    // SAFETY: nvJitLinkVersion's type as nvJitLink.h declares it; read from the library above.
    let version: Result<VersionFn, _> = unsafe { lib.get(b"nvJitLinkVersion").map(|s| *s) };
    if let Ok(v) = version {
        // SAFETY: nvJitLinkVersion writes two unsigned ints through valid pointers.
        unsafe { v(&mut major, &mut minor) };
    }
    Ok((JitLinkLib { fns, _lib: lib }, (major, minor)))
}

/// One nvJitLink handle, destroyed when dropped.
pub(crate) struct Linker<'a> {
    lib: &'a JitLinkLib,
    h: Handle,
}

impl Drop for Linker<'_> {
    fn drop(&mut self) {
        // SAFETY: `h` came from nvJitLinkCreate and is destroyed once, here.
        unsafe { (self.lib.fns.destroy)(&mut self.h) };
    }
}

impl<'a> Linker<'a> {
    /// `nvJitLinkCreate` with `options` (C strings).
    pub(crate) fn create(lib: &'a JitLinkLib, options: &[CString]) -> Result<Self, JitCallError> {
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: `ptrs` points at C strings alive for the call; `h` is valid for writes.
        let code = unsafe { (lib.fns.create)(&mut h, ptrs.len() as c_uint, ptrs.as_ptr()) };
        check("nvJitLinkCreate", code)?;
        if h.is_null() {
            return Err(JitCallError {
                call: "nvJitLinkCreate",
                code: -1,
            });
        }
        Ok(Linker { lib, h })
    }

    /// Adds PTX text (with its NUL) under `name`.
    pub(crate) fn add_ptx(&self, ptx: &CString, name: &CString) -> Result<(), JitCallError> {
        let bytes = ptx.as_bytes_with_nul();
        // SAFETY: `bytes` and `name` outlive the call; nvJitLink copies the input.
        let code = unsafe {
            (self.lib.fns.add_data)(
                self.h,
                INPUT_PTX,
                bytes.as_ptr().cast(),
                bytes.len(),
                name.as_ptr(),
            )
        };
        check("nvJitLinkAddData", code)
    }

    /// Links (for PTX: assembles) what was added.
    pub(crate) fn complete(&self) -> Result<(), JitCallError> {
        // SAFETY: the handle is live.
        check("nvJitLinkComplete", unsafe {
            (self.lib.fns.complete)(self.h)
        })
    }

    fn read(&self, size: SizeFn, get: GetFn, call: &'static str) -> Result<Vec<u8>, JitCallError> {
        let mut n = 0usize;
        // SAFETY: `h` is live; `n` is valid for writes.
        check(call, unsafe { size(self.h, &mut n) })?;
        let mut buf = vec![0u8; n.max(1)];
        // SAFETY: `buf` holds the `n` bytes nvJitLink said it writes.
        check(call, unsafe { get(self.h, buf.as_mut_ptr().cast()) })?;
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

    /// The linked CUBIN.
    pub(crate) fn cubin(&self) -> Result<Vec<u8>, JitCallError> {
        let f = &self.lib.fns;
        self.read(f.cubin_size, f.cubin, "nvJitLinkGetLinkedCubin")
    }

    /// The error log (ptxas's errors), trimmed; empty when it cannot be read.
    pub(crate) fn error_log(&self) -> String {
        self.log(self.lib.fns.error_log_size, self.lib.fns.error_log)
    }

    /// The info log (`-verbose`: ptxas's resource report), trimmed.
    pub(crate) fn info_log(&self) -> String {
        self.log(self.lib.fns.info_log_size, self.lib.fns.info_log)
    }
}
