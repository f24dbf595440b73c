//! Reading the module images a program hands the CUDA driver ([`cuModuleLoadData`],
//! [`cuModuleLoadDataEx`], [`cuModuleLoadFatBinary`], [`cuLibraryLoadData`]), to find the PTX
//! of a module: PTX text, a CUBIN (ELF), a fatbin container, or the fatbin wrapper that
//! nvcc-compiled programs register. Pure and safe: every function takes bytes, checks every
//! offset and size it reads, and returns an error (or `None`) rather than panicking.
//!
//! 1. A launch interposer holding only a pointer reads [`MAGIC_LEN`] bytes, stopping early at a
//!    NUL byte (none of the three binary magics contains one, so this never reads past the end
//!    of a NUL-terminated PTX string), and calls [`classify`].
//! 2. For [`ImageKind::Cubin`] it reads [`ELF_HEADER_LEN`] bytes and [`elf_len`] gives the
//!    image's full length; for [`ImageKind::Fatbin`] it reads [`FATBIN_HEADER_LEN`] bytes and
//!    [`fatbin_len`] gives it; for [`ImageKind::FatbinWrapper`] it reads [`WRAPPER_LEN`] bytes,
//!    [`parse_wrapper`] gives the address of the fatbin, and step 2 goes on from there.
//! 3. [`parse_fatbin`] lists the entries, decompressed, and [`ptx_for_arch`] picks the PTX the
//!    driver would JIT for the device.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cudacheck_core::image::{classify, fatbin_len, parse_fatbin, ptx_for_arch, ImageKind};
//! # let bytes: &[u8] = include_bytes!("../tests/fixtures/fatbin/scale_add.sm_90.default.fatbin");
//! assert_eq!(classify(bytes), Some(ImageKind::Fatbin));
//! let image = &bytes[..fatbin_len(bytes).expect("a fatbin header")];
//! let fatbin = parse_fatbin(image)?;
//! let ptx = ptx_for_arch(&fatbin, 90).expect("the fatbin holds compute_90 PTX");
//! assert!(ptx.contains(".entry scale_add"));
//! # Ok(())
//! # }
//! ```
//!
//! # The formats, as read here
//!
//! NVIDIA documents none of the binary layouts below; they are what nvcc 13.0's output shows
//! (the fixtures in `tests/fixtures/fatbin`, made by `scripts/gen-fatbin-fixtures.sh`). Every
//! integer is little-endian; "at 0x10" is a byte offset from the start of the structure.
//!
//! - **Wrapper** (`__fatBinC_Wrapper_t`, 24 bytes on 64-bit hosts): a 32-bit magic 0x466243B1,
//!   a 32-bit version (1; 2 for a wrapper of pre-linked relocatable code), the 64-bit address
//!   of the fatbin, and a 64-bit pointer that is a file name or a list of pre-linked fatbins.
//! - **Container**: a 16-byte header, then the entries back to back. The header is a 32-bit
//!   magic 0xBA55ED50, a 16-bit version (1), the 16-bit header size (16) and the 64-bit size of
//!   the entries that follow. A host object's `.nv_fatbin` section holds one container per
//!   translation unit, back to back (8-byte aligned; nvcc 13.0 left no gap between them).
//!   Zero bytes between or after containers are taken for alignment padding.
//! - **Entry**: a header of at least 64 bytes, then its payload.
//!   - at 0x00, 16 bits: the kind: 1 PTX, 2 ELF (SASS), 8 LTO IR (seen with `code=lto_90`);
//!   - at 0x04, 32 bits: the header's size (64, larger when strings follow);
//!   - at 0x08, 64 bits: the payload's size as stored, padded to 8 bytes;
//!   - at 0x10, 32 bits: the compressed data's exact size, 0 when uncompressed;
//!   - at 0x14, 32 bits: where, from the entry's start, an options record lies (0: none). The
//!     record is a 32-bit offset (from the entry's start) and a 32-bit length of the options
//!     text: ptxas options for PTX (`-maxrregcount=32`, `--compile-only` with `-rdc`), a
//!     binary table for sm_100 and later ELF entries;
//!   - at 0x18, two 16-bit numbers: a format version (for PTX, the PTX ISA's minor and major);
//!   - at 0x1c, 32 bits: the architecture number, 90 for `sm_90` / `compute_90`;
//!   - at 0x20 and 0x24, 32 bits each: offset (from the entry's start) and length of an
//!     identifier, the source file's name with `-G`, or `fatbinary --ident`'s text;
//!   - at 0x28, 64 bits: flags. 0x1 64-bit code, 0x2 debug, 0x10 Linux host, 0x2000 LZ4,
//!     0x8000 zstd, 0x100000 architecture-specific (`sm_90a`), 0x200000 family (`sm_100f`);
//!   - at 0x38, 64 bits: the payload's size once decompressed, 0 when uncompressed.
//!
//!   nvcc 13.0 compresses PTX entries with zstd by default and leaves SASS uncompressed;
//!   `-Xfatbin -compress-all` compresses SASS too, `-compress-mode=speed` picks LZ4 and
//!   `-Xfatbin=--compress=false` (or `-no-compress`) compresses nothing. A zstd payload is one
//!   standard zstd frame; an LZ4 payload is one raw LZ4 block (no frame header). LTO IR is
//!   flagged as zstd but is not a zstd frame, so it is kept as stored.
//! - **ELF64**: the 64-byte header gives the program-header table (offset at 0x20, entry size
//!   at 0x36, count at 0x38) and the section-header table (offset at 0x28, entry size at 0x3a,
//!   count at 0x3c); ptxas writes both tables last, so the file ends where the later one does.
//!
//! [`cuModuleLoadData`]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html
//! [`cuModuleLoadDataEx`]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html
//! [`cuModuleLoadFatBinary`]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html
//! [`cuLibraryLoadData`]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__LIBRARY.html

