//! cudacheck-macros
