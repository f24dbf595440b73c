//! Finding and loading NVRTC without ever panicking (the search order is documented in the
//! [module docs](super)).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::Library;
use thiserror::Error;

use super::ffi::{self, Bound};
use super::include_dirs::cuda_include_dirs;
use super::search::{
    builtins_beside, candidates, lib_files_in, Place, SearchEnv, SearchStep, ENV_VAR,
};

/// One place looked at, and why NVRTC was not taken from there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchAttempt {
    pub step: SearchStep,
    /// A path, a soname, or a description such as `$CUDA_PATH` when the variable is unset.
    pub place: String,
    pub why_not: String,
}

/// NVRTC could not be found or loaded. Lists every place searched, and how to install it.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{}", self.render())]
#[non_exhaustive]
pub struct NvrtcNotFound {
    /// Every place looked at, in search order.
    pub searched: Vec<SearchAttempt>,
    /// Steps not searched because `CUDACHECK_NVRTC` was set (it is authoritative).
    pub skipped: Vec<SearchStep>,
}

impl NvrtcNotFound {
    fn render(&self) -> String {
        let mut s = String::from(
            "NVRTC (libnvrtc.so, NVIDIA's runtime CUDA compiler) was not found.\nSearched, in order:",
        );
        for (n, a) in self.searched.iter().enumerate() {
            let step = a.step.to_string();
            if a.place == step {
                s.push_str(&format!("\n  {}. {}: {}", n + 1, a.place, a.why_not));
            } else {
                s.push_str(&format!(
                    "\n  {}. [{step}] {}: {}",
                    n + 1,
                    a.place,
                    a.why_not
                ));
            }
        }
        if !self.skipped.is_empty() {
            let names: Vec<String> = self.skipped.iter().map(ToString::to_string).collect();
            s.push_str(&format!(
                "\nNot searched, because {ENV_VAR} is set: {}. Unset {ENV_VAR} to search them.",
                names.join(", ")
            ));
        }
        s.push_str(
            "\nTo fix, do one of:\
             \n  - pip install nvidia-cuda-nvrtc==13.0.* and set \
             CUDACHECK_NVRTC=<site-packages>/nvidia/cu13/lib/libnvrtc.so.13;\
             \n  - install the CUDA toolkit (it puts NVRTC in /usr/local/cuda/lib64);\
             \n  - in the cudacheck repository, run: eval \"$(scripts/setup-cuda.sh)\"",
        );
        s
    }
}

/// A loaded NVRTC, kept loaded for the life of the process.
#[derive(Debug)]
#[non_exhaustive]
pub struct Nvrtc {
    /// The libnvrtc file loaded.
    pub path: PathBuf,
    /// `nvrtcVersion`: (13, 0) for CUDA 13.0.
    pub version: (i32, i32),
    pub found_by: SearchStep,
    /// CUDA header directories found next to it (see [`super::headers::HeaderDir`]); added after the
    /// user's include directories on every compile.
    pub include_dirs: Vec<PathBuf>,
    /// `nvrtcGetSupportedArchs`, as `sm_XY`, oldest first.
    pub supported_arches: Vec<String>,
    /// The `libnvrtc-builtins` loaded beside it, if one was found there.
    pub builtins: Option<PathBuf>,
    pub(crate) bound: Bound,
    // Held open for the process: `bound`'s function pointers point into `_lib`, and NVRTC's
    // own dlopen of its builtins resolves to `_builtins` by soname.
    _lib: Library,
    _builtins: Option<Library>,
}

impl Nvrtc {
    /// Whether NVRTC can generate code for `sm` (an `sm_XY` name).
    pub fn supports(&self, sm: &str) -> bool {
        self.supported_arches.iter().any(|a| a == sm)
    }
}

/// Finds and loads NVRTC once per process; later calls return the same result.
///
/// # Errors
/// [`NvrtcNotFound`], listing every place searched, when no usable libnvrtc was found or
/// `CUDACHECK_NVRTC` names none (`none`, or a path that does not exist).
pub fn nvrtc() -> Result<&'static Nvrtc, NvrtcNotFound> {
    NVRTC
        .get_or_init(|| discover(&SearchEnv::from_process()))
        .as_ref()
        .map_err(Clone::clone)
}

static NVRTC: OnceLock<Result<Nvrtc, NvrtcNotFound>> = OnceLock::new();

