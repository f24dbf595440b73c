//! The cache key: a BLAKE3 digest of everything that can change a compile's output.
//!
//! Each part goes into the hash as a tag byte, a length and the bytes, so two different lists
//! of parts can never hash the same input (`("ab", "c")` and `("a", "bc")` differ). The
//! builder always starts with cudacheck's version and the entry format version, so a new
//! cudacheck never reads an old one's entries as its own.

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use cudacheck_core::Arch;

use super::entry::FORMAT_VERSION;

/// A cache key: 32 bytes of BLAKE3, shown as 64 hex digits (the entry's file name).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl Key {
    /// Starts a key; see [`KeyBuilder`].
    pub fn builder() -> KeyBuilder {
        KeyBuilder::new()
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub(crate) fn from_bytes(bytes: [u8; 32]) -> Self {
        Key(bytes)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// The source of the code that turns a compile request into NVRTC's input (options, in-memory
/// headers, any rewriting of the source) and an entry back into a result: every file of
/// `src/nvrtc/` (`NVRTC_FILES`, listed by `build.rs` from the directory) and these. The crate
/// version changes only at releases; hashing this code too means a cudacheck built from changed
/// code never answers from entries an older build stored.
const COMPILE_PATH: &[&str] = &[include_str!("hook.rs"), include_str!("entry.rs")];

include!(concat!(env!("OUT_DIR"), "/nvrtc_files.rs"));

/// The code that decides what a manifest records and when it holds (see `manifest.rs`), and
/// the compatibility headers handed to NVRTC in memory: a direct key covers both, since a
/// manifest's answer must change when either does.
const DIRECT_PATH: &[&str] = &[
    include_str!("deps.rs"),
    include_str!("manifest.rs"),
    include_str!("stamp.rs"),
    include_str!("../nvrtc/headers.rs"),
];

/// The code that turns NVRTC's PTX into a bounds-checked CUBIN and stores it: the
/// instrumenter, the assembly and the checked build's entry format. (The options the runtime
/// hands the instrumenter live in the `cudacheck` crate, which adds its own code's digest:
/// [`code_digest`], [`KeyBuilder::checked_from`].)
const CHECKED_PATH: &[&str] = &[
    include_str!("../nvrtc/jitlink.rs"),
    include_str!("checked.rs"),
];

/// The digest of source texts, for a caller's code that a cache key must cover.
pub fn code_digest(texts: &[&str]) -> [u8; 32] {
    digest(texts.iter().copied())
}

fn digest<'a>(texts: impl IntoIterator<Item = &'a str>) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for text in texts {
        h.update(&(text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    *h.finalize().as_bytes()
}

fn compile_path_digest() -> &'static [u8; 32] {
    static DIGEST: OnceLock<[u8; 32]> = OnceLock::new();
    DIGEST.get_or_init(|| {
        digest(
            NVRTC_FILES
                .iter()
                .chain(COMPILE_PATH)
                .chain(cudacheck_core::source::TRANSFORM_SOURCES)
                .chain(cudacheck_core::text::SOURCES)
                .copied(),
        )
    })
}

fn direct_path_digest() -> &'static [u8; 32] {
    use crate::nvrtc::headers::{
        COMPAT_HEADERS, HOST_ONLY_HEADERS, HOST_ONLY_STUB, IMPLICIT_HEADER, IMPLICIT_HEADER_NAME,
    };
    static DIGEST: OnceLock<[u8; 32]> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let compat = COMPAT_HEADERS
            .iter()
            .flat_map(|(name, text)| [*name, *text])
            .chain(HOST_ONLY_HEADERS.iter().copied())
            .chain([HOST_ONLY_STUB, IMPLICIT_HEADER_NAME, IMPLICIT_HEADER]);
        // The include scan reads directives through the text layer.
        let text = cudacheck_core::text::SOURCES.iter().copied();
        digest(DIRECT_PATH.iter().copied().chain(text).chain(compat))
    })
}

fn checked_path_digest() -> &'static [u8; 32] {
    static DIGEST: OnceLock<[u8; 32]> = OnceLock::new();
    DIGEST.get_or_init(|| {
        digest(
            CHECKED_PATH
                .iter()
                .chain(cudacheck_core::instrument::INSTRUMENT_SOURCES)
                .chain(cudacheck_core::ir::SOURCES)
                .copied(),
        )
    })
}

/// The tag of each part, so parts of different kinds never collide.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Part {
    Version = 1,
    SourceName,
    SourceText,
    Option,
    InMemoryHeader,
    HeaderFile,
    Arch,
    Compiler,
    NameExpression,
    Ptx,
    Variant,
    /// A direct key (see `manifest.rs`): the code and in-memory headers it depends on.
    Direct,
    WorkingDir,
    SourceDir,
    /// The module a derived build (a checked one) is made from.
    Module,
    Instrumenter,
    Assembler,
    Shape,
    Symbol,
}

/// Builds a [`Key`] from the parts of a compile. Parts are order-sensitive: add them in the
/// order the compiler sees them (options in command-line order, headers in include order).
///
/// ```
/// use cudacheck_nvrtc::cache::Key;
/// let a = Key::builder().source("k.cu", "__global__ void k() {}").variant(b"plain").build();
/// let b = Key::builder().source("k.cu", "__global__ void k() {}").variant(b"checked").build();
/// assert_ne!(a, b);
/// ```
#[derive(Clone)]
pub struct KeyBuilder {
    hasher: blake3::Hasher,
}

