//! The bounds-checked launch: upload lengths and a zeroed record, launch the instrumented
//! build with its two hidden parameters, wait, read the record.

use std::ffi::c_void;
use std::panic::Location;

use cudacheck_core::instrument::{decode, RECORD_BYTES};

use super::fault::{error_of, FaultContext};
use super::Spec;
use crate::args::MAX_ARGS;
use crate::context::bind;
use crate::driver::{self, RawConfig};
use crate::error::{Error, LaunchErrorKind};
use crate::kernel::PrepareError;
use crate::launch::{record_event, Launch};

/// The lengths array's entry for a non-buffer argument passed to a pointer parameter (a raw
/// address): its length is unknown, so every index passes.
const UNKNOWN_LEN: u64 = u64::MAX;

/// Record, then `MAX_ARGS + 1` lengths: the most one launch uploads.
const UPLOAD_BYTES: usize = RECORD_BYTES + 8 * (MAX_ARGS + 1);

/// [`Launch::run`] for a bounds-checked launch. A kernel the instrumenter did not rewrite, or a
/// source it cannot read, launches plain.
///
/// # Safety
///
/// As [`Launch::run`]: the checks make out-of-bounds accesses through the kernel's pointer
/// parameters and arrays harmless, but accesses the instrumenter skipped (see
/// [`Kernel::coverage`](crate::Kernel::coverage)) are still the caller's promise.
pub(crate) unsafe fn run_checked(
    l: &mut Launch<'_>,
    site: &'static Location<'static>,
) -> Result<(), Error> {
    let kernel = l.kernel;
    let events = l.events;
    let rewritten = match kernel.inst_cache().rewrite(kernel) {
        Ok(r) if r.kernel.is_some() => std::sync::Arc::clone(r),
        // SAFETY: this function's contract, which is `run`'s.
        _ => return unsafe { l.run_plain(site, events) },
    };
    let ctx = l.stream.context();
    let spec = Spec::of(l.cfg.block, l.cfg.dynamic_shared_bytes);
    let loaded = kernel.inst_cache().loaded(kernel, &rewritten, ctx, spec)?;
    let state = &loaded.state;
    state.check_health()?;
    let opt_in = l
        .shared_opt_in
        .unwrap_or_else(|| kernel.default_shared_opt_in());
    bind(ctx)?;
    match loaded.prepare(&l.cfg, opt_in) {
        Ok(()) => {}
        Err(PrepareError::Invalid(violations)) => {
            return Err(l.refuse(site, LaunchErrorKind::InvalidConfig { violations }))
        }
        Err(PrepareError::Driver(error)) => {
            return Err(l.refuse(site, LaunchErrorKind::Driver { error }))
        }
    }
    let hidden = cudacheck_core::instrument::HIDDEN_PARAMS.len();
    let all = &loaded.resources.params;
    let user = &all[..all.len().saturating_sub(hidden)];
    l.check_args(user, site)?;
    let n = l.nargs;

    // The record (zeroed) and the lengths in one upload: entry k is argument k's length in
    // elements, then the dynamic shared bytes.
    let mut upload = [0u8; UPLOAD_BYTES];
    for (k, slot) in l.args[..n].iter().enumerate() {
        let len = slot.buffer_len().unwrap_or(UNKNOWN_LEN);
        let at = RECORD_BYTES + 8 * k;
        upload[at..at + 8].copy_from_slice(&len.to_le_bytes());
    }
    let at = RECORD_BYTES + 8 * n;
    upload[at..at + 8].copy_from_slice(&u64::from(l.cfg.dynamic_shared_bytes).to_le_bytes());
    let upload = &upload[..at + 8];

    // Held until the record is read: launches sharing the block wait for each other.
    let mut scratch = state.scratch.lock().unwrap_or_else(|p| p.into_inner());
    if scratch.bytes < UPLOAD_BYTES {
        let ptr = driver::mem_alloc(UPLOAD_BYTES)?;
        if scratch.ptr != 0 {
            // SAFETY: the old block came from `mem_alloc` in this (current) context, and no
            // queued work uses it: every launch that did waited for its kernel under this lock.
            let _ = unsafe { driver::mem_free(scratch.ptr) };
        }
        scratch.ptr = ptr;
        scratch.bytes = UPLOAD_BYTES;
    }
    let stream = l.stream.cu_stream();
    // SAFETY: the block is this context's, `UPLOAD_BYTES` long, and unused by running kernels
    // (see above); the context is current.
    unsafe { driver::memcpy_htod_async(scratch.ptr, upload, stream) }?;

    let rec_ptr: u64 = scratch.ptr;
    let len_ptr: u64 = scratch.ptr + RECORD_BYTES as u64;
    let mut params = [std::ptr::null_mut::<c_void>(); MAX_ARGS + 2];
    for (p, slot) in params.iter_mut().zip(&l.args[..n]) {
        *p = slot.param_ptr();
    }
    // The hidden parameters in `HIDDEN_PARAMS` order: lengths, then the record.
    params[n] = &len_ptr as *const u64 as *mut c_void;
    params[n + 1] = &rec_ptr as *const u64 as *mut c_void;
    let raw = RawConfig {
        grid: l.cfg.grid,
        block: l.cfg.block,
        shared_bytes: l.cfg.dynamic_shared_bytes,
        cluster: l.cfg.cluster,
    };
    if let Some((start, _)) = events {
        record_event(start, l.stream)?;
    }
    // SAFETY: as in the plain launch (module of this context, current; one pointer per
    // parameter, sizes checked against the CUBIN for the user's parameters, the two hidden ones
    // are 8-byte device addresses of the scratch block, which outlives the kernel: the lock is
    // held until after the synchronization below). The kernel's checked accesses stay in
    // bounds; the rest is this function's contract.
    let launched = unsafe { driver::launch(&loaded.function, &raw, stream, &mut params[..n + 2]) };
    if let Err(error) = launched {
        if error.poisons() {
            return Err(state.fault(error, site, None));
        }
        return Err(l.refuse(site, LaunchErrorKind::Driver { error }));
    }
    if let Some((_, end)) = events {
        record_event(end, l.stream)?;
    }
    let seq = state.record(kernel.name_arc(), l.cfg, site);
    if let Err(e) = driver::stream_synchronize(stream) {
        let culprit = state.launch_record(seq);
        return Err(state.fault(e, site, culprit));
    }
    let mut rec = [0u8; RECORD_BYTES];
    // SAFETY: the record is the first `RECORD_BYTES` of the block; the kernel has finished.
    unsafe { driver::memcpy_dtoh_async(&mut rec, rec_ptr, stream) }?;
    // To pageable memory the copy is done when the call returns; waiting once more costs a
    // microsecond and does not lean on that.
    driver::stream_synchronize(stream).map_err(|e| state.fault(e, site, None))?;
    drop(scratch);

    let Some(rec) = decode(&rec) else {
        return Ok(());
    };
    let cx = FaultContext {
        kernel: kernel.name_arc(),
        site,
        config: l.cfg,
        inst: &rewritten.inst,
        original: &kernel.source().text,
    };
    match error_of(&rec, &cx) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