/// The NVRTC this process loaded, if it loaded one already; never loads it.
pub fn loaded_nvrtc() -> Option<&'static Nvrtc> {
    NVRTC.get().and_then(|r| r.as_ref().ok())
}

/// Where a library with this soname is mapped in this process, from `/proc/self/maps`.
fn mapped_path(soname: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let stem = soname.split(".so").next().unwrap_or(soname);
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(PathBuf::from)
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{stem}.so")))
        })
}

/// A successful load, before its version is read.
struct Loaded {
    path: PathBuf,
    lib: Library,
    builtins: Option<(PathBuf, Library)>,
    bound: Bound,
}

/// Opens `file` (its builtins first) and resolves the functions cudacheck calls.
fn load_file(file: &Path) -> Result<Loaded, String> {
    let builtins =
        builtins_beside(file).and_then(|p| ffi::open_library(&p).ok().map(|lib| (p, lib)));
    let lib = ffi::open_library(file).map_err(|e| ffi::describe(&e))?;
    let bound = ffi::bind(&lib)?;
    Ok(Loaded {
        path: file.to_path_buf(),
        lib,
        builtins,
        bound,
    })
}

fn load_dir(dir: &Path) -> Result<Loaded, String> {
    let files = lib_files_in(dir);
    if files.is_empty() {
        return Err("no libnvrtc.so* here".into());
    }
    let mut reasons = Vec::new();
    for f in files {
        match load_file(&f) {
            Ok(l) => return Ok(l),
            Err(e) => reasons.push(format!("{}: {e}", f.display())),
        }
    }
    Err(reasons.join("; "))
}

fn load_place(place: &Place) -> Result<Loaded, String> {
    match place {
        Place::Dir(d) => load_dir(d),
        Place::Nothing(_, why) => Err(why.clone()),
        Place::Loaded(soname) => {
            let lib = ffi::open_if_loaded(soname).ok_or_else(|| "not loaded".to_string())?;
            let bound = ffi::bind(&lib)?;
            Ok(Loaded {
                path: mapped_path(soname).unwrap_or_else(|| PathBuf::from(soname)),
                lib,
                builtins: None,
                bound,
            })
        }
        Place::Soname(soname) => {
            let lib = ffi::open_library(Path::new(soname)).map_err(|e| {
                let why = ffi::describe(&e);
                let why = why.strip_prefix("dlopen failed: ").unwrap_or(&why);
                format!("not on the loader's path ({why})")
            })?;
            let path = mapped_path(soname).unwrap_or_else(|| PathBuf::from(soname));
            // The builtins beside the file the loader picked, for the same reason as above.
            let builtins =
                builtins_beside(&path).and_then(|p| ffi::open_library(&p).ok().map(|l| (p, l)));
            let bound = ffi::bind(&lib)?;
            Ok(Loaded {
                path,
                lib,
                builtins,
                bound,
            })
        }
    }
}

fn place_name(place: &Place) -> String {
    match place {
        Place::Dir(d) => d.display().to_string(),
        Place::Loaded(s) | Place::Soname(s) => (*s).to_string(),
        Place::Nothing(what, _) => what.clone(),
    }
}

/// Runs the search against `env`. Not cached: [`nvrtc`] caches it.
pub(crate) fn discover(env: &SearchEnv) -> Result<Nvrtc, NvrtcNotFound> {
    let mut searched = Vec::new();
    if let Some(value) = env.var(ENV_VAR) {
        // An explicit choice is authoritative: falling back to another NVRTC would hide that
        // the one asked for is broken, and `none` is how tests simulate its absence.
        let skipped = SearchStep::ALL[1..].to_vec();
        let place = format!("{ENV_VAR}={}", value.to_string_lossy());
        let fail = |why_not: String| NvrtcNotFound {
            searched: vec![SearchAttempt {
                step: SearchStep::EnvVar,
                place: place.clone(),
                why_not,
            }],
            skipped: skipped.clone(),
        };
        if value == "none" {
            return Err(fail("set to `none`: NVRTC is treated as absent".into()));
        }
        let path = PathBuf::from(value);
        let loaded = if path.is_dir() {
            load_dir(&path)
        } else if path.exists() {
            load_file(&path)
        } else {
            Err("no such file or directory".into())
        };
        return loaded
            .and_then(|l| finish(l, SearchStep::EnvVar, env))
            .map_err(fail);
    }
    searched.push(SearchAttempt {
        step: SearchStep::EnvVar,
        place: format!("${ENV_VAR}"),
        why_not: "not set".into(),
    });
    for (step, place) in candidates(env) {
        match load_place(&place).and_then(|l| finish(l, step, env)) {
            Ok(n) => return Ok(n),
            Err(why_not) => searched.push(SearchAttempt {
                step,
                place: place_name(&place),
                why_not,
            }),
        }
    }
    Err(NvrtcNotFound {
        searched,
        skipped: Vec::new(),
    })
}

