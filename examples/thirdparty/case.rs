//! What a case is: a kernel of a third-party library, its healthy launches (built the way the
//! library's own host code launches it) and its planted bugs; plus the random data and
//! tensor layouts the case builders share.

use std::fmt;

use half::{bf16, f16};

use crate::call::{Arg, Call, Data, Ty};
use crate::expect::Expect;

/// Which checkout a kernel's source comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corpus {
    /// huggingface/candle's `candle-kernels/src` (`--candle`).
    Candle,
    /// The root of EricLBuehler/mistral.rs (`--mistral`).
    Mistral,
}

/// How the kernel is written: the forms the bounds checker must see through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `extern "C"` kernels stamped out by a `#define` macro, one per type and operation.
    MacroElementwise,
    /// The same, on a non-contiguous layout: the index goes through a `__device__` helper
    /// (`get_strided_index`) reading the dims and strides of the `info` array.
    MacroStrided,
    /// A macro-generated kernel whose body calls a `__device__` function template.
    TemplateHelper,
    /// A block reduction through `__shared__` memory or warp shuffles.
    Reduction,
    /// Reads or writes through an index tensor.
    Indexing,
    /// A bitonic sort in dynamic shared memory; the kernel's name is made by `##`.
    SortDynamicShared,
    /// A `__global__` function template, launched by name expression (`k<float>`).
    Template,
    /// A template kernel reading and writing `float4` (or 4 halves as a `uint64_t`).
    Vectorized,
}

impl fmt::Display for Style {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Style::MacroElementwise => "macro-generated elementwise",
            Style::MacroStrided => "macro-generated, strided-index helper",
            Style::TemplateHelper => "macro kernel calling a template helper",
            Style::Reduction => "reduction (shared memory / warp shuffle)",
            Style::Indexing => "indexing through an index tensor",
            Style::SortDynamicShared => "bitonic sort, dynamic shared, `##` name",
            Style::Template => "template kernel",
            Style::Vectorized => "vectorized template (float4 / 4 x half)",
        })
    }
}

/// How much of its poisoned outputs a healthy launch must write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Every element of every output.
    All,
    /// At least this many elements in all (a copy into part of a buffer).
    AtLeast(usize),
    /// The outputs start from data, not poison (`out[i] += ...`): they must change.
    Changed,
}

/// A healthy launch: compared plain against bounds-checked.
#[derive(Clone, Debug)]
pub struct Variant {
    pub label: String,
    pub call: Call,
    pub written: Written,
}

/// The shape bugs the harness plants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BugKind {
    /// The length argument (`numel`, `N`) is larger than the buffers.
    Numel,
    /// A stride of the layout (`info`, a row stride) sends one index past the end.
    Strides,
    /// An index tensor holds one entry past the indexed dimension.
    BadIndex,
}

impl fmt::Display for BugKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BugKind::Numel => "numel too large",
            BugKind::Strides => "wrong strides",
            BugKind::BadIndex => "bad index entry",
        })
    }
}

#[derive(Clone, Debug)]
pub struct Bug {
    pub kind: BugKind,
    /// What was planted, for a person.
    pub what: String,
    pub call: Call,
    pub expect: Expect,
}

/// One kernel under test.
#[derive(Clone, Debug)]
pub struct Case {
    /// The name `Kernel::new` takes: the `extern "C"` symbol or a name expression.
    pub kernel: &'static str,
    pub corpus: Corpus,
    /// The source file, relative to its corpus directory.
    pub file: &'static str,
    pub style: Style,
    /// `-D` options (beyond those the owners pass, which are none for these files).
    pub defines: &'static [&'static str],
    pub variants: Vec<Variant>,
    pub bugs: Vec<Bug>,
}

impl Case {
    pub fn new(corpus: Corpus, file: &'static str, kernel: &'static str, style: Style) -> Case {
        Case {
            kernel,
            corpus,
            file,
            style,
            defines: &[],
            variants: Vec::new(),
            bugs: Vec::new(),
        }
    }

    pub fn defines(mut self, d: &'static [&'static str]) -> Case {
        self.defines = d;
        self
    }

    pub fn variant(mut self, label: impl Into<String>, call: Call, written: Written) -> Case {
        self.variants.push(Variant {
            label: label.into(),
            call,
            written,
        });
        self
    }

    pub fn bug(
        mut self,
        kind: BugKind,
        what: impl Into<String>,
        call: Call,
        expect: Expect,
    ) -> Case {
        self.bugs.push(Bug {
            kind,
            what: what.into(),
            call,
            expect,
        });
        self
    }

    /// The name in reports: the kernel, with its `-D` options when it has any.
    pub fn label(&self) -> String {
        if self.defines.is_empty() {
            self.kernel.to_string()
        } else {
            format!("{} (-D{})", self.kernel, self.defines.join(" -D"))
        }
    }
}

// ---- random data -----------------------------------------------------------------------------

/// xorshift64: small, seeded, the same sequence everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [lo, hi).
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `n` values of `ty` uniform in [lo, hi) (rounded to the type).
    pub fn floats(&mut self, ty: Ty, n: usize, lo: f32, hi: f32) -> Data {
        let mut v = || self.f32(lo, hi);
        match ty {
            Ty::F32 => Data::F32((0..n).map(|_| v()).collect()),
            Ty::F64 => Data::F64((0..n).map(|_| f64::from(v())).collect()),
            Ty::F16 => Data::F16((0..n).map(|_| f16::from_f32(v())).collect()),
            Ty::Bf16 => Data::Bf16((0..n).map(|_| bf16::from_f32(v())).collect()),
            Ty::U8 => Data::U8((0..n).map(|_| v() as u8).collect()),
            Ty::U32 => Data::U32((0..n).map(|_| v() as u32).collect()),
        }
    }

    pub fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32(lo, hi)).collect()
    }

    pub fn u32s(&mut self, n: usize, below: u32) -> Vec<u32> {
        (0..n)
            .map(|_| self.below(u64::from(below)) as u32)
            .collect()
    }
}

// ---- layouts ---------------------------------------------------------------------------------

/// A tensor layout as candle describes it to its kernels: dims and strides in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub dims: Vec<usize>,
    pub strides: Vec<usize>,
}

impl Shape {
    /// Row-major.
    pub fn contiguous(dims: &[usize]) -> Shape {
        let mut strides = vec![1; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1];
        }
        Shape {
            dims: dims.to_vec(),
            strides,
        }
    }

    pub fn strided(dims: &[usize], strides: &[usize]) -> Shape {
        Shape {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
        }
    }

    /// A `rows x cols` view of a contiguous `cols x rows` matrix (a transpose).
    pub fn transposed(rows: usize, cols: usize) -> Shape {
        Shape::strided(&[rows, cols], &[1, rows])
    }

    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }

    /// Elements of storage the layout reaches: its largest offset plus one.
    pub fn storage(&self) -> usize {
        1 + self
            .dims
            .iter()
            .zip(&self.strides)
            .map(|(d, s)| (d - 1) * s)
            .sum::<usize>()
    }

    pub fn is_contiguous(&self) -> bool {
        *self == Shape::contiguous(&self.dims)
    }
}

/// candle's `info` for one operand: null when contiguous (`SlicePtrOrNull::Null`), else dims
/// then strides.
pub fn info_of(s: &Shape) -> Arg {
    if s.is_contiguous() {
        Arg::Null
    } else {
        Arg::info(&[s.dims.as_slice(), s.strides.as_slice()].concat())
    }
}
