//! Race and barrier reports: the race record of a race-checked launch
//! ([`cudacheck_core::race`]) turned into [`SharedRace`] or [`BarrierMisuse`].

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use cudacheck_core::instrument::SourceLoc;
use cudacheck_core::race::{AccessKind, AccessWord, RaceEventKind, RaceKernel, RaceRecord};
use cudacheck_core::validate::LaunchConfig;
use cudacheck_core::Dim3;

use super::fault::{dim3, launched, line_text, snippet, Fault, FaultContext};

/// One of the two accesses of a race.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RaceAccess {
    /// `threadIdx` of the thread that made it (same block as the other).
    pub thread: Dim3,
    /// Read, write or atomic.
    pub kind: AccessKind,
    /// The CUDA source file, 1-based line and column (empty and 0 without line information).
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub source_line: Option<String>,
    /// Where the code holding it was inlined into, when it was.
    pub inlined_at: Option<SourceLoc>,
}

/// Two threads of one block touched the same `__shared__` element, at least one writing, with
/// no barrier between them ([`Error::SharedRace`](crate::Error::SharedRace)). Both accesses
/// ran: the launch's outputs may be wrong, the context is healthy.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedRace {
    /// The kernel's name.
    pub kernel: Arc<str>,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
    /// The launch's configuration as the user gave it (without the checker's shadow).
    pub config: LaunchConfig,
    /// The shared array, as named in the CUDA source (`tile`), or `shared memory` when the
    /// address does not lead back to one array.
    pub array: String,
    /// The element, counted in the smaller of the two accesses (a `float` index for two
    /// `float` accesses); for an unknown array, the word's shared-memory address.
    pub element: u64,
    /// The byte offset of the raced 4-byte word in the array.
    pub byte_offset: u32,
    /// `blockIdx` of the block both threads are in.
    pub block: Dim3,
    /// The access that came first.
    pub first: RaceAccess,
    /// The access that found it.
    pub second: RaceAccess,
    /// How many conflicting accesses the launch found (only the first is described).
    pub count: u32,
}

/// What is wrong with a barrier ([`BarrierMisuse::kind`]).
///
/// One name family for one concept: [`Error::BarrierMisuse`](crate::Error::BarrierMisuse)
/// holds a [`BarrierMisuse`], whose `kind` is a `BarrierMisuseKind` (as
/// [`Error::SharedRace`](crate::Error::SharedRace) holds a [`SharedRace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierMisuseKind {
    /// Threads of one block waited at different `__syncthreads()` (or one only some reach).
    Divergent,
    /// `__syncwarp(mask)` called by a lane the mask leaves out (the call was skipped).
    WarpMask {
        /// The mask the call passed.
        mask: u32,
    },
    /// A block barrier that only part of the block reached: the other threads had left the
    /// block (returned or exited) without reaching it. Current GPUs release a barrier that
    /// exited threads hold up, so the kernel finishes, but CUDA requires a barrier in
    /// conditional code to be reached by every thread of the block; compute-sanitizer's
    /// synccheck does not report it.
    Exited {
        /// Threads that arrived at the barrier.
        arrived: u32,
        /// Threads in the block.
        expected: u32,
    },
}

/// The old name of [`BarrierMisuseKind`].
#[deprecated(
    since = "0.1.0",
    note = "renamed `BarrierMisuseKind`, beside `BarrierMisuse` and `Error::BarrierMisuse`"
)]
pub type BarrierErrorKind = BarrierMisuseKind;

/// One thread's call of a barrier in a [`BarrierMisuse`]: which thread, and where the call is
/// in the CUDA source. The barrier's counterpart of a race's [`RaceAccess`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BarrierCall {
    /// `threadIdx` of the thread that made the call (in [`BarrierMisuse::block`]).
    pub thread: Dim3,
    /// The CUDA source file of the call (the kernel's source name without line information).
    pub file: String,
    /// The 1-based line of the call (0 without line information).
    pub line: u32,
    /// The 1-based column of the call (0 without line information).
    pub column: u32,
    /// The text of that line, when the file can be read.
    pub source_line: Option<String>,
    /// Where the code holding the call was inlined into, when it was.
    pub inlined_at: Option<SourceLoc>,
}

