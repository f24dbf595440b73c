//! Manifests: how a warm start finds a module's key without listing its headers again.
//!
//! A module's [`Key`] covers the content of every header its source may include (`deps.rs`),
//! so computing it means finding the include closure and hashing it: hundreds of `stat`s,
//! path resolutions and toolkit headers for a source that includes `<cuda_fp16.h>`. A
//! manifest, like ccache's direct mode, skips that on a warm start. It is stored under a
//! *direct* key, made of everything the module key covers except the header files (the
//! source, options, architecture, NVRTC's identity, the working directory, ...), and holds
//! the module key the full lookup gave, with the [`Stamp`]s that lookup depended on (every
//! header read, and the directory of every place a header was looked for; see
//! [`Watch`](super::stamp::Watch)). When every stamp still holds, the headers are the ones
//! hashed then, so the module key is the same; when one does not, the full lookup runs and
//! the manifest is replaced.
//!
//! A manifest is written only when every stamp was settled (`stamp.rs`), and read through the
//! same framing as an entry (checksum, key inside): a damaged one is a miss, never a wrong key.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::entry::{put_bytes, put_u64, EntryError, Frame, Reader};
use super::stamp::{unchanged, Stamp};
use super::Key;

const FRAME: Frame = Frame {
    magic: b"CUDAMAN\x01",
    version: 1,
};

/// A direct key's manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// The key the module is stored under.
    pub module: Key,
    /// The stamps the header lookup depended on.
    pub watched: Vec<(PathBuf, Stamp)>,
}

impl Manifest {
    /// Whether the module key still holds: every stamp is unchanged.
    pub(crate) fn holds(&self) -> bool {
        unchanged(&self.watched)
    }

    pub(crate) fn encode(&self, direct: &Key) -> Vec<u8> {
        let mut p = Vec::with_capacity(32 + self.watched.len() * 96);
        p.extend_from_slice(self.module.as_bytes());
        put_u64(&mut p, self.watched.len() as u64);
        for (path, s) in &self.watched {
            put_bytes(&mut p, path.as_os_str().as_encoded_bytes());
            for v in [s.ino, s.len, s.mtime_ns as u64, s.ctime_ns as u64] {
                put_u64(&mut p, v);
            }
        }
        FRAME.seal(direct, &p)
    }

    /// # Errors
    /// [`EntryError`] for a file that is not `direct`'s manifest, whole and undamaged.
    pub(crate) fn decode(bytes: &[u8], direct: &Key) -> Result<Self, EntryError> {
        let mut r = Reader(FRAME.open(bytes, direct)?);
        let module = Key::from_bytes(r.take(32)?.try_into().expect("32 bytes"));
        let n = r.u64()?;
        let mut watched = Vec::new();
        for _ in 0..n {
            // Unix paths are bytes; `as_encoded_bytes` wrote them as they are.
            let path = OsStr::from_bytes(r.bytes()?);
            let s = Stamp {
                ino: r.u64()?,
                len: r.u64()?,
                mtime_ns: r.u64()? as i64,
                ctime_ns: r.u64()? as i64,
            };
            watched.push((PathBuf::from(path), s));
        }
        if !r.0.is_empty() {
            return Err(EntryError::Malformed);
        }
        Ok(Manifest { module, watched })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::key::KeyBuilder;

    fn key(t: &str) -> Key {
        KeyBuilder::new().variant(t.as_bytes()).build()
    }

    fn sample() -> Manifest {
        Manifest {
            module: key("module"),
            watched: vec![
                (
                    PathBuf::from("/cuda/include/cuda_fp16.h"),
                    Stamp {
                        ino: 7,
                        len: 120_000,
                        mtime_ns: 1_700_000_000_000_000_001,
                        ctime_ns: 1_700_000_000_000_000_002,
                    },
                ),
                (
                    PathBuf::from("/src"),
                    Stamp {
                        ino: 9,
                        len: 4096,
                        mtime_ns: -5,
                        ctime_ns: 3,
                    },
                ),
            ],
        }
    }

    #[test]
    fn a_manifest_round_trips() {
        let d = key("direct");
        assert_eq!(Manifest::decode(&sample().encode(&d), &d), Ok(sample()));
    }

    #[test]
    fn a_damaged_manifest_is_refused() {
        let d = key("direct");
        let mut bytes = sample().encode(&d);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(Manifest::decode(&bytes, &d), Err(EntryError::Checksum));
        assert_eq!(
            Manifest::decode(&sample().encode(&d), &key("other")),
            Err(EntryError::OtherKey)
        );
    }

    #[test]
    fn a_stamp_that_no_longer_holds_fails_the_manifest() {
        let d = std::env::temp_dir().join(format!("cudacheck-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("h.h");
        std::fs::write(&f, "a").unwrap();
        let m = Manifest {
            module: key("m"),
            watched: vec![(f.clone(), Stamp::of(&f).unwrap())],
        };
        assert!(m.holds());
        std::fs::remove_file(&f).unwrap();
        assert!(!m.holds());
        let _ = std::fs::remove_dir_all(&d);
    }
}