// One file past the 600 lines STYLE.md suggests: the layouts documented above and their only
// reader stay side by side, and half of the length is the error messages and tests.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use thiserror::Error;

/// How many bytes [`classify`] needs to tell the binary formats apart.
pub const MAGIC_LEN: usize = 4;
/// The size of a fatbin container's header, all that [`fatbin_len`] reads.
pub const FATBIN_HEADER_LEN: usize = 16;
/// The size of an ELF64 header, all that [`elf_len`] reads.
pub const ELF_HEADER_LEN: usize = 64;
/// The size of `__fatBinC_Wrapper_t` on a 64-bit host, what [`parse_wrapper`] reads.
pub const WRAPPER_LEN: usize = 24;

const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const WRAPPER_MAGIC: u32 = 0x4662_43B1;
const ELF_MAGIC: &[u8] = b"\x7fELF";
const ENTRY_HEADER_MIN: usize = 64;

const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_ARCH_FAMILY: u64 = 0x20_0000;

/// What an image handed to the driver is, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX text, which the driver compiles (JIT) for the device.
    Ptx,
    /// A CUBIN: an ELF file of machine code (SASS) for one architecture.
    Cubin,
    /// A fatbin container: PTX and CUBINs for several architectures.
    Fatbin,
    /// `__fatBinC_Wrapper_t`, which points to a fatbin container.
    FatbinWrapper,
}

/// What an image is, from as many of its first bytes as the caller has ([`MAGIC_LEN`] suffice
/// for the binary formats). Text counts as PTX when, past whitespace and comments, it starts
/// with `.version` (or when the prefix ends before anything but comments): PTX is the only text
/// the driver loads. `None` for anything else, including an empty prefix.
pub fn classify(prefix: &[u8]) -> Option<ImageKind> {
    if prefix.starts_with(ELF_MAGIC) {
        return Some(ImageKind::Cubin);
    }
    match u32_at(prefix, 0) {
        Some(FATBIN_MAGIC) => Some(ImageKind::Fatbin),
        Some(WRAPPER_MAGIC) => Some(ImageKind::FatbinWrapper),
        _ => looks_like_ptx(prefix).then_some(ImageKind::Ptx),
    }
}

fn looks_like_ptx(prefix: &[u8]) -> bool {
    // The driver reads PTX as a C string: what follows a NUL is not part of it.
    let text = prefix.split(|&b| b == 0).next().unwrap_or_default();
    let mut rest = text;
    let mut comments = false;
    loop {
        rest = rest.trim_ascii_start();
        let skipped = if rest.starts_with(b"//") {
            rest.iter().position(|&b| b == b'\n').map(|n| n + 1)
        } else if rest.starts_with(b"/*") {
            rest.windows(2)
                .skip(2)
                .position(|w| w == b"*/")
                .map(|n| n + 4)
        } else if rest.is_empty() {
            return comments;
        } else {
            // A prefix may end inside the first token: judge it as far as it goes.
            let could_be = |token: &[u8]| rest.starts_with(token) || token.starts_with(rest);
            return could_be(b".version") || could_be(b"//") || could_be(b"/*");
        };
        comments = true;
        match skipped {
            Some(n) => rest = &rest[n..],
            // The prefix ends inside a comment.
            None => return true,
        }
    }
}

/// The total length of the fatbin container whose header starts `header` (at least
/// [`FATBIN_HEADER_LEN`] bytes): its header plus the entries it declares. An interposer that
/// has only a pointer reads the first [`FATBIN_HEADER_LEN`] bytes, asks this, and then reads
/// that many bytes for [`parse_fatbin`]. A `.nv_fatbin` section may hold more containers after
/// this one; the driver loads only the one it is pointed at. `None` when `header` is shorter
/// than a header, or is not a version-1 container header. The length is as declared:
/// [`parse_fatbin`] checks the contents.
pub fn fatbin_len(header: &[u8]) -> Option<usize> {
    container_header(header, 0).ok().map(|h| h.total_len)
}

/// The length of the ELF64 file whose header starts `header` (at least [`ELF_HEADER_LEN`]
/// bytes): where its program-header table or its section-header table ends, whichever is
/// later, since ptxas and nvlink write both after the sections (so do nvcc 13.0's). An
/// interposer that has only a pointer reads the first [`ELF_HEADER_LEN`] bytes, asks this, and
/// then reads that many bytes. `None` when `header` is short, not a little-endian ELF64
/// header, uses extended numbering (the section count then lies in section 0, past the
/// header), or declares table entries of the wrong size.
pub fn elf_len(header: &[u8]) -> Option<usize> {
    let h = header.get(..ELF_HEADER_LEN)?;
    // EI_CLASS 2: 64-bit; EI_DATA 1: little-endian.
    if !h.starts_with(ELF_MAGIC) || h[4] != 2 || h[5] != 1 {
        return None;
    }
    let table_end = |offset_at, entsize_at, count_at, entsize: u16| -> Option<u64> {
        let count = u16_at(h, count_at)?;
        if count == 0 {
            return Some(0);
        }
        // PN_XNUM: more program headers than 16 bits count, the real count is elsewhere.
        if count == 0xffff || u16_at(h, entsize_at)? != entsize {
            return None;
        }
        u64_at(h, offset_at)?.checked_add(u64::from(count) * u64::from(entsize))
    };
    let programs = table_end(0x20, 0x36, 0x38, 56)?;
    let sections = table_end(0x28, 0x3a, 0x3c, 64)?;
    if u16_at(h, 0x3c)? == 0 && u64_at(h, 0x28)? != 0 {
        return None;
    }
    usize::try_from(programs.max(sections).max(ELF_HEADER_LEN as u64)).ok()
}

