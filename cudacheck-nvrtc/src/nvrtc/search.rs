//! Where to look for NVRTC: the search order of the [module docs](super) as a list of places,
//! built from the environment without loading anything, so that it can be tested on fake trees.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that names NVRTC explicitly (a file or a directory), or `none`.
pub const ENV_VAR: &str = "CUDACHECK_NVRTC";

/// The bare sonames steps 2 and 7 ask the loader for, hands the system loader, newest first.
pub(crate) const SYSTEM_SONAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// The file names looked for in a candidate directory, in order of preference; any other
/// `libnvrtc.so.*` comes after these.
const LIB_FILE_NAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// Which step of the search found (or failed to find) NVRTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SearchStep {
    /// 1. `CUDACHECK_NVRTC`.
    EnvVar,
    /// 2. A libnvrtc already loaded in this process.
    AlreadyLoaded,
    /// 3. `$CUDA_PATH`.
    CudaPath,
    /// 3. `$CUDA_HOME`.
    CudaHome,
    /// 4. A pip wheel (`nvidia-cuda-nvrtc`).
    PipWheel,
    /// 5. `$CONDA_PREFIX/lib`.
    Conda,
    /// 6. `/usr/local/cuda*`.
    SystemCuda,
    /// 7. The system loader's own search (`LD_LIBRARY_PATH`, `ld.so.cache`).
    SystemLoader,
}

impl SearchStep {
    /// Every step, in search order.
    pub const ALL: [SearchStep; 8] = [
        SearchStep::EnvVar,
        SearchStep::AlreadyLoaded,
        SearchStep::CudaPath,
        SearchStep::CudaHome,
        SearchStep::PipWheel,
        SearchStep::Conda,
        SearchStep::SystemCuda,
        SearchStep::SystemLoader,
    ];
}

impl fmt::Display for SearchStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SearchStep::EnvVar => "$CUDACHECK_NVRTC",
            SearchStep::AlreadyLoaded => "already loaded in this process",
            SearchStep::CudaPath => "$CUDA_PATH",
            SearchStep::CudaHome => "$CUDA_HOME",
            SearchStep::PipWheel => "pip wheel",
            SearchStep::Conda => "conda ($CONDA_PREFIX)",
            SearchStep::SystemCuda => "/usr/local/cuda",
            SearchStep::SystemLoader => "system loader",
        })
    }
}

/// What discovery reads from the outside world, gathered in one place so tests can fake it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SearchEnv {
    pub vars: HashMap<&'static str, OsString>,
    pub cwd: Option<PathBuf>,
    /// Prefix for absolute system paths (`/usr/local/cuda`, ...): `/` except in tests.
    pub root: PathBuf,
}

impl SearchEnv {
    const VARS: &'static [&'static str] = &[
        ENV_VAR,
        "CUDA_PATH",
        "CUDA_HOME",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "HOME",
        "CONDA_PREFIX",
    ];

    pub fn from_process() -> Self {
        SearchEnv {
            vars: Self::VARS
                .iter()
                .filter_map(|&k| std::env::var_os(k).map(|v| (k, v)))
                .filter(|(_, v)| !v.is_empty())
                .collect(),
            cwd: std::env::current_dir().ok(),
            root: PathBuf::from("/"),
        }
    }

    pub fn var(&self, name: &str) -> Option<&OsString> {
        self.vars.get(name)
    }

    /// An absolute system path under `root`.
    pub fn system(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
}

