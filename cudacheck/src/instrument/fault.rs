//! The errors of a bounds-checked launch, [`OutOfBounds`] and [`DeviceAssert`], built from the
//! fault record the kernel wrote, the site table of its instrumented build and the launch's
//! arguments, and displayed like a compiler error pointing at the CUDA source line.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::instrument::{
    FaultKind, FaultRecord, InstrumentedKernel, SourceLoc, Target, WidestAccess,
};
use cudacheck_core::source::parse_source;
use cudacheck_core::text::{self, Macro, Macros};
use cudacheck_core::validate::LaunchConfig;
use cudacheck_core::Dim3;

use crate::nvrtc::CudaSource;

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
    /// The buffer or array accessed, as named in the CUDA source (`y`, `tile`), or
    /// `argument N` when the source does not say.
    pub buffer: String,
    /// The offending index (negative before the buffer's start), counted in elements of
    /// [`elem_bytes`](Self::elem_bytes) bytes: for a buffer argument, elements of its Rust
    /// element type ([`elem_type`](Self::elem_type)), whatever the access's own width (a
    /// `__half2` read of a `CudaSlice<f16>` counts in `f16` elements, so one access covers
    /// two); for an array or a raw address, units of the access's width.
    pub index: i64,
    /// The buffer's length, in the same elements as `index` (for a buffer argument, as the
    /// launch passed it).
    pub len: u64,
    /// Bytes of one element `index` and `len` count in: `size_of` the Rust element type for a
    /// buffer argument, the access's width for an array or a raw address.
    pub elem_bytes: u32,
    /// The Rust element type `index` and `len` count in (`f16` for a `CudaSlice<f16>`), for a
    /// buffer argument; `None` where they count in units of the access's width.
    pub elem_type: Option<String>,
    /// Bytes the access touched: 16 for a `float4` read of a `float` buffer.
    pub access_bytes: u32,
    /// Read, write or atomic.
    pub access: FaultKind,
    /// `blockIdx` and `threadIdx` of the first thread that faulted.
    pub block: Dim3,
    pub thread: Dim3,
    /// The CUDA source file, 1-based line and column of the access.
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// The text of that line, when the file can be read.
    pub source_line: Option<String>,
    /// Where the code holding the access was inlined or expanded into (a `__device__`
    /// function's call site), when it was.
    pub inlined_at: Option<SourceLoc>,
    /// When the line is a macro invocation that generates the kernel: the macro's name and the
    /// line of its `#define`.
    pub macro_definition: Option<(String, u32)>,
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
    /// The condition text, at most 63 bytes.
    pub message: String,
    pub block: Dim3,
    pub thread: Dim3,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub source_line: Option<String>,
    pub inlined_at: Option<SourceLoc>,
    /// How many assertion failures and bad accesses the launch had in all.
    pub count: u32,
}

/// A bounds-checked launch's access at an address not aligned to its width
/// ([`Error::Misaligned`]): CUDA would raise a misaligned-address error (716) and poison the
/// context. Found on the device (the access was skipped: a read gave 0), or by the launch on
/// the host before the kernel ran, when a buffer argument itself is not aligned for the
/// widest access the kernel makes through it (an offset view).
///
/// [`Error::Misaligned`]: crate::Error::Misaligned
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Misaligned {
    pub kernel: Arc<str>,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    /// The buffer or array accessed, as named in the CUDA source, or `argument N`.
    pub buffer: String,
    /// The access's byte offset from the start of the buffer.
    pub byte_offset: i64,
    /// The address's remainder modulo the access width (its distance from alignment).
    pub misalignment: u32,
    /// The alignment the access needs: its width in bytes (16 for a `float4`).
    pub alignment: u32,
    /// Read, write or atomic.
    pub access: FaultKind,
    /// `blockIdx` and `threadIdx` of the first thread that faulted; `None` when the launch
    /// found the buffer's own address misaligned and did not run the kernel.
    pub block: Option<Dim3>,
    pub thread: Option<Dim3>,
    /// The CUDA source file, line and column of the access (for an argument: of the widest
    /// access through it).
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub source_line: Option<String>,
    pub inlined_at: Option<SourceLoc>,
    /// How many bad accesses the launch had (1 for an argument refused on the host).
    pub count: u32,
}

/// One argument of the launch as the fault mapping needs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ArgView {
    /// The device pointer of a buffer argument (0 for scalars).
    pub ptr: u64,
    /// Bytes of one element of a buffer argument (0 for scalars and raw addresses).
    pub elem_bytes: u32,
    /// The argument's Rust type (`std::any::type_name`: `cudarc::...::CudaSlice<f32>`), or
    /// empty; a report names a buffer argument's element type from it.
    pub ty: &'static str,
}

/// What the launch knew, for building the error.
pub(crate) struct FaultContext<'a> {
    pub kernel: &'a Arc<str>,
    pub site: &'static Location<'static>,
    pub config: LaunchConfig,
    pub build: &'a InstrumentedKernel,
    /// The kernel's source (for lines and parameter names).
    pub source: &'a CudaSource,
    /// The kernel's name as created (`scale<float>`), for finding its parameters' names.
    pub name: &'a str,
    /// Where the parameters' names come from when the source cannot tell them (a kernel made
    /// from PTX). A function, called only when a launch faulted: reading a library's module
    /// for its names on every bounds-checked launch would cost milliseconds.
    pub param_names: Option<ParamNames>,
    pub args: &'a [ArgView],
}

