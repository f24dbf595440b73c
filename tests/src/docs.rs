//! The user documentation's code blocks, compiled as doc tests so that they cannot rot: every
//! `rust` block of the README and of each `docs/` page is one doc test of this crate (`cargo
//! test --doc -p cudacheck-tests`; the pure tier of `scripts/test.sh` runs them). Blocks that
//! need a GPU are `no_run`: compiled, not run.
//!
//! `#[checked_kernel(file = "kernels/saxpy.cu")]` in the docs names a path relative to the
//! crate's `Cargo.toml`, as in a user's crate; `tests/kernels` links to the repository's
//! `kernels/` so that the same text compiles here.

/// `README.md`.
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// `docs/README.md`.
#[doc = include_str!("../../docs/README.md")]
pub struct Index;

/// `docs/guide.md`.
#[doc = include_str!("../../docs/guide.md")]
pub struct Guide;

/// `docs/reference.md`.
#[doc = include_str!("../../docs/reference.md")]
pub struct Reference;

/// `docs/limits.md`.
#[doc = include_str!("../../docs/limits.md")]
pub struct Limits;

/// `docs/run.md`.
#[doc = include_str!("../../docs/run.md")]
pub struct Run;

/// `docs/results.md`.
#[doc = include_str!("../../docs/results.md")]
pub struct Results;
