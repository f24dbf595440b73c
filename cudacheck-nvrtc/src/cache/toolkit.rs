//! Scans of the CUDA toolkit's headers, kept between processes.
//!
//! A source that includes `<cuda_fp16.h>` and a few `<cuda/std/...>` headers reaches about 300
//! toolkit headers (3 MB); reading, hashing and scanning them on every process start would cost
//! more than the cache hit it serves. So each toolkit header's scan (its BLAKE3 and include
//! list) is kept in one file of the cache directory, `toolkit-scan-v2`, and reused while the
//! header's [`Stamp`] (inode, size, modification and change times) is unchanged; a scan is kept
//! only once its stamp is settled (see `stamp.rs`). Only toolkit headers are treated so: the
//! user's own files are read on every full lookup. The file carries a BLAKE3 of its body; a
//! damaged or foreign one is ignored and rewritten.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::deps::{scan, Include, Scanned};
use super::stamp::Stamp;
use crate::stats::{count, Event};

/// The memo file's name in the cache directory.
pub(crate) const MEMO_FILE: &str = "toolkit-scan-v2";
/// The memo files of earlier formats, removed with the cache.
pub(crate) const OLD_MEMO_FILES: &[&str] = &["toolkit-scan-v1"];
const MAGIC: &str = "cudacheck-toolkit-scan-v2";

#[derive(Default)]
struct Memo {
    scans: HashMap<PathBuf, (Stamp, Arc<Scanned>)>,
    /// Memo files already read into `scans`.
    loaded: Vec<PathBuf>,
    /// Counts the scans kept; `saved` is its value when the memo was last written whole. A
    /// write that fails (the cache directory not made yet, a full disk) leaves `saved` as it
    /// was, so the next [`save`] writes them: a process's first compile into a new cache
    /// directory keys its module before the directory exists, and its scans must still reach
    /// the disk for the next process.
    added: u64,
    saved: u64,
}

fn memo() -> std::sync::MutexGuard<'static, Memo> {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    MEMO.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The scan of toolkit header `path`, whose stamp is `now` (taken before this call): from
/// memory or `file` when the header is unchanged, else read now and, when `settled`, kept.
/// `None` when the header cannot be read.
pub(crate) fn toolkit_scan(
    path: &Path,
    now: Stamp,
    settled: bool,
    file: Option<&Path>,
) -> Option<Arc<Scanned>> {
    {
        let mut m = memo();
        if let Some(f) = file.filter(|f| !m.loaded.iter().any(|l| l == f)) {
            m.loaded.push(f.to_path_buf());
            for (p, entry) in read(f) {
                m.scans.entry(p).or_insert(entry);
            }
        }
        if let Some((s, scanned)) = m.scans.get(path) {
            if *s == now {
                return Some(Arc::clone(scanned));
            }
        }
    }
    let scanned = Arc::new(scan(&fs::read(path).ok()?));
    count(Event::ToolkitScan);
    if settled {
        let mut m = memo();
        m.scans
            .insert(path.to_path_buf(), (now, Arc::clone(&scanned)));
        m.added += 1;
    }
    Some(scanned)
}

/// Writes the memo to `file` when scans were added since it was last written. A failure is
/// ignored (the memo only saves time) and the scans stay pending, for the next call.
pub(crate) fn save(file: &Path) {
    let (body, added) = {
        let m = memo();
        if m.added == m.saved {
            return;
        }
        let mut body = String::new();
        for (path, (s, scanned)) in &m.scans {
            if let Some(line) = line(path, *s, scanned) {
                body.push_str(&line);
            }
        }
        (body, m.added)
    };
    let text = format!(
        "{MAGIC}\t{}\n{body}",
        blake3::hash(body.as_bytes()).to_hex()
    );
    let Some(dir) = file.parent() else {
        return;
    };
    let write = || -> std::io::Result<()> {
        let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
        tmp.write_all(text.as_bytes())?;
        tmp.persist(file).map_err(|e| e.error)?;
        Ok(())
    };
    if write().is_ok() {
        let mut m = memo();
        // Another thread may have written a later memo meanwhile.
        m.saved = m.saved.max(added);
    }
}

/// `path \t ino \t len \t mtime \t ctime \t digest \t computed-line or - \t <name or "name
/// ...`; `None` for a path or name that a tab or newline would break.
fn line(path: &Path, s: Stamp, scanned: &Scanned) -> Option<String> {
    let bad = |t: &str| t.contains(['\t', '\n']);
    let p = path.to_str().filter(|p| !bad(p))?;
    let mut out = format!(
        "{p}\t{}\t{}\t{}\t{}\t{}\t{}",
        s.ino,
        s.len,
        s.mtime_ns,
        s.ctime_ns,
        blake3::Hash::from_bytes(scanned.digest).to_hex(),
        scanned.computed.map_or("-".to_string(), |l| l.to_string())
    );
    for inc in &scanned.includes {
        if bad(&inc.name) {
            return None;
        }
        out.push('\t');
        out.push(if inc.quoted { '"' } else { '<' });
        out.push_str(&inc.name);
    }
    out.push('\n');
    Some(out)
}

