//! The expression language launches evaluate: what a build left out of its device checks
//! needs of the launch's arguments, grid and block.
//!
//! `guard/` finds accesses the user's own guard (or a counted loop) keeps in bounds and
//! writes each one's byte offset from its buffer's base as a [`HostExpr`] over the launch's
//! values; a [`HostCheck`] pairs it with the buffer, the access's width and its site. A
//! launch evaluates every host check of the build once, on the host, with its
//! [`LaunchValues`] ([`failing_host_checks`]). This module is that language and its
//! evaluation, and nothing of PTX: `guard/` builds the expressions, this module says what
//! they mean.
//!
//! [`failing_host_checks`]: super::InstrumentedKernel::failing_host_checks
//!
//! # Evaluation: interval arithmetic over the launch's values
//!
//! An expression evaluates (`eval`, exact, in `i128`) to one of
//!
//! - `Ok(Some((lo, hi)))`: an interval holding every value the expression takes in this
//!   launch;
//! - `Ok(None)`: the empty interval: no execution of this launch reaches the point the value
//!   is used at (a guard that no thread passes), so a check on it holds vacuously;
//! - `Err(())`: the host cannot bound it (an argument missing or of another size, a value
//!   outside the range it must lie in, a divisor that may be zero, a magnitude past `2^100`).
//!   **A failing evaluation means the host check fails, and the access is checked on the
//!   device**: the launch runs the build of the same shape with that access's device check
//!   ([`InstrumentOptions::on_device`](super::InstrumentOptions::on_device)), which reports
//!   an out-of-bounds access exactly as the fully checked build would. Failing is always
//!   safe; it only costs the device check.
//!
//! [`HostCheck::holds`] is the device check's condition over the whole interval: the offset's
//! interval is empty or lies in `[0, len - bytes]` (`len` the launch's length of the buffer,
//! or the array's size), and an 8- or 16-byte access's offset is provably a multiple of its
//! width (the device checks alignment otherwise).
//!
//! # The soundness contract
//!
//! Every expression `guard/` builds, and every rule below, keeps one invariant: **for every
//! execution of the kernel with this launch's values that reaches the use, the value (for a
//! register, a representative of its bits modulo `2^w`) lies in the interval `eval` gives**;
//! `Ok(None)` only when no such execution exists. A host check that holds therefore means the
//! device check it replaces could not have failed in that launch. `guard/`'s module docs
//! argue that the analysis's expressions denote what they say (which registers, which facts,
//! why a counted loop's bound is its iteration count); each node's rule below is the other
//! half, that its interval covers every value of its operands' intervals.
//!
//! # The nodes
//!
//! - `Const(c)`: `c`.
//! - `Param { index, bytes, signed }`: scalar argument `index`, its `bytes` low bytes read
//!   signed or not; fails unless the launch passes a scalar of exactly that size there.
//! - `Tid(a)`, `Ctaid(a)`: `[0, block - 1]`, `[0, grid - 1]` along axis `a` (0, 1, 2: x, y,
//!   z), the executing thread's own; `Ntid(a)`, `Nctaid(a)`: the block's and grid's extent
//!   along it, exactly.
//! - `Add`, `Sub`, `Mul`, `Shl(e, k)` (`e * 2^k`): exact interval arithmetic. These are ring
//!   operations, so representatives of the operands give a representative of the result and
//!   no wrap check is needed.
//! - `In { e, bits, signed }`: `e`, required to lie in the `bits`-bit signed or unsigned range
//!   (fails otherwise): a bound, or the final offset the device compares unsigned.
//! - `Wrap { e, bits, signed }`: `e`'s representatives as `bits` bits read them: shifted by
//!   one multiple of `2^bits` when the interval lies in one window of that size, failing when
//!   it straddles a wrap (`mul.wide`, a widening `cvt`).
//! - `Shr { e, bits, signed, k }`: `floor(e / 2^k)`, `e` required in range.
//! - `Mask(m)`: `x & m` of an unknown `x`: `[0, m]`. `And { e, mask }`: `e & mask`, exact
//!   when `mask` is one run of bits and `e` lies in one window of its top bit, `[0, mask]`
//!   otherwise (also when `e` fails).
//! - `Div(a, b)`, `Rem(a, b)`: truncating division and the remainder with `a`'s sign; fail
//!   unless `b` is positive.
//! - `Min`, `Max`: of two values read alike (a clamp).
//! - `Facts { def, bits, facts }`: a `bits`-bit register where it is used. Its unsigned and
//!   signed readings start from their whole ranges (or `def`'s interval where it lies in
//!   one), each is narrowed by the [`HostFact`]s of its signedness (`r + offset op bound`,
//!   used only where `r + offset` cannot wrap; or `r + offset == or_eq`), and the narrower
//!   is taken; an empty one is `Ok(None)`.
//! - `Iv { bits, signed, inits, steps }`: an increasing induction variable: from the least
//!   initial value to the top of its range, when every [`IvStep`] adds a non-negative step
//!   under a guard `r < b` (or `<=`) with `b + step` in range, so it never wraps.
//! - `Hull(es)`: the hull of the intervals (a register set in several places).
//! - `Reached { e, when }`: `e`, or nothing (`Ok(None)`) where one of `when` (facts on other
//!   registers at the statement that wrote `e`) is empty for the launch: that statement
//!   does not run. A `when` that fails to evaluate says nothing.
//! - `Quot { a, b, min, zero_unreached, zero_skips }`: `a / b` when `b` is fixed and divides
//!   each thread's `a`: `a` fixed and a multiple of `b`, or `b` of 1 or -1 (then `a`'s
//!   interval divided by it). The quotients must be at least `min` (and not negative), but for
//!   0 where `zero_unreached` says a thread with 0 does not get here (left out, `Ok(None)` if
//!   every thread has 0), or `zero_skips` says 0 is a count of its own (kept); fails
//!   otherwise.
//! - `Counted { init, step, last, no_wrap }`: `init + j * step` for `j` in
//!   `[0, max(0, last)]`, after each of `no_wrap` evaluates: every iteration of a counted
//!   loop in one interval. Where a part of `init` is functional (`HostExpr::functional`:
//!   one value per thread, the same wherever it occurs), occurs in `last` too and takes few
//!   values, each value `c` is also tried alone: `init` and `last` evaluated with every
//!   occurrence of the part at `c` (the threads with `c` there start where that gives and
//!   run that many iterations), and the hull over the values, intersected with the first
//!   interval, is the result (two parts may be tried together, every pair of their values).
//!   A clamped window's loop (`for (h = max(s, 0); h < min(s + 3, H); ++h)`) then ends below
//!   `H` from every start, where the largest start and the largest count never occur
//!   together; so does a remainder loop of a thread's own first iterations.
//!
//! `size` counts an expression's nodes: `guard/` drops an expression past its `MAX_SIZE`.
//!
//! # Serialized forms
//!
//! [`HostCheck`] is part of [`InstrumentedKernel`](super::InstrumentedKernel), which the build
//! cache stores as JSON: the serde forms (snake_case variant names, default fields left out)
//! are a stored format, pinned by a test here.

use serde::{Deserialize, Serialize};

use super::coverage::SiteKind;
use crate::site::SourceLoc;

/// A comparison, as it holds of a register's value: the typed model's own
/// ([`crate::ir::Cmp`], one meaning of `setp`'s comparisons for both).
pub use crate::ir::Cmp;

/// What the host knows of one comparison: the `signed` interpretation of the register plus
/// `offset` (in the register's width, wrapping) compares `op` with `bound`. A fact with an
/// offset comes from a guard on `r + k` (`if (x - 1 >= 0)` compiled as a test of `%r5 = %r1 +
/// -1`); the host uses it only where it can see that `r + k` does not wrap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFact {
    pub op: Cmp,
    pub signed: bool,
    pub bound: HostExpr,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: i64,
    /// The comparison holds, *or* the value (plus `offset`) equals this: what is known at a
    /// loop head whose first iteration starts from a constant (`for (d = 0; ...)` rotated
    /// into a test at the bottom).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub or_eq: Option<i64>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// One step of an induction variable: `r += step`, where `guard` holds of the old `r`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IvStep {
    pub step: HostExpr,
    pub guard: HostFact,
}

