//! The C library headers NVRTC lacks, and which diagnostics come from them.
//!
//! The CUDA header directories (found beside the NVRTC library, see [`HeaderDir`]) are part
//! of discovery (`include_dirs.rs`); they are re-exported here, where they always were.
//!
//! # Compatibility headers
//! NVRTC 13 ships no C or C++ library headers at all (`#include <cstdint>` fails with "could not
//! open source file"), although it predefines `size_t`, `ptrdiff_t`, `NULL`, `assert`,
//! `printf`, `malloc`, `memcpy` and the whole CUDA math library. The small headers in `compat/`
//! fill the gap for `<stdint.h>`, `<cstdint>`, `<math.h>`, `<cmath>`, `<float.h>`, `<cfloat>`,
//! `<limits.h>`, `<climits>`, `<assert.h>`, `<cassert>`, `<stddef.h>`, `<cstddef>`,
//! `<stdio.h>`, `<cstdio>`, `<stdlib.h>`, `<cstdlib>`, `<string.h>`, `<cstring>`, `<time.h>`,
//! `<ctime>`, and for the
//! C++ headers whose device half CCCL has (`<utility>`, `<type_traits>`, `<limits>`, `<tuple>`,
//! `<array>`, `<iterator>`, forwarded
//! to `cuda::std`) or that device code uses a sliver of (`<algorithm>`: min, max, clamp).
//! Where CCCL's `<cuda/std/...>` defines the same macros (`INT8_C`, `CHAR_BIT`, `FLT_MAX`,
//! `INFINITY`), each CCCL release spelling them its own way, the compatibility header includes
//! CCCL's first and defines only what is still undefined (`INFINITY` and `NAN` copy the
//! spelling of the CCCL in use: see `compat/math.h`), so mixing them with `<cuda/std/...>`
//! headers, in either order, is silent under every CCCL release tested. `<cuda.h>` is replaced too: the
//! toolkit's declares the driver API, and NVRTC rejects host function declarations; so is CUB's
//! umbrella `<cub/cub.cuh>`, whose device-wide algorithms are host code (the block, warp and
//! thread levels are kept).
//!
//! The stream headers (`<iosfwd>`, `<ostream>`, `<iostream>`, `<sstream>`, ...) declare the
//! stream class templates without defining them, for headers (Thrust's) that name them in
//! host-only declarations; `<chrono>` declares its namespace, for `using namespace
//! std::chrono;` beside host timing code.
//!
//! Host-only C++ headers (`<vector>`, `<mutex>`, `<fstream>`, ...) resolve to empty
//! [`HOST_ONLY_HEADERS`]: kernel files include them for the host code beside their kernels,
//! which [`set_aside_host_code`](cudacheck_core::source::set_aside_host_code) blanks before
//! NVRTC runs. Device code that does use them fails with NVRTC's "namespace std has no member",
//! which the compile error's `help:` notes explain.
//!
//! [`IMPLICIT_HEADER`] is read before every source (`--pre-include`): nvcc includes
//! `<cuda_runtime.h>` in every file, and through it the C library's math, stdlib, string and
//! stdio headers, so `INFINITY` or `M_PI` need no include there.
//!
//! They are handed to NVRTC in memory (nvrtcCreateProgram's `headers`/`includeNames`) rather
//! than written to a temporary directory: nothing touches the file system, so there is no
//! directory to create, race on or clean up, and read-only or `noexec` temp dirs do not matter.
//! In-memory headers win over every `-I` directory, though, so [`compat_headers`] leaves out any
//! header the user's own include directories provide: a project's own `stdint.h` still wins.
//!
//! NVRTC resolves an include name to an in-memory header before the file of that name beside
//! the including file, even for `#include "climits"`. CCCL 2.3 (CUDA 12.4; not 2.8 of CUDA
//! 12.9, nor 3.x) keeps libc++'s own tree, whose headers include one another that way; so the
//! compatibility headers with such a name include CCCL's file of that name themselves once
//! CCCL is in use (outside their include guard), which is what CCCL's include asked for.

use std::path::{Path, PathBuf};

use super::diagnostic::Diagnostic;
pub use super::include_dirs::{cuda_include_dirs_here, is_toolkit_include_dir, HeaderDir};

