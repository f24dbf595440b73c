//! A minimal, bounds-checked reader for the ELF64 little-endian files CUBINs are.
//!
//! Only what the resource reader needs: the header, the section table with names, section
//! contents and the symbol table. Every offset and size read from the file is checked against
//! the buffer before it is used (with checked arithmetic, so a huge value cannot wrap), and
//! every section's extent is checked up front: a damaged file is rejected as a whole, the way
//! the driver's loader rejects it, rather than read partly.
//!
//! The work is bounded by the file's size too, whatever its headers say: sections may not
//! overlap (so no byte is decoded twice), names are found through an index rather than by
//! scanning the section table per lookup, and the names read from one string table may add up
//! to at most [`NAME_BYTES_PER_FILE_BYTE`] times the file (ELF lets names share bytes, so a
//! small file could otherwise name thousands of symbols with one long string).

use std::collections::HashMap;

use super::CubinError;

/// `EM_CUDA`, the ELF machine number NVIDIA registered for CUBINs.
const EM_CUDA: u16 = 190;
const ELF_HEADER_LEN: usize = 64;
const SECTION_HEADER_LEN: u64 = 64;
const PROGRAM_HEADER_LEN: u64 = 56;
const SYMBOL_LEN: u64 = 24;
/// `SHT_NOBITS`: the section occupies no file space (`.nv.shared.*`), so its offset and size
/// need not lie inside the file.
pub(crate) const SHT_NOBITS: u32 = 8;
const SHT_SYMTAB: u32 = 2;
/// `ELFOSABI_CUDA`: CUBINs from CUDA 12.8 and later mark themselves with it.
const ELFOSABI_CUDA: u8 = 0x41;
/// How many bytes of names one string table may yield per byte of file. NVRTC 13.0's CUBINs
/// (tests/data) resolve 0.03 to 0.07 bytes of section and symbol names per file byte, since
/// each name is stored once and each section header or symbol costs 64 or 24 bytes; a name
/// that is the tail of another (which ELF allows) at most doubles that. Only names that many
/// entries share, which no compiler writes, come near this bound.
pub(crate) const NAME_BYTES_PER_FILE_BYTE: usize = 4;

/// One section header, with its name resolved.
#[derive(Debug, Clone)]
pub(crate) struct Section<'a> {
    pub name: &'a str,
    pub kind: u32,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub entsize: u64,
}

/// One `Elf64_Sym`, with its name resolved.
#[derive(Debug, Clone)]
pub(crate) struct Symbol<'a> {
    pub name: &'a str,
    /// `st_info`: binding in the high nibble, type in the low one.
    pub info: u8,
    /// `st_other`: NVIDIA keeps `STO_CUDA_ENTRY` (0x10) here for kernels.
    pub other: u8,
    pub shndx: u16,
}

impl Symbol<'_> {
    pub const STT_FUNC: u8 = 2;
    pub const STO_CUDA_ENTRY: u8 = 0x10;

    pub fn is_function(&self) -> bool {
        self.info & 0xf == Self::STT_FUNC
    }
}

/// A parsed CUBIN: header fields and the validated section table.
#[derive(Debug)]
pub(crate) struct Elf<'a> {
    bytes: &'a [u8],
    pub os_abi: u8,
    pub abi_version: u8,
    pub flags: u32,
    pub sections: Vec<Section<'a>>,
    /// Each section name's first section, so that a lookup does not scan the table: with one
    /// lookup per kernel a scan would be quadratic in a file of many small sections.
    by_name: HashMap<&'a str, usize>,
}

/// Reads a little-endian integer of `N` bytes at `at`, if it lies inside `b`.
fn le<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    le::<2>(b, at).map(u16::from_le_bytes)
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    le::<4>(b, at).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    le::<8>(b, at).map(u64::from_le_bytes)
}

/// The slice `[offset, offset + size)` of `bytes`, or `OutOfBounds` naming `what`.
fn range(
    bytes: &[u8],
    offset: u64,
    size: u64,
    what: impl FnOnce() -> String,
) -> Result<&[u8], CubinError> {
    let oob = |what: String| CubinError::OutOfBounds {
        what,
        offset,
        size,
        file_len: bytes.len(),
    };
    let end = offset.checked_add(size);
    match (
        usize::try_from(offset),
        end.and_then(|e| usize::try_from(e).ok()),
    ) {
        (Ok(start), Some(end)) if end <= bytes.len() => Ok(&bytes[start..end]),
        _ => Err(oob(what())),
    }
}

