//! The `.nv.info` attribute records: their framing and the attributes cudacheck decodes.
//!
//! A `.nv.info` section is a sequence of records, each a format byte, an attribute byte
//! (`EIATTR_*`) and a value whose shape the format byte gives:
//!
//! | format | name         | value                                    | record length     |
//! |--------|--------------|------------------------------------------|-------------------|
//! | 0x01   | `EIFMT_NVAL` | none                                     | 2, padded to 4    |
//! | 0x02   | `EIFMT_BVAL` | one byte                                 | 3, padded to 2    |
//! | 0x03   | `EIFMT_HVAL` | little-endian u16                        | 4                 |
//! | 0x04   | `EIFMT_SVAL` | u16 length, then that many payload bytes | 4 + length        |
//!
//! The padding is relative to the start of the section. NVRTC 13.0 output confirms it: the
//! `__block_size__` kernel's section opens `01 5b 00 00 04 37 ...` (an NVAL, two pad bytes,
//! then an SVAL), and `__launch_bounds__` kernels carry `02 4c 01 00 03 5f ...`.
//!
//! The global `.nv.info` section keys its records by symbol index (payload: u32 symbol, u32
//! value); the per-kernel `.nv.info.<name>` sections describe their own kernel.
//! Every attribute code and payload layout below was checked against NVRTC 13.0 output for
//! sm_75, sm_80 and sm_90 and against `cuFuncGetAttribute` on an H100 (tests/data).

use std::collections::HashMap;

use thiserror::Error;

use super::elf::{u16_at, u32_at};
use crate::dim::Dim3;
use crate::resources::ParamSlot;

/// Format bytes.
const EIFMT_NVAL: u8 = 0x01;
const EIFMT_BVAL: u8 = 0x02;
const EIFMT_HVAL: u8 = 0x03;
const EIFMT_SVAL: u8 = 0x04;

/// The attributes cudacheck decodes.
pub(crate) mod eiattr {
    /// SVAL x, y, z u32: `.maxntid` (`__launch_bounds__(N)` gives `(N, 1, 1)`).
    pub const MAX_THREADS: u8 = 0x05;
    /// SVAL: u32 symbol of `.nv.constant0.<kernel>`, u16 offset, u16 size of the parameters.
    pub const PARAM_CBANK: u8 = 0x0a;
    /// SVAL x, y, z u32: `.reqntid` (`__block_size__`).
    pub const REQNTID: u8 = 0x10;
    /// Global SVAL: u32 symbol, u32 bytes of stack frame (what ptxas prints as "stack frame").
    pub const FRAME_SIZE: u8 = 0x11;
    /// Global SVAL: u32 symbol, u32 bytes of stack including callees ("cumulative stack size").
    pub const MIN_STACK_SIZE: u8 = 0x12;
    /// SVAL, 12 bytes per parameter: u32 index, u16 ordinal, u16 offset, u32 flags whose bits
    /// 18..32 are the size in bytes (the low bits hold alignment and constant-bank fields).
    pub const KPARAM_INFO: u8 = 0x17;
    /// HVAL: the parameter buffer's size in bytes.
    pub const CBANK_PARAM_SIZE: u8 = 0x19;
    /// HVAL: the register cap ptxas compiled under (`--maxrregcount`, `__maxnreg__`, or the
    /// cap it derived from `__launch_bounds__`'s min-blocks); 0xff when nothing capped it.
    pub const MAXREG_COUNT: u8 = 0x1b;
    /// Global SVAL: u32 symbol, u32 registers per thread.
    pub const REGCOUNT: u8 = 0x2f;
    /// SVAL u32: the CUDA version the code was compiled for (0x82 = 130 = CUDA 13.0).
    pub const CUDA_API_VERSION: u8 = 0x37;
    /// SVAL x, y, z u32: `__cluster_dims__` (also written as (1, 1, 1) with `__block_size__`).
    pub const CTA_PER_CLUSTER: u8 = 0x3d;
    /// NVAL: the kernel must be launched with a cluster.
    pub const EXPLICIT_CLUSTER: u8 = 0x3e;
}

/// The name of an attribute code, for messages.
pub(crate) fn eiattr_name(code: u8) -> String {
    let name = match code {
        eiattr::MAX_THREADS => "EIATTR_MAX_THREADS",
        eiattr::PARAM_CBANK => "EIATTR_PARAM_CBANK",
        eiattr::REQNTID => "EIATTR_REQNTID",
        eiattr::FRAME_SIZE => "EIATTR_FRAME_SIZE",
        eiattr::MIN_STACK_SIZE => "EIATTR_MIN_STACK_SIZE",
        eiattr::KPARAM_INFO => "EIATTR_KPARAM_INFO",
        eiattr::CBANK_PARAM_SIZE => "EIATTR_CBANK_PARAM_SIZE",
        eiattr::MAXREG_COUNT => "EIATTR_MAXREG_COUNT",
        eiattr::REGCOUNT => "EIATTR_REGCOUNT",
        eiattr::CUDA_API_VERSION => "EIATTR_CUDA_API_VERSION",
        eiattr::CTA_PER_CLUSTER => "EIATTR_CTA_PER_CLUSTER",
        eiattr::EXPLICIT_CLUSTER => "EIATTR_EXPLICIT_CLUSTER",
        _ => return format!("EIATTR {code:#04x}"),
    };
    format!("{name} ({code:#04x})")
}

