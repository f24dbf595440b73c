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
//!   lenient than nvcc in one way, written down in docs/limits.md: a non-`constexpr` unannotated
//!   function that device code calls compiles here, where nvcc rejects the call.
//!
//! - A launcher template in one of the file's headers, called from the file, instantiates
//!   what it launches through its shadow (`cudacheck_core::source::Unit::launchers`).
//! - After a failed compile, what nvcc's device pass would not have needed is set aside and the
//!   file compiled again ([`Prepared::set_aside_after_failure`]): includes of libraries only
//!   host code uses (Thrust), and `static_assert`s on `offsetof`. Each is a `remark`.
//!
//! What still fails gets a `help:` note naming the construct and the fix ([`explain`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use cudacheck_core::source::{set_aside_host_code_unit, HostCode, HostDecision};

use super::diagnostic::{Diagnostic, Severity};
use super::headers::{HOST_ONLY_HEADERS, IMPLICIT_HEADER_NAME};
use super::request::{project_dirs, CompileOptions, CudaSource};

/// How many of a file's own headers are read, at most: a guard against include cycles through
/// differently spelled paths and against pathological trees.
const MAX_HEADERS: usize = 256;

/// A source made ready for NVRTC, with the options and headers that go with it.
pub(crate) struct Prepared {
    original: CudaSource,
    /// The main file's host code, when setting it aside changed the text.
    main: Option<HostCode>,
    /// The project's own headers (found beside the file or under an `-I` directory, each
    /// spelled one way); those whose text changes are handed to NVRTC in memory.
    headers: Vec<HeaderCopy>,
    /// How the file and its headers spell their own headers: never set aside as a library's.
    local_spellings: HashSet<String>,
    /// Library includes, and static assertions NVRTC cannot evaluate, set aside after a
    /// failed compile (see [`Prepared::set_aside_after_failure`]).
    set_aside: Vec<SetAside>,
    /// Headers NVRTC could not find or compile, compiled as empty (see
    /// [`Prepared::stub_missing`]).
    missing: Vec<MissingHeader>,
}

/// A header NVRTC cannot find (`<cublas_v2.h>`, `<omp.h>`, `<unistd.h>`, a project header on
/// an include path not given) or cannot compile because it declares host functions (the
/// toolkit's `<cuda_gl_interop.h>`), handed to it as an empty file: nvcc's device pass reads
/// the real one, but only for the declarations its host code uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MissingHeader {
    /// The header as the `#include` spells it.
    spelling: String,
    /// Where it is included: the unit as NVRTC names it, and the line.
    unit: String,
    line: u32,
    why: Missing,
}

/// Why a header is compiled as empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    /// NVRTC cannot find it.
    NotFound,
    /// NVRTC finds it, and rejects the host functions it declares.
    HostApi,
}

impl Missing {
    /// What the remark on such a header says after the header's name (see
    /// [`Prepared::recall_missing`]).
    fn remark(self) -> &'static str {
        match self {
            Missing::NotFound => ": NVRTC cannot find this header",
            Missing::HostApi => ": NVRTC cannot compile this header (it declares host functions)",
        }
    }
}

/// The text of a header compiled as empty (see [`MissingHeader`]).
pub(crate) const MISSING_HEADER_STUB: &str =
    "// cudacheck: NVRTC cannot find or compile this header; it is \
compiled as empty. Host code that uses it is set\n// aside, as nvcc's device pass sets it aside; \
device code that uses it fails, and the error names this header.\n";

/// Lines of the file or of one of its headers that NVRTC cannot compile and nvcc's device pass
/// has no need of, blanked after a failed compile (see
/// [`Prepared::set_aside_after_failure`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SetAside {
    /// The unit as NVRTC names it (the main file's name, or the header's spelling).
    unit: String,
    /// The first and last line blanked (1-based).
    line: u32,
    last_line: u32,
    /// What was set aside and why, for the remark.
    remark: String,
}

/// A header of the project (found beside the file or under an `-I` directory), host code set
/// aside. NVRTC looks in-memory headers up by the name an `#include` spells, and names them so
/// in its diagnostics; [`Prepared::restore_header_paths`] puts the path back.
struct HeaderCopy {
    spelling: String,
    path: PathBuf,
    host: HostCode,
}

