//! (in progress)
mod occupancy;
pub use occupancy::*;
