//! The header files a source may read, for the cache key.
//!
//! NVRTC cannot say which files it read without compiling (its `-MD` output comes with the
//! compile), and the key is needed before the compile. So the closure is found the way a
//! conservative build system does it: every `#include` and `__has_include` in the source and,
//! recursively, in every header found, counts, including those inside `#if` branches that
//! will not be taken (a superset of what the preprocessor reads can only cost a needless
//! recompile, never a stale module). Each include name is looked up in every place NVRTC might
//! take it from (the including file's directory for `"..."`, then every `-I` directory in
//! order), and every file that exists there is hashed: a header that appears in front of
//! another one on the search path changes the key as surely as an edited one. Headers handed
//! to NVRTC in memory are hashed by the caller wholesale; where one is read (it is included by
//! name, or read before the source, as the implicit header is), its own includes are followed
//! like a file's: nvcc's implicit `<cuda_runtime.h>` and the `<cuda/std/...>` headers the
//! compatibility headers forward to are toolkit files like any other.
//!
//! An `#include MACRO` (computed include) in the user's own files cannot be followed without a
//! preprocessor, so such a source is compiled without the cache. In the CUDA toolkit's own
//! directories (Thrust picks backends that way) it is skipped: those directories change only
//! with the toolkit, and the key holds the NVRTC library's identity too. Toolkit headers'
//! scans are reused while their stamps hold (see `toolkit.rs`); the user's files are read on
//! every lookup. Each file read and each place looked in is recorded in a
//! [`Watch`], so that a later process can tell by `stat` alone that this lookup still holds
//! (`manifest.rs`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::stamp::Watch;
use super::toolkit::toolkit_scan;

/// Where a source's includes are looked up, in NVRTC's order.
pub(crate) struct SearchPath<'a> {
    /// The `-I` directories the user's side adds (the source's own directory first).
    pub user_dirs: &'a [PathBuf],
    /// The CUDA toolkit's include directories, searched after the user's.
    pub cuda_dirs: &'a [PathBuf],
    /// Where toolkit headers' scans are kept between processes (see `toolkit.rs`).
    pub memo: Option<&'a Path>,
}

/// One header file the source may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderFile {
    pub path: PathBuf,
    pub digest: [u8; 32],
}

/// Why a source's headers could not be listed; the source is then compiled without the cache.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unlisted {
    /// `#include MACRO` in one of the user's files.
    ComputedInclude { file: String, line: usize },
    /// A header exists but could not be read (permissions): its content cannot be hashed.
    Unreadable { path: PathBuf },
}

/// One include directive: the name between the brackets or quotes, and which it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Include {
    pub name: String,
    pub quoted: bool,
}

/// What scanning one file found.
#[derive(Debug)]
pub(super) struct Scanned {
    pub digest: [u8; 32],
    pub includes: Vec<Include>,
    /// Line of the first computed include, if any.
    pub computed: Option<usize>,
}

/// The headers NVRTC is handed in memory, as far as the include closure needs them.
pub(crate) struct InMemory<'a> {
    /// (include name, text): each is read where a file includes its name.
    pub headers: &'a [(&'a str, &'a str)],
    /// The names of those read before the source (`--pre-include`).
    pub pre_included: &'a [&'a str],
}