/// Where to look, before looking: a directory, or a soname for the loader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Dir(PathBuf),
    /// Ask glibc for an already-loaded object with this soname (step 2).
    Loaded(&'static str),
    /// Let the system loader search for this soname (step 7).
    Soname(&'static str),
    /// Nothing to look at; the string says why (`$CUDA_PATH is not set`).
    Nothing(String, String),
}

/// Steps 2 to 7 as a list of places, in order. Directories that do not exist are left out; a
/// step with none left gets one [`Place::Nothing`] saying what was looked for.
pub(crate) fn candidates(env: &SearchEnv) -> Vec<(SearchStep, Place)> {
    let mut out = Vec::new();
    for soname in SYSTEM_SONAMES {
        out.push((SearchStep::AlreadyLoaded, Place::Loaded(soname)));
    }
    for (step, var) in [
        (SearchStep::CudaPath, "CUDA_PATH"),
        (SearchStep::CudaHome, "CUDA_HOME"),
    ] {
        let Some(root) = env.var(var).map(PathBuf::from) else {
            out.push((step, Place::Nothing(format!("${var}"), "not set".into())));
            continue;
        };
        let dirs = ["lib64", "lib", "targets/x86_64-linux/lib"].map(|d| root.join(d));
        push_dirs(
            &mut out,
            step,
            &dirs,
            &format!("{}/{{lib64,lib,targets/x86_64-linux/lib}}", root.display()),
        );
    }
    let wheel_dirs: Vec<PathBuf> = pip_site_dirs(env)
        .iter()
        .flat_map(|site| {
            [
                "nvidia/cu13/lib",
                "nvidia/cu12/lib",
                "nvidia/cuda_nvrtc/lib",
            ]
            .map(|d| site.join(d))
        })
        .collect();
    push_dirs(
        &mut out,
        SearchStep::PipWheel,
        &wheel_dirs,
        "site-packages/nvidia/{cu13,cu12,cuda_nvrtc}/lib in $VIRTUAL_ENV, $PYTHONPATH, \
         ~/.local, /usr/local/lib/python3*, /usr/lib/python3, .cuda/py",
    );
    match env.var("CONDA_PREFIX") {
        Some(prefix) => {
            let dir = PathBuf::from(prefix).join("lib");
            push_dirs(
                &mut out,
                SearchStep::Conda,
                std::slice::from_ref(&dir),
                &dir.display().to_string(),
            );
        }
        None => out.push((
            SearchStep::Conda,
            Place::Nothing("$CONDA_PREFIX".into(), "not set".into()),
        )),
    }
    let mut cuda_dirs = vec![env.system("/usr/local/cuda/lib64")];
    cuda_dirs.extend(versioned_cuda_dirs(&env.system("/usr/local")));
    push_dirs(
        &mut out,
        SearchStep::SystemCuda,
        &cuda_dirs,
        "/usr/local/cuda/lib64, /usr/local/cuda-*/lib64",
    );
    for soname in SYSTEM_SONAMES {
        out.push((SearchStep::SystemLoader, Place::Soname(soname)));
    }
    out
}

fn push_dirs(out: &mut Vec<(SearchStep, Place)>, step: SearchStep, dirs: &[PathBuf], what: &str) {
    let before = out.len();
    for d in dirs.iter().filter(|d| d.is_dir()) {
        out.push((step, Place::Dir(d.clone())));
    }
    if out.len() == before {
        out.push((
            step,
            Place::Nothing(what.to_string(), "no such directory".into()),
        ));
    }
}

/// The site-packages-like directories of step 4, in order.
fn pip_site_dirs(env: &SearchEnv) -> Vec<PathBuf> {
    let mut sites = Vec::new();
    if let Some(venv) = env.var("VIRTUAL_ENV") {
        sites.extend(python_dirs(
            &PathBuf::from(venv).join("lib"),
            &["site-packages"],
        ));
    }
    if let Some(pp) = env.var("PYTHONPATH") {
        sites.extend(std::env::split_paths(pp).filter(|p| !p.as_os_str().is_empty()));
    }
    if let Some(home) = env.var("HOME") {
        sites.extend(python_dirs(
            &PathBuf::from(home).join(".local/lib"),
            &["site-packages"],
        ));
    }
    sites.extend(python_dirs(
        &env.system("/usr/local/lib"),
        &["site-packages", "dist-packages"],
    ));
    sites.push(env.system("/usr/lib/python3/dist-packages"));
    // The project-local install of scripts/setup-cuda.sh, from the current directory up.
    if let Some(cwd) = &env.cwd {
        sites.extend(cwd.ancestors().map(|a| a.join(".cuda/py")));
    }
    sites
}

/// `<lib>/python3*/<leaf>` for each leaf, newest Python first.
fn python_dirs(lib: &Path, leaves: &[&str]) -> Vec<PathBuf> {
    let mut pythons: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(lib)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = name.strip_prefix("python3")?;
            Some((version_key(&format!("3{version}")), e.path()))
        })
        .collect();
    pythons.sort_by(|a, b| b.0.cmp(&a.0));
    pythons
        .into_iter()
        .flat_map(|(_, p)| leaves.iter().map(move |leaf| p.join(leaf)))
        .collect()
}

