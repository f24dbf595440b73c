//! What the program loaded: each module or library with the PTX its image carries for the
//! device (read once, at load, since the image is the program's to free afterwards), and each
//! kernel handle it looked up, with the counts the summary reports.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudacheck_core::image::{self, ImageKind};
use cudacheck_core::{Arch, PtxEntry};

use super::builds::{Built, Made, ShapeKey};
use crate::protocol::KernelSummary;

/// The program's handle of a module or library, for finding its variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handle {
    Module(usize),
    Library(usize),
    None,
}

/// A loaded module or library.
pub struct Module {
    /// The program's handle.
    pub handle: Handle,
    /// The context it was loaded into (0 for a library, which every context shares).
    pub ctx: usize,
    /// How reports name it: the file it came from, or what kind of image it was.
    pub label: String,
    /// The PTX the driver would JIT for the device (the newest not past its architecture).
    pub ptx: Option<Arc<str>>,
    /// Why there is no PTX: said in the summary of each of its kernels.
    pub no_ptx: Option<String>,
    entries: OnceLock<Vec<PtxEntry>>,
}

impl Module {
    /// A module the interposer knows nothing of the image of (loaded before it was there, or
    /// through a call it does not see).
    pub fn unknown() -> Module {
        Module {
            handle: Handle::None,
            ctx: 0,
            label: "a module loaded out of the interposer's sight".to_string(),
            ptx: None,
            no_ptx: Some("its module was not loaded through a call the interposer sees".into()),
            entries: OnceLock::new(),
        }
    }

    /// The module made from image `image` (what `cuModuleLoadData` and its siblings take) for
    /// a device of `arch`.
    ///
    /// # Safety
    /// `image` points at a PTX text (NUL-terminated), a CUBIN, a fatbin or a fatbin wrapper,
    /// as the driver's contract for these calls requires, readable for the length its header
    /// gives.
    pub unsafe fn from_image(
        handle: Handle,
        image: *const c_void,
        arch: Option<Arch>,
        label: String,
    ) -> Module {
        // SAFETY: as the caller promises.
        let read = unsafe { read_image(image, arch) };
        Module::from_read(handle, read, label)
    }

    /// The module of a file (`cuModuleLoad`, `cuLibraryLoadFromFile`).
    pub fn from_file(handle: Handle, path: &str, arch: Option<Arch>) -> Module {
        let read = match std::fs::read(path) {
            Ok(bytes) => read_bytes(&bytes, arch),
            Err(e) => Err(format!("{path} could not be read: {e}")),
        };
        Module::from_read(handle, read, path.to_string())
    }

    fn from_read(handle: Handle, read: Result<String, String>, label: String) -> Module {
        let (ptx, no_ptx) = match read {
            Ok(p) => (Some(Arc::from(p)), None),
            Err(why) => (None, Some(why)),
        };
        Module {
            handle,
            ctx: 0,
            label,
            ptx,
            no_ptx,
            entries: OnceLock::new(),
        }
    }

    /// The kernels of its PTX.
    pub fn entries(&self) -> &[PtxEntry] {
        self.entries.get_or_init(|| {
            self.ptx
                .as_deref()
                .and_then(|p| cudacheck_core::ptx_entries(p).ok())
                .unwrap_or_default()
        })
    }
}

/// The PTX an image holds for a device of `arch` (the newest PTX not past it), or why none.
fn read_bytes(bytes: &[u8], arch: Option<Arch>) -> Result<String, String> {
    match image::classify(bytes) {
        Some(ImageKind::Ptx) => {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            std::str::from_utf8(&bytes[..end])
                .map(str::to_string)
                .map_err(|_| "its PTX is not UTF-8 text".to_string())
        }
        Some(ImageKind::Cubin) => {
            Err("it was loaded as machine code (a CUBIN), without PTX".into())
        }
        Some(ImageKind::Fatbin) => {
            let sm = arch.map_or(u32::MAX, |a| a.major * 10 + a.minor);
            // Only the chosen PTX is decompressed: a library's fatbin is mostly machine code.
            image::ptx_for_arch_in(bytes, sm)
                .map_err(|e| format!("its fatbin could not be read: {e}"))?
                .ok_or_else(|| "its fatbin holds no PTX this GPU can compile".to_string())
        }
        _ => Err("its image is of a kind the interposer does not read".into()),
    }
}

/// Bytes of a fatbin wrapper: magic, version, the fatbin's address, a file name's.
const WRAPPER_BYTES: usize = 24;
/// Bytes of a fatbin's header, enough to know its whole length.
const FATBIN_HEADER: usize = 16;