/// The parameter names of kernel `name` in `source`, for a fault report.
pub(crate) type ParamNames = fn(&CudaSource, &str) -> Vec<String>;

pub(super) fn dim3(v: [u32; 3]) -> Dim3 {
    Dim3::new(v[0], v[1], v[2])
}

/// The name the source model lists a kernel under: without template arguments or namespaces.
fn base_name(name: &str) -> &str {
    let base = name.split('<').next().unwrap_or(name);
    base.rsplit("::").next().unwrap_or(base).trim()
}

/// The parameter names of `name` in `source`, from the source model, following a kernel
/// generated by a macro invocation into its expansion.
pub(crate) fn param_names(source: &CudaSource, name: &str) -> Vec<String> {
    let name = base_name(name);
    let Ok(model) = parse_source(&source.text, &source.name) else {
        return Vec::new();
    };
    if let Some(k) = model.kernel(name) {
        return names_of(k);
    }
    // A kernel made by a macro: read each invocation's expansion, with object-like macros of
    // the file (`#define KERNEL extern "C" __global__`) expanded in it.
    let mut objects = Macros::new();
    for m in model.kernel_macros.iter().filter(|m| !m.function_like) {
        objects.define(Macro::object(&m.name, &m.body));
    }
    for m in model.kernel_macros.iter().filter(|m| m.function_like) {
        for inv in &m.invocations {
            let text = m.expansion(inv);
            if !text.contains(name) {
                continue;
            }
            let text = objects.expand_text(&text);
            if let Ok(expanded) = parse_source(&text, &source.name) {
                if let Some(k) = expanded.kernel(name) {
                    return names_of(k);
                }
            }
        }
    }
    names_through_included_macros(source, name).unwrap_or_default()
}

/// The parameter names of a kernel stamped out by a macro the source model does not follow: one
/// defined in a header the file includes with quotes (candle's `binary.cu` invokes
/// `BINARY_OP(float, badd_f32, x + y)` from `binary_op_macros.cuh`), or one whose body
/// invokes another macro that holds the kernel (`BINARY_OP` is `BINARY_OP_OUT(...)`). The
/// `#define`s of the file and of its quoted includes (relative to the file's directory,
/// followed a few levels deep) are read; each top-level invocation in the file that names the
/// kernel is expanded, nested invocations too, and the expansion parsed.
fn names_through_included_macros(source: &CudaSource, name: &str) -> Option<Vec<String>> {
    const MAX_FILES: usize = 32;
    let headers = text::include_closure(
        &source.text,
        source.dir.as_deref(),
        &text::SearchPath::default(),
        &text::Disk,
        &|h| h.quoted,
        MAX_FILES,
    );
    // The file's own definitions win over its headers'.
    let mut defs = Macros::new();
    for h in headers.iter().rev() {
        defs.add_defines(h.text.as_deref().unwrap_or(""));
    }
    defs.add_defines(&source.text);
    if !defs.iter().any(Macro::is_function_like) {
        return None;
    }
    let is_word = |text: &str| {
        text.match_indices(name).any(|(i, _)| {
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            !text[..i].chars().next_back().is_some_and(ident)
                && !text[i + name.len()..].chars().next().is_some_and(ident)
        })
    };
    // The invocations in the file that name the kernel: one per line that does.
    for line in source.text.lines().filter(|l| is_word(l)) {
        let start = source.text.find(line)?;
        let first = text::identifiers(line).next().unwrap_or("");
        if !defs.get(first).is_some_and(Macro::is_function_like) {
            continue;
        }
        let at = start + line.find(first)?;
        let open = at + first.len();
        let open = open + source.text[open..].len() - source.text[open..].trim_start().len();
        let Some((_, end)) = text::call_args(&source.text, open) else {
            continue;
        };
        let expanded = defs.expand_text(&source.text[at..end]);
        if let Ok(model) = parse_source(&expanded, &source.name) {
            if let Some(k) = model.kernel(name) {
                return Some(names_of(k));
            }
        }
    }
    None
}

fn names_of(k: &cudacheck_core::KernelDecl) -> Vec<String> {
    k.params
        .iter()
        .enumerate()
        .map(|(i, p)| p.name.clone().unwrap_or_else(|| format!("argument {i}")))
        .collect()
}

/// The macro whose invocation is on `line` of the main file, with its `#define` line.
fn macro_at(source: &CudaSource, line: u32) -> Option<(String, u32)> {
    let model = parse_source(&source.text, &source.name).ok()?;
    model.kernel_macros.iter().find_map(|m| {
        m.invocations
            .iter()
            .any(|i| i.location.line == line)
            .then(|| (m.name.clone(), m.location.line))
    })
}