/// `/usr/local/cuda-X.Y/lib64`, newest first.
fn versioned_cuda_dirs(usr_local: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(usr_local)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = name.strip_prefix("cuda-")?;
            Some((version_key(version), e.path().join("lib64")))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, p)| p).collect()
}

/// `12.10` sorts after `12.9`.
fn version_key(s: &str) -> Vec<u32> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The libnvrtc files in `dir`, preferred first. The `.alt` variant and the builtins are not
/// candidates: the first is a second build of the same library, the second is not NVRTC.
pub(crate) fn lib_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = LIB_FILE_NAMES
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| p.is_file())
        .collect();
    let mut others: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc.so.") && !LIB_FILE_NAMES.contains(&n))
        })
        .collect();
    others.sort();
    others.reverse();
    files.extend(others);
    files
}

/// The `libnvrtc-builtins.so.<major>.*` beside `lib`, if any. libnvrtc dlopens it by soname
/// on its first compile and finds it only on the loader's path; opening it first, by full
/// path, makes that dlopen return this copy.
pub(crate) fn builtins_beside(lib: &Path) -> Option<PathBuf> {
    let dir = lib.parent()?;
    let name = lib.file_name()?.to_str()?;
    let major = name
        .strip_prefix("libnvrtc.so.")
        .and_then(|v| v.split('.').next());
    let prefix = match major {
        Some(m) => format!("libnvrtc-builtins.so.{m}"),
        None => "libnvrtc-builtins.so".to_string(),
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    found.sort();
    found.pop()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;

    /// A fresh directory tree under the system temp dir, removed on drop.
    pub(crate) struct Tree(pub PathBuf);
    impl Tree {
        pub(crate) fn new(tag: &str) -> Self {
            let p = std::env::temp_dir()
                .join(format!("cudacheck-discover-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Tree(p)
        }
        pub(crate) fn dir(&self, rel: &str) -> PathBuf {
            let p = self.0.join(rel);
            fs::create_dir_all(&p).unwrap();
            p
        }
    }
    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    pub(crate) fn env(t: &Tree, vars: &[(&'static str, PathBuf)]) -> SearchEnv {
        SearchEnv {
            vars: vars
                .iter()
                .map(|(k, v)| (*k, v.clone().into_os_string()))
                .collect(),
            cwd: Some(t.0.join("proj/sub")),
            root: t.0.join("root"),
        }
    }

    fn dirs_of(c: &[(SearchStep, Place)]) -> Vec<(SearchStep, PathBuf)> {
        c.iter()
            .filter_map(|(s, p)| match p {
                Place::Dir(d) => Some((*s, d.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn candidates_follow_the_documented_order() {
        let t = Tree::new("order");
        let cuda_path = t.dir("cp");
        t.dir("cp/lib64");
        t.dir("cp/targets/x86_64-linux/lib");
        let cuda_home = t.dir("ch");
        t.dir("ch/lib");
        let venv = t.dir("venv");
        t.dir("venv/lib/python3.12/site-packages/nvidia/cu13/lib");
        let pp = t.dir("pp");
        t.dir("pp/nvidia/cuda_nvrtc/lib");
        let home = t.dir("home");
        t.dir("home/.local/lib/python3.11/site-packages/nvidia/cu12/lib");
        t.dir("root/usr/local/lib/python3.10/dist-packages/nvidia/cu13/lib");
        t.dir("root/usr/lib/python3/dist-packages/nvidia/cu13/lib");
        t.dir("proj/sub");
        t.dir("proj/.cuda/py/nvidia/cu13/lib");
        let conda = t.dir("conda");
        t.dir("conda/lib");
        t.dir("root/usr/local/cuda/lib64");
        t.dir("root/usr/local/cuda-12.9/lib64");
        t.dir("root/usr/local/cuda-12.10/lib64");
        t.dir("root/usr/local/cuda-13.0/lib64");
        let e = env(
            &t,
            &[
                ("CUDA_PATH", cuda_path),
                ("CUDA_HOME", cuda_home),
                ("VIRTUAL_ENV", venv),
                ("PYTHONPATH", pp),
                ("HOME", home),
                ("CONDA_PREFIX", conda),
            ],
        );
        let c = candidates(&e);
        let rel = |p: &PathBuf| p.strip_prefix(&t.0).unwrap().display().to_string();
        let got: Vec<(SearchStep, String)> =
            dirs_of(&c).iter().map(|(s, p)| (*s, rel(p))).collect();
        use SearchStep::*;
        let want: Vec<(SearchStep, String)> = [
            (CudaPath, "cp/lib64"),
            (CudaPath, "cp/targets/x86_64-linux/lib"),
            (CudaHome, "ch/lib"),
            (
                PipWheel,
                "venv/lib/python3.12/site-packages/nvidia/cu13/lib",
            ),
            (PipWheel, "pp/nvidia/cuda_nvrtc/lib"),
            (
                PipWheel,
                "home/.local/lib/python3.11/site-packages/nvidia/cu12/lib",
            ),
            (
                PipWheel,
                "root/usr/local/lib/python3.10/dist-packages/nvidia/cu13/lib",
            ),
            (
                PipWheel,
                "root/usr/lib/python3/dist-packages/nvidia/cu13/lib",
            ),
            (PipWheel, "proj/.cuda/py/nvidia/cu13/lib"),
            (Conda, "conda/lib"),
            (SystemCuda, "root/usr/local/cuda/lib64"),
            (SystemCuda, "root/usr/local/cuda-13.0/lib64"),
            (SystemCuda, "root/usr/local/cuda-12.10/lib64"),
            (SystemCuda, "root/usr/local/cuda-12.9/lib64"),
        ]
        .iter()
        .map(|(s, p)| (*s, p.to_string()))
        .collect();
        assert_eq!(got, want);
        // Step 2 comes first and step 7 last, each with the sonames newest first.
        assert_eq!(c[0], (AlreadyLoaded, Place::Loaded("libnvrtc.so.13")));
        assert_eq!(
            c.last().unwrap(),
            &(SystemLoader, Place::Soname("libnvrtc.so"))
        );
        let steps: Vec<SearchStep> = c.iter().map(|(s, _)| *s).collect();
        let mut sorted = steps.clone();
        sorted.sort_by_key(|s| SearchStep::ALL.iter().position(|a| a == s));
        assert_eq!(steps, sorted, "steps out of order");
    }

    #[test]
    fn unset_variables_and_missing_dirs_are_reported_not_skipped() {
        let t = Tree::new("empty");
        let c = candidates(&env(&t, &[]));
        assert!(c.contains(&(
            SearchStep::CudaPath,
            Place::Nothing("$CUDA_PATH".into(), "not set".into())
        )));
        assert!(c.contains(&(
            SearchStep::Conda,
            Place::Nothing("$CONDA_PREFIX".into(), "not set".into())
        )));
        assert!(c.iter().any(|(s, p)| *s == SearchStep::SystemCuda
            && matches!(p, Place::Nothing(_, why) if why == "no such directory")));
    }

    #[test]
    fn lib_files_prefer_the_newest_soname_and_skip_alt_and_builtins() {
        let t = Tree::new("files");
        let d = t.dir("lib");
        for n in [
            "libnvrtc.so.12",
            "libnvrtc.so.13",
            "libnvrtc.alt.so.13",
            "libnvrtc-builtins.so.13.0",
            "libnvrtc.so.11.2",
        ] {
            fs::write(d.join(n), b"").unwrap();
        }
        let names: Vec<String> = lib_files_in(&d)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"]
        );
        assert_eq!(
            builtins_beside(&d.join("libnvrtc.so.13")).unwrap(),
            d.join("libnvrtc-builtins.so.13.0")
        );
        assert_eq!(builtins_beside(&d.join("libnvrtc.so.12")), None);
    }
}
