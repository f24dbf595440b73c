//! The bounds-checked plan: the kernel's instrumented build, with the lengths of its buffer
//! arguments and a zeroed fault record passed as the hidden parameters of
//! `cudacheck_core::instrument::HIDDEN_PARAMS`. Eagerly, the record and lengths go into the
//! context's scratch block, the launch waits, and the record is read back. Under stream
//! capture, each launch gets a block of its own that lives as long as the context, the graph
//! zeroes the record before each run (a memset node), and [`capture::Checks`] reads it after.

use std::sync::{Arc, MutexGuard};

use cudacheck_core::instrument::RECORD_BYTES;
use cudacheck_core::validate::LaunchConfig;
use cudarc::driver::CudaContext;

use super::plan::{LaunchPlan, Step, HIDDEN_MAX};
use crate::args::{ArgSlot, MAX_ARGS};
use crate::build::Loaded;
use crate::capture::{self, Captured};
use crate::context::Scratch;
use crate::driver::{self, Capture, DriverError};
use crate::error::{Error, LaunchErrorKind};
use crate::instrument::{self, Rewritten, Spec};
use crate::kernel::Kernel;
use crate::policy::After;

/// The lengths array's entry for a non-buffer argument passed to a pointer parameter (a raw
/// address): its length is unknown, so every index passes.
const UNKNOWN_LEN: u64 = u64::MAX;

/// Record, then `MAX_ARGS + 1` lengths: the most one launch uploads.
const UPLOAD_BYTES: usize = RECORD_BYTES + 8 * (MAX_ARGS + 1);

