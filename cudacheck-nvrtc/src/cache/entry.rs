//! One cache entry and its file format.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "CUDACHK\x01"
//!      8     4  format version, u32 little-endian (FORMAT_VERSION)
//!     12    32  the key the entry was stored under
//!     44     8  payload length, u64 little-endian
//!     52    32  BLAKE3 of the payload
//!     84     .  payload
//! ```
//!
//! Every file of the cache has this header ([`Frame`]), each kind (module entry, manifest,
//! checked build) with its own magic bytes and version. A module entry's payload is
//! length-prefixed fields (see [`Entry::encode`]). The framing is written by
//! hand rather than with a serialization crate because the checksum must cover the exact bytes
//! on disk, and a truncated or altered file must be refused before any field is decoded: the
//! whole file is read, its length and BLAKE3 checked, and only then decoded with bounds checks.
//! The key inside the file means a file renamed or copied to another entry's name is refused
//! too: an entry can only ever answer the key it was compiled for.

use thiserror::Error;

use super::key::Key;

/// Bumped whenever the payload's layout or meaning changes; old entries then read as misses.
pub(crate) const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 32 + 8 + 32;

/// A module entry's framing.
const MODULE: Frame = Frame {
    magic: b"CUDACHK\x01",
    version: FORMAT_VERSION,
};

/// The framing every file of the cache shares (module entries, manifests, checked builds),
/// each kind with its own magic and format version: the header above, then the payload.
pub(crate) struct Frame {
    pub magic: &'static [u8; 8],
    pub version: u32,
}

impl Frame {
    /// The file's bytes for `payload` stored under `key`.
    pub(crate) fn seal(&self, key: &Key, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(key.as_bytes());
        put_u64(&mut out, payload.len() as u64);
        out.extend_from_slice(blake3::hash(payload).as_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The payload of a file that should hold `key`'s, once its length, kind, version, key
    /// and checksum are checked; nothing of it is decoded before.
    ///
    /// # Errors
    /// [`EntryError`] saying what is wrong.
    pub(crate) fn open<'a>(&self, bytes: &'a [u8], key: &Key) -> Result<&'a [u8], EntryError> {
        if bytes.len() < HEADER_LEN {
            return Err(EntryError::Truncated {
                len: bytes.len() as u64,
                expected: HEADER_LEN as u64,
            });
        }
        let (header, payload) = bytes.split_at(HEADER_LEN);
        if &header[..8] != self.magic {
            return Err(EntryError::NotAnEntry);
        }
        let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        if version != self.version {
            return Err(EntryError::OtherFormat {
                version,
                expected: self.version,
            });
        }
        if header[12..44] != key.as_bytes()[..] {
            return Err(EntryError::OtherKey);
        }
        let declared = u64::from_le_bytes(header[44..52].try_into().expect("8 bytes"));
        if declared != payload.len() as u64 {
            return Err(EntryError::Truncated {
                len: bytes.len() as u64,
                expected: HEADER_LEN as u64 + declared,
            });
        }
        if blake3::hash(payload).as_bytes()[..] != header[52..84] {
            return Err(EntryError::Checksum);
        }
        Ok(payload)
    }
}

/// What a compile produced, as the cache keeps it: everything a consumer of
/// [`compile`](crate::compile) reads, so a hit answers exactly as the compile did
/// (the CLI's output from a warm cache is byte-identical to a cold one).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    pub outcome: Outcome,
    /// The ELF CUBIN; empty when the compile failed.
    pub cubin: Vec<u8>,
    /// The PTX, when it was asked for.
    pub ptx: Option<String>,
    /// NVRTC's log: warnings, ptxas's `-v` report, or the errors of a failed compile.
    pub log: String,
    /// `(name expression, mangled name)`, in the order asked.
    pub lowered_names: Vec<(String, String)>,
}

/// Whether the compile produced a module. A compile that failed with errors in the source is
/// kept too: NVRTC is deterministic for one key, and a library with a file that does not compile
/// is re-checked as fast as one without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    Compiled,
    /// `NVRTC_ERROR_COMPILATION`: the log holds the errors.
    Failed,
}

impl Entry {
    /// A successful compile's output.
    pub fn compiled(
        cubin: Vec<u8>,
        ptx: Option<String>,
        log: String,
        lowered_names: Vec<(String, String)>,
    ) -> Self {
        Entry {
            outcome: Outcome::Compiled,
            cubin,
            ptx,
            log,
            lowered_names,
        }
    }

    /// A compile that failed with errors in the source, with NVRTC's log.
    pub fn failed(log: String) -> Self {
        Entry {
            outcome: Outcome::Failed,
            cubin: Vec::new(),
            ptx: None,
            log,
            lowered_names: Vec::new(),
        }
    }