/// Line `line` of `file`: the kernel's own source when NVRTC named it so, else the file read
/// from disk (headers), relative to the source's directory when not absolute.
pub(super) fn line_text(source: &CudaSource, file: &str, line: u32) -> Option<String> {
    let nth = |text: &str| {
        line.checked_sub(1)
            .and_then(|i| text.lines().nth(i as usize))
            .map(str::to_string)
    };
    // NVRTC may name an in-memory source by the working directory joined with its name.
    let in_memory = source.dir.is_none() && std::path::Path::new(file).ends_with(&source.name);
    if file == source.name || file.is_empty() || in_memory {
        return nth(&source.text);
    }
    let path = std::path::Path::new(file);
    let path = match (&source.dir, path.is_absolute()) {
        (Some(d), false) => d.join(path),
        _ => path.to_path_buf(),
    };
    nth(&std::fs::read_to_string(path).ok()?)
}

/// What a bounds-checked launch's fault record reports; `error` turns it into
/// [`Error::OutOfBounds`](crate::Error::OutOfBounds) or
/// [`Error::DeviceAssert`](crate::Error::DeviceAssert) (this module sits below `error`).
#[derive(Debug)]
pub(crate) enum Fault {
    OutOfBounds(Box<OutOfBounds>),
    Misaligned(Box<Misaligned>),
    DeviceAssert(Box<DeviceAssert>),
    SharedRace(Box<super::race::SharedRace>),
    BarrierMisuse(Box<super::race::BarrierMisuse>),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::OutOfBounds(o) => o.fmt(f),
            Fault::Misaligned(m) => m.fmt(f),
            Fault::DeviceAssert(d) => d.fmt(f),
            Fault::SharedRace(r) => r.fmt(f),
            Fault::BarrierMisuse(b) => b.fmt(f),
        }
    }
}

/// The report of a buffer argument whose own address is not aligned for `w`, the widest
/// access the kernel makes through it (the launch refuses it before the kernel runs).
pub(crate) fn misaligned_argument(cx: &FaultContext<'_>, w: &WidestAccess) -> Fault {
    let names = cx.param_names.unwrap_or(param_names)(cx.source, cx.name);
    let buffer = names
        .get(w.param as usize)
        .cloned()
        .unwrap_or_else(|| format!("argument {}", w.param));
    let ptr = cx.args.get(w.param as usize).map_or(0, |a| a.ptr);
    let (file, line, column) = match &w.loc {
        Some(l) => (l.file.clone(), l.line, l.column),
        None => (cx.source.name.clone(), 0, 0),
    };
    let source_line = line_text(cx.source, &file, line);
    Fault::Misaligned(Box::new(Misaligned {
        kernel: Arc::clone(cx.kernel),
        site: cx.site,
        config: cx.config,
        buffer,
        byte_offset: 0,
        misalignment: (ptr % u64::from(w.bytes.max(1))) as u32,
        alignment: w.bytes,
        access: FaultKind::Read,
        block: None,
        thread: None,
        file,
        line,
        column,
        source_line,
        inlined_at: None,
        count: 1,
    }))
}