/// An integer a launch determines (see the module docs for what it denotes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostExpr {
    Const(i64),
    /// A scalar parameter's bytes (`bytes` long), read signed or unsigned.
    Param {
        index: u32,
        bytes: u8,
        signed: bool,
    },
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Add(Box<HostExpr>, Box<HostExpr>),
    Sub(Box<HostExpr>, Box<HostExpr>),
    Mul(Box<HostExpr>, Box<HostExpr>),
    Shl(Box<HostExpr>, u32),
    /// The value interpreted in `bits` bits: required to lie in that range.
    In {
        e: Box<HostExpr>,
        bits: u8,
        signed: bool,
    },
    /// A register's bits (`e` denotes representatives of them) read in `bits` bits: exact
    /// when the representatives lie in one window of `2^bits` (a `cvt` of `-1 - d` reads
    /// `2^32 - 1 - d`), failing the host check when they straddle a wrap.
    Wrap {
        e: Box<HostExpr>,
        bits: u8,
        signed: bool,
    },
    /// `floor(e / 2^k)` of `e` interpreted in `bits` bits.
    Shr {
        e: Box<HostExpr>,
        bits: u8,
        signed: bool,
        k: u32,
    },
    /// `x & mask` with `mask >= 0`, `x` unknown: in `[0, mask]`.
    Mask(i64),
    /// `e & mask` with `mask >= 0`: exact when `mask` is one run of bits and `e`'s interval
    /// lies in one window of the run's top bit; `[0, mask]` otherwise.
    And {
        e: Box<HostExpr>,
        mask: i64,
    },
    /// `a / b` truncated toward zero (`div.s32`, `div.u32` on values read as such); `b` must
    /// be positive.
    Div(Box<HostExpr>, Box<HostExpr>),
    /// `a % b` with the sign of `a` (`rem`, or NVVM's `a - (a / b) * b`); `b` must be positive.
    Rem(Box<HostExpr>, Box<HostExpr>),
    /// The smaller of two values read alike (`min.s32`: both as signed); a clamp's upper side.
    Min(Box<HostExpr>, Box<HostExpr>),
    /// The larger of two values read alike; a clamp's lower side.
    Max(Box<HostExpr>, Box<HostExpr>),
    /// A register of `bits` bits with what is known of it where it is used.
    Facts {
        def: Option<Box<HostExpr>>,
        bits: u8,
        facts: Vec<HostFact>,
    },
    /// An increasing induction variable (its `signed` interpretation).
    Iv {
        bits: u8,
        signed: bool,
        inits: Vec<HostExpr>,
        steps: Vec<IvStep>,
    },
    /// Any of the values: the hull of their intervals (a register set in several places
    /// before a loop).
    Hull(Vec<HostExpr>),
    /// `e` as written by a statement that runs only where each of `when` holds: `when` are
    /// other registers with the facts the branches before that statement give them. Where
    /// the launch's values leave one of them empty (`r8 != 0` with `r8` fixed at 0), no
    /// execution writes `e` there (`Ok(None)`), and a [`HostExpr::Hull`] of a register's
    /// definitions leaves it out.
    Reached {
        e: Box<HostExpr>,
        when: Vec<HostExpr>,
    },
    /// `a / b` when `b` divides `a` exactly and the quotient is at least `min`, with both
    /// fixed for the launch; the check fails otherwise. The number of steps a counter takes
    /// from its start to a bound it is tested against with `!=`.
    Quot {
        a: Box<HostExpr>,
        b: Box<HostExpr>,
        min: i64,
        /// A quotient of 0 means no execution gets here (the loop is entered only when its
        /// counter starts away from the bound): empty rather than a failed check.
        zero_unreached: bool,
        /// A quotient of 0 is a count of its own, exempt from `min`: after a loop entered
        /// only when its counter starts away from the bound, 0 means it was not entered and
        /// a register it steps holds its start.
        #[serde(default, skip_serializing_if = "is_false")]
        zero_skips: bool,
    },
    /// An induction variable of a counted loop where it is used: `init + j * step` for an
    /// iteration count `j` in `[0, max(0, last)]` (`last` from the loop's exit test, see
    /// `guard/`, `Guards::counted_parts`). Each of `no_wrap` must evaluate (they are [`HostExpr::In`]
    /// range checks that keep the loop's counter from wrapping), or the check fails.
    Counted {
        init: Box<HostExpr>,
        step: Box<HostExpr>,
        last: Box<HostExpr>,
        no_wrap: Vec<HostExpr>,
        /// Other counters of the same loop with what the guards before the access say of
        /// them (`z != 0` in an unrolled stencil's first copy): they leave out the `j` whose
        /// counter value the facts exclude.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        siblings: Vec<Sibling>,
    },
}

/// Another counter of a [`HostExpr::Counted`]'s loop, stepped once per iteration like it:
/// `init + (j + shift) * step` where the access runs with the counted register at `j`
/// (`shift` is -1, 0 or 1 by which of the two updates has run by then), of `bits` bits, and
/// `facts` hold of it at the access. Used only where `init` and `step` are single values for
/// the launch and every value it takes lies in `[0, 2^(bits - 1))` (read alike signed and
/// unsigned, never wrapped); otherwise it narrows nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sibling {
    pub init: HostExpr,
    pub step: HostExpr,
    pub shift: i8,
    pub bits: u8,
    pub facts: Vec<HostFact>,
}

impl Sibling {
    /// The iterations `[lo, hi]` (of the counted register's `j`) whose value of this counter
    /// the facts allow: `Ok(None)` for none, `Err` when this counter cannot narrow them (the
    /// range unchanged).
    fn narrow(&self, v: &LaunchValues<'_>, lo: i128, hi: i128) -> Result<Iv, ()> {
        let (Some(i0), Some(sp)) = (self.init.eval(v)?, self.step.eval(v)?) else {
            return Err(());
        };
        if i0.0 != i0.1 || sp.0 != sp.1 || sp.0 == 0 {
            return Err(());
        }
        let (i0, sp, sh) = (i0.0, sp.0, i128::from(self.shift));
        let at = |j: i128| i0 + (j + sh) * sp;
        let (v0, v1) = (at(lo).min(at(hi)), at(lo).max(at(hi)));
        if v0 < 0 || v1 > range_of(self.bits, true).1 {
            return Err(());
        }
        let span = i64::try_from(v1 - v0).map_err(|_| ())?;
        let known = HostExpr::Facts {
            def: Some(Box::new(HostExpr::Add(
                Box::new(HostExpr::Const(i64::try_from(v0).map_err(|_| ())?)),
                Box::new(HostExpr::Mask(span)),
            ))),
            bits: self.bits,
            facts: self.facts.clone(),
        };
        let Some((n0, n1)) = known.eval(v)? else {
            return Ok(None);
        };
        // `t = j + shift` with `i0 + t * sp` in [n0, n1]: `t * |sp|` in [a, b].
        let (a, b, d) = if sp > 0 {
            (n0 - i0, n1 - i0, sp)
        } else {
            (i0 - n1, i0 - n0, -sp)
        };
        let (q0, q1) = (-(-a).div_euclid(d), b.div_euclid(d));
        let (j0, j1) = ((q0 - sh).max(lo), (q1 - sh).min(hi));
        Ok((j0 <= j1).then_some((j0, j1)))
    }
}

/// One access whose device check was left out, and what the launch must satisfy for that.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCheck {
    /// The buffer parameter's ordinal (`u32::MAX` for an array, see `array_bytes`).
    pub param: u32,
    /// For an access to a fixed-size `__shared__`/`__device__`/local array: its size in
    /// bytes, the length the check compares against (the launch's lengths are not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_bytes: Option<u64>,
    /// Bytes accessed.
    pub bytes: u32,
    pub kind: SiteKind,
    pub loc: Option<SourceLoc>,
    pub inlined_at: Option<SourceLoc>,
    /// The access's byte offset from the buffer's base.
    pub offset: HostExpr,
}

/// What a launch gives a host check: grid, block, each parameter's raw scalar value (`None`
/// for a buffer or an argument of another size) and each parameter's length in bytes
/// ([`UNKNOWN_LEN`](super::UNKNOWN_LEN) where unknown, as the device check gets it).
#[derive(Clone, Copy, Debug)]
pub struct LaunchValues<'a> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// `(value, size in bytes)` of each scalar argument, little-endian bytes zero-extended.
    pub scalars: &'a [Option<(u64, u32)>],
    pub lens: &'a [u64],
}

/// What a launch's values say of an expression ([`HostExpr::interval`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Every value it takes lies in `[lo, hi]`.
    Within(i128, i128),
    /// No execution of the launch reaches it.
    Unreached,
    /// The host cannot bound it: a host check on it fails.
    Unbounded,
}

