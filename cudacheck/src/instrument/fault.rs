//! The errors of a bounds-checked launch, [`OutOfBounds`] and [`DeviceAssert`], built from the
//! fault record the kernel wrote and the site table of its rewrite, and displayed like a
//! compiler error pointing at the CUDA source line.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::instrument::{FaultKind, FaultRecord, Instrumented};
use cudacheck_core::validate::LaunchConfig;
use cudacheck_core::Dim3;

/// The first out-of-bounds access of a bounds-checked launch ([`Error::OutOfBounds`]).
///
/// [`Error::OutOfBounds`]: crate::Error::OutOfBounds
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutOfBounds {
    pub kernel: Arc<str>,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    /// The buffer or array accessed, as named in the CUDA source (`y`, `tile`).
    pub buffer: String,
    /// The offending index, in elements (for a multi-dimensional array, along `dim`).
    pub index: i64,
    /// The length it was checked against: the launch's buffer length in elements, the
    /// array's extent along `dim`, or the dynamic shared elements.
    pub len: u64,
    /// For a multi-dimensional array, the dimension out of range (0 for pointers).
    pub dim: u32,
    /// Read, write, read-modify-write or atomic.
    pub access: FaultKind,
    /// `blockIdx` and `threadIdx` of the first thread that faulted.
    pub block: Dim3,
    pub thread: Dim3,
    /// The CUDA source file, 1-based line and column (bytes) of the access.
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// The text of that line, when the source has it.
    pub source_line: Option<String>,
    /// How many accesses of the launch were out of bounds (only the first is described).
    pub count: u32,
}

/// The first failed `assert(cond)` of a bounds-checked launch ([`Error::DeviceAssert`]).
///
/// [`Error::DeviceAssert`]: crate::Error::DeviceAssert
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceAssert {
    pub kernel: Arc<str>,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    /// The condition text (or a `CUDACHECK_ASSERT` message), at most 63 bytes.
    pub message: String,
    pub block: Dim3,
    pub thread: Dim3,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub source_line: Option<String>,
    /// How many assertion failures and bad accesses the launch had in all.
    pub count: u32,
}

/// What the launch knew, for building the error.
pub(crate) struct FaultContext<'a> {
    pub kernel: &'a Arc<str>,
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    pub inst: &'a Instrumented,
    /// The user's source text (not the rewrite), for the source line.
    pub original: &'a str,
}

fn dim3(v: [u32; 3]) -> Dim3 {
    Dim3::new(v[0], v[1], v[2])
}

/// The error a faulted record stands for, or `None` when nothing was recorded.
pub(crate) fn error_of(rec: &FaultRecord, cx: &FaultContext<'_>) -> Option<crate::Error> {
    if rec.faulted == 0 {
        return None;
    }
    let site = cx.inst.site(rec.site).map(|(_, s)| s);
    let line = site.map_or(rec.assert_line, |s| s.line);
    let column = site.map_or(0, |s| s.column);
    let source_line = line
        .checked_sub(1)
        .and_then(|i| cx.original.lines().nth(i as usize))
        .map(str::to_string);
    let file = cx.inst.file_name.clone();
    let kind = rec.fault_kind();
    if kind == Some(FaultKind::Assert) {
        let message = match rec.message() {
            m if !m.is_empty() => m,
            _ => site.map(|s| s.buffer.clone()).unwrap_or_default(),
        };
        return Some(crate::Error::DeviceAssert(Box::new(DeviceAssert {
            kernel: Arc::clone(cx.kernel),
            site: cx.site,
            config: cx.config,
            message,
            block: dim3(rec.block),
            thread: dim3(rec.thread),
            file,
            line,
            column,
            source_line,
            count: rec.count,
        })));
    }
    Some(crate::Error::OutOfBounds(Box::new(OutOfBounds {
        kernel: Arc::clone(cx.kernel),
        site: cx.site,
        config: cx.config,
        buffer: site.map_or_else(|| "?".to_string(), |s| s.buffer.clone()),
        index: rec.index,
        len: rec.len,
        dim: rec.dim,
        // An unknown code is still a bad access; "read" is the mildest claim.
        access: kind.unwrap_or(FaultKind::Read),
        block: dim3(rec.block),
        thread: dim3(rec.thread),
        file,
        line,
        column,
        source_line,
        count: rec.count,
    })))
}

