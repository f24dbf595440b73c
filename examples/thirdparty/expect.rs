//! What a planted bug must report, and the comparison with what the launch returned.
//!
//! The expected source line is found at run time in the third-party file (the first line that
//! holds a short key, such as the kernel's name on the line of the macro invocation that
//! generates it), so nothing of that file is copied here and a moved line is still found.

use std::path::Path;

use cudacheck::core::instrument::FaultKind;
use cudacheck::Error;

/// A thread that may be the first to fault, and the index it reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub index: i64,
    pub block: [u32; 3],
    pub thread: [u32; 3],
}

impl Site {
    /// The thread with 1-D global index `global` in blocks of `block_x` threads, reaching
    /// element `index`.
    pub fn linear(global: u64, block_x: u32, index: i64) -> Site {
        Site {
            index,
            block: [(global / u64::from(block_x)) as u32, 0, 0],
            thread: [(global % u64::from(block_x)) as u32, 0, 0],
        }
    }

    pub fn at(block: [u32; 3], thread: [u32; 3], index: i64) -> Site {
        Site {
            index,
            block,
            thread,
        }
    }
}

/// The source line a fault must name: the first line of `file` (a file name in the corpus
/// directory of the kernel's source) that contains `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub file: &'static str,
    pub key: &'static str,
}

/// The report a planted bug must produce.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// `Error::OutOfBounds` on `buffer` (the parameter's name in the CUDA source), whose length
    /// in elements is `len`, by one of `sites` (exactly one when a single thread faults).
    OutOfBounds {
        buffer: &'static str,
        len: u64,
        access: FaultKind,
        sites: Vec<Site>,
        /// Out-of-bounds accesses of the launch in all, when the bug fixes the number.
        count: Option<u32>,
        line: Line,
    },
    /// `Error::DeviceAssert`: the kernel's own `assert(message)` failed (candle's indexing
    /// kernels check their ids before using them).
    Assert {
        message: &'static str,
        sites: Vec<Site>,
        line: Line,
    },
}

/// The 1-based number of the first line of `path` holding `key`.
pub fn find_line(path: &Path, key: &str) -> Result<u32, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .position(|l| l.contains(key))
        .map(|i| i as u32 + 1)
        .ok_or_else(|| format!("no line of {} holds `{key}`", path.display()))
}

/// What the fault said, in a form the report keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Got {
    /// `OutOfBounds`, `DeviceAssert`, another variant's name, or `Ok` (nothing reported).
    pub variant: String,
    /// `buffer[index] of len`, or the assert's condition.
    pub what: String,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    /// `file:line` as reported (the file name only).
    pub at: String,
    pub count: u32,
    /// The whole error as a person reads it.
    pub text: String,
}

fn dims(d: cudacheck::core::Dim3) -> [u32; 3] {
    [d.x, d.y, d.z]
}

fn file_name(f: &str) -> &str {
    f.rsplit('/').next().unwrap_or(f)
}