/// A barrier misused ([`Error::BarrierMisuse`](crate::Error::BarrierMisuse)): undefined
/// behaviour that hangs or gives wrong results without a check.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BarrierMisuse {
    /// The kernel's name.
    pub kernel: Arc<str>,
    /// Where in the Rust program the launch was made.
    pub site: &'static Location<'static>,
    /// The launch's configuration as the user gave it.
    pub config: LaunchConfig,
    /// What is wrong.
    pub kind: BarrierMisuseKind,
    /// `blockIdx` of the block.
    pub block: Dim3,
    /// The call that was reported: for [`Divergent`](BarrierMisuseKind::Divergent), a thread
    /// at one of the barriers; for [`Exited`](BarrierMisuseKind::Exited), a thread at the
    /// barrier; for [`WarpMask`](BarrierMisuseKind::WarpMask), the lane the mask leaves out.
    pub call: BarrierCall,
    /// For [`Divergent`](BarrierMisuseKind::Divergent): a thread at the other barrier; for
    /// [`Exited`](BarrierMisuseKind::Exited): a thread that left and the `return` or end of
    /// the kernel it left by (`None` when it was not recorded); `None` for
    /// [`WarpMask`](BarrierMisuseKind::WarpMask).
    pub other: Option<BarrierCall>,
    /// How many reports the launch made (only the first is described).
    pub count: u32,
}

/// Linear thread index to `threadIdx` for the launch's block.
fn thread_of(linear: u32, block: Dim3) -> Dim3 {
    let bx = block.x.max(1);
    let by = block.y.max(1);
    Dim3::new(linear % bx, (linear / bx) % by, linear / (bx * by))
}

fn place(
    races: &RaceKernel,
    cx: &FaultContext<'_>,
    id: u32,
) -> (String, u32, u32, Option<SourceLoc>) {
    match races
        .site(id)
        .and_then(|s| s.loc.clone().map(|l| (l, s.inlined_at.clone())))
    {
        Some((l, inl)) => (l.file, l.line, l.column, inl),
        None => (cx.source.name.clone(), 0, 0, None),
    }
}

fn access(races: &RaceKernel, cx: &FaultContext<'_>, w: AccessWord) -> RaceAccess {
    let (file, line, column, inlined_at) = place(races, cx, w.site());
    RaceAccess {
        thread: thread_of(w.thread(), cx.config.block),
        kind: w.kind().unwrap_or(AccessKind::Read),
        source_line: line_text(cx.source, &file, line),
        file,
        line,
        column,
        inlined_at,
    }
}

fn barrier_call(races: &RaceKernel, cx: &FaultContext<'_>, w: AccessWord) -> BarrierCall {
    let (file, line, column, inlined_at) = place(races, cx, w.site());
    BarrierCall {
        thread: thread_of(w.thread(), cx.config.block),
        source_line: line_text(cx.source, &file, line),
        file,
        line,
        column,
        inlined_at,
    }
}

/// The report a race record holds, if any.
pub(crate) fn race_error_of(rec: &RaceRecord, cx: &FaultContext<'_>) -> Option<Fault> {
    if rec.faulted == 0 {
        return None;
    }
    let races = cx.build.races.as_ref()?;
    let block = dim3(rec.block);
    match rec.event()? {
        RaceEventKind::Race => {
            let site = races.site(rec.current.site());
            let other = races.site(rec.other.site());
            let bytes = site
                .map_or(4, |s| s.bytes)
                .min(other.map_or(4, |s| s.bytes))
                .max(1);
            let array = site.and_then(|s| s.array.clone());
            Some(Fault::SharedRace(Box::new(SharedRace {
                kernel: Arc::clone(cx.kernel),
                site: cx.site,
                config: cx.config,
                element: if array.is_some() {
                    u64::from(rec.offset) / u64::from(bytes)
                } else {
                    u64::from(rec.offset)
                },
                array: array.unwrap_or_else(|| "shared memory".to_string()),
                byte_offset: rec.offset,
                block,
                first: access(races, cx, rec.other),
                second: access(races, cx, rec.current),
                count: rec.count,
            })))
        }
        event => {
            let kind = match event {
                RaceEventKind::WarpMask => BarrierMisuseKind::WarpMask { mask: rec.offset },
                RaceEventKind::ExitedBarrier => BarrierMisuseKind::Exited {
                    arrived: rec.offset,
                    expected: cx.config.block.x.max(1)
                        * cx.config.block.y.max(1)
                        * cx.config.block.z.max(1),
                },
                _ => BarrierMisuseKind::Divergent,
            };
            let other = match kind {
                BarrierMisuseKind::Divergent => Some(barrier_call(races, cx, rec.other)),
                // No thread recorded its exit in this epoch: where they went is not known.
                BarrierMisuseKind::Exited { .. } if rec.other.0 != 0 => {
                    Some(barrier_call(races, cx, rec.other))
                }
                _ => None,
            };
            Some(Fault::BarrierMisuse(Box::new(BarrierMisuse {
                kernel: Arc::clone(cx.kernel),
                site: cx.site,
                config: cx.config,
                kind,
                block,
                call: barrier_call(races, cx, rec.current),
                other,
                count: rec.count,
            })))
        }
    }
}