/// The compatibility headers: (include name, contents).
pub const COMPAT_HEADERS: &[(&str, &str)] = &[
    ("stdint.h", include_str!("compat/stdint.h")),
    ("cstdint", include_str!("compat/cstdint")),
    ("math.h", include_str!("compat/math.h")),
    ("cmath", include_str!("compat/cmath")),
    ("float.h", include_str!("compat/float.h")),
    ("cfloat", include_str!("compat/cfloat")),
    ("limits.h", include_str!("compat/limits.h")),
    ("climits", include_str!("compat/climits")),
    ("assert.h", include_str!("compat/assert.h")),
    ("cassert", include_str!("compat/cassert")),
    ("stddef.h", include_str!("compat/stddef.h")),
    ("cstddef", include_str!("compat/cstddef")),
    ("stdio.h", include_str!("compat/stdio.h")),
    ("cstdio", include_str!("compat/cstdio")),
    ("stdlib.h", include_str!("compat/stdlib.h")),
    ("cstdlib", include_str!("compat/cstdlib")),
    ("string.h", include_str!("compat/string.h")),
    ("cstring", include_str!("compat/cstring")),
    ("time.h", include_str!("compat/time.h")),
    ("ctime", include_str!("compat/ctime")),
    ("features.h", include_str!("compat/features.h")),
    ("algorithm", include_str!("compat/algorithm")),
    ("utility", include_str!("compat/utility")),
    ("type_traits", include_str!("compat/type_traits")),
    ("limits", include_str!("compat/limits")),
    ("tuple", include_str!("compat/tuple")),
    ("array", include_str!("compat/array")),
    ("iterator", include_str!("compat/iterator")),
    ("cuda.h", include_str!("compat/cuda.h")),
    ("cub/cub.cuh", include_str!("compat/cub/cub.cuh")),
    ("iosfwd", include_str!("compat/iosfwd")),
    ("ostream", include_str!("compat/ostream")),
    ("istream", include_str!("compat/istream")),
    ("iostream", include_str!("compat/iostream")),
    ("sstream", include_str!("compat/sstream")),
    ("chrono", include_str!("compat/chrono")),
];

/// C++ library headers that only host code can use. Each resolves to [`HOST_ONLY_STUB`], so
/// that a kernel file including one for its host launchers compiles once those are set aside.
/// CUB's device-wide algorithms (`cub::DeviceScan`, ...) are among them: they are host
/// functions that launch CUB's kernels, and under NVRTC their headers do not compile.
pub const HOST_ONLY_HEADERS: &[&str] = &[
    "cub/device/device_adjacent_difference.cuh",
    "cub/device/device_copy.cuh",
    "cub/device/device_for.cuh",
    "cub/device/device_histogram.cuh",
    "cub/device/device_memcpy.cuh",
    "cub/device/device_merge.cuh",
    "cub/device/device_merge_sort.cuh",
    "cub/device/device_partition.cuh",
    "cub/device/device_radix_sort.cuh",
    "cub/device/device_reduce.cuh",
    "cub/device/device_run_length_encode.cuh",
    "cub/device/device_scan.cuh",
    "cub/device/device_segmented_radix_sort.cuh",
    "cub/device/device_segmented_reduce.cuh",
    "cub/device/device_segmented_sort.cuh",
    "cub/device/device_select.cuh",
    "cub/device/device_transform.cuh",
    "vector",
    "map",
    "unordered_map",
    "unordered_set",
    "set",
    "list",
    "deque",
    "atomic",
    "string",
    "mutex",
    "thread",
    "exception",
    "stdexcept",
    "fstream",
    "memory",
    "functional",
];

/// The text of every [`HOST_ONLY_HEADERS`] entry.
pub const HOST_ONLY_STUB: &str = "// cudacheck compatibility header: a host-only C++ library \
header, empty under NVRTC.\n// Device code cannot use what it declares; the host code that \
does is set aside before NVRTC compiles the file.\n";

/// The include name of [`IMPLICIT_HEADER`], chosen so no project's own header shadows it.
pub const IMPLICIT_HEADER_NAME: &str = "__cudacheck_implicit.h";

/// What nvcc's implicit `#include <cuda_runtime.h>` gives every file; NVRTC reads it first.
pub const IMPLICIT_HEADER: &str = include_str!("compat/implicit.h");