/// The fault a record stands for, or `None` when nothing was recorded.
pub(crate) fn error_of(rec: &FaultRecord, cx: &FaultContext<'_>) -> Option<Fault> {
    if rec.faulted == 0 {
        return None;
    }
    let site = cx.build.site(rec.site);
    let loc = site.and_then(|s| s.loc.clone());
    let (file, line, column) = match &loc {
        Some(l) => (l.file.clone(), l.line, l.column),
        None => (cx.source.name.clone(), rec.assert_line, 0),
    };
    let source_line = line_text(cx.source, &file, line);
    let inlined_at = site.and_then(|s| s.inlined_at.clone());
    let kind = rec.fault_kind();
    if kind == Some(FaultKind::Assert) {
        return Some(Fault::DeviceAssert(Box::new(DeviceAssert {
            kernel: Arc::clone(cx.kernel),
            site: cx.site,
            config: cx.config,
            message: rec.message(),
            block: dim3(rec.block),
            thread: dim3(rec.thread),
            file,
            line: if line == 0 { rec.assert_line } else { line },
            column,
            source_line,
            inlined_at,
            count: rec.count,
        })));
    }
    let names = cx.param_names.unwrap_or(param_names)(cx.source, cx.name);
    let name_of = |k: u32| {
        names
            .get(k as usize)
            .cloned()
            .unwrap_or_else(|| format!("argument {k}"))
    };
    let access_bytes = rec.bytes.max(1);
    // Which parameter, and the element size to count in.
    let param = match site.map(|s| &s.target) {
        Some(Target::Param(k)) => Some(*k),
        Some(Target::OneOf(targets)) => targets.iter().find_map(|t| match t {
            Target::Param(k)
                if cx
                    .args
                    .get(*k as usize)
                    .is_some_and(|a| a.ptr == rec.base()) =>
            {
                Some(*k)
            }
            _ => None,
        }),
        _ => None,
    };
    // The unit of the index: a buffer argument's Rust element, else the access's width.
    let (buffer, elem_bytes, elem_type) = match (param, site.map(|s| &s.target)) {
        (Some(k), _) => {
            let arg = cx.args.get(k as usize).copied().unwrap_or_default();
            match arg.elem_bytes {
                0 => (name_of(k), access_bytes, None),
                e => (name_of(k), e, element_type(arg.ty)),
            }
        }
        (None, Some(Target::Var(v))) => (v.clone(), access_bytes, None),
        (None, Some(Target::OneOf(ts))) => {
            let list: Vec<String> = ts
                .iter()
                .map(|t| match t {
                    Target::Param(k) => format!("`{}`", name_of(*k)),
                    Target::Var(v) => format!("`{v}`"),
                    _ => "?".to_string(),
                })
                .collect();
            (format!("one of {}", list.join(", ")), access_bytes, None)
        }
        _ => ("?".to_string(), access_bytes, None),
    };
    // Inside the buffer but at an address not aligned to the access's width: the device
    // check failed for alignment (`emit.rs`), not for bounds.
    let base = match param {
        Some(k) => cx.args.get(k as usize).map_or(0, |a| a.ptr),
        None => rec.base(),
    };
    let inside =
        rec.offset >= 0 && (rec.offset as u64).saturating_add(u64::from(access_bytes)) <= rec.len;
    let rem = base.wrapping_add(rec.offset as u64) % u64::from(access_bytes);
    if inside && access_bytes > 1 && access_bytes.is_power_of_two() && rem != 0 {
        return Some(Fault::Misaligned(Box::new(Misaligned {
            kernel: Arc::clone(cx.kernel),
            site: cx.site,
            config: cx.config,
            buffer,
            byte_offset: rec.offset,
            misalignment: rem as u32,
            alignment: access_bytes,
            access: kind.unwrap_or(FaultKind::Read),
            block: Some(dim3(rec.block)),
            thread: Some(dim3(rec.thread)),
            file,
            line,
            column,
            source_line,
            inlined_at,
            count: rec.count,
        })));
    }
    let e = i64::from(elem_bytes);
    Some(Fault::OutOfBounds(Box::new(OutOfBounds {
        kernel: Arc::clone(cx.kernel),
        site: cx.site,
        config: cx.config,
        buffer,
        index: rec.offset.div_euclid(e),
        len: rec.len / u64::from(elem_bytes),
        elem_bytes,
        elem_type,
        access_bytes,
        // An unknown code is still a bad access; "read" is the mildest claim.
        access: kind.unwrap_or(FaultKind::Read),
        block: dim3(rec.block),
        thread: dim3(rec.thread),
        macro_definition: if file == cx.source.name {
            macro_at(cx.source, line)
        } else {
            None
        },
        file,
        line,
        column,
        source_line,
        inlined_at,
        count: rec.count,
    })))
}

/// `  --> file:line:col`, the line, and a caret under the column, as rustc prints them.
pub(super) fn snippet(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    line: u32,
    column: u32,
    source_line: Option<&str>,
) -> fmt::Result {
    let num = line.to_string();
    let pad = " ".repeat(num.len());
    if line == 0 {
        // A kernel made from PTX without `.loc` directives.
        return write!(
            f,
            "\n{pad}--> {file} (no line information: build the PTX with `nvcc -lineinfo`, or \
             NVRTC's `--generate-line-info`, to see the source line)"
        );
    }
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

pub(super) fn launched(
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

/// The element type of a buffer argument's Rust type, without module paths:
/// `cudarc::driver::safe::core::CudaSlice<half::binary16::f16>` gives `f16` (the last generic
/// argument, so `CudaView<'_, T>` gives `T` too); `None` for a type with no generic argument.
pub(crate) fn element_type(arg_type: &str) -> Option<String> {
    let inner = &arg_type[arg_type.find('<')? + 1..arg_type.rfind('>')?];
    // The last argument at the top level.
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    let last = inner[start..].trim();
    // Each path keeps its last segment: `half::binary16::f16` is `f16`.
    let mut out = String::new();
    let mut word = String::new();
    for c in last.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(""));
            word.clear();
            out.push(c);
        }
    }
    out.pop();
    (!out.is_empty()).then_some(out)
}

pub(super) fn plural(n: u64, one: &str, many: &str) -> String {
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
        write!(f, ": {} of `{b}`: index {} (in ", self.access, self.index)?;
        match &self.elem_type {
            Some(t) => write!(f, "`{t}` elements)")?,
            None if self.elem_bytes == self.access_bytes => {
                write!(f, "{}-byte elements, the access's width)", self.elem_bytes)?
            }
            None => write!(f, "{}-byte elements)", self.elem_bytes)?,
        }
        if self.index < 0 {
            write!(f, ", before its start")?;
        } else {
            let len = plural(self.len, "element", "elements");
            write!(f, ", but `{b}` has {len}")?;
        }
        if self.access_bytes > self.elem_bytes {
            let per = i64::from(self.access_bytes / self.elem_bytes.max(1));
            let end = self.index + per;
            write!(
                f,
                " (a {}-byte access covers elements {}..{end}",
                self.access_bytes, self.index
            )?;
            if (0..self.len as i64).contains(&self.index) {
                write!(f, ": a partial trailing vector is out of bounds")?;
            }
            write!(f, ")")?;
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
        if let Some((m, def)) = &self.macro_definition {
            write!(
                f,
                "\n{pad} = in the kernel that macro `{m}` (defined at {}:{def}) expands to here",
                self.file
            )?;
        }
        if let Some(at) = &self.inlined_at {
            write!(f, "\n{pad} = in code inlined into {at}")?;
        }
        let effect = match self.access {
            FaultKind::Write => "the write was skipped",
            FaultKind::Read => "the read gave 0",
            FaultKind::CollectiveRead => {
                "the lane's row was read from the start of the array instead (a warp-collective \
                 read cannot be skipped for one lane)"
            }
            _ => "the access was skipped",
        };
        write!(
            f,
            "\n{pad} = {} in this launch (the first is shown); {effect}, so no memory outside \
             `{b}` was touched and the context is still usable. Check the index computation \
             and its guard against the length passed for `{b}`",
            plural(
                u64::from(self.count),
                "out-of-bounds access",
                "out-of-bounds accesses"
            )
        )
    }
}

