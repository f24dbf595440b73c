//! Typed operands: what an operand text of an instruction is.
//!
//! The reader keeps operands as the texts PTX writes (`%rd4`, `[%rd7+16]`, `{%f1, %f2}`,
//! `%p1|%p2`, `0x1F`, `0f3F800000`, `%tid.x`, `$L__BB0_3`); [`Operand::parse`] gives their
//! meaning without copying. This is the one place that reads an operand: the one integer
//! literal parser ([`immediate`]), the one register test ([`is_reg`]), the one address reader
//! ([`Address::parse`]).

/// An operand of an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand<'a> {
    /// A virtual register: `%r1`, `%rd12`, `%p3`, `%f2`.
    Reg(&'a str),
    /// A special register: `%tid.x`, `%ntid.y`, `%ctaid.z`, `%laneid`, `%clock64`.
    Special(&'a str),
    /// An integer literal ([`immediate`]).
    Imm(i128),
    /// A floating-point literal: `0f3F800000`, `0d3FF0000000000000`, `1.5`.
    Float(&'a str),
    /// A memory operand `[base+offset]`.
    Addr(Address<'a>),
    /// A vector `{%f1, %f2, _}`: each element an operand (`_` is [`Operand::Sink`]).
    Vector(Vec<Operand<'a>>),
    /// `%p|%q`: the two predicate destinations of `setp`, or `%r|%p` of `elect`, `shfl`.
    Pair(Box<Operand<'a>>, Box<Operand<'a>>),
    /// `_`: a destination that is discarded.
    Sink,
    /// A name: a label, variable, function or parameter (`$L__BB0_3`, `tile`, `k_param_0`).
    Symbol(&'a str),
    /// Anything else (a call's parameter list `(param0, param1)`, a `!%p` operand...), kept
    /// as text: opaque to every analysis.
    Other(&'a str),
}

/// The special registers PTX predefines (`%tid`, `%ntid`, ...), without their `.x` part.
const SPECIAL: &[&str] = &[
    "%tid",
    "%ntid",
    "%ctaid",
    "%nctaid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%clock",
    "%clock64",
    "%clock_hi",
    "%globaltimer",
    "%globaltimer_lo",
    "%globaltimer_hi",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%dynamic_smem_size",
    "%total_smem_size",
    "%aggr_smem_size",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
    "%clusterid",
    "%nclusterid",
    "%is_explicit_cluster",
    "%current_graph_exec",
    "%reserved_smem_offset_begin",
    "%reserved_smem_offset_end",
    "%reserved_smem_offset_cap",
    "%reserved_smem_offset_0",
    "%reserved_smem_offset_1",
];

impl<'a> Operand<'a> {
    /// What the operand text `t` is. Never fails: text it cannot read is [`Operand::Other`].
    pub fn parse(t: &'a str) -> Operand<'a> {
        let t = t.trim();
        if t == "_" {
            return Operand::Sink;
        }
        if let Some(inner) = t.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            return Operand::Vector(split_list(inner).map(Operand::parse).collect());
        }
        if t.starts_with('[') {
            return Address::parse(t).map_or(Operand::Other(t), Operand::Addr);
        }
        if let Some((a, b)) = t.split_once('|') {
            return Operand::Pair(Box::new(Operand::parse(a)), Box::new(Operand::parse(b)));
        }
        if t.starts_with('%') {
            let stem = t.split('.').next().unwrap_or(t);
            if SPECIAL.contains(&stem) || SPECIAL.contains(&t) {
                return Operand::Special(t);
            }
            return if is_reg(t) {
                Operand::Reg(t)
            } else {
                Operand::Other(t)
            };
        }
        if let Some(v) = immediate(t) {
            return Operand::Imm(v);
        }
        if is_float(t) {
            return Operand::Float(t);
        }
        if is_symbol(t) {
            return Operand::Symbol(t);
        }
        Operand::Other(t)
    }

    /// The register this operand is, if it is one.
    pub fn reg(&self) -> Option<&'a str> {
        match self {
            Operand::Reg(r) => Some(r),
            _ => None,
        }
    }

    /// The integer this operand is, if it is a literal.
    pub fn imm(&self) -> Option<i128> {
        match self {
            Operand::Imm(v) => Some(*v),
            _ => None,
        }
    }

    /// Every register the operand names, in order: itself, a vector's or a pair's elements,
    /// an address's base.
    pub fn regs(&self, out: &mut Vec<&'a str>) {
        match self {
            Operand::Reg(r) => out.push(r),
            Operand::Vector(v) => v.iter().for_each(|o| o.regs(out)),
            Operand::Pair(a, b) => {
                a.regs(out);
                b.regs(out);
            }
            Operand::Addr(a) if is_reg(a.base) => out.push(a.base),
            Operand::Other(t) => {
                // `!%p1` (a negated predicate source), `(%r1, %r2)` (a call's argument list):
                // the registers inside still are used.
                for w in t.split(|c: char| !(c == '%' || c == '_' || c.is_ascii_alphanumeric())) {
                    if is_reg(w) && !SPECIAL.contains(&w) {
                        out.push(w);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The registers the operand text `t` names ([`Operand::regs`]).
pub fn regs_of(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    Operand::parse(t).regs(&mut out);
    out
}

/// Splits a vector's or list's inside at its commas.
fn split_list(inner: &str) -> impl Iterator<Item = &str> {
    inner.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// A memory operand: `[%rd4+-8]`, `[tile+16]`, `[%r3]`, `[1024]`, `[k_param_0]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address<'a> {
    /// A register (`%rd4`), a variable or parameter name (`tile`), or empty for an absolute
    /// address.
    pub base: &'a str,
    pub offset: i64,
}

impl<'a> Address<'a> {
    /// Reads `[base]`, `[base+k]`, `[base+-k]`, `[base-k]` or `[k]`; `None` for anything else.
    pub fn parse(op: &'a str) -> Option<Address<'a>> {
        let inner = op.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
        let offset = |t: &str| -> Option<i64> { i64::try_from(immediate(t.trim())?).ok() };
        if let Some(v) = offset(inner) {
            return Some(Address {
                base: "",
                offset: v,
            });
        }
        // The first `+` or `-` after the base (register and symbol names have neither).
        match inner.find(['+', '-']) {
            Some(i) => {
                let k = offset(inner[i + 1..].trim())?;
                let k = if inner.as_bytes()[i] == b'-' {
                    k.checked_neg()?
                } else {
                    k
                };
                Some(Address {
                    base: inner[..i].trim(),
                    offset: k,
                })
            }
            None => Some(Address {
                base: inner,
                offset: 0,
            }),
        }
    }

    /// The base is a register (not a variable, parameter or absolute address).
    pub fn base_is_reg(&self) -> bool {
        is_reg(self.base)
    }
}

/// An integer literal as PTX writes it: decimal `12`, negative `-4`, hexadecimal `0x1F`, octal
/// `017`, binary `0b101`, with an optional `U` suffix. `0F3F800000` (a float) is none.
pub fn immediate(op: &str) -> Option<i128> {
    let op = op.trim();
    let (neg, t) = match op.strip_prefix('-') {
        Some(r) => (true, r.trim_start()),
        None => (false, op),
    };
    let t = t.strip_suffix('U').unwrap_or(t);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        parse_digits(h, 16)?
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        parse_digits(b, 2)?
    } else if t.len() > 1 && t.starts_with('0') {
        parse_digits(&t[1..], 8)?
    } else {
        parse_digits(t, 10)?
    };
    Some(if neg { -v } else { v })
}

fn parse_digits(t: &str, radix: u32) -> Option<i128> {
    if t.is_empty() || !t.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i128::from_str_radix(t, radix).ok()
}

/// `%r1`, `%rd12`, `%p3`, `%f_5`, and the parameter-like `%r<3>` stems are not: a register
/// name is `%` followed by a letter or `_` and letters, digits, `_`, `$` (no `.`, no `<`).
pub fn is_reg(op: &str) -> bool {
    let Some(name) = op.strip_prefix('%') else {
        return false;
    };
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn is_float(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() == 10 && (b[..2] == *b"0f" || b[..2] == *b"0F") {
        return b[2..].iter().all(u8::is_ascii_hexdigit);
    }
    if b.len() == 18 && (b[..2] == *b"0d" || b[..2] == *b"0D") {
        return b[2..].iter().all(u8::is_ascii_hexdigit);
    }
    let t = t.strip_prefix('-').unwrap_or(t);
    t.contains('.') && t.parse::<f64>().is_ok()
}

fn is_symbol(t: &str) -> bool {
    let mut chars = t.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_literals_in_every_base() {
        assert_eq!(immediate("12"), Some(12));
        assert_eq!(immediate("-4"), Some(-4));
        assert_eq!(immediate("0x1F"), Some(31));
        assert_eq!(immediate("0XffU"), Some(255));
        assert_eq!(immediate("017"), Some(15));
        assert_eq!(immediate("0b101"), Some(5));
        assert_eq!(immediate("0"), Some(0));
        assert_eq!(immediate("0xFFFFFFFFFFFFFFFF"), Some(u64::MAX as i128));
        assert_eq!(immediate("0F3F800000"), None);
        assert_eq!(immediate("08"), None, "8 is no octal digit");
        assert_eq!(immediate("%r1"), None);
        assert_eq!(immediate(""), None);
        assert_eq!(immediate("-"), None);
    }

    #[test]
    fn operands_by_kind() {
        assert_eq!(Operand::parse(" %rd4 "), Operand::Reg("%rd4"));
        assert_eq!(Operand::parse("%tid.x"), Operand::Special("%tid.x"));
        assert_eq!(Operand::parse("%laneid"), Operand::Special("%laneid"));
        assert_eq!(Operand::parse("0f3F800000"), Operand::Float("0f3F800000"));
        assert_eq!(Operand::parse("-8"), Operand::Imm(-8));
        assert_eq!(Operand::parse("$L__BB0_3"), Operand::Symbol("$L__BB0_3"));
        assert_eq!(Operand::parse("_"), Operand::Sink);
        assert_eq!(
            Operand::parse("%p1|%p2"),
            Operand::Pair(Box::new(Operand::Reg("%p1")), Box::new(Operand::Reg("%p2")))
        );
        assert_eq!(
            Operand::parse("{%f1, _, %f3}"),
            Operand::Vector(vec![
                Operand::Reg("%f1"),
                Operand::Sink,
                Operand::Reg("%f3")
            ])
        );
        let mut regs = Vec::new();
        Operand::parse("{%f1, _, %f3}").regs(&mut regs);
        Operand::parse("[%rd7+16]").regs(&mut regs);
        Operand::parse("!%p4").regs(&mut regs);
        Operand::parse("[tile+4]").regs(&mut regs);
        assert_eq!(regs, ["%f1", "%f3", "%rd7", "%p4"]);
    }

    #[test]
    fn addresses() {
        let a = |t| Address::parse(t).unwrap();
        assert_eq!(a("[%rd7+16]").base, "%rd7");
        assert_eq!(a("[%rd7+16]").offset, 16);
        assert_eq!(a("[%rd7+-8]").offset, -8);
        assert_eq!(a("[%rd7-8]").offset, -8);
        assert_eq!(a("[ tile + 0x10 ]").base, "tile");
        assert_eq!(a("[ tile + 0x10 ]").offset, 16);
        assert_eq!(a("[1024]").base, "");
        assert_eq!(a("[1024]").offset, 1024);
        assert_eq!(a("[k_param_0]").offset, 0);
        assert!(a("[%rd1]").base_is_reg());
        assert!(!a("[tile]").base_is_reg());
        assert_eq!(Address::parse("%rd1"), None);
        assert_eq!(Address::parse("[%rd1+%rd2]"), None);
    }
}
