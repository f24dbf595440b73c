//! Reading a kernel's resources out of a CUBIN, with no GPU and no CUDA library.
//!
//! [`read_cubin`] parses the ELF file NVRTC or ptxas wrote and returns, for each kernel, the
//! [`KernelResources`] the launch validator needs: registers, static shared memory, stack
//! frame, parameter layout, launch bounds, required block and cluster sizes. The figures
//! match what `cuFuncGetAttribute` reports for the loaded module (checked on an H100, see
//! `tests/data/driver-attrs.json`).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bytes = std::fs::read("saxpy.cubin")?;
//! let info = cudacheck_core::cubin::read_cubin(&bytes)?;
//! for k in &info.kernels {
//!     println!("{}: {} registers, {} bytes shared", k.symbol, k.registers, k.static_shared_bytes);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Spill traffic is the one figure a CUBIN does not record; [`parse_ptxas_info`] reads it
//! from NVRTC's `-Xptxas -v` log, and [`PtxasKernelInfo::merge_spills_into`] adds it.

mod elf;
mod nvinfo;
mod ptxas;

use std::collections::{HashMap, HashSet};

use thiserror::Error;

use crate::arch::Arch;
use crate::resources::KernelResources;
use elf::{Elf, Symbol};

pub use nvinfo::NvInfoProblem;
pub use ptxas::{parse_ptxas_info, ptxas_static_shared, PtxasKernelInfo, PtxasLogError};

#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzz;

/// What a CUBIN says about its kernels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CubinInfo {
    /// The architecture the machine code is for, from the ELF header's `e_flags` (`None` when
    /// the header records none). Not checked against cudacheck's supported list.
    pub arch: Option<Arch>,
    /// Every kernel (`__global__` function), in symbol-table order.
    pub kernels: Vec<KernelResources>,
}

impl CubinInfo {
    /// The kernel whose symbol (mangled name for C++ kernels) is `symbol`.
    pub fn kernel(&self, symbol: &str) -> Option<&KernelResources> {
        self.kernels.iter().find(|k| k.symbol == symbol)
    }
}

/// Why a byte buffer could not be read as a CUBIN.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CubinError {
    #[error("the CUBIN is empty (0 bytes); a CUBIN is an ELF file of at least 64 bytes")]
    Empty,
    #[error(
        "this is not an ELF file: it starts with `{found}`, not `7f 45 4c 46` (\"\\x7fELF\"){hint}"
    )]
    NotElf { found: String, hint: &'static str },
    #[error(
        "this ELF file is {class_name} (EI_CLASS = {class}); CUBINs are always 64-bit \
         ELF (ELFCLASS64 = 2)"
    )]
    WrongClass { class: u8, class_name: &'static str },
    #[error(
        "this ELF file is {order} (EI_DATA = {data}); CUBINs are always little-endian \
         (ELFDATA2LSB = 1)"
    )]
    WrongEndianness { data: u8, order: &'static str },
    #[error(
        "this ELF file is for machine {machine} ({machine_name}), not an NVIDIA GPU \
         (EM_CUDA = 190): it is a host object, not a CUBIN"
    )]
    NotCuda {
        machine: u16,
        machine_name: &'static str,
    },
    #[error(
        "the {what} (offset {offset}, {size} bytes) runs past the end of the file, which is \
         {file_len} bytes: the CUBIN is truncated or corrupt; write it out again"
    )]
    OutOfBounds {
        what: String,
        offset: u64,
        size: u64,
        file_len: usize,
    },
    #[error("the ELF header's {field} is {found}; a CUBIN needs {expected}")]
    BadHeaderField {
        field: &'static str,
        found: u64,
        expected: &'static str,
    },
    #[error("{what} is section #{index}, but the file has only {count} sections (#0 to #{})", count.saturating_sub(1))]
    BadSectionIndex {
        what: String,
        index: u64,
        count: usize,
    },
    #[error("{what}, at offset {offset} of string table `{table}`, is {problem}")]
    BadName {
        what: String,
        table: String,
        offset: u32,
        problem: &'static str,
    },
    #[error(
        "table `{section}` is {size} bytes of {entry_size}-byte entries; it must be a whole \
         number of {expected_entry_size}-byte entries"
    )]
    BadTable {
        section: String,
        size: u64,
        entry_size: u64,
        expected_entry_size: u64,
    },
    #[error(
        "sections `{first}` and `{second}` share bytes {offset} to {end} of the file; ELF \
         sections never overlap, so the CUBIN is corrupt"
    )]
    OverlappingSections {
        first: String,
        second: String,
        offset: u64,
        end: u64,
    },
    #[error(
        "the names read from string table `{table}` add up to more than {limit} bytes, \
         {factor} times the size of the whole file: many entries name the same long string, \
         which no compiler writes; the CUBIN is corrupt"
    )]
    NamesTooLong {
        table: String,
        limit: usize,
        factor: usize,
    },
    #[error("section `{section}`: the attribute record at byte {offset} {problem}")]
    BadNvInfo {
        section: String,
        offset: usize,
        #[source]
        problem: NvInfoProblem,
    },
}