/// A `__fatBinC_Wrapper_t` read from memory: where its fatbin is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FatbinWrapper {
    /// 1 for a wrapper of a whole program's code, 2 for one of pre-linked relocatable code.
    pub version: u32,
    /// The address of the fatbin container, in the process that holds the wrapper.
    pub data: u64,
    /// The file name (version 1, often null) or the list of pre-linked fatbins (version 2).
    pub filename_or_fatbins: u64,
}

/// Reads a 64-bit host's `__fatBinC_Wrapper_t` from its [`WRAPPER_LEN`] bytes.
///
/// # Errors
///
/// [`ImageError::NotWrapper`] when the magic is not 0x466243B1, [`ImageError::WrapperTruncated`]
/// when fewer than [`WRAPPER_LEN`] bytes are given, [`ImageError::UnknownWrapperVersion`] and
/// [`ImageError::NullWrapperData`] when the fields make no sense.
pub fn parse_wrapper(bytes: &[u8]) -> Result<FatbinWrapper, ImageError> {
    if u32_at(bytes, 0) != Some(WRAPPER_MAGIC) {
        if bytes.len() < MAGIC_LEN {
            return Err(ImageError::WrapperTruncated { len: bytes.len() });
        }
        return Err(ImageError::NotWrapper { found: hex(bytes) });
    }
    let (Some(version), Some(data), Some(filename_or_fatbins)) =
        (u32_at(bytes, 4), u64_at(bytes, 8), u64_at(bytes, 16))
    else {
        return Err(ImageError::WrapperTruncated { len: bytes.len() });
    };
    if !(1..=2).contains(&version) {
        return Err(ImageError::UnknownWrapperVersion { version });
    }
    if data == 0 {
        return Err(ImageError::NullWrapperData);
    }
    Ok(FatbinWrapper {
        version,
        data,
        filename_or_fatbins,
    })
}

/// A parsed fatbin: one container, or several back to back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fatbin<'a> {
    /// The containers in file order. One unless the bytes came from a `.nv_fatbin` section.
    pub containers: Vec<Container<'a>>,
}

/// One fatbin container: one module's code for several architectures.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Container<'a> {
    /// Where its header starts in the bytes given to [`parse_fatbin`].
    pub offset: usize,
    /// Its entries, in file order.
    pub entries: Vec<FatbinEntry<'a>>,
}

/// One entry of a fatbin container: PTX, a CUBIN, or another kind of code.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FatbinEntry<'a> {
    /// Where its header starts in the bytes given to [`parse_fatbin`].
    pub offset: usize,
    pub kind: EntryKind,
    /// The architecture number: 90 for `sm_90` (SASS) or `compute_90` (PTX).
    pub arch: u32,
    pub flavor: ArchFlavor,
    /// How the payload was stored; [`payload`](Self::payload) is decompressed all the same.
    pub compression: Compression,
    /// The identifier nvcc recorded (the source file with `-G`, `fatbinary --ident`'s text).
    pub identifier: Option<Cow<'a, str>>,
    /// The options record's bytes: ptxas options as text for PTX entries (see
    /// [`options_text`](Self::options_text)), a binary table for sm_100+ SASS entries.
    pub options: Option<&'a [u8]>,
    /// The code: PTX text (NUL-padded) or an ELF file, decompressed. Entries of other kinds
    /// are kept as stored: cudacheck does not read them, and nvcc's LTO IR is flagged as zstd
    /// without being a zstd frame.
    pub payload: Cow<'a, [u8]>,
}

impl FatbinEntry<'_> {
    /// The PTX text of a PTX entry, up to its first NUL.
    pub fn ptx(&self) -> Option<&str> {
        if self.kind != EntryKind::Ptx {
            return None;
        }
        let text = self.payload.split(|&b| b == 0).next().unwrap_or_default();
        // parse_fatbin checked that this is UTF-8.
        std::str::from_utf8(text).ok()
    }

    /// The options as text, trimmed, when they are text (PTX entries' ptxas options).
    pub fn options_text(&self) -> Option<&str> {
        let text = std::str::from_utf8(self.options?).ok()?;
        let printable = text
            .chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace());
        printable.then(|| text.trim())
    }
}

/// What an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    Ptx,
    /// A CUBIN (ELF) of SASS.
    Elf,
    /// Any other kind, by number (8: LTO IR).
    Other(u16),
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ptx => f.write_str("PTX"),
            Self::Elf => f.write_str("SASS"),
            Self::Other(n) => write!(f, "kind {n}"),
        }
    }
}