/// One string table and how many more bytes of names may be read from it.
struct Names<'a> {
    section: &'a str,
    table: &'a [u8],
    budget: usize,
    limit: usize,
}

impl<'a> Names<'a> {
    fn new(section: &'a str, table: &'a [u8], file_len: usize) -> Self {
        let limit = file_len.saturating_mul(NAME_BYTES_PER_FILE_BYTE);
        Self {
            section,
            table,
            budget: limit,
            limit,
        }
    }

    /// The NUL-terminated name at `offset`.
    fn at(&mut self, offset: u32, what: impl Fn() -> String) -> Result<&'a str, CubinError> {
        let bad = |problem| CubinError::BadName {
            what: what(),
            table: self.section.to_string(),
            offset,
            problem,
        };
        let start = usize::try_from(offset).map_err(|_| bad("past the end of the table"))?;
        let rest = self
            .table
            .get(start..)
            .ok_or_else(|| bad("past the end of the table"))?;
        // Look for the NUL no further than the budget reaches (a name of exactly the budget
        // still fits), so that many entries naming one long string cost the budget, not the
        // square of the file's size.
        let window = &rest[..rest.len().min(self.budget.saturating_add(1))];
        let len = match window.iter().position(|&b| b == 0) {
            Some(len) => len,
            None if window.len() == rest.len() => return Err(bad("not NUL-terminated")),
            None => {
                return Err(CubinError::NamesTooLong {
                    table: self.section.to_string(),
                    limit: self.limit,
                    factor: NAME_BYTES_PER_FILE_BYTE,
                })
            }
        };
        self.budget -= len;
        std::str::from_utf8(&rest[..len]).map_err(|_| bad("not valid UTF-8"))
    }
}

/// What the first bytes of a non-ELF input look like, to tell a person what they passed.
fn not_elf_hint(bytes: &[u8]) -> &'static str {
    // The fatbinary wrapper NVCC embeds in host objects (fatbinary.h: FATBIN_MAGIC 0xBA55ED50).
    if bytes.starts_with(&[0x50, 0xed, 0x55, 0xba]) {
        return "; this is a fatbinary: extract the CUBIN for one architecture first \
                (cuobjdump -xelf all)";
    }
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]);
    if text.contains(".version") || text.contains(".target") || text.trim_start().starts_with("//")
    {
        return "; this looks like PTX text: compile it to a CUBIN (ptxas, or NVRTC with an \
                sm_XY architecture)";
    }
    ""
}

impl<'a> Elf<'a> {
    /// Parses and validates the header and the section table.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, CubinError> {
        if bytes.is_empty() {
            return Err(CubinError::Empty);
        }
        let magic = &bytes[..bytes.len().min(4)];
        if magic != &b"\x7fELF"[..magic.len()] {
            return Err(CubinError::NotElf {
                found: magic
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                hint: not_elf_hint(bytes),
            });
        }
        if let Some(&class) = bytes.get(4) {
            if class != 2 {
                return Err(CubinError::WrongClass {
                    class,
                    class_name: match class {
                        1 => "32-bit (ELFCLASS32)",
                        _ => "of an unknown class",
                    },
                });
            }
        }
        if let Some(&data) = bytes.get(5) {
            if data != 1 {
                return Err(CubinError::WrongEndianness {
                    data,
                    order: match data {
                        2 => "big-endian (ELFDATA2MSB)",
                        _ => "of an unknown byte order",
                    },
                });
            }
        }
        if bytes.len() < ELF_HEADER_LEN {
            return Err(header_oob(bytes));
        }
        // The header is complete from here on, so these reads cannot fail; `header_oob` keeps
        // that an error rather than a panic should the constants above ever change.
        let h16 = |at| u16_at(bytes, at).ok_or_else(|| header_oob(bytes));
        let h32 = |at| u32_at(bytes, at).ok_or_else(|| header_oob(bytes));
        let h64 = |at| u64_at(bytes, at).ok_or_else(|| header_oob(bytes));
        let machine = h16(18)?;
        if machine != EM_CUDA {
            return Err(CubinError::NotCuda {
                machine,
                machine_name: match machine {
                    3 => "x86",
                    62 => "x86-64",
                    183 => "AArch64",
                    224 => "AMD GPU",
                    _ => "not a GPU",
                },
            });
        }
        let flags = h32(48)?;
        let shoff = h64(40)?;
        let shentsize = h16(58)?;
        let shnum = h16(60)?;
        let shstrndx = h16(62)?;
        if u64::from(shentsize) != SECTION_HEADER_LEN {
            return Err(CubinError::BadHeaderField {
                field: "e_shentsize",
                found: u64::from(shentsize),
                expected: "64, the size of an Elf64_Shdr",
            });
        }
        if shnum == 0 {
            return Err(CubinError::BadHeaderField {
                field: "e_shnum",
                found: 0,
                expected: "at least one section: a CUBIN keeps its kernels in sections",
            });
        }
        check_segments(bytes, h64(32)?, h16(54)?, h16(56)?)?;
        let table = range(bytes, shoff, u64::from(shnum) * SECTION_HEADER_LEN, || {
            format!("section header table ({shnum} entries)")
        })?;
        let count = usize::from(shnum);
        if usize::from(shstrndx) >= count {
            return Err(CubinError::BadSectionIndex {
                what: "e_shstrndx (the section-name table)".to_string(),
                index: u64::from(shstrndx),
                count,
            });
        }

