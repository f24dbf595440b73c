//! [`DriverError`]: a failed driver call, beside the FFI that produces it.

use thiserror::Error;

use super::codes;

/// A driver call that failed: which call, the `CUresult`, its name and (through
/// [`explanation`](Self::explanation)) its usual causes.
///
/// The explanation is looked up from `code` rather than stored, which keeps this (and so
/// [`enum@crate::Error`]) small enough to return cheaply from users' own functions.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{call} failed with {name} ({code}): {}", self.explanation())]
pub struct DriverError {
    /// The driver API function, e.g. `cuLaunchKernel`.
    pub call: &'static str,
    /// The raw `CUresult`.
    pub code: u32,
    /// `CUDA_ERROR_...`, or "an unknown CUresult" for a code this version does not know (the
    /// message shows `code` beside it).
    pub name: &'static str,
}

impl DriverError {
    /// The error `code` returned by `call`.
    pub fn new(call: &'static str, code: u32) -> Self {
        Self {
            call,
            code,
            name: codes::describe(code).0,
        }
    }

    /// What usually causes this error, written for a person.
    pub fn explanation(&self) -> &'static str {
        codes::describe(self.code).1
    }

    /// From cudarc's error type.
    pub fn from_cudarc(call: &'static str, e: cudarc::driver::DriverError) -> Self {
        Self::new(call, e.0 as u32)
    }

    /// Whether this error leaves the context unusable (a "sticky" error).
    pub fn poisons(&self) -> bool {
        codes::poisons(self.code)
    }

    /// Whether the driver refused the call because the context it needs is not current
    /// (`CUDA_ERROR_INVALID_CONTEXT`: none is; `CUDA_ERROR_INVALID_HANDLE`: another is, so
    /// the handle is not one of the current context's).
    pub fn is_not_current(&self) -> bool {
        self.code == codes::INVALID_CONTEXT || self.code == codes::INVALID_HANDLE
    }

    /// Whether this is `CUDA_ERROR_OUT_OF_MEMORY`.
    pub fn is_out_of_memory(&self) -> bool {
        self.code == codes::OUT_OF_MEMORY
    }
}

/// `libcuda.so.1` could not be loaded (see [`ensure_loaded`](super::ensure_loaded)).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{reason}")]
pub struct DriverMissing {
    /// The loader's words.
    pub reason: String,
}