/// Which devices an entry's architecture number covers beyond the number itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchFlavor {
    /// `sm_90` / `compute_90`: SASS runs on the same major version at this minor or later;
    /// PTX is compiled for this architecture or any later one.
    Baseline,
    /// `sm_100f` / `compute_100f`: the same major version at this minor or later, PTX too.
    Family,
    /// `sm_90a` / `compute_90a`: this exact architecture only.
    Specific,
}

impl ArchFlavor {
    fn from_flags(flags: u64) -> Self {
        if flags & FLAG_ARCH_SPECIFIC != 0 {
            Self::Specific
        } else if flags & FLAG_ARCH_FAMILY != 0 {
            Self::Family
        } else {
            Self::Baseline
        }
    }

    /// Whether code of `kind` built for `arch` with this flavor loads on a device `sm`.
    fn covers(self, kind: EntryKind, arch: u32, sm: u32) -> bool {
        let same_major = arch / 10 == sm / 10 && arch <= sm;
        match (self, kind) {
            (Self::Specific, _) => arch == sm,
            (Self::Baseline, EntryKind::Ptx) => arch <= sm,
            (Self::Baseline | Self::Family, _) => same_major,
        }
    }
}

/// How an entry's payload was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    None,
    /// One raw LZ4 block (flag 0x2000; `-compress-mode=speed`).
    Lz4,
    /// One zstd frame (flag 0x8000; nvcc 13.0's default).
    Zstd,
}

impl Compression {
    fn from_flags(flags: u64) -> Option<Self> {
        match (flags & FLAG_LZ4 != 0, flags & FLAG_ZSTD != 0) {
            (false, false) => Some(Self::None),
            (true, false) => Some(Self::Lz4),
            (false, true) => Some(Self::Zstd),
            (true, true) => None,
        }
    }

    /// The most bytes `stored` bytes can decompress to in this format: an LZ4 sequence yields
    /// at most 255 bytes per input byte; a 4-byte zstd block (3-byte header, 1 byte to repeat)
    /// yields at most 128 KiB.
    fn max_output(self, stored: usize) -> u64 {
        let stored = stored as u64;
        match self {
            Self::None => stored,
            Self::Lz4 => stored.saturating_mul(255).saturating_add(64),
            Self::Zstd => stored.saturating_mul(32 * 1024).saturating_add(128 * 1024),
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "uncompressed",
            Self::Lz4 => "LZ4",
            Self::Zstd => "zstd",
        })
    }
}

/// Which string of an entry header a [`ImageError::StringOutOfHeader`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderString {
    Identifier,
    OptionsRecord,
    Options,
}

impl fmt::Display for HeaderString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Identifier => "identifier",
            Self::OptionsRecord => "options record",
            Self::Options => "options text",
        })
    }
}

/// Lists the entries of one fatbin container, or of several back to back (a `.nv_fatbin`
/// section), decompressing PTX and SASS payloads.
///
/// # Errors
///
/// Every [`ImageError`] but the wrapper's: the bytes are not a fatbin, a size or offset points
/// outside the container, a payload does not decompress to its declared size, or PTX is not
/// UTF-8. A damaged fatbin is rejected whole, as the driver rejects it.
pub fn parse_fatbin(bytes: &[u8]) -> Result<Fatbin<'_>, ImageError> {
    parse(bytes, Decode::All)
}

/// The PTX the driver would JIT for a device of compute capability `sm` from a fatbin's first
/// container ([`ptx_for_arch`]), decompressing that entry alone: a library's fatbin (cuBLAS's
/// holds hundreds of megabytes of machine code) is read for its headers only.
///
/// # Errors
/// As [`parse_fatbin`], for the headers and the chosen entry.
pub fn ptx_for_arch_in(bytes: &[u8], sm: u32) -> Result<Option<String>, ImageError> {
    let headers = parse(bytes, Decode::None)?;
    let Some(first) = headers.containers.first() else {
        return Ok(None);
    };
    let chosen = first
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ptx && e.flavor.covers(e.kind, e.arch, sm))
        .max_by_key(|e| (e.arch, e.flavor));
    let Some(chosen) = chosen else {
        return Ok(None);
    };
    let end = first.offset + container_header(bytes, first.offset)?.total_len;
    let (entry, _) = entry(&bytes[..end], chosen.offset, Decode::All)?;
    Ok(entry.ptx().map(str::to_string))
}

/// Which payloads a parse decompresses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decode {
    All,
    /// None: compressed payloads stay as stored (headers only).
    None,
}

fn parse(bytes: &[u8], decode: Decode) -> Result<Fatbin<'_>, ImageError> {
    if bytes.is_empty() {
        return Err(ImageError::Empty);
    }
    if u32_at(bytes, 0) != Some(FATBIN_MAGIC) {
        return Err(ImageError::NotFatbin {
            found: hex(bytes),
            hint: not_fatbin_hint(bytes),
        });
    }
    let mut containers = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = container_header(bytes, at)?;
        let end = at
            .checked_add(header.total_len)
            .filter(|&end| end <= bytes.len())
            .ok_or(ImageError::ContainerTruncated {
                offset: at,
                declared: header.total_len as u64,
                available: bytes.len() - at,
            })?;
        containers.push(Container {
            offset: at,
            entries: entries(bytes, at + header.header_len, end, decode)?,
        });
        // Zero bytes between (or after) containers are the linker's alignment padding, and
        // never start a container (the magic's first byte is 0x50).
        at = end;
        while bytes.get(at) == Some(&0) {
            at += 1;
        }
    }
    Ok(Fatbin { containers })
}