fn pair_name(a: AccessKind, b: AccessKind) -> &'static str {
    use AccessKind::*;
    match (a, b) {
        (Write | Atomic, Read) => "read-after-write",
        (Read, Write | Atomic) => "write-after-read",
        (Write, Atomic) | (Atomic, Write) => "atomic and plain write",
        _ => "write-after-write",
    }
}

impl fmt::Display for SharedRace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launched(f, &self.kernel, self.site, &self.config)?;
        write!(
            f,
            ": shared-memory race ({}) on `{}` element {} (byte {}) in block {}: {} by thread {} \
             and {} by thread {} with no barrier between them",
            pair_name(self.first.kind, self.second.kind),
            self.array,
            self.element,
            self.byte_offset,
            self.block,
            self.first.kind,
            self.first.thread,
            self.second.kind,
            self.second.thread,
        )?;
        for (what, a) in [("first", &self.first), ("then", &self.second)] {
            write!(f, "\n{what}: {} by thread {}", a.kind, a.thread)?;
            snippet(f, &a.file, a.line, a.column, a.source_line.as_deref())?;
            if let Some(at) = &a.inlined_at {
                write!(f, "\n  = in code inlined into {at}")?;
            }
        }
        if self.count > 1 {
            write!(f, "\n({} conflicting accesses in this launch)", self.count)?;
        }
        write!(
            f,
            "\nhelp: put a `__syncthreads()` between the two accesses (`__syncwarp()` when both \
             threads are in one warp), or give each thread its own element; the launch's outputs \
             may be wrong, the context is healthy"
        )
    }
}

impl fmt::Display for BarrierMisuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launched(f, &self.kernel, self.site, &self.config)?;
        match self.kind {
            BarrierMisuseKind::Divergent => {
                write!(
                    f,
                    ": divergent barrier in block {}: thread {} waited at one `__syncthreads()`",
                    self.block, self.call.thread
                )?;
                if let Some(other) = &self.other {
                    write!(f, " and thread {} at another", other.thread)?;
                }
                for call in std::iter::once(&self.call).chain(&self.other) {
                    call_snippet(f, call)?;
                }
                write!(
                    f,
                    "\nhelp: every thread of a block must reach the same `__syncthreads()`: move \
                     it out of the branch"
                )
            }
            BarrierMisuseKind::Exited { arrived, expected } => {
                write!(
                    f,
                    ": barrier reached by {arrived} of the {expected} threads of block {}: thread \
                     {} waited at this barrier while {} other thread{} had left the \
                     block",
                    self.block,
                    self.call.thread,
                    expected.saturating_sub(arrived),
                    if expected.saturating_sub(arrived) == 1 {
                        ""
                    } else {
                        "s"
                    },
                )?;
                call_snippet(f, &self.call)?;
                match &self.other {
                    Some(exit) => {
                        write!(f, "\nthread {} left the block here:", exit.thread)?;
                        call_snippet(f, exit)?;
                    }
                    None => write!(f, "\n(where they left is not known)")?,
                }
                write!(
                    f,
                    "\n= note: CUDA requires every thread of the block to reach a barrier in \
                     conditional code; current GPUs release a barrier that exited threads hold up, \
                     so the kernel runs to the end, but what the barrier orders is then \
                     undefined, and compute-sanitizer's synccheck does not report it\
                     \nhelp: guard the work, not the barrier: let every thread reach it (`if (i < \
                     n) {{ ... }}` around the work instead of `if (i >= n) return;` before the \
                     barrier, the same trip count for every thread of a loop with a barrier)"
                )
            }
            BarrierMisuseKind::WarpMask { mask } => {
                write!(
                    f,
                    ": `__syncwarp({mask:#010x})` called by thread {} of block {}, a lane the mask \
                     leaves out (the call was skipped)",
                    self.call.thread, self.block
                )?;
                call_snippet(f, &self.call)?;
                write!(
                    f,
                    "\nhelp: the mask must include every lane that calls `__syncwarp` (use \
                     `__activemask()` or the lanes of the branch)"
                )
            }
        }?;
        if self.count > 1 {
            write!(f, "\n({} reports in this launch)", self.count)?;
        }
        Ok(())
    }
}

/// A barrier call's source line, as a race's accesses show theirs.
fn call_snippet(f: &mut fmt::Formatter<'_>, c: &BarrierCall) -> fmt::Result {
    snippet(f, &c.file, c.line, c.column, c.source_line.as_deref())?;
    if let Some(at) = &c.inlined_at {
        write!(f, "\n  = in code inlined into {at}")?;
    }
    Ok(())
}