/// # Safety
/// As [`Module::from_image`].
unsafe fn read_image(image: *const c_void, arch: Option<Arch>) -> Result<String, String> {
    if image.is_null() {
        return Err("its image was null".into());
    }
    let p = image.cast::<u8>();
    // SAFETY: every image kind is at least this long (a PTX text shorter than 8 bytes holds
    // no `.version`; classify needs only its first bytes).
    let prefix = unsafe { std::slice::from_raw_parts(p, 8) };
    match image::classify(prefix) {
        Some(ImageKind::Ptx) => {
            // SAFETY: PTX is NUL-terminated (the driver's contract).
            let text = unsafe { CStr::from_ptr(p.cast()) }.to_bytes();
            read_bytes(text, arch)
        }
        Some(ImageKind::Cubin) => read_bytes(prefix, arch),
        Some(ImageKind::FatbinWrapper) => {
            // SAFETY: a wrapper is WRAPPER_BYTES long.
            let w = unsafe { std::slice::from_raw_parts(p, WRAPPER_BYTES) };
            let data = u64::from_le_bytes(w[8..16].try_into().unwrap_or_default());
            if data == 0 {
                return Err("its fatbin wrapper points nowhere".into());
            }
            // SAFETY: the wrapper's data field points at the fatbin.
            unsafe { read_fatbin(data as *const u8, arch) }
        }
        Some(ImageKind::Fatbin) => {
            // SAFETY: as the caller promises.
            unsafe { read_fatbin(p, arch) }
        }
        None => Err("its image is of a kind the interposer does not read".into()),
    }
}

/// # Safety
/// `p` points at a fatbin, readable for the length its header gives.
unsafe fn read_fatbin(p: *const u8, arch: Option<Arch>) -> Result<String, String> {
    // SAFETY: a fatbin starts with its header.
    let header = unsafe { std::slice::from_raw_parts(p, FATBIN_HEADER) };
    let len = image::fatbin_len(header).ok_or("its fatbin header could not be read")?;
    // SAFETY: the header's length, as the caller promises.
    read_bytes(unsafe { std::slice::from_raw_parts(p, len) }, arch)
}

/// A kernel handle the program looked up or launched.
pub struct Func {
    /// The module it came from, `None` when unknown.
    pub module: Option<Arc<Module>>,
    /// Its symbol, and its name as C++ writes it.
    pub symbol: String,
    pub name: String,
    /// A `CUkernel` (context-independent), not a `CUfunction`.
    pub is_kernel_handle: bool,
    /// Each parameter's C++ type, from the mangled symbol (empty for `extern "C"` kernels).
    pub param_types: Vec<String>,
    launches: AtomicU64,
    checked: AtomicU64,
    findings: AtomicU64,
    /// A reason for unchecked launches is recorded (the first one is kept, cheaply after).
    noted: AtomicBool,
    pub inner: Mutex<FuncInner>,
}

/// What launches learn about a kernel and keep.
#[derive(Default)]
pub struct FuncInner {
    /// The configuration of the last launch that passed validation, per context.
    pub last_valid: HashMap<usize, ValidKey>,
    /// For a `CUkernel`: its `CUfunction` in each context it was launched in.
    pub functions: HashMap<usize, usize>,
    /// The library's kernel object its checked builds are made from, once made.
    pub engine: Option<cudacheck::Kernel>,
    /// Its entry in the module's PTX.
    pub entry: Option<Arc<PtxEntry>>,
    /// Checked builds by shape, or why one could not be made (not tried again).
    pub made: HashMap<ShapeKey, Result<Arc<Made>, String>>,
    /// Checked builds loaded, by context and build, or why one could not be loaded there.
    pub loaded: HashMap<(usize, usize), Result<Arc<Built>, String>>,
    /// Why launches ran unchecked, the first reason.
    pub unchecked_because: Option<String>,
}

/// A configuration that passed validation: grid, block, dynamic shared bytes, cluster, and the
/// kernel's dynamic shared opt-in at the time.
pub type ValidKey = ([u32; 3], [u32; 3], u32, Option<[u32; 3]>, u32);

impl Func {
    pub fn new(module: Option<Arc<Module>>, symbol: String, is_kernel_handle: bool) -> Func {
        let name = module
            .as_ref()
            .and_then(|m| m.entries().iter().find(|e| e.symbol == symbol))
            .map(|e| e.name.clone())
            .unwrap_or_else(|| cudacheck_core::instrument::demangle(&symbol));
        Func {
            module,
            param_types: param_types(&symbol),
            symbol,
            name,
            is_kernel_handle,
            launches: AtomicU64::new(0),
            checked: AtomicU64::new(0),
            findings: AtomicU64::new(0),
            noted: AtomicBool::new(false),
            inner: Mutex::default(),
        }
    }

