//! The pairs of contexts that peer access was enabled for through
//! [`enable_peer_access`](crate::enable_peer_access): a launch may pass a buffer of another
//! context only when its stream's context was granted access to that context here.
//!
//! Asked only when a buffer's context is not the launch's (a cold path), so a lock is fine.
//! Entries hold `Weak`s to both contexts: a context's handle can be reused by the driver once
//! it is destroyed (and its peer mappings with it), so an entry counts only while both of its
//! `CudaContext`s live.

use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::CudaContext;

struct Pair {
    from: Weak<CudaContext>,
    to: Weak<CudaContext>,
}

impl Pair {
    fn is(&self, from: &CudaContext, to: &CudaContext) -> bool {
        let live = |w: &Weak<CudaContext>, c: &CudaContext| {
            w.upgrade().is_some_and(|x| x.cu_ctx() == c.cu_ctx())
        };
        live(&self.from, from) && live(&self.to, to)
    }
}

static PAIRS: Mutex<Vec<Pair>> = Mutex::new(Vec::new());

/// Whether kernels of `from` may access buffers of `to`: the same context, or a pair enabled
/// through cudacheck.
pub(crate) fn allowed(from: &CudaContext, to: &CudaContext) -> bool {
    if from.cu_ctx() == to.cu_ctx() {
        return true;
    }
    let pairs = PAIRS.lock().unwrap_or_else(|p| p.into_inner());
    pairs.iter().any(|p| p.is(from, to))
}

/// Remembers that access from `from` to `to` was enabled (in the driver, by the caller).
pub(crate) fn remember(from: &Arc<CudaContext>, to: &Arc<CudaContext>) {
    let mut pairs = PAIRS.lock().unwrap_or_else(|p| p.into_inner());
    pairs.retain(|p| p.from.strong_count() > 0 && p.to.strong_count() > 0);
    if !pairs.iter().any(|p| p.is(from, to)) {
        pairs.push(Pair {
            from: Arc::downgrade(from),
            to: Arc::downgrade(to),
        });
    }
}

/// Forgets every pair `ctx` is part of (its context was reset: the driver dropped the mappings).
pub(crate) fn forget(ctx: &CudaContext) {
    let key = ctx.cu_ctx();
    let mut pairs = PAIRS.lock().unwrap_or_else(|p| p.into_inner());
    pairs.retain(|p| {
        let involves = |w: &Weak<CudaContext>| w.upgrade().is_some_and(|c| c.cu_ctx() == key);
        !involves(&p.from) && !involves(&p.to)
    });
}
