//! The bounds-checked plan: the kernel's instrumented build, with the length in bytes of each
//! buffer argument and a zeroed fault record passed as its hidden parameters (one `.u64` per
//! user parameter, then the record's address; see `cudacheck_core::instrument`). Eagerly, the
//! record goes into the context's scratch block, the launch waits, and the record is read back.
//! Under stream capture, each launch gets a block of its own that lives as long as the context,
//! the graph zeroes the record before each run (a memset node), and [`capture::Checks`] reads
//! it after.

use std::sync::{Arc, MutexGuard};

use cudacheck_core::init::{INIT_RECORD_BYTES, INIT_RECORD_OFFSET};
use cudacheck_core::instrument::{
    HostCheckSet, InstrumentedKernel, LaunchValues, RECORD_BYTES, UNKNOWN_LEN,
};
use cudacheck_core::race::{RACE_RECORD_BYTES, RACE_RECORD_OFFSET};
use cudacheck_core::validate::LaunchConfig;
use cudarc::driver::CudaContext;

use super::plan::{LaunchPlan, Step, HIDDEN_MAX};
use crate::args::{ArgSlot, SlotKind, MAX_ARGS};
use crate::build::Loaded;
use crate::capture::{self, Captured};
use crate::context::Scratch;
use crate::driver::{self, Capture, DriverError};
use crate::error::{Error, LaunchErrorKind};
use crate::instrument::{self, ArgView, Spec};
use crate::kernel::Kernel;
use crate::policy::After;

