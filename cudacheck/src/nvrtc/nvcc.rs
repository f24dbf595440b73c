//! What nvcc does around a `.cu` file that NVRTC does not, done before NVRTC runs, so that a
//! file nvcc compiles compiles here unchanged.
//!
//! - nvcc's device pass drops host functions; NVRTC rejects them. The file's host code is set
//!   aside by [`set_aside_host_code`] (blanked in place, lines and columns kept), and the kernel
//!   specializations it launched are named after the last line so they are still instantiated.
//! - nvcc includes `<cuda_runtime.h>` (and with it the C library's math, stdlib, string and
//!   stdio headers) into every file: NVRTC reads [`IMPLICIT_HEADER_NAME`] first.
//! - The projects we measured all build with `--expt-relaxed-constexpr`, which lets device code
//!   call unannotated `constexpr` functions. NVRTC has no such option; `-default-device` gives
//!   every unannotated function that remains after host code is set aside (the main file's
//!   device-called helpers, and headers' `constexpr` helpers) a device meaning. It is more
//!   lenient than nvcc in one way, written down in the README: a non-`constexpr` unannotated
//!   function that device code calls compiles here, where nvcc rejects the call.
//!
//! What still fails gets a `help:` note naming the construct and the fix ([`explain`]).

use std::borrow::Cow;
use std::collections::HashSet;

use cudacheck_core::source::{set_aside_host_code, HostCode};

use super::compile::CudaSource;
use super::diagnostic::Diagnostic;
use super::headers::{HOST_ONLY_HEADERS, IMPLICIT_HEADER_NAME};

/// A source made ready for NVRTC, with the options that go with it.
pub(crate) struct Prepared<'s> {
    pub source: Cow<'s, CudaSource>,
    /// Passed to NVRTC before the user's own extra options.
    pub options: Vec<String>,
    host: Option<HostCode>,
}

/// Sets the host code of `source` aside and picks the options that emulate nvcc.
pub(crate) fn prepare(source: &CudaSource) -> Prepared<'_> {
    let options = vec![
        format!("--pre-include={IMPLICIT_HEADER_NAME}"),
        "-default-device".to_string(),
    ];
    // A file the parser cannot read at all is compiled as it is: NVRTC's own diagnostics say
    // more about it than a parse failure would.
    let host = set_aside_host_code(&source.text)
        .ok()
        .filter(HostCode::changed);
    let source = match &host {
        Some(h) => Cow::Owned(CudaSource {
            text: h.text.clone(),
            ..source.clone()
        }),
        None => Cow::Borrowed(source),
    };
    Prepared {
        source,
        options,
        host,
    }
}

impl Prepared<'_> {
    /// The source again, without the appended launch references that errors in
    /// `diagnostics` point at (they name kernels as the launcher spelled them, which can mean
    /// something else outside it), or without all of them on a second try. `None` when no
    /// error points there: the errors are the user's own.
    pub fn without_launched(&self, diagnostics: &[Diagnostic], attempt: u32) -> Option<CudaSource> {
        let host = self.host.as_ref()?;
        let first = host.appended_from_line?;
        let name = self.source.name.as_str();
        let mut lines: HashSet<u32> = HashSet::new();
        for d in diagnostics.iter().filter(|d| d.is_error()) {
            if d.file == name {
                lines.extend(d.line.filter(|&l| l >= first));
            }
            for note in &d.notes {
                // `instantiation of "..." at line N of FILE`
                let at = note
                    .rsplit_once(" at line ")
                    .and_then(|(_, rest)| rest.split_once(" of "))
                    .and_then(|(l, f)| Some((l.parse::<u32>().ok()?, f.trim_matches('"'))));
                if let Some((l, _)) = at.filter(|(l, f)| *f == name && *l >= first) {
                    lines.insert(l);
                }
            }
        }
        if lines.is_empty() {
            return None;
        }
        let text = if attempt == 0 {
            host.text_without_lines(&lines)
        } else {
            host.text_without_launched().to_string()
        };
        Some(CudaSource {
            text,
            ..self.source.clone().into_owned()
        })
    }
}

/// Adds a `help:` note to each error whose cause is a known difference between nvcc and
/// NVRTC, naming the construct and the fix.
pub(crate) fn explain(diagnostics: &mut [Diagnostic]) {
    for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
        if let Some(help) = help_for(&d.message) {
            d.notes.push(format!("help: {help}"));
        }
    }
}