/// Every header file `text` (the source, named `name`, in directory `dir`) may read, in the
/// order first reached, when NVRTC is also handed `in_memory` headers: the includes of those
/// read are followed too. What the answer depends on is recorded in `watch`.
pub(crate) fn header_files(
    name: &str,
    text: &str,
    dir: Option<&Path>,
    in_memory: &InMemory<'_>,
    search: &SearchPath<'_>,
    watch: &mut Watch,
) -> Result<Vec<HeaderFile>, Unlisted> {
    let root = scan(text.as_bytes());
    if let Some(line) = root.computed {
        return Err(Unlisted::ComputedInclude {
            file: name.to_string(),
            line,
        });
    }
    // A `"..."` include in an in-memory source is looked up in the current directory.
    let cwd;
    let root_dir = match dir {
        Some(d) => d,
        None => {
            cwd = std::env::current_dir().unwrap_or_default();
            cwd.as_path()
        }
    };
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    // Each candidate path's answer: the file it resolves to, if it is one. Many headers include
    // the same names from one directory; each is looked up (and resolved) once.
    let mut probed: HashMap<PathBuf, Option<PathBuf>> = HashMap::new();
    // In-memory headers already followed. Their includes are looked up from the source's
    // directory; they are ours and hold no computed or relative includes.
    let mut memory_seen: HashSet<&str> = HashSet::new();
    let memory_includes = |name: &str| {
        let (_, text) = in_memory.headers.iter().find(|(n, _)| *n == name)?;
        Some((root_dir.to_path_buf(), scan(text.as_bytes()).includes))
    };
    // The source's includes first, then the pre-included headers' (a stack: pushed last).
    let mut work: Vec<(PathBuf, Vec<Include>)> = Vec::new();
    for name in in_memory.pre_included.iter().rev() {
        if memory_seen.insert(name) {
            work.extend(memory_includes(name));
        }
    }
    work.push((root_dir.to_path_buf(), root.includes));
    while let Some((from_dir, includes)) = work.pop() {
        // Pushed in reverse below, so headers are visited depth-first in include order.
        let mut next = Vec::new();
        for inc in &includes {
            // NVRTC takes an in-memory header of that name first; the files that could stand
            // there are listed too (a superset costs nothing but a needless recompile).
            if let Some((name, _)) = in_memory.headers.iter().find(|(n, _)| *n == inc.name) {
                if memory_seen.insert(name) {
                    next.extend(memory_includes(name));
                }
            }
            for candidate in candidates(inc, &from_dir, search) {
                let found = probed.entry(candidate).or_insert_with_key(|c| {
                    watch.lookup(c);
                    c.is_file()
                        .then(|| c.canonicalize().unwrap_or_else(|_| c.clone()))
                });
                let Some(path) = found.clone() else {
                    continue;
                };
                if !seen.insert(path.clone()) {
                    continue;
                }
                let in_toolkit = search.cuda_dirs.iter().any(|d| path.starts_with(d));
                // Stamped before it is read: a change after this gives a stamp of its own.
                let stamp = watch.file(&path);
                let scanned = match stamp {
                    None => None,
                    Some(s) if in_toolkit => toolkit_scan(&path, s, watch.settled(&s), search.memo),
                    Some(_) => std::fs::read(&path).ok().map(|b| Arc::new(scan(&b))),
                }
                .ok_or_else(|| Unlisted::Unreadable { path: path.clone() })?;
                if let (Some(line), false) = (scanned.computed, in_toolkit) {
                    return Err(Unlisted::ComputedInclude {
                        file: path.display().to_string(),
                        line,
                    });
                }
                out.push(HeaderFile {
                    path: path.clone(),
                    digest: scanned.digest,
                });
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                next.push((dir, scanned.includes.clone()));
            }
        }
        work.extend(next.into_iter().rev());
    }
    Ok(out)
}

/// Every place NVRTC may find `inc` when `from_dir`'s file includes it.
fn candidates(inc: &Include, from_dir: &Path, search: &SearchPath<'_>) -> Vec<PathBuf> {
    let header = cudacheck_core::text::HeaderName {
        name: inc.name.clone(),
        quoted: inc.quoted,
    };
    cudacheck_core::text::SearchPath {
        user_dirs: search.user_dirs,
        toolkit_dirs: search.cuda_dirs,
    }
    .candidates(&header, Some(from_dir))
}

