//! cudacheck beside this crate's cudarc line (see Cargo.toml): the shared tests of
//! `../../plain.rs`.

#[path = "../../common.rs"]
mod common;

include!("../../plain.rs");
