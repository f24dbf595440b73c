//! Three-dimensional extents for grids, blocks and clusters.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A `dim3`: the extent of a grid, a block or a cluster in x, y and z.
///
/// Unlike CUDA's `dim3`, nothing defaults to 1 silently: every component is given, and a zero
/// component is a validation error rather than an empty launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }

    /// `(x, 1, 1)`.
    pub const fn x(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }

    /// `x * y * z` in 64 bits. Two components always fit; the product of three saturates at
    /// `u64::MAX`, which only absurd extents (all three near `u32::MAX`) reach, and which every
    /// limit check still rejects.
    pub const fn volume(self) -> u64 {
        (self.x as u64 * self.y as u64).saturating_mul(self.z as u64)
    }

    /// The components as an array, in x, y, z order.
    pub const fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self::x(x)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Self { x, y, z }
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// The axis of a [`Dim3`] component, for messages that name one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Axis {
    X,
    Y,
    Z,
}

impl Axis {
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    /// The component of `d` along this axis.
    pub const fn of(self, d: Dim3) -> u32 {
        match self {
            Axis::X => d.x,
            Axis::Y => d.y,
            Axis::Z => d.z,
        }
    }
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_saturates_instead_of_overflowing() {
        assert_eq!(Dim3::new(u32::MAX, u32::MAX, u32::MAX).volume(), u64::MAX);
    }

    #[test]
    fn volume_does_not_overflow_u32() {
        let d = Dim3::new(u32::MAX, u32::MAX, 1);
        assert_eq!(d.volume(), u32::MAX as u64 * u32::MAX as u64);
    }

    #[test]
    fn displays_like_a_tuple() {
        assert_eq!(Dim3::new(32, 64, 1).to_string(), "(32, 64, 1)");
    }
}
