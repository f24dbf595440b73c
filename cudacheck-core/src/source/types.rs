//! The C types a kernel's parameters, shared arrays and struct fields are written in, normalised
//! so that every spelling of one type compares equal (`unsigned` == `unsigned int`,
//! `float const*` == `const float *`), and their sizes as the host ABI (Linux x86-64 / aarch64,
//! LP64) lays them out: CUDA requires device code to use the host's data model.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A scalar (arithmetic) type. Spellings that name the same type map to one variant
/// (`unsigned int`, `unsigned`; `long int`, `long`; `signed`, `int`); fixed-width typedefs keep
/// their own variant so messages can repeat what the user wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Scalar {
    Bool,
    /// Plain `char`. Its signedness is the host's: signed on x86-64, unsigned on aarch64 Linux.
    Char,
    SignedChar,
    UnsignedChar,
    Short,
    UnsignedShort,
    Int,
    UnsignedInt,
    Long,
    UnsignedLong,
    LongLong,
    UnsignedLongLong,
    Float,
    Double,
    /// `__half` (also spelled `half`), from `cuda_fp16.h`.
    Half,
    /// `__nv_bfloat16` (also spelled `nv_bfloat16`), from `cuda_bf16.h`.
    BFloat16,
    SizeT,
    PtrdiffT,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
}

impl Scalar {
    /// The scalar a single type name denotes: a typedef such as `size_t`, `uint32_t`, `__half`,
    /// or a one-word builtin such as `float`. `std::` and `cuda::std::` prefixes are accepted.
    pub fn from_name(name: &str) -> Option<Scalar> {
        let name = name
            .trim()
            .trim_start_matches("::")
            .trim_start_matches("cuda::std::")
            .trim_start_matches("std::");
        Some(match name {
            "size_t" => Scalar::SizeT,
            "ptrdiff_t" => Scalar::PtrdiffT,
            "int8_t" => Scalar::Int8,
            "int16_t" => Scalar::Int16,
            "int32_t" => Scalar::Int32,
            "int64_t" => Scalar::Int64,
            "uint8_t" => Scalar::Uint8,
            "uint16_t" => Scalar::Uint16,
            "uint32_t" => Scalar::Uint32,
            "uint64_t" => Scalar::Uint64,
            "__half" | "half" => Scalar::Half,
            "__nv_bfloat16" | "nv_bfloat16" => Scalar::BFloat16,
            other => return Scalar::from_words(&[other]),
        })
    }

    /// The scalar a sequence of builtin type specifiers denotes, in any order
    /// (`unsigned long long int`, `long unsigned`, `signed char`), or `None` when the words do
    /// not form an arithmetic type cudacheck knows (`long double`, `void`, a typedef name).
    pub fn from_words(words: &[&str]) -> Option<Scalar> {
        let (mut signed, mut unsigned, mut short, mut long) = (false, false, 0, 0);
        let mut base: Option<&str> = None;
        for w in words {
            match *w {
                "signed" | "__signed" | "__signed__" => signed = true,
                "unsigned" => unsigned = true,
                "short" => short += 1,
                "long" => long += 1,
                "int" | "char" | "bool" | "float" | "double" if base.is_none() => base = Some(w),
                _ => return None,
            }
        }
        if signed && unsigned || short > 1 || long > 2 || short > 0 && long > 0 {
            return None;
        }
        let int_like = matches!(base, None | Some("int"));
        Some(match base {
            Some("bool") if !(signed || unsigned || short + long > 0) => Scalar::Bool,
            Some("float") if !(signed || unsigned || short + long > 0) => Scalar::Float,
            Some("double") if !(signed || unsigned || short + long > 0) => Scalar::Double,
            Some("char") if short + long == 0 => match (signed, unsigned) {
                (true, _) => Scalar::SignedChar,
                (_, true) => Scalar::UnsignedChar,
                _ => Scalar::Char,
            },
            _ if !int_like => return None,
            _ if base.is_none() && !(signed || unsigned || short + long > 0) => return None,
            _ => match (unsigned, short, long) {
                (false, 1, _) => Scalar::Short,
                (true, 1, _) => Scalar::UnsignedShort,
                (false, _, 1) => Scalar::Long,
                (true, _, 1) => Scalar::UnsignedLong,
                (false, _, 2) => Scalar::LongLong,
                (true, _, 2) => Scalar::UnsignedLongLong,
                (false, ..) => Scalar::Int,
                (true, ..) => Scalar::UnsignedInt,
            },
        })
    }