/// An interval of integers; `None` inside `Ok` is empty (unreachable).
type Iv = Option<(i128, i128)>;

/// Past this magnitude evaluation gives up (far beyond any offset a device can use).
const LIMIT: i128 = 1 << 100;

pub(super) fn range_of(bits: u8, signed: bool) -> (i128, i128) {
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// An immediate as a `bits`-bit comparison reads it (its bits, signed or not).
pub(super) fn const_as_read(c: i64, bits: u8, signed: bool) -> i64 {
    let (_, hi) = range_of(bits, signed);
    let m = 1i128 << bits;
    let mut v = i128::from(c).rem_euclid(m);
    if v > hi {
        v -= m;
    }
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn within(v: (i128, i128), r: (i128, i128)) -> bool {
    v.0 >= r.0 && v.1 <= r.1
}

fn checked(lo: i128, hi: i128) -> Result<Iv, ()> {
    if lo.abs() > LIMIT || hi.abs() > LIMIT {
        return Err(());
    }
    Ok(if lo > hi { None } else { Some((lo, hi)) })
}

/// How many expression nodes a [`HostExpr::Counted`] may evaluate when it tries each value
/// of a part of its start (per split, at most four splits, none inside another): a launch
/// evaluates its host checks on the host before it runs (once per set of values), and this
/// keeps a split to well under a millisecond.
const SPLIT_BUDGET: i128 = 1 << 16;

fn hull(a: Iv, b: Iv) -> Iv {
    match (a, b) {
        (Some(x), Some(y)) => Some((x.0.min(y.0), x.1.max(y.1))),
        (x, None) | (None, x) => x,
    }
}

/// The values `init + j * step` of a counted loop's register for `j` in `[0, max(0, last)]`,
/// less the iterations `siblings` exclude (see [`HostExpr::Counted`]).
fn counted_values(
    v: &LaunchValues<'_>,
    init: (i128, i128),
    st: (i128, i128),
    last: (i128, i128),
    siblings: &[Sibling],
) -> Result<Iv, ()> {
    let (mut j0, mut j1) = (0, last.1.max(0));
    for sib in siblings {
        match sib.narrow(v, j0, j1) {
            Ok(Some((a, b))) => (j0, j1) = (a, b),
            // No iteration reaches the access.
            Ok(None) => return Ok(None),
            Err(()) => {}
        }
    }
    let p = [j0 * st.0, j0 * st.1, j1 * st.0, j1 * st.1];
    let lo = *p.iter().min().expect("four");
    let hi = *p.iter().max().expect("four");
    checked(init.0 + lo, init.1 + hi)
}

/// Subexpressions with one value each: see [`HostExpr::eval_at`].
type Pins<'a> = &'a [(&'a HostExpr, i128)];

/// Ways to split a counted loop's values by its start (`init`) where its iteration count
/// (`last`) reads the same values: the [`functional`](HostExpr::functional) parts of `init`
/// that also occur in `last` and take more than one value, each alone (smallest first) and
/// the two that take the fewest values together, each as the intervals of the values to try,
/// within [`SPLIT_BUDGET`].
fn split_pins<'e>(
    v: &LaunchValues<'_>,
    init: &'e HostExpr,
    last: &HostExpr,
) -> Vec<Vec<(&'e HostExpr, (i128, i128))>> {
    /// Splits tried per loop.
    const MAX_SPLITS: usize = 4;
    let mut parts: Vec<(&HostExpr, (i128, i128))> = Vec::new();
    let mut stack = vec![init];
    while let Some(e) = stack.pop() {
        stack.extend(e.operands());
        if parts.iter().any(|(p, _)| *p == e) || !e.functional() {
            continue;
        }
        let Ok(Some(x)) = e.eval(v) else { continue };
        if x.0 < x.1 && last.contains(e) {
            parts.push((e, x));
        }
    }
    let n = |x: (i128, i128)| x.1 - x.0 + 1;
    let cost = last.size() as i128 + init.size() as i128;
    parts.retain(|(_, x)| n(*x).saturating_mul(cost) <= SPLIT_BUDGET);
    parts.sort_by_key(|(e, _)| e.size());
    let mut out: Vec<Vec<_>> = parts
        .iter()
        .take(MAX_SPLITS - 1)
        .map(|p| vec![*p])
        .collect();
    // The pair: the part with the fewest values (the innermost of equals: it stands for
    // every occurrence of those around it), and the next that is not inside or around it.
    let mut fewest = parts.clone();
    fewest.sort_by_key(|(e, x)| (n(*x), e.size()));
    if let Some(&a) = fewest.first() {
        let b = fewest[1..]
            .iter()
            .find(|b| !a.0.contains(b.0) && !b.0.contains(a.0));
        if let Some(&b) = b {
            if n(a.1).saturating_mul(n(b.1)).saturating_mul(cost) <= SPLIT_BUDGET {
                out.push(vec![a, b]);
            }
        }
    }
    out
}

/// A counted loop's values (as [`counted_values`]) with `pins` tried at each combination of
/// their values: the hull over all of them.
fn counted_pinned(
    v: &LaunchValues<'_>,
    init: &HostExpr,
    st: (i128, i128),
    last: &HostExpr,
    siblings: &[Sibling],
    pins: &[(&HostExpr, (i128, i128))],
) -> Result<Iv, ()> {
    let mut at: Vec<(&HostExpr, i128)> = pins.iter().map(|(e, x)| (*e, x.0)).collect();
    let mut out: Iv = None;
    loop {
        // `None`: no thread with these values reaches the loop.
        if let (Some(x), Some(l)) = (init.eval_at(v, &at)?, last.eval_at(v, &at)?) {
            out = hull(out, counted_values(v, x, st, l, siblings)?);
        }
        // The next combination, the first pin fastest.
        let mut k = 0;
        loop {
            let Some(p) = at.get_mut(k) else {
                return Ok(out);
            };
            if p.1 < pins[k].1 .1 {
                p.1 += 1;
                break;
            }
            p.1 = pins[k].1 .0;
            k += 1;
        }
    }
}

/// The interval `x` of representatives as the `bits`-bit `signed` interpretation reads it:
/// itself when it lies in the range, shifted by a multiple of `2^bits` when it lies in one
/// window of that size (then every representative maps to its value the same way), `None`
/// when it straddles a wrap.
fn interpret(x: (i128, i128), bits: u8, signed: bool) -> Option<(i128, i128)> {
    let r = range_of(bits, signed);
    if within(x, r) {
        return Some(x);
    }
    let w = 1i128 << bits;
    let j = (x.0 - r.0).div_euclid(w);
    ((x.1 - r.0).div_euclid(w) == j).then(|| (x.0 - j * w, x.1 - j * w))
}

/// `x & mask` for every `x` in the interval (`mask >= 0`): when `mask` is one run of bits
/// `s..k`, `x & mask` is `x mod 2^k` with its low `s` bits cleared, exact on an interval in
/// one window of `2^k`; `[0, mask]` otherwise.
fn and_mask(x: (i128, i128), mask: i64) -> (i128, i128) {
    let m = i128::from(mask);
    if m == 0 {
        return (0, 0);
    }
    let k = 128 - m.leading_zeros();
    let s = m.trailing_zeros();
    let low = (1i128 << s) - 1;
    if m != ((1i128 << k) - 1) & !low {
        return (0, m);
    }
    let w = 1i128 << k;
    let j = x.0.div_euclid(w);
    if x.1.div_euclid(w) != j {
        return (0, m);
    }
    ((x.0 - j * w) & !low, (x.1 - j * w) & !low)
}

impl HostCheck {
    /// Whether this launch keeps the access in bounds on every thread (then its device check
    /// could not fail).
    pub fn holds(&self, v: &LaunchValues<'_>) -> bool {
        let len = match self.array_bytes {
            Some(b) => b,
            None => match v.lens.get(self.param as usize) {
                Some(&len) => len,
                None => return false,
            },
        };
        let inside = match self.offset.eval(v) {
            Err(()) => false,
            Ok(None) => true,
            Ok(Some((lo, hi))) => lo >= 0 && hi + i128::from(self.bytes) <= i128::from(len),
        };
        // A wide access (8 or 16 bytes) must also be aligned to its width, or CUDA faults
        // with a misaligned address: where the offset is not provably a multiple of it, the
        // device checks it (with its alignment, `emit.rs`). The buffer's own address is
        // checked by the launch (`InstrumentedKernel::widest`).
        let aligned = self.bytes < 8
            || !self.bytes.is_power_of_two()
            || self.offset.twos(v) >= self.bytes.trailing_zeros();
        inside && aligned
    }
}

impl HostExpr {
    /// Every value the expression takes in this launch, as the host check uses it (see the
    /// module docs).
    pub fn interval(&self, v: &LaunchValues<'_>) -> Bound {
        match self.eval(v) {
            Ok(Some((lo, hi))) => Bound::Within(lo, hi),
            Ok(None) => Bound::Unreached,
            Err(()) => Bound::Unbounded,
        }
    }

    /// The innermost part of the expression the host cannot bound for this launch (its own
    /// operands all bounded), where the whole cannot be: what a report of a failing host
    /// check names as the reason.
    pub fn first_failure(&self, v: &LaunchValues<'_>) -> Option<&HostExpr> {
        if self.eval(v).is_ok() {
            return None;
        }
        Some(
            self.operands()
                .into_iter()
                .find_map(|e| e.first_failure(v))
                .unwrap_or(self),
        )
    }

    /// Whether the expression takes one value per thread of a launch, the same wherever it
    /// occurs: built from the launch's values and the thread's own indices by exact
    /// operations (a register known only by its facts, an induction variable, a hull or a
    /// mask stand for values that may differ between occurrences).
    fn functional(&self) -> bool {
        use HostExpr::*;
        match self {
            Const(_) | Param { .. } | Tid(_) | Ntid(_) | Ctaid(_) | Nctaid(_) => true,
            Add(a, b) | Sub(a, b) | Mul(a, b) | Div(a, b) | Rem(a, b) | Min(a, b) | Max(a, b) => {
                a.functional() && b.functional()
            }
            Shl(a, _)
            | In { e: a, .. }
            | Wrap { e: a, .. }
            | Shr { e: a, .. }
            | And { e: a, .. } => a.functional(),
            // The register holds what its definition computed; the facts only say which
            // threads get here.
            Facts { def: Some(d), .. } => d.functional(),
            Facts { def: None, .. }
            | Mask(_)
            | Iv { .. }
            | Hull(_)
            | Reached { .. }
            | Quot { .. }
            | Counted { .. } => false,
        }
    }

    /// Whether `e` occurs in this expression (itself included).
    fn contains(&self, e: &HostExpr) -> bool {
        self == e || self.operands().into_iter().any(|o| o.contains(e))
    }

    /// The expressions this one is computed from.
    fn operands(&self) -> Vec<&HostExpr> {
        use HostExpr::*;
        match self {
            Const(_) | Param { .. } | Tid(_) | Ntid(_) | Ctaid(_) | Nctaid(_) | Mask(_) => vec![],
            Add(a, b) | Sub(a, b) | Mul(a, b) | Div(a, b) | Rem(a, b) | Min(a, b) | Max(a, b) => {
                vec![a, b]
            }
            Quot { a, b, .. } => vec![a, b],
            Shl(a, _)
            | In { e: a, .. }
            | Wrap { e: a, .. }
            | Shr { e: a, .. }
            | And { e: a, .. } => vec![a],
            Facts { def, facts, .. } => def
                .iter()
                .map(|d| &**d)
                .chain(facts.iter().map(|f| &f.bound))
                .collect(),
            Iv { inits, steps, .. } => inits
                .iter()
                .chain(steps.iter().flat_map(|s| [&s.step, &s.guard.bound]))
                .collect(),
            Hull(es) => es.iter().collect(),
            Reached { e, when } => std::iter::once(&**e).chain(when).collect(),
            Counted {
                init,
                step,
                last,
                no_wrap,
                siblings,
            } => [&**init, &**step, &**last]
                .into_iter()
                .chain(no_wrap)
                .chain(siblings.iter().flat_map(|s| [&s.init, &s.step]))
                .collect(),
        }
    }
}

/// A compact reading of an expression for a person (a failing host check's report): `p4`
/// is scalar parameter 4 (`p4:u8` of 8 bytes unsigned), `tid.x`, `ntid.x`, `ctaid.x` and
/// `nctaid.x` the launch's indices and extents.
impl std::fmt::Display for HostExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use HostExpr::*;
        let ax = |a: &u8| ["x", "y", "z"].get(usize::from(*a)).copied().unwrap_or("?");
        let sg = |s: &bool| if *s { "s" } else { "u" };
        let list = |f: &mut std::fmt::Formatter<'_>, es: &[HostExpr]| -> std::fmt::Result {
            for (k, e) in es.iter().enumerate() {
                write!(f, "{}{e}", if k == 0 { "" } else { ", " })?;
            }
            Ok(())
        };
        match self {
            Const(c) => write!(f, "{c}"),
            Param {
                index,
                bytes,
                signed,
            } => write!(f, "p{index}:{}{}", sg(signed), u32::from(*bytes) * 8),
            Tid(a) => write!(f, "tid.{}", ax(a)),
            Ntid(a) => write!(f, "ntid.{}", ax(a)),
            Ctaid(a) => write!(f, "ctaid.{}", ax(a)),
            Nctaid(a) => write!(f, "nctaid.{}", ax(a)),
            Add(a, b) => write!(f, "({a} + {b})"),
            Sub(a, b) => write!(f, "({a} - {b})"),
            Mul(a, b) => write!(f, "{a} * {b}"),
            Shl(a, k) => write!(f, "({a} << {k})"),
            In { e, bits, signed } => write!(f, "in{}{bits}({e})", sg(signed)),
            Wrap { e, bits, signed } => write!(f, "wrap{}{bits}({e})", sg(signed)),
            Shr { e, bits, signed, k } => write!(f, "({e} >>{}{bits} {k})", sg(signed)),
            Mask(m) => write!(f, "(? & {m})"),
            And { e, mask } => write!(f, "({e} & {mask})"),
            Div(a, b) => write!(f, "({a} / {b})"),
            Rem(a, b) => write!(f, "({a} % {b})"),
            Min(a, b) => write!(f, "min({a}, {b})"),
            Max(a, b) => write!(f, "max({a}, {b})"),
            Facts { def, bits, facts } => {
                write!(f, "r{bits}[")?;
                if let Some(d) = def {
                    write!(f, "= {d}")?;
                }
                for fa in facts {
                    write!(f, "; {fa}")?;
                }
                write!(f, "]")
            }
            Iv {
                bits,
                signed,
                inits,
                steps,
            } => {
                write!(f, "iv{}{bits}(from ", sg(signed))?;
                list(f, inits)?;
                for s in steps {
                    write!(f, "; += {} while {}", s.step, s.guard)?;
                }
                write!(f, ")")
            }
            Hull(es) => {
                write!(f, "hull(")?;
                list(f, es)?;
                write!(f, ")")
            }
            Reached { e, when } => {
                write!(f, "{e} where (")?;
                list(f, when)?;
                write!(f, ")")
            }
            Quot {
                a,
                b,
                min,
                zero_unreached,
                zero_skips,
            } => {
                let z = if *zero_unreached { ", 0 unreached" } else { "" };
                let s = if *zero_skips { ", or 0" } else { "" };
                write!(f, "quot({a}, {b}, >= {min}{z}{s})")
            }
            Counted {
                init,
                step,
                last,
                no_wrap,
                siblings,
            } => {
                write!(f, "counted({init} + j * {step}, j <= {last}")?;
                if !no_wrap.is_empty() {
                    write!(f, "; no wrap: ")?;
                    list(f, no_wrap)?;
                }
                if !siblings.is_empty() {
                    write!(f, "; {} siblings", siblings.len())?;
                }
                write!(f, ")")
            }
        }
    }
}

