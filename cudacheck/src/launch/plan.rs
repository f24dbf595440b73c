//! The hooks of the one launch path ([`Launch::launch_with`](super::Launch)): a plan says which
//! build runs, which hidden parameters follow the user's, and what happens once the kernel is
//! queued. [`Plain`] is the kernel as written; [`Checked`](super::checked::Checked) its
//! bounds-checked build.

use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::validate::LaunchConfig;
use cudarc::driver::{CudaContext, CudaStream};

use crate::args::{ArgSlot, MAX_ARGS};
use crate::build::Loaded;
use crate::driver::{self, Capture};
use crate::error::{Error, LaunchErrorKind};
use crate::kernel::Kernel;
use crate::policy::After;
use crate::ring::LaunchRecord;

/// The most hidden parameters a plan appends: a bounds-checked build takes one length per
/// user parameter, then the fault record.
pub(super) const HIDDEN_MAX: usize = MAX_ARGS + 1;

/// What the launch path knows once it has validated a launch, as the plan's hooks see it.
pub(super) struct Step<'s, 'k> {
    pub(super) kernel: &'k Kernel,
    pub(super) stream: &'s Arc<CudaStream>,
    pub(super) loaded: &'k Loaded,
    pub(super) args: &'s [ArgSlot],
    pub(super) cfg: &'s LaunchConfig,
    pub(super) site: &'static Location<'static>,
    /// Whether the stream is being captured (asked only by launches that would wait).
    pub(super) capture: Capture,
}

impl Step<'_, '_> {
    /// This launch, refused.
    #[cold]
    pub(super) fn refuse(&self, kind: LaunchErrorKind) -> Error {
        super::refusal(self.kernel, self.site, self.cfg, kind)
    }

    /// Waits for the stream and attributes a fault to this launch (number `seq` in the ring)
    /// when it can be sure.
    ///
    /// A sticky fault surfaces at every later call of the context, on any stream: the wait
    /// proves that something in the context faulted, not that this launch did. So this launch
    /// is named the culprit only when the context's recent launches are all on this stream;
    /// otherwise the error lists them all as suspects (`Error::AsyncFault`), and no launch of
    /// another stream is blamed for this one's fault, or this one for another's.
    pub(super) fn synchronize(&self, seq: Option<u64>) -> Result<(), Error> {
        let stream = self.stream.cu_stream();
        driver::stream_synchronize(stream).map_err(|e| {
            let state = &self.loaded.state;
            let culprit = seq
                .filter(|_| state.only_stream(stream))
                .map(|seq| LaunchRecord {
                    seq,
                    kernel: Arc::clone(self.kernel.name_arc()),
                    config: *self.cfg,
                    site: self.site,
                    stream: stream as u64,
                });
            state.fault(e, self.site, culprit, stream)
        })
    }
}

/// One kind of launch, as hooks into the one path.
pub(super) trait LaunchPlan<'k> {
    /// How many of the build's `total` parameters are the user's; the rest are hidden
    /// parameters (8 bytes each) the plan's [`before`](Self::before) gives values for.
    fn user_params(total: usize) -> usize;
    /// Whether the launch waits for its kernel whatever its [`sync`](crate::Launch::sync) switch.
    const ALWAYS_SYNC: bool;

    /// The dynamic shared memory the kernel is launched with, given the user's (a race-checked
    /// launch adds its shadow; known after [`before`](Self::before)).
    #[inline(always)]
    fn shared_bytes(&self, user: u32) -> u32 {
        user
    }

    /// The build to launch in `ctx` with arguments `args` (not checked yet: their count and
    /// sizes are checked against the build's parameters after).
    fn build(
        &mut self,
        kernel: &'k Kernel,
        ctx: &Arc<CudaContext>,
        cfg: &LaunchConfig,
        args: &[ArgSlot],
    ) -> Result<&'k Loaded, Error>;

    /// Before the launch, after validation: queues what the kernel needs and returns the hidden
    /// parameters' values (the first `total - user_params(total)` are used).
    fn before(&mut self, step: &Step<'_, 'k>) -> Result<[u64; HIDDEN_MAX], Error>;

    /// Once the kernel is queued (`seq`: its number in the ring, `None` when captured).
    fn after(self, step: &Step<'_, 'k>, after: After, seq: Option<u64>) -> Result<(), Error>;
}

/// The kernel as written: no hidden parameters; waits when the sync mode says so.
pub(super) struct Plain;

impl<'k> LaunchPlan<'k> for Plain {
    #[inline(always)]
    fn user_params(total: usize) -> usize {
        total
    }
    const ALWAYS_SYNC: bool = false;

    #[inline(always)]
    fn build(
        &mut self,
        kernel: &'k Kernel,
        ctx: &Arc<CudaContext>,
        _: &LaunchConfig,
        _: &[ArgSlot],
    ) -> Result<&'k Loaded, Error> {
        kernel.loaded(ctx)
    }

    #[inline(always)]
    fn before(&mut self, _: &Step<'_, 'k>) -> Result<[u64; HIDDEN_MAX], Error> {
        Ok([0; HIDDEN_MAX])
    }

    #[inline(always)]
    fn after(self, step: &Step<'_, 'k>, after: After, seq: Option<u64>) -> Result<(), Error> {
        match after {
            After::Synchronize => step.synchronize(seq),
            // Captured: faults of the graph's run surface at the next check of its stream,
            // like a release launch's.
            After::Return | After::Captured => Ok(()),
        }
    }
}