/// The PTX the driver would JIT for a device of compute capability `sm` (90 for 9.0) from the
/// fatbin's first container (the module the driver loads): the newest PTX entry the device
/// can compile, `None` if there is none. Among entries of one number, the most specific
/// flavor wins (`compute_90a` over `compute_90`); the driver documents no order of its own.
pub fn ptx_for_arch<'f>(fatbin: &'f Fatbin<'_>, sm: u32) -> Option<&'f str> {
    fatbin.containers.first()?.ptx_for_arch(sm)
}

/// Whether the fatbin's first container holds SASS a device of compute capability `sm` can
/// run (built for the same major version at this minor or earlier; `sm_90a` only for 9.0).
pub fn has_sass_for(fatbin: &Fatbin<'_>, sm: u32) -> bool {
    fatbin
        .containers
        .first()
        .is_some_and(|c| c.has_sass_for(sm))
}

impl Container<'_> {
    /// [`ptx_for_arch`] for this container.
    pub fn ptx_for_arch(&self, sm: u32) -> Option<&str> {
        self.entries
            .iter()
            .filter(|e| e.kind == EntryKind::Ptx && e.flavor.covers(e.kind, e.arch, sm))
            .max_by_key(|e| (e.arch, e.flavor))
            .and_then(FatbinEntry::ptx)
    }

    /// [`has_sass_for`] for this container.
    pub fn has_sass_for(&self, sm: u32) -> bool {
        self.entries
            .iter()
            .any(|e| e.kind == EntryKind::Elf && e.flavor.covers(e.kind, e.arch, sm))
    }
}

/// Which entry an error is about: where its header starts, its kind and architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryAt {
    pub offset: usize,
    pub kind: EntryKind,
    pub arch: u32,
}

impl fmt::Display for EntryAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (offset, kind, arch) = (self.offset, self.kind, self.arch);
        write!(f, "the fatbin entry at byte {offset} ({kind}, arch {arch})")
    }
}

/// Why an image could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("the fatbin is empty (0 bytes)")]
    Empty,
    #[error("this is not a fatbin: it starts with `{found}`, not the magic `50 ed 55 ba`{hint}")]
    NotFatbin { found: String, hint: &'static str },
    #[error(
        "the fatbin container at byte {offset} has version {version}; cudacheck reads version 1 \
         (nvcc 13.0 writes it), and a later layout may differ"
    )]
    UnsupportedVersion { offset: usize, version: u16 },
    #[error(
        "the fatbin container at byte {offset} declares a {size}-byte header; a container \
         header is at least {FATBIN_HEADER_LEN} bytes"
    )]
    BadContainerHeader { offset: usize, size: u16 },
    #[error(
        "the fatbin container at byte {offset} declares {declared} bytes, but only {available} \
         follow: the image is truncated, or its header is damaged"
    )]
    ContainerTruncated {
        offset: usize,
        declared: u64,
        available: usize,
    },
    #[error(
        "byte {offset} of the fatbin follows a container but starts neither another one (magic \
         `50 ed 55 ba`) nor zero padding: it is `{found}`"
    )]
    NotAContainer { offset: usize, found: String },
    #[error(
        "the fatbin entry at byte {offset} declares a {size}-byte header, but {available} bytes \
         are left in its container and a header is at least {ENTRY_HEADER_MIN}"
    )]
    BadEntryHeader {
        offset: usize,
        size: u64,
        available: usize,
    },
    #[error(
        "{entry} declares a {size}-byte payload, but {available} bytes are left in its container"
    )]
    PayloadOutOfBounds {
        entry: EntryAt,
        size: u64,
        available: usize,
    },
    #[error("{entry} places its {field} at bytes {offset}..{offset}+{len} of a {header_len}-byte header")]
    StringOutOfHeader {
        entry: EntryAt,
        field: HeaderString,
        offset: u32,
        len: u64,
        header_len: usize,
    },
    #[error(
        "{entry} declares compressed sizes, but its flags {flags:#x} name no compression \
         cudacheck knows (LZ4 0x2000, zstd 0x8000) or both; a newer nvcc may use another"
    )]
    UnknownCompression { entry: EntryAt, flags: u64 },
    #[error("{entry} is {compression}-compressed to {compressed} bytes, but stores {stored}")]
    BadCompressedSize {
        entry: EntryAt,
        compression: Compression,
        compressed: u32,
        stored: u64,
    },
    #[error(
        "{entry} declares {declared} bytes once decompressed, but {compressed} bytes of \
         {compression} yield at most {max}"
    )]
    ImpossibleSize {
        entry: EntryAt,
        compression: Compression,
        compressed: usize,
        declared: u64,
        max: u64,
    },
    #[error("{entry} does not decompress as {compression}: {source}")]
    Decompress {
        entry: EntryAt,
        compression: Compression,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "{entry} declares {declared} bytes once decompressed, but its {compression} data \
         yields {actual}"
    )]
    SizeMismatch {
        entry: EntryAt,
        compression: Compression,
        declared: u64,
        /// What decompression gave, or `declared + 1` when it gave more.
        actual: u64,
    },
    #[error(
        "{entry} declares {compressed} bytes of zstd data, but its zstd frame ends {left} bytes \
         before that"
    )]
    TrailingCompressedData {
        entry: EntryAt,
        compressed: usize,
        left: usize,
    },
    #[error("the PTX of {entry} is not UTF-8 text (bad byte at {valid_up_to})")]
    PtxNotText { entry: EntryAt, valid_up_to: usize },
    #[error("this is not a fatbin wrapper: it starts with `{found}`, not the magic `b1 43 62 46`")]
    NotWrapper { found: String },
    #[error("a fatbin wrapper is {WRAPPER_LEN} bytes on a 64-bit host; only {len} were given")]
    WrapperTruncated { len: usize },
    #[error("the fatbin wrapper has version {version}; nvcc writes 1, or 2 for pre-linked code")]
    UnknownWrapperVersion { version: u32 },
    #[error("the fatbin wrapper's data pointer is null: it points to no fatbin")]
    NullWrapperData,
}