/// What is wrong with one `.nv.info` record.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NvInfoProblem {
    #[error(
        "has format byte {format:#04x}, which is none of the four known formats \
         (0x01 NVAL, 0x02 BVAL, 0x03 HVAL, 0x04 SVAL)"
    )]
    UnknownFormat { format: u8 },
    #[error("needs {needed} bytes but only {available} remain in the section")]
    Truncated { needed: usize, available: usize },
    #[error(
        "is a {} whose payload is {found} bytes; it needs at least {expected}",
        eiattr_name(*attribute)
    )]
    ShortPayload {
        attribute: u8,
        found: usize,
        expected: usize,
    },
}

/// A record's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    None,
    Byte(u8),
    Half(u16),
    Bytes(&'a [u8]),
}

/// One record, with its byte offset in the section (for error messages).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    pub offset: usize,
    pub attribute: u8,
    pub value: Value<'a>,
}

/// Splits a `.nv.info` section into records. On failure returns the failing record's offset.
pub(crate) fn records(data: &[u8]) -> Result<Vec<Record<'_>>, (usize, NvInfoProblem)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let available = data.len() - at;
        let need = |needed: usize| {
            if available < needed {
                Err((at, NvInfoProblem::Truncated { needed, available }))
            } else {
                Ok(())
            }
        };
        need(2)?;
        let (format, attribute) = (data[at], data[at + 1]);
        let (value, len) = match format {
            EIFMT_NVAL => (Value::None, 2),
            EIFMT_BVAL => {
                need(3)?;
                (Value::Byte(data[at + 2]), 3)
            }
            EIFMT_HVAL => {
                need(4)?;
                (Value::Half(u16_at(data, at + 2).unwrap_or(0)), 4)
            }
            EIFMT_SVAL => {
                need(4)?;
                let size = usize::from(u16_at(data, at + 2).unwrap_or(0));
                need(4 + size)?;
                (Value::Bytes(&data[at + 4..at + 4 + size]), 4 + size)
            }
            _ => return Err((at, NvInfoProblem::UnknownFormat { format })),
        };
        out.push(Record {
            offset: at,
            attribute,
            value,
        });
        at += len;
        // Padding: NVAL records end on a 4-byte boundary, BVAL records on a 2-byte one.
        let align = match format {
            EIFMT_NVAL => 4,
            EIFMT_BVAL => 2,
            _ => 1,
        };
        at = at.next_multiple_of(align).min(data.len());
    }
    Ok(out)
}

/// The payload of an SVAL record, at least `expected` bytes long.
fn payload<'a>(
    r: &Record<'a>,
    expected: usize,
) -> Result<Option<&'a [u8]>, (usize, NvInfoProblem)> {
    match r.value {
        Value::Bytes(b) if b.len() >= expected => Ok(Some(b)),
        Value::Bytes(b) => Err((
            r.offset,
            NvInfoProblem::ShortPayload {
                attribute: r.attribute,
                found: b.len(),
                expected,
            },
        )),
        // A known attribute in an unexpected format: ignore it rather than guess.
        _ => Ok(None),
    }
}

fn dim3(b: &[u8]) -> Dim3 {
    // Callers pass payloads of at least 12 bytes.
    let at = |i| u32_at(b, i).unwrap_or(1);
    Dim3::new(at(0), at(4), at(8))
}

/// The module-wide facts of the global `.nv.info`, by symbol index.
#[derive(Debug, Default)]
pub(crate) struct GlobalInfo {
    pub registers: HashMap<u32, u32>,
    pub frame_bytes: HashMap<u32, u32>,
}

pub(crate) fn decode_global(records: &[Record<'_>]) -> Result<GlobalInfo, (usize, NvInfoProblem)> {
    let mut g = GlobalInfo::default();
    for r in records {
        let map = match r.attribute {
            eiattr::REGCOUNT => &mut g.registers,
            eiattr::FRAME_SIZE => &mut g.frame_bytes,
            _ => continue,
        };
        if let Some(b) = payload(r, 8)? {
            if let (Some(sym), Some(v)) = (u32_at(b, 0), u32_at(b, 4)) {
                map.insert(sym, v);
            }
        }
    }
    Ok(g)
}

/// What one kernel's `.nv.info.<name>` says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct KernelInfo {
    pub params: Vec<ParamSlot>,
    pub param_bytes: Option<u32>,
    pub cbank_param_bytes: Option<u32>,
    pub max_threads: Option<Dim3>,
    pub reqntid: Option<Dim3>,
    pub cluster: Option<Dim3>,
    pub explicit_cluster: bool,
    pub max_registers: Option<u32>,
}