/// The shared memory the driver reserves at the start of each block's window on sm_90 and
/// later. Those CUBINs include it in `.nv.shared.<kernel>`; the static shared size ptxas
/// prints and `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES` returns leaves it out. Measured: a kernel
/// with 1056 bytes of `__shared__` arrays has a 0x820-byte section for sm_90 and sm_100 and a
/// 0x420-byte one for sm_80, and the H100 driver reports 1056. NVRTC 12.9 and later mark it
/// with a `.nv.shared.reserved.0` section; NVRTC 12.4 includes it for sm_90 just the same
/// (0x820 bytes for the same kernel, `params_nvrtc124.sm_90` in cudacheck-core/tests/data) but
/// writes no marker, so sm_90 and later count it as reserved either way. A kernel with no
/// `__shared__` data has no such section under either.
const RESERVED_SHARED_BYTES: u64 = 1024;

/// Reads every kernel's resources from a CUBIN (the ELF image `nvrtcGetCUBIN` returns).
///
/// Registers come from `EIATTR_REGCOUNT` (or, where that is absent, the top byte of the
/// `.text.<kernel>` section's `sh_info`, which older CUBINs use); the stack frame from
/// `EIATTR_FRAME_SIZE`; static shared memory from the `.nv.shared.<kernel>` section size;
/// constant bytes from the module's user constant banks (`.nv.constant3`, what
/// `CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES` reports); the parameter layout from
/// `EIATTR_KPARAM_INFO` and `EIATTR_CBANK_PARAM_SIZE`; launch bounds, `.reqntid`, cluster
/// size and register cap from `EIATTR_MAX_THREADS`, `EIATTR_REQNTID`,
/// `EIATTR_CTA_PER_CLUSTER` and `EIATTR_MAXREG_COUNT`.
///
/// A kernel is listed once: a later function symbol with the same name names the same
/// `.text`, `.nv.info` and `.nv.shared` sections (they are found by name), so it is skipped
/// rather than read again.
///
/// Two fields stay at their defaults because the CUBIN does not hold them:
/// `spill_store_bytes`/`spill_load_bytes` (use [`parse_ptxas_info`]) and
/// `min_blocks_per_sm` (ptxas folds `__launch_bounds__`'s second argument into the register
/// cap, which appears as `max_registers`).
///
/// # Errors
///
/// A [`CubinError`] when the bytes are not a little-endian ELF64 file for `EM_CUDA`, when
/// any header, section or name lies outside the buffer, or when an `.nv.info` record is
/// malformed; also when sections overlap or many entries name one long string, which no
/// compiler writes. Never panics, whatever the input, and its time and memory grow with the
/// input's size, not with the counts and offsets its headers claim.
pub fn read_cubin(bytes: &[u8]) -> Result<CubinInfo, CubinError> {
    let elf = Elf::parse(bytes)?;
    let sm = elf.sm_number();
    let arch = (sm != 0).then(|| Arch::new(sm / 10, sm % 10));
    let symbols = elf.symbols()?;

    let decode_records = |name: &str| -> Result<Vec<nvinfo::Record<'_>>, CubinError> {
        match elf.section(name) {
            Some(s) => {
                nvinfo::records(elf.data(s)).map_err(|(offset, problem)| CubinError::BadNvInfo {
                    section: name.to_string(),
                    offset,
                    problem,
                })
            }
            None => Ok(Vec::new()),
        }
    };
    let nv_info_error = |section: &str| {
        let section = section.to_string();
        move |(offset, problem)| CubinError::BadNvInfo {
            section,
            offset,
            problem,
        }
    };
    let global =
        nvinfo::decode_global(&decode_records(".nv.info")?).map_err(nv_info_error(".nv.info"))?;

    let reserved_shared = if sm >= 90 || elf.section(".nv.shared.reserved.0").is_some() {
        RESERVED_SHARED_BYTES
    } else {
        0
    };
    let const_bytes = module_constant_bytes(&elf);

    let mut kernels = Vec::new();
    // Without this, a file repeating one 24-byte symbol would copy its kernel's parameter
    // records once per copy: memory quadratic in the file's size.
    let mut seen = HashSet::new();
    for (index, sym) in symbols.iter().enumerate() {
        let Some(text) = kernel_text(&elf, sym) else {
            continue;
        };
        if !seen.insert(sym.name) {
            continue;
        }
        let info_name = format!(".nv.info.{}", sym.name);
        let has_info = elf.section(&info_name).is_some();
        if !has_info && sym.other & Symbol::STO_CUDA_ENTRY == 0 {
            continue; // a device function compiled separately (-rdc), not a kernel
        }
        let k = nvinfo::decode_kernel(&decode_records(&info_name)?)
            .map_err(nv_info_error(&info_name))?;
        let sym_index = u32::try_from(index).ok();
        let lookup = |m: &HashMap<u32, u32>| sym_index.and_then(|i| m.get(&i).copied());
        let shared = elf
            .section(&format!(".nv.shared.{}", sym.name))
            .map_or(0, |s| s.size.saturating_sub(reserved_shared));
        let param_bytes = k.param_bytes.or(k.cbank_param_bytes).unwrap_or_else(|| {
            k.params
                .iter()
                .map(|p| p.offset.saturating_add(p.size))
                .max()
                .unwrap_or(0)
        });
        kernels.push(KernelResources {
            symbol: sym.name.to_string(),
            registers: lookup(&global.registers).unwrap_or(text.info >> 24),
            static_shared_bytes: u32::try_from(shared).unwrap_or(u32::MAX),
            local_bytes: lookup(&global.frame_bytes).unwrap_or(0),
            spill_store_bytes: 0,
            spill_load_bytes: 0,
            const_bytes,
            param_bytes,
            params: k.params,
            max_threads_per_block: k.max_threads.and_then(|d| u32::try_from(d.volume()).ok()),
            min_blocks_per_sm: None,
            required_block: k.reqntid,
            max_block: k.max_threads,
            cluster_dims: k.cluster,
            max_registers: k.max_registers,
        });
    }
    Ok(CubinInfo { arch, kernels })
}

/// The `.text.<name>` section of a function symbol, if `sym` is one that lives in its own.
fn kernel_text<'e, 'a>(elf: &'e Elf<'a>, sym: &Symbol<'a>) -> Option<&'e elf::Section<'a>> {
    if !sym.is_function() || sym.name.is_empty() {
        return None;
    }
    let text = elf.sections.get(usize::from(sym.shndx))?;
    (text.name.strip_prefix(".text.") == Some(sym.name)).then_some(text)
}

/// The bytes of the module's user `__constant__` banks: module-level `.nv.constantN`
/// sections (the per-kernel `.nv.constant0.<kernel>` ones hold parameters and driver data).
fn module_constant_bytes(elf: &Elf<'_>) -> u32 {
    let total: u64 = elf
        .sections
        .iter()
        .filter(|s| {
            s.name
                .strip_prefix(".nv.constant")
                .is_some_and(|bank| !bank.is_empty() && bank.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|s| s.size)
        .fold(0, u64::saturating_add);
    u32::try_from(total).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod robustness;
#[cfg(test)]
mod tests;
