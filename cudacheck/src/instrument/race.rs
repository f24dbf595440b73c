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

/// What is wrong with a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierErrorKind {
    /// Threads of one block waited at different `__syncthreads()` (or one only some reach).
    Divergent,
    /// `__syncwarp(mask)` called by a lane the mask leaves out (the call was skipped).
    WarpMask { mask: u32 },
}

/// A barrier misused ([`Error::Barrier`](crate::Error::Barrier)): undefined behaviour that
/// hangs or gives wrong results without a check.
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
    pub kind: BarrierErrorKind,
    /// `blockIdx` of the block.
    pub block: Dim3,
    /// A thread at the barrier, and where it is.
    pub thread: Dim3,
    /// The CUDA source file and 1-based line of that barrier, and the line's text.
    pub file: String,
    pub line: u32,
    pub source_line: Option<String>,
    /// For a divergent barrier: a thread at the other barrier, and where that is.
    pub other: Option<(Dim3, String, u32, Option<String>)>,
    /// How many reports the launch made.
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
        _ => {
            let (file, line, _, _) = place(races, cx, rec.current.site());
            let kind = if rec.event() == Some(RaceEventKind::WarpMask) {
                BarrierErrorKind::WarpMask { mask: rec.offset }
            } else {
                BarrierErrorKind::Divergent
            };
            let other = (kind == BarrierErrorKind::Divergent).then(|| {
                let (f2, l2, _, _) = place(races, cx, rec.other.site());
                let text = line_text(cx.source, &f2, l2);
                (thread_of(rec.other.thread(), cx.config.block), f2, l2, text)
            });
            Some(Fault::Barrier(Box::new(BarrierMisuse {
                kernel: Arc::clone(cx.kernel),
                site: cx.site,
                config: cx.config,
                kind,
                block,
                thread: thread_of(rec.current.thread(), cx.config.block),
                source_line: line_text(cx.source, &file, line),
                file,
                line,
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
            BarrierErrorKind::Divergent => {
                write!(
                    f,
                    ": divergent barrier in block {}: thread {} waited at one `__syncthreads()`",
                    self.block, self.thread
                )?;
                if let Some((t, _, _, _)) = &self.other {
                    write!(f, " and thread {t} at another")?;
                }
                snippet(f, &self.file, self.line, 0, self.source_line.as_deref())?;
                if let Some((_, file, line, text)) = &self.other {
                    snippet(f, file, *line, 0, text.as_deref())?;
                }
                write!(
                    f,
                    "\nhelp: every thread of a block must reach the same `__syncthreads()`: move \
                     it out of the branch"
                )
            }
            BarrierErrorKind::WarpMask { mask } => {
                write!(
                    f,
                    ": `__syncwarp({mask:#010x})` called by thread {} of block {}, a lane the mask \
                     leaves out (the call was skipped)",
                    self.thread, self.block
                )?;
                snippet(f, &self.file, self.line, 0, self.source_line.as_deref())?;
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