struct ContainerHeader {
    header_len: usize,
    total_len: usize,
}

fn container_header(bytes: &[u8], at: usize) -> Result<ContainerHeader, ImageError> {
    let available = bytes.len().saturating_sub(at);
    let truncated = || ImageError::ContainerTruncated {
        offset: at,
        declared: FATBIN_HEADER_LEN as u64,
        available,
    };
    if u32_at(bytes, at) != Some(FATBIN_MAGIC) {
        return Err(ImageError::NotAContainer {
            offset: at,
            found: hex(bytes.get(at..).unwrap_or_default()),
        });
    }
    let version = u16_at(bytes, at + 4).ok_or_else(truncated)?;
    let size = u16_at(bytes, at + 6).ok_or_else(truncated)?;
    let entries_len = u64_at(bytes, at + 8).ok_or_else(truncated)?;
    if version != 1 {
        return Err(ImageError::UnsupportedVersion {
            offset: at,
            version,
        });
    }
    if usize::from(size) < FATBIN_HEADER_LEN {
        return Err(ImageError::BadContainerHeader { offset: at, size });
    }
    let total_len = usize::try_from(entries_len)
        .ok()
        .and_then(|n| n.checked_add(usize::from(size)))
        .ok_or(ImageError::ContainerTruncated {
            offset: at,
            declared: entries_len.saturating_add(u64::from(size)),
            available,
        })?;
    Ok(ContainerHeader {
        header_len: usize::from(size),
        total_len,
    })
}

/// The entries filling `bytes[start..end]` exactly.
fn entries(
    bytes: &[u8],
    start: usize,
    end: usize,
    decode: Decode,
) -> Result<Vec<FatbinEntry<'_>>, ImageError> {
    let mut out = Vec::new();
    let mut at = start;
    // Each entry takes at least ENTRY_HEADER_MIN bytes, so this ends.
    while at < end {
        let (entry, next) = entry(&bytes[..end], at, decode)?;
        out.push(entry);
        at = next;
    }
    Ok(out)
}

/// The entry at `at` in `bytes` (which ends where its container does), and where it ends.
fn entry(bytes: &[u8], at: usize, decode: Decode) -> Result<(FatbinEntry<'_>, usize), ImageError> {
    let available = bytes.len() - at;
    let header_len = u32_at(bytes, at + 4).map_or(0, u64::from);
    let bad_header = ImageError::BadEntryHeader {
        offset: at,
        size: header_len,
        available,
    };
    if available < ENTRY_HEADER_MIN || header_len < ENTRY_HEADER_MIN as u64 {
        return Err(bad_header);
    }
    let header = match usize::try_from(header_len) {
        Ok(len) if len <= available => &bytes[at..at + len],
        _ => return Err(bad_header),
    };
    // The first 64 bytes are there: these reads cannot fail.
    let field32 = |offset| u32_at(header, offset).unwrap_or_default();
    let field64 = |offset| u64_at(header, offset).unwrap_or_default();
    let kind = match u16_at(header, 0).unwrap_or_default() {
        1 => EntryKind::Ptx,
        2 => EntryKind::Elf,
        n => EntryKind::Other(n),
    };
    let here = EntryAt {
        offset: at,
        kind,
        arch: field32(0x1c),
    };
    let flags = field64(0x28);
    let (compressed_len, decompressed_len) = (field32(0x10), field64(0x38));

    let stored_len = field64(0x08);
    let stored = usize::try_from(stored_len)
        .ok()
        .and_then(|n| bytes.get(at + header.len()..)?.get(..n))
        .ok_or(ImageError::PayloadOutOfBounds {
            entry: here,
            size: stored_len,
            available: available - header.len(),
        })?;
    let next = at + header.len() + stored.len();

    let identifier = string(header, here, HeaderString::Identifier, 0x20)?
        .map(|s| String::from_utf8_lossy(s.split(|&b| b == 0).next().unwrap_or_default()));
    let options = match field32(0x14) {
        0 => None,
        record => string(header, here, HeaderString::Options, record)?,
    };

    let unknown = ImageError::UnknownCompression { entry: here, flags };
    let compression = Compression::from_flags(flags).ok_or(unknown)?;
    let payload = match (kind, compression) {
        (EntryKind::Other(_), _) => Cow::Borrowed(stored),
        // A new algorithm's flag would leave the sizes set: refuse rather than read its data.
        (_, Compression::None) if compressed_len != 0 || decompressed_len != 0 => {
            return Err(ImageError::UnknownCompression { entry: here, flags })
        }
        (_, Compression::None) => Cow::Borrowed(stored),
        (_, _) if decode == Decode::None => Cow::Borrowed(stored),
        (_, compression) => {
            let data = usize::try_from(compressed_len)
                .ok()
                .filter(|&n| n != 0)
                .and_then(|n| stored.get(..n))
                .ok_or(ImageError::BadCompressedSize {
                    entry: here,
                    compression,
                    compressed: compressed_len,
                    stored: stored_len,
                })?;
            Cow::Owned(decompress(data, decompressed_len, here, compression)?)
        }
    };
    let decoded = compression == Compression::None || decode == Decode::All;
    if kind == EntryKind::Ptx && decoded {
        let text = payload.split(|&b| b == 0).next().unwrap_or_default();
        if let Err(e) = std::str::from_utf8(text) {
            return Err(ImageError::PtxNotText {
                entry: here,
                valid_up_to: e.valid_up_to(),
            });
        }
    }
    let entry = FatbinEntry {
        offset: at,
        kind,
        arch: here.arch,
        flavor: ArchFlavor::from_flags(flags),
        compression,
        identifier,
        options,
        payload,
    };
    Ok((entry, next))
}