impl Default for KeyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyBuilder {
    /// A builder already holding cudacheck's version, the entry format version and the
    /// digest of the code between a compile request and NVRTC (`COMPILE_PATH` in `key.rs`).
    pub fn new() -> Self {
        let mut b = KeyBuilder {
            hasher: blake3::Hasher::new(),
        };
        b.part(Part::Version, env!("CARGO_PKG_VERSION").as_bytes());
        b.part(Part::Version, &FORMAT_VERSION.to_le_bytes());
        b.part(Part::Version, compile_path_digest());
        b
    }

    fn part(&mut self, tag: Part, bytes: &[u8]) -> &mut Self {
        self.hasher.update(&[tag as u8]);
        self.hasher.update(&(bytes.len() as u64).to_le_bytes());
        self.hasher.update(bytes);
        self
    }

    /// The source's name (diagnostics and line info carry it) and text.
    pub fn source(&mut self, name: &str, text: &str) -> &mut Self {
        self.part(Part::SourceName, name.as_bytes())
            .part(Part::SourceText, text.as_bytes())
    }

    /// One compiler option, exactly as passed (`-I` directories, defines and the architecture
    /// flag included).
    pub fn option(&mut self, option: &str) -> &mut Self {
        self.part(Part::Option, option.as_bytes())
    }

    /// A header handed to the compiler in memory (its include name and text).
    pub fn in_memory_header(&mut self, name: &str, text: &str) -> &mut Self {
        self.part(Part::InMemoryHeader, name.as_bytes())
            .part(Part::InMemoryHeader, text.as_bytes())
    }

    /// A header file the source may include: its path and the BLAKE3 of its content.
    pub fn header_file(&mut self, path: &Path, digest: &[u8; 32]) -> &mut Self {
        self.part(Part::HeaderFile, path.as_os_str().as_encoded_bytes())
            .part(Part::HeaderFile, digest)
    }

    /// The target architecture.
    pub fn arch(&mut self, arch: Arch) -> &mut Self {
        self.part(Part::Arch, arch.sm_name().as_bytes())
    }

    /// The compiler's identity: its version and anything else that tells two builds of it
    /// apart (cudacheck passes the library's path, size and modification time).
    pub fn compiler(&mut self, identity: &[u8]) -> &mut Self {
        self.part(Part::Compiler, identity)
    }

    /// A name expression whose lowered name the entry records.
    pub fn name_expression(&mut self, expr: &str) -> &mut Self {
        self.part(Part::NameExpression, expr.as_bytes())
    }

    /// Whether the entry holds PTX too.
    pub fn ptx(&mut self, ptx: bool) -> &mut Self {
        self.part(Part::Ptx, &[u8::from(ptx)])
    }

    /// A caller's own component: what kind of build this is, when that is not already in the
    /// source, options and defines (e.g. an instrumented build per launch shape).
    pub fn variant(&mut self, variant: &[u8]) -> &mut Self {
        self.part(Part::Variant, variant)
    }

    /// Marks a direct key (a manifest's, see `manifest.rs`), covering the code that decides
    /// what a manifest records and the in-memory headers' text.
    pub(crate) fn direct(&mut self) -> &mut Self {
        self.part(Part::Direct, direct_path_digest())
    }

    /// The working directory: where relative paths and an in-memory source's `"..."`
    /// includes are looked up.
    pub(crate) fn working_dir(&mut self, dir: Option<&Path>) -> &mut Self {
        let bytes = dir.map_or(&[][..], |d| d.as_os_str().as_encoded_bytes());
        self.part(Part::WorkingDir, bytes)
    }

    /// The source's own directory, where its `"..."` includes are looked up first.
    pub(crate) fn source_dir(&mut self, dir: Option<&Path>) -> &mut Self {
        let bytes = dir.map_or(&[][..], |d| d.as_os_str().as_encoded_bytes());
        self.part(Part::SourceDir, bytes)
    }

    /// The module (its key) a bounds-checked build is made from, and the code that makes it
    /// (the instrumenter, the assembly, the entry format, and the caller's `builder` code: the
    /// digest of what decides the instrumenter's options).
    pub(crate) fn checked_from(&mut self, module: &Key, builder: &[u8; 32]) -> &mut Self {
        self.part(Part::Module, module.as_bytes())
            .part(Part::Instrumenter, checked_path_digest())
            .part(Part::Instrumenter, builder)
    }

    /// The assembler's (nvJitLink's) identity: its file's path and stamp.
    pub(crate) fn assembler(&mut self, identity: &[u8]) -> &mut Self {
        self.part(Part::Assembler, identity)
    }

    /// The launch shape a checked build is specialised for.
    pub(crate) fn shape(&mut self, shape: &[u8]) -> &mut Self {
        self.part(Part::Shape, shape)
    }

    /// The kernel whose build this is (a module holds several).
    pub(crate) fn symbol(&mut self, name: &str) -> &mut Self {
        self.part(Part::Symbol, name.as_bytes())
    }

    pub fn build(&self) -> Key {
        Key(*self.hasher.finalize().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_bytes_between_parts_changes_the_key() {
        let a = Key::builder().option("ab").option("c").build();
        let b = Key::builder().option("a").option("bc").build();
        assert_ne!(a, b);
    }

    #[test]
    fn the_same_bytes_in_another_part_change_the_key() {
        let a = Key::builder().option("x").build();
        let b = Key::builder().variant(b"x").build();
        assert_ne!(a, b);
    }

    #[test]
    fn equal_parts_give_equal_keys() {
        let k = || {
            Key::builder()
                .source("k.cu", "text")
                .arch(Arch::new(9, 0))
                .build()
        };
        assert_eq!(k(), k());
        assert_eq!(k().to_string().len(), 64);
    }

    #[test]
    fn the_arch_is_part_of_the_key() {
        let k = |a| Key::builder().source("k.cu", "text").arch(a).build();
        assert_ne!(k(Arch::new(8, 0)), k(Arch::new(9, 0)));
    }
}
