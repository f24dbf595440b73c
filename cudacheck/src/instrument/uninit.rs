//! The error of an init-checked launch, [`Uninitialized`]: a read of memory nothing wrote,
//! built from the init record the kernel wrote (decoded by
//! [`cudacheck_core::init::decode_init`], as `cudacheck run --init` decodes it), the site
//! table of the init-checked build and the launch's buffer arguments, and displayed like the
//! other reports of a checked launch.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::init::{decode_init, InitKernel, InitRecord, InitSiteKind, INIT_RECORD_OFFSET};
use cudacheck_core::instrument::SourceLoc;
use cudacheck_core::validate::LaunchConfig;
use cudacheck_core::Dim3;

use super::fault::{
    dim3, element_type, launched, line_text, param_names, plural, snippet, ArgView, FaultContext,
};
use crate::nvrtc::CudaSource;

/// The first read of memory nothing wrote in an init-checked launch
/// ([`Error::Uninitialized`]). The read went ahead: what it gave is whatever the memory held.
///
/// [`Error::Uninitialized`]: crate::Error::Uninitialized
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Uninitialized {
    pub kernel: Arc<str>,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    /// The buffer read, as named in the CUDA source (`x`), `argument N` when the source does
    /// not say, or `shared memory` for the block's shared memory.
    pub buffer: String,
    /// The first unwritten element read, counted in elements of
    /// [`elem_bytes`](Self::elem_bytes) bytes from the start of the buffer (for shared memory,
    /// from shared address 0: `byte_offset / elem_bytes`).
    pub index: u64,
    /// Bytes of one element `index` counts in: `size_of` the Rust element type for a buffer
    /// argument, the access's width otherwise.
    pub elem_bytes: u32,
    /// The Rust element type `index` counts in (`f32` for a `CudaSlice<f32>`), for a buffer
    /// argument.
    pub elem_type: Option<String>,
    /// The byte offset of the first unwritten byte from the start of the buffer; for shared
    /// memory, its shared address (what `__cvta_generic_to_shared` gives: the kernel's arrays
    /// are at addresses the device chooses, so an array's own index is this less the array's
    /// address, over its element size).
    pub byte_offset: u64,
    /// Bytes the access read.
    pub access_bytes: u32,
    /// The read was of shared memory.
    pub shared: bool,
    /// The access was an atomic (which reads the old value).
    pub atomic: bool,
    /// `blockIdx` and `threadIdx` of the first thread that read unwritten memory.
    pub block: Dim3,
    pub thread: Dim3,
    /// The CUDA source file, 1-based line and column of the read.
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// The text of that line, when the file can be read.
    pub source_line: Option<String>,
    /// Where the code holding the read was inlined into, when it was.
    pub inlined_at: Option<SourceLoc>,
    /// How many reads of the launch found unwritten bytes (only the first is described).
    pub count: u32,
}

/// What an init-checked launch knew, for building the error.
struct InitContext<'a> {
    pub kernel: &'a Arc<str>,
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    pub build: &'a InitKernel,
    pub source: &'a CudaSource,
    /// The kernel's parameter names, in order (missing ones are `argument N`).
    pub names: &'a [String],
    pub args: &'a [ArgView],
    /// Bytes of each argument's buffer (0 for scalars, or where unknown).
    pub arg_bytes: &'a [u64],
}

/// The buffer argument holding `addr`: its position and base. One whose length is known
/// must contain it; otherwise the closest base below it.
fn holder(args: &[ArgView], arg_bytes: &[u64], addr: u64) -> Option<(usize, u64)> {
    let within = args.iter().enumerate().find(|(k, a)| {
        let len = arg_bytes.get(*k).copied().unwrap_or(0);
        a.ptr != 0 && len > 0 && (a.ptr..a.ptr.saturating_add(len)).contains(&addr)
    });
    let below = || {
        args.iter()
            .enumerate()
            .filter(|(k, a)| {
                a.ptr != 0 && a.ptr <= addr && arg_bytes.get(*k).copied().unwrap_or(0) == 0
            })
            .max_by_key(|(_, a)| a.ptr)
    };
    within.or_else(below).map(|(k, a)| (k, a.ptr))
}