/// `  --> file:line:col`, the line, and a caret under the column, as rustc prints them.
fn snippet(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    line: u32,
    column: u32,
    source_line: Option<&str>,
) -> fmt::Result {
    let num = line.to_string();
    let pad = " ".repeat(num.len());
    write!(f, "\n{pad}--> {file}:{line}")?;
    if column > 0 {
        write!(f, ":{column}")?;
    }
    let Some(text) = source_line else {
        return Ok(());
    };
    write!(f, "\n{pad} |\n{num} | {}", text.trim_end())?;
    if column > 0 {
        // Tabs stay tabs so that the caret lines up however the terminal shows them.
        let lead: String = text
            .bytes()
            .take(column as usize - 1)
            .map(|b| if b == b'\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "\n{pad} | {lead}^")?;
    }
    Ok(())
}

fn launched(
    f: &mut fmt::Formatter<'_>,
    kernel: &str,
    site: &Location<'_>,
    c: &LaunchConfig,
) -> fmt::Result {
    write!(
        f,
        "kernel `{kernel}` launched at {site} with grid {}, block {}, {} bytes of dynamic shared \
         memory",
        c.grid, c.block, c.dynamic_shared_bytes
    )
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launched(f, &self.kernel, self.site, &self.config)?;
        let b = &self.buffer;
        write!(f, ": {} of `{b}`: index {}", self.access, self.index)?;
        if self.dim > 0 {
            write!(
                f,
                " in dimension {}, whose extent is {}",
                self.dim, self.len
            )?;
        } else if self.index < 0 {
            write!(f, ", before its start")?;
        } else {
            let len = plural_u64(self.len, "element", "elements");
            write!(f, ", but `{b}` has {len}")?;
        }
        write!(
            f,
            "; first by thread {} of block {}",
            self.thread, self.block
        )?;
        snippet(
            f,
            &self.file,
            self.line,
            self.column,
            self.source_line.as_deref(),
        )?;
        let pad = " ".repeat(self.line.to_string().len());
        let effect = match self.access {
            FaultKind::Write => "the write was dropped",
            FaultKind::Read => "the read gave 0",
            _ => "the access went to a scratch slot",
        };
        write!(
            f,
            "\n{pad} = {} in this launch (the first is shown); {effect}, so no memory outside \
             `{b}` was touched and the context is still usable. Check the index computation \
             and its guard against the length passed for `{b}`",
            plural(self.count, "out-of-bounds access", "out-of-bounds accesses")
        )
    }
}

fn plural_u64(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl fmt::Display for DeviceAssert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launched(f, &self.kernel, self.site, &self.config)?;
        write!(
            f,
            ": assertion `{}` failed in thread {} of block {}",
            self.message, self.thread, self.block
        )?;
        snippet(
            f,
            &self.file,
            self.line,
            self.column,
            self.source_line.as_deref(),
        )?;
        let pad = " ".repeat(self.line.to_string().len());
        write!(
            f,
            "\n{pad} = {} in this launch (the first is shown); the failure was recorded instead \
             of trapping, so the context is still usable",
            plural(self.count, "failure", "failures")
        )
    }
}

