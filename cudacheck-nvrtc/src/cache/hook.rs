//! The cache between [`compile`](crate::compile) and NVRTC, and between a
//! kernel's bounds-checked build and the instrumenter and nvJitLink: key the build, answer
//! from an entry on a hit, store what was built on a miss.
//!
//! A module's key is found in one of two ways (`manifest.rs`): through the manifest of its
//! direct key, by `stat`ing the files and directories an earlier lookup depended on, or by
//! the full lookup (the include closure, `deps.rs`), which then writes the manifest. Neither
//! loads NVRTC: the key names the library by its file (see [`locate`]).

use std::path::{Path, PathBuf};

use super::checked::CheckedBuild;
use super::deps::{header_files, InMemory, SearchPath};
use super::manifest::Manifest;
use super::stamp::{Stamp, Watch};
use super::store::Kind;
use super::toolkit;
use super::{warn_once, CacheMode, Entry, Key, KeyBuilder, ModuleCache, Outcome};
use crate::nvrtc::compile::{compilation_failed, CompileError, Compiled};
use crate::nvrtc::diagnostic::parse_log;
use crate::nvrtc::discover::{loaded_nvrtc, nvrtc, Nvrtc};
use crate::nvrtc::headers::{compat_headers_probed, users_own, IMPLICIT_HEADER_NAME};
use crate::nvrtc::jitlink::{loaded_jitlink, locate_jitlink};
use crate::nvrtc::locate::{locate, Located};
use crate::nvrtc::nvcc;
use crate::nvrtc::request::{user_dirs, CompileOptions, CudaSource};
use crate::stats::{count, Event};

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
    let Some((cache, compiler)) = cache_and_compiler(opts) else {
        return compile();
    };
    let Some((key, by_manifest)) = module_key(cache, source, opts, &compiler) else {
        return compile();
    };
    if let Some(entry) = cache.get(&key) {
        count(Event::ModuleHit);
        if by_manifest {
            count(Event::ManifestHit);
        }
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
            Ok(()) => toolkit::save(&cache.dir().join(toolkit::MEMO_FILE)),
            Err(e) => {
                warn_once::<()>(&e);
            }
        }
    }
    out
}

/// Runs `build` (NVRTC's PTX, the rewrite for a launch shape, nvJitLink) through the cache
/// `opts.cache` names. `opts` are the options of the PTX compile the build starts from,
/// `kernel` the kernel's name and `shape` the launch shape's bytes: with the module's key, the
/// instrumenter's code, the caller's `builder` code (its [`code_digest`](super::code_digest))
/// and nvJitLink's identity, they make the build's key. A hit loads neither NVRTC nor
/// nvJitLink.
pub fn through_checked<E>(
    source: &CudaSource,
    opts: &CompileOptions,
    kernel: &str,
    shape: &[u8],
    builder: &[u8; 32],
    build: impl FnOnce() -> Result<CheckedBuild, E>,
) -> Result<CheckedBuild, E> {
    let Some((cache, compiler)) = cache_and_compiler(opts) else {
        return build();
    };
    // Where only loading could tell which nvJitLink assembles, the build is not kept.
    let Some(assembler) = locate_jitlink() else {
        return build();
    };
    let Some((module, _)) = module_key(cache, source, opts, &compiler) else {
        return build();
    };
    let key = Key::builder()
        .checked_from(&module, builder)
        .assembler(&file_identity([assembler]))
        .shape(shape)
        .symbol(kernel)
        .build();
    if let Ok(Some(b)) = cache.read(&key, Kind::Checked, |b| CheckedBuild::decode(b, &key)) {
        count(Event::CheckedHit);
        return Ok(b);
    }
    let out = build()?;
    // Only what the libraries the key names produced is kept: NVRTC, when this process loaded
    // it (else the PTX came from an entry under the module key), and nvJitLink.
    let nvrtc_named = loaded_nvrtc().map_or(true, |n| compiler.is(n));
    let assembler_named = loaded_jitlink().is_some_and(|j| j.path == assembler);
    if nvrtc_named && assembler_named {
        if let Err(e) = cache.write(&key, Kind::Checked, &out.encode(&key)) {
            warn_once::<()>(&e);
        }
    }
    Ok(out)
}

/// The cache `opts` asks for and the NVRTC a compile would use, or `None` when there is no
/// cache, or no NVRTC (the build then runs uncached and reports the missing NVRTC itself).
fn cache_and_compiler(opts: &CompileOptions) -> Option<(&ModuleCache, Compiler<'static>)> {
    let cache = match &opts.cache {
        CacheMode::Off => None,
        CacheMode::FromEnv => ModuleCache::from_env_once(),
        CacheMode::In(c) => Some(c),
    }?;
    let compiler = match locate() {
        Some(l) => Compiler::from(l),
        None => Compiler::from(nvrtc().ok()?),
    };
    Some((cache, compiler))
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

    /// The library's and its builtins' paths and stamps: a patch release or a reinstall
    /// changes the key even where the version number does not.
    fn identity(&self) -> Vec<u8> {
        file_identity(std::iter::once(self.path).chain(self.builtins))
    }
}

