//! The `#[checked_kernel]` attribute of [cudacheck](https://docs.rs/cudacheck). Use it through
//! the `cudacheck` crate (`cudacheck::checked_kernel`), which re-exports it and provides the
//! runtime the generated code calls.
//!
//! ```ignore
//! use cudacheck::cudarc::driver::CudaSlice;
//!
//! // 1. Declare the kernel in Rust, next to its CUDA source.
//! #[cudacheck::checked_kernel(file = "kernels/saxpy.cu", block = 256)]
//! pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);
//!
//! // 2. Launch it: the grid is the only configuration left to give.
//! unsafe { saxpy(&stream, n.div_ceil(256) as u32, &mut y, &x, 2.0, n)? };
//! ```
//!
//! Entries are read one at a time: a malformed one is one error at that entry, and the others
//! still count.
//!
//! At compile time the attribute reads the CUDA file with cudacheck's CUDA parser and checks
//! the Rust declaration against the kernel's parameters (count, order, type, mutability, the
//! layout of structs passed by value), checks literal launch configurations against the limits
//! every GPU shares (or, with `arch = "sm_XY"`, against the kernel as NVRTC compiles it for
//! that architecture: its registers, static shared memory and launch bounds), and reports every
//! mistake at once, each at the offending tokens. Where NVRTC is absent, the resources
//! `cudacheck prepare` recorded in the crate's `.cudacheck/` are used, and with none the
//! build never fails for want of NVRTC.
//!
//! # Why the generated function is `unsafe`
//!
//! A kernel may read and write any device memory: cudarc's launches are `unsafe` for that
//! reason. The attribute proves that the types passed are the types the kernel declares, and
//! the runtime validates the launch against the device, but neither can prove that the
//! kernel's indexing stays inside the buffers. The caller promises that, so the wrapper is an
//! `unsafe fn` (bounds-checking instrumentation, `instrument = true`, turns the promise into a
//! runtime check).
//!
//! # Keys
//!
//! | key | value |
//! |---|---|
//! | `file` | path of the `.cu` file, relative to the crate's `Cargo.toml` |
//! | `source` | the CUDA source inline, instead of `file` |
//! | `ptx_file` | a PTX module (what `nvcc --ptx` writes), relative to `Cargo.toml`, instead of `file`: the signature is checked against its parameter list |
//! | `ptx` | PTX text inline, instead of `ptx_file` |
//! | `name` | the CUDA kernel name when it differs from the Rust name; `"scale<float>"` for a template |
//! | `arch` | `"sm_90"` or `["sm_80", "sm_90"]`: compile the kernel for each at `cargo build` (NVRTC, or what `cudacheck prepare` recorded) and check literal configurations against its registers, shared memory and the architecture's limits |
//! | `include` | include directories, relative to `Cargo.toml` |
//! | `define` / `defines` | `define = ["TILE=16"]` or `defines(TILE = 16)` |
//! | `max_registers` | `--maxrregcount` |
//! | `block`, `grid` | fixed launch dimensions, `256` or `(16, 16, 1)` |
//! | `shared` | dynamic shared memory bytes per block |
//! | `cluster` | blocks per thread-block cluster, `(2, 1, 1)` (sm_90 and later) |
//! | `requires` | `requires(expr, ..)`: conditions over the parameters, checked before every launch |
//! | `instrument` | bounds checking, `true`/`false` |
//! | `races` | race checking (shared-memory races, misused barriers; implies bounds checking), `true`/`false` |
//! | `init` | init checking (reads of memory nothing wrote: shared memory, and global memory of `cudacheck::alloc_uninit` buffers; implies bounds checking), `true`/`false` |
//!
//! The stages each live in one module and only look forward: `attr` (syntax) -> `model`
//! (typed values) -> `check` (rules) -> `expand` (`quote!` only); `typemap` maps Rust
//! types to CUDA types.

use proc_macro::TokenStream;

mod attr;
mod check;
mod expand;
mod model;
mod typemap;

/// Declares a CUDA kernel and generates a checked, typed launch function for it.
///
/// See the [crate documentation](crate) for the keys and what is checked.
#[proc_macro_attribute]
pub fn checked_kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_attribute(args.into(), item.into()).into()
}

/// The whole pipeline on `proc_macro2` tokens, so unit tests can run it outside a compiler.
fn expand_attribute(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let item: attr::KernelItem = match syn::parse2(item) {
        Ok(item) => item,
        // Without a signature there is nothing to stub; the parse error says what is expected.
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = model::Errors::default();
    let args = attr::parse_args(args, &mut errors);
    let model = model::build(args, item, &mut errors);
    let checked = check::check(&model, &mut errors);
    match errors.into_error() {
        Some(e) => expand::stub(&model, e),
        None => expand::wrapper(&model, &checked),
    }
}

#[cfg(test)]
mod tests;
