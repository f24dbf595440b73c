//! What a compiled kernel uses: the facts the launch validator needs from a CUBIN.

use serde::{Deserialize, Serialize};

use crate::dim::Dim3;

/// One kernel parameter as the compiled code lays it out in the parameter buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ParamSlot {
    /// Position in the parameter list, from 0.
    pub ordinal: u32,
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

impl ParamSlot {
    /// The alignment the compiler gave this parameter: the largest power of two, at most 16
    /// (CUDA aligns kernel parameters to their natural alignment, never past 16), that divides
    /// its offset and is not larger than its size rounded up to a power of two.
    pub fn implied_alignment(&self) -> u32 {
        let by_size = self.size.max(1).next_power_of_two().min(16);
        let by_offset = if self.offset == 0 {
            16
        } else {
            1 << self.offset.trailing_zeros().min(4)
        };
        by_size.min(by_offset)
    }
}

/// The resources of one kernel (`__global__` function) in a CUBIN, as `ptxas -v` reports
/// them and `cuFuncGetAttribute` returns them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// The symbol in the CUBIN: the mangled name for C++ kernels, the plain name for `extern "C"`.
    pub symbol: String,
    /// Registers per thread.
    pub registers: u32,
    /// Statically declared `__shared__` memory, bytes per block.
    pub static_shared_bytes: u32,
    /// Local memory (stack frame) per thread, bytes.
    pub local_bytes: u32,
    /// Bytes spilled from registers to local memory by stores.
    pub spill_store_bytes: u32,
    /// Bytes reloaded from local memory by loads of spilled registers.
    pub spill_load_bytes: u32,
    /// `__constant__` bytes the kernel's module uses (bank 0 user constants), if recorded.
    pub const_bytes: u32,
    /// The parameter buffer's total size in bytes.
    pub param_bytes: u32,
    /// Each parameter's ordinal, offset and size, in ordinal order.
    pub params: Vec<ParamSlot>,
    /// `__launch_bounds__(N)`'s N, or `__maxnreg__`/`.maxntid` given as a total.
    pub max_threads_per_block: Option<u32>,
    /// `__launch_bounds__(N, M)`'s M: the minimum blocks per SM asked for.
    pub min_blocks_per_sm: Option<u32>,
    /// A required block size (`.reqntid`, from `__cluster_dims__`-style or explicit attributes).
    pub required_block: Option<Dim3>,
    /// `.maxntid` as three dimensions when the compiler recorded them that way.
    pub max_block: Option<Dim3>,
    /// A compile-time cluster size (`__cluster_dims__`), sm_90 and later.
    pub cluster_dims: Option<Dim3>,
    /// Explicit `__maxnreg__` / `--maxrregcount` cap if recorded in the CUBIN.
    pub max_registers: Option<u32>,
}

impl KernelResources {
    /// A kernel with only a name and a register count; handy in tests of the validator.
    pub fn with_registers(symbol: impl Into<String>, registers: u32) -> Self {
        Self {
            symbol: symbol.into(),
            registers,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_follows_offset_and_size() {
        let p = |offset, size| ParamSlot {
            ordinal: 0,
            offset,
            size,
        };
        assert_eq!(p(0, 8).implied_alignment(), 8);
        assert_eq!(p(8, 4).implied_alignment(), 4);
        assert_eq!(p(12, 4).implied_alignment(), 4);
        assert_eq!(p(16, 16).implied_alignment(), 16);
        assert_eq!(p(4, 12).implied_alignment(), 4);
    }
}
