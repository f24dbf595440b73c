//! CUDA header directories: NVRTC knows no include path of its own. [`cuda_include_dirs`]
//! finds the toolkit's `include` (and `include/cccl`, where CUDA 13 keeps `cuda/std/*`) next
//! to the NVRTC library, in a pip wheel, under `$CUDA_PATH` or `/usr/local/cuda`. A directory
//! counts only if it holds a CUDA header: `/usr/include` beside a distribution's libnvrtc would
//! otherwise pull glibc's headers, which NVRTC cannot compile, into every program.
//!
//! Part of discovery (the library and its headers are found together), below the compatibility
//! headers of `headers.rs`, which re-exports the public items.

use std::path::{Path, PathBuf};

use super::search::SearchEnv;

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

/// Whether `dir` is a CUDA toolkit's include directory (or its `cccl` folder): it holds both
/// `cuda_runtime.h` and `crt/host_defines.h`, or CCCL's `cuda/std/version` beside `cub/` and
/// `thrust/`. Such a directory passed with `-I` (a habit from nvcc command lines) still holds
/// the toolkit's headers, not the project's: they are not scanned for host code, hashed into
/// fingerprints, or searched before the project's own directories.
pub fn is_toolkit_include_dir(dir: &Path) -> bool {
    (dir.join("cuda_runtime.h").is_file() && dir.join("crt/host_defines.h").is_file())
        || (dir.join("cuda/std/version").is_file()
            && dir.join("cub").is_dir()
            && dir.join("thrust").is_dir())
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
    use super::*;
    use std::fs;

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
