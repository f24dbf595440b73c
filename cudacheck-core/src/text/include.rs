//! Include resolution in NVRTC's search order: a `"..."` include from the including file's
//! directory first, then every `-I` directory in order, then the toolkit's directories; a
//! `<...>` include skips the including file's directory. Files are reached only through a
//! [`FileReader`], so the order can be tested without a file system.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::directive::{directives, directives_and_literal_lines, has_includes, DirectiveKind};

/// The header an include names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HeaderName {
    /// The name between the quotes or brackets (`cuda/std/cstdint`).
    pub name: String,
    /// `"name"` rather than `<name>`.
    pub quoted: bool,
}

impl HeaderName {
    /// `"name"`.
    pub fn quoted(name: &str) -> Self {
        HeaderName {
            name: name.to_owned(),
            quoted: true,
        }
    }

    /// `<name>`.
    pub fn angled(name: &str) -> Self {
        HeaderName {
            name: name.to_owned(),
            quoted: false,
        }
    }
}

/// `<name>` or `"name"` at the start of `s` (after spaces).
pub fn header_name(s: &str) -> Option<HeaderName> {
    let s = s.trim_start();
    let (close, quoted) = match s.chars().next()? {
        '<' => ('>', false),
        '"' => ('"', true),
        _ => return None,
    };
    let body = &s[1..];
    let end = body.find(close)?;
    Some(HeaderName {
        name: body[..end].to_owned(),
        quoted,
    })
}

/// The header an `#include` line spells, if the line is one (comments and continuations are
/// not followed: for reading one line a diagnostic points at).
pub fn include_on_line(line: &str) -> Option<HeaderName> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    header_name(rest.strip_prefix("include")?)
}

/// One header a text names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludeRef {
    pub header: HeaderName,
    /// The 1-based line of the directive naming it.
    pub line: usize,
    /// Named by a `__has_include` test rather than included.
    pub tested: bool,
}

/// What a text's includes are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Includes {
    /// Every header an `#include`, `#include_next`, `#import` or `__has_include` names, in
    /// order, in every conditional branch, outside comments.
    pub refs: Vec<IncludeRef>,
    /// The line of the first computed include (`#include MACRO`), if any.
    pub computed: Option<usize>,
}

impl Includes {
    /// The headers the text includes (not those it only tests for), in order.
    pub fn included(&self) -> impl Iterator<Item = &HeaderName> {
        self.refs.iter().filter(|r| !r.tested).map(|r| &r.header)
    }
}

/// The includes of `src`.
pub fn includes(src: &str) -> Includes {
    includes_of(directives(src))
}

/// The includes of `src` and those of `#include` lines inside its multi-line string literals
/// (JIT source in a raw string), for a cache key: listing a header too many costs a needless
/// recompile, one too few a stale module.
pub fn all_includes(src: &str) -> Includes {
    includes_of(directives_and_literal_lines(src))
}

fn includes_of(dirs: Vec<super::directive::Directive>) -> Includes {
    let mut out = Includes::default();
    for d in dirs {
        if let DirectiveKind::Include(h) = &d.kind {
            match h {
                Some(h) => out.refs.push(IncludeRef {
                    header: h.clone(),
                    line: d.line,
                    tested: false,
                }),
                None => {
                    out.computed.get_or_insert(d.line);
                }
            }
        }
        // `#if __has_include(<x>)`: whether x exists changes what is compiled.
        out.refs
            .extend(has_includes(&d.rest).into_iter().map(|header| IncludeRef {
                header,
                line: d.line,
                tested: true,
            }));
    }
    out
}

/// Where includes are looked for, after the including file's own directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchPath<'a> {
    /// The `-I` directories, in order.
    pub user_dirs: &'a [PathBuf],
    /// The CUDA toolkit's include directories, searched after the user's.
    pub toolkit_dirs: &'a [PathBuf],
}

impl SearchPath<'_> {
    /// Every place `h` may be found when a file in `from_dir` includes it, in NVRTC's order.
    pub fn candidates(&self, h: &HeaderName, from_dir: Option<&Path>) -> Vec<PathBuf> {
        let name = Path::new(&h.name);
        if name.is_absolute() {
            return vec![name.to_path_buf()];
        }
        let here = from_dir.filter(|_| h.quoted).map(|d| d.join(name));
        here.into_iter()
            .chain(
                self.user_dirs
                    .iter()
                    .chain(self.toolkit_dirs)
                    .map(|d| d.join(name)),
            )
            .collect()
    }

    /// The file `h` names when a file in `from_dir` includes it: the first candidate that is
    /// one, as `files` names it; `None` when there is none.
    pub fn resolve(
        &self,
        h: &HeaderName,
        from_dir: Option<&Path>,
        files: &dyn FileReader,
    ) -> Option<PathBuf> {
        self.candidates(h, from_dir)
            .iter()
            .find_map(|c| files.find(c))
    }
}

/// How include resolution reaches files.
pub trait FileReader {
    /// The file at `path` under the name it is known by (canonical, for files on disk), or
    /// `None` when there is no file there.
    fn find(&self, path: &Path) -> Option<PathBuf>;
    /// The text of the file at `path`, or `None` when it cannot be read.
    fn read(&self, path: &Path) -> Option<String>;
}

/// Files on disk: the file system is reached here and nowhere else in this layer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Disk;

