//! cudacheck