impl fmt::Display for Misaligned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launched(f, &self.kernel, self.site, &self.config)?;
        let b = &self.buffer;
        let n = self.alignment;
        let access = match self.access {
            FaultKind::Write => "write",
            FaultKind::ReadWrite => "read-modify-write",
            FaultKind::Atomic => "atomic",
            _ => "read",
        };
        match (self.block, self.thread) {
            (Some(block), Some(thread)) => write!(
                f,
                ": misaligned {n}-byte {access} of `{b}` at byte {} (an address {} bytes past \
                 a multiple of {n}; a {n}-byte access needs a {n}-byte aligned address); first \
                 by thread {thread} of block {block}",
                self.byte_offset, self.misalignment
            )?,
            _ => write!(
                f,
                ": the address passed for `{b}` is {} bytes past a multiple of {n}, but the \
                 kernel makes {n}-byte accesses through it, which need {n}-byte aligned \
                 addresses; the launch was refused before the kernel ran",
                self.misalignment
            )?,
        }
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
        let effect = match (self.thread, self.access) {
            (None, _) => "nothing ran",
            (_, FaultKind::Write) => "the write was skipped",
            (_, FaultKind::Read) => "the read gave 0",
            _ => "the access was skipped",
        };
        write!(
            f,
            "\n{pad} = {} in this launch (the first is shown); {effect}, so CUDA raised no \
             misaligned-address error and the context is still usable. Keep `{b}`'s address and \
             the access's byte offset multiples of {n} (a view must start at such an offset), \
             or use narrower accesses where they cannot be",
            plural(
                u64::from(self.count),
                "misaligned access",
                "misaligned accesses"
            )
        )
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
        if let Some(at) = &self.inlined_at {
            write!(f, "\n{pad} = in code inlined into {at}")?;
        }
        write!(
            f,
            "\n{pad} = {} in this launch (the first is shown); the failure was recorded and the \
             thread ended instead of trapping, so the context is still usable",
            plural(u64::from(self.count), "failure", "failures")
        )
    }
}

impl std::error::Error for OutOfBounds {}
impl std::error::Error for Misaligned {}
impl std::error::Error for DeviceAssert {}

#[cfg(test)]
mod tests {
    use super::*;
    use cudacheck_core::instrument::{Coverage, Site, SiteKind};

    const SRC: &str = "extern \"C\" __global__ void saxpy(float* y, const float* x, float a, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i <= n) y[i] = a * x[i] + y[i];\n    assert(i < n);\n}\n";

    fn build() -> InstrumentedKernel {
        let loc = |line, column| {
            Some(SourceLoc {
                file: "saxpy.cu".into(),
                line,
                column,
            })
        };
        InstrumentedKernel {
            symbol: "saxpy".into(),
            name: "saxpy".into(),
            num_params: 4,
            sites: vec![
                Site {
                    id: 7,
                    loc: loc(4, 17),
                    inlined_at: None,
                    target: Target::Param(0),
                    kind: SiteKind::Write,
                    bytes: 4,
                },
                Site {
                    id: 8,
                    loc: loc(5, 5),
                    inlined_at: None,
                    target: Target::Assert,
                    kind: SiteKind::Assert,
                    bytes: 0,
                },
                Site {
                    id: 9,
                    loc: loc(4, 26),
                    inlined_at: None,
                    target: Target::OneOf(vec![Target::Param(0), Target::Param(1)]),
                    kind: SiteKind::Read,
                    bytes: 16,
                },
                // A `float4` read of a `__shared__ float tile[256]`.
                Site {
                    id: 10,
                    loc: loc(4, 17),
                    inlined_at: None,
                    target: Target::Var("tile".into()),
                    kind: SiteKind::Read,
                    bytes: 16,
                },
            ],
            coverage: Coverage::default(),
            host_checks: Vec::new(),
            widest: vec![WidestAccess {
                param: 1,
                bytes: 16,
                loc: loc(4, 26),
            }],
            races: None,
            init: None,
            alloc_bases: false,
            slots: Vec::new(),
        }
    }