/// The string that the (offset, length) pair at `pair_at` of an entry header places inside
/// that header; `None` when the length is 0. The options field first points to such a pair.
fn string(
    header: &[u8],
    entry: EntryAt,
    field: HeaderString,
    pair_at: u32,
) -> Result<Option<&[u8]>, ImageError> {
    let outside = |field, offset, len| ImageError::StringOutOfHeader {
        entry,
        field,
        offset,
        len,
        header_len: header.len(),
    };
    let at = pair_at as usize;
    let (Some(offset), Some(len)) = (u32_at(header, at), u32_at(header, at.saturating_add(4)))
    else {
        return Err(outside(HeaderString::OptionsRecord, pair_at, 8));
    };
    if len == 0 {
        return Ok(None);
    }
    header
        .get(offset as usize..)
        .and_then(|rest| rest.get(..len as usize))
        .map(Some)
        .ok_or_else(|| outside(field, offset, u64::from(len)))
}

/// Decompresses `data` to exactly `declared` bytes. The declared size is checked against what
/// the format can yield first, so a damaged header cannot make this allocate more than a
/// fixed multiple of the input.
fn decompress(
    data: &[u8],
    declared: u64,
    entry: EntryAt,
    compression: Compression,
) -> Result<Vec<u8>, ImageError> {
    let max = compression.max_output(data.len());
    let declared_len = usize::try_from(declared)
        .ok()
        .filter(|_| declared <= max)
        .ok_or(ImageError::ImpossibleSize {
            entry,
            compression,
            compressed: data.len(),
            declared,
            max,
        })?;
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| ImageError::Decompress {
        entry,
        compression,
        source,
    };
    let out = match compression {
        Compression::None => data.to_vec(),
        Compression::Lz4 => {
            let mut out = vec![0; declared_len];
            let n = lz4_flex::block::decompress_into(data, &mut out)
                .map_err(|e| failed(Box::new(e)))?;
            out.truncate(n);
            out
        }
        Compression::Zstd => {
            let mut decoder =
                ruzstd::decoding::StreamingDecoder::new(data).map_err(|e| failed(Box::new(e)))?;
            // One byte more than declared tells "too much" from "exactly right" without
            // decoding the rest; the capacity grows with what the data really yields.
            let mut out = Vec::with_capacity(declared_len.min(data.len().saturating_mul(16)));
            (&mut decoder)
                .take(declared.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| failed(Box::new(e)))?;
            // nvcc's compressed size is the frame's exact length: bytes left over mean the size
            // field is damaged (or the entry holds more than the one frame nvcc writes).
            let left = decoder.get_ref().len();
            if left != 0 {
                return Err(ImageError::TrailingCompressedData {
                    entry,
                    compressed: data.len(),
                    left,
                });
            }
            out
        }
    };
    if out.len() as u64 != declared {
        return Err(ImageError::SizeMismatch {
            entry,
            compression,
            declared,
            actual: out.len() as u64,
        });
    }
    Ok(out)
}

/// What non-fatbin bytes look like, to tell a person what they passed.
fn not_fatbin_hint(bytes: &[u8]) -> &'static str {
    match classify(bytes) {
        Some(ImageKind::Cubin) => "; this is a CUBIN (ELF), which holds no PTX",
        Some(ImageKind::Ptx) => "; this is PTX text, which needs no unpacking",
        Some(ImageKind::FatbinWrapper) => {
            "; this is a fatbin wrapper: read the fatbin its data pointer gives (parse_wrapper)"
        }
        Some(ImageKind::Fatbin) | None => "",
    }
}

/// The first bytes of `bytes` in hex, for messages.
fn hex(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    shown.join(" ")
}

