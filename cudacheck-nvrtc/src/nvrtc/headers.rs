//! CUDA header directories, and the C library headers NVRTC lacks.
//!
//! # CUDA headers
//! NVRTC knows no include path of its own. `cuda_include_dirs` finds the toolkit's `include`
//! (and `include/cccl`, where CUDA 13 keeps `cuda/std/*`) next to the NVRTC library, in a pip
//! wheel, under `$CUDA_PATH` or `/usr/local/cuda`. A directory counts only if it holds a CUDA
//! header: `/usr/include` beside a distribution's libnvrtc would otherwise pull glibc's headers,
//! which NVRTC cannot compile, into every program.
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
use super::search::SearchEnv;

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

/// A header directory, and which of the headers kernels commonly need it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderDir {
    pub path: PathBuf,
    pub has_cuda_fp16: bool,
    pub has_cuda_bf16: bool,
    /// `cuda/std/` (libcu++), in `include/cccl` since CUDA 13.
    pub has_cuda_std: bool,
}

impl HeaderDir {
    pub fn inspect(path: &Path) -> Self {
        HeaderDir {
            path: path.to_path_buf(),
            has_cuda_fp16: path.join("cuda_fp16.h").is_file(),
            has_cuda_bf16: path.join("cuda_bf16.h").is_file(),
            has_cuda_std: path.join("cuda/std/version").is_file(),
        }
    }

    /// Holds something a CUDA kernel includes.
    fn is_cuda(&self) -> bool {
        self.has_cuda_fp16
            || self.has_cuda_bf16
            || self.has_cuda_std
            || self.path.join("cuda_runtime.h").is_file()
            || self.path.join("crt/host_defines.h").is_file()
    }
}

/// The CUDA include directories this process's environment names, with no NVRTC to start
/// from (what `cudacheck doctor` shows when NVRTC is absent).
#[doc(hidden)]
pub fn cuda_include_dirs_here() -> Vec<PathBuf> {
    cuda_include_dirs(None, &SearchEnv::from_process())
}