    #[test]
    fn in_memory_sources_give_their_lines_under_the_name_nvrtc_writes() {
        let src = CudaSource {
            name: "k.cu".into(),
            text: "a\nb\nc\n".into(),
            dir: None,
        };
        assert_eq!(line_text(&src, "k.cu", 2).as_deref(), Some("b"));
        assert_eq!(line_text(&src, "/some/cwd/k.cu", 3).as_deref(), Some("c"));
        assert_eq!(line_text(&src, "/some/cwd/other.cu", 3), None);
    }

    /// What `std::any::type_name` gives for a buffer argument of `f32`s.
    const F32_SLICE: &str = "cudarc::driver::safe::core::CudaSlice<f32>";

    fn run(rec: &FaultRecord) -> Option<Fault> {
        run_with(rec, build(), None)
    }

    fn run_with(
        rec: &FaultRecord,
        b: InstrumentedKernel,
        param_names: Option<ParamNames>,
    ) -> Option<Fault> {
        let args = [
            ArgView {
                ptr: 0x1000,
                elem_bytes: 4,
                ty: F32_SLICE,
            },
            ArgView {
                ptr: 0x2000,
                elem_bytes: 4,
                ty: F32_SLICE,
            },
            ArgView::default(),
            ArgView::default(),
        ];
        run_on(rec, b, param_names, &args)
    }

    fn run_on(
        rec: &FaultRecord,
        b: InstrumentedKernel,
        param_names: Option<ParamNames>,
        args: &[ArgView],
    ) -> Option<Fault> {
        let k: Arc<str> = "saxpy".into();
        let src = CudaSource::from_str("saxpy.cu", SRC);
        let cx = FaultContext {
            kernel: &k,
            site: Location::caller(),
            config: LaunchConfig::new(Dim3::x(5), Dim3::x(256)),
            build: &b,
            source: &src,
            name: "saxpy",
            param_names,
            args,
        };
        error_of(rec, &cx)
    }

    fn faulted(site: u32, kind: FaultKind, offset: i64, len: u64, bytes: u32) -> FaultRecord {
        let mut r = FaultRecord::empty();
        r.faulted = 1;
        r.count = 2;
        r.site = site;
        r.kind = kind.code();
        r.offset = offset;
        r.len = len;
        r.bytes = bytes;
        r.block = [3, 0, 0];
        r.thread = [232, 0, 0];
        r
    }

