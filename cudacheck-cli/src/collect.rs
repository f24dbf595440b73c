//! Turning the command line's paths into the list of `.cu` and `.ptx` files to check.

use std::fmt;
use std::path::{Path, PathBuf};

/// A path on the command line that yields nothing to check.
#[derive(Debug)]
pub enum CollectError {
    Missing(PathBuf),
    NoCudaFiles(PathBuf),
    Unreadable(PathBuf, std::io::Error),
}

impl fmt::Display for CollectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectError::Missing(p) => write!(f, "{}: no such file or directory", p.display()),
            CollectError::NoCudaFiles(p) => write!(
                f,
                "{}: directory holds no `.cu` or `.ptx` files (cudacheck checks files ending in .cu \
                 or .ptx)",
                p.display()
            ),
            CollectError::Unreadable(p, e) => write!(f, "{}: cannot read: {e}", p.display()),
        }
    }
}

/// Whether `path` is a PTX module (`.ptx`) rather than CUDA source.
pub fn is_ptx(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "ptx")
}

/// Every `.cu` and `.ptx` file named or found under the given paths, sorted, without
/// duplicates.
/// A file named explicitly is checked whatever its extension.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CollectError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            walk(p, &mut out)?;
            if out.len() == before {
                return Err(CollectError::NoCudaFiles(p.clone()));
            }
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(CollectError::Missing(p.clone()));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CollectError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| CollectError::Unreadable(dir.to_path_buf(), e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| CollectError::Unreadable(dir.to_path_buf(), e))?
            .path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "cu" || e == "ptx") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_path_is_named() {
        let e = collect(&[PathBuf::from("/definitely/not/here.cu")]).unwrap_err();
        assert!(matches!(e, CollectError::Missing(_)));
        assert!(e.to_string().contains("no such file"), "{e}");
    }

    #[test]
    fn empty_directory_is_an_error() {
        let dir = std::env::temp_dir().join(format!("cudacheck-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        let e = collect(std::slice::from_ref(&dir)).unwrap_err();
        assert!(e.to_string().contains("no `.cu` or `.ptx` files"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn finds_cu_files_recursively_and_sorted() {
        let dir = std::env::temp_dir().join(format!("cudacheck-walk-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("b.cu"), "").unwrap();
        std::fs::write(dir.join("sub/a.cu"), "").unwrap();
        std::fs::write(dir.join("c.cuh"), "").unwrap();
        let files = collect(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(files, vec![dir.join("b.cu"), dir.join("sub/a.cu")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
