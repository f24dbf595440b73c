//! Bounds-checking instrumentation: a source-to-source rewrite of CUDA kernels so that every
//! access through a kernel's pointer parameters and fixed-size arrays is checked at run time.
//!
//! [`instrument`] rewrites a `.cu` file so that:
//!
//! 1. each `__global__` kernel takes two hidden trailing parameters, `__cc_len` (the element
//!    count of each pointer parameter, indexed by the parameter's ordinal, then the dynamic
//!    shared-memory bytes at index `num_params`) and `__cc_rec` (a [`FaultRecord`]);
//! 2. `p[i]`, `*(p + i)`, `p->f`, `atomicAdd(&p[i], v)`, `row[j]` for `T* row = p + off`,
//!    `tile[i][j]` for `__shared__ T tile[N][M]` and `s[i]` for `extern __shared__ T s[]` become
//!    calls to the prelude's `__cc_at*` helpers, which return a reference to the element when the
//!    index is in range and otherwise record the first fault and hand back a zeroed dummy, so an
//!    out-of-bounds write is dropped and an out-of-bounds read gives 0;
//! 3. `assert(cond)` and `CUDACHECK_ASSERT(cond, msg)` record the condition, line and thread
//!    instead of trapping (a trap would poison the CUDA context);
//! 4. a `for` loop whose checked indices move monotonically with its counter (or not at all)
//!    is versioned: the checks run once before it, at the counter's first and last value, and
//!    the loop then runs as a copy without them; when they fail, a fully checked copy runs.
//!    Only where that is provably sound (see the `rewrite::hoist` module: no barrier or call
//!    that might hold one inside, counter and bounds that cannot change, 64-bit arithmetic);
//!    [`Coverage::hoisted`] counts these accesses;
//! 5. line numbers stay put: nothing adds a newline inside the user's code except a versioned
//!    loop's second copy, which starts with a `#line` directive back to the loop's own line, and
//!    a `#line 1` directive after the injected prelude makes NVRTC's diagnostics and `__LINE__`
//!    refer to the user's file ([`final_line`] checks this).
//!
//! Every check gets a [`Site`]; the runtime maps a record's `site` back to file, line, column
//! and buffer name. Accesses the rewriter cannot check are listed in each kernel's [`Coverage`]
//! with a [`SkipReason`], and [`render_report`] prints them.
//!
//! ```
//! use cudacheck_core::instrument::{instrument, InstrumentOptions};
//!
//! let src = "extern \"C\" __global__ void saxpy(float* y, const float* x, float a, int n)\n{\n    int i = threadIdx.x;\n    y[i] = a * x[i] + y[i];\n}\n";
//! let out = instrument(src, "saxpy.cu", &InstrumentOptions::default()).unwrap();
//! let k = &out.kernels[0];
//! assert_eq!(k.coverage.instrumented, 3);
//! assert!(out.source.contains("__cc_record* __cc_rec)"));
//! ```

mod coverage;
mod prelude;
mod record;
mod rewrite;
mod scan;
mod syntax;

use std::fmt::Write as _;

use thiserror::Error;

pub use coverage::{Coverage, Site, SiteKind, SkipReason, SkippedAccess};
pub use prelude::{prelude, prelude_lines};
pub use record::{decode, FaultKind, FaultRecord, MSG_BYTES, RECORD_BYTES};

/// What to rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstrumentOptions {
    /// Put `file:line: ` before an assertion's condition in the record's 64-byte message.
    /// Off by default: the site table already knows the file and line.
    pub file_name_in_records: bool,
    /// Rewrite `assert(cond)` to record instead of trapping. On by default.
    pub rewrite_asserts: bool,
    /// Also check fixed-size local arrays (`float w[25]`). On by default; the check takes the
    /// array's address, which can move a register-resident array to local memory.
    pub check_local_arrays: bool,
}

impl Default for InstrumentOptions {
    fn default() -> Self {
        Self {
            file_name_in_records: false,
            rewrite_asserts: true,
            check_local_arrays: true,
        }
    }
}

/// Which hidden parameter the runtime must append to an instrumented kernel's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HiddenRole {
    /// `const unsigned long long* __cc_len`: `num_params + 1` entries; entry `k` is the element
    /// count of the pointer parameter with ordinal `k` (anything for non-pointers), the last is
    /// the launch's dynamic shared-memory size in bytes.
    Lengths,
    /// `__cc_record* __cc_rec`: one zeroed [`FaultRecord`] in device memory.
    Record,
}

/// A parameter the instrumenter appended to a kernel's parameter list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HiddenParam {
    pub name: &'static str,
    /// The CUDA type, as written in the rewritten signature.
    pub cuda_type: &'static str,
    pub role: HiddenRole,
}

/// The hidden parameters, in the order they follow the user's parameters.
pub const HIDDEN_PARAMS: [HiddenParam; 2] = [
    HiddenParam {
        name: "__cc_len",
        cuda_type: "const unsigned long long*",
        role: HiddenRole::Lengths,
    },
    HiddenParam {
        name: "__cc_rec",
        cuda_type: "__cc_record*",
        role: HiddenRole::Record,
    },
];

/// One rewritten `__global__` function definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentedKernel {
    /// The name as written (without template arguments or namespace).
    pub name: String,
    /// 1-based line of the definition.
    pub line: u32,
    /// How many parameters the user wrote; the hidden ones come after.
    pub num_params: u32,
    /// `(ordinal, name)` of each pointer parameter: the entries of `__cc_len` that matter.
    pub pointer_params: Vec<(u32, String)>,
    /// The appended parameters ([`HIDDEN_PARAMS`]).
    pub hidden_params: Vec<HiddenParam>,
    /// Every checked access and assertion, by site id.
    pub sites: Vec<Site>,
    pub coverage: Coverage,
}