fn help_for(message: &str) -> Option<String> {
    if message.contains("host functions are not allowed in JIT mode")
        || message.contains("explicitly marked as a __host__ function")
    {
        return Some(
            "this is host code that cudacheck could not set aside: device code names it, it \
             sits in a header or a macro, or its text holds a `#define`. NVRTC compiles device \
             code only. Mark it `__host__ __device__` if device code needs it, or move host \
             code (launchers, `<<<...>>>`, runtime API calls) into a file NVRTC does not \
             compile"
                .to_string(),
        );
    }
    if message.contains("calling a __host__ function") {
        return Some(
            "device code calls a host function: mark the callee `__host__ __device__` (or \
             `constexpr`) if it can run on the device; if the caller is host code, it is in a \
             header or macro cudacheck cannot set aside: keep it out of the code NVRTC compiles"
                .to_string(),
        );
    }
    if let Some(name) = quoted_after(message, "identifier ").filter(|n| is_runtime_api(n)) {
        return Some(format!(
            "`{name}` is a CUDA runtime host API: the code calling it is host code, which NVRTC \
             does not compile. cudacheck sets aside host functions of the main file; move this \
             one out of headers and macros the kernels need"
        ));
    }
    if message.contains("host variables are not allowed in JIT mode") {
        return Some(
            "a namespace-scope variable without `__device__`/`__constant__` is host data: mark \
             it `__device__` or `__constant__` (or `constexpr`) if kernels read it"
                .to_string(),
        );
    }
    if let Some(name) = quoted_after(message, "namespace \"std\" has no member ") {
        let header = host_only_header_of(name);
        return Some(match header {
            Some(h) => format!(
                "`std::{name}` comes from `<{h}>`, a host-only C++ library header: device code \
                 cannot use it. Pass the kernel a pointer and a length (or use \
                 `cuda::std::` from CCCL where it has a device version)"
            ),
            None => format!(
                "NVRTC has no C++ standard library; `std::{name}` may exist for the device as \
                 `cuda::std::{name}` (include the matching `<cuda/std/...>` header)"
            ),
        });
    }
    if message.contains("\"thrust\"") || message.contains("thrust::") {
        return Some(
            "Thrust's algorithms are host code that launches kernels; NVRTC compiles device \
             code only. Keep Thrust calls in host code that nvcc compiles"
                .to_string(),
        );
    }
    if message.contains("cannot open source file") {
        return Some(
            "NVRTC has no system headers; cudacheck supplies the C library and device-usable \
             C++ headers. Pass the header's directory with -I, or leave host-only includes \
             out of the code NVRTC compiles"
                .to_string(),
        );
    }
    None
}

/// `cudaMalloc`, `cudaFuncSetAttribute`, `cuLaunchKernel`, ...
fn is_runtime_api(name: &str) -> bool {
    let rest = name
        .strip_prefix("cuda")
        .or_else(|| name.strip_prefix("cu"));
    rest.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// `name` in `... has no member "name"`.
fn quoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    rest.strip_prefix('"')?.split('"').next()
}

/// The host-only header declaring `std::name`, for the names kernels reach for.
fn host_only_header_of(name: &str) -> Option<&'static str> {
    let header = match name {
        "vector" => "vector",
        "map" | "multimap" => "map",
        "unordered_map" => "unordered_map",
        "set" | "multiset" => "set",
        "string" | "to_string" => "string",
        "mutex" | "lock_guard" | "unique_lock" => "mutex",
        "thread" => "thread",
        "exception" => "exception",
        "runtime_error" | "invalid_argument" | "out_of_range" | "logic_error" => "stdexcept",
        "cout" | "cerr" | "endl" => "iostream",
        "stringstream" | "ostringstream" | "istringstream" => "sstream",
        "unique_ptr" | "shared_ptr" | "make_unique" | "make_shared" => "memory",
        "function" => "functional",
        _ => return None,
    };
    HOST_ONLY_HEADERS.iter().copied().find(|h| *h == header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_only_std_names_point_at_their_header() {
        let help = help_for("namespace \"std\" has no member \"vector\"").unwrap();
        assert!(
            help.contains("`<vector>`") && help.contains("host-only"),
            "{help}"
        );
        let help = help_for("namespace \"std\" has no member \"bit_cast\"").unwrap();
        assert!(help.contains("cuda::std::bit_cast"), "{help}");
    }

    #[test]
    fn host_functions_left_in_say_how_to_fix_them() {
        let help = help_for(
            "A function without execution space annotations (__host__/__device__/__global__) \
             is considered a host function, and host functions are not allowed in JIT mode.",
        )
        .unwrap();
        assert!(help.contains("`__host__ __device__`"), "{help}");
        assert_eq!(help_for("expected a \";\""), None);
    }
}