/// CUDA include directories, in search order, deduplicated, only those holding CUDA headers.
/// `nvrtc_lib` is the loaded libnvrtc, when there is one.
///
/// The headers beside the library, when there are any, are used alone: NVRTC and its headers
/// are released together, and headers of another CUDA release (a toolkit in `/usr/local/cuda`,
/// this repository's `.cuda/py`) behind them would fill a header missing from the wheel with
/// one written for another compiler (CCCL 3.5's `<cuda/std/...>` under NVRTC 12.4 fails).
/// Only an NVRTC with no headers beside it (a distribution's, one the loader found) borrows
/// the others.
pub(crate) fn cuda_include_dirs(nvrtc_lib: Option<&Path>, env: &SearchEnv) -> Vec<PathBuf> {
    let mut beside: Vec<PathBuf> = Vec::new();
    if let Some(lib_dir) = nvrtc_lib.and_then(Path::parent) {
        // Toolkit: lib64/../include; targets/x86_64-linux/lib/../include; pip wheel:
        // nvidia/cu13/lib/../include. CUDA 12 wheels split the headers into sibling packages:
        // cuda_runtime, cuda_cccl, and cuda_nvcc, whose include/crt holds what <mma.h> includes.
        beside.push(lib_dir.join("../include"));
        beside.push(lib_dir.join("../../include"));
        beside.push(lib_dir.join("../../cuda_runtime/include"));
        beside.push(lib_dir.join("../../cuda_cccl/include"));
        beside.push(lib_dir.join("../../cuda_nvcc/include"));
    }
    let out = header_dirs_under(beside);
    if !out.is_empty() {
        return out;
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(cwd) = &env.cwd {
        if let Some(py) = cwd
            .ancestors()
            .map(|a| a.join(".cuda/py"))
            .find(|p| p.is_dir())
        {
            roots.push(py.join("nvidia/cu13/include"));
        }
    }
    if let Some(cuda_path) = env.var("CUDA_PATH") {
        roots.push(PathBuf::from(cuda_path).join("include"));
    }
    roots.push(env.system("/usr/local/cuda/include"));
    header_dirs_under(roots)
}

/// Each root and its `cccl` folder that holds CUDA headers, canonical, deduplicated.
fn header_dirs_under(roots: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots {
        for dir in [root.clone(), root.join("cccl")] {
            let Ok(canonical) = dir.canonicalize() else {
                continue;
            };
            if out.contains(&canonical) || !HeaderDir::inspect(&canonical).is_cuda() {
                continue;
            }
            out.push(canonical);
        }
    }
    out
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

    #[test]
    fn include_dirs_next_to_a_wheel_lib_and_not_plain_usr_include() {
        let t = std::env::temp_dir().join(format!("cudacheck-incdirs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        let lib = t.join("site/nvidia/cu13/lib");
        fs::create_dir_all(&lib).unwrap();
        fs::create_dir_all(t.join("site/nvidia/cu13/include/cccl/cuda/std")).unwrap();
        fs::write(t.join("site/nvidia/cu13/include/cuda_fp16.h"), "").unwrap();
        fs::write(t.join("site/nvidia/cu13/include/cccl/cuda/std/version"), "").unwrap();
        // A distribution layout: /usr/lib/x86_64-linux-gnu/../../include is /usr/include.
        fs::create_dir_all(t.join("usr/lib/x86_64-linux-gnu")).unwrap();
        fs::create_dir_all(t.join("usr/include")).unwrap();
        fs::write(t.join("usr/include/stdint.h"), "").unwrap();
        let env = SearchEnv {
            root: t.join("root"),
            ..SearchEnv::default()
        };
        let dirs = cuda_include_dirs(Some(&lib.join("libnvrtc.so.13")), &env);
        let inc = t.join("site/nvidia/cu13/include").canonicalize().unwrap();
        assert_eq!(dirs, vec![inc.clone(), inc.join("cccl")]);
        let distro = cuda_include_dirs(
            Some(&t.join("usr/lib/x86_64-linux-gnu/libnvrtc.so.13")),
            &env,
        );
        let _ = fs::remove_dir_all(&t);
        assert!(distro.is_empty(), "{distro:?}");
    }

    #[test]
    fn headers_beside_the_lib_are_used_alone() {
        let t = std::env::temp_dir().join(format!("cudacheck-incmatrix-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        // A CUDA 12 wheel set: NVRTC, the runtime's headers, CCCL, nvcc's crt/ headers.
        let lib = t.join("m/12.4/nvidia/cuda_nvrtc/lib");
        fs::create_dir_all(&lib).unwrap();
        for (dir, file) in [
            ("cuda_runtime/include", "cuda_fp16.h"),
            ("cuda_cccl/include/cuda/std", "version"),
            ("cuda_nvcc/include/crt", "host_defines.h"),
        ] {
            let d = t.join("m/12.4/nvidia").join(dir);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join(file), "").unwrap();
        }
        // The project's default release in .cuda/py, and a toolkit: another CUDA's headers.
        let proj = t.join("proj");
        fs::create_dir_all(proj.join(".cuda/py/nvidia/cu13/include")).unwrap();
        fs::write(proj.join(".cuda/py/nvidia/cu13/include/cuda_fp16.h"), "").unwrap();
        fs::create_dir_all(t.join("root/usr/local/cuda/include")).unwrap();
        fs::write(t.join("root/usr/local/cuda/include/cuda_fp16.h"), "").unwrap();
        let env = SearchEnv {
            root: t.join("root"),
            cwd: Some(proj.clone()),
            ..SearchEnv::default()
        };
        let dirs = cuda_include_dirs(Some(&lib.join("libnvrtc.so.12")), &env);
        let wheels = t.join("m/12.4/nvidia").canonicalize().unwrap();
        let expected: Vec<PathBuf> = [
            "cuda_runtime/include",
            "cuda_cccl/include",
            "cuda_nvcc/include",
        ]
        .iter()
        .map(|d| wheels.join(d))
        .collect();
        // An NVRTC with no headers beside it borrows the project's and the toolkit's.
        let bare = t.join("bare/lib");
        fs::create_dir_all(&bare).unwrap();
        let borrowed = cuda_include_dirs(Some(&bare.join("libnvrtc.so.13")), &env);
        let _ = fs::remove_dir_all(&t);
        assert_eq!(dirs, expected);
        assert_eq!(borrowed.len(), 2, "{borrowed:?}");
        assert!(
            borrowed[0].ends_with(".cuda/py/nvidia/cu13/include"),
            "{borrowed:?}"
        );
        assert!(
            borrowed[1].ends_with("usr/local/cuda/include"),
            "{borrowed:?}"
        );
    }
}
