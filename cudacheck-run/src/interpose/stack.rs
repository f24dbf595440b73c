//! Host call stacks: captured as return addresses when a launch or an allocation is made (a
//! few microseconds), symbolized only when a report needs them, with the interposer's own
//! frames left out.

use std::ffi::c_void;
use std::sync::OnceLock;

/// Frames kept at capture: the interposer's own (a handful) and the caller's nearest ones.
const CAPTURED: usize = 24;
/// Frames a report shows, outside the interposer.
const SHOWN: usize = 12;

/// A captured call stack: return addresses, innermost first.
#[derive(Clone, Debug)]
pub struct Stack(Box<[usize]>);

impl Stack {
    /// The calling thread's stack now.
    pub fn capture() -> Stack {
        let mut ips = Vec::with_capacity(CAPTURED);
        // SAFETY: `trace_unsynchronized` may not run beside another unwinder of this crate
        // on the same thread; none runs here (the closure only stores addresses).
        unsafe {
            backtrace::trace_unsynchronized(|frame| {
                ips.push(frame.ip() as usize);
                ips.len() < CAPTURED
            })
        };
        Stack(ips.into_boxed_slice())
    }

    /// The calling thread's stack, unless the options turn stacks off.
    pub fn maybe(s: &super::state::State) -> Option<Stack> {
        (s.opts.stacks != super::state::StackMode::Off).then(Stack::capture)
    }

    /// The frames of the program, innermost first, each `function (file:line)` or
    /// `function (object+0xoffset)`, as far as the binary's symbols tell: the interposer's own
    /// frames, the CUDA runtime's internals and everything below `main` are left out.
    pub fn symbolize(&self) -> Vec<String> {
        let ours = own_object();
        let mut out = Vec::new();
        for &ip in self.0.iter() {
            if out.len() >= SHOWN || ip == 0 {
                break;
            }
            let object = object_of(ip);
            if object.as_ref().is_some_and(|(base, _)| Some(*base) == ours) {
                continue;
            }
            let mut name = None;
            let mut line = None;
            // A return address points after the call: look the call itself up.
            backtrace::resolve((ip - 1) as *mut c_void, |sym| {
                if name.is_some() {
                    return;
                }
                name = sym.name().map(|n| format!("{n:#}"));
                line = match (sym.filename(), sym.lineno()) {
                    (Some(f), Some(l)) => Some(format!("{}:{l}", f.display())),
                    _ => None,
                };
            });
            if name.as_deref().is_some_and(runtime_internal) {
                continue;
            }
            let at = match (line, &object) {
                (Some(l), _) => format!(" ({l})"),
                (None, Some((base, path))) => format!(" ({path}+{:#x})", ip - base),
                (None, None) => format!(" ({ip:#x})"),
            };
            let is_main = name.as_deref() == Some("main");
            out.push(format!("{}{at}", name.as_deref().unwrap_or("?")));
            if is_main {
                break;
            }
        }
        out
    }
}

/// Frames of the CUDA runtime's own (statically linked into nvcc-built programs, with symbols
/// such as `libcudart_static_<hash>`): between the program's call and the driver, they say
/// nothing the next frame (`cudaLaunchKernel`) does not.
fn runtime_internal(name: &str) -> bool {
    name.starts_with("libcudart_static")
        || name.starts_with("cudart::")
        || name.starts_with("__cudart")
}

/// The loaded object holding address `ip`: its load address and path.
fn object_of(ip: usize) -> Option<(usize, String)> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `dladdr` only reads the loader's tables; `info` is a valid out-pointer.
    if unsafe { libc::dladdr(ip as *const c_void, &mut info) } == 0 || info.dli_fbase.is_null() {
        return None;
    }
    let path = if info.dli_fname.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated path owned by the loader.
        unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    Some((info.dli_fbase as usize, path))
}

/// The load address of the object this code is in (the interposer's shared object).
fn own_object() -> Option<usize> {
    static OWN: OnceLock<Option<usize>> = OnceLock::new();
    *OWN.get_or_init(|| object_of(own_object as *const () as usize).map(|(b, _)| b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn capture_here() -> Stack {
        Stack::capture()
    }

    #[test]
    fn a_stack_is_captured_and_symbolized_without_the_interposers_frames() {
        let s = capture_here();
        assert!(s.0.len() >= 3, "{:?}", s.0);
        // In a test binary, this code and its callers are one object, the one the interposer's
        // frames are left out of: none of them may be shown, and nothing past `main`.
        let frames = s.symbolize();
        assert!(
            frames
                .iter()
                .all(|f| !f.contains("capture_here") && !f.contains("stack::tests")),
            "{frames:?}"
        );
        assert!(
            frames.iter().all(|f| !f.starts_with("__libc_start")),
            "{frames:?}"
        );
    }
}