    /// A kernel made from PTX without `.loc`: the parameter by its index, and how to get lines.
    #[test]
    fn a_ptx_kernel_without_line_information_says_how_to_get_it() {
        let mut b = build();
        b.sites[0].loc = None;
        fn from_ptx(_: &CudaSource, _: &str) -> Vec<String> {
            ["argument 0", "argument 1", "a", "n"]
                .map(String::from)
                .to_vec()
        }
        let e = run_with(
            &faulted(7, FaultKind::Write, 4000, 4000, 4),
            b,
            Some(from_ptx),
        )
        .unwrap();
        let Fault::OutOfBounds(o) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (o.buffer.as_str(), o.index, o.line),
            ("argument 0", 1000, 0)
        );
        let text = e.to_string();
        assert!(
            text.contains("out-of-bounds write of `argument 0`: index 1000"),
            "{text}"
        );
        assert!(
            text.contains("no line information: build the PTX with `nvcc -lineinfo`"),
            "{text}"
        );
    }

    #[test]
    fn an_empty_record_is_no_error() {
        assert!(run(&FaultRecord::empty()).is_none());
    }

    #[test]
    fn out_of_bounds_names_the_parameter_in_elements_with_a_caret() {
        let e = run(&faulted(7, FaultKind::Write, 4000, 4000, 4)).unwrap();
        let Fault::OutOfBounds(o) = &e else {
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
                "out-of-bounds write of `y`: index 1000 (in `f32` elements), but `y` has 1000 \
                 elements; first by thread (232, 0, 0) of block (3, 0, 0)\n --> saxpy.cu:4:17\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "\n4 |     if (i <= n) y[i] = a * x[i] + y[i];\n  |                 ^\n  = 2 \
                 out-of-bounds accesses in this launch"
            ),
            "{text}"
        );
        assert!(text.contains("the write was skipped"), "{text}");
    }

    #[test]
    fn a_redirected_collective_read_says_what_the_lane_read_instead() {
        let e = run(&faulted(7, FaultKind::CollectiveRead, 4000, 4000, 4)).unwrap();
        let Fault::OutOfBounds(o) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(o.access, FaultKind::CollectiveRead);
        let text = e.to_string();
        assert!(
            text.contains("out-of-bounds read of `y`: index 1000"),
            "{text}"
        );
        assert!(
            text.contains("the lane's row was read from the start of the array instead"),
            "{text}"
        );
        assert!(!text.contains("the read gave 0"), "{text}");
    }

    #[test]
    fn negative_offsets_say_before_its_start() {
        let text = run(&faulted(7, FaultKind::Read, -4, 32, 4))
            .unwrap()
            .to_string();
        assert!(
            text.contains("index -1 (in `f32` elements), before its start;"),
            "{text}"
        );
    }

    #[test]
    fn an_unaligned_wide_access_inside_its_buffer_is_misaligned_not_out_of_bounds() {
        // `x` (at 0x2000) read 16 bytes at a time from byte 4: inside its 64 bytes, but at an
        // address 4 past a multiple of 16.
        let mut r = faulted(9, FaultKind::Read, 4, 64, 16);
        r.msg[..8].copy_from_slice(&0x2000u64.to_le_bytes());
        let e = run(&r).unwrap();
        let Fault::Misaligned(m) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (
                m.buffer.as_str(),
                m.byte_offset,
                m.misalignment,
                m.alignment
            ),
            ("x", 4, 4, 16)
        );
        assert_eq!(m.thread, Some(Dim3::new(232, 0, 0)));
        let text = e.to_string();
        assert!(
            text.contains(
                "misaligned 16-byte read of `x` at byte 4 (an address 4 bytes past a multiple \
                 of 16; a 16-byte access needs a 16-byte aligned address); first by thread \
                 (232, 0, 0) of block (3, 0, 0)"
            ),
            "{text}"
        );
        assert!(text.contains("the read gave 0"), "{text}");
        assert!(text.contains("context is still usable"), "{text}");
        // The same offset past the end is out of bounds.
        let mut r = faulted(9, FaultKind::Read, 52, 64, 16);
        r.msg[..8].copy_from_slice(&0x2000u64.to_le_bytes());
        assert!(matches!(run(&r), Some(Fault::OutOfBounds(_))));
    }

    #[test]
    fn a_misaligned_argument_is_reported_before_the_kernel_runs() {
        let b = build();
        let k: Arc<str> = "saxpy".into();
        let src = CudaSource::from_str("saxpy.cu", SRC);
        let args = [
            ArgView {
                ptr: 0x1000,
                elem_bytes: 4,
                ty: F32_SLICE,
            },
            // An offset view: one float past a 16-byte aligned allocation.
            ArgView {
                ptr: 0x2004,
                elem_bytes: 4,
                ty: F32_SLICE,
            },
        ];
        let ptrs = [0x1000u64, 0x2004];
        let w = b.misaligned_argument(&ptrs).expect("x is misaligned");
        assert_eq!((w.param, w.bytes), (1, 16));
        assert!(b.misaligned_argument(&[0x1000, 0x2010]).is_none());
        let cx = FaultContext {
            kernel: &k,
            site: Location::caller(),
            config: LaunchConfig::new(Dim3::x(5), Dim3::x(256)),
            build: &b,
            source: &src,
            name: "saxpy",
            param_names: None,
            args: &args,
        };
        let e = misaligned_argument(&cx, w);
        let Fault::Misaligned(m) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (m.buffer.as_str(), m.misalignment, m.thread),
            ("x", 4, None)
        );
        let text = e.to_string();
        assert!(
            text.contains(
                "the address passed for `x` is 4 bytes past a multiple of 16, but the kernel \
                 makes 16-byte accesses through it"
            ),
            "{text}"
        );
        assert!(text.contains(" --> saxpy.cu:4:26"), "{text}");
        assert!(text.contains("nothing ran"), "{text}");
    }

    #[test]
    fn a_vector_access_over_the_end_says_which_elements() {
        let mut r = faulted(9, FaultKind::Read, 32, 40, 16);
        r.msg[..8].copy_from_slice(&0x2000u64.to_le_bytes());
        let e = run(&r).unwrap();
        let Fault::OutOfBounds(o) = &e else {
            panic!("{e:?}")
        };
        // The base names the buffer among the two the pointer could hold.
        assert_eq!((o.buffer.as_str(), o.index, o.len), ("x", 8, 10));
        assert!(
            e.to_string()
                .contains("a 16-byte access covers elements 8..12"),
            "{e}"
        );
    }

    #[test]
    fn element_types_come_from_the_argument_type_without_paths() {
        let t = |s| element_type(s);
        assert_eq!(
            t("cudarc::driver::safe::core::CudaSlice<half::binary16::f16>").as_deref(),
            Some("f16")
        );
        assert_eq!(
            t("cudarc::driver::safe::core::CudaView<f32>").as_deref(),
            Some("f32")
        );
        assert_eq!(
            t("a::CudaView<'_, b::Pair<c::P, u8>>").as_deref(),
            Some("Pair<P, u8>")
        );
        assert_eq!(t("a::CudaSlice<[f32; 4]>").as_deref(), Some("[f32; 4]"));
        assert_eq!(t("u64"), None);
        assert_eq!(t(""), None);
    }

    /// A `__half2` (4-byte) read through a `CudaSlice<f16>`: the index counts the buffer's
    /// `f16` elements, not the access's `__half2`s, and the report says so.
    #[test]
    fn a_half2_read_of_an_f16_buffer_counts_in_f16_elements() {
        let args = [ArgView {
            ptr: 0x1000,
            elem_bytes: 2,
            ty: "cudarc::driver::safe::core::CudaSlice<half::binary16::f16>",
        }];
        let e = run_on(
            &faulted(7, FaultKind::Read, 2048, 2048, 4),
            build(),
            None,
            &args,
        )
        .unwrap();
        let Fault::OutOfBounds(o) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (o.index, o.len, o.elem_bytes, o.access_bytes),
            (1024, 1024, 2, 4)
        );
        assert_eq!(o.elem_type.as_deref(), Some("f16"));
        let text = e.to_string();
        assert!(
            text.contains(
                "out-of-bounds read of `y`: index 1024 (in `f16` elements), but `y` has 1024 \
                 elements (a 4-byte access covers elements 1024..1026); first by thread"
            ),
            "{text}"
        );
        // Starting inside and ending past the end: the vector's tail is what is out.
        let text = run_on(
            &faulted(7, FaultKind::Read, 2046, 2048, 4),
            build(),
            None,
            &args,
        )
        .unwrap()
        .to_string();
        assert!(
            text.contains(
                "index 1023 (in `f16` elements), but `y` has 1024 elements (a 4-byte access \
                 covers elements 1023..1025: a partial trailing vector is out of bounds)"
            ),
            "{text}"
        );
    }

    /// An array has no Rust element type: its index counts units of the access's width.
    #[test]
    fn an_array_index_counts_in_the_access_width_and_says_so() {
        let e = run(&faulted(10, FaultKind::Read, 1024, 1024, 16)).unwrap();
        let Fault::OutOfBounds(o) = &e else {
            panic!("{e:?}")
        };
        assert_eq!((o.index, o.len, o.elem_type.as_deref()), (64, 64, None));
        let text = e.to_string();
        assert!(
            text.contains(
                "out-of-bounds read of `tile`: index 64 (in 16-byte elements, the access's \
                 width), but `tile` has 64 elements; first by"
            ),
            "{text}"
        );
    }

    #[test]
    fn assert_records_name_the_condition_and_line() {
        let mut r = faulted(8, FaultKind::Assert, 0, 0, 0);
        r.count = 24;
        r.assert_line = 5;
        r.msg[..5].copy_from_slice(b"i < n");
        let e = run(&r).unwrap();
        let Fault::DeviceAssert(d) = &e else {
            panic!("{e:?}")
        };
        assert_eq!((d.message.as_str(), d.line, d.count), ("i < n", 5, 24));
        let text = e.to_string();
        assert!(
            text.contains("assertion `i < n` failed in thread (232, 0, 0)"),
            "{text}"
        );
        assert!(text.contains("5 |     assert(i < n);"), "{text}");
        assert!(text.contains("24 failures in this launch"), "{text}");
    }

    #[test]
    fn names_of_macro_generated_kernels_come_from_the_expansion() {
        let src = CudaSource::from_str(
            "u.cu",
            "#define UNARY(T, NAME) extern \"C\" __global__ void NAME(const T* inp, T* out, size_t n) { out[0] = inp[0]; }\nUNARY(float, neg_f32)\n",
        );
        assert_eq!(param_names(&src, "neg_f32"), vec!["inp", "out", "n"]);
        assert_eq!(macro_at(&src, 2), Some(("UNARY".to_string(), 1)));
    }

    #[test]
    fn names_survive_a_kernel_keyword_behind_a_macro() {
        let src = CudaSource::from_str(
            "u.cu",
            "#define KERNEL extern \"C\" __global__\n#define UNARY(T, NAME) KERNEL void NAME(const T* inp, T* out) { out[0] = inp[0]; }\nUNARY(float, neg_f32)\n",
        );
        assert_eq!(param_names(&src, "neg_f32"), vec!["inp", "out"]);
    }
    /// candle's binary kernels: the file invokes `BINARY_OP(...)`, defined in a header it
    /// includes as `BINARY_OP_OUT(...)`, the macro that holds `__global__`.
    #[test]
    fn names_come_from_macros_in_included_headers_and_nested_macros() {
        let dir = std::env::temp_dir().join(format!("cudacheck-names-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("inc")).unwrap();
        std::fs::write(
            dir.join("ops.cuh"),
            "#include \"inc/util.cuh\"\n#define OP_OUT(T, OUT_T, NAME, F) \\\nKERNEL void NAME( \\\n    const size_t numel, \\\n    const T *lhs, \\\n    const T *rhs, \\\n    OUT_T *out) { \\\n  size_t i = blockIdx.x; if (i < numel) { T x = lhs[i]; T y = rhs[i]; out[i] = F; } \\\n}\n\n#define OP(T, NAME, F) \\\n  OP_OUT(T, T, NAME, F)\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("inc/util.cuh"),
            "#define KERNEL extern \"C\" __global__\n",
        )
        .unwrap();
        let file = dir.join("binary.cu");
        std::fs::write(
            &file,
            "#include \"ops.cuh\"\n#include <stdint.h>\n\nOP(float, add_f32, x + y)\nOP(double, max_f64, maxg(x, y))\nOP_OUT(float, uint8_t, eq_f32, x == y)\n",
        )
        .unwrap();
        let src = CudaSource::from_file(&file).unwrap();
        let want = vec!["numel", "lhs", "rhs", "out"];
        assert_eq!(param_names(&src, "add_f32"), want);
        assert_eq!(param_names(&src, "max_f64"), want);
        assert_eq!(param_names(&src, "eq_f32"), want);
        assert!(param_names(&src, "sub_f32").is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
