//! Buffers whose unwritten memory init checking follows: [`alloc_uninit`] and
//! [`TrackedSlice`].

use std::mem::size_of;
use std::ops::{Deref, Range};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, SyncOnDrop, ValidAsZeroBits};

use crate::alloc::alloc_zeros;
use crate::args::{ArgSlot, KernelArg, KernelArgMut};
use crate::context::{bind, state_of, ContextState};
use crate::error::{DriverError, Error};

/// `len` elements of `T` on the stream's device that init checking counts as unwritten until
/// something writes them: a read of one of them by an init-checked launch
/// ([`Launch::init`](crate::Launch::init)) before that is reported as
/// [`Error::Uninitialized`], naming the buffer, the element, the thread and the line.
///
/// What writes them: an init-checked kernel's stores (marked on the device), the buffer's own
/// [`copy_from`](TrackedSlice::copy_from), [`memset_zeros`](TrackedSlice::memset_zeros) and
/// [`mark_written`](TrackedSlice::mark_written), and any launch through cudacheck that is not
/// init-checked and is given the buffer (or an 8-byte argument pointing into it): it may
/// have written any of it, so all of it counts as written. Memory cudacheck did not allocate
/// this way (`alloc_zeros`, `alloc_copy`, cudarc's own calls) always counts as written.
///
/// The memory holds zeros (so reading it back before writing it is no undefined behaviour, as
/// it would be with cudarc's unsafe `alloc`); only the checker counts it as unwritten.
///
/// # Memory
///
/// The shadow costs one bit per byte of each 2 MiB-aligned granule holding a tracked buffer
/// (256 KiB per granule), 4 KiB per GiB of address space holding one, and 2 MiB for the
/// context's directory, made with the first tracked buffer and kept with the context
/// ([`TrackedSlice::shadow_bytes`] says how much is held). A granule's shadow is freed with
/// the last tracked buffer in it; that drop waits for the context's kernels.
///
/// # Errors
///
/// As [`alloc_zeros`].
#[track_caller]
pub fn alloc_uninit<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<TrackedSlice<T>, Error> {
    let slice = alloc_zeros::<T>(stream, len)?;
    let state = state_of(stream.context())?;
    bind(stream.context())?;
    let (base, bytes) = (slice.device_ptr(stream).0, (len * size_of::<T>()) as u64);
    let tracked = bytes > 0 && state.init_shadow.track(base, bytes, stream.cu_stream());
    Ok(TrackedSlice {
        slice,
        state,
        base,
        tracked,
    })
}

/// A device buffer made by [`alloc_uninit`]: a `CudaSlice<T>` whose unwritten elements
/// init-checked launches report. Passed to [`Launch::arg`](crate::Launch::arg) and
/// [`Launch::arg_mut`](crate::Launch::arg_mut) (and to `#[checked_kernel]` wrappers declared
/// with `&TrackedSlice<T>` / `&mut TrackedSlice<T>`) as the slice is; it derefs to
/// `&CudaSlice<T>` for reading (`clone_dtoh`, views).
///
/// It gives no `&mut CudaSlice<T>` but through [`cuda_slice_mut`](Self::cuda_slice_mut), which
/// first counts the whole buffer as written: a write the checker cannot see would otherwise
/// make a later read of written memory look unwritten. A kernel launched outside cudacheck
/// (cudarc's launch builder) that writes through `&CudaSlice<T>`, or any cudacheck launch
/// that writes it through a pointer it loads from memory, must be followed by
/// [`mark_written`](Self::mark_written) of what it wrote.
///
/// Dropping it frees the memory (as the slice's drop does) after counting its bytes as written
/// again, so memory reused by a buffer the checker does not track is never reported.
pub struct TrackedSlice<T> {
    slice: CudaSlice<T>,
    state: Arc<ContextState>,
    /// The first byte's device address.
    base: u64,
    /// Whether the context's shadow tracks it (false: it counts as written, as any buffer).
    tracked: bool,
}

impl<T> std::fmt::Debug for TrackedSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedSlice")
            .field("len", &self.slice.len())
            .field("base", &format_args!("{:#x}", self.base))
            .field("tracked", &self.tracked)
            .finish()
    }
}

impl<T> Deref for TrackedSlice<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

/// Byte range of the element range `r` of a buffer of `len` elements of `T`, clipped.
fn bytes_of<T>(r: Range<usize>, len: usize) -> Range<u64> {
    let (lo, hi) = (r.start.min(len), r.end.min(len));
    let e = size_of::<T>() as u64;
    (lo as u64 * e)..(hi.max(lo) as u64 * e)
}

impl<T> TrackedSlice<T> {
    /// Whether init checking follows this buffer's writes. False when its shadow could not be
    /// made (the device refused the memory): it then counts as written, as any other buffer.
    pub fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// Counts the elements `range` (clipped to the buffer) as written, ordered on the
    /// buffer's stream after the work queued there: what a write the checker cannot see
    /// (cudarc's copies and launches) needs after it.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] when the context cannot be made current.
    pub fn mark_written(&self, range: Range<usize>) -> Result<(), Error> {
        self.mark(range, self.slice.stream())
    }

