//! What must hold for any input to the CUBIN reader, the `.nv.info` decoder and the ptxas
//! report parser, written once for the fuzz targets in `fuzz/fuzz_targets/` and for the
//! pure-tier robustness tests (`robustness.rs`), so that CI checks without nightly what the
//! fuzzers check. Compiled only for tests and under `cargo fuzz` (which sets `--cfg fuzzing`):
//! not part of the API.
//!
//! Each check runs the parser and returns `Err` with the broken property; a panic inside the
//! parser is a failure by itself.

use std::collections::HashSet;

use super::nvinfo::{self, Record, Value};
use super::{parse_ptxas_info, read_cubin, PtxasLogError};

/// `read_cubin` gives kernels or an error that prints. Each kernel it lists is a
/// NUL-terminated name in the file, none twice, and no more kernels than 24-byte symbol
/// entries fit in the file.
pub fn check_read_cubin(bytes: &[u8]) -> Result<(), String> {
    let info = match read_cubin(bytes) {
        Ok(info) => info,
        Err(e) if e.to_string().is_empty() => return Err(format!("{e:?} prints nothing")),
        Err(_) => return Ok(()),
    };
    if info.kernels.len() > bytes.len() / 24 {
        return Err(format!(
            "{} kernels in {} bytes",
            info.kernels.len(),
            bytes.len()
        ));
    }
    let mut seen = HashSet::new();
    for k in &info.kernels {
        if !seen.insert(k.symbol.as_str()) {
            return Err(format!("`{}` is listed twice", k.symbol));
        }
        let needle = [k.symbol.as_bytes(), b"\0"].concat();
        if k.symbol.is_empty() || !bytes.windows(needle.len()).any(|w| w == needle) {
            return Err(format!("`{}` is not a name in the file", k.symbol));
        }
    }
    Ok(())
}

/// The bytes a record was read from.
fn encode(r: &Record<'_>) -> Result<Vec<u8>, String> {
    Ok(match r.value {
        Value::None => vec![0x01, r.attribute],
        Value::Byte(b) => vec![0x02, r.attribute, b],
        Value::Half(h) => [&[0x03, r.attribute][..], &h.to_le_bytes()].concat(),
        Value::Bytes(b) => {
            let len = u16::try_from(b.len())
                .map_err(|_| format!("a {}-byte payload at {}", b.len(), r.offset))?;
            [&[0x04, r.attribute][..], &len.to_le_bytes(), b].concat()
        }
    })
}

/// Read as one `.nv.info` section, the records account for every byte: re-encoded at their
/// offsets they give the input back, with at most 3 bytes of padding before each and after
/// the last. A failure is at a record boundary inside the data, everything before it decodes,
/// and the problem prints. Decoding the records as a kernel's or the module's attributes
/// never panics, and a kernel's parameters come out in order.
pub fn check_nv_info(data: &[u8]) -> Result<(), String> {
    let rs = match nvinfo::records(data) {
        Ok(rs) => rs,
        Err((at, problem)) => {
            if at >= data.len() {
                return Err(format!("failure at {at}, past the end ({problem})"));
            }
            if nvinfo::records(&data[..at]).is_err() {
                return Err(format!(
                    "the records before the failure at {at} do not decode"
                ));
            }
            if problem.to_string().is_empty() {
                return Err(format!("{problem:?} prints nothing"));
            }
            return Ok(());
        }
    };
    let mut end = 0;
    for r in &rs {
        if r.offset < end || r.offset - end > 3 {
            return Err(format!("record at {} after one ending at {end}", r.offset));
        }
        let bytes = encode(r)?;
        if data.get(r.offset..r.offset + bytes.len()) != Some(&bytes[..]) {
            return Err(format!("the record at {} is not the bytes there", r.offset));
        }
        end = r.offset + bytes.len();
    }
    if data.len() - end > 3 {
        return Err(format!("{} bytes after the last record", data.len() - end));
    }
    if let Ok(k) = nvinfo::decode_kernel(&rs) {
        if k.params.windows(2).any(|w| w[0].ordinal > w[1].ordinal) {
            return Err("parameters out of order".to_string());
        }
    }
    let _ = nvinfo::decode_global(&rs);
    Ok(())
}

/// `parse_ptxas_info` gives kernels or an error. Every kernel it names is quoted in the log,
/// there are no more kernels than "Compiling entry function" lines, and an error names one of
/// the log's lines and prints.
pub fn check_ptxas(log: &str) -> Result<(), String> {
    match parse_ptxas_info(log) {
        Ok(kernels) => {
            if kernels.len() > log.matches("Compiling entry function").count() {
                return Err(format!("{} kernels", kernels.len()));
            }
            match kernels
                .iter()
                .find(|k| !log.contains(&format!("'{}'", k.name)))
            {
                Some(k) => Err(format!("`{}` is not quoted in the log", k.name)),
                None => Ok(()),
            }
        }
        Err(e) => {
            let line = match &e {
                PtxasLogError::BadNumber { line, .. }
                | PtxasLogError::NoKernel { line, .. }
                | PtxasLogError::UnquotedKernel { line, .. } => *line,
            };
            if !(1..=log.lines().count()).contains(&line) || e.to_string().is_empty() {
                return Err(format!("{e:?} names no line of the log"));
            }
            Ok(())
        }
    }
}