impl FileReader for Disk {
    fn find(&self, path: &Path) -> Option<PathBuf> {
        path.is_file()
            .then(|| path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
    }

    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// One include followed by [`include_closure`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Included {
    /// The header as the include spells it.
    pub header: HeaderName,
    /// The file it resolved to.
    pub path: PathBuf,
    /// The file's text, the first time the file is reached (`None` after, or when it could
    /// not be read).
    pub text: Option<String>,
}

/// The `#include`s of `src` (a file in `dir`) that `follow` accepts, resolved on `search`
/// through `files`, and theirs in turn, depth first; at most `max_files` files are read.
/// An include that resolves to nothing is passed over.
pub fn include_closure(
    src: &str,
    dir: Option<&Path>,
    search: &SearchPath<'_>,
    files: &dyn FileReader,
    follow: &dyn Fn(&HeaderName) -> bool,
    max_files: usize,
) -> Vec<Included> {
    let mut out = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let first: Vec<HeaderName> = includes(src).included().cloned().collect();
    let mut work: Vec<(Option<PathBuf>, Vec<HeaderName>)> =
        vec![(dir.map(Path::to_path_buf), first)];
    while let Some((from, headers)) = work.pop() {
        let mut next = Vec::new();
        for h in headers.into_iter().filter(|h| follow(h)) {
            let Some(path) = search.resolve(&h, from.as_deref(), files) else {
                continue;
            };
            let text = if seen.len() < max_files && seen.insert(path.clone()) {
                files.read(&path)
            } else {
                None
            };
            if let Some(t) = &text {
                next.push((
                    path.parent().map(Path::to_path_buf),
                    includes(t).included().cloned().collect(),
                ));
            }
            out.push(Included {
                header: h,
                path,
                text,
            });
        }
        work.extend(next.into_iter().rev());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Memory(HashMap<PathBuf, String>);

    impl FileReader for Memory {
        fn find(&self, path: &Path) -> Option<PathBuf> {
            self.0.contains_key(path).then(|| path.to_path_buf())
        }
        fn read(&self, path: &Path) -> Option<String> {
            self.0.get(path).cloned()
        }
    }

    fn memory(files: &[(&str, &str)]) -> Memory {
        Memory(
            files
                .iter()
                .map(|(p, t)| (PathBuf::from(p), t.to_string()))
                .collect(),
        )
    }

    #[test]
    fn quoted_includes_look_beside_the_file_first_then_user_then_toolkit() {
        let user = [PathBuf::from("/i1"), PathBuf::from("/i2")];
        let cuda = [PathBuf::from("/cuda")];
        let s = SearchPath {
            user_dirs: &user,
            toolkit_dirs: &cuda,
        };
        let dir = Path::new("/src");
        assert_eq!(
            s.candidates(&HeaderName::quoted("a.h"), Some(dir)),
            ["/src/a.h", "/i1/a.h", "/i2/a.h", "/cuda/a.h"].map(PathBuf::from)
        );
        assert_eq!(
            s.candidates(&HeaderName::angled("a.h"), Some(dir)),
            ["/i1/a.h", "/i2/a.h", "/cuda/a.h"].map(PathBuf::from)
        );
        assert_eq!(
            s.candidates(&HeaderName::angled("/abs/a.h"), Some(dir)),
            [PathBuf::from("/abs/a.h")]
        );
        let files = memory(&[("/i2/a.h", ""), ("/cuda/a.h", ""), ("/src/a.h", "")]);
        assert_eq!(
            s.resolve(&HeaderName::quoted("a.h"), Some(dir), &files),
            Some(PathBuf::from("/src/a.h"))
        );
        assert_eq!(
            s.resolve(&HeaderName::angled("a.h"), Some(dir), &files),
            Some(PathBuf::from("/i2/a.h"))
        );
    }

    #[test]
    fn a_missing_include_resolves_to_none() {
        let s = SearchPath::default();
        let files = memory(&[]);
        assert_eq!(
            s.resolve(&HeaderName::quoted("no.h"), Some(Path::new("/")), &files),
            None
        );
        assert!(include_closure(
            "#include \"no.h\"\n",
            Some(Path::new("/")),
            &s,
            &files,
            &|_| true,
            8
        )
        .is_empty());
    }

    #[test]
    fn includes_and_computed_includes() {
        let i = includes("#include <a.h>\n// #include <b.h>\n#if __has_include(\"c.h\")\n#include MACRO\n#endif\n");
        let all: Vec<(&HeaderName, usize, bool)> = i
            .refs
            .iter()
            .map(|r| (&r.header, r.line, r.tested))
            .collect();
        assert_eq!(
            all,
            [
                (&HeaderName::angled("a.h"), 1, false),
                (&HeaderName::quoted("c.h"), 3, true)
            ]
        );
        assert_eq!(i.included().count(), 1);
        assert_eq!(i.computed, Some(4));
        assert_eq!(
            include_on_line("  # include <thrust/scan.h>"),
            Some(HeaderName::angled("thrust/scan.h"))
        );
        assert_eq!(include_on_line("int x;"), None);
    }

    #[test]
    fn the_closure_follows_nested_includes_once_even_through_cycles() {
        let files = memory(&[
            ("/s/a.h", "#include \"inc/b.h\"\n#include <sys.h>\n"),
            ("/s/inc/b.h", "#include \"b.h\"\n#define B 1\n"),
        ]);
        let got = include_closure(
            "#include \"a.h\"\n",
            Some(Path::new("/s")),
            &SearchPath::default(),
            &files,
            &|h| h.quoted,
            8,
        );
        let paths: Vec<(&str, bool)> = got
            .iter()
            .map(|i| (i.path.to_str().unwrap_or(""), i.text.is_some()))
            .collect();
        assert_eq!(
            paths,
            [
                ("/s/a.h", true),
                ("/s/inc/b.h", true),
                ("/s/inc/b.h", false)
            ]
        );
    }
}
