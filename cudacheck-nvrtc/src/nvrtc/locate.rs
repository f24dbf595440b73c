//! Where [`nvrtc`](super::nvrtc) would load NVRTC from, found without loading it.
//!
//! Loading libnvrtc (about 100 MB, with its builtins) takes tens of milliseconds, far more than
//! a module cache hit; the cache keys a compile by the library's file identity instead, so a
//! process whose kernels all come from the cache never loads NVRTC. The guess follows the
//! documented search order over files only; where only loading can tell (a libnvrtc already in
//! the process, the system loader's own path), there is no guess and the cache loads NVRTC as
//! a compile would. The guess can be wrong only where discovery passes over a file that does
//! not load; the cache therefore stores an entry only when the library actually loaded is the
//! one guessed, so an entry always comes from the library its key names.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::ffi;
use super::include_dirs::cuda_include_dirs;
use super::search::{builtins_beside, candidates, lib_files_in, Place, SearchEnv, ENV_VAR};

/// The library discovery would load and what a compile derives from its location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Located {
    pub path: PathBuf,
    pub builtins: Option<PathBuf>,
    /// The CUDA include directories a compile with this library passes (see
    /// [`super::headers`]).
    pub include_dirs: Vec<PathBuf>,
}

/// [`locate_in`] for this process's environment, once per process.
pub(crate) fn locate() -> Option<&'static Located> {
    static LOCATED: OnceLock<Option<Located>> = OnceLock::new();
    LOCATED
        .get_or_init(|| locate_in(&SearchEnv::from_process()))
        .as_ref()
}

/// The first libnvrtc file the search would try, or `None` when the search would have to
/// load something to decide.
pub(crate) fn locate_in(env: &SearchEnv) -> Option<Located> {
    let file = match env.var(ENV_VAR) {
        Some(v) if v == "none" => return None,
        Some(v) => {
            let p = PathBuf::from(v);
            if p.is_dir() {
                lib_files_in(&p).into_iter().next()?
            } else {
                p.is_file().then_some(p)?
            }
        }
        None => candidates(env)
            .into_iter()
            .find_map(|(_, place)| match place {
                Place::Dir(d) => lib_files_in(&d).into_iter().next().map(Some),
                Place::Nothing(..) => None,
                // A libnvrtc already in the process wins; asking costs no load (RTLD_NOLOAD).
                Place::Loaded(soname) => ffi::open_if_loaded(soname).map(|_| None),
                // The loader's own choice: only a dlopen can say.
                Place::Soname(_) => Some(None),
            })??,
    };
    Some(Located {
        builtins: builtins_beside(&file),
        include_dirs: cuda_include_dirs(Some(&file), env),
        path: file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvrtc::search::tests::{env, Tree};
    use std::fs;

    #[test]
    fn an_explicit_directory_names_its_library_and_builtins() {
        let t = Tree::new("locate-dir");
        let d = t.dir("lib");
        fs::write(d.join("libnvrtc.so.13"), b"").unwrap();
        fs::write(d.join("libnvrtc-builtins.so.13.0"), b"").unwrap();
        let mut e = env(&t, &[]);
        e.vars.insert(ENV_VAR, d.clone().into_os_string());
        let l = locate_in(&e).expect("a guess");
        assert_eq!(l.path, d.join("libnvrtc.so.13"));
        assert_eq!(l.builtins, Some(d.join("libnvrtc-builtins.so.13.0")));
    }

    #[test]
    fn an_explicit_file_is_the_guess() {
        let t = Tree::new("locate-file");
        let f = t.dir("x").join("libnvrtc.so.12");
        fs::write(&f, b"").unwrap();
        let mut e = env(&t, &[]);
        e.vars.insert(ENV_VAR, f.clone().into_os_string());
        assert_eq!(locate_in(&e).map(|l| l.path), Some(f));
    }

    #[test]
    fn no_library_or_none_means_no_guess() {
        let t = Tree::new("locate-none");
        let mut e = env(&t, &[]);
        e.vars.insert(ENV_VAR, "none".into());
        assert_eq!(locate_in(&e), None);
        e.vars.insert(ENV_VAR, t.dir("empty").into_os_string());
        assert_eq!(locate_in(&e), None);
    }
}