impl std::error::Error for SharedRace {}
impl std::error::Error for BarrierMisuse {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_threads_map_to_thread_idx() {
        assert_eq!(thread_of(37, Dim3::new(16, 16, 1)), Dim3::new(5, 2, 0));
        assert_eq!(thread_of(300, Dim3::new(16, 4, 8)), Dim3::new(12, 2, 4));
        assert_eq!(thread_of(5, Dim3::new(128, 1, 1)), Dim3::new(5, 0, 0));
    }

    fn call(thread: Dim3, line: u32, text: &str) -> BarrierCall {
        BarrierCall {
            thread,
            file: "k.cu".into(),
            line,
            column: 9,
            source_line: Some(text.into()),
            inlined_at: None,
        }
    }

    fn misuse(kind: BarrierMisuseKind, other: Option<BarrierCall>) -> BarrierMisuse {
        BarrierMisuse {
            kernel: "k".into(),
            site: Location::caller(),
            config: LaunchConfig::new(Dim3::x(1), Dim3::x(64)),
            kind,
            block: Dim3::new(0, 0, 0),
            call: call(Dim3::new(3, 0, 0), 4, "        __syncthreads();"),
            other,
            count: 1,
        }
    }

    #[test]
    fn a_divergent_barrier_names_a_thread_at_each_barrier_and_both_lines() {
        let other = call(Dim3::new(40, 0, 0), 6, "        __syncthreads();");
        let text = misuse(BarrierMisuseKind::Divergent, Some(other)).to_string();
        assert!(
            text.contains(
                ": divergent barrier in block (0, 0, 0): thread (3, 0, 0) waited at one \
                 `__syncthreads()` and thread (40, 0, 0) at another\n --> k.cu:4:9\n  |\n4 |"
            ),
            "{text}"
        );
        assert!(text.contains("\n --> k.cu:6:9\n"), "{text}");
        assert!(text.contains("move it out of the branch"), "{text}");
    }

    #[test]
    fn an_exited_barrier_names_the_barrier_the_exit_and_the_fix() {
        let exit = call(Dim3::new(40, 0, 0), 2, "    if (i >= n) return;");
        let text = misuse(
            BarrierMisuseKind::Exited {
                arrived: 44,
                expected: 64,
            },
            Some(exit),
        )
        .to_string();
        assert!(
            text.contains(
                ": barrier reached by 44 of the 64 threads of block (0, 0, 0): thread (3, 0, 0) \
                 waited at this barrier while 20 other threads had left the block\n \
                 --> k.cu:4:9"
            ),
            "{text}"
        );
        assert!(
            text.contains("thread (40, 0, 0) left the block here:\n --> k.cu:2:9"),
            "{text}"
        );
        assert!(text.contains("synccheck does not report it"), "{text}");
        assert!(text.contains("guard the work, not the barrier"), "{text}");
        let unknown = misuse(
            BarrierMisuseKind::Exited {
                arrived: 63,
                expected: 64,
            },
            None,
        )
        .to_string();
        assert!(
            unknown.contains("while 1 other thread had left"),
            "{unknown}"
        );
        assert!(
            unknown.contains("where they left is not known"),
            "{unknown}"
        );
    }

    #[test]
    fn a_warp_mask_misuse_names_the_mask_and_the_lane_left_out() {
        let text = misuse(BarrierMisuseKind::WarpMask { mask: 0xffff }, None).to_string();
        assert!(
            text.contains(
                ": `__syncwarp(0x0000ffff)` called by thread (3, 0, 0) of block (0, 0, 0), a \
                 lane the mask leaves out (the call was skipped)\n --> k.cu:4:9"
            ),
            "{text}"
        );
    }

    /// The kind's old name still compiles, with a deprecation warning pointing at the new one.
    #[test]
    #[allow(deprecated)]
    fn the_old_kind_name_is_the_new_kind() {
        let old: BarrierErrorKind = BarrierErrorKind::Divergent;
        assert_eq!(old, BarrierMisuseKind::Divergent);
        assert!(matches!(
            crate::BarrierErrorKind::WarpMask { mask: 1 },
            BarrierMisuseKind::WarpMask { mask: 1 }
        ));
    }

    #[test]
    fn pairs_are_named_by_their_order() {
        assert_eq!(
            pair_name(AccessKind::Write, AccessKind::Read),
            "read-after-write"
        );
        assert_eq!(
            pair_name(AccessKind::Read, AccessKind::Write),
            "write-after-read"
        );
        assert_eq!(
            pair_name(AccessKind::Write, AccessKind::Write),
            "write-after-write"
        );
    }
}
