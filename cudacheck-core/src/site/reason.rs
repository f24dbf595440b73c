//! Why an access was left without a check, in the words a report shows.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an access was left unchecked.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// The pointer was loaded from memory (an array of pointers, a struct in memory).
    LoadedPointer,
    /// The pointer is a field of a struct passed by value.
    StructField,
    /// The pointer came out of a device function the compiler did not inline.
    ReturnedPointer,
    /// The address was computed from integers, not from a buffer.
    Computed,
    /// Two pointers were combined, so which buffer the result is in is unclear.
    Ambiguous,
    /// An absolute address.
    Absolute,
    /// The pointer may be in different address spaces.
    MixedSpaces,
    /// A warp-collective or asynchronous access that cannot be skipped for one thread.
    Collective { op: String },
    /// A texture or surface access (the hardware bounds it).
    Texture { op: String },
    /// Another block's shared memory.
    Cluster,
    /// Inside a device function the compiler did not inline.
    NotInlined { function: String },
    /// The opcode's access size could not be read.
    UnknownSize { op: String },
    /// An address of one space used in another.
    SpaceMismatch,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::LoadedPointer => f.write_str(
                "the pointer is loaded from memory (an array of pointers or a struct in memory), so its buffer is unknown",
            ),
            SkipReason::StructField => f.write_str(
                "the pointer is a field of a struct passed by value, so the launch knows no length for it",
            ),
            SkipReason::ReturnedPointer => {
                f.write_str("the pointer is returned by a device function that was not inlined")
            }
            SkipReason::Computed => {
                f.write_str("the address is computed from integers, not from a buffer")
            }
            SkipReason::Ambiguous => f.write_str(
                "the address adds two pointers, so which buffer it is in is unclear",
            ),
            SkipReason::Absolute => f.write_str("the address is an absolute number"),
            SkipReason::MixedSpaces => {
                f.write_str("the pointer may point into different address spaces")
            }
            SkipReason::Collective { op } => write!(
                f,
                "`{op}` is a warp-collective or asynchronous access, which cannot be skipped for one thread"
            ),
            SkipReason::Texture { op } => {
                write!(f, "`{op}` is a texture or surface access, which the hardware bounds")
            }
            SkipReason::Cluster => f.write_str(
                "the access reaches another block's shared memory (`.shared::cluster`)",
            ),
            SkipReason::NotInlined { function } if function.is_empty() => {
                f.write_str("the access is in a device function that was not inlined")
            }
            SkipReason::NotInlined { function } => write!(
                f,
                "the access is in device function `{function}`, which was not inlined (mark it `__forceinline__` to have it checked)"
            ),
            SkipReason::UnknownSize { op } => write!(f, "the size of `{op}` is unknown"),
            SkipReason::SpaceMismatch => {
                f.write_str("the address is in a different address space than the access")
            }
        }
    }
}
