//! Values monotone in a loop's iteration number: what a versioned loop's precheck can bound
//! from the first and the last iteration although they are not affine (`(i >> 3) & ~3`,
//! `min(i, w - 1)`, `(i / 4) * 4 + c`).
//!
//! # Why it is sound
//! A [`Mono`] stands for an exact integer function `E(j)` of the iteration number `j` of one
//! entry into the loop, with the register it describes holding `E(j)` modulo `2^w` (its
//! width). Its leaf is a line `a + b*j` (a [`Aff`], which says exactly that: modulo `2^w`),
//! and every other node applies to one monotone operand a function that is non-decreasing
//! or non-increasing in it, with everything else invariant: `+ v`, `v -`, `* v`, `floor(x /
//! 2^k)`, `floor(x / 2^k) * 2^k`, `min(x, v)`, `max(x, v)`. So every node is a monotone
//! function of the leaf's value, and over any set of leaf values lying in `[lo, hi]` each
//! node's values lie between its values at `lo` and at `hi`. The precheck takes for `lo` and
//! `hi` the leaf's least and greatest value over the iterations `0..=J` (`a + min(0, b*J)`
//! and `a + max(0, b*J)`), and over the members of an unrolled loop, whose copies of one
//! access differ only in the leaf's start `a` (the least and greatest start). Hence:
//!
//! - a [`Bounded`] requirement (a node's value in `[lo, hi]`) that the precheck finds true
//!   at both ends holds in every iteration of every member; that is how an operation that
//!   reads its operand as a number (`shr`, `min`, `cvt` to a wider type, an `and` with high
//!   bits clear) is proven to read exactly `E(j)`: the register is `E(j)` modulo `2^w` and
//!   `E(j)` lies in the reading's range;
//! - the precheck computes each node at both ends in 64-bit arithmetic exactly: it fails
//!   unless both operands of every sum lie in `[-LIMIT, LIMIT]` (tested, or implied by a
//!   requirement it tests), and unless every product fits 64 signed bits; an address whose
//!   offsets at both ends lie in the buffer has every iteration's offset in the buffer.
//!
//! All of it is one straight-line block whose failures are or-ed into one predicate, and the
//! fast loop runs only when none failed: a value computed after a failed test does not
//! matter, so a test may rely on the requirements tested anywhere in the block.
//!
//! Whether an operation keeps the modular claim (the register is `E(j)` modulo `2^w`) is
//! argued at each constructor below; `Analysis::monotone` (`version.rs`) builds a `Mono`
//! only through them.

use super::{ext, Aff, Val};

/// The largest magnitude the precheck lets a value of a [`Mono`] take, so that its 64-bit
/// sums and differences of two such values are exact.
pub(super) const LIMIT: i64 = 1 << 62;

/// An exact integer function of the iteration number, monotone over one entry's iterations
/// (module docs). Built only through its constructors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mono {
    /// `a + b*j` (with `Aff`'s `k`: the last iteration's value may come from the counter's
    /// advance).
    Line(Aff),
    /// `m + v`, `v` invariant.
    Plus(Box<Mono>, Val),
    /// `v - m`.
    Minus(Val, Box<Mono>),
    /// `m * v`, `v` invariant (of either sign: the direction may flip, monotone still).
    Times(Box<Mono>, Val),
    /// `floor(m / 2^k)`.
    Shr(Box<Mono>, u32),
    /// `floor(m / 2^k) * 2^k`: the low `k` bits cleared.
    Floor(Box<Mono>, u32),
    /// `min(m, v)`, `v` invariant, both read in one signedness the node's requirement made
    /// exact.
    Min(Box<Mono>, Val),
    /// `max(m, v)`.
    Max(Box<Mono>, Val),
}

/// A requirement the precheck tests at both ends: the node's exact value in `[lo, hi]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bounded {
    pub m: Mono,
    pub lo: i64,
    pub hi: i64,
}