/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`.
const CAPTURE_INVALIDATED: u32 = 901;

/// The lengths a bounds-checked kernel receives, into `out` (`args.len() + 1` entries): entry k
/// is argument k's length in elements ([`UNKNOWN_LEN`] when it is not a buffer of the
/// launch's context; `slot.buffer_elem_size()` is its element's bytes), then the dynamic
/// shared bytes.
fn fill_lengths(args: &[ArgSlot], dynamic_shared_bytes: u32, out: &mut [u64]) {
    for (o, slot) in out.iter_mut().zip(args) {
        *o = slot.buffer_len().unwrap_or(UNKNOWN_LEN);
    }
    out[args.len()] = u64::from(dynamic_shared_bytes);
}

/// A bounds-checked launch in progress.
pub(super) struct Checked<'k> {
    rewritten: Arc<Rewritten>,
    /// Eager launches: the context's scratch block, held until the record is read (launches
    /// sharing it wait for each other).
    scratch: Option<MutexGuard<'k, Scratch>>,
    /// Captured launches: where the record goes once the launch is captured.
    collector: Option<Arc<capture::Collector>>,
    /// The device address of this launch's fault record (the lengths follow it).
    record: u64,
}

impl Checked<'_> {
    /// The plan for `kernel`, or `None` when the instrumenter did not rewrite it (or cannot
    /// read its source): such a launch runs plain.
    pub(super) fn new(kernel: &Kernel) -> Option<Self> {
        match kernel.rewrite() {
            Ok(r) if r.kernel.is_some() => Some(Checked {
                rewritten: Arc::clone(r),
                scratch: None,
                collector: None,
                record: 0,
            }),
            _ => None,
        }
    }
}

impl<'k> LaunchPlan<'k> for Checked<'k> {
    /// The lengths, then the record (the order of `HIDDEN_PARAMS`).
    const HIDDEN: usize = 2;
    /// The record must be read after the kernel.
    const ALWAYS_SYNC: bool = true;

    fn build(
        &mut self,
        kernel: &'k Kernel,
        ctx: &Arc<CudaContext>,
        cfg: &LaunchConfig,
    ) -> Result<&'k Loaded, Error> {
        let shape = Spec::of(cfg.block, cfg.dynamic_shared_bytes);
        kernel.loaded_checked(ctx, shape)
    }

    fn before(&mut self, step: &Step<'_, 'k>) -> Result<[u64; HIDDEN_MAX], Error> {
        let n = step.args.len();
        let mut lengths = [0u64; MAX_ARGS + 1];
        fill_lengths(
            step.args,
            step.cfg.dynamic_shared_bytes,
            &mut lengths[..n + 1],
        );
        // The record (zeroed) and the lengths in one upload.
        let mut upload = [0u8; UPLOAD_BYTES];
        for (k, len) in lengths[..n + 1].iter().enumerate() {
            let at = RECORD_BYTES + 8 * k;
            upload[at..at + 8].copy_from_slice(&len.to_le_bytes());
        }
        let upload = &upload[..RECORD_BYTES + 8 * (n + 1)];
        let stream = step.stream.cu_stream();
        let state = &step.loaded.state;
        match step.capture {
            Capture::None => {
                let mut scratch = state.scratch.lock().unwrap_or_else(|p| p.into_inner());
                if scratch.bytes < UPLOAD_BYTES {
                    let ptr = driver::mem_alloc(UPLOAD_BYTES)?;
                    if scratch.ptr != 0 {
                        // SAFETY: the old block came from `mem_alloc` in this (current)
                        // context, and no queued work uses it: every launch that did waited
                        // for its kernel under this lock.
                        let _ = unsafe { driver::mem_free(scratch.ptr) };
                    }
                    scratch.ptr = ptr;
                    scratch.bytes = UPLOAD_BYTES;
                }
                // SAFETY: the block is this context's, `UPLOAD_BYTES` long, and unused by
                // running kernels (see above); the context is current.
                unsafe { driver::memcpy_htod_async(scratch.ptr, upload, stream) }?;
                self.record = scratch.ptr;
                self.scratch = Some(scratch);
            }
            Capture::Active { id } => {
                let Some(collector) = capture::collector(id) else {
                    return Err(step.refuse(LaunchErrorKind::CapturedWithoutChecks));
                };
                // Allocating and copying are refused during capture; none of them touches
                // the capturing stream.
                let _relaxed = driver::RelaxedCapture::enter()?;
                let block = driver::mem_alloc(UPLOAD_BYTES)?;
                let private = state.private_stream()?;
                // SAFETY: `block` is fresh memory of this (current) context, `UPLOAD_BYTES`
                // long; the copy runs on the private stream, which is then waited for.
                unsafe { driver::memcpy_htod_async(block, upload, private) }?;
                driver::stream_synchronize(private)?;
                // The graph zeroes the record before each run: this memset is captured.
                // SAFETY: the record is the first `RECORD_BYTES` of `block`; nothing runs yet.
                unsafe { driver::memset_zero_async(block, RECORD_BYTES, stream) }?;
                self.record = block;
                self.collector = Some(collector);
            }
            Capture::Invalidated => {
                let error = DriverError::new("cuStreamGetCaptureInfo", CAPTURE_INVALIDATED);
                return Err(step.refuse(LaunchErrorKind::Driver { error }));
            }
        }
        Ok([self.record + RECORD_BYTES as u64, self.record])
    }

    fn after(self, step: &Step<'_, 'k>, after: After, seq: Option<u64>) -> Result<(), Error> {
        if after == After::Captured {
            if let Some(c) = &self.collector {
                c.push(Captured {
                    kernel: step.kernel.clone(),
                    rewritten: self.rewritten,
                    site: step.site,
                    config: *step.cfg,
                    record: self.record,
                });
            }
            return Ok(());
        }
        step.synchronize(seq)?;
        let stream = step.stream.cu_stream();
        let mut rec = [0u8; RECORD_BYTES];
        // SAFETY: the record is the first `RECORD_BYTES` of the block; the kernel has finished.
        unsafe { driver::memcpy_dtoh_async(&mut rec, self.record, stream) }?;
        // To pageable memory the copy is done when the call returns; waiting once more costs a
        // microsecond and does not lean on that.
        driver::stream_synchronize(stream)
            .map_err(|e| step.loaded.state.fault(e, step.site, None))?;
        drop(self.scratch);
        instrument::report(
            &rec,
            &step
                .kernel
                .fault_context(&self.rewritten, step.site, step.cfg),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_per_argument_then_the_dynamic_shared_bytes() {
        let v = 3.0f32;
        let scalar = ArgSlot::scalar(&v);
        let mut out = [0u64; 2];
        fill_lengths(&[scalar], 1024, &mut out);
        assert_eq!(out, [UNKNOWN_LEN, 1024]);
    }
}