/// The error for an init record, or `None` when nothing was recorded.
fn uninitialized_of(rec: &InitRecord, cx: &InitContext<'_>) -> Option<Uninitialized> {
    if rec.faulted == 0 {
        return None;
    }
    let site = cx.build.site(rec.site);
    let (file, line, column) = match site.and_then(|s| s.loc.as_ref()) {
        Some(l) => (l.file.clone(), l.line, l.column),
        None => (cx.source.name.clone(), 0, 0),
    };
    let source_line = line_text(cx.source, &file, line);
    let access_bytes = rec.bytes.max(1);
    let first = rec.address + u64::from(rec.first_missing());
    let shared = rec.space == 1;
    let (buffer, base, elem_bytes, elem_type) = match (shared, holder(cx.args, cx.arg_bytes, first))
    {
        (false, Some((k, base))) => {
            let name = cx
                .names
                .get(k)
                .cloned()
                .unwrap_or_else(|| format!("argument {k}"));
            let arg = cx.args[k];
            match arg.elem_bytes {
                0 => (name, base, access_bytes, None),
                e => (name, base, e, element_type(arg.ty)),
            }
        }
        (true, _) => ("shared memory".to_string(), 0, access_bytes, None),
        (false, None) => (format!("address {first:#x}"), first, access_bytes, None),
    };
    let byte_offset = first - base;
    Some(Uninitialized {
        kernel: Arc::clone(cx.kernel),
        site: cx.site,
        config: cx.config,
        buffer,
        index: byte_offset / u64::from(elem_bytes.max(1)),
        elem_bytes,
        elem_type,
        byte_offset,
        access_bytes,
        shared,
        atomic: site.is_some_and(|s| s.kind == InitSiteKind::Atomic),
        block: dim3(rec.block),
        thread: dim3(rec.thread),
        file,
        line,
        column,
        source_line,
        inlined_at: site.and_then(|s| s.inlined_at.clone()),
        count: rec.count,
    })
}

/// An init-checked launch's outcome from its record block (the init record at
/// [`INIT_RECORD_OFFSET`]), read back after the kernel; `arg_bytes` is each argument's buffer
/// length in bytes (0 for scalars).
pub(crate) fn report_init(
    record: &[u8],
    cx: &FaultContext<'_>,
    arg_bytes: &[u64],
) -> Result<(), Box<Uninitialized>> {
    let Some(rec) = record.get(INIT_RECORD_OFFSET..).and_then(decode_init) else {
        return Ok(());
    };
    let Some(build) = cx.build.init.as_ref() else {
        return Ok(());
    };
    let names = cx.param_names.unwrap_or(param_names)(cx.source, cx.name);
    let icx = InitContext {
        kernel: cx.kernel,
        site: cx.site,
        config: cx.config,
        build,
        source: cx.source,
        names: &names,
        args: cx.args,
        arg_bytes,
    };
    uninitialized_of(&rec, &icx).map_or(Ok(()), |u| Err(Box::new(u)))
}

impl fmt::Display for Uninitialized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launched(f, &self.kernel, self.site, &self.config)?;
        let b = &self.buffer;
        let what = if self.atomic { "atomic on" } else { "read of" };
        let unit = match &self.elem_type {
            Some(t) => format!("`{t}` elements"),
            None => format!("{}-byte elements", self.elem_bytes),
        };
        if self.shared {
            write!(
                f,
                ": {what} {b} no thread of the block wrote since the block began: shared address \
                 {:#x} (a {}-byte access)",
                self.byte_offset, self.access_bytes
            )?;
        } else {
            write!(
                f,
                ": {what} `{b}` nothing wrote: index {} (in {unit}, byte {})",
                self.index, self.byte_offset
            )?;
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
        if let Some(at) = &self.inlined_at {
            write!(f, "\n{pad} = in code inlined into {at}")?;
        }
        let reads = plural(
            u64::from(self.count),
            "read of unwritten memory",
            "reads of unwritten memory",
        );
        let fix = if self.shared {
            "write the shared element first (and put a __syncthreads() between the write and \
             the read), or read only what the block wrote"
                .to_string()
        } else {
            format!("write it first, or allocate `{b}` with alloc_zeros")
        };
        write!(
            f,
            "\n{pad} = {reads} in this launch (the first is shown); the read went ahead and gave \
             whatever the memory held. Fix: {fix}"
        )
    }
}