/// The range of a `bits`-bit reading (`bits` 32 or 64), within [`LIMIT`] for 64 bits.
pub(super) fn reading(bits: u32, signed: bool) -> (i64, i64) {
    match (bits, signed) {
        (64, true) => (-LIMIT, LIMIT),
        (64, false) => (0, LIMIT),
        (b, true) => (-(1i64 << (b - 1)), (1i64 << (b - 1)) - 1),
        (b, false) => (0, (1i64 << b) - 1),
    }
}

impl Mono {
    /// A line: linear in `j`, so monotone; the `Aff` is the modular claim.
    pub(super) fn line(a: Aff) -> Mono {
        Mono::Line(a)
    }

    /// `add`/`sub` of an invariant: a ring operation (the claim holds modulo `2^w` with any
    /// representative of `v`), and a shift of a monotone function.
    pub(super) fn plus(self, v: Val) -> Mono {
        Mono::Plus(Box::new(self), v)
    }

    /// `v - m` (`neg` is `0 - m`): a ring operation; reverses the direction.
    pub(super) fn minus_from(self, v: Val) -> Mono {
        Mono::Minus(v, Box::new(self))
    }

    /// `mul.lo`, `shl` by a constant: ring operations; a fixed factor keeps monotonicity.
    pub(super) fn times(self, v: Val) -> Mono {
        Mono::Times(Box::new(self), v)
    }

    /// `shr` by `k`, for an operand whose reading is exact (the caller requires it with a
    /// [`Bounded`]): the result is exactly `floor(x / 2^k)`, non-decreasing in `x`.
    pub(super) fn shr(self, k: u32) -> Mono {
        Mono::Shr(Box::new(self), k)
    }

    /// `and` with a mask of the bits `k..h` (`h` the width, or the operand exact in
    /// `[0, 2^h)`): clearing low bits commutes with reduction modulo `2^w`, so the register
    /// is `floor(x / 2^k) * 2^k` modulo `2^w`, non-decreasing in `x`.
    pub(super) fn floor(self, k: u32) -> Mono {
        if k == 0 {
            self
        } else {
            Mono::Floor(Box::new(self), k)
        }
    }

    /// `min`/`max` with an invariant read exactly as `v` (the caller requires the operand's
    /// reading exact): non-decreasing in `x`.
    pub(super) fn min(self, v: Val) -> Mono {
        Mono::Min(Box::new(self), v)
    }

    /// See [`Mono::min`].
    pub(super) fn max(self, v: Val) -> Mono {
        Mono::Max(Box::new(self), v)
    }

    /// The one operand that varies, of a node other than a line.
    fn operand(&self) -> Option<&Mono> {
        match self {
            Mono::Line(_) => None,
            Mono::Plus(m, _)
            | Mono::Minus(_, m)
            | Mono::Times(m, _)
            | Mono::Shr(m, _)
            | Mono::Floor(m, _)
            | Mono::Min(m, _)
            | Mono::Max(m, _) => Some(m),
        }
    }

    /// The line of the iteration inside (the leaf, where it has a slope).
    pub(super) fn leaf(&self) -> Option<&Aff> {
        match (self, self.operand()) {
            (Mono::Line(a), _) => a.b.is_some().then_some(a),
            (_, Some(m)) => m.leaf(),
            (_, None) => None,
        }
    }

    /// The same function of a line starting at `a` instead (an unrolled loop's copies of
    /// one access differ only there).
    pub(super) fn with_start(&self, a: &Val) -> Mono {
        let inner = |m: &Mono| Box::new(m.with_start(a));
        match self {
            Mono::Line(l) if l.b.is_some() => Mono::Line(Aff {
                a: a.clone(),
                ..l.clone()
            }),
            Mono::Line(_) => self.clone(),
            Mono::Plus(m, v) => Mono::Plus(inner(m), v.clone()),
            Mono::Minus(v, m) => Mono::Minus(v.clone(), inner(m)),
            Mono::Times(m, v) => Mono::Times(inner(m), v.clone()),
            Mono::Shr(m, k) => Mono::Shr(inner(m), *k),
            Mono::Floor(m, k) => Mono::Floor(inner(m), *k),
            Mono::Min(m, v) => Mono::Min(inner(m), v.clone()),
            Mono::Max(m, v) => Mono::Max(inner(m), v.clone()),
        }
    }

