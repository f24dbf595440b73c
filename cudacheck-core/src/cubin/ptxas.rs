//! The `ptxas -v` resource report NVRTC puts in its program log (`-Xptxas -v`).
//!
//! The CUBIN does not record spill traffic (no `EIATTR` carries it: checked against NVRTC 13.0
//! output of a kernel with 180 bytes of spill stores), so this report is where spills come
//! from. A report looks like:
//!
//! ```text
//! ptxas info    : Compiling entry function 'spills' for 'sm_90'
//! ptxas info    : Function properties for spills
//! ptxas         .     120 bytes stack frame, 180 bytes spill stores, 188 bytes spill loads
//! ptxas info    : Used 32 registers, used 0 barriers, 120 bytes cumulative stack size
//! ```

use std::str::FromStr;

use thiserror::Error;

use crate::arch::Arch;
use crate::resources::KernelResources;

/// What `ptxas -v` reported for one kernel (entry function).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PtxasKernelInfo {
    /// The kernel's symbol (mangled for C++ kernels), as in the CUBIN.
    pub name: String,
    /// The architecture from "for 'sm_90'", when it is one cudacheck knows.
    pub arch: Option<Arch>,
    /// "Used N registers".
    pub registers: u32,
    /// "used N barriers", when printed.
    pub barriers: Option<u32>,
    /// "N bytes smem": static shared memory per block (0 when not printed).
    pub static_shared_bytes: u32,
    /// "N bytes stack frame": local memory per thread.
    pub stack_frame_bytes: u32,
    /// "N bytes spill stores".
    pub spill_store_bytes: u32,
    /// "N bytes spill loads".
    pub spill_load_bytes: u32,
    /// "N bytes cumulative stack size", when printed (stack including callees).
    pub cumulative_stack_bytes: Option<u32>,
    /// Each "N bytes cmem\[B\]" as `(B, N)`, in the order printed.
    pub cmem: Vec<(u32, u32)>,
}

impl PtxasKernelInfo {
    /// Copies the spill figures, which the CUBIN lacks, into resources read from it.
    pub fn merge_spills_into(&self, resources: &mut KernelResources) {
        resources.spill_store_bytes = self.spill_store_bytes;
        resources.spill_load_bytes = self.spill_load_bytes;
    }
}

/// A line of a ptxas report that has the shape of a resource line but numbers cudacheck
/// cannot read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PtxasLogError {
    #[error(
        "ptxas log line {line}: `{item}` in `{text}` does not start with a number; \
         expected a count such as `12 registers` or `0 bytes spill stores`"
    )]
    BadNumber {
        line: usize,
        text: String,
        item: String,
    },
    #[error(
        "ptxas log line {line}: `{text}` reports resources before any \
         \"Compiling entry function\" line names the kernel they belong to"
    )]
    NoKernel { line: usize, text: String },
    #[error(
        "ptxas log line {line}: `{text}` does not name its kernel between single quotes, as \
         in \"Compiling entry function 'saxpy' for 'sm_90'\"; the log is cut short or \
         damaged"
    )]
    UnquotedKernel { line: usize, text: String },
}

/// Splits "ptxas info    : rest" / "ptxas         .     rest" into the rest, trimmed.
fn body(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("ptxas")?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("info").unwrap_or(rest).trim_start();
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix('.'))
        .unwrap_or(rest);
    Some(rest.trim())
}

/// The text between the pair of single quotes `text` starts with (after blanks).
fn quoted(text: &str) -> Option<&str> {
    let (name, _) = text.trim_start().strip_prefix('\'')?.split_once('\'')?;
    Some(name)
}

/// Parses the comma-separated items of a resource line, calling `f(number, words)` for each
/// (words is what follows the number, e.g. "bytes spill stores").
fn items(line_no: usize, text: &str, mut f: impl FnMut(u32, &str)) -> Result<(), PtxasLogError> {
    for item in text.split(',') {
        let item = item.trim();
        // "Used 12 registers": the leading verb is not part of the quantity.
        let item = item
            .strip_prefix("Used ")
            .or_else(|| item.strip_prefix("used "))
            .unwrap_or(item);
        let (num, words) = item.split_once(' ').unwrap_or((item, ""));
        let n = u32::from_str(num).map_err(|_| PtxasLogError::BadNumber {
            line: line_no,
            text: text.to_string(),
            item: item.to_string(),
        })?;
        f(n, words.trim());
    }
    Ok(())
}

/// The static shared memory ptxas reports for `symbol` in `log`, where one CUBIN's own
/// figure cannot be trusted: nvJitLink's sm_90 CUBIN counts the 1 KiB the driver reserves per
/// block in the kernel's shared section without marking it, and ptxas's report has the static
/// shared memory alone. `None` when the log does not report the kernel.
pub fn ptxas_static_shared(log: &str, symbol: &str) -> Option<u32> {
    parse_ptxas_info(log)
        .ok()?
        .into_iter()
        .find(|p| p.name == symbol)
        .map(|p| p.static_shared_bytes)
}