        struct Raw {
            name: u32,
            kind: u32,
            offset: u64,
            size: u64,
            link: u32,
            info: u32,
            entsize: u64,
        }
        let mut raws = Vec::with_capacity(count);
        for entry in table.chunks_exact(SECTION_HEADER_LEN as usize) {
            // `entry` is exactly 64 bytes, so every field read is inside it.
            let f32 = |at| u32_at(entry, at).unwrap_or(0);
            let f64 = |at| u64_at(entry, at).unwrap_or(0);
            raws.push(Raw {
                name: f32(0),
                kind: f32(4),
                offset: f64(24),
                size: f64(32),
                link: f32(40),
                info: f32(44),
                entsize: f64(56),
            });
        }
        let shstr = &raws[usize::from(shstrndx)];
        let shstr_data = range(bytes, shstr.offset, shstr.size, || {
            format!("section-name table (section #{shstrndx})")
        })?;

        let mut names = Names::new(".shstrtab", shstr_data, bytes.len());
        let mut sections = Vec::with_capacity(count);
        for (index, raw) in raws.iter().enumerate() {
            let name = names.at(raw.name, || format!("the name of section #{index}"))?;
            if raw.kind != SHT_NOBITS {
                range(bytes, raw.offset, raw.size, || {
                    format!("contents of section `{name}` (#{index})")
                })?;
            }
            sections.push(Section {
                name,
                kind: raw.kind,
                offset: raw.offset,
                size: raw.size,
                link: raw.link,
                info: raw.info,
                entsize: raw.entsize,
            });
        }
        check_no_overlap(&sections)?;
        let mut by_name = HashMap::with_capacity(sections.len());
        for (index, s) in sections.iter().enumerate() {
            by_name.entry(s.name).or_insert(index);
        }
        Ok(Self {
            bytes,
            os_abi: bytes[7],
            abi_version: bytes[8],
            flags,
            sections,
            by_name,
        })
    }

    /// The SM number (`90` for `sm_90`) the header's `e_flags` records, or 0 when absent.
    ///
    /// CUBINs written by CUDA 12.8 and later (`EI_OSABI` = `ELFOSABI_CUDA`, ABI version 8) keep
    /// it in bits 8..16 (sm_90: `0x09005a04`, sm_120: `0x09007802`, seen in NVRTC 13.0 output);
    /// older ones keep it in the low byte (`EF_CUDA_SM`, e.g. `0x5a055a`).
    pub fn sm_number(&self) -> u32 {
        if self.os_abi == ELFOSABI_CUDA && self.abi_version >= 8 {
            (self.flags >> 8) & 0xff
        } else {
            self.flags & 0xff
        }
    }

    /// The contents of a section: empty for `SHT_NOBITS`. Extents were checked in `parse`.
    pub fn data(&self, section: &Section<'a>) -> &'a [u8] {
        if section.kind == SHT_NOBITS {
            return &[];
        }
        range(self.bytes, section.offset, section.size, String::new).unwrap_or(&[])
    }

    /// The first section called `name`.
    pub fn section(&self, name: &str) -> Option<&Section<'a>> {
        self.sections.get(*self.by_name.get(name)?)
    }

    /// The symbols of the `SHT_SYMTAB` section, in table order (index 0 included, so a
    /// symbol's position is its index). Empty if the file has no symbol table.
    pub fn symbols(&self) -> Result<Vec<Symbol<'a>>, CubinError> {
        let Some(symtab) = self.sections.iter().find(|s| s.kind == SHT_SYMTAB) else {
            return Ok(Vec::new());
        };
        if symtab.entsize != SYMBOL_LEN || symtab.size % SYMBOL_LEN != 0 {
            return Err(CubinError::BadTable {
                section: symtab.name.to_string(),
                size: symtab.size,
                entry_size: symtab.entsize,
                expected_entry_size: SYMBOL_LEN,
            });
        }
        let strtab = usize::try_from(symtab.link)
            .ok()
            .and_then(|i| self.sections.get(i))
            .ok_or_else(|| CubinError::BadSectionIndex {
                what: format!("the string table link of `{}`", symtab.name),
                index: u64::from(symtab.link),
                count: self.sections.len(),
            })?;
        let mut names = Names::new(strtab.name, self.data(strtab), self.bytes.len());
        self.data(symtab)
            .chunks_exact(SYMBOL_LEN as usize)
            .enumerate()
            .map(|(index, entry)| {
                // `entry` is exactly 24 bytes, so every field read is inside it.
                let name_off = u32_at(entry, 0).unwrap_or(0);
                let name = names.at(name_off, || format!("the name of symbol #{index}"))?;
                Ok(Symbol {
                    name,
                    info: entry[4],
                    other: entry[5],
                    shndx: u16_at(entry, 6).unwrap_or(0),
                })
            })
            .collect()
    }
}