/// Hashes `bytes` and lists its include directives, outside comments, whatever `#if` they sit
/// in.
pub(super) fn scan(bytes: &[u8]) -> Scanned {
    let digest = *blake3::hash(bytes).as_bytes();
    let found = cudacheck_core::text::all_includes(&String::from_utf8_lossy(bytes));
    Scanned {
        digest,
        includes: found
            .refs
            .into_iter()
            .map(|r| Include {
                name: r.header.name,
                quoted: r.header.quoted,
            })
            .collect(),
        computed: found.computed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(String, bool)> {
        scan(text.as_bytes())
            .includes
            .into_iter()
            .map(|i| (i.name, i.quoted))
            .collect()
    }

    #[test]
    fn includes_inside_every_if_branch_count() {
        let text = "#if 0\n#include \"a.h\"\n#else\n  #  include <b.h>\n#endif\n";
        assert_eq!(
            names(text),
            [("a.h".to_string(), true), ("b.h".to_string(), false)]
        );
    }

    #[test]
    fn includes_in_comments_do_not_count() {
        let text = "// #include \"a.h\"\n/* #include \"b.h\"\n */\nconst char* s = \"/*\";\n#include \"c.h\"\n";
        assert_eq!(names(text), [("c.h".to_string(), true)]);
    }

    #[test]
    fn has_include_operands_count() {
        let text = "#if __has_include(<cuda_fp8.h>) && defined(X)\n#endif\n";
        assert_eq!(names(text), [("cuda_fp8.h".to_string(), false)]);
    }

    #[test]
    fn a_continued_directive_is_one_line() {
        assert_eq!(
            names("#include \\\n  \"a.h\"\n"),
            [("a.h".to_string(), true)]
        );
    }

    #[test]
    fn a_computed_include_is_found_with_its_line() {
        let s = scan(b"\n\n#include HEADER\n");
        assert_eq!(s.computed, Some(3));
    }

    const NO_MEMORY: InMemory<'static> = InMemory {
        headers: &[],
        pre_included: &[],
    };

    /// The headers of a source `text` in `d`, with `d` as its only user directory.
    fn listed(d: &Path, text: &str) -> Result<Vec<HeaderFile>, Unlisted> {
        let search = SearchPath {
            user_dirs: &[d.to_path_buf()],
            cuda_dirs: &[],
            memo: None,
        };
        header_files(
            "k.cu",
            text,
            Some(d),
            &NO_MEMORY,
            &search,
            &mut Watch::new(),
        )
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cudacheck-deps-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("inc")).unwrap();
        d
    }

    #[test]
    fn headers_are_followed_through_other_headers() {
        let d = tmp("follow");
        std::fs::write(d.join("a.cuh"), "#include \"sub/b.cuh\"\n").unwrap();
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/b.cuh"), "#include \"c.cuh\"\n").unwrap();
        std::fs::write(d.join("sub/c.cuh"), "int c;\n").unwrap();
        let found = listed(&d, "#include \"a.cuh\"\n").unwrap();
        let d = d.canonicalize().unwrap();
        let paths: Vec<_> = found.iter().map(|h| h.path.clone()).collect();
        assert_eq!(
            paths,
            [d.join("a.cuh"), d.join("sub/b.cuh"), d.join("sub/c.cuh")]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_header_that_shadows_another_on_the_search_path_is_listed() {
        let d = tmp("shadow");
        std::fs::write(d.join("inc/h.cuh"), "int a;\n").unwrap();
        let search = SearchPath {
            user_dirs: &[d.clone(), d.join("inc")],
            cuda_dirs: &[],
            memo: None,
        };
        let list = || {
            header_files(
                "k.cu",
                "#include <h.cuh>\n",
                Some(&d),
                &NO_MEMORY,
                &search,
                &mut Watch::new(),
            )
            .unwrap()
        };
        assert_eq!(list().len(), 1);
        std::fs::write(d.join("h.cuh"), "int b;\n").unwrap();
        assert_eq!(list().len(), 2);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_computed_include_in_a_user_header_makes_the_source_unlisted() {
        let d = tmp("computed");
        std::fs::write(d.join("a.cuh"), "#include WHICH\n").unwrap();
        let e = listed(&d, "#include \"a.cuh\"\n").unwrap_err();
        assert!(
            matches!(e, Unlisted::ComputedInclude { line: 1, .. }),
            "{e:?}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn include_cycles_end() {
        let d = tmp("cycle");
        std::fs::write(
            d.join("a.cuh"),
            "#include \"../cycle-x/../a.cuh\"\n#include \"a.cuh\"\n",
        )
        .unwrap();
        let found = listed(&d, "#include \"a.cuh\"\n").unwrap();
        assert_eq!(found.len(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn in_memory_headers_that_are_read_have_their_includes_followed() {
        let d = tmp("memory");
        for f in ["pre.h", "used.h", "unused.h", "direct.h"] {
            std::fs::write(d.join("inc").join(f), "int x;\n").unwrap();
        }
        let search = SearchPath {
            user_dirs: &[],
            cuda_dirs: &[d.join("inc").canonicalize().unwrap()],
            memo: None,
        };
        let memory = InMemory {
            headers: &[
                ("implicit", "#include <pre.h>\n"),
                ("compat", "#include <used.h>\n"),
                ("other", "#include <unused.h>\n"),
            ],
            pre_included: &["implicit"],
        };
        let text = "#include <compat>\n#include <direct.h>\n";
        let found = header_files("k.cu", text, Some(&d), &memory, &search, &mut Watch::new());
        let names: Vec<String> = found
            .unwrap()
            .iter()
            .map(|h| h.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["direct.h", "used.h", "pre.h"]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