impl HeaderCopy {
    /// Whether setting host code aside changed it (then NVRTC reads this copy, not the file).
    fn changed(&self) -> bool {
        self.host.changed()
    }
}

/// One compile's inputs: the source text and the in-memory headers (include name, text).
pub(crate) struct Attempt {
    pub source: CudaSource,
    pub headers: Vec<(String, String)>,
    /// Passed to NVRTC before the user's own extra options.
    pub options: Vec<String>,
}

/// Sets the host code of `source` and of its own headers aside and picks the options that
/// emulate nvcc. A file the parser cannot read is compiled as it is: NVRTC's own diagnostics
/// say more about it than a parse failure would.
pub(crate) fn prepare(source: &CudaSource, opts: &CompileOptions) -> Prepared {
    let found = local_headers(source, &opts.include_dirs);
    // The file and its headers are one translation unit: what device code uses is followed
    // through all of them at once, and the headers' launcher templates (`marlin_matmul<...>`
    // of `marlin_kernel.cuh`) get shadows that the file's calls reference.
    let texts: Vec<&str> = found.texts.iter().map(|(_, t)| t.as_str()).collect();
    let unit = set_aside_host_code_unit(&source.text, &texts);
    let hosts: HashMap<&PathBuf, HostCode> = found
        .texts
        .iter()
        .zip(unit.headers)
        .filter_map(|((path, _), host)| Some((path, host.ok()?)))
        .collect();
    let local_spellings: HashSet<String> = found.spellings.keys().cloned().collect();
    let mut headers: Vec<HeaderCopy> = found
        .spellings
        .iter()
        .filter_map(|(spelling, path)| {
            let path = path.as_ref()?;
            let host = hosts.get(path)?;
            Some(HeaderCopy {
                spelling: spelling.clone(),
                path: path.clone(),
                host: host.clone(),
            })
        })
        .collect();
    headers.sort_by(|a, b| a.spelling.cmp(&b.spelling));
    Prepared {
        original: source.clone(),
        main: unit.main.ok().filter(HostCode::changed),
        headers,
        local_spellings,
        set_aside: Vec::new(),
        missing: Vec::new(),
    }
}

/// Whether the file or one of the project's headers it includes (found as [`compile`] finds
/// them) has device code at all: a `__global__` or `__device__` word. A file with none (a host
/// helper beside the kernel files, CUDA-graph capture code) compiles to no kernels, which is
/// right, and nothing is there to check.
///
/// [`compile`]: crate::compile
pub fn has_device_code(source: &CudaSource, include_dirs: &[PathBuf]) -> bool {
    device_code(source, include_dirs) != DeviceCode::None
}

/// What device code a file and the project's headers it includes hold, by the words that
/// annotate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceCode {
    /// No `__global__` or `__device__` word: host code only.
    None,
    /// `__device__` but no `__global__`: device functions for other files' kernels (a
    /// program's `main.cu` whose kernels are in the files it links with), which compile to no
    /// kernels, rightly.
    FunctionsOnly,
    /// A `__global__` word: kernels, or a kernel template.
    Kernels,
}

/// The device code of a file and of the project's headers it includes (found as [`compile`]
/// finds them); see [`DeviceCode`].
///
/// [`compile`]: crate::compile
pub fn device_code(source: &CudaSource, include_dirs: &[PathBuf]) -> DeviceCode {
    let words = |t: &str, w: &str| {
        t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|x| x == w)
    };
    let found = local_headers(source, include_dirs);
    let texts =
        || std::iter::once(source.text.as_str()).chain(found.texts.iter().map(|(_, t)| t.as_str()));
    if texts().any(|t| words(t, "__global__")) {
        DeviceCode::Kernels
    } else if texts().any(|t| words(t, "__device__")) {
        DeviceCode::FunctionsOnly
    } else {
        DeviceCode::None
    }
}

/// The project's headers a file includes.
struct LocalHeaders {
    /// Each header's path and text, sorted by path.
    texts: Vec<(PathBuf, String)>,
    /// Each spelling that named one of them, and the file it names (`None` once it has named
    /// two different files: an in-memory header can stand for one of them only).
    spellings: HashMap<String, Option<PathBuf>>,
}