/// Checks the program header table and each segment's file extent. CUBINs end with this
/// table, so a file cut short loses it first; the driver loads by segment and would reject it.
fn check_segments(bytes: &[u8], phoff: u64, phentsize: u16, phnum: u16) -> Result<(), CubinError> {
    if phnum == 0 {
        return Ok(());
    }
    if u64::from(phentsize) != PROGRAM_HEADER_LEN {
        return Err(CubinError::BadHeaderField {
            field: "e_phentsize",
            found: u64::from(phentsize),
            expected: "56, the size of an Elf64_Phdr",
        });
    }
    let table = range(bytes, phoff, u64::from(phnum) * PROGRAM_HEADER_LEN, || {
        format!("program header table ({phnum} entries)")
    })?;
    for (index, entry) in table.chunks_exact(PROGRAM_HEADER_LEN as usize).enumerate() {
        // `entry` is exactly 56 bytes, so these reads are inside it.
        let offset = u64_at(entry, 8).unwrap_or(0);
        let size = u64_at(entry, 32).unwrap_or(0);
        range(bytes, offset, size, || {
            format!("contents of segment #{index}")
        })?;
    }
    Ok(())
}

/// Rejects sections that share bytes. The ELF specification forbids it ("Sections in a file
/// may not overlap", System V gABI, "Sections"), and allowing it would let one block of
/// `.nv.info` records be decoded once per section that points at it.
fn check_no_overlap(sections: &[Section<'_>]) -> Result<(), CubinError> {
    // Extents were checked in `parse`, so `offset + size` does not overflow.
    let mut extents: Vec<(u64, u64, &str)> = sections
        .iter()
        .filter(|s| s.kind != SHT_NOBITS && s.size > 0)
        .map(|s| (s.offset, s.offset.saturating_add(s.size), s.name))
        .collect();
    extents.sort_unstable();
    // The section reaching furthest so far: any later one starting before its end overlaps it.
    let mut furthest: Option<(u64, &str)> = None;
    for &(start, end, name) in &extents {
        match furthest {
            Some((reach, holder)) if start < reach => {
                return Err(CubinError::OverlappingSections {
                    first: holder.to_string(),
                    second: name.to_string(),
                    offset: start,
                    end: reach.min(end),
                });
            }
            Some((reach, _)) if reach >= end => {}
            _ => furthest = Some((end, name)),
        }
    }
    Ok(())
}

fn header_oob(bytes: &[u8]) -> CubinError {
    CubinError::OutOfBounds {
        what: "ELF header".to_string(),
        offset: 0,
        size: ELF_HEADER_LEN as u64,
        file_len: bytes.len(),
    }
}