/// Reads a little-endian integer of `N` bytes at `at`, if it lies inside `b`.
fn le<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    le::<2>(b, at).map(u16::from_le_bytes)
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    le::<4>(b, at).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    le::<8>(b, at).map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_ptx_text() {
        let ptx = "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0\n.target sm_90\n";
        assert_eq!(classify(ptx.as_bytes()), Some(ImageKind::Ptx));
        assert_eq!(
            classify(b"  /* block */ .version 8.4"),
            Some(ImageKind::Ptx)
        );
        assert_eq!(classify(b"\n\n.version 9.0\0garbage"), Some(ImageKind::Ptx));
        // A prefix that ends inside the leading comments is as much PTX as it can tell.
        assert_eq!(classify(&ptx.as_bytes()[..10]), Some(ImageKind::Ptx));
        assert_eq!(classify(b".vers"), Some(ImageKind::Ptx));
    }

    #[test]
    fn classify_rejects_other_text() {
        assert_eq!(classify(b""), None);
        assert_eq!(classify(b"   \n"), None);
        assert_eq!(classify(b"int main() { return 0; }"), None);
        assert_eq!(classify(b"// a comment\n.target sm_90"), None);
        assert_eq!(classify(b"\0.version 9.0"), None);
    }

    /// A wrapper as nvcc's host code lays it out: `{ int magic; int version; const unsigned
    /// long long* data; void* filename_or_fatbins; }`.
    fn wrapper(magic: u32, version: u32, data: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&magic.to_le_bytes());
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&data.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b
    }

    #[test]
    fn classify_and_read_a_wrapper() {
        let bytes = wrapper(0x4662_43B1, 1, 0x7f00_1234_5000);
        assert_eq!(bytes.len(), WRAPPER_LEN);
        assert_eq!(classify(&bytes), Some(ImageKind::FatbinWrapper));
        assert_eq!(
            classify(&bytes[..MAGIC_LEN]),
            Some(ImageKind::FatbinWrapper)
        );
        let w = parse_wrapper(&bytes).unwrap();
        assert_eq!(
            (w.version, w.data, w.filename_or_fatbins),
            (1, 0x7f00_1234_5000, 0)
        );
    }

    #[test]
    fn wrapper_errors() {
        let good = wrapper(0x4662_43B1, 2, 0x1000);
        assert!(parse_wrapper(&good).is_ok());
        let e = parse_wrapper(&good[..20]).unwrap_err();
        assert!(
            matches!(e, ImageError::WrapperTruncated { len: 20 }),
            "{e:?}"
        );
        let e = parse_wrapper(&wrapper(0x4662_43B1, 3, 0x1000)).unwrap_err();
        assert!(matches!(
            e,
            ImageError::UnknownWrapperVersion { version: 3 }
        ));
        let e = parse_wrapper(&wrapper(0x4662_43B1, 1, 0)).unwrap_err();
        assert!(e.to_string().contains("null"), "{e}");
        let e = parse_wrapper(&wrapper(0xBA55_ED50, 1, 0x1000)).unwrap_err();
        assert!(e.to_string().contains("50 ed 55 ba"), "{e}");
    }

    /// A one-entry container with an LZ4 PTX payload whose header declares `declared` bytes.
    fn lz4_fatbin(text: &[u8], declared: u64) -> Vec<u8> {
        let data = lz4_flex::block::compress(text);
        let stored = data.len().div_ceil(8) * 8;
        let mut e = vec![0u8; ENTRY_HEADER_MIN];
        e[0..2].copy_from_slice(&1u16.to_le_bytes());
        e[4..8].copy_from_slice(&(ENTRY_HEADER_MIN as u32).to_le_bytes());
        e[8..16].copy_from_slice(&(stored as u64).to_le_bytes());
        e[0x10..0x14].copy_from_slice(&(data.len() as u32).to_le_bytes());
        e[0x1c..0x20].copy_from_slice(&90u32.to_le_bytes());
        e[0x28..0x30].copy_from_slice(&(FLAG_LZ4 | 0x11).to_le_bytes());
        e[0x38..0x40].copy_from_slice(&declared.to_le_bytes());
        e.extend_from_slice(&data);
        e.resize(ENTRY_HEADER_MIN + stored, 0);
        let mut b = Vec::new();
        b.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&(e.len() as u64).to_le_bytes());
        b.extend_from_slice(&e);
        b
    }

    const TEXT: &[u8] = b".version 9.0\n.target sm_90\n.address_size 64\n\n\n\n\n\n\n\n\n\n";

    #[test]
    fn lz4_round_trip() {
        let bytes = lz4_fatbin(TEXT, TEXT.len() as u64);
        assert_eq!(fatbin_len(&bytes), Some(bytes.len()));
        let fatbin = parse_fatbin(&bytes).unwrap();
        let entry = &fatbin.containers[0].entries[0];
        assert_eq!(entry.compression, Compression::Lz4);
        assert_eq!(entry.ptx(), Some(std::str::from_utf8(TEXT).unwrap()));
    }

    #[test]
    fn declared_size_must_match_the_data() {
        let e = parse_fatbin(&lz4_fatbin(TEXT, TEXT.len() as u64 - 1)).unwrap_err();
        assert!(matches!(e, ImageError::Decompress { .. }), "{e:?}");
        let e = parse_fatbin(&lz4_fatbin(TEXT, TEXT.len() as u64 + 1)).unwrap_err();
        assert!(matches!(e, ImageError::SizeMismatch { .. }), "{e:?}");
        assert!(e.to_string().contains("LZ4"), "{e}");
    }

    #[test]
    fn a_huge_declared_size_is_refused_before_allocating() {
        let e = parse_fatbin(&lz4_fatbin(TEXT, 1 << 40)).unwrap_err();
        assert!(matches!(e, ImageError::ImpossibleSize { .. }), "{e:?}");
        assert!(e.to_string().contains("yield at most"), "{e}");
    }
}