/// Parses NVRTC's `-Xptxas -v` report into one entry per kernel, in the order ptxas compiled
/// them. Lines that are not resource lines (compile times, "Overriding maximum register
/// limit", gmem totals, warnings) are skipped; so are the properties of non-entry functions.
///
/// # Errors
///
/// [`PtxasLogError::BadNumber`] when a stack-frame or "Used ..." line holds something other
/// than numbers where the counts go, [`PtxasLogError::NoKernel`] when such a line comes
/// before any "Compiling entry function" line, and [`PtxasLogError::UnquotedKernel`] when a
/// "Compiling entry function" line does not quote its kernel's name (a log cut short).
pub fn parse_ptxas_info(log: &str) -> Result<Vec<PtxasKernelInfo>, PtxasLogError> {
    let mut kernels: Vec<PtxasKernelInfo> = Vec::new();
    // The function the last "Function properties for X" line named: a stack-frame line
    // belongs to it, and only counts when X is the kernel being compiled.
    let mut properties_for: Option<String> = None;
    for (i, raw) in log.lines().enumerate() {
        let line_no = i + 1;
        let Some(text) = body(raw) else { continue };
        if let Some(rest) = text.strip_prefix("Compiling entry function") {
            // Without its closing quote the name may be cut short, and skipping the line
            // would credit this kernel's figures to the previous one: neither is safe.
            let name = quoted(rest).ok_or_else(|| PtxasLogError::UnquotedKernel {
                line: line_no,
                text: text.to_string(),
            })?;
            let arch = text
                .rsplit('\'')
                .nth(1)
                .and_then(|a| a.parse::<Arch>().ok());
            kernels.push(PtxasKernelInfo {
                name: name.to_string(),
                arch,
                ..PtxasKernelInfo::default()
            });
            properties_for = None;
        } else if let Some(name) = text.strip_prefix("Function properties for ") {
            properties_for = Some(name.trim().to_string());
        } else if text.contains("bytes stack frame") {
            let current = kernels.last_mut().ok_or_else(|| PtxasLogError::NoKernel {
                line: line_no,
                text: text.to_string(),
            })?;
            if properties_for.as_deref() != Some(current.name.as_str()) {
                continue; // a device function's frame, not the kernel's
            }
            items(line_no, text, |n, words| match words {
                "bytes stack frame" => current.stack_frame_bytes = n,
                "bytes spill stores" => current.spill_store_bytes = n,
                "bytes spill loads" => current.spill_load_bytes = n,
                _ => {}
            })?;
        } else if text.starts_with("Used ") {
            let current = kernels.last_mut().ok_or_else(|| PtxasLogError::NoKernel {
                line: line_no,
                text: text.to_string(),
            })?;
            items(line_no, text, |n, words| {
                if words == "registers" {
                    current.registers = n;
                } else if words == "barriers" {
                    current.barriers = Some(n);
                } else if words == "bytes smem" {
                    current.static_shared_bytes = n;
                } else if words == "bytes cumulative stack size" {
                    current.cumulative_stack_bytes = Some(n);
                } else if let Some(bank) = words
                    .strip_prefix("bytes cmem[")
                    .and_then(|b| b.strip_suffix(']'))
                    .and_then(|b| b.parse().ok())
                {
                    current.cmem.push((bank, n));
                }
            })?;
        }
    }
    Ok(kernels)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
ptxas info    : Overriding maximum register limit 256 for 'spills' with  32 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spills' for 'sm_75'
ptxas info    : Function properties for spills
ptxas         .     136 bytes stack frame, 180 bytes spill stores, 188 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 1056 bytes smem, 136 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 11.819 ms
ptxas info    : Compiling entry function '_Z7mangledPKiPij' for 'sm_75'
ptxas info    : Function properties for _Z6helperv
ptxas         .     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _Z7mangledPKiPij
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 372 bytes cmem[0]
";

    #[test]
    fn reads_every_figure_of_each_kernel() {
        let ks = parse_ptxas_info(LOG).unwrap();
        assert_eq!(ks.len(), 2);
        assert_eq!(
            ks[0],
            PtxasKernelInfo {
                name: "spills".into(),
                arch: Some(Arch::new(7, 5)),
                registers: 32,
                barriers: Some(1),
                static_shared_bytes: 1056,
                stack_frame_bytes: 136,
                spill_store_bytes: 180,
                spill_load_bytes: 188,
                cumulative_stack_bytes: Some(136),
                cmem: vec![(0, 368)],
            }
        );
        // The helper's 64-byte frame is not the kernel's.
        assert_eq!(ks[1].name, "_Z7mangledPKiPij");
        assert_eq!(ks[1].stack_frame_bytes, 0);
        assert_eq!(ks[1].registers, 10);
    }

    #[test]
    fn garbage_counts_are_errors_naming_the_line() {
        let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
                   ptxas info    : Used many registers, used 0 barriers\n";
        let e = parse_ptxas_info(log).unwrap_err();
        assert!(
            matches!(e, PtxasLogError::BadNumber { line: 2, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("`many registers`"), "{e}");
    }

    #[test]
    fn resources_without_a_kernel_are_an_error() {
        let e = parse_ptxas_info("ptxas info    : Used 8 registers\n").unwrap_err();
        assert!(
            matches!(e, PtxasLogError::NoKernel { line: 1, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn a_kernel_name_without_its_closing_quote_is_an_error() {
        // Found by the pure-tier truncation test written with the `ptxas` fuzz target: a log
        // cut inside the name gave a kernel `bounded12` for `bounded128`.
        let log = "ptxas info    : Compiling entry function 'bounded12";
        let e = parse_ptxas_info(log).unwrap_err();
        assert!(
            matches!(e, PtxasLogError::UnquotedKernel { line: 1, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("between single quotes"), "{e}");
    }

    #[test]
    fn resources_after_an_unquoted_kernel_are_not_credited_to_the_previous_one() {
        let log = "ptxas info    : Compiling entry function 'a' for 'sm_90'\n\
                   ptxas info    : Used 8 registers\n\
                   ptxas info    : Compiling entry function b for 'sm_90'\n\
                   ptxas info    : Used 99 registers\n";
        let e = parse_ptxas_info(log).unwrap_err();
        assert!(
            matches!(e, PtxasLogError::UnquotedKernel { line: 3, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn an_empty_log_has_no_kernels() {
        assert_eq!(parse_ptxas_info("").unwrap(), vec![]);
    }
}