impl InstrumentedKernel {
    /// The site with this id, if it belongs to this kernel.
    pub fn site(&self, id: u32) -> Option<&Site> {
        self.sites.iter().find(|s| s.id == id)
    }

    /// How many entries the `__cc_len` array needs: one per parameter plus the dynamic
    /// shared-memory bytes.
    pub fn len_slots(&self) -> usize {
        self.num_params as usize + 1
    }
}

/// An instrumented source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instrumented {
    pub file_name: String,
    /// The prelude, a `#line 1` directive, then the rewritten user source.
    pub source: String,
    /// The kernels that were rewritten, in source order. A kernel not listed (generated by a
    /// macro, or unreadable to the parser) takes no hidden parameters.
    pub kernels: Vec<InstrumentedKernel>,
}

impl Instrumented {
    /// The first rewritten kernel with this name.
    pub fn kernel(&self, name: &str) -> Option<&InstrumentedKernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The kernel and site a fault record's `site` refers to.
    pub fn site(&self, id: u32) -> Option<(&InstrumentedKernel, &Site)> {
        self.kernels.iter().find_map(|k| k.site(id).map(|s| (k, s)))
    }
}

/// Why a file could not be instrumented.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InstrumentError {
    #[error(
        "{file_name}:{line}: byte {offset} is a NUL byte; CUDA source cannot contain NUL bytes \
         (is this a binary file?)"
    )]
    NulByte {
        file_name: String,
        offset: usize,
        line: u32,
    },
    #[error("the CUDA grammar could not be loaded into tree-sitter: {reason}")]
    Grammar { reason: String },
    #[error("{file_name}: the CUDA parser gave up on this file, so nothing was instrumented")]
    ParseFailed { file_name: String },
}

/// Rewrites every `__global__` kernel of `text` to check its accesses at run time.
///
/// `file_name` names the file in the `#line` directive and in [`render_report`]. The result's
/// source compiles under NVRTC wherever the original did; kernels the parser cannot read are
/// left as written (and are not listed in [`Instrumented::kernels`]).
///
/// # Errors
///
/// [`InstrumentError::NulByte`] when `text` contains a NUL byte;
/// [`InstrumentError::ParseFailed`] or [`InstrumentError::Grammar`] when tree-sitter cannot
/// run. Syntax errors inside a kernel are not errors: that code is left unchecked and reported
/// as [`SkipReason::SyntaxError`].
pub fn instrument(
    text: &str,
    file_name: &str,
    opts: &InstrumentOptions,
) -> Result<Instrumented, InstrumentError> {
    rewrite::run(text, file_name, opts)
}

/// The line number C gives the last line of `text`, following `#line N` directives: the
/// rewrite keeps it equal to the input's (a versioned loop's second copy starts with `#line`),
/// so diagnostics and `__LINE__` after any rewrite still point at the user's lines.
pub fn final_line(text: &str) -> u64 {
    line_state(text).0
}

/// The line number of `text`'s last line and the file name the last `#line N "name"` set (as
/// written, still escaped), following `#line` directives the way the preprocessor numbers lines.
pub(crate) fn line_state(text: &str) -> (u64, Option<&str>) {
    let (mut next, mut current, mut file) = (1u64, 1u64, None);
    for line in text.split('\n') {
        let Some(rest) = line.trim_start().strip_prefix("#line ") else {
            current = next;
            next += 1;
            continue;
        };
        let rest = rest.trim_start();
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<u64>() {
            Ok(n) => {
                next = n;
                let name = rest[digits..].trim();
                if name.len() >= 2 && name.starts_with('"') && name.ends_with('"') {
                    file = Some(&name[1..name.len() - 1]);
                }
            }
            // Not a directive the preprocessor would accept: an ordinary line here.
            Err(_) => {
                current = next;
                next += 1;
            }
        }
    }
    (current, file)
}

/// A report for a person: per kernel, how many accesses are checked and which are not, with
/// `file:line:column` and the reason.
pub fn render_report(inst: &Instrumented) -> String {
    let mut out = String::new();
    let n = inst.kernels.len();
    let _ = writeln!(
        out,
        "{}: {} kernel{} instrumented",
        inst.file_name,
        n,
        if n == 1 { "" } else { "s" }
    );
    for k in &inst.kernels {
        let c = &k.coverage;
        let asserts = k
            .sites
            .iter()
            .filter(|s| s.kind == SiteKind::Assert)
            .count();
        let _ = write!(
            out,
            "  kernel `{}` (line {}): {} access{} checked",
            k.name,
            k.line,
            c.instrumented,
            if c.instrumented == 1 { "" } else { "es" }
        );
        if c.hoisted > 0 {
            let _ = write!(out, " ({} once per loop)", c.hoisted);
        }
        if asserts > 0 {
            let _ = write!(
                out,
                ", {asserts} assertion{}",
                if asserts == 1 { "" } else { "s" }
            );
        }
        if c.skipped.is_empty() {
            let _ = writeln!(out, ", none left unchecked");
            continue;
        }
        let _ = writeln!(out, ", {} left unchecked:", c.skipped.len());
        for s in &c.skipped {
            let _ = writeln!(
                out,
                "    {}:{}:{}: `{}`: {}",
                inst.file_name, s.line, s.column, s.text, s.reason
            );
        }
    }
    out
}