/// Each file's path and [`Stamp`] (inode, size, modification and change times), or that it
/// is missing.
fn file_identity<'a>(files: impl IntoIterator<Item = &'a Path>) -> Vec<u8> {
    let mut id = Vec::new();
    for f in files {
        id.extend_from_slice(f.as_os_str().as_encoded_bytes());
        id.push(0);
        match Stamp::of(f) {
            Some(s) => {
                for v in [s.ino, s.len, s.mtime_ns as u64, s.ctime_ns as u64] {
                    id.extend_from_slice(&v.to_le_bytes());
                }
            }
            None => id.extend_from_slice(b"missing"),
        }
        id.push(0);
    }
    id
}

/// The module key of this compile, and whether a manifest gave it; `None` when its headers
/// cannot be listed (the compile then runs uncached).
fn module_key(
    cache: &ModuleCache,
    source: &CudaSource,
    opts: &CompileOptions,
    compiler: &Compiler<'_>,
) -> Option<(Key, bool)> {
    let direct = direct_key(source, opts, compiler);
    if let Ok(Some(m)) = cache.read(&direct, Kind::Manifest, |b| Manifest::decode(b, &direct)) {
        if m.holds() {
            return Some((m.module, true));
        }
    }
    let mut watch = Watch::new();
    let memo = cache.dir().join(toolkit::MEMO_FILE);
    let module = full_key(source, opts, compiler, &memo, &mut watch)?;
    if let Some(watched) = watch.finish() {
        // A manifest only saves time: a cache that cannot take one is warned about by the
        // entry's store, if at all.
        let m = Manifest { module, watched };
        let _ = cache.write(&direct, Kind::Manifest, &m.encode(&direct));
    }
    Some((module, false))
}

/// Everything [`full_key`] covers except what the header lookup reads from the file system
/// (which the manifest's stamps stand for): the source, its directory and the working
/// directory (where relative and `"..."` lookups start), the options, NVRTC's identity, the
/// variant, the name expressions, and the code and in-memory headers (`KeyBuilder::direct`).
fn direct_key(source: &CudaSource, opts: &CompileOptions, compiler: &Compiler<'_>) -> Key {
    let mut k = Key::builder();
    k.direct()
        .source_dir(source.dir.as_deref())
        .working_dir(std::env::current_dir().ok().as_deref());
    request_parts(&mut k, source, opts, compiler);
    k.build()
}

/// The parts both keys share: what the compile was asked for, and NVRTC's identity.
fn request_parts(
    k: &mut KeyBuilder,
    source: &CudaSource,
    opts: &CompileOptions,
    compiler: &Compiler<'_>,
) {
    k.source(&source.name, &source.text)
        .arch(opts.arch)
        .compiler(&compiler.identity())
        .ptx(opts.ptx)
        .variant(&opts.cache_variant);
    for o in opts.to_nvrtc_options(source, compiler.include_dirs) {
        k.option(&o);
    }
    for e in &opts.name_expressions {
        k.name_expression(e);
    }
}

/// The module key of this compile, from the headers its source may read (found and hashed
/// now), or `None` when they cannot be listed. What the lookup depended on goes to `watch`.
fn full_key(
    source: &CudaSource,
    opts: &CompileOptions,
    compiler: &Compiler<'_>,
    memo: &Path,
    watch: &mut Watch,
) -> Option<Key> {
    let user = user_dirs(source, opts);
    let in_memory = compat_headers_probed(&user, |p| {
        watch.lookup(p);
        p.is_file()
    });
    let headers = header_files(
        &source.name,
        &source.text,
        source.dir.as_deref(),
        &InMemory {
            headers: &in_memory,
            // `nvcc.rs` passes it with --pre-include.
            pre_included: &[IMPLICIT_HEADER_NAME],
        },
        &SearchPath {
            user_dirs: &user,
            cuda_dirs: compiler.include_dirs,
            memo: Some(memo),
        },
        watch,
    );
    toolkit::save(memo);
    let headers = headers.ok()?;
    let mut k = Key::builder();
    request_parts(&mut k, source, opts, compiler);
    for (name, text) in in_memory {
        k.in_memory_header(name, text);
    }
    for h in &headers {
        k.header_file(&h.path, &h.digest);
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
            warnings: users_own(parse_log(&entry.log)),
            log: entry.log,
            lowered_names: entry.lowered_names,
            arch: opts.arch,
        }),
        Outcome::Failed => {
            // What a fresh compile adds to NVRTC's errors (`compile_uncached`): the files the
            // user can open, and the help notes. Only failures pay for preparing the source.
            let mut diagnostics = users_own(parse_log(&entry.log));
            let mut prepared = nvcc::prepare(source, opts);
            prepared.recall_missing(&diagnostics);
            prepared.restore_header_paths(&mut diagnostics);
            prepared.explain(&mut diagnostics);
            Err(compilation_failed(source, opts, diagnostics, entry.log))
        }
    }
}