impl std::error::Error for OutOfBounds {}
impl std::error::Error for DeviceAssert {}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::instrument::{instrument, InstrumentOptions};

    const SRC: &str = "extern \"C\" __global__ void saxpy(float* y, const float* x, float a, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i <= n) y[i] = a * x[i] + y[i];\n    assert(i < n);\n}\n";

    fn cx<'a>(inst: &'a Instrumented, kernel: &'a Arc<str>) -> FaultContext<'a> {
        FaultContext {
            kernel,
            site: Location::caller(),
            config: LaunchConfig::new(Dim3::x(5), Dim3::x(256)),
            inst,
            original: SRC,
        }
    }

    #[test]
    fn an_empty_record_is_no_error() {
        let inst = instrument(SRC, "saxpy.cu", &InstrumentOptions::default()).unwrap();
        let k: Arc<str> = "saxpy".into();
        assert!(error_of(&FaultRecord::empty(), &cx(&inst, &k)).is_none());
    }

    #[test]
    fn out_of_bounds_points_at_the_line_with_a_caret() {
        let inst = instrument(SRC, "saxpy.cu", &InstrumentOptions::default()).unwrap();
        let write = inst.kernels[0]
            .sites
            .iter()
            .find(|s| s.buffer == "y" && s.kind == cudacheck_core::instrument::SiteKind::Write)
            .unwrap()
            .clone();
        let mut r = FaultRecord::empty();
        r.faulted = 1;
        r.count = 2;
        r.site = write.id;
        r.kind = FaultKind::Write.code();
        r.index = 1000;
        r.len = 1000;
        r.block = [3, 0, 0];
        r.thread = [232, 0, 0];
        let k: Arc<str> = "saxpy".into();
        let e = error_of(&r, &cx(&inst, &k)).unwrap();
        let crate::Error::OutOfBounds(o) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (o.buffer.as_str(), o.index, o.len, o.line),
            ("y", 1000, 1000, 4)
        );
        let text = e.to_string();
        assert!(text.starts_with("kernel `saxpy` launched at "), "{text}");
        assert!(
            text.contains(
                "out-of-bounds write of `y`: index 1000, but `y` has 1000 elements; first by \
                 thread (232, 0, 0) of block (3, 0, 0)\n --> saxpy.cu:4:17\n  |\n4 |     if \
                 (i <= n) y[i] = a * x[i] + y[i];\n  |                 ^\n  = 2 out-of-bounds \
                 accesses in this launch"
            ),
            "{text}"
        );
        assert!(text.contains("the write was dropped"), "{text}");
    }

    #[test]
    fn negative_index_says_before_its_start() {
        let inst = instrument(SRC, "saxpy.cu", &InstrumentOptions::default()).unwrap();
        let mut r = FaultRecord::empty();
        r.faulted = 1;
        r.count = 1;
        r.site = inst.kernels[0].sites[0].id;
        r.kind = FaultKind::Read.code();
        r.index = -1;
        r.len = 8;
        let k: Arc<str> = "saxpy".into();
        let text = error_of(&r, &cx(&inst, &k)).unwrap().to_string();
        assert!(
            text.contains(
                "index -1, before its start; first by thread (0, 0, 0) of block (0, 0, 0)"
            ),
            "{text}"
        );
        assert!(text.contains("1 out-of-bounds access in"), "{text}");
    }

    #[test]
    fn assert_records_name_the_condition_and_line() {
        let inst = instrument(SRC, "saxpy.cu", &InstrumentOptions::default()).unwrap();
        let a = inst.kernels[0]
            .sites
            .iter()
            .find(|s| s.kind == cudacheck_core::instrument::SiteKind::Assert)
            .unwrap()
            .clone();
        let mut r = FaultRecord::empty();
        r.faulted = 1;
        r.count = 24;
        r.site = a.id;
        r.kind = FaultKind::Assert.code();
        r.assert_line = 5;
        r.msg[..5].copy_from_slice(b"i < n");
        let k: Arc<str> = "saxpy".into();
        let e = error_of(&r, &cx(&inst, &k)).unwrap();
        let crate::Error::DeviceAssert(d) = &e else {
            panic!("{e:?}")
        };
        assert_eq!((d.message.as_str(), d.line, d.count), ("i < n", 5, 24));
        let text = e.to_string();
        assert!(
            text.contains("assertion `i < n` failed in thread (0, 0, 0)"),
            "{text}"
        );
        assert!(text.contains("5 |     assert(i < n);"), "{text}");
        assert!(text.contains("24 failures in this launch"), "{text}");
    }
}