    /// The file's bytes: header, then payload.
    pub(crate) fn encode(&self, key: &Key) -> Vec<u8> {
        let mut p = Vec::with_capacity(self.cubin.len() + self.log.len() + 64);
        p.push(match self.outcome {
            Outcome::Compiled => 0,
            Outcome::Failed => 1,
        });
        put_bytes(&mut p, &self.cubin);
        match &self.ptx {
            None => p.push(0),
            Some(ptx) => {
                p.push(1);
                put_bytes(&mut p, ptx.as_bytes());
            }
        }
        put_bytes(&mut p, self.log.as_bytes());
        put_u64(&mut p, self.lowered_names.len() as u64);
        for (expr, lowered) in &self.lowered_names {
            put_bytes(&mut p, expr.as_bytes());
            put_bytes(&mut p, lowered.as_bytes());
        }
        MODULE.seal(key, &p)
    }

    /// Checks and decodes a file's bytes that should hold the entry for `key`.
    ///
    /// # Errors
    /// [`EntryError`] saying what is wrong; the caller treats every one as a miss.
    pub(crate) fn decode(bytes: &[u8], key: &Key) -> Result<Self, EntryError> {
        let payload = MODULE.open(bytes, key)?;
        let mut r = Reader(payload);
        let outcome = match r.u8()? {
            0 => Outcome::Compiled,
            1 => Outcome::Failed,
            _ => return Err(EntryError::Malformed),
        };
        let cubin = r.bytes()?.to_vec();
        let ptx = match r.u8()? {
            0 => None,
            1 => Some(r.string()?),
            _ => return Err(EntryError::Malformed),
        };
        let log = r.string()?;
        let n = r.u64()?;
        let mut lowered_names = Vec::new();
        for _ in 0..n {
            lowered_names.push((r.string()?, r.string()?));
        }
        if !r.0.is_empty() {
            return Err(EntryError::Malformed);
        }
        Ok(Entry {
            outcome,
            cubin,
            ptx,
            log,
            lowered_names,
        })
    }
}

/// Why a cache file was not used. Every variant is a miss: the module is compiled again and
/// the file replaced.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryError {
    #[error("the entry is truncated: {len} bytes, expected {expected}")]
    Truncated { len: u64, expected: u64 },
    #[error("the file is not a cudacheck cache entry (bad magic bytes)")]
    NotAnEntry,
    #[error("the entry has format version {version}, this cudacheck reads version {expected}")]
    OtherFormat { version: u32, expected: u32 },
    #[error("the entry was stored under another key")]
    OtherKey,
    #[error("the entry's checksum does not match its contents")]
    Checksum,
    #[error("the entry's checksum matches but its fields do not decode")]
    Malformed,
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Bounds-checked reading of the payload.
pub(crate) struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: u64) -> Result<&'a [u8], EntryError> {
        let n = usize::try_from(n).map_err(|_| EntryError::Malformed)?;
        if n > self.0.len() {
            return Err(EntryError::Malformed);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, EntryError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u64(&mut self) -> Result<u64, EntryError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], EntryError> {
        let n = self.u64()?;
        self.take(n)
    }

    pub(crate) fn string(&mut self) -> Result<String, EntryError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| EntryError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::key::KeyBuilder;

    fn key(text: &str) -> Key {
        KeyBuilder::new().variant(text.as_bytes()).build()
    }

    fn sample() -> Entry {
        Entry::compiled(
            b"\x7fELF fake cubin".to_vec(),
            Some(".version 9.0".into()),
            "ptxas info    : Used 8 registers".into(),
            vec![("scale<float>".into(), "_Z5scaleIfEvPT_".into())],
        )
    }

    #[test]
    fn an_entry_round_trips() {
        let k = key("a");
        assert_eq!(Entry::decode(&sample().encode(&k), &k), Ok(sample()));
        let failed = Entry::failed("x.cu(3): error: expected a \";\"".into());
        assert_eq!(Entry::decode(&failed.encode(&k), &k), Ok(failed));
    }

    #[test]
    fn every_truncation_is_refused() {
        let k = key("a");
        let bytes = sample().encode(&k);
        for len in 0..bytes.len() {
            let e = Entry::decode(&bytes[..len], &k).unwrap_err();
            assert!(matches!(e, EntryError::Truncated { .. }), "{len}: {e}");
        }
    }

    #[test]
    fn a_flipped_payload_byte_fails_the_checksum() {
        let k = key("a");
        let bytes = sample().encode(&k);
        for i in HEADER_LEN..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x20;
            assert_eq!(
                Entry::decode(&bad, &k),
                Err(EntryError::Checksum),
                "byte {i}"
            );
        }
    }

    #[test]
    fn an_entry_answers_only_its_own_key() {
        let bytes = sample().encode(&key("a"));
        assert_eq!(Entry::decode(&bytes, &key("b")), Err(EntryError::OtherKey));
    }

    #[test]
    fn another_format_version_is_a_miss() {
        let k = key("a");
        let mut bytes = sample().encode(&k);
        bytes[8] = 99;
        assert_eq!(
            Entry::decode(&bytes, &k),
            Err(EntryError::OtherFormat {
                version: 99,
                expected: FORMAT_VERSION
            })
        );
    }

    #[test]
    fn a_foreign_file_is_not_an_entry() {
        let k = key("a");
        let mut bytes = sample().encode(&k);
        bytes[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
        assert_eq!(Entry::decode(&bytes, &k), Err(EntryError::NotAnEntry));
    }
}