    /// Size in bytes under the LP64 data model CUDA shares with 64-bit Linux hosts.
    pub fn size_bytes(&self) -> u32 {
        use Scalar::*;
        match self {
            Bool | Char | SignedChar | UnsignedChar | Int8 | Uint8 => 1,
            Short | UnsignedShort | Half | BFloat16 | Int16 | Uint16 => 2,
            Int | UnsignedInt | Float | Int32 | Uint32 => 4,
            Long | UnsignedLong | LongLong | UnsignedLongLong | Double | SizeT | PtrdiffT
            | Int64 | Uint64 => 8,
        }
    }

    /// Alignment in bytes; every CUDA scalar is aligned to its size.
    pub fn align(&self) -> u32 {
        self.size_bytes()
    }

    /// The Rust type with the same size, alignment and meaning, as a path a macro can emit.
    ///
    /// `long` is `i64` (LP64). Plain `char` is `i8`: that is its signedness on x86-64; on aarch64
    /// Linux `char` is unsigned, but the bits passed are the same, so `i8` is still ABI-correct.
    /// `__half` and `__nv_bfloat16` are the `half` crate's types, which cudarc accepts.
    pub fn rust_equivalent(&self) -> &'static str {
        use Scalar::*;
        match self {
            Bool => "bool",
            Char | SignedChar | Int8 => "i8",
            UnsignedChar | Uint8 => "u8",
            Short | Int16 => "i16",
            UnsignedShort | Uint16 => "u16",
            Int | Int32 => "i32",
            UnsignedInt | Uint32 => "u32",
            Long | LongLong | Int64 => "i64",
            UnsignedLong | UnsignedLongLong | Uint64 => "u64",
            Float => "f32",
            Double => "f64",
            Half => "half::f16",
            BFloat16 => "half::bf16",
            SizeT => "usize",
            PtrdiffT => "isize",
        }
    }

    /// The canonical C spelling.
    pub fn c_name(&self) -> &'static str {
        use Scalar::*;
        match self {
            Bool => "bool",
            Char => "char",
            SignedChar => "signed char",
            UnsignedChar => "unsigned char",
            Short => "short",
            UnsignedShort => "unsigned short",
            Int => "int",
            UnsignedInt => "unsigned int",
            Long => "long",
            UnsignedLong => "unsigned long",
            LongLong => "long long",
            UnsignedLongLong => "unsigned long long",
            Float => "float",
            Double => "double",
            Half => "__half",
            BFloat16 => "__nv_bfloat16",
            SizeT => "size_t",
            PtrdiffT => "ptrdiff_t",
            Int8 => "int8_t",
            Int16 => "int16_t",
            Int32 => "int32_t",
            Int64 => "int64_t",
            Uint8 => "uint8_t",
            Uint16 => "uint16_t",
            Uint32 => "uint32_t",
            Uint64 => "uint64_t",
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.c_name())
    }
}

/// The type of a parameter, field or shared array element, as the source declares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum CudaType {
    Scalar(Scalar),
    /// `void`, which only makes sense behind a pointer.
    Void,
    /// `T*` with its qualifiers: `const T* __restrict__ const` has `pointee_const`, `restrict`
    /// and `const_pointer` all set.
    Pointer {
        pointee: Box<CudaType>,
        pointee_const: bool,
        restrict: bool,
        const_pointer: bool,
    },
    /// A type known only by name: a struct, a typedef, a vector type such as `float4`, a
    /// template parameter such as `T`, or a template-id such as `Foo<int>`.
    Named(String),
    /// `T&` or `T&&`. Kernels cannot take references (the host's address is meaningless on the
    /// device); the model keeps them so the checker can say so.
    Reference {
        referent: Box<CudaType>,
        referent_const: bool,
        rvalue: bool,
    },
    /// `T[len]`; `len` is the expression as written, `None` for `[]`. As a kernel parameter an
    /// array decays to a pointer, as in C.
    Array {
        elem: Box<CudaType>,
        len: Option<String>,
    },
    /// Anything else (function pointers, `auto`, `decltype(...)`, `long double`), as written.
    Unknown(String),
}