/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`.
const CAPTURE_INVALIDATED: u32 = 901;

/// The hidden parameters' values, into `out` (`args.len() + 1` entries): entry k is argument
/// k's length in bytes (its element count times its element size; [`UNKNOWN_LEN`], through
/// which every access passes, for a scalar, a raw address or a buffer of another context),
/// then the record's address.
fn fill_hidden(args: &[ArgSlot], record: u64, out: &mut [u64]) {
    for (o, slot) in out.iter_mut().zip(args) {
        *o = match (slot.buffer_len(), slot.buffer_elem_size()) {
            (Some(n), Some(e)) => n.saturating_mul(u64::from(e)),
            _ => UNKNOWN_LEN,
        };
    }
    out[args.len()] = record;
}

/// The host checks of `sites` that fail for this launch (`cudacheck_core::instrument::guard`),
/// given each buffer's length in bytes as [`fill_hidden`] passes it, each scalar's value, the
/// grid and the block: empty when all hold, `None` when they cannot be named (arguments that
/// do not match the build's parameters, which the argument check refuses anyway, or more
/// failing than a set holds).
fn failing_host_checks(
    loaded: &Loaded,
    sites: &InstrumentedKernel,
    args: &[ArgSlot],
    cfg: &LaunchConfig,
) -> Option<HostCheckSet> {
    if sites.host_checks.is_empty() {
        return Some(HostCheckSet::new());
    }
    if args.len() != sites.num_params as usize || args.len() > MAX_ARGS {
        return None;
    }
    let mut lens = [UNKNOWN_LEN; MAX_ARGS];
    let mut scalars = [None; MAX_ARGS];
    for (k, slot) in args.iter().enumerate() {
        if let (Some(n), Some(e)) = (slot.buffer_len(), slot.buffer_elem_size()) {
            lens[k] = n.saturating_mul(u64::from(e));
        }
        if slot.kind == SlotKind::Scalar && (1..=8).contains(&slot.size_or_len) {
            let mut b = [0u8; 8];
            let n = slot.size_or_len as usize;
            // SAFETY: a scalar slot's word is the address of a live value of `size_or_len`
            // bytes (`ArgSlot::scalar`), valid for the launch; read bytewise, unaligned.
            unsafe {
                std::ptr::copy_nonoverlapping(slot.word as usize as *const u8, b.as_mut_ptr(), n)
            };
            scalars[k] = Some((u64::from_le_bytes(b), slot.size_or_len));
        }
    }
    let values = LaunchValues {
        grid: cfg.grid.to_array(),
        block: cfg.block.to_array(),
        scalars: &scalars[..args.len()],
        lens: &lens[..args.len()],
    };
    // The verdict depends on these values alone: the last one is kept for the next launch.
    let key = crate::build::HostCheckMemo::key(&values);
    let mut memo = loaded
        .host_check_memo
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(m) = memo.as_ref().filter(|m| m.key == key) {
        return m.verdict;
    }
    let verdict = sites.failing_host_checks(&values);
    *memo = Some(crate::build::HostCheckMemo { key, verdict });
    verdict
}

/// What a fault report needs of the launch's arguments: each buffer's address and element size.
pub(crate) fn arg_views(args: &[ArgSlot]) -> ([ArgView; MAX_ARGS], usize) {
    let mut v = [ArgView::default(); MAX_ARGS];
    for (a, slot) in v.iter_mut().zip(args) {
        if let (Some(_), Some(e)) = (slot.buffer_len(), slot.buffer_elem_size()) {
            *a = ArgView {
                ptr: slot.word,
                elem_bytes: e,
                ty: (slot.ty)(),
            };
        }
    }
    (v, args.len().min(MAX_ARGS))
}

/// A bounds-checked launch in progress.
pub(super) struct Checked<'k> {
    /// Eager launches: the context's scratch block, held until the record is read (launches
    /// sharing it wait for each other).
    scratch: Option<MutexGuard<'k, Scratch>>,
    /// Captured launches: where the record goes once the launch is captured.
    collector: Option<Arc<capture::Collector>>,
    /// The device address of this launch's fault record.
    record: u64,
    /// The launch is race-checked: its build has the race checks, its record block has the
    /// race record after the fault record, and it gets `shadow` bytes of dynamic shared
    /// memory beyond the user's.
    races: bool,
    shadow: u32,
    /// The launch is init-checked: its build has the init checks, its record block has the
    /// init record after the race record, and it gets `init_shadow` bytes of dynamic shared
    /// memory beyond the user's for the shadow of the block's shared memory (the race
    /// checker's shadow and this one never both: a race-checked kernel's shared memory is not
    /// init-checked). Global memory of tracked buffers (`alloc_uninit`) is checked through the
    /// module's `__cc_init_dir`, pointed at the context's directory; all other global memory
    /// counts as written.
    init: bool,
    init_shadow: u32,
}

impl Checked<'_> {
    pub(super) fn new(races: bool, init: bool) -> Self {
        Checked {
            scratch: None,
            collector: None,
            record: 0,
            races,
            shadow: 0,
            init,
            init_shadow: 0,
        }
    }

    /// Bytes of the record block: the fault record, the race record after it, then the init
    /// record.
    fn record_bytes(&self) -> usize {
        if self.init {
            INIT_RECORD_OFFSET + INIT_RECORD_BYTES
        } else if self.races {
            RACE_RECORD_OFFSET + RACE_RECORD_BYTES
        } else {
            RECORD_BYTES
        }
    }
}

/// Bytes the race checker's shadow needs beside the user's dynamic shared memory for this
/// launch of a race-checked build, when the device and the kernel's opt-in allow them (0
/// otherwise: the kernel then runs without race checks and records that it did).
fn shadow_for(step: &Step<'_, '_>, sites: &InstrumentedKernel) -> u32 {
    let Some(races) = sites.races.as_ref().filter(|r| r.shadow) else {
        return 0;
    };
    let user = step.cfg.dynamic_shared_bytes;
    let extra = races.shadow_bytes(step.loaded.resources.static_shared_bytes, user);
    room_for(step, extra)
}

/// Bytes the init checker's shadow of the block's shared memory needs beside the user's
/// dynamic shared memory for this launch of an init-checked build, when the device and the
/// kernel's opt-in allow them (0 otherwise: the kernel then checks no shared memory).
fn init_shadow_for(step: &Step<'_, '_>, sites: &InstrumentedKernel) -> u32 {
    if !sites.init.as_ref().is_some_and(|k| k.shared_shadow) {
        return 0;
    }
    let extra = cudacheck_core::init::shared_shadow_bytes(
        step.loaded.resources.static_shared_bytes,
        step.cfg.dynamic_shared_bytes,
    );
    room_for(step, extra)
}

/// `extra` when the launch may have that many bytes of dynamic shared memory beyond its own,
/// else 0.
fn room_for(step: &Step<'_, '_>, extra: u32) -> u32 {
    let user = step.cfg.dynamic_shared_bytes;
    let mut cfg = *step.cfg;
    cfg.dynamic_shared_bytes = user.saturating_add(extra);
    // Validated and opted in as a launch asking for that much would be.
    match step.loaded.prepare(step.stream.context(), &cfg, true) {
        Ok(()) => extra,
        Err(_) => 0,
    }
}

/// The site table of a checked build.
fn sites_of(loaded: &Loaded) -> Arc<InstrumentedKernel> {
    loaded
        .compiled
        .sites
        .clone()
        .expect("checked builds carry their site table")
}

impl<'k> LaunchPlan<'k> for Checked<'k> {
    /// One length per user parameter, then the record: `total = 2 * user + 1`.
    fn user_params(total: usize) -> usize {
        total.saturating_sub(1) / 2
    }
    /// The record must be read after the kernel.
    const ALWAYS_SYNC: bool = true;

    fn shared_bytes(&self, user: u32) -> u32 {
        user.saturating_add(self.shadow)
            .saturating_add(self.init_shadow)
    }

    fn build(
        &mut self,
        kernel: &'k Kernel,
        ctx: &Arc<CudaContext>,
        cfg: &LaunchConfig,
        args: &[ArgSlot],
    ) -> Result<&'k Loaded, Error> {
        // The build whose guarded accesses are checked here, once, when this launch's
        // arguments keep them in bounds; when they keep only some in bounds, the build of the
        // same shape checking the others on the device (one per distinct set, made on first
        // use: a call site's arguments usually fail the same ones every time; past
        // `MAX_DEVICE_CHECK_SETS` per kernel, the fully checked build).
        let shape = Spec::of(cfg.block, cfg.dynamic_shared_bytes)
            .map(|s| s.races(self.races).init(self.init));
        let first = kernel.loaded_checked(ctx, shape)?;
        match (
            failing_host_checks(first, &sites_of(first), args, cfg),
            shape,
        ) {
            (Some(set), _) if set.is_empty() => Ok(first),
            (Some(set), Some(s)) if kernel.may_build_device_checks(s, set) => {
                kernel.loaded_checked(ctx, Some(s.on_device(set)))
            }
            _ => kernel.loaded_checked(ctx, shape.map(Spec::fully_checked)),
        }
    }

    fn before(&mut self, step: &Step<'_, 'k>) -> Result<[u64; HIDDEN_MAX], Error> {
        // A buffer passed at an address the kernel's widest access through it cannot use (an
        // offset view of a `float` buffer read as `float4`): refused here, before CUDA's
        // misaligned-address error could poison the context.
        let sites = sites_of(step.loaded);
        if !sites.widest.is_empty() {
            let (args, n) = arg_views(step.args);
            let mut ptrs = [0u64; MAX_ARGS];
            for (p, a) in ptrs.iter_mut().zip(&args[..n]) {
                *p = a.ptr;
            }
            if let Some(w) = sites.misaligned_argument(&ptrs[..n]) {
                let cx = step
                    .kernel
                    .fault_context(&sites, &args[..n], step.site, step.cfg);
                return Err(instrument::misaligned_argument(&cx, w).into());
            }
        }
        if self.races {
            self.shadow = shadow_for(step, &sites);
        }
        if self.init {
            self.init_shadow = init_shadow_for(step, &sites);
            // Tracked buffers' shadow: the build's `__cc_init_dir` points at the context's
            // directory from the first tracked buffer on. Not under capture (a synchronous
            // copy could end it): the build then marks nothing and its launch counts what it
            // is given as written (`launch_with`).
            if step.capture == Capture::None && step.loaded.state.init_shadow.any() {
                step.loaded
                    .point_init_dir(step.loaded.state.init_shadow.directory())
                    .map_err(|error| step.refuse(LaunchErrorKind::Driver { error }))?;
            }
        }
        let bytes = self.record_bytes();
        let stream = step.stream.cu_stream();
        let state = &step.loaded.state;
        match step.capture {
            Capture::None => {
                let mut scratch = state.scratch.lock().unwrap_or_else(|p| p.into_inner());
                if scratch.bytes < bytes {
                    let ptr = driver::mem_alloc(bytes)?;
                    if scratch.ptr != 0 {
                        // SAFETY: the old block came from `mem_alloc` in this (current)
                        // context, and no queued work uses it: every launch that did waited
                        // for its kernel under this lock.
                        let _ = unsafe { driver::mem_free(scratch.ptr) };
                    }
                    scratch.ptr = ptr;
                    scratch.bytes = bytes;
                }
                // SAFETY: the block is this context's, at least `bytes` long, and unused by
                // running kernels (see above); the context is current.
                unsafe { driver::memset_zero_async(scratch.ptr, bytes, stream) }?;
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
                let block = driver::mem_alloc(bytes)?;
                // The graph zeroes the record before each run: this memset is captured.
                // SAFETY: the record is the first `bytes` of `block`; nothing runs yet.
                unsafe { driver::memset_zero_async(block, bytes, stream) }?;
                self.record = block;
                self.collector = Some(collector);
            }
            Capture::Invalidated => {
                let error = DriverError::new("cuStreamGetCaptureInfo", CAPTURE_INVALIDATED);
                return Err(step.refuse(LaunchErrorKind::Driver { error }));
            }
        }
        let mut hidden = [0u64; HIDDEN_MAX];
        fill_hidden(step.args, self.record, &mut hidden[..step.args.len() + 1]);
        Ok(hidden)
    }

    fn after(self, step: &Step<'_, 'k>, after: After, seq: Option<u64>) -> Result<(), Error> {
        if after == After::Captured {
            if let Some(c) = &self.collector {
                let (args, n) = arg_views(step.args);
                c.push(Captured {
                    kernel: step.kernel.clone(),
                    sites: sites_of(step.loaded),
                    args: args[..n].to_vec(),
                    site: step.site,
                    config: *step.cfg,
                    record: self.record,
                });
            }
            return Ok(());
        }
        step.synchronize(seq)?;
        let stream = step.stream.cu_stream();
        let mut buf = [0u8; INIT_RECORD_OFFSET + INIT_RECORD_BYTES];
        let rec = &mut buf[..self.record_bytes()];
        // SAFETY: the records are the first `record_bytes()` of the block; the kernel has
        // finished.
        unsafe { driver::memcpy_dtoh_async(rec, self.record, stream) }?;
        // To pageable memory the copy is done when the call returns; waiting once more costs a
        // microsecond and does not lean on that.
        driver::stream_synchronize(stream)
            .map_err(|e| step.loaded.state.fault(e, step.site, None, stream))?;
        drop(self.scratch);
        let sites = sites_of(step.loaded);
        let (args, n) = arg_views(step.args);
        if self.races {
            warn_unchecked_races(step, rec);
        }
        let cx = step
            .kernel
            .fault_context(&sites, &args[..n], step.site, step.cfg);
        instrument::report(rec, &cx)?;
        if self.init {
            let mut lens = [0u64; MAX_ARGS];
            for (l, slot) in lens.iter_mut().zip(step.args) {
                if let (Some(len), Some(e)) = (slot.buffer_len(), slot.buffer_elem_size()) {
                    *l = len.saturating_mul(u64::from(e));
                }
            }
            instrument::report_init(rec, &cx, &lens[..n]).map_err(Error::Uninitialized)?;
        }
        Ok(())
    }
}

/// A race-checked launch whose shared memory left no room for the shadow ran unchecked: said
/// once per kernel on stderr (the launch itself succeeded, so it is no error).
fn warn_unchecked_races(step: &Step<'_, '_>, rec: &[u8]) {
    let disabled = rec
        .get(RACE_RECORD_OFFSET..)
        .and_then(cudacheck_core::race::decode_race)
        .is_some_and(|r| r.disabled != 0);
    if disabled && step.kernel.note_races_unchecked() {
        eprintln!(
            "cudacheck: launches of kernel `{}` (as at {}) are not race-checked: its block's \
             shared memory plus the checker's shadow ({} bytes per 4 bytes) exceeds what the \
             device gives one block",
            step.kernel.name(),
            step.site,
            24
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_values_are_a_length_per_argument_then_the_record() {
        let v = 3.0f32;
        let scalar = ArgSlot::scalar(&v);
        let mut out = [0u64; 2];
        fill_hidden(&[scalar], 0x1000, &mut out);
        assert_eq!(out, [UNKNOWN_LEN, 0x1000]);
    }

    #[test]
    fn plans_split_user_and_hidden_parameters() {
        assert_eq!(Checked::user_params(7), 3);
        assert_eq!(Checked::new(true, false).record_bytes(), 256);
        assert_eq!(Checked::new(false, false).record_bytes(), RECORD_BYTES);
        assert_eq!(Checked::new(false, true).record_bytes(), 320);
        assert_eq!(Checked::new(true, true).record_bytes(), 320);
        assert_eq!(Checked::user_params(1), 0);
    }
}