impl std::fmt::Display for HostFact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match self.op {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
        };
        let s = if self.signed { "s" } else { "u" };
        write!(f, "r")?;
        if self.offset != 0 {
            write!(f, " + {}", self.offset)?;
        }
        write!(f, " {op}{s} {}", self.bound)?;
        if let Some(e) = self.or_eq {
            write!(f, " or == {e}")?;
        }
        Ok(())
    }
}

impl HostExpr {
    /// How many low bits are zero in every value the expression takes for this launch (the
    /// power of two that divides them all), as far as it can tell: 0 when unknown, 64 for 0.
    fn twos(&self, v: &LaunchValues<'_>) -> u32 {
        use HostExpr::*;
        let known = |x: i128| {
            if x == 0 {
                64
            } else {
                x.trailing_zeros().min(64)
            }
        };
        let axis = |a: &u8, d: [u32; 3]| d.get(usize::from(*a)).map(|&n| i128::from(n));
        match self {
            Const(c) => known(i128::from(*c)),
            Param { .. } => match self.eval(v) {
                Ok(Some((x, y))) if x == y => known(x),
                _ => 0,
            },
            Ntid(a) => axis(a, v.block).map_or(0, known),
            Nctaid(a) => axis(a, v.grid).map_or(0, known),
            Tid(_) | Ctaid(_) | Mask(_) => 0,
            Add(a, b) | Sub(a, b) | Min(a, b) | Max(a, b) => a.twos(v).min(b.twos(v)),
            Mul(a, b) => (a.twos(v) + b.twos(v)).min(64),
            Shl(a, k) => (a.twos(v) + k).min(64),
            // Read in fewer bits, a value keeps its low bits.
            In { e, bits, .. } | Wrap { e, bits, .. } => e.twos(v).min(u32::from(*bits)),
            And { e, mask } => e.twos(v).max(known(i128::from(*mask))),
            Facts { def: Some(e), .. } => e.twos(v),
            Iv { inits, steps, .. } => inits
                .iter()
                .map(|e| e.twos(v))
                .chain(steps.iter().map(|s| s.step.twos(v)))
                .min()
                .unwrap_or(0),
            Counted { init, step, .. } => init.twos(v).min(step.twos(v)),
            Quot { .. } => 0,
            Hull(es) => es.iter().map(|e| e.twos(v)).min().unwrap_or(0),
            Reached { e, .. } => e.twos(v),
            Shr { .. } | Div(..) | Rem(..) | Facts { def: None, .. } => 0,
        }
    }

