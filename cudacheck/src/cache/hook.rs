//! The cache between [`nvrtc::compile`](crate::nvrtc::compile) and NVRTC: key the compile,
//! answer from an entry on a hit, store what NVRTC produced on a miss.

use std::path::Path;

use super::deps::{header_files, SearchPath};
use super::{warn_once, CacheMode, Entry, Key, ModuleCache, Outcome};
use crate::nvrtc::compile::{compilation_failed, user_dirs};
use crate::nvrtc::headers::compat_headers;
use crate::nvrtc::{nvrtc, parse_log, CompileError, CompileOptions, Compiled, CudaSource, Nvrtc};

/// Runs `compile` (NVRTC itself) through the cache `opts.cache` names.
///
/// Whatever goes wrong with the cache (no key, unreadable or corrupt entry, failed store), the
/// answer is `compile`'s own: the cache can make a compile faster, never different.
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
    // Without NVRTC, or for an architecture it lacks, `compile` returns the error at once.
    let Some((cache, nvrtc)) = cache.zip(nvrtc().ok().filter(|n| n.supports(&opts.arch.sm_name())))
    else {
        return compile();
    };
    let Some(key) = key_for(source, opts, nvrtc) else {
        return compile();
    };
    if let Some(entry) = cache.get(&key) {
        return revive(entry, source, opts);
    }
    let out = compile();
    let entry = match &out {
        Ok(c) => Some(Entry::compiled(
            c.cubin.clone(),
            c.ptx.clone(),
            c.log.clone(),
            c.lowered_names.clone(),
        )),
        Err(CompileError::Failed { log, .. }) => Some(Entry::failed(log.clone())),
        // Not a property of the source (a missing NVRTC, a bad option): not kept.
        Err(_) => None,
    };
    if let Some(entry) = entry {
        if let Err(e) = cache.put(&key, &entry) {
            warn_once::<()>(&e);
        }
    }
    out
}

/// The key of this compile, or `None` when its headers cannot be listed (the compile then
/// runs uncached).
fn key_for(source: &CudaSource, opts: &CompileOptions, nvrtc: &Nvrtc) -> Option<Key> {
    let user = user_dirs(source, opts);
    let headers = header_files(
        &source.name,
        &source.text,
        source.dir.as_deref(),
        &SearchPath {
            user_dirs: &user,
            cuda_dirs: &nvrtc.include_dirs,
        },
    )
    .ok()?;
    let mut k = Key::builder();
    k.source(&source.name, &source.text)
        .arch(opts.arch)
        .compiler(&compiler_identity(nvrtc))
        .ptx(opts.ptx)
        .variant(&opts.cache_variant);
    for o in opts.to_nvrtc_options(source, &nvrtc.include_dirs) {
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

/// NVRTC's version, and the path, size and modification time of the library and its
/// builtins: a patch release or a reinstall changes the key even when the version does not.
fn compiler_identity(nvrtc: &Nvrtc) -> Vec<u8> {
    let mut id = format!("nvrtc {}.{}", nvrtc.version.0, nvrtc.version.1).into_bytes();
    for lib in std::iter::once(nvrtc.path.as_path()).chain(nvrtc.builtins.as_deref()) {
        id.extend_from_slice(file_identity(lib).as_bytes());
    }
    id
}

fn file_identity(path: &Path) -> String {
    let meta = std::fs::metadata(path).ok();
    let modified = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos());
    format!(
        "\0{}\0{:?}\0{:?}",
        path.display(),
        meta.map(|m| m.len()),
        modified
    )
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