    /// Whether a line inside needs the iteration count at the last iteration (its slope is
    /// no known multiple of the counter's step).
    pub(super) fn needs_j(&self) -> bool {
        match (self, self.operand()) {
            (Mono::Line(a), _) => a.b.is_some() && a.k.is_none(),
            (_, Some(m)) => m.needs_j(),
            (_, None) => false,
        }
    }

    /// The requirement that this value lies in the `bits`-bit reading's range.
    pub(super) fn read(&self, bits: u32, signed: bool) -> Bounded {
        let (lo, hi) = reading(bits, signed);
        Bounded {
            m: self.clone(),
            lo,
            hi,
        }
    }
}

/// What the requirements `req` (once the precheck has tested them: only then does it take
/// the fast loop) say of `m`'s values at both ends: a range, from a requirement on `m`
/// itself or through the node from its operand's.
fn known(m: &Mono, req: &[Bounded]) -> Option<(i64, i64)> {
    let own = req
        .iter()
        .filter(|r| r.m == *m)
        .map(|r| (r.lo, r.hi))
        .reduce(|(a, b), (c, d)| (a.max(c), b.min(d)));
    if own.is_some() {
        return own;
    }
    match m {
        Mono::Shr(x, k) => known(x, req).map(|(lo, hi)| (lo >> k, hi >> k)),
        Mono::Floor(x, k) => known(x, req).map(|(lo, hi)| (lo & !((1i64 << k) - 1), hi)),
        _ => None,
    }
}

/// Whether the requirements keep `m` within [`LIMIT`] at both ends, so that the precheck
/// need not test it before adding it.
pub(super) fn within_limit(m: &Mono, req: &[Bounded]) -> bool {
    known(m, req).is_some_and(|(lo, hi)| lo >= -LIMIT && hi <= LIMIT)
}

/// An invariant operand's representative in a `bits`-bit ring operation: its signed reading
/// (any representative keeps the modular claim; the signed one keeps small negative values
/// small, so that later readings pass).
pub(super) fn representative(v: Val, bits: u32) -> Val {
    ext(v, bits, true)
}

/// The mask `and` clears low bits with: the bits `k..h` set (`0 < h <= bits`), nothing
/// else; `(k, h)`.
pub(super) fn low_clear_mask(m: u64, bits: u32) -> Option<(u32, u32)> {
    let m = if bits >= 64 {
        m
    } else {
        m & ((1u64 << bits) - 1)
    };
    if m == 0 {
        return None;
    }
    let k = m.trailing_zeros();
    let ones = (m >> k).trailing_ones();
    let h = k + ones;
    (h == 64 || m >> h == 0).then_some((k, h.min(bits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_that_clear_low_bits_only() {
        assert_eq!(low_clear_mask(!3, 64), Some((2, 64)));
        assert_eq!(low_clear_mask(0x1FFF_FFFF_FFFF_FFFC, 64), Some((2, 61)));
        assert_eq!(low_clear_mask(0xFFFF_FFF0, 32), Some((4, 32)));
        assert_eq!(low_clear_mask(!0u64, 32), Some((0, 32)));
        assert_eq!(low_clear_mask(31, 32), Some((0, 5)));
        assert_eq!(low_clear_mask(0b1010, 32), None);
        assert_eq!(low_clear_mask(0, 32), None);
    }

    #[test]
    fn readings() {
        assert_eq!(reading(32, true), (-(1 << 31), (1 << 31) - 1));
        assert_eq!(reading(32, false), (0, (1 << 32) - 1));
        assert_eq!(reading(64, false), (0, LIMIT));
    }
}
