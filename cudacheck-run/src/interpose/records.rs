//! Fault records of checked launches, read without making the program wait. Each context gets
//! an arena of zeroed records in device memory; a checked launch takes a slot, and an event
//! recorded after it says when the kernel is done. Records are read when the program itself
//! waits (a synchronize), when slots run short, when a context goes away and at exit: the
//! completed launches' slots are copied back on a stream of the interposer's own, decoded
//! and reported, and a slot that recorded something is zeroed before it is used again.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudacheck_core::init::{INIT_RECORD_BYTES, INIT_RECORD_OFFSET};
use cudacheck_core::instrument::InstrumentedKernel;
use cudacheck_core::PtxEntry;

use super::ffi::{self, call, CUcontext, CUevent, CUstream, CUDA_ERROR_NOT_READY, CUDA_SUCCESS};
use super::launch::Bound;
use super::module::Func;
use super::report;
use super::stack::Stack;
use super::state::{state, State};

/// Bytes of one slot: the fault record, the race record and the init record after it.
const SLOT_BYTES: usize = INIT_RECORD_OFFSET + INIT_RECORD_BYTES;
/// Slots per context: launches in flight before the oldest must be waited for.
const SLOTS: usize = 2048;
/// `CU_EVENT_DISABLE_TIMING`.
const EVENT_NO_TIMING: u32 = 2;
/// `CU_STREAM_NON_BLOCKING`: our copies never wait for the program's legacy stream.
const STREAM_NON_BLOCKING: u32 = 1;
/// How often records are read when the program waits (a finding is reported this much later
/// than the wait that could have shown it, at most; always by exit).
const POLL_EVERY: Duration = Duration::from_millis(20);

/// What a report of a checked launch needs.
pub struct LaunchInfo {
    pub func: Arc<Func>,
    pub sites: Arc<InstrumentedKernel>,
    pub entry: Arc<PtxEntry>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub bounds: Vec<Bound>,
    pub stack: Option<Arc<Stack>>,
}

struct Pending {
    slot: u32,
    event: CUevent,
    info: LaunchInfo,
}

struct Inner {
    /// When records were last read.
    last_poll: Option<Instant>,
    arena: u64,
    free: Vec<u32>,
    events: Vec<CUevent>,
    pending: VecDeque<Pending>,
    stream: CUstream,
    host: Vec<u8>,
}

/// One context's records.
pub struct Records {
    ctx: usize,
    inner: Mutex<Inner>,
}

// SAFETY: the raw handles are the driver's, usable from any thread; the mutex guards the rest.
unsafe impl Send for Records {}
// SAFETY: as above.
unsafe impl Sync for Records {}

impl Records {
    /// The records of context `ctx` (current), made on its first checked launch.
    pub fn for_context(s: &State, ctx: CUcontext) -> Result<Arc<Records>, String> {
        let mut all = s.records.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = all.get(&(ctx as usize)) {
            return Ok(Arc::clone(r));
        }
        let r = Arc::new(Records::new(ctx)?);
        all.insert(ctx as usize, Arc::clone(&r));
        Ok(r)
    }