    fn eval(&self, v: &LaunchValues<'_>) -> Result<Iv, ()> {
        self.eval_at(v, &[])
    }

    /// [`eval`](Self::eval), where each of `pins` (a [`functional`](Self::functional)
    /// subexpression and one of its values) is known to take that value: every occurrence of
    /// it evaluates to it. Evaluating an occurrence as usual instead is never wrong (its
    /// interval holds the value), so the pins need not reach every node (`Sibling::narrow`
    /// does without them).
    fn eval_at(&self, v: &LaunchValues<'_>, pin: Pins<'_>) -> Result<Iv, ()> {
        use HostExpr::*;
        for &(e, c) in pin {
            if std::ptr::eq(e, self) || e == self {
                return Ok(Some((c, c)));
            }
        }
        let axis = |a: &u8, d: [u32; 3]| d.get(usize::from(*a)).copied().ok_or(());
        Ok(match self {
            Const(c) => Some((i128::from(*c), i128::from(*c))),
            Param {
                index,
                bytes,
                signed,
            } => {
                let Some(Some((raw, size))) = v.scalars.get(*index as usize) else {
                    return Err(());
                };
                if *size != u32::from(*bytes) || !matches!(bytes, 1 | 2 | 4 | 8) {
                    return Err(());
                }
                let bits = u32::from(*bytes) * 8;
                let raw = if bits == 64 {
                    *raw
                } else {
                    raw & ((1u64 << bits) - 1)
                };
                let mut x = i128::from(raw);
                if *signed && x >= 1i128 << (bits - 1) {
                    x -= 1i128 << bits;
                }
                Some((x, x))
            }
            Tid(a) => Some((0, i128::from(axis(a, v.block)?) - 1)),
            Ntid(a) => {
                let n = i128::from(axis(a, v.block)?);
                Some((n, n))
            }
            Ctaid(a) => Some((0, i128::from(axis(a, v.grid)?) - 1)),
            Nctaid(a) => {
                let n = i128::from(axis(a, v.grid)?);
                Some((n, n))
            }
            Add(a, b) => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(y)) => return checked(x.0 + y.0, x.1 + y.1),
                _ => None,
            },
            Sub(a, b) => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(y)) => return checked(x.0 - y.1, x.1 - y.0),
                _ => None,
            },
            Mul(a, b) => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(y)) => {
                    let p = [x.0 * y.0, x.0 * y.1, x.1 * y.0, x.1 * y.1];
                    let lo = *p.iter().min().expect("four");
                    let hi = *p.iter().max().expect("four");
                    return checked(lo, hi);
                }
                _ => None,
            },
            Shl(a, k) => {
                if *k > 64 {
                    return Err(());
                }
                match a.eval_at(v, pin)? {
                    Some(x) => return checked(x.0 << k, x.1 << k),
                    None => None,
                }
            }
            In { e, bits, signed } => match e.eval_at(v, pin)? {
                Some(x) if within(x, range_of(*bits, *signed)) => Some(x),
                Some(_) => return Err(()),
                None => None,
            },
            Wrap { e, bits, signed } => match e.eval_at(v, pin)? {
                Some(x) => Some(interpret(x, *bits, *signed).ok_or(())?),
                None => None,
            },
            Shr { e, bits, signed, k } => match e.eval_at(v, pin)? {
                Some(x) if within(x, range_of(*bits, *signed)) && *k < 127 => {
                    Some((x.0 >> k, x.1 >> k))
                }
                Some(_) => return Err(()),
                None => None,
            },
            Min(a, b) | Max(a, b) => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(y)) => Some(if matches!(self, Min(..)) {
                    (x.0.min(y.0), x.1.min(y.1))
                } else {
                    (x.0.max(y.0), x.1.max(y.1))
                }),
                // No execution reaches one side: none reaches the result either.
                _ => None,
            },
            Div(a, b) => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(d)) => {
                    if d.0 <= 0 {
                        return Err(());
                    }
                    // Truncating division is monotone in the dividend, and for a fixed
                    // dividend moves toward zero as the divisor grows: the corners bound it.
                    let q = [x.0 / d.0, x.0 / d.1, x.1 / d.0, x.1 / d.1];
                    let lo = *q.iter().min().expect("four");
                    let hi = *q.iter().max().expect("four");
                    return checked(lo, hi);
                }
                _ => None,
            },
            Rem(a, b) => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(d)) => {
                    if d.0 <= 0 {
                        return Err(());
                    }
                    let m = d.1 - 1;
                    if (x.0 >= 0 && x.1 < d.0) || (x.1 <= 0 && x.0 > -d.0) {
                        // |x| below every divisor: x itself.
                        Some(x)
                    } else {
                        Some((
                            if x.0 >= 0 { 0 } else { x.0.max(-m) },
                            if x.1 <= 0 { 0 } else { x.1.min(m) },
                        ))
                    }
                }
                _ => None,
            },
            And { e, mask } => {
                if *mask < 0 {
                    return Err(());
                }
                match e.eval_at(v, pin) {
                    Ok(None) => None,
                    Ok(Some(x)) => Some(and_mask(x, *mask)),
                    Err(()) => Some((0, i128::from(*mask))),
                }
            }
            Mask(m) => {
                if *m < 0 {
                    return Err(());
                }
                Some((0, i128::from(*m)))
            }
            Facts { def, bits, facts } => {
                let def = match def {
                    Some(d) => match d.eval_at(v, pin) {
                        Ok(None) => return Ok(None),
                        Ok(Some(x)) => Some(x),
                        Err(()) => None,
                    },
                    None => None,
                };
                let mut cand = [range_of(*bits, false), range_of(*bits, true)];
                for c in &mut cand {
                    if let Some(d) = def.filter(|d| within(*d, *c)) {
                        *c = d;
                    }
                }
                // Facts on the register itself first: they narrow the candidates, which
                // can then show that `r + k` of an offset fact does not wrap.
                let direct = facts.iter().filter(|f| f.offset == 0);
                for f in direct.chain(facts.iter().filter(|f| f.offset != 0)) {
                    let Some(b) = f.bound.eval_at(v, pin)? else {
                        return Ok(None);
                    };
                    let range = range_of(*bits, f.signed);
                    if !within(b, range) {
                        return Err(());
                    }
                    let c = &mut cand[usize::from(f.signed)];
                    let k = i128::from(f.offset);
                    if !within((c.0 + k, c.1 + k), range) {
                        // `r + k` may wrap: the fact says nothing this interval can use.
                        continue;
                    }
                    // `r + k` is exact: `r + k < b` is `r < b - k`.
                    let mut n = *c;
                    match f.op {
                        Cmp::Lt => n.1 = n.1.min(b.1 - 1 - k),
                        Cmp::Le => n.1 = n.1.min(b.1 - k),
                        Cmp::Gt => n.0 = n.0.max(b.0 + 1 - k),
                        Cmp::Ge => n.0 = n.0.max(b.0 - k),
                        Cmp::Eq => {
                            n.0 = n.0.max(b.0 - k);
                            n.1 = n.1.min(b.1 - k);
                        }
                        // Only a value at an end of the interval can be taken off it (an
                        // emptied interval: no execution has `r` both equal and not).
                        Cmp::Ne if b.0 == b.1 => {
                            let e = b.0 - k;
                            if n.0 == e {
                                n.0 += 1;
                            } else if n.1 == e {
                                n.1 -= 1;
                            }
                        }
                        Cmp::Ne => {}
                    }
                    if let Some(e) = f.or_eq.map(|e| i128::from(e) - k) {
                        // ... or `r` is `e`: the hull of both, where `e` is possible at all.
                        if (c.0..=c.1).contains(&e) {
                            n = if n.0 > n.1 {
                                (e, e)
                            } else {
                                (n.0.min(e), n.1.max(e))
                            };
                        }
                    }
                    *c = n;
                }
                if cand.iter().any(|c| c.0 > c.1) {
                    return Ok(None);
                }
                let [u, s] = cand;
                Some(if u.1 - u.0 <= s.1 - s.0 { u } else { s })
            }
            Iv {
                bits,
                signed,
                inits,
                steps,
            } => {
                let r = range_of(*bits, *signed);
                let mut least: Option<i128> = None;
                for i in inits {
                    match i.eval_at(v, pin)? {
                        Some(x) if within(x, r) => least = Some(least.map_or(x.0, |l| l.min(x.0))),
                        Some(_) => return Err(()),
                        None => {}
                    }
                }
                let Some(least) = least else {
                    return Err(());
                };
                for s in steps {
                    let Some(st) = s.step.eval_at(v, pin)? else {
                        continue;
                    };
                    if st.0 < 0 || s.guard.signed != *signed {
                        return Err(());
                    }
                    let Some(b) = s.guard.bound.eval_at(v, pin)? else {
                        continue;
                    };
                    let mut top = match s.guard.op {
                        Cmp::Lt => b.1 - 1,
                        Cmp::Le => b.1,
                        Cmp::Gt | Cmp::Ge | Cmp::Eq | Cmp::Ne => return Err(()),
                    };
                    if let Some(e) = s.guard.or_eq {
                        if s.guard.offset != 0 {
                            return Err(());
                        }
                        top = top.max(i128::from(e));
                    }
                    if top + st.1 > r.1 {
                        return Err(());
                    }
                }
                Some((least, r.1))
            }
            Hull(es) => {
                let mut out: Option<(i128, i128)> = None;
                for e in es {
                    if let Some(x) = e.eval_at(v, pin)? {
                        out = Some(out.map_or(x, |o| (o.0.min(x.0), o.1.max(x.1))));
                    }
                }
                out
            }
            Reached { e, when } => {
                for w in when {
                    if let Ok(None) = w.eval_at(v, pin) {
                        return Ok(None);
                    }
                }
                return e.eval_at(v, pin);
            }
            Quot {
                a,
                b,
                min,
                zero_unreached,
                zero_skips,
            } => match (a.eval_at(v, pin)?, b.eval_at(v, pin)?) {
                (Some(x), Some(d)) => {
                    if d.0 != d.1 || d.0 == 0 {
                        return Err(());
                    }
                    // Each thread's quotient is exact: one value that `d` divides, or any
                    // value for a step of one (a remainder loop counting its own threads'
                    // iterations down to zero, one per thread).
                    let (q0, q1) = if x.0 == x.1 && x.0 % d.0 == 0 {
                        (x.0 / d.0, x.0 / d.0)
                    } else if d.0.abs() == 1 {
                        let (a, b) = (x.0 * d.0, x.1 * d.0);
                        (a.min(b), a.max(b))
                    } else {
                        return Err(());
                    };
                    // Threads whose quotient is 0 do not get here; every other one must
                    // take at least `min` steps (or it would wrap around).
                    let q0 = if *zero_unreached && q0 == 0 {
                        if q1 == 0 {
                            return Ok(None);
                        }
                        1
                    } else {
                        q0
                    };
                    // A quotient of 0 that stands: the least other one must reach `min`.
                    let least = match (*zero_skips, q0, q1) {
                        (true, 0, 0) => None,
                        (true, 0, _) => Some(1),
                        _ => Some(q0),
                    };
                    if least.is_some_and(|q| q < i128::from(*min) || q < 0) {
                        return Err(());
                    }
                    Some((q0, q1))
                }
                _ => None,
            },
            Counted {
                init,
                step,
                last,
                no_wrap,
                siblings,
            } => {
                for w in no_wrap {
                    w.eval_at(v, pin)?;
                }
                let (Some(x), Some(st), Some(l)) = (
                    init.eval_at(v, pin)?,
                    step.eval_at(v, pin)?,
                    last.eval_at(v, pin)?,
                ) else {
                    // No execution reaches the loop.
                    return Ok(None);
                };
                let whole = counted_values(v, x, st, l, siblings)?;
                // A loop from a clamped start to a clamped end (`for (h = max(s, 0); h <
                // min(s + 3, H); ++h)`), or a remainder loop of a thread's own iterations:
                // its count depends on its start, and the bounds above treat the two as
                // unrelated (the largest start with the most iterations). Where a part of the
                // start that the count reads too takes few values, each is tried alone.
                // Not again inside a split (its cost would multiply).
                if x.0 == x.1 || !pin.is_empty() {
                    return Ok(whole);
                }
                let mut out = whole;
                for pins in split_pins(v, init, last) {
                    let Ok(s) = counted_pinned(v, init, st, last, siblings, &pins) else {
                        continue;
                    };
                    // Each holds every value: so does their intersection.
                    out = match (out, s) {
                        (Some(w), Some(s)) => checked(w.0.max(s.0), w.1.min(s.1))?,
                        _ => None,
                    };
                }
                out
            }
        })
    }

    pub(super) fn size(&self) -> usize {
        use HostExpr::*;
        match self {
            Const(_) | Param { .. } | Tid(_) | Ntid(_) | Ctaid(_) | Nctaid(_) | Mask(_) => 1,
            Add(a, b) | Sub(a, b) | Mul(a, b) | Div(a, b) | Rem(a, b) | Min(a, b) | Max(a, b) => {
                1 + a.size() + b.size()
            }
            Shl(a, _)
            | In { e: a, .. }
            | Wrap { e: a, .. }
            | Shr { e: a, .. }
            | And { e: a, .. } => 1 + a.size(),
            Facts { def, facts, .. } => {
                1 + def.as_ref().map_or(0, |d| d.size())
                    + facts.iter().map(|f| f.bound.size()).sum::<usize>()
            }
            Iv { inits, steps, .. } => {
                1 + inits.iter().map(HostExpr::size).sum::<usize>()
                    + steps
                        .iter()
                        .map(|s| s.step.size() + s.guard.bound.size())
                        .sum::<usize>()
            }
            Quot { a, b, .. } => 1 + a.size() + b.size(),
            Hull(es) => 1 + es.iter().map(HostExpr::size).sum::<usize>(),
            Reached { e, when } => 1 + e.size() + when.iter().map(HostExpr::size).sum::<usize>(),
            Counted {
                init,
                step,
                last,
                no_wrap,
                siblings,
            } => {
                1 + init.size()
                    + step.size()
                    + last.size()
                    + no_wrap.iter().map(HostExpr::size).sum::<usize>()
                    + siblings
                        .iter()
                        .map(|s| {
                            s.init.size()
                                + s.step.size()
                                + s.facts.iter().map(|f| 1 + f.bound.size()).sum::<usize>()
                        })
                        .sum::<usize>()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_access_holds_on_the_host_only_when_its_offset_is_aligned() {
        let scalars = [None, Some((1u64, 4)), None];
        let v = LaunchValues {
            grid: [4, 1, 1],
            block: [64, 1, 1],
            scalars: &scalars,
            lens: &[1 << 20, u64::MAX, u64::MAX],
        };
        let check = |offset: HostExpr, bytes: u32| HostCheck {
            param: 0,
            array_bytes: None,
            bytes,
            kind: SiteKind::Read,
            loc: None,
            inlined_at: None,
            offset,
        };
        let tid16 = HostExpr::Mul(Box::new(HostExpr::Const(16)), Box::new(HostExpr::Tid(0)));
        // float4 at 16 * tid: aligned, host-checked.
        assert!(check(tid16.clone(), 16).holds(&v));
        // ... plus 4 * skew with skew = 1 (a scalar parameter): 4 past alignment, so the
        // device checks it.
        let skew = HostExpr::Shl(
            Box::new(HostExpr::Param {
                index: 1,
                bytes: 4,
                signed: false,
            }),
            2,
        );
        let skewed = HostExpr::Add(Box::new(tid16.clone()), Box::new(skew));
        assert!(!check(skewed.clone(), 16).holds(&v));
        // A 4-byte access is not held to it (the device checks alignment of 8 and 16 bytes).
        assert!(check(skewed, 4).holds(&v));
        // Unknown low bits (a thread index alone) fail an 8-byte access.
        assert!(!check(HostExpr::Tid(0), 8).holds(&v));
        assert!(check(HostExpr::Shl(Box::new(HostExpr::Tid(0)), 3), 8).holds(&v));
    }

    #[test]
    fn an_offset_fact_is_used_only_where_the_sum_cannot_wrap() {
        let fact = |offset: i64| HostExpr::Facts {
            def: Some(Box::new(HostExpr::Tid(0))),
            bits: 32,
            facts: vec![HostFact {
                op: Cmp::Ge,
                signed: true,
                bound: HostExpr::Const(0),
                offset,
                or_eq: None,
            }],
        };
        let v = LaunchValues {
            grid: [1, 1, 1],
            block: [1024, 1, 1],
            scalars: &[],
            lens: &[],
        };
        // tid - 3 >= 0: tid in [3, 1023].
        assert_eq!(fact(-3).eval(&v), Ok(Some((3, 1023))));
        // tid + (2^31 - 1) >= 0 holds, as bits, only for tid = 0 (the sum wraps otherwise);
        // the host cannot use it and keeps the whole range, never a wrong one.
        assert_eq!(fact(i64::from(i32::MAX)).eval(&v), Ok(Some((0, 1023))));
    }

    #[test]
    fn a_definition_behind_a_test_the_launch_contradicts_leaves_the_hull() {
        // r = (tid.x + 1) & 3: 1, 2 or 3 in a block of 3 threads; 0 too in a block of 4.
        let r = |facts: Vec<HostFact>| HostExpr::Facts {
            def: Some(Box::new(HostExpr::And {
                e: Box::new(HostExpr::Add(
                    Box::new(HostExpr::Tid(0)),
                    Box::new(HostExpr::Const(1)),
                )),
                mask: 3,
            })),
            bits: 32,
            facts,
        };
        let eq0 = |op: Cmp| HostFact {
            op,
            signed: true,
            bound: HostExpr::Const(0),
            offset: 0,
            or_eq: None,
        };
        // A counter started at 100 where `r == 0`, at 7 where `r != 0`.
        let start = HostExpr::Hull(vec![
            HostExpr::Reached {
                e: Box::new(HostExpr::Const(100)),
                when: vec![r(vec![eq0(Cmp::Eq)])],
            },
            HostExpr::Reached {
                e: Box::new(HostExpr::Const(7)),
                when: vec![r(vec![eq0(Cmp::Ne)])],
            },
        ]);
        let at = |block: u32| LaunchValues {
            grid: [1, 1, 1],
            block: [block, 1, 1],
            scalars: &[],
            lens: &[],
        };
        // tid.x in [0, 2]: r in [1, 3], never 0: only the second definition is reached.
        assert_eq!(start.eval(&at(3)), Ok(Some((7, 7))));
        // With 4 threads r takes 0 too: both.
        assert_eq!(start.eval(&at(4)), Ok(Some((7, 100))));
        // A condition that cannot be evaluated says nothing: the value stays.
        let unknown = HostExpr::Reached {
            e: Box::new(HostExpr::Const(5)),
            when: vec![HostExpr::Param {
                index: 9,
                bytes: 4,
                signed: true,
            }],
        };
        assert_eq!(unknown.eval(&at(3)), Ok(Some((5, 5))));
    }

    #[test]
    fn masks_and_wrapped_reads_are_exact_within_one_window() {
        let m = (1i64 << 35) - 8;
        assert_eq!(and_mask((1 << 35, (1 << 35) + 8), m), (0, 8));
        assert_eq!(and_mask((3, 17), 0xff), (3, 17));
        // Across a window, or a mask that is not one run of bits: only [0, mask].
        assert_eq!(and_mask(((1 << 35) - 8, 1 << 35), m), (0, i128::from(m)));
        assert_eq!(and_mask((3, 5), 0b101), (0, 0b101));
        let w = 1i128 << 32;
        assert_eq!(interpret((-5, -1), 32, false), Some((w - 5, w - 1)));
        assert_eq!(interpret((w, w + 3), 32, true), Some((0, 3)));
        assert_eq!(interpret((-1, 1), 32, false), None);
    }

    #[test]
    fn quotients_and_remainders_of_intervals() {
        let v = LaunchValues {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            scalars: &[],
            lens: &[],
        };
        let c = |a: i64| Box::new(HostExpr::Const(a));
        let span =
            |lo: i64, hi: i64| Box::new(HostExpr::Add(c(lo), Box::new(HostExpr::Mask(hi - lo))));
        let rem = |x, d| HostExpr::Rem(x, d).eval(&v);
        assert_eq!(rem(span(0, 5), c(8)), Ok(Some((0, 5))));
        assert_eq!(rem(span(0, 100), c(8)), Ok(Some((0, 7))));
        assert_eq!(rem(span(-100, 3), c(8)), Ok(Some((-7, 3))));
        assert_eq!(rem(span(-3, 3), c(8)), Ok(Some((-3, 3))));
        assert_eq!(rem(span(0, 5), c(0)), Err(()));
        let div = |x, d| HostExpr::Div(x, d).eval(&v);
        assert_eq!(div(span(-9, 17), span(2, 4)), Ok(Some((-4, 8))));
        assert_eq!(div(span(0, 5), span(-1, 4)), Err(()));
    }

    /// A remainder loop counting each thread's own iterations (`(t + p) & 3`, 0 to 3) down
    /// to zero by -1: every thread's count is exact, so the quotient is the interval itself;
    /// a thread with 0 does not enter (where the loop says so), and other steps or counts
    /// below `min` still fail.
    #[test]
    fn a_quotient_by_one_of_a_count_that_varies_by_thread() {
        let scalars = [Some((1u64, 4))];
        let v = LaunchValues {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            scalars: &scalars,
            lens: &[UNKNOWN],
        };
        let b = Box::new;
        let p = HostExpr::Param {
            index: 0,
            bytes: 4,
            signed: false,
        };
        let count = |m| HostExpr::And {
            e: b(HostExpr::Add(b(HostExpr::Tid(0)), b(p.clone()))),
            mask: m,
        };
        let quot = |m, d, min, zero_unreached| HostExpr::Quot {
            a: b(HostExpr::Sub(b(HostExpr::Const(0)), b(count(m)))),
            b: b(HostExpr::Const(d)),
            min,
            zero_unreached,
            zero_skips: false,
        };
        assert_eq!(quot(3, -1, 1, true).eval(&v), Ok(Some((1, 3))));
        assert_eq!(quot(3, -1, 0, false).eval(&v), Ok(Some((0, 3))));
        // A count of 0 in a loop entered regardless would wrap around.
        assert_eq!(quot(3, -1, 1, false).eval(&v), Err(()));
        // After a loop entered only away from its bound, 0 is a count of its own (the loop
        // was skipped); every other count must still reach `min`.
        let skips = |m, min| match quot(m, -1, min, false) {
            HostExpr::Quot { a, b, min, .. } => HostExpr::Quot {
                a,
                b,
                min,
                zero_unreached: false,
                zero_skips: true,
            },
            _ => unreachable!(),
        };
        assert_eq!(skips(3, 1).eval(&v), Ok(Some((0, 3))));
        assert_eq!(skips(0, 1).eval(&v), Ok(Some((0, 0))));
        assert_eq!(skips(3, 2).eval(&v), Err(()));
        // A step of 2 need not divide every thread's distance.
        assert_eq!(quot(3, -2, 1, true).eval(&v), Err(()));
        // Counting up by 1 from a start above the bound: negative counts wrap around.
        assert_eq!(quot(3, 1, 0, false).eval(&v), Err(()));
        // Every thread with 0: none gets in.
        assert_eq!(quot(0, -1, 1, true).eval(&v), Ok(None));
    }

    const UNKNOWN: u64 = super::super::UNKNOWN_LEN;

    /// `for (i = max(2 t - 1, 0); i < min(2 t + 2, n); ++i) in[i]`: the window's start and
    /// its count both follow the thread, so the last index is `n - 1` from every start (the
    /// largest start never has the largest count). A window's end one past the input
    /// (`min(2 t + 2, n + 1)`), a short input, and a window whose `t` is not one value per
    /// thread (`x & 63` of an unknown `x`, which may differ between its occurrences) fail.
    #[test]
    fn a_window_clamped_at_both_ends_is_split_by_its_start() {
        let n = 127i64;
        let scalars = [None, Some((n as u64, 4))];
        let lens = [4 * n as u64, UNKNOWN];
        let v = LaunchValues {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            scalars: &scalars,
            lens: &lens,
        };
        let b = Box::new;
        let c = |k| b(HostExpr::Const(k));
        let pn = HostExpr::Param {
            index: 1,
            bytes: 4,
            signed: true,
        };
        let window = |past: i64, t: &HostExpr| {
            let s = || HostExpr::Sub(b(HostExpr::Shl(b(t.clone()), 1)), c(1));
            let start = || HostExpr::Max(b(s()), c(0));
            let end = HostExpr::Min(
                b(HostExpr::Add(b(s()), c(3))),
                b(HostExpr::Add(b(pn.clone()), c(past))),
            );
            let count = HostExpr::Sub(b(end), b(start()));
            HostCheck {
                param: 0,
                array_bytes: None,
                bytes: 4,
                kind: SiteKind::Read,
                loc: None,
                inlined_at: None,
                offset: HostExpr::Shl(
                    b(HostExpr::Counted {
                        init: b(start()),
                        step: c(1),
                        last: b(HostExpr::Sub(b(count), c(1))),
                        no_wrap: Vec::new(),
                        siblings: Vec::new(),
                    }),
                    2,
                ),
            }
        };
        let tid = HostExpr::Tid(0);
        let ok = window(0, &tid);
        assert_eq!(
            ok.offset.interval(&v),
            Bound::Within(0, 4 * i128::from(n - 1))
        );
        assert!(ok.holds(&v));
        // One element past the input.
        let past = window(1, &tid);
        assert_eq!(
            past.offset.interval(&v),
            Bound::Within(0, 4 * i128::from(n))
        );
        assert!(!past.holds(&v));
        // The input one element short.
        let short = [4 * n as u64 - 4, UNKNOWN];
        assert!(!ok.holds(&LaunchValues { lens: &short, ..v }));
        // Not one value per thread: the start and the count are not split.
        let masked = window(0, &HostExpr::Mask(63));
        assert!(!masked.holds(&v));
    }

    /// One host check with every node and every optional field set, one with none: the JSON
    /// is a stored format (the build cache keeps host checks in its entries), so moving or
    /// renaming anything here must leave it byte for byte as it is.
    #[test]
    fn serialized_forms_are_pinned() {
        use HostExpr as E;
        let b = Box::<E>::new;
        let fact = |offset, or_eq| HostFact {
            op: Cmp::Lt,
            signed: true,
            bound: E::Param {
                index: 1,
                bytes: 4,
                signed: true,
            },
            offset,
            or_eq,
        };
        let offset = E::Hull(vec![
            E::Add(b(E::Const(-1)), b(E::Sub(b(E::Tid(0)), b(E::Ntid(1))))),
            E::Mul(b(E::Ctaid(2)), b(E::Nctaid(0))),
            E::Shl(
                b(E::In {
                    e: b(E::Mask(255)),
                    bits: 32,
                    signed: false,
                }),
                2,
            ),
            E::Wrap {
                e: b(E::Shr {
                    e: b(E::Const(8)),
                    bits: 64,
                    signed: true,
                    k: 3,
                }),
                bits: 32,
                signed: true,
            },
            E::And {
                e: b(E::Div(b(E::Const(9)), b(E::Const(2)))),
                mask: 12,
            },
            E::Rem(
                b(E::Min(b(E::Const(1)), b(E::Const(2)))),
                b(E::Max(b(E::Const(3)), b(E::Const(4)))),
            ),
            E::Facts {
                def: Some(b(E::Tid(0))),
                bits: 32,
                facts: vec![fact(0, None), fact(-1, Some(0))],
            },
            E::Facts {
                def: None,
                bits: 64,
                facts: vec![],
            },
            E::Iv {
                bits: 32,
                signed: false,
                inits: vec![E::Const(0)],
                steps: vec![IvStep {
                    step: E::Ntid(0),
                    guard: fact(0, None),
                }],
            },
            E::Quot {
                a: b(E::Const(8)),
                b: b(E::Const(2)),
                min: 1,
                zero_unreached: true,
                zero_skips: false,
            },
            E::Quot {
                a: b(E::Const(0)),
                b: b(E::Const(-1)),
                min: 1,
                zero_unreached: false,
                zero_skips: true,
            },
            E::Counted {
                init: b(E::Const(0)),
                step: b(E::Const(4)),
                last: b(E::Const(3)),
                no_wrap: vec![E::Const(0)],
                siblings: Vec::new(),
            },
            E::Reached {
                e: b(E::Const(5)),
                when: vec![E::Tid(1)],
            },
        ]);
        let loc = SourceLoc {
            file: "k.cu".into(),
            line: 7,
            column: 3,
        };
        let checks = vec![
            HostCheck {
                param: u32::MAX,
                array_bytes: Some(1024),
                bytes: 16,
                kind: SiteKind::Write,
                loc: Some(loc.clone()),
                inlined_at: Some(loc),
                offset,
            },
            HostCheck {
                param: 0,
                array_bytes: None,
                bytes: 4,
                kind: SiteKind::Read,
                loc: None,
                inlined_at: None,
                offset: E::Tid(0),
            },
        ];
        let json = serde_json::to_string(&checks).unwrap();
        let pinned = concat!(
            r#"[{"param":4294967295,"array_bytes":1024,"bytes":16,"kind":"write","#,
            r#""loc":{"file":"k.cu","line":7,"column":3},"inlined_at":{"file":"k.cu","#,
            r#""line":7,"column":3},"offset":{"hull":[{"add":[{"const":-1},"#,
            r#"{"sub":[{"tid":0},{"ntid":1}]}]},{"mul":[{"ctaid":2},{"nctaid":0}]},"#,
            r#"{"shl":[{"in":{"e":{"mask":255},"bits":32,"signed":false}},2]},"#,
            r#"{"wrap":{"e":{"shr":{"e":{"const":8},"bits":64,"signed":true,"k":3}},"#,
            r#""bits":32,"signed":true}},{"and":{"e":{"div":[{"const":9},{"const":2}]},"#,
            r#""mask":12}},{"rem":[{"min":[{"const":1},{"const":2}]},{"max":[{"const":3},"#,
            r#"{"const":4}]}]},{"facts":{"def":{"tid":0},"bits":32,"facts":[{"op":"lt","#,
            r#""signed":true,"bound":{"param":{"index":1,"bytes":4,"signed":true}}},"#,
            r#"{"op":"lt","signed":true,"bound":{"param":{"index":1,"bytes":4,"#,
            r#""signed":true}},"offset":-1,"or_eq":0}]}},{"facts":{"def":null,"bits":64,"#,
            r#""facts":[]}},{"iv":{"bits":32,"signed":false,"inits":[{"const":0}],"#,
            r#""steps":[{"step":{"ntid":0},"guard":{"op":"lt","signed":true,"#,
            r#""bound":{"param":{"index":1,"bytes":4,"signed":true}}}}]}},"#,
            r#"{"quot":{"a":{"const":8},"b":{"const":2},"min":1,"zero_unreached":true}},"#,
            r#"{"quot":{"a":{"const":0},"b":{"const":-1},"min":1,"zero_unreached":false,"#,
            r#""zero_skips":true}},{"counted":{"init":{"const":0},"step":{"const":4},"last":{"const":3},"#,
            r#""no_wrap":[{"const":0}]}},{"reached":{"e":{"const":5},"when":[{"tid":1}]}}]}},"#,
            r#"{"param":0,"bytes":4,"kind":"read","loc":null,"#,
            r#""inlined_at":null,"offset":{"tid":0}}]"#,
        );
        assert_eq!(json, pinned);
        let back: Vec<HostCheck> = serde_json::from_str(pinned).unwrap();
        assert_eq!(back, checks);
    }
}