impl CudaType {
    /// The scalar, if this is one.
    pub fn as_scalar(&self) -> Option<Scalar> {
        match self {
            CudaType::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    /// Whether this is a pointer (of any depth).
    pub fn is_pointer(&self) -> bool {
        matches!(self, CudaType::Pointer { .. })
    }

    /// Size and alignment in bytes, where they follow from the type alone: scalars, pointers
    /// (8 bytes on the 64-bit hosts CUDA supports), CUDA vector types, and arrays of those with
    /// a literal length. Structs need the model: see
    /// [`StructDecl::size_align`](super::StructDecl::size_align).
    pub fn size_align(&self) -> Option<(u32, u32)> {
        self.layout(&|_| None)
    }

    /// Like [`size_align`](Self::size_align), asking `named` for the layout of a named type that
    /// is not a builtin vector type.
    pub(crate) fn layout(&self, named: &dyn Fn(&str) -> Option<(u32, u32)>) -> Option<(u32, u32)> {
        match self {
            CudaType::Scalar(s) => Some((s.size_bytes(), s.align())),
            CudaType::Pointer { .. } => Some((8, 8)),
            CudaType::Named(n) => vector_layout(n).or_else(|| named(n)),
            CudaType::Array { elem, len } => {
                let n = parse_int_literal(len.as_deref()?)?;
                let (size, align) = elem.layout(named)?;
                Some((u32::try_from(n).ok()?.checked_mul(size)?, align))
            }
            CudaType::Void | CudaType::Reference { .. } | CudaType::Unknown(_) => None,
        }
    }
}

impl fmt::Display for CudaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaType::Scalar(s) => write!(f, "{s}"),
            CudaType::Void => f.write_str("void"),
            CudaType::Named(n) | CudaType::Unknown(n) => f.write_str(n),
            CudaType::Pointer {
                pointee,
                pointee_const,
                restrict,
                const_pointer,
            } => {
                // A pointer pointee prints its own `const` after its `*`; anything else takes
                // the conventional leading `const`.
                if *pointee_const && !pointee.is_pointer() {
                    f.write_str("const ")?;
                }
                write!(f, "{pointee}*")?;
                if *const_pointer {
                    f.write_str(" const")?;
                }
                if *restrict {
                    f.write_str(" __restrict__")?;
                }
                Ok(())
            }
            CudaType::Reference {
                referent,
                referent_const,
                rvalue,
            } => {
                if *referent_const {
                    f.write_str("const ")?;
                }
                write!(f, "{referent}{}", if *rvalue { "&&" } else { "&" })
            }
            CudaType::Array { .. } => {
                let mut elem = self;
                let mut dims = String::new();
                while let CudaType::Array { elem: inner, len } = elem {
                    dims.push_str(&format!("[{}]", len.as_deref().unwrap_or("")));
                    elem = inner;
                }
                write!(f, "{elem}{dims}")
            }
        }
    }
}

/// Size and alignment of CUDA's builtin vector types, as `vector_types.h` (CUDA 13) declares
/// them for LP64 hosts. The three-component types are not padded to a power of two; the
/// deprecated four-component 64-bit types (`double4`, `long4`, ...) are 16-byte aligned.
pub fn vector_layout(name: &str) -> Option<(u32, u32)> {
    let name = name.trim_start_matches("::");
    Some(match name {
        "dim3" => (12, 4),
        "__half2" | "half2" | "__nv_bfloat162" | "nv_bfloat162" => (4, 4),
        _ => {
            let (base, rest) = [
                ("ulonglong", 8),
                ("longlong", 8),
                ("double", 8),
                ("ushort", 2),
                ("short", 2),
                ("ulong", 8),
                ("long", 8),
                ("float", 4),
                ("uchar", 1),
                ("char", 1),
                ("uint", 4),
                ("int", 4),
            ]
            .iter()
            .find_map(|(base, size)| name.strip_prefix(base).map(|rest| (*size, rest)))?;
            let elem: u32 = base;
            match rest {
                "1" => (elem, elem),
                "2" => (2 * elem, 2 * elem),
                "3" => (3 * elem, elem),
                // 4 x 1, 2 or 4 bytes: aligned to the whole vector (char4, short4, int4, float4).
                "4" if elem <= 4 => (4 * elem, 4 * elem),
                "4" | "4_16a" => (4 * elem, 16),
                "4_32a" => (4 * elem, 32),
                _ => return None,
            }
        }
    })
}

