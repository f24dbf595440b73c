//! What tells, without reading a file, that it is the one read before: its stamp.
//!
//! A [`Stamp`] is a file's inode number, size, modification time and status-change time, as
//! `stat` gives them (ccache's direct mode and git's index check the same fields). Writing a
//! file changes its modification and change times; setting the modification time back (`touch
//! -d`, `cp -p`, an archive extracted) still sets the change time to now, which no call can
//! set back; replacing a file by renaming another over it changes the inode. Creating,
//! removing or renaming an entry of a directory changes the directory's own modification and
//! change times, so a directory's stamp says whether a file that was not there has appeared.
//!
//! Two things a stamp cannot see: a change within the same tick of the file system's clock as
//! the stamp was taken (the same size, the same times), and a change by someone who turns the
//! system clock back. The first is why a stamp is used only once it is [settled](Stamp::settled):
//! both times at least [`SETTLE`] older than the moment the lookup began, so any later change
//! lands on a later tick. The second is out of scope, as it is for ccache and git.
//!
//! [`Watch`] records the stamps a header lookup depended on: each file read, and for each
//! place a header was looked for, the directory that would have to change for the answer to
//! change (see [`Watch::lookup`]).

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How old a stamp's times must be, relative to the start of the lookup that took it, before
/// it is trusted to stand for the content (longer than any file system clock's tick: FAT's is
/// 2 s, the coarsest in use; Linux's local file systems tick every 1 to 10 ms).
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// A file's (or directory's) identity and times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub ino: u64,
    pub len: u64,
    /// Nanoseconds since the Unix epoch (negative before it).
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

impl Stamp {
    /// The stamp of what `path` names now (following symbolic links), or `None` when nothing
    /// is there or it cannot be read.
    pub(crate) fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(path).ok()?;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Some(Stamp {
            ino: m.ino(),
            len: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        })
    }

    /// Whether both times are at least [`SETTLE`] before `start`.
    pub(crate) fn settled(&self, start: SystemTime) -> bool {
        let start_ns = match start.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(_) => return false,
        };
        let limit = start_ns.saturating_sub(SETTLE.as_nanos() as i64);
        self.mtime_ns < limit && self.ctime_ns < limit
    }
}

/// The stamps one header lookup depended on, so that a later process can tell, by `stat`
/// alone, that the lookup would give the same answer.
#[derive(Debug)]
pub(crate) struct Watch {
    start: SystemTime,
    /// Every path stamped, with its stamp; `None` when nothing was there.
    seen: HashMap<PathBuf, Option<Stamp>>,
    /// The stamps the answer depends on, in the order taken, and their paths.
    watched: Vec<(PathBuf, Stamp)>,
    recorded: HashSet<PathBuf>,
    /// A stamp was too new to trust, or a path had none.
    unsettled: bool,
}

impl Watch {
    /// A watch for a lookup beginning now.
    pub(crate) fn new() -> Self {
        Watch {
            start: SystemTime::now(),
            seen: HashMap::new(),
            watched: Vec::new(),
            recorded: HashSet::new(),
            unsettled: false,
        }
    }

    fn stamp(&mut self, path: &Path) -> Option<Stamp> {
        if let Some(s) = self.seen.get(path) {
            return *s;
        }
        let s = Stamp::of(path);
        self.seen.insert(path.to_path_buf(), s);
        s
    }

    fn depend(&mut self, path: &Path, s: Stamp) {
        if !s.settled(self.start) {
            self.unsettled = true;
        }
        if self.recorded.insert(path.to_path_buf()) {
            self.watched.push((path.to_path_buf(), s));
        }
    }

    /// The stamp of `path`, a file about to be read, taken before the read: a change after
    /// it gives the file a later stamp, so a read of changed content is never recorded under
    /// the old one. `None` when it cannot be stamped (the lookup is then not recorded).
    pub(crate) fn file(&mut self, path: &Path) -> Option<Stamp> {
        let s = self.stamp(path);
        match s {
            Some(s) => self.depend(path, s),
            None => self.unsettled = true,
        }
        s
    }

    /// Records what decides whether `path` exists: the stamp of its directory, or, when that
    /// does not exist, of the nearest ancestor that does (creating the missing directories
    /// changes that one first). A file appearing at `path`, disappearing from it, or a
    /// symbolic link on the way being pointed elsewhere all change a stamp recorded here.
    pub(crate) fn lookup(&mut self, path: &Path) {
        let mut dir = path.parent();
        while let Some(d) = dir {
            let d = if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            };
            if let Some(s) = self.stamp(d) {
                let d = d.to_path_buf();
                self.depend(&d, s);
                return;
            }
            dir = d.parent();
        }
        // Not even the root: nothing can be promised.
        self.unsettled = true;
    }

    /// Whether `s` is settled for this lookup (see [`Stamp::settled`]).
    pub(crate) fn settled(&self, s: &Stamp) -> bool {
        s.settled(self.start)
    }

    /// The stamps to record, or `None` when one was too new to trust.
    pub(crate) fn finish(self) -> Option<Vec<(PathBuf, Stamp)>> {
        (!self.unsettled).then_some(self.watched)
    }
}

/// Whether every recorded stamp still holds.
pub(crate) fn unchanged(watched: &[(PathBuf, Stamp)]) -> bool {
    watched.iter().all(|(p, s)| Stamp::of(p) == Some(*s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cudacheck-stamp-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Sets a file's modification time an hour back (its change time stays now).
    fn age(path: &Path) {
        let f = fs::File::options().append(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
    }

    #[test]
    fn a_rewrite_with_the_old_size_and_modification_time_changes_the_stamp() {
        let d = tmp("rewrite");
        let f = d.join("h.h");
        fs::write(&f, "int a;\n").unwrap();
        age(&f);
        let before = Stamp::of(&f).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        fs::write(&f, "int b;\n").unwrap();
        let f2 = fs::File::options().append(true).open(&f).unwrap();
        f2.set_modified(UNIX_EPOCH + Duration::from_nanos(before.mtime_ns as u64))
            .unwrap();
        let after = Stamp::of(&f).unwrap();
        assert_eq!((after.len, after.mtime_ns), (before.len, before.mtime_ns));
        assert_ne!(after, before, "the change time tells them apart");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_file_appearing_changes_the_stamp_of_the_nearest_existing_directory() {
        let d = tmp("appear");
        let mut w = Watch::new();
        w.lookup(&d.join("sub/deeper/h.h"));
        let watched = w.watched.clone();
        assert_eq!(watched.len(), 1);
        assert_eq!(watched[0].0, d);
        assert!(unchanged(&watched));
        std::thread::sleep(Duration::from_millis(20));
        fs::create_dir_all(d.join("sub/deeper")).unwrap();
        fs::write(d.join("sub/deeper/h.h"), "").unwrap();
        assert!(!unchanged(&watched));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn fresh_stamps_are_not_settled() {
        let d = tmp("fresh");
        let f = d.join("h.h");
        fs::write(&f, "x").unwrap();
        let mut w = Watch::new();
        assert!(w.file(&f).is_some());
        assert!(w.finish().is_none(), "written just now");
        let old = Stamp {
            ino: 1,
            len: 1,
            mtime_ns: 0,
            ctime_ns: 0,
        };
        assert!(old.settled(SystemTime::now()));
        let _ = fs::remove_dir_all(&d);
    }
}