/// The compatibility headers to hand NVRTC: all of them except those that a file in one of
/// `user_dirs` shadows, then the host-only stubs (likewise), then the implicit header.
pub fn compat_headers(user_dirs: &[PathBuf]) -> Vec<(&'static str, &'static str)> {
    compat_headers_probed(user_dirs, |p| p.is_file())
}

/// [`compat_headers`], asking `is_file` whether a user directory holds a header (the module
/// cache records each place it looked).
pub(crate) fn compat_headers_probed(
    user_dirs: &[PathBuf],
    mut is_file: impl FnMut(&Path) -> bool,
) -> Vec<(&'static str, &'static str)> {
    let mut shadowed = |name: &str| user_dirs.iter().any(|d| is_file(&d.join(name)));
    COMPAT_HEADERS
        .iter()
        .copied()
        .chain(HOST_ONLY_HEADERS.iter().map(|n| (*n, HOST_ONLY_STUB)))
        .filter(|(name, _)| !shadowed(name))
        .chain([(IMPLICIT_HEADER_NAME, IMPLICIT_HEADER)])
        .collect()
}

/// Whether a warning or remark NVRTC gave comes from cudacheck's own text rather than the
/// user's: a compatibility header, nvcc's implicit header, or the references appended after
/// the user's last line (named `__cudacheck_...`). Such diagnostics are ours to fix and never
/// reach the user; errors always do (they may explain a failure).
pub(crate) fn is_ours(d: &Diagnostic) -> bool {
    if d.is_error() {
        return false;
    }
    let file = d.file.as_str();
    COMPAT_HEADERS.iter().any(|(n, _)| *n == file)
        || HOST_ONLY_HEADERS.contains(&file)
        || file == IMPLICIT_HEADER_NAME
        || d.message.contains("__cudacheck_")
        || d.source_line
            .as_deref()
            .is_some_and(|l| l.contains("__cudacheck_"))
}

/// `diagnostics` without those [`is_ours`].
pub(crate) fn users_own(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics.retain(|d| !is_ours(d));
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::super::diagnostic::Severity;
    use super::*;
    use std::fs;

    #[test]
    fn every_compat_header_is_guarded_or_deliberately_not() {
        for (name, text) in COMPAT_HEADERS {
            // assert.h must re-apply NDEBUG at each inclusion, as the C standard says.
            let guarded = text.contains("#ifndef CUDACHECK_COMPAT_");
            assert_eq!(guarded, !name.contains("assert"), "{name}");
            assert!(
                text.starts_with("// cudacheck compatibility header"),
                "{name}"
            );
        }
        assert_eq!(COMPAT_HEADERS.len(), 36);
    }

    #[test]
    fn warnings_from_our_own_text_are_ours_errors_never() {
        let at = |file: &str, severity: Severity, message: &str| {
            let mut d = Diagnostic::without_location(file, severity, message);
            d.line = Some(3);
            d
        };
        assert!(is_ours(&at("cmath", Severity::Warning, "w")));
        assert!(is_ours(&at(IMPLICIT_HEADER_NAME, Severity::Warning, "w")));
        assert!(is_ours(&at(
            "k.cu",
            Severity::Warning,
            "function \"__cudacheck_launched_0f_0\" was declared but never referenced"
        )));
        assert!(!is_ours(&at(
            "k.cu",
            Severity::Warning,
            "variable \"x\" unused"
        )));
        assert!(!is_ours(&at("cmath", Severity::Error, "e")));
        let kept = users_own(vec![
            at("cmath", Severity::Warning, "w"),
            at("k.cu", Severity::Warning, "mine"),
        ]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].message, "mine");
    }

    #[test]
    fn a_users_own_header_shadows_ours() {
        let dir = std::env::temp_dir().join(format!("cudacheck-headers-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("stdint.h"), "// mine").unwrap();
        let names: Vec<&str> = compat_headers(std::slice::from_ref(&dir))
            .iter()
            .map(|h| h.0)
            .collect();
        let _ = fs::remove_dir_all(&dir);
        assert!(!names.contains(&"stdint.h"));
        assert!(names.contains(&"cstdint"));
        assert_eq!(
            names.len(),
            COMPAT_HEADERS.len() + HOST_ONLY_HEADERS.len() + 1 - 1
        );
    }
}