/// An integer literal as C writes it (`256`, `0x100`, `256u`, `1'024`), or `None` for any other
/// expression.
pub fn parse_int_literal(text: &str) -> Option<u64> {
    let t: String = text.trim().chars().filter(|c| *c != '\'').collect();
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if let Some(bin) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(bin, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_normalise() {
        use Scalar::*;
        assert_eq!(Scalar::from_words(&["unsigned"]), Some(UnsignedInt));
        assert_eq!(Scalar::from_words(&["unsigned", "int"]), Some(UnsignedInt));
        assert_eq!(Scalar::from_words(&["long", "int"]), Some(Long));
        assert_eq!(Scalar::from_words(&["signed"]), Some(Int));
        assert_eq!(
            Scalar::from_words(&["long", "unsigned", "long"]),
            Some(UnsignedLongLong)
        );
        assert_eq!(Scalar::from_words(&["signed", "char"]), Some(SignedChar));
        assert_eq!(Scalar::from_words(&["short", "int"]), Some(Short));
        assert_eq!(Scalar::from_words(&["long", "double"]), None);
        assert_eq!(Scalar::from_words(&["unsigned", "float"]), None);
        assert_eq!(Scalar::from_name("std::size_t"), Some(SizeT));
        assert_eq!(Scalar::from_name("half"), Some(Half));
        assert_eq!(Scalar::from_name("float4"), None);
    }

    #[test]
    fn rust_equivalents_and_sizes() {
        assert_eq!(Scalar::Long.rust_equivalent(), "i64");
        assert_eq!(Scalar::Char.rust_equivalent(), "i8");
        assert_eq!(Scalar::BFloat16.rust_equivalent(), "half::bf16");
        assert_eq!(Scalar::SizeT.rust_equivalent(), "usize");
        assert_eq!(Scalar::Half.size_bytes(), 2);
        assert_eq!(Scalar::UnsignedLong.size_bytes(), 8);
    }

    #[test]
    fn vector_types_follow_vector_types_h() {
        assert_eq!(vector_layout("float2"), Some((8, 8)));
        assert_eq!(vector_layout("float3"), Some((12, 4)));
        assert_eq!(vector_layout("float4"), Some((16, 16)));
        assert_eq!(vector_layout("int4"), Some((16, 16)));
        assert_eq!(vector_layout("double2"), Some((16, 16)));
        assert_eq!(vector_layout("double4"), Some((32, 16)));
        assert_eq!(vector_layout("uchar4"), Some((4, 4)));
        assert_eq!(vector_layout("short3"), Some((6, 2)));
        assert_eq!(vector_layout("longlong4_32a"), Some((32, 32)));
        assert_eq!(vector_layout("float5"), None);
        assert_eq!(vector_layout("Point"), None);
    }

    #[test]
    fn display_is_c_spelling() {
        let p = CudaType::Pointer {
            pointee: Box::new(CudaType::Scalar(Scalar::Float)),
            pointee_const: true,
            restrict: true,
            const_pointer: false,
        };
        assert_eq!(p.to_string(), "const float* __restrict__");
        let pp = CudaType::Pointer {
            pointee: Box::new(CudaType::Pointer {
                pointee: Box::new(CudaType::Scalar(Scalar::Int)),
                pointee_const: true,
                restrict: false,
                const_pointer: true,
            }),
            pointee_const: true,
            restrict: false,
            const_pointer: false,
        };
        assert_eq!(pp.to_string(), "const int* const*");
    }

    #[test]
    fn int_literals() {
        assert_eq!(parse_int_literal("256"), Some(256));
        assert_eq!(parse_int_literal("0x100"), Some(256));
        assert_eq!(parse_int_literal("256u"), Some(256));
        assert_eq!(parse_int_literal("BLOCK"), None);
        assert_eq!(parse_int_literal("2*64"), None);
    }
}