    fn mark(&self, range: Range<usize>, stream: &CudaStream) -> Result<(), Error> {
        // After `recover` the shadow's addresses belong to the old context.
        if !self.tracked || !self.state.is_alive() {
            return Ok(());
        }
        bind(stream.context())?;
        let b = bytes_of::<T>(range, self.slice.len());
        self.state
            .init_shadow
            .written(self.base + b.start, b.end - b.start, stream.cu_stream());
        Ok(())
    }

    /// The slice, to write with cudarc: the whole buffer counts as written from now on (what
    /// cudarc does with it cannot be seen). Use the buffer's own writes
    /// ([`copy_from`](Self::copy_from), [`memset_zeros`](Self::memset_zeros)) or
    /// [`mark_written`](Self::mark_written) to keep its unwritten part checked.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] when the context cannot be made current.
    pub fn cuda_slice_mut(&mut self) -> Result<&mut CudaSlice<T>, Error> {
        self.mark(0..self.slice.len(), self.slice.stream())?;
        Ok(&mut self.slice)
    }

    /// Bytes of device memory the shadow of this buffer's context holds now (see
    /// [`alloc_uninit`], "Memory").
    pub fn shadow_bytes(&self) -> u64 {
        self.state.init_shadow.device_bytes()
    }
}

impl<T: DeviceRepr> TrackedSlice<T> {
    /// Copies `data` to the elements from `offset` on (on the buffer's stream) and counts
    /// them as written.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] for a range past the buffer's end (`CUDA_ERROR_INVALID_VALUE`) or the
    /// driver's error.
    pub fn copy_from(&mut self, offset: usize, data: &[T]) -> Result<(), Error> {
        let end = offset
            .checked_add(data.len())
            .filter(|&e| e <= self.slice.len());
        let Some(end) = end else {
            return Err(Error::Driver(DriverError::new("cuMemcpyHtoDAsync", 1)));
        };
        let stream = self.slice.stream().clone();
        let mut view = self.slice.slice_mut(offset..end);
        stream
            .memcpy_htod(data, &mut view)
            .map_err(|e| Error::Driver(DriverError::from_cudarc("cuMemcpyHtoDAsync", e)))?;
        self.mark(offset..end, &stream)
    }
}

impl<T: DeviceRepr + ValidAsZeroBits> TrackedSlice<T> {
    /// Zeroes the elements `range` (clipped to the buffer; `..` is all of it) on the buffer's
    /// stream and counts them as written.
    ///
    /// # Errors
    ///
    /// The driver's error.
    pub fn memset_zeros(&mut self, range: Range<usize>) -> Result<(), Error> {
        let len = self.slice.len();
        let (lo, hi) = (
            range.start.min(len),
            range.end.min(len).max(range.start.min(len)),
        );
        let stream = self.slice.stream().clone();
        let mut view = self.slice.slice_mut(lo..hi);
        stream
            .memset_zeros(&mut view)
            .map_err(|e| Error::Driver(DriverError::from_cudarc("cuMemsetD8Async", e)))?;
        self.mark(lo..hi, &stream)
    }
}

impl<T> Drop for TrackedSlice<T> {
    fn drop(&mut self) {
        // The slice frees its memory on its stream after this; its bits are set before that,
        // in the same stream order.
        if self.tracked && self.state.is_alive() && bind(self.slice.stream().context()).is_ok() {
            self.state
                .init_shadow
                .untrack(self.base, self.slice.stream().cu_stream());
        }
    }
}

impl<T> TrackedSlice<T> {
    /// A launch in another context (peer access) looks the buffer up in that context's shadow,
    /// where it is not tracked, and its stores mark nothing here: the whole buffer counts as
    /// written before it is passed.
    #[cold]
    #[inline(never)]
    fn passed_to_another_context(&self) {
        // A failure to mark is a failure to bind the buffer's context, which the launch will
        // meet and report itself.
        let _ = self.mark(0..self.slice.len(), self.slice.stream());
    }

    #[inline(always)]
    fn check_context(&self, stream: &CudaStream) {
        if self.tracked && stream.context().cu_ctx() != self.slice.stream().context().cu_ctx() {
            self.passed_to_another_context();
        }
    }
}

impl<T> KernelArg for TrackedSlice<T> {
    #[inline(always)]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        self.check_context(stream);
        let (mut slot, guard) = self.slice.slot(stream);
        slot.ty = std::any::type_name::<TrackedSlice<T>>;
        (slot, guard)
    }
}

impl<T> KernelArgMut for TrackedSlice<T> {
    #[inline(always)]
    fn slot_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        self.check_context(stream);
        let (mut slot, guard) = self.slice.slot_mut(stream);
        slot.ty = std::any::type_name::<TrackedSlice<T>>;
        (slot, guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracked_buffers_move_between_threads_as_slices_do() {
        fn send_sync<X: Send + Sync>() {}
        send_sync::<TrackedSlice<f32>>();
    }

    #[test]
    fn element_ranges_become_byte_ranges_clipped_to_the_buffer() {
        assert_eq!(bytes_of::<f32>(0..10, 100), 0..40);
        assert_eq!(bytes_of::<f32>(98..200, 100), 392..400);
        assert_eq!(bytes_of::<u64>(150..200, 100), 800..800);
        // A reversed range is empty, not a wrap-around.
        let (start, end) = (10, 5);
        assert_eq!(bytes_of::<u8>(start..end, 100), 10..10);
    }
}