impl std::error::Error for Uninitialized {}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::init::{InitCoverage, InitSite};

    const SRC: &str = "extern \"C\" __global__ void sum(float* out, const float* x, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = x[i] + 1.0f;\n}\n";

    fn build() -> InitKernel {
        InitKernel {
            symbol: "sum".into(),
            name: "sum".into(),
            sites: vec![
                InitSite {
                    id: 0,
                    kind: InitSiteKind::Read,
                    loc: Some(SourceLoc {
                        file: "sum.cu".into(),
                        line: 4,
                        column: 25,
                    }),
                    inlined_at: None,
                    bytes: 4,
                },
                InitSite {
                    id: 1,
                    kind: InitSiteKind::Atomic,
                    loc: None,
                    inlined_at: None,
                    bytes: 4,
                },
            ],
            coverage: InitCoverage::default(),
            shared_shadow: false,
        }
    }

    fn record(address: u64, missing: u32, space: u32) -> InitRecord {
        InitRecord {
            faulted: 1,
            count: 3,
            site: 0,
            bytes: 4,
            address,
            missing,
            space,
            thread: [5, 0, 0],
            block: [2, 0, 0],
        }
    }

    fn report(rec: &InitRecord, arg_bytes: &[u64]) -> Option<Uninitialized> {
        let kernel: Arc<str> = Arc::from("sum");
        let source = CudaSource {
            name: "sum.cu".into(),
            text: SRC.into(),
            dir: None,
        };
        let names = ["out".to_string(), "x".to_string(), "n".to_string()];
        let f32s = ArgView {
            ptr: 0,
            elem_bytes: 4,
            ty: "cudarc::driver::safe::core::CudaSlice<f32>",
        };
        let args = [
            ArgView {
                ptr: 0x1000,
                ..f32s
            },
            ArgView {
                ptr: 0x2000,
                ..f32s
            },
            ArgView::default(),
        ];
        uninitialized_of(
            rec,
            &InitContext {
                kernel: &kernel,
                site: Location::caller(),
                config: LaunchConfig::new(Dim3::x(4), Dim3::x(64)),
                build: &build(),
                source: &source,
                names: &names,
                args: &args,
                arg_bytes,
            },
        )
    }

    #[test]
    fn a_global_read_names_the_buffer_the_element_and_the_line() {
        // Element 9 of `x` (byte 36), its last two bytes unwritten: the first of them counts.
        let rec = record(0x2000 + 36, 0b1100, 0);
        let decoded = cudacheck_core::init::decode_init(&rec.to_bytes()).unwrap();
        let u = report(&decoded, &[256, 256, 0]).unwrap();
        assert_eq!(u.buffer, "x");
        assert_eq!((u.index, u.byte_offset), (9, 38));
        assert_eq!(u.elem_type.as_deref(), Some("f32"));
        assert_eq!((u.line, u.column, u.count), (4, 25, 3));
        assert_eq!(u.thread, Dim3::new(5, 0, 0));
        assert_eq!(u.block, Dim3::new(2, 0, 0));
        assert!(!u.shared && !u.atomic);
        let text = u.to_string();
        assert!(
            text.contains(": read of `x` nothing wrote: index 9 (in `f32` elements, byte 38)"),
            "{text}"
        );
        assert!(
            text.contains("first by thread (5, 0, 0) of block (2, 0, 0)"),
            "{text}"
        );
        assert!(text.contains("--> sum.cu:4:25"), "{text}");
        assert!(text.contains("if (i < n) out[i] = x[i] + 1.0f;"), "{text}");
        assert!(text.contains("3 reads of unwritten memory"), "{text}");
        assert!(
            text.contains("write it first, or allocate `x` with alloc_zeros"),
            "{text}"
        );
    }

    #[test]
    fn lengths_decide_between_neighbouring_buffers() {
        // Past `out`'s 16 bytes but below `x`: without lengths the closest base below wins.
        let rec = record(0x1000 + 64, 1, 0);
        assert_eq!(report(&rec, &[0, 0, 0]).unwrap().buffer, "out");
        let u = report(&rec, &[16, 16, 0]).unwrap();
        assert_eq!(u.buffer, format!("address {:#x}", 0x1040));
        assert_eq!((u.index, u.elem_bytes), (0, 4));
    }

    #[test]
    fn a_shared_read_gives_its_shared_address() {
        let mut rec = record(48, 1, 1);
        rec.site = 1;
        let u = report(&rec, &[256, 256, 0]).unwrap();
        assert!(u.shared && u.atomic);
        assert_eq!(
            (u.buffer.as_str(), u.index, u.byte_offset),
            ("shared memory", 12, 48)
        );
        let text = u.to_string();
        assert!(
            text.contains(
                ": atomic on shared memory no thread of the block wrote since the block began: \
                 shared address 0x30 (a 4-byte access)"
            ),
            "{text}"
        );
        assert!(text.contains("no line information"), "{text}");
        assert!(text.contains("__syncthreads()"), "{text}");
    }

    #[test]
    fn nothing_recorded_is_no_error() {
        let rec = InitRecord::default();
        assert_eq!(report(&rec, &[]), None);
    }
}