/// The entries of memo file `file`; none when it is missing, damaged or of another format.
fn read(file: &Path) -> Vec<(PathBuf, (Stamp, Arc<Scanned>))> {
    let Ok(text) = fs::read_to_string(file) else {
        return Vec::new();
    };
    let Some((head, body)) = text.split_once('\n') else {
        return Vec::new();
    };
    let expected = format!("{MAGIC}\t{}", blake3::hash(body.as_bytes()).to_hex());
    if head != expected {
        return Vec::new();
    }
    body.lines().filter_map(parse_line).collect()
}

fn parse_line(l: &str) -> Option<(PathBuf, (Stamp, Arc<Scanned>))> {
    let mut f = l.split('\t');
    let path = PathBuf::from(f.next()?);
    let ino = f.next()?.parse().ok()?;
    let len = f.next()?.parse().ok()?;
    let mtime_ns = f.next()?.parse().ok()?;
    let ctime_ns = f.next()?.parse().ok()?;
    let digest = *blake3::Hash::from_hex(f.next()?).ok()?.as_bytes();
    let computed = match f.next()? {
        "-" => None,
        n => Some(n.parse().ok()?),
    };
    let includes = f
        .map(|i| {
            let quoted = i.starts_with('"');
            Include {
                name: i[1..].to_string(),
                quoted,
            }
        })
        .collect();
    let scanned = Scanned {
        digest,
        includes,
        computed,
    };
    let s = Stamp {
        ino,
        len,
        mtime_ns,
        ctime_ns,
    };
    Some((path, (s, Arc::new(scanned))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips() {
        let scanned = scan(b"#include <a.h>\n#include \"b/c.h\"\n#include X\n");
        let s = Stamp {
            ino: 12,
            len: 42,
            mtime_ns: 1_700_000_000_123_456_789,
            ctime_ns: 1_700_000_000_123_456_790,
        };
        let l = line(Path::new("/cuda/include/x.h"), s, &scanned).unwrap();
        let (p, (s2, back)) = parse_line(l.trim_end()).unwrap();
        assert_eq!(p, Path::new("/cuda/include/x.h"));
        assert_eq!(s2, s);
        assert_eq!(back.digest, scanned.digest);
        assert_eq!(back.includes, scanned.includes);
        assert_eq!(back.computed, Some(3));
    }

    #[test]
    fn a_damaged_memo_file_is_ignored() {
        let d = std::env::temp_dir().join(format!("cudacheck-memo-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let f = d.join(MEMO_FILE);
        let body =
            "/x.h\t1\t2\t3\t4\t0000000000000000000000000000000000000000000000000000000000000000\t-\n";
        let good = format!(
            "{MAGIC}\t{}\n{body}",
            blake3::hash(body.as_bytes()).to_hex()
        );
        fs::write(&f, &good).unwrap();
        assert_eq!(read(&f).len(), 1);
        fs::write(&f, good.replace("/x.h", "/y.h")).unwrap();
        assert!(read(&f).is_empty());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn scans_a_failed_write_left_are_written_next_time() {
        let d = std::env::temp_dir().join(format!("cudacheck-memo-late-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("inc")).unwrap();
        let h = d.join("inc/late.h");
        fs::write(&h, "#include <x.h>\n").unwrap();
        toolkit_scan(&h, Stamp::of(&h).unwrap(), true, None).unwrap();
        // The cache directory is not made yet, as in a process's first compile into it.
        let file = d.join("cache").join(MEMO_FILE);
        save(&file);
        assert!(!file.exists());
        fs::create_dir_all(d.join("cache")).unwrap();
        save(&file);
        let kept = read(&file);
        let _ = fs::remove_dir_all(&d);
        assert!(kept.iter().any(|(p, _)| *p == h), "{kept:?}");
    }

    #[test]
    fn a_changed_header_is_scanned_again() {
        let d = std::env::temp_dir().join(format!("cudacheck-memo-hdr-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let h = d.join("h.h");
        fs::write(&h, "#include <one.h>\n").unwrap();
        let first = toolkit_scan(&h, Stamp::of(&h).unwrap(), true, None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&h, "#include <two.h>\n#include <three.h>\n").unwrap();
        let second = toolkit_scan(&h, Stamp::of(&h).unwrap(), true, None).unwrap();
        assert_eq!(first.includes.len(), 1);
        assert_eq!(second.includes.len(), 2);
        let _ = fs::remove_dir_all(&d);
    }
}