    fn new(ctx: CUcontext) -> Result<Records, String> {
        let bytes = SLOTS * SLOT_BYTES;
        let alloc = ffi::real()
            .cuMemAlloc_v2
            .ok_or("the driver has no cuMemAlloc")?;
        let mut arena = 0u64;
        // SAFETY: a valid out-pointer; the interposer's own allocation (not recorded: the
        // guard is held).
        let r = unsafe { alloc(&mut arena, bytes) };
        if r != CUDA_SUCCESS {
            return Err(format!(
                "no device memory for the fault records (error {r})"
            ));
        }
        // SAFETY: the arena just allocated, `bytes` long.
        unsafe { call!(cuMemsetD8_v2(arena, 0, bytes)) };
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let r = unsafe { call!(cuStreamCreate(&mut stream, STREAM_NON_BLOCKING)) };
        if r != CUDA_SUCCESS {
            return Err(format!("no stream for reading fault records (error {r})"));
        }
        Ok(Records {
            ctx: ctx as usize,
            inner: Mutex::new(Inner {
                last_poll: None,
                arena,
                free: (0..SLOTS as u32).rev().collect(),
                events: Vec::new(),
                pending: VecDeque::new(),
                stream,
                host: vec![0; bytes],
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A zeroed slot and its device address; when none is free, completed launches are read
    /// first, and if none has completed the oldest is waited for.
    pub fn take_slot(&self) -> Result<(u32, u64), String> {
        loop {
            {
                let mut i = self.lock();
                if let Some(slot) = i.free.pop() {
                    return Ok((slot, i.arena + u64::from(slot) * SLOT_BYTES as u64));
                }
                if let Some(oldest) = i.pending.front() {
                    let wait = ffi::real()
                        .cuEventSynchronize
                        .ok_or("the driver has no cuEventSynchronize")?;
                    // SAFETY: an event recorded by `launched`.
                    unsafe { wait(oldest.event) };
                } else {
                    return Err("no fault record is free".into());
                }
            }
            self.poll();
        }
    }

    /// Returns a slot whose launch did not happen.
    pub fn give_back(&self, slot: u32) {
        self.lock().free.push(slot);
    }

    /// A checked launch went out with `slot`: an event after it on its stream says when its
    /// record can be read.
    pub fn launched(&self, slot: u32, stream: CUstream, per_thread: bool, info: LaunchInfo) {
        let mut i = self.lock();
        let event = match i.events.pop() {
            Some(e) => e,
            None => {
                let mut e: CUevent = std::ptr::null_mut();
                // SAFETY: a valid out-pointer, in the launch's (current) context.
                if unsafe { call!(cuEventCreate(&mut e, EVENT_NO_TIMING)) } != CUDA_SUCCESS {
                    e = std::ptr::null_mut();
                }
                e
            }
        };
        if !event.is_null() {
            // SAFETY: our event and the launch's stream.
            unsafe {
                if per_thread {
                    call!(cuEventRecord_ptsz(event, stream))
                } else {
                    call!(cuEventRecord(event, stream))
                }
            };
        }
        i.pending.push_back(Pending { slot, event, info });
        // Many in flight: read those done, at most every POLL_EVERY (a launch must stay cheap;
        // running out of slots waits for the oldest in `take_slot`).
        let many = i.pending.len() >= SLOTS / 4;
        drop(i);
        if many {
            self.poll_when_waiting();
        }
    }

    /// Reads the records of every completed launch and reports what they hold.
    pub fn poll(&self) {
        let started = Instant::now();
        let done = {
            let mut i = self.lock();
            let done = self.read_completed(&mut i);
            i.last_poll = Some(Instant::now());
            done
        };
        state().time_reading.add(started.elapsed());
        for (info, record) in done {
            report::fault(&info, &record);
        }
    }

    /// [`Self::poll`] at most every [`POLL_EVERY`], so that a program that waits after each
    /// launch does not pay a copy of records for each. Never while a stream capture is under way (a capture
    /// in the global mode is invalidated by a wait on any thread).
    pub fn poll_when_waiting(&self) {
        if state().captures.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            return;
        }
        let due = self
            .lock()
            .last_poll
            .map_or(true, |t| t.elapsed() >= POLL_EVERY);
        if due {
            self.poll();
        }
    }

    /// The completed launches, with their records, their slots freed (zeroed first where the
    /// kernel wrote one).
    fn read_completed(&self, i: &mut Inner) -> Vec<(LaunchInfo, Vec<u8>)> {
        // Each event asked once: a launch that completes after this is read the next time.
        let done: Vec<bool> = i
            .pending
            .iter()
            // SAFETY: an event of ours.
            .map(|p| {
                p.event.is_null() || unsafe { call!(cuEventQuery(p.event)) } != CUDA_ERROR_NOT_READY
            })
            .collect();
        let completed = i.pending.iter().zip(&done).filter(|(_, &d)| d);
        let Some((lo, hi)) = completed.fold(None, |r: Option<(usize, usize)>, (p, _)| {
            let s = p.slot as usize;
            Some(r.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))))
        }) else {
            return Vec::new();
        };
        let _ctx = Current::push(self.ctx as CUcontext);
        let (arena, stream) = (i.arena, i.stream);
        // One copy of the slots from the lowest to the highest completed one (slots are
        // reused lowest first, so they stay close): slots of launches still running in between
        // are copied too and left unread.
        let (from, bytes) = (lo * SLOT_BYTES, (hi + 1 - lo) * SLOT_BYTES);
        // SAFETY: the range lies in the arena and in the host buffer of the same length;
        // ordered on our stream.
        let r = unsafe {
            call!(cuMemcpyDtoHAsync_v2(
                i.host[from..].as_mut_ptr().cast::<c_void>(),
                arena + from as u64,
                bytes,
                stream
            ))
        };
        let sync = ffi::real().cuStreamSynchronize;
        // SAFETY: our stream.
        let synced = sync.is_some_and(|f| unsafe { f(stream) } == CUDA_SUCCESS);
        if r != CUDA_SUCCESS || !synced {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut still = VecDeque::new();
        for (p, finished) in std::mem::take(&mut i.pending).into_iter().zip(done) {
            if !finished {
                still.push_back(p);
                continue;
            }
            let at = p.slot as usize * SLOT_BYTES;
            let record = i.host[at..at + SLOT_BYTES].to_vec();
            if record.iter().any(|&b| b != 0) {
                // SAFETY: this slot of our arena; the launch that used it is done.
                unsafe { call!(cuMemsetD8Async(arena + at as u64, 0, SLOT_BYTES, stream)) };
                out.push((p.info, record));
            }
            i.free.push(p.slot);
            if !p.event.is_null() {
                i.events.push(p.event);
            }
        }
        i.pending = still;
        if !out.is_empty() {
            // SAFETY: our stream: the zeroing is done before a slot is used again.
            if let Some(f) = sync {
                unsafe { f(stream) };
            }
        }
        out
    }

    /// Waits for every launch in flight and reads their records: before the context goes away,
    /// and at exit.
    pub fn drain(&self) {
        {
            let _ctx = Current::push(self.ctx as CUcontext);
            // SAFETY: the context is current.
            if unsafe { call!(cuCtxSynchronize()) } != CUDA_SUCCESS {
                // A context that cannot be synchronized (destroyed, or faulted outside the
                // checks) has no records left to read.
                self.lock().pending.clear();
                return;
            }
        }
        self.poll();
    }
}

/// Makes a context current for the length of a scope.
struct Current(bool);

impl Current {
    fn push(ctx: CUcontext) -> Current {
        // SAFETY: the interposer's own context switch, undone on drop.
        Current(unsafe { call!(cuCtxPushCurrent_v2(ctx)) } == CUDA_SUCCESS)
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        if self.0 {
            let mut old: CUcontext = std::ptr::null_mut();
            // SAFETY: pops what `push` pushed.
            unsafe { call!(cuCtxPopCurrent_v2(&mut old)) };
        }
    }
}

/// Reads every context's completed launches (the program is waiting anyway), unless they
/// were read very recently.
pub fn poll_all(s: &State) {
    let all: Vec<Arc<Records>> = s
        .records
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .cloned()
        .collect();
    for r in all {
        r.poll_when_waiting();
    }
}

/// Waits for and reads every launch of context `ctx`, which may be about to go away.
pub fn drain_context(s: &State, ctx: CUcontext) {
    let r = s
        .records
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&(ctx as usize))
        .cloned();
    if let Some(r) = r {
        r.drain();
    }
}

/// At exit: every context's launches in flight.
pub fn drain_all(s: &State) {
    let all: Vec<Arc<Records>> = s
        .records
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .map(|(_, r)| r)
        .collect();
    for r in all {
        r.drain();
    }
}