    /// How a report names parameter `k`: its PTX name, or `argument k` with its C++ type when
    /// the symbol says it.
    pub fn param_label(&self, entry: &PtxEntry, k: usize) -> String {
        let label = entry.param_label(k);
        match self.param_types.get(k) {
            Some(t) if entry.params.get(k).is_some_and(|p| p.name.is_none()) => {
                format!("{label} ({t})")
            }
            _ => label,
        }
    }

    pub fn count_launch(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_checked(&self) {
        self.checked.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_finding(&self) {
        self.findings.fetch_add(1, Ordering::Relaxed);
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, FuncInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records why a launch ran unchecked (the first reason is kept).
    pub fn unchecked(&self, why: &str) {
        if self.noted.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut i = self.lock();
        if i.unchecked_because.is_none() {
            i.unchecked_because = Some(why.to_string());
        }
    }

    pub fn summary(&self) -> KernelSummary {
        KernelSummary {
            kernel: self.name.clone(),
            launches: self.launches.load(Ordering::Relaxed),
            checked_launches: self.checked.load(Ordering::Relaxed),
            unchecked_because: self.lock().unchecked_because.clone(),
            findings: self.findings.load(Ordering::Relaxed),
        }
    }
}

/// The parameter types of a mangled C++ function name, as C++ writes them; empty when the
/// name is not mangled or cannot be read.
fn param_types(symbol: &str) -> Vec<String> {
    let Some(full) = cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle().ok())
    else {
        return Vec::new();
    };
    // The parameter list is the last top-level parenthesis group.
    let mut depth = 0i32;
    let (mut open, mut close) = (None, None);
    for (i, c) in full.char_indices() {
        match c {
            '(' | '<' | '[' => {
                if c == '(' && depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            ')' | '>' | ']' => {
                depth -= 1;
                if c == ')' && depth == 0 {
                    close = Some(i);
                }
            }
            _ => {}
        }
    }
    let (Some(o), Some(c)) = (open, close) else {
        return Vec::new();
    };
    let list = &full[o + 1..c];
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, ch) in list.char_indices() {
        match ch {
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = list[start..].trim();
    if !last.is_empty() && last != "void" {
        out.push(last.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .visible .entry _Z5scaleIfEvPT_i(.param .u64 p0, .param .u32 p1)\n{\n\tret;\n}\n";

    #[test]
    fn a_ptx_image_is_kept_with_its_kernels_named_as_cpp_writes_them() {
        let text = std::ffi::CString::new(PTX).unwrap();
        // SAFETY: a NUL-terminated PTX text.
        let m = unsafe { Module::from_image(Handle::None, text.as_ptr().cast(), None, "m".into()) };
        assert_eq!(m.ptx.as_deref(), Some(PTX));
        assert!(m.no_ptx.is_none());
        let f = Func::new(Some(Arc::new(m)), "_Z5scaleIfEvPT_i".into(), false);
        assert_eq!(f.name, "scale<float>");
    }

    #[test]
    fn parameter_types_come_from_the_mangled_symbol() {
        assert_eq!(
            param_types("_Z10add_scaledPKfS0_Pffi"),
            ["float const*", "float const*", "float*", "float", "int"]
        );
        assert_eq!(
            param_types("_Z13neighbour_sum5GraphPKf"),
            ["Graph", "float const*"]
        );
        assert_eq!(
            param_types("_Z9scale_addIdEvPKT_PS0_S0_i"),
            ["double const*", "double*", "double", "int"]
        );
        assert!(param_types("saxpy").is_empty());
        assert!(param_types("_Z5emptyv").is_empty());
    }

    #[test]
    fn a_cubin_image_has_no_ptx_and_says_why() {
        let mut elf = [0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        // SAFETY: 64 readable bytes, an ELF magic.
        let m = unsafe { Module::from_image(Handle::None, elf.as_ptr().cast(), None, "m".into()) };
        assert!(m.ptx.is_none());
        assert!(m.no_ptx.unwrap().contains("CUBIN"));
    }

    #[test]
    fn a_missing_file_is_a_reason_not_a_panic() {
        let m = Module::from_file(Handle::None, "/nonexistent/k.ptx", None);
        assert!(m.ptx.is_none());
        assert!(m.no_ptx.unwrap().contains("could not be read"));
    }
}
