//! A minimal, bounds-checked reader for the ELF64 little-endian files CUBINs are.
//!
//! Only what the resource reader needs: the header, the section table with names, section
//! contents and the symbol table. Every offset and size read from the file is checked against
//! the buffer before it is used (with checked arithmetic, so a huge value cannot wrap), and
//! every section's extent is checked up front: a damaged file is rejected as a whole, the way
//! the driver's loader rejects it, rather than read partly.

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

/// The NUL-terminated name at `offset` in string table `table`.
fn name_at<'a>(
    table_name: &str,
    table: &'a [u8],
    offset: u32,
    what: impl Fn() -> String,
) -> Result<&'a str, CubinError> {
    let bad = |problem| CubinError::BadName {
        what: what(),
        table: table_name.to_string(),
        offset,
        problem,
    };
    let start = usize::try_from(offset).map_err(|_| bad("past the end of the table"))?;
    let rest = table
        .get(start..)
        .ok_or_else(|| bad("past the end of the table"))?;
    let len = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| bad("not NUL-terminated"))?;
    std::str::from_utf8(&rest[..len]).map_err(|_| bad("not valid UTF-8"))
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

        let mut sections = Vec::with_capacity(count);
        for (index, raw) in raws.iter().enumerate() {
            let name = name_at(".shstrtab", shstr_data, raw.name, || {
                format!("the name of section #{index}")
            })?;
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
        Ok(Self {
            bytes,
            os_abi: bytes[7],
            abi_version: bytes[8],
            flags,
            sections,
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
        self.sections.iter().find(|s| s.name == name)
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
        let strings = self.data(strtab);
        self.data(symtab)
            .chunks_exact(SYMBOL_LEN as usize)
            .enumerate()
            .map(|(index, entry)| {
                // `entry` is exactly 24 bytes, so every field read is inside it.
                let name_off = u32_at(entry, 0).unwrap_or(0);
                let name = name_at(strtab.name, strings, name_off, || {
                    format!("the name of symbol #{index}")
                })?;
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

fn header_oob(bytes: &[u8]) -> CubinError {
    CubinError::OutOfBounds {
        what: "ELF header".to_string(),
        offset: 0,
        size: ELF_HEADER_LEN as u64,
        file_len: bytes.len(),
    }
}