/// The project's headers the file includes, directly or through each other, resolved as NVRTC
/// resolves them (the including file's directory, then the `-I` directories). A CUDA toolkit's
/// include directory among the `-I` directories is not the project's: its headers are left to
/// NVRTC (setting the host code of `cuda_fp16.hpp` aside would be work without end, and wrong).
fn local_headers(source: &CudaSource, include_dirs: &[PathBuf]) -> LocalHeaders {
    let project: Vec<PathBuf> = project_dirs(include_dirs).cloned().collect();
    let include_dirs = project.as_slice();
    // Spelling -> the file it names (`None` once it has named two).
    let mut spellings: HashMap<String, Option<PathBuf>> = HashMap::new();
    let mut texts: HashMap<PathBuf, String> = HashMap::new();
    let mut queue: Vec<(String, Option<PathBuf>)> = vec![(source.text.clone(), source.dir.clone())];
    let search = cudacheck_core::text::SearchPath {
        user_dirs: include_dirs,
        toolkit_dirs: &[],
    };
    while let Some((text, dir)) = queue.pop() {
        for h in cudacheck_core::text::includes(&text).included() {
            // The file's directory is on the include path (`-I`), so `<...>` includes are
            // looked for there first too, as `"..."` ones are.
            let spelling = h.name.clone();
            let Some(path) = search.resolve(
                &cudacheck_core::text::HeaderName::quoted(&spelling),
                dir.as_deref(),
                &cudacheck_core::text::Disk,
            ) else {
                continue;
            };
            let entry = spellings
                .entry(spelling)
                .or_insert_with(|| Some(path.clone()));
            if entry.as_ref().is_some_and(|p| *p != path) {
                *entry = None;
            }
            if texts.contains_key(&path) || texts.len() >= MAX_HEADERS {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            texts.insert(path.clone(), text.clone());
            queue.push((text, path.parent().map(Path::to_path_buf)));
        }
    }
    let mut texts: Vec<(PathBuf, String)> = texts.into_iter().collect();
    texts.sort();
    LocalHeaders { texts, spellings }
}

impl Prepared {
    /// The first attempt: everything set aside, every launch reference in.
    pub fn first(&self) -> Attempt {
        self.attempt(&HashMap::new(), false)
    }

    /// The next attempt after a failure, without the launch references that errors in
    /// `diagnostics` point at (they name kernels as the launcher spelled them, which can mean
    /// something else outside it), or, on a second retry, without any. `None` when no error
    /// points at one: the errors are the user's own.
    pub fn retry(&self, diagnostics: &[Diagnostic], attempt: u32) -> Option<Attempt> {
        let mut lines: HashMap<&str, HashSet<u32>> = HashMap::new();
        let units = self
            .main
            .iter()
            .map(|h| (self.original.name.as_str(), h))
            .chain(self.headers.iter().map(|h| (h.spelling.as_str(), &h.host)));
        let mut any = false;
        for (name, host) in units {
            let Some(first) = host.appended_from_line else {
                continue;
            };
            let set = lines.entry(name).or_default();
            for d in diagnostics.iter().filter(|d| d.is_error()) {
                if d.file == name {
                    set.extend(d.line.filter(|&l| l >= first));
                }
                for note in &d.notes {
                    // `instantiation of "..." at line N of FILE`
                    let at = note
                        .rsplit_once(" at line ")
                        .and_then(|(_, rest)| rest.split_once(" of "))
                        .and_then(|(l, f)| Some((l.parse::<u32>().ok()?, f.trim_matches('"'))));
                    if let Some((l, _)) = at.filter(|(l, f)| *f == name && *l >= first) {
                        set.insert(l);
                    }
                }
            }
            any |= !set.is_empty();
        }
        any.then(|| self.attempt(&lines, attempt > 0))
    }

    fn attempt(&self, drop: &HashMap<&str, HashSet<u32>>, drop_all: bool) -> Attempt {
        let text_of = |name: &str, host: &HostCode| -> String {
            let text = if drop_all {
                host.text_without_launched().to_string()
            } else {
                match drop.get(name) {
                    Some(lines) if !lines.is_empty() => host.text_without_lines(lines),
                    _ => host.text.clone(),
                }
            };
            self.without_set_aside_includes(name, text)
        };
        let name = self.original.name.as_str();
        let source = match &self.main {
            Some(h) => CudaSource {
                text: text_of(name, h),
                ..self.original.clone()
            },
            None => CudaSource {
                text: self.without_set_aside_includes(name, self.original.text.clone()),
                ..self.original.clone()
            },
        };
        let in_memory: Vec<&HeaderCopy> = self
            .headers
            .iter()
            .filter(|h| h.changed() || self.set_aside.iter().any(|s| s.unit == h.spelling))
            .collect();
        let headers = in_memory
            .iter()
            .map(|h| (h.spelling.clone(), text_of(&h.spelling, &h.host)))
            .chain(
                self.missing
                    .iter()
                    .map(|m| (m.spelling.clone(), MISSING_HEADER_STUB.to_string())),
            )
            .collect();
        let mut options = vec![
            format!("--pre-include={IMPLICIT_HEADER_NAME}"),
            "-default-device".to_string(),
        ];
        // nvcc's device pass sees the host compiler's predefined macros; code that picks its
        // platform (`#if defined(__linux__) ... #else #error Unsupported system`) needs the
        // operating system's. NVRTC defines none.
        if cfg!(target_os = "linux") {
            options.extend(["-D__linux__".to_string(), "-D__unix__".to_string()]);
        }
        // An in-memory header has no directory of its own, so its relative includes
        // (`#include "../utils.cuh"`) are searched for on the include path: its file's
        // directory goes there, last, where it can only resolve what would otherwise not be
        // found.
        let mut dirs: Vec<&Path> = in_memory.iter().filter_map(|h| h.path.parent()).collect();
        dirs.sort();
        dirs.dedup();
        options.extend(dirs.iter().map(|d| format!("-I{}", d.display())));
        Attempt {
            source,
            headers,
            options,
        }
    }

    /// `text` of the unit `name` with the includes set aside in it blanked (lines kept).
    fn without_set_aside_includes(&self, name: &str, text: String) -> String {
        let lines: HashSet<u32> = self
            .set_aside
            .iter()
            .filter(|s| s.unit == name)
            .flat_map(|s| s.line..=s.last_line)
            .collect();
        if lines.is_empty() {
            return text;
        }
        text.split_inclusive('\n')
            .enumerate()
            .map(|(i, l)| {
                let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
                if lines.contains(&n) {
                    if l.ends_with('\n') {
                        "\n"
                    } else {
                        ""
                    }
                } else {
                    l
                }
            })
            .collect()
    }

    /// After a failed compile, sets aside the includes of library headers that NVRTC failed in
    /// or could not find, where no code left for NVRTC names the library: the way nvcc's device
    /// pass compiles a file whose host code uses Thrust (`#include <thrust/scan.h>` beside a
    /// host function calling `thrust::inclusive_scan`), or whose host bindings include a header
    /// NVRTC has no path to (`<torch/extension.h>`).
    ///
    /// An include is set aside when all of these hold:
    /// - it is an `#include` line of the file or of one of its own headers, spelling a header
    ///   in a library's directory (`<lib/...>`) that is not one of the project's own;
    /// - an error lies in a file under a directory named like the spelling's first component
    ///   (`.../thrust/detail/...` for `<thrust/scan.h>`), or is "cannot open source file" at
    ///   that very line;
    /// - that first component (the library, which names its namespace by convention) is a word
    ///   nowhere in the code NVRTC compiles (host code set aside, `#include` lines not counted),
    ///   so no device code can be using it by that name.
    ///
    /// The next compile is the proof: device code that needed the header fails to compile, and
    /// those errors are reported. Returns whether anything new was set aside.
    ///
    /// A library set aside goes first: a header it cannot find (Thrust's `<new>`) is then no
    /// longer read, and the next round sees what is still missing.
    pub fn set_aside_after_failure(&mut self, diagnostics: &[Diagnostic]) -> bool {
        let includes = self.set_aside_library_includes(diagnostics);
        let asserts = self.set_aside_offsetof_asserts(diagnostics);
        if includes || asserts {
            return true;
        }
        self.stub_missing(diagnostics)
    }

    /// After NVRTC could not find a header (`cannot open source file "cublas_v2.h"`, which
    /// stops it at once), hands it the header as an empty file in the next compile. Which
    /// header a name comes from cannot be known without the header, and no name can tell a
    /// host library's header from one device code needs; the next compile can: when it
    /// succeeds, nothing left for the device used the header (host code that did is set aside,
    /// as nvcc's device pass sets it aside), and a remark says it was compiled without it;
    /// when device code does use a name from it, the errors name the header and the fix
    /// ([`Prepared::explain`]). Returns whether a header not yet stubbed was missing.
    ///
    /// A header NVRTC finds but rejects because it declares host functions
    /// (`<cuda_gl_interop.h>`: "A function explicitly marked as a __host__ function is not
    /// allowed in JIT mode", an error in the header itself, included from the file or one of
    /// its own headers) is handed over as empty in the same way, with the same proof.
    fn stub_missing(&mut self, diagnostics: &[Diagnostic]) -> bool {
        let mut found = Vec::new();
        for d in diagnostics.iter().filter(|d| d.is_error()) {
            if let Some(spelling) = quoted_after(&d.message, "cannot open source file ") {
                found.push(MissingHeader {
                    spelling: spelling.to_string(),
                    unit: d.file.clone(),
                    line: d.line.unwrap_or(1),
                    why: Missing::NotFound,
                });
            } else if d
                .message
                .contains("__host__ function is not allowed in JIT mode")
                || d.message
                    .contains("host functions are not allowed in JIT mode")
                || host_declaration_error(d)
            {
                found.extend(
                    self.including(&d.file)
                        .or_else(|| self.reaching(&d.file))
                        .map(|(unit, line, spelling)| MissingHeader {
                            spelling: spelling.to_string(),
                            unit: unit.to_string(),
                            line,
                            why: Missing::HostApi,
                        }),
                );
            }
        }
        let mut any = false;
        for m in found {
            if !self.missing.iter().any(|x| x.spelling == m.spelling) {
                self.missing.push(m);
                any = true;
            }
        }
        any
    }

    /// Where the file or one of its own headers includes the library header at `path` (an
    /// absolute path NVRTC names in a diagnostic): the unit, the line, and the spelling, whose
    /// path `path` ends with. `None` for one of the file's own units, or a header only another
    /// library header includes.
    fn including(&self, path: &str) -> Option<(&str, u32, &str)> {
        self.library_include(path, |spelling| {
            path == spelling || path.ends_with(&format!("/{spelling}"))
        })
    }

    /// Where the file or one of its own headers includes a library header that in turn
    /// includes (at any depth, through headers of the same library directory) the header at
    /// `path`: cuBLAS's `<cublas_v2.h>` reaching `cublas_api.h`, whose host API NVRTC
    /// rejects. The library's headers are read from `path`'s own directory, the include root
    /// they name each other from; at most [`REACH_FILES`] of them.
    fn reaching(&self, path: &str) -> Option<(&str, u32, &str)> {
        let target = Path::new(path);
        let root = target.parent()?;
        self.library_include(path, |spelling| {
            includes_at_any_depth(root, spelling, target)
        })
    }

    /// The first include line of the file or one of its own headers whose spelling is not one
    /// of the project's own and passes `leads_to` (the unit, the line, the spelling); `None`
    /// when `path` is itself one of those units.
    fn library_include(
        &self,
        path: &str,
        leads_to: impl Fn(&str) -> bool,
    ) -> Option<(&str, u32, &str)> {
        let units = self.unit_texts();
        if units.iter().any(|(n, _)| *n == path) {
            return None;
        }
        units.into_iter().find_map(|(unit, text)| {
            text.lines().enumerate().find_map(|(i, line)| {
                let spelling = include_spelling(line)?;
                (!self.local_spellings.contains(spelling) && leads_to(spelling))
                    .then(|| (unit, u32::try_from(i + 1).unwrap_or(u32::MAX), spelling))
            })
        })
    }

    /// Every unit NVRTC compiles (the file, then its own headers) with its text, host code set
    /// aside.
    fn unit_texts(&self) -> Vec<(&str, &str)> {
        std::iter::once((
            self.original.name.as_str(),
            self.main
                .as_ref()
                .map_or(self.original.text.as_str(), |h| h.text.as_str()),
        ))
        .chain(
            self.headers
                .iter()
                .map(|h| (h.spelling.as_str(), h.host.text.as_str())),
        )
        .collect()
    }

    /// `static_assert`s on `offsetof` that NVRTC says are not constant: nvcc's host compiler
    /// gives `offsetof` a built-in that is constant, NVRTC (which has no `__builtin_offsetof`)
    /// only the classic `&((T*)0)->m` form, which is not. Such an assertion checks a struct's
    /// layout, which nvcc's host pass checks as well; here it is set aside, with a remark.
    fn set_aside_offsetof_asserts(&mut self, diagnostics: &[Diagnostic]) -> bool {
        let mut found = Vec::new();
        for d in diagnostics.iter().filter(|d| d.is_error()) {
            if !d.message.contains("expression must have a constant value") {
                continue;
            }
            let Some(line) = d.line else { continue };
            let text = if d.file == self.original.name {
                self.main
                    .as_ref()
                    .map_or(self.original.text.as_str(), |h| h.text.as_str())
            } else if let Some(h) = self.headers.iter().find(|h| h.spelling == d.file) {
                h.host.text.as_str()
            } else {
                continue;
            };
            let Some((first, last)) = static_assert_around(text, line) else {
                continue;
            };
            let statement: String = text
                .lines()
                .skip(first as usize - 1)
                .take((last - first + 1) as usize)
                .collect::<Vec<_>>()
                .join(" ");
            let already = self
                .set_aside
                .iter()
                .chain(&found)
                .any(|s| s.unit == d.file && s.line == first);
            if !statement.contains("offsetof") || already {
                continue;
            }
            found.push(SetAside {
                unit: d.file.clone(),
                line: first,
                last_line: last,
                remark: "`static_assert` on `offsetof` set aside: NVRTC has no constant \
                         `offsetof` (nvcc's host compiler does, and checks this layout in the \
                         host pass)"
                    .to_string(),
            });
        }
        let any = !found.is_empty();
        self.set_aside.extend(found);
        any
    }

    fn set_aside_library_includes(&mut self, diagnostics: &[Diagnostic]) -> bool {
        let units = self.unit_texts();
        let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
        let library_files: Vec<&str> = errors
            .iter()
            .map(|d| d.file.as_str())
            .filter(|f| !units.iter().any(|(n, _)| n == f))
            .collect();
        let mut words: HashSet<&str> = HashSet::new();
        for (_, text) in &units {
            for line in text.lines().filter(|l| include_spelling(l).is_none()) {
                words.extend(
                    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .filter(|w| !w.is_empty()),
                );
            }
        }
        let mut found = Vec::new();
        for (unit, text) in &units {
            for (i, line) in text.lines().enumerate() {
                let Some(spelling) = include_spelling(line) else {
                    continue;
                };
                let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
                if self.local_spellings.contains(spelling)
                    || self
                        .set_aside
                        .iter()
                        .any(|s| s.unit == *unit && (s.line..=s.last_line).contains(&line_no))
                {
                    continue;
                }
                let first = spelling.split('/').next().unwrap_or(spelling);
                let library = first.split('.').next().unwrap_or(first);
                let identifier = library
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && library
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !identifier || words.contains(library) {
                    continue;
                }
                let failed_inside = spelling.contains('/')
                    && library_files
                        .iter()
                        .any(|f| Path::new(f).components().any(|c| c.as_os_str() == first));
                if failed_inside {
                    found.push(SetAside {
                        unit: unit.to_string(),
                        line: line_no,
                        last_line: line_no,
                        remark: format!(
                            "`#include <{spelling}>` set aside: NVRTC cannot compile this header, \
                             and no code left for the device names `{library}` (host code that \
                             uses it is set aside, as nvcc's device pass drops it)"
                        ),
                    });
                }
            }
        }
        let any = !found.is_empty();
        self.set_aside.extend(found);
        any
    }

    /// A remark per library include, assertion or missing header set aside, for the compile's
    /// warnings (file names as the user knows them).
    ///
    /// `compiled`: whether the compile succeeded. A header compiled as empty is then one device
    /// code did not need; after a failure the errors' notes name it ([`Prepared::explain`]).
    pub fn set_aside_remarks(&self, compiled: bool) -> Vec<Diagnostic> {
        let missing = self.missing.iter().map(|m| {
            let outcome = if compiled {
                ", and the code left for the device compiled without it: only host code, which \
                 nvcc's device pass drops, uses what it declares"
            } else {
                "; it was compiled as empty"
            };
            let remark = format!("`#include <{}>`{}{outcome}", m.spelling, m.why.remark());
            (m.unit.as_str(), m.line, remark)
        });
        self.set_aside
            .iter()
            .map(|s| (s.unit.as_str(), s.line, s.remark.clone()))
            .chain(missing)
            .map(|(unit, line, remark)| {
                let mut d =
                    Diagnostic::without_location(&self.user_name(unit), Severity::Remark, &remark);
                d.line = Some(line);
                d
            })
            .collect()
    }

    /// The headers compiled as empty, read back from the remarks of a compile's log (the
    /// module cache keeps the log, not this value), so that a cached failure's errors name
    /// them as the fresh compile's did.
    pub fn recall_missing(&mut self, diagnostics: &[Diagnostic]) {
        for d in diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Remark)
        {
            let Some((spelling, rest)) = d
                .message
                .strip_prefix("`#include <")
                .and_then(|r| r.split_once(">`"))
            else {
                continue;
            };
            let why = [Missing::NotFound, Missing::HostApi]
                .into_iter()
                .find(|w| rest.starts_with(w.remark()));
            if let Some(why) = why {
                self.missing.push(MissingHeader {
                    spelling: spelling.to_string(),
                    unit: d.file.clone(),
                    line: d.line.unwrap_or(1),
                    why,
                });
            }
        }
    }

    /// The file the user knows for a unit NVRTC names by its include spelling.
    fn user_name(&self, unit: &str) -> String {
        self.headers
            .iter()
            .find(|h| h.spelling == unit)
            .map_or_else(|| unit.to_string(), |h| h.path.display().to_string())
    }

    /// For a use of a host function this file set aside (`identifier "f" is undefined`), a
    /// `help:` note saying so; the generic notes of [`explain`] for the rest.
    pub fn explain(&self, diagnostics: &mut [Diagnostic]) {
        let set_aside = self
            .main
            .iter()
            .chain(self.headers.iter().map(|h| &h.host))
            .flat_map(|h| &h.functions)
            .filter(|f| matches!(f.decision, HostDecision::SetAside(_)));
        let names: Vec<(&str, u32)> = set_aside
            .map(|f| (f.name.as_str(), f.location.line))
            .collect();
        self.name_missing_headers(diagnostics);
        for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
            let Some(name) = quoted_after(&d.message, "identifier ") else {
                continue;
            };
            if let Some((_, line)) = names.iter().find(|(n, _)| *n == name) {
                d.notes.push(format!(
                    "help: `{name}` (line {line}) is host code: it has no `__device__` and does \
                     what only host code can (launch kernels, call the runtime API), so it was set \
                     aside as nvcc's device pass sets it aside. nvcc rejects this call from device \
                     code too: give device code its own `__device__` function"
                ));
            }
        }
        explain(diagnostics);
    }

    /// When headers NVRTC cannot find were compiled as empty and device code fails, a `help:`
    /// note on each error about an unknown name (or on the first error, when none is) names
    /// them: the name may come from one of them.
    fn name_missing_headers(&self, diagnostics: &mut [Diagnostic]) {
        if self.missing.is_empty() {
            return;
        }
        let list = self
            .missing
            .iter()
            .map(|m| {
                let how = match m.why {
                    Missing::NotFound => "not found",
                    Missing::HostApi => "host functions only",
                };
                format!(
                    "`<{}>` ({how}, {}:{})",
                    m.spelling,
                    self.user_name(&m.unit),
                    m.line
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let (one, it) = if self.missing.len() == 1 {
            ("this header", "it")
        } else {
            ("these headers", "one of them")
        };
        let unknown_name = |m: &str| {
            [
                "is undefined",
                "is not a template",
                "class or namespace name",
                "expected a type specifier",
                "not a type name",
                "incomplete type",
            ]
            .iter()
            .any(|p| m.contains(p))
        };
        let any_unknown = diagnostics
            .iter()
            .any(|d| d.is_error() && unknown_name(&d.message));
        let mut first = true;
        for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
            if !(unknown_name(&d.message) || (!any_unknown && first)) {
                continue;
            }
            first = false;
            let name = quoted_after(&d.message, "identifier ")
                .map_or_else(|| "what this line uses".to_string(), |n| format!("`{n}`"));
            d.notes.push(format!(
                "help: device code was compiled without {list}, which NVRTC cannot find or \
                 compile, so {one} stood empty. If {name} comes from {it}, device code needs it: \
                 pass its directory with `-I DIR` (a CUDA library's headers are in its \
                 `include` directory); if only host code needs it, move the use into a function \
                 without `__device__`"
            ));
        }
    }

    /// NVRTC names an in-memory header by its include spelling; diagnostics should name the
    /// file the user can open.
    pub fn restore_header_paths(&self, diagnostics: &mut [Diagnostic]) {
        for d in diagnostics.iter_mut() {
            if let Some(h) = self.headers.iter().find(|h| h.spelling == d.file) {
                d.file = h.path.display().to_string();
            }
        }
    }
}

/// Adds a `help:` note to each error whose cause is a known difference between nvcc and
/// NVRTC, naming the construct and the fix.
fn explain(diagnostics: &mut [Diagnostic]) {
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

/// The lines (first, last) of a namespace- or class-scope `static_assert(...);` statement that
/// starts on `line` (1-based) or on a line above that it continues from, when it stands on
/// lines of its own (nothing else before it on its first line, nothing after its `;`).
fn static_assert_around(text: &str, line: u32) -> Option<(u32, u32)> {
    let lines: Vec<&str> = text.lines().collect();
    let at = (line as usize).checked_sub(1)?;
    // The statement starts at the nearest line at or above the error starting with it.
    let first = (at.saturating_sub(8)..=at).rev().find(|&i| {
        lines
            .get(i)
            .is_some_and(|l| l.trim_start().starts_with("static_assert"))
    })?;
    let mut depth = 0i32;
    let mut opened = false;
    for (i, l) in lines.iter().enumerate().skip(first) {
        for (j, c) in l.char_indices() {
            match c {
                '(' => {
                    depth += 1;
                    opened = true;
                }
                ')' => depth -= 1,
                ';' if opened && depth == 0 => {
                    let rest = l[j + 1..].trim();
                    let ok = i >= at && (rest.is_empty() || rest.starts_with("//"));
                    return ok.then(|| (first as u32 + 1, i as u32 + 1));
                }
                _ => {}
            }
        }
        if i > first + 16 {
            break;
        }
    }
    None
}

/// The header an `#include` line spells (`thrust/scan.h` in `#include <thrust/scan.h>`).
/// How many of a library's headers [`Prepared::reaching`] reads looking for one.
const REACH_FILES: usize = 64;

/// Whether `root/spelling` is `target` or includes it, directly or through other headers
/// under `root` (the library's include root, searched as a `-I` directory), reading at most
/// [`REACH_FILES`] of them through the text layer.
fn includes_at_any_depth(root: &Path, spelling: &str, target: &Path) -> bool {
    use cudacheck_core::text::{include_closure, Disk, FileReader, HeaderName, SearchPath};
    let dirs = [root.to_path_buf()];
    let search = SearchPath {
        user_dirs: &dirs,
        toolkit_dirs: &[],
    };
    let same = |p: &Path| {
        p == target
            || p.canonicalize()
                .is_ok_and(|c| Some(c) == target.canonicalize().ok())
    };
    let Some(first) = search.resolve(&HeaderName::angled(spelling), None, &Disk) else {
        return false;
    };
    if same(&first) {
        return true;
    }
    let Some(text) = Disk.read(&first) else {
        return false;
    };
    include_closure(
        &text,
        first.parent(),
        &search,
        &Disk,
        &|_| true,
        REACH_FILES,
    )
    .iter()
    .any(|i| same(&i.path))
}

/// An error a host API's declarations draw under NVRTC, in a header and not in a template
/// the kernels instantiate (whose errors are the kernels' own): a host-only type it names
/// (`FILE`, a runtime type NVRTC does not declare) is undefined.
fn host_declaration_error(d: &Diagnostic) -> bool {
    let undefined =
        d.message.starts_with("identifier \"") && d.message.ends_with("\" is undefined");
    undefined && !d.notes.iter().any(|n| n.contains("detected during"))
}

fn include_spelling(line: &str) -> Option<&str> {
    let h = cudacheck_core::text::include_on_line(line)?;
    let name = h.name.trim();
    let at = line.find(name).filter(|_| !name.is_empty())?;
    line.get(at..at + name.len())
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
