//! The directory of entries: lookups, atomic stores, least-recently-used eviction.
//!
//! Entries live in `<dir>/v1/<key>.entry`, one file each, beside the manifests of direct keys
//! (`<key>.manifest`, see `manifest.rs`) and bounds-checked builds (`<key>.checked`, see
//! `checked.rs`), which are stored, read and evicted the same way. Many processes may use one
//! directory at once without a lock:
//! - a store writes a temporary file in the same directory and renames it over the entry's
//!   name (`rename` replaces atomically on POSIX file systems), so a reader sees a whole old
//!   file, a whole new one, or none; two processes storing one key store the same bytes;
//! - a reader checks length and checksum before using anything (see [`super::entry`]), so a
//!   file damaged some other way (a crash of the disk, a hand edit) is a miss, and is removed;
//! - a hit sets the entry's modification time to now: that is the recency eviction sorts by
//!   (access times are unreliable under `noatime`/`relatime`);
//! - after a store, if the directory holds more than the cap, the least recently used entries
//!   are deleted until it holds 90 % of it. Another process deleting the same file first is
//!   fine: a file already gone counts as deleted.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use thiserror::Error;

use super::entry::{Entry, EntryError};
use super::key::Key;
use super::ModuleCache;

/// The default size cap: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// The subdirectory of the cache directory that entries of this format live in.
const ENTRIES: &str = "v1";
/// Temporary files start with this; ones older than [`STALE_TEMP`] were left by a process that
/// died mid-store and are removed by the next eviction pass.
const TEMP_PREFIX: &str = ".tmp-";
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// The kinds of file the entries directory holds, each under its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A compile's output ([`Entry`]).
    Module,
    /// A direct key's manifest (`manifest.rs`).
    Manifest,
    /// A bounds-checked build (`checked.rs`).
    Checked,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Module, Kind::Manifest, Kind::Checked];

    fn suffix(self) -> &'static str {
        match self {
            Kind::Module => "entry",
            Kind::Manifest => "manifest",
            Kind::Checked => "checked",
        }
    }

    /// Whether `cudacheck cache info` counts it as an entry (a manifest is an index).
    fn is_entry(self) -> bool {
        !matches!(self, Kind::Manifest)
    }
}

/// A cache directory that cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CacheError {
    #[error(
        "cannot create the module cache directory `{dir}`: {source}. Set CUDACHECK_CACHE_DIR \
         to a writable directory, or CUDACHECK_CACHE=0 to compile without a cache"
    )]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot write to the module cache `{dir}`: {source}. Free space there, set \
         CUDACHECK_CACHE_DIR to a writable directory, or CUDACHECK_CACHE=0 to compile without \
         a cache"
    )]
    Write {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the module cache directory `{dir}`: {source}")]
    ReadDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What `cudacheck cache info` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CacheInfo {
    pub dir: PathBuf,
    pub entries: u64,
    pub bytes: u64,
    pub max_bytes: u64,
}

/// What a lookup found, for callers that want to know more than hit or miss.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lookup {
    Hit(Entry),
    Miss,
    /// The file existed but was not a valid entry for the key; it was removed.
    Corrupt(EntryError),
}

impl ModuleCache {
    /// A cache in `dir` holding at most `max_bytes` of entries. Nothing is created until the
    /// first store.
    pub fn at(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        ModuleCache {
            dir: dir.into(),
            max_bytes,
        }
    }

