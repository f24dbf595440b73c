//! Block sizes checked at compile time: `Block::<256>::new()` or `block!(16, 16)` fails to
//! compile when the block breaks a limit that holds on every GPU cudacheck supports
//! ([`PORTABLE`]).

use cudacheck_core::limits::PORTABLE;
use cudacheck_core::Dim3;

/// A block of `X x Y x Z` threads, validated when the program is compiled.
///
/// ```
/// let b = cudacheck::Block::<16, 16>::new();
/// assert_eq!(cudacheck::core::Dim3::from(b), cudacheck::core::Dim3::new(16, 16, 1));
/// ```
///
/// ```compile_fail
/// // 2048 threads: more than any GPU allows per block.
/// let b = cudacheck::Block::<2048>::new();
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Block<const X: u32, const Y: u32 = 1, const Z: u32 = 1>;

impl<const X: u32, const Y: u32, const Z: u32> Block<X, Y, Z> {
    /// Evaluating this fails the build when the block is invalid on some supported GPU.
    pub const VALID: () = {
        assert!(
            X > 0 && Y > 0 && Z > 0,
            "block dimensions must be at least 1 (CUDA rejects a zero extent)"
        );
        assert!(
            X <= PORTABLE.max_block_dim.x,
            "block x is larger than 1024 (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)"
        );
        assert!(
            Y <= PORTABLE.max_block_dim.y,
            "block y is larger than 1024 (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)"
        );
        assert!(
            Z <= PORTABLE.max_block_dim.z,
            "block z is larger than 64 (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)"
        );
        assert!(
            (X as u64) * (Y as u64) * (Z as u64) <= PORTABLE.max_threads_per_block as u64,
            "block has more than 1024 threads (CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK); use \
             fewer threads per block and more blocks"
        );
    };

    /// The block, after the compile-time check.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID;
        Block
    }

    /// As a [`Dim3`].
    pub const fn dim(self) -> Dim3 {
        Dim3::new(X, Y, Z)
    }
}

impl<const X: u32, const Y: u32, const Z: u32> From<Block<X, Y, Z>> for Dim3 {
    fn from(b: Block<X, Y, Z>) -> Dim3 {
        b.dim()
    }
}

/// A compile-time checked block: `block!(256)`, `block!(16, 16)`, `block!(8, 8, 4)`.
#[macro_export]
macro_rules! block {
    ($x:expr) => {
        $crate::Block::<{ $x }>::new()
    };
    ($x:expr, $y:expr) => {
        $crate::Block::<{ $x }, { $y }>::new()
    };
    ($x:expr, $y:expr, $z:expr) => {
        $crate::Block::<{ $x }, { $y }, { $z }>::new()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_blocks_convert_to_dim3() {
        assert_eq!(Dim3::from(Block::<256>::new()), Dim3::x(256));
        assert_eq!(Dim3::from(crate::block!(16, 16)), Dim3::new(16, 16, 1));
        assert_eq!(Dim3::from(crate::block!(8, 8, 16)), Dim3::new(8, 8, 16));
    }
}
