//! The cache between [`nvrtc::compile`](crate::nvrtc::compile) and NVRTC: key the compile,
//! answer from an entry on a hit, store what NVRTC produced on a miss.

use std::path::{Path, PathBuf};

use super::deps::{header_files, SearchPath};
use super::toolkit;
use super::{warn_once, CacheMode, Entry, Key, ModuleCache, Outcome};
use crate::nvrtc::compile::{compilation_failed, user_dirs};
use crate::nvrtc::headers::compat_headers;
use crate::nvrtc::{
    locate, nvrtc, parse_log, CompileError, CompileOptions, Compiled, CudaSource, Located, Nvrtc,
};

/// Runs `compile` (NVRTC itself) through the cache `opts.cache` names.
///
/// Whatever goes wrong with the cache (no key, unreadable or corrupt entry, failed store), the
/// answer is `compile`'s own: the cache can make a compile faster, never different. A hit does
/// not load NVRTC (see [`locate`]).
pub(crate) fn through(
    source: &CudaSource,
    opts: &CompileOptions,
    compile: impl FnOnce() -> Result<Compiled, CompileError>,
) -> Result<Compiled, CompileError> {
    let cache = match &opts.cache {
        CacheMode::Off => None,
        CacheMode::FromEnv => ModuleCache::from_env_once(),
        CacheMode::In(c) => Some(c),
    };
    let Some(cache) = cache else {
        return compile();
    };
    let compiler = match locate() {
        Some(l) => Compiler::from(l),
        // Without NVRTC `compile` returns the error at once.
        None => match nvrtc() {
            Ok(n) => Compiler::from(n),
            Err(_) => return compile(),
        },
    };
    let memo = cache.dir().join(toolkit::MEMO_FILE);
    let Some(key) = key_for(source, opts, &compiler, &memo) else {
        return compile();
    };
    if let Some(entry) = cache.get(&key) {
        return revive(entry, source, opts);
    }
    let out = compile();
    // Only what the library the key names produced is kept (`locate` guesses without loading).
    if !nvrtc().is_ok_and(|n| compiler.is(n)) {
        return out;
    }
    let entry = match &out {
        Ok(c) => Some(Entry::compiled(
            c.cubin.clone(),
            c.ptx.clone(),
            c.log.clone(),
            c.lowered_names.clone(),
        )),
        Err(CompileError::Failed { log, .. }) => Some(Entry::failed(log.clone())),
        // Not a property of the source (a missing NVRTC, an unsupported architecture, a bad
        // option): not kept.
        Err(_) => None,
    };
    if let Some(entry) = entry {
        match cache.put(&key, &entry) {
            // The directory exists now, so the toolkit scans of a first compile can be kept.
            Ok(()) => toolkit::save(&memo),
            Err(e) => {
                warn_once::<()>(&e);
            }
        }
    }
    out
}

/// The NVRTC a compile runs with, as far as the key needs it.
struct Compiler<'a> {
    path: &'a Path,
    builtins: Option<&'a Path>,
    include_dirs: &'a [PathBuf],
}

impl<'a> From<&'a Located> for Compiler<'a> {
    fn from(l: &'a Located) -> Self {
        Compiler {
            path: &l.path,
            builtins: l.builtins.as_deref(),
            include_dirs: &l.include_dirs,
        }
    }
}

impl<'a> From<&'a Nvrtc> for Compiler<'a> {
    fn from(n: &'a Nvrtc) -> Self {
        Compiler {
            path: &n.path,
            builtins: n.builtins.as_deref(),
            include_dirs: &n.include_dirs,
        }
    }
}

impl Compiler<'_> {
    /// Whether `n` is this library, with these builtins and include directories.
    fn is(&self, n: &Nvrtc) -> bool {
        self.path == n.path
            && self.builtins == n.builtins.as_deref()
            && self.include_dirs == n.include_dirs.as_slice()
    }

    /// The path, size and modification time of the library and its builtins: a patch release
    /// or a reinstall changes the key even where the version number does not.
    fn identity(&self) -> Vec<u8> {
        let mut id = Vec::new();
        for lib in std::iter::once(self.path).chain(self.builtins) {
            let meta = std::fs::metadata(lib).ok();
            let modified = meta
                .as_ref()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos());
            id.extend_from_slice(
                format!(
                    "{}\0{:?}\0{:?}\0",
                    lib.display(),
                    meta.map(|m| m.len()),
                    modified
                )
                .as_bytes(),
            );
        }
        id
    }
}

/// The key of this compile, or `None` when its headers cannot be listed (the compile then
/// runs uncached).
fn key_for(
    source: &CudaSource,
    opts: &CompileOptions,
    compiler: &Compiler<'_>,
    memo: &Path,
) -> Option<Key> {
    let user = user_dirs(source, opts);
    let headers = header_files(
        &source.name,
        &source.text,
        source.dir.as_deref(),
        &SearchPath {
            user_dirs: &user,
            cuda_dirs: compiler.include_dirs,
            memo: Some(memo),
        },
    );
    toolkit::save(memo);
    let headers = headers.ok()?;
    let mut k = Key::builder();
    k.source(&source.name, &source.text)
        .arch(opts.arch)
        .compiler(&compiler.identity())
        .ptx(opts.ptx)
        .variant(&opts.cache_variant);
    for o in opts.to_nvrtc_options(source, compiler.include_dirs) {
        k.option(&o);
    }
    for (name, text) in compat_headers(&user) {
        k.in_memory_header(name, text);
    }
    for h in &headers {
        k.header_file(&h.path, &h.digest);
    }
    for e in &opts.name_expressions {
        k.name_expression(e);
    }
    Some(k.build())
}

/// The compile's answer, from its entry.
fn revive(
    entry: Entry,
    source: &CudaSource,
    opts: &CompileOptions,
) -> Result<Compiled, CompileError> {
    match entry.outcome {
        Outcome::Compiled => Ok(Compiled {
            cubin: entry.cubin,
            ptx: entry.ptx,
            warnings: parse_log(&entry.log),
            log: entry.log,
            lowered_names: entry.lowered_names,
            arch: opts.arch,
        }),
        Outcome::Failed => Err(compilation_failed(
            source,
            opts,
            parse_log(&entry.log),
            entry.log,
        )),
    }
}
