//! The bounds-checked launch: zero the fault record, launch the instrumented build with its
//! hidden parameters (each argument's buffer length in bytes, then the record), wait, read the
//! record.

use std::ffi::c_void;
use std::panic::Location;

use cudacheck_core::instrument::{decode, hidden_params, RECORD_BYTES, UNKNOWN_LEN};

use super::fault::{error_of, ArgView, FaultContext};
use crate::args::{ArgSlot, MAX_ARGS};
use crate::context::bind;
use crate::driver::{self, RawConfig};
use crate::error::{Error, LaunchErrorKind};
use crate::kernel::PrepareError;
use crate::launch::{record_event, Launch};

/// A buffer argument's length in bytes as the instrumented kernel takes it: its element count
/// times its element size, or [`UNKNOWN_LEN`] for anything else (scalars, raw addresses, a
/// buffer whose element size was not recorded), through which every access passes.
fn byte_len(slot: &ArgSlot) -> u64 {
    match (slot.buffer_len(), slot.buffer_elem_size()) {
        (Some(n), Some(e)) => n.saturating_mul(u64::from(e)),
        _ => UNKNOWN_LEN,
    }
}

/// [`Launch::run`] for a bounds-checked launch.
///
/// # Safety
///
/// As [`Launch::run`]: the checks make out-of-bounds accesses through the kernel's buffers and
/// arrays harmless, but accesses the instrumenter left unchecked (see
/// [`Kernel::coverage`](crate::Kernel::coverage)) are still the caller's promise.
pub(crate) unsafe fn run_checked(
    l: &mut Launch<'_>,
    site: &'static Location<'static>,
) -> Result<(), Error> {
    let kernel = l.kernel;
    let events = l.events;
    let ctx = l.stream.context();
    let state = crate::context::state_of(ctx)?;
    state.check_health()?;
    let arch = kernel.target_arch(&state);
    let build = kernel.inst_cache().build(kernel, arch)?;
    let loaded = kernel.inst_cache().loaded(kernel, &build, ctx)?;
    let state = &loaded.state;
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
    let user_params = build.kernel.num_params as usize;
    let hidden = hidden_params(user_params);
    let all = &loaded.resources.params;
    let user = &all[..all.len().saturating_sub(hidden)];
    l.check_args(user, site)?;
    let n = l.nargs;

    // Held until the record is read: launches sharing the block wait for each other.
    let mut scratch = state.scratch.lock().unwrap_or_else(|p| p.into_inner());
    if scratch.bytes < RECORD_BYTES {
        let ptr = driver::mem_alloc(RECORD_BYTES)?;
        if scratch.ptr != 0 {
            // SAFETY: the old block came from `mem_alloc` in this (current) context, and no
            // queued work uses it: every launch that did waited for its kernel under this lock.
            let _ = unsafe { driver::mem_free(scratch.ptr) };
        }
        scratch.ptr = ptr;
        scratch.bytes = RECORD_BYTES;
    }
    let stream = l.stream.cu_stream();
    let zero = [0u8; RECORD_BYTES];
    // SAFETY: the block is this context's, at least `RECORD_BYTES` long, and unused by running
    // kernels (see above); the context is current.
    unsafe { driver::memcpy_htod_async(scratch.ptr, &zero, stream) }?;

    let rec_ptr: u64 = scratch.ptr;
    let mut lens = [UNKNOWN_LEN; MAX_ARGS];
    for (len, slot) in lens.iter_mut().zip(&l.args[..n]) {
        *len = byte_len(slot);
    }
    let mut params = [std::ptr::null_mut::<c_void>(); 2 * MAX_ARGS + 1];
    for (p, slot) in params.iter_mut().zip(&l.args[..n]) {
        *p = slot.param_ptr();
    }
    // The hidden parameters: one length per user parameter, then the record.
    for k in 0..n {
        params[n + k] = &lens[k] as *const u64 as *mut c_void;
    }
    params[2 * n] = &rec_ptr as *const u64 as *mut c_void;
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
    // parameter, sizes checked against the CUBIN for the user's parameters; the hidden ones are
    // 8-byte values, the last the address of the record block, which outlives the kernel: the
    // lock is held until after the synchronization below). The kernel's checked accesses stay
    // in bounds; the rest is this function's contract.
    let launched =
        unsafe { driver::launch(&loaded.function, &raw, stream, &mut params[..2 * n + 1]) };
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
    if rec.faulted == 0 {
        return Ok(());
    }
    let mut args = [ArgView::default(); MAX_ARGS];
    for (a, slot) in args.iter_mut().zip(&l.args[..n]) {
        if let (Some(_), Some(e)) = (slot.buffer_len(), slot.buffer_elem_size()) {
            *a = ArgView {
                ptr: slot.word,
                elem_bytes: e,
            };
        }
    }
    let cx = FaultContext {
        kernel: kernel.name_arc(),
        site,
        config: l.cfg,
        build: &build.kernel,
        source: kernel.source(),
        name: kernel.name(),
        args: &args[..n],
    };
    match error_of(&rec, &cx) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