/// Reads the version and architectures of a loaded, bound NVRTC.
fn finish(l: Loaded, found_by: SearchStep, env: &SearchEnv) -> Result<Nvrtc, String> {
    let version = ffi::version(&l.bound).map_err(|e| format!("{} failed: {:?}", e.call, e.code))?;
    let supported_arches =
        ffi::supported_arches(&l.bound).map_err(|e| format!("{} failed: {:?}", e.call, e.code))?;
    let (builtins, builtins_lib) = match l.builtins {
        Some((p, lib)) => (Some(p), Some(lib)),
        None => (None, None),
    };
    Ok(Nvrtc {
        include_dirs: cuda_include_dirs(Some(&l.path), env),
        path: l.path,
        version,
        found_by,
        supported_arches,
        builtins,
        bound: l.bound,
        _lib: l.lib,
        _builtins: builtins_lib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvrtc::search::tests::{env, Tree};
    use std::fs;

    #[test]
    fn env_var_none_fails_at_once_naming_the_fix() {
        let t = Tree::new("none");
        let mut e = env(&t, &[]);
        e.vars.insert(ENV_VAR, "none".into());
        let err = discover(&e).unwrap_err();
        assert_eq!(err.searched.len(), 1);
        assert_eq!(err.searched[0].step, SearchStep::EnvVar);
        assert_eq!(err.skipped.len(), SearchStep::ALL.len() - 1);
        let text = err.to_string();
        assert!(
            text.contains("CUDACHECK_NVRTC=none: set to `none`"),
            "{text}"
        );
        assert!(
            text.contains("pip install nvidia-cuda-nvrtc==13.0.*"),
            "{text}"
        );
        assert!(text.contains("scripts/setup-cuda.sh"), "{text}");
        assert!(
            text.contains("Not searched, because CUDACHECK_NVRTC is set"),
            "{text}"
        );
    }

    #[test]
    fn env_var_to_a_missing_path_fails_without_fallback() {
        let t = Tree::new("missing");
        let mut e = env(&t, &[]);
        e.vars
            .insert(ENV_VAR, t.0.join("nope/libnvrtc.so.13").into_os_string());
        let err = discover(&e).unwrap_err();
        assert_eq!(err.searched[0].why_not, "no such file or directory");
    }

    #[test]
    fn a_file_that_is_not_a_library_is_an_attempt_not_a_panic() {
        let t = Tree::new("bogus");
        let d = t.dir("lib");
        fs::write(d.join("libnvrtc.so.13"), b"not an ELF").unwrap();
        let mut e = env(&t, &[]);
        e.vars.insert(ENV_VAR, d.into_os_string());
        let err = discover(&e).unwrap_err();
        assert!(err.searched[0].why_not.contains("dlopen failed"), "{err}");
    }

    /// The claim the whole design rests on: every NVRTC call goes to the library discovery
    /// loaded (not to one cudarc or the link step would pick), and it compiles.
    #[test]
    fn nvrtc_calls_go_to_the_library_we_loaded() {
        let n = match nvrtc() {
            Ok(n) => n,
            Err(e) if std::env::var("CUDACHECK_REQUIRE_NVRTC").as_deref() == Ok("1") => {
                panic!("CUDACHECK_REQUIRE_NVRTC=1 but NVRTC was not found:\n{e}")
            }
            Err(_) => {
                println!("skipped (NVRTC tier): NVRTC not found");
                return;
            }
        };
        let ours = ffi::symbol_address(&n._lib, "nvrtcVersion");
        assert!(ours.is_some());
        assert_eq!(Some(n.bound.version_address()), ours);
        let (major, _) = ffi::version(&n.bound).expect("nvrtcVersion");
        assert_eq!((major, n.version.1), n.version);
    }
}