/// Compares the launch's result with `x`; `dir` is the corpus directory of the kernel's
/// source (where `x`'s line is looked up). Returns what was reported and the mismatches.
pub fn check(
    r: &Result<Vec<crate::call::Data>, Error>,
    x: &Expect,
    dir: &Path,
    ptx_buffers: Option<&[Option<u64>]>,
) -> (Got, Vec<String>) {
    let mut bad = Vec::new();
    let e = match r {
        Ok(_) => {
            let got = Got {
                variant: "Ok".into(),
                ..Got::default()
            };
            return (got, vec!["the launch reported nothing".into()]);
        }
        Err(e) => e,
    };
    let text = e.to_string();
    let (got, line) = match (e, x) {
        (
            Error::OutOfBounds(o),
            Expect::OutOfBounds {
                buffer,
                len,
                access,
                sites,
                count,
                line,
            },
        ) => {
            // From PTX the parameter's name is lost: `argument N` must then be a buffer of
            // the reported length.
            let by_index = ptx_buffers.is_some_and(|lens| {
                o.buffer
                    .strip_prefix("argument ")
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| lens.get(n).copied().flatten())
                    == Some(*len)
            });
            if o.buffer != *buffer && !by_index {
                bad.push(format!("buffer `{}`, expected `{buffer}`", o.buffer));
            }
            if o.len != *len {
                bad.push(format!("length {}, expected {len}", o.len));
            }
            if o.index >= 0 && (o.index as u64) < o.len {
                bad.push(format!("index {} is inside the buffer", o.index));
            }
            if o.access != *access {
                bad.push(format!("{:?} access, expected {access:?}", o.access));
            }
            if let Some(c) = count {
                if o.count != *c {
                    bad.push(format!("{} faults, expected {c}", o.count));
                }
            }
            let got = Got {
                variant: "OutOfBounds".into(),
                what: format!("{:?} `{}`[{}] of {}", o.access, o.buffer, o.index, o.len),
                block: dims(o.block),
                thread: dims(o.thread),
                at: format!("{}:{}", file_name(&o.file), o.line),
                count: o.count,
                text,
            };
            let hit = sites
                .iter()
                .any(|s| s.index == o.index && s.block == got.block && s.thread == got.thread);
            if !hit {
                bad.push(format!(
                    "index {} by thread {:?} of block {:?} is none of the expected {}",
                    o.index,
                    got.thread,
                    got.block,
                    describe_sites(sites)
                ));
            }
            (got, line)
        }
        (
            Error::DeviceAssert(a),
            Expect::Assert {
                message,
                sites,
                line,
            },
        ) => {
            if a.message != *message {
                bad.push(format!("assertion `{}`, expected `{message}`", a.message));
            }
            let got = Got {
                variant: "DeviceAssert".into(),
                what: format!("assert({})", a.message),
                block: dims(a.block),
                thread: dims(a.thread),
                at: format!("{}:{}", file_name(&a.file), a.line),
                count: a.count,
                text,
            };
            let hit = sites
                .iter()
                .any(|s| s.block == got.block && s.thread == got.thread);
            if !hit {
                bad.push(format!(
                    "thread {:?} of block {:?} is none of the expected {}",
                    got.thread,
                    got.block,
                    describe_sites(sites)
                ));
            }
            (got, line)
        }
        (other, _) => {
            let got = Got {
                variant: variant_name(other).into(),
                text,
                ..Got::default()
            };
            let want = match x {
                Expect::OutOfBounds { .. } => "OutOfBounds",
                Expect::Assert { .. } => "DeviceAssert",
            };
            return (got, vec![format!("expected Error::{want}")]);
        }
    };
    match find_line(&dir.join(line.file), line.key) {
        Ok(n) => {
            let want = format!("{}:{n}", line.file);
            if got.at != want {
                bad.push(format!("reported at {}, expected {want}", got.at));
            }
        }
        Err(e) => bad.push(e),
    }
    (got, bad)
}

fn describe_sites(sites: &[Site]) -> String {
    match sites {
        [s] => format!(
            "index {} by thread {:?} of block {:?}",
            s.index, s.thread, s.block
        ),
        _ => format!("{} (index, block, thread) triples", sites.len()),
    }
}

fn variant_name(e: &Error) -> &'static str {
    match e {
        Error::OutOfBounds(_) => "OutOfBounds",
        Error::DeviceAssert(_) => "DeviceAssert",
        Error::Launch(_) => "Launch",
        Error::Compile { .. } => "Compile",
        Error::Instrument { .. } => "Instrument",
        Error::ContextPoisoned { .. } => "ContextPoisoned",
        Error::Fault { .. } => "Fault",
        _ => "other",
    }
}

impl Expect {
    /// One line for the report: what must come back.
    pub fn summary(&self) -> String {
        match self {
            Expect::OutOfBounds {
                buffer,
                len,
                access,
                sites,
                line,
                ..
            } => {
                let at = match sites.as_slice() {
                    [s] => format!(
                        "[{}] by thread {:?} of block {:?}",
                        s.index, s.thread, s.block
                    ),
                    _ => format!("by one of {} threads", sites.len()),
                };
                format!(
                    "OutOfBounds: {access:?} `{buffer}`{at}, length {len}, at {} (`{}`)",
                    line.file, line.key
                )
            }
            Expect::Assert {
                message,
                sites,
                line,
            } => format!(
                "DeviceAssert: assert({message}) by {} thread(s), at {} (`{}`)",
                sites.len(),
                line.file,
                line.key
            ),
        }
    }
}
