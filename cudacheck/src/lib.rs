//! cudacheck: CUDA kernel launches that fail early, loudly and precisely.
#![warn(unsafe_op_in_unsafe_fn)]

pub mod nvrtc;

pub use cudacheck_core as core;