/// `EIATTR_MAXREG_COUNT`'s value when no cap applied (seen on every uncapped kernel).
const MAXREG_UNCAPPED: u16 = 0xff;

pub(crate) fn decode_kernel(records: &[Record<'_>]) -> Result<KernelInfo, (usize, NvInfoProblem)> {
    let mut k = KernelInfo::default();
    for r in records {
        match (r.attribute, r.value) {
            (eiattr::KPARAM_INFO, _) => {
                if let Some(b) = payload(r, 12)? {
                    let flags = u32_at(b, 8).unwrap_or(0);
                    k.params.push(ParamSlot {
                        ordinal: u32::from(u16_at(b, 4).unwrap_or(0)),
                        offset: u32::from(u16_at(b, 6).unwrap_or(0)),
                        size: flags >> 18,
                    });
                }
            }
            (eiattr::CBANK_PARAM_SIZE, Value::Half(v)) => k.param_bytes = Some(u32::from(v)),
            (eiattr::PARAM_CBANK, _) => {
                if let Some(b) = payload(r, 8)? {
                    k.cbank_param_bytes = u16_at(b, 6).map(u32::from);
                }
            }
            (eiattr::MAX_THREADS, _) => k.max_threads = payload(r, 12)?.map(dim3),
            (eiattr::REQNTID, _) => k.reqntid = payload(r, 12)?.map(dim3),
            (eiattr::CTA_PER_CLUSTER, _) => k.cluster = payload(r, 12)?.map(dim3),
            (eiattr::EXPLICIT_CLUSTER, _) => k.explicit_cluster = true,
            (eiattr::MAXREG_COUNT, Value::Half(v)) => {
                k.max_registers = (v != MAXREG_UNCAPPED).then_some(u32::from(v));
            }
            _ => {}
        }
    }
    // ptxas writes the records last parameter first.
    k.params.sort_by_key(|p| p.ordinal);
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_follows_the_padding_rules() {
        // NVAL + 2 pad, SVAL(4), BVAL + 1 pad, HVAL.
        let data = [
            0x01, 0x5b, 0, 0, //
            0x04, 0x37, 4, 0, 0x82, 0, 0, 0, //
            0x02, 0x4c, 0x01, 0, //
            0x03, 0x1b, 0x28, 0,
        ];
        let rs = records(&data).unwrap();
        let got: Vec<_> = rs
            .iter()
            .map(|r| (r.offset, r.attribute, r.value))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0x5b, Value::None),
                (4, 0x37, Value::Bytes(&[0x82, 0, 0, 0])),
                (12, 0x4c, Value::Byte(1)),
                (16, 0x1b, Value::Half(40)),
            ]
        );
    }

    #[test]
    fn truncated_and_unknown_records_are_errors_at_their_offset() {
        let data = [0x03, 0x1b, 0x28, 0, 0x04, 0x17, 12, 0, 1, 2];
        assert_eq!(
            records(&data).unwrap_err(),
            (
                4,
                NvInfoProblem::Truncated {
                    needed: 16,
                    available: 6
                }
            )
        );
        let e = records(&[0x09, 0x17]).unwrap_err();
        assert_eq!(e, (0, NvInfoProblem::UnknownFormat { format: 9 }));
        assert!(e.1.to_string().contains("0x09"), "{}", e.1);
    }

    #[test]
    fn short_known_payload_names_the_attribute() {
        let data = [0x04, 0x17, 4, 0, 0, 0, 0, 0];
        let rs = records(&data).unwrap();
        let (at, p) = decode_kernel(&rs).unwrap_err();
        assert_eq!(at, 0);
        assert_eq!(
            p,
            NvInfoProblem::ShortPayload {
                attribute: 0x17,
                found: 4,
                expected: 12
            }
        );
        assert!(p.to_string().contains("EIATTR_KPARAM_INFO (0x17)"), "{p}");
    }

    #[test]
    fn kparam_info_decodes_ordinal_offset_and_size() {
        // From `mixed` (sm_90): ordinal 4 at offset 0x30, 16 bytes (the Pair struct).
        let data = [
            0x04, 0x17, 12, 0, 0, 0, 0, 0, 4, 0, 0x30, 0, 0x00, 0xf0, 0x41, 0x00,
        ];
        let k = decode_kernel(&records(&data).unwrap()).unwrap();
        assert_eq!(
            k.params,
            vec![ParamSlot {
                ordinal: 4,
                offset: 0x30,
                size: 16
            }]
        );
    }
}