    /// The cache directory (entries are in its `v1/` subdirectory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    fn entries_dir(&self) -> PathBuf {
        self.dir.join(ENTRIES)
    }

    #[cfg(test)]
    fn path_of(&self, key: &Key) -> PathBuf {
        self.file_of(key, Kind::Module)
    }

    fn file_of(&self, key: &Key, kind: Kind) -> PathBuf {
        self.entries_dir().join(format!("{key}.{}", kind.suffix()))
    }

    /// The entry for `key`, if there is a valid one. A missing, unreadable, truncated or
    /// corrupt entry is a miss; a damaged one is removed so the next store replaces it.
    pub fn get(&self, key: &Key) -> Option<Entry> {
        match self.lookup(key) {
            Lookup::Hit(e) => Some(e),
            Lookup::Miss | Lookup::Corrupt(_) => None,
        }
    }

    /// [`get`](Self::get), saying why a file present was not used.
    pub fn lookup(&self, key: &Key) -> Lookup {
        match self.read(key, Kind::Module, |b| Entry::decode(b, key)) {
            Ok(Some(e)) => Lookup::Hit(e),
            Ok(None) => Lookup::Miss,
            Err(e) => Lookup::Corrupt(e),
        }
    }

    /// The file of `kind` under `key`, decoded: `Ok(None)` when there is none (or it cannot
    /// be read), `Err` when `decode` refuses it, in which case it is removed so the next store
    /// replaces it. A hit makes the file the most recently used.
    pub(crate) fn read<T>(
        &self,
        key: &Key,
        kind: Kind,
        decode: impl FnOnce(&[u8]) -> Result<T, EntryError>,
    ) -> Result<Option<T>, EntryError> {
        let path = self.file_of(key, kind);
        let Ok(bytes) = fs::read(&path) else {
            return Ok(None);
        };
        match decode(&bytes) {
            Ok(v) => {
                // Recency for eviction. A read-only cache still serves hits, so a failure here
                // is ignored.
                if let Ok(f) = File::options().append(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Ok(Some(v))
            }
            Err(e) => {
                let _ = fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// Stores `entry` under `key`, atomically, then evicts the least recently used entries if
    /// the cache is over its cap.
    ///
    /// # Errors
    /// [`CacheError::CreateDir`] or [`CacheError::Write`] when the directory cannot be created
    /// or written (read-only, full); the cache is then simply not used for this module.
    pub fn put(&self, key: &Key, entry: &Entry) -> Result<(), CacheError> {
        self.write(key, Kind::Module, &entry.encode(key))
    }

    /// Stores a file of `kind` (`bytes`, already framed) under `key`, atomically, then evicts
    /// as [`put`](Self::put) does.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub(crate) fn write(&self, key: &Key, kind: Kind, bytes: &[u8]) -> Result<(), CacheError> {
        let dir = self.entries_dir();
        if let Err(source) = fs::create_dir_all(&dir) {
            return Err(CacheError::CreateDir { dir, source });
        }
        // Marks the directory as a cache for backup tools (https://bford.info/cachedir/).
        let tag = self.dir.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = fs::write(
                &tag,
                "Signature: 8a477f597d28d172789f06886806bc55\n\
                 # This directory is cudacheck's module cache; `cudacheck cache clear` empties it.\n",
            );
        }
        let write = |dir: &Path| -> std::io::Result<()> {
            let mut tmp = tempfile::Builder::new()
                .prefix(TEMP_PREFIX)
                .tempfile_in(dir)?;
            tmp.write_all(bytes)?;
            tmp.persist(self.file_of(key, kind)).map_err(|e| e.error)?;
            Ok(())
        };
        write(&dir).map_err(|source| CacheError::Write {
            dir: dir.clone(),
            source,
        })?;
        self.evict()
    }

    /// Deletes the least recently used entries until the cache holds at most 90 % of its cap,
    /// when it holds more than the cap; also removes temporary files left by dead processes.
    ///
    /// # Errors
    /// [`CacheError::ReadDir`] when the directory cannot be listed.
    pub fn evict(&self) -> Result<(), CacheError> {
        let files = self.files()?;
        let now = SystemTime::now();
        for f in files.iter().filter(|f| f.temp) {
            if now.duration_since(f.modified).unwrap_or_default() > STALE_TEMP {
                let _ = fs::remove_file(&f.path);
            }
        }
        let mut entries: Vec<&DirFile> = files.iter().filter(|f| f.kind.is_some()).collect();
        let mut total: u64 = entries.iter().map(|f| f.len).sum();
        if total <= self.max_bytes {
            return Ok(());
        }
        let target = self.max_bytes / 10 * 9;
        entries.sort_by_key(|f| f.modified);
        for f in entries {
            if total <= target {
                break;
            }
            match fs::remove_file(&f.path) {
                Ok(()) => total = total.saturating_sub(f.len),
                // Another process evicted it first.
                Err(e) if e.kind() == ErrorKind::NotFound => total = total.saturating_sub(f.len),
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// The cache's location, entry count (modules and bounds-checked builds) and size (with
    /// the manifests).
    ///
    /// # Errors
    /// [`CacheError::ReadDir`] when the directory exists but cannot be listed.
    pub fn info(&self) -> Result<CacheInfo, CacheError> {
        let files = self.files()?;
        let kept = || files.iter().filter_map(|f| Some((f.kind?, f.len)));
        Ok(CacheInfo {
            dir: self.dir.clone(),
            entries: kept().filter(|(k, _)| k.is_entry()).count() as u64,
            bytes: kept().map(|(_, len)| len).sum(),
            max_bytes: self.max_bytes,
        })
    }

    /// Deletes every entry (and temporary file); returns how many entries and bytes it removed.
    /// Only cudacheck's own files are touched, whatever else the directory holds.
    ///
    /// # Errors
    /// [`CacheError::ReadDir`] when the directory cannot be listed, [`CacheError::Write`] when
    /// an entry cannot be removed.
    pub fn clear(&self) -> Result<CacheInfo, CacheError> {
        let mut removed = CacheInfo {
            dir: self.dir.clone(),
            entries: 0,
            bytes: 0,
            max_bytes: self.max_bytes,
        };
        // The toolkit headers' scans (see `toolkit.rs`) go too: a clear cache is a cold one.
        for memo in
            std::iter::once(&super::toolkit::MEMO_FILE).chain(super::toolkit::OLD_MEMO_FILES)
        {
            let _ = fs::remove_file(self.dir.join(memo));
        }
        for f in self.files()? {
            match fs::remove_file(&f.path) {
                Ok(()) if f.kind.is_some() => {
                    removed.entries += u64::from(f.kind.is_some_and(Kind::is_entry));
                    removed.bytes += f.len;
                }
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(CacheError::Write {
                        dir: self.entries_dir(),
                        source,
                    })
                }
            }
        }
        Ok(removed)
    }

    /// The entries and temporary files; none when the directory does not exist yet.
    fn files(&self) -> Result<Vec<DirFile>, CacheError> {
        let dir = self.entries_dir();
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(CacheError::ReadDir { dir, source }),
        };
        let mut out = Vec::new();
        for item in rd.flatten() {
            let name = item.file_name();
            let name = name.to_string_lossy();
            let temp = name.starts_with(TEMP_PREFIX);
            let kind = Kind::ALL.into_iter().find(|k| {
                name.strip_suffix(k.suffix())
                    .is_some_and(|n| n.ends_with('.'))
            });
            if !temp && kind.is_none() {
                continue;
            }
            // Gone between the listing and the stat: another process evicted it.
            let Ok(meta) = item.metadata() else {
                continue;
            };
            out.push(DirFile {
                path: item.path(),
                len: meta.len(),
                modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                temp,
                kind: kind.filter(|_| !temp),
            });
        }
        Ok(out)
    }
}

struct DirFile {
    path: PathBuf,
    len: u64,
    modified: SystemTime,
    temp: bool,
    /// `None` for a temporary file.
    kind: Option<Kind>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::key::KeyBuilder;

    fn cache(tag: &str, max_bytes: u64) -> ModuleCache {
        let d = std::env::temp_dir().join(format!("cudacheck-store-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        ModuleCache::at(d, max_bytes)
    }

    fn key(n: u32) -> Key {
        KeyBuilder::new().variant(&n.to_le_bytes()).build()
    }

    fn entry(size: usize) -> Entry {
        Entry::compiled(vec![7; size], None, String::new(), Vec::new())
    }

    #[test]
    fn a_stored_entry_is_found() {
        let c = cache("found", DEFAULT_MAX_BYTES);
        assert_eq!(c.get(&key(1)), None);
        c.put(&key(1), &entry(10)).unwrap();
        assert_eq!(c.get(&key(1)), Some(entry(10)));
        assert_eq!(c.get(&key(2)), None);
        let _ = fs::remove_dir_all(c.dir());
    }

    #[test]
    fn a_truncated_file_is_a_miss_and_is_removed() {
        let c = cache("trunc", DEFAULT_MAX_BYTES);
        c.put(&key(1), &entry(100)).unwrap();
        let path = c.path_of(&key(1));
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(matches!(
            c.lookup(&key(1)),
            Lookup::Corrupt(EntryError::Truncated { .. })
        ));
        assert!(!path.exists());
        let _ = fs::remove_dir_all(c.dir());
    }

    #[test]
    fn a_corrupted_file_is_a_miss() {
        let c = cache("corrupt", DEFAULT_MAX_BYTES);
        c.put(&key(1), &entry(100)).unwrap();
        let path = c.path_of(&key(1));
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(c.lookup(&key(1)), Lookup::Corrupt(EntryError::Checksum));
        let _ = fs::remove_dir_all(c.dir());
    }

    #[test]
    fn eviction_keeps_the_most_recently_used() {
        // Each entry is 1000 bytes of CUBIN plus framing; the cap holds three.
        let c = cache("lru", 3500);
        for n in 0..3 {
            c.put(&key(n), &entry(1000)).unwrap();
        }
        // Ages: 0 oldest. A hit on 0 makes 1 the least recently used.
        let old = SystemTime::now() - Duration::from_secs(100);
        for n in 0..3 {
            let f = File::options()
                .append(true)
                .open(c.path_of(&key(n)))
                .unwrap();
            f.set_modified(old + Duration::from_secs(n.into())).unwrap();
        }
        assert!(c.get(&key(0)).is_some());
        c.put(&key(3), &entry(1000)).unwrap();
        let present: Vec<u32> = (0..4).filter(|n| c.path_of(&key(*n)).exists()).collect();
        assert_eq!(present, [0, 3]);
        assert!(c.info().unwrap().bytes <= 3500);
        let _ = fs::remove_dir_all(c.dir());
    }

    #[test]
    fn clear_removes_entries_and_reports_them() {
        let c = cache("clear", DEFAULT_MAX_BYTES);
        c.put(&key(1), &entry(10)).unwrap();
        c.put(&key(2), &entry(10)).unwrap();
        let before = c.info().unwrap();
        assert_eq!(before.entries, 2);
        let removed = c.clear().unwrap();
        assert_eq!((removed.entries, removed.bytes), (2, before.bytes));
        assert_eq!(c.info().unwrap().entries, 0);
        let _ = fs::remove_dir_all(c.dir());
    }

    #[test]
    fn a_cache_that_was_never_written_is_empty() {
        let c = cache("never", DEFAULT_MAX_BYTES);
        assert_eq!(c.info().unwrap().entries, 0);
        assert_eq!(c.clear().unwrap().entries, 0);
    }

    #[test]
    fn threads_storing_at_once_leave_only_valid_entries() {
        let c = cache("threads", DEFAULT_MAX_BYTES);
        std::thread::scope(|s| {
            for t in 0..8u32 {
                let c = &c;
                s.spawn(move || {
                    for n in 0..20u32 {
                        // Half the keys are shared between all threads.
                        let k = if n % 2 == 0 { n } else { t * 1000 + n };
                        c.put(&key(k), &entry(n as usize * 10)).unwrap();
                        assert_eq!(c.get(&key(k)), Some(entry(n as usize * 10)));
                    }
                });
            }
        });
        assert_eq!(c.info().unwrap().entries, 10 + 8 * 10);
        let _ = fs::remove_dir_all(c.dir());
    }
}
