//! Kernel arguments: what a [`Launch`](crate::Launch) records about each one so that it can
//! check it against the kernel's parameter table before launching.
//!
//! Buffers (`CudaSlice`, `CudaView`, `CudaViewMut`) record their device pointer, length and
//! context; scalars record a pointer to the value and its size. Nothing is allocated: slots live
//! in a fixed-capacity array inside the launch.

use std::ffi::c_void;
use std::mem::size_of;

use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice,
    SyncOnDrop,
};

use crate::peer;

/// The most arguments one launch takes (CUDA allows 32 KiB of parameters, but kernels with
/// more than a few dozen parameters pass structs).
pub const MAX_ARGS: usize = 32;

/// One recorded argument, 24 bytes: launches carry [`MAX_ARGS`] of them inline, and the
/// builder moves the launch by value, so every byte here is copied several times per launch.
/// Built only by the [`KernelArg`]/[`KernelArgMut`] impls of this crate, which is what keeps
/// the pointers in it honest.
#[derive(Clone, Copy, Debug)]
pub struct ArgSlot {
    /// A scalar: the value's address (alive for the launch's lifetime). A buffer: the device
    /// pointer itself, which the kernel receives by address like any other parameter.
    pub(crate) word: u64,
    /// A scalar: the bytes the kernel parameter must have (`size_of::<T>()`). A buffer: the low
    /// 32 bits of its length in elements (its parameter is always 8 bytes; see
    /// [`param_size`](Self::param_size)). Shared so that the slot stays 24 bytes while still
    /// carrying the length (and, in the kind, the element size) that bounds-checked launches
    /// pass to the kernel.
    pub(crate) size_or_len: u32,
    /// What kind of argument this is, and for a buffer, how it relates to the launch's stream.
    pub(crate) kind: SlotKind,
    /// The Rust type's name, for messages (a function pointer: half the size of a `&str`).
    pub(crate) ty: fn() -> &'static str,
}

/// Scalar, or a buffer of the launch's context, or of a context the launch's context has peer
/// access to, or a buffer of another context (with the device it lives on). Decided when the
/// argument is pushed, where the stream is at hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotKind {
    Scalar,
    /// A buffer of the launch's context; `len_hi` holds bits 32..40 of its length in elements
    /// (the low bits are in `size_or_len`), `elem_size` the bytes of one element of the Rust
    /// element type (0 when it does not fit in 16 bits).
    Buffer {
        len_hi: u8,
        elem_size: u16,
    },
    /// A buffer of another context that the launch's context was given peer access to
    /// ([`enable_peer_access`](crate::enable_peer_access)); lengths as for `Buffer`. The launch
    /// synchronizes after the kernel: cudarc's ordering events of the buffer belong to its own
    /// context and cannot be recorded on the launch's stream.
    PeerBuffer {
        len_hi: u8,
        elem_size: u16,
    },
    ForeignBuffer {
        ordinal: u16,
    },
}

/// The longest buffer length a slot records exactly: 2^40 - 1 elements (past any device's
/// memory even for 1-byte elements). Longer lengths are recorded as this, which only makes a
/// bounds check more lenient.
pub(crate) const MAX_RECORDED_LEN: u64 = (1 << 40) - 1;

impl ArgSlot {
    pub(crate) fn scalar<T>(v: &T) -> Self {
        ArgSlot {
            word: v as *const T as usize as u64,
            size_or_len: size_of::<T>() as u32,
            kind: SlotKind::Scalar,
            ty: std::any::type_name::<T>,
        }
    }

    /// How a buffer owned by `owner`'s context, `len` elements of `T` long, relates to a
    /// launch on `stream`.
    #[inline(always)]
    fn kind_of<T>(owner: &CudaStream, stream: &CudaStream, len: usize) -> (SlotKind, u32) {
        let len = (len as u64).min(MAX_RECORDED_LEN);
        let (len_hi, elem_size) = (
            (len >> 32) as u8,
            u16::try_from(size_of::<T>()).unwrap_or(0),
        );
        if owner.context().cu_ctx() == stream.context().cu_ctx() {
            (SlotKind::Buffer { len_hi, elem_size }, len as u32)
        } else {
            Self::other_context(owner, stream, len as u32, len_hi, elem_size)
        }
    }

    #[cold]
    #[inline(never)]
    fn other_context(
        owner: &CudaStream,
        stream: &CudaStream,
        len_lo: u32,
        len_hi: u8,
        elem_size: u16,
    ) -> (SlotKind, u32) {
        if peer::allowed(stream.context(), owner.context()) {
            (SlotKind::PeerBuffer { len_hi, elem_size }, len_lo)
        } else {
            let ordinal = owner.context().ordinal().min(u16::MAX as usize) as u16;
            (SlotKind::ForeignBuffer { ordinal }, 0)
        }
    }

    fn buffer<T: ?Sized>(ptr: u64, (kind, len_lo): (SlotKind, u32)) -> Self {
        ArgSlot {
            word: ptr,
            size_or_len: len_lo,
            kind,
            ty: std::any::type_name::<T>,
        }
    }

    /// Bytes the kernel parameter must have: `size_of::<T>()` for a scalar, 8 for a buffer.
    #[inline]
    pub(crate) fn param_size(&self) -> u32 {
        match self.kind {
            SlotKind::Scalar => self.size_or_len,
            _ => size_of::<u64>() as u32,
        }
    }

    /// A buffer the launch may use (of its context or a peer's): its length in elements of the
    /// Rust element type.
    pub(crate) fn buffer_len(&self) -> Option<u64> {
        match self.kind {
            SlotKind::Buffer { len_hi, .. } | SlotKind::PeerBuffer { len_hi, .. } => {
                Some(u64::from(len_hi) << 32 | u64::from(self.size_or_len))
            }
            _ => None,
        }
    }

    /// A buffer the launch may use: the bytes of one element (`None` for anything else,
    /// or an element larger than 65535 bytes).
    // For the lengths array in bytes (`launch/checked.rs::fill_lengths`), which the
    // instrumenter's next ABI takes; until then only the tests read it.
    #[allow(dead_code)]
    pub(crate) fn buffer_elem_size(&self) -> Option<u32> {
        match self.kind {
            SlotKind::Buffer { elem_size, .. } | SlotKind::PeerBuffer { elem_size, .. }
                if elem_size > 0 =>
            {
                Some(u32::from(elem_size))
            }
            _ => None,
        }
    }

    /// The pointer cuLaunchKernel's parameter array holds for this argument. For a buffer it
    /// points at `self.word`, so the slot must not move until the launch is queued.
    #[inline]
    pub(crate) fn param_ptr(&self) -> *mut c_void {
        match self.kind {
            SlotKind::Scalar => self.word as usize as *mut c_void,
            _ => &self.word as *const u64 as *mut c_void,
        }
    }
}

/// cudarc's ordering guard for a buffer argument, kept only when it will do something: like
/// cudarc's own launch builder, which decides at push time whether the context manages
/// multi-stream ordering, a guard of a context that does not is dropped (a no-op) at once.
///
/// The guard of a buffer of another context is forgotten, never dropped: dropping it would
/// record the buffer's event (of the buffer's context) on the launch's stream, which the
/// driver refuses, and cudarc would keep that refusal in the launch context's error state,
/// where the next cudarc call of any thread on that context would return it. A launch that
/// uses a peer buffer synchronizes instead (see `SlotKind::PeerBuffer`); a foreign one is
/// refused before launching.
#[inline(always)]
fn keep<'a>(slot: &ArgSlot, stream: &CudaStream, guard: SyncOnDrop<'a>) -> Option<SyncOnDrop<'a>> {
    if matches!(
        slot.kind,
        SlotKind::PeerBuffer { .. } | SlotKind::ForeignBuffer { .. }
    ) {
        std::mem::forget(guard);
        None
    } else if stream.context().is_managing_stream_synchronization() {
        Some(guard)
    } else {
        None
    }
}

/// Something that can be passed to a kernel by shared reference: scalars, `[T; N]`,
/// [`ByValue`] structs, and read-only device buffers.
///
/// Implemented by cudacheck only; wrap your own `#[repr(C)]` structs in [`ByValue`].
pub trait KernelArg {
    #[doc(hidden)]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>);
}

/// A device buffer the kernel may write: `&mut CudaSlice<T>`, `&mut CudaViewMut<T>`.
pub trait KernelArgMut {
    #[doc(hidden)]
    fn slot_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>);
}

macro_rules! scalar_args {
    ($($t:ty),* $(,)?) => {$(
        impl KernelArg for $t {
            #[inline]
            fn slot<'a>(&'a self, _: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
                (ArgSlot::scalar(self), None)
            }
        }
    )*};
}

scalar_args!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    isize,
    usize,
    f32,
    f64,
    bool,
    half::f16,
    half::bf16
);

impl<T: DeviceRepr, const N: usize> KernelArg for [T; N] {
    #[inline]
    fn slot<'a>(&'a self, _: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        (ArgSlot::scalar(self), None)
    }
}

/// A `#[repr(C)]` value passed to a kernel by value (a struct parameter). `T: DeviceRepr` is
/// cudarc's promise that the bytes of `T` mean the same on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct ByValue<T: DeviceRepr>(pub T);

impl<T: DeviceRepr> KernelArg for ByValue<T> {
    #[inline(always)]
    fn slot<'a>(&'a self, _: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let mut s = ArgSlot::scalar(&self.0);
        s.ty = std::any::type_name::<T>;
        (s, None)
    }
}

impl<T> KernelArg for CudaSlice<T> {
    #[inline(always)]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let kind = ArgSlot::kind_of::<T>(self.stream(), stream, self.len());
        let (ptr, guard) = self.device_ptr(stream);
        let slot = ArgSlot::buffer::<CudaSlice<T>>(ptr, kind);
        (slot, keep(&slot, stream, guard))
    }
}

impl<T> KernelArg for CudaView<'_, T> {
    #[inline(always)]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let kind = ArgSlot::kind_of::<T>(self.stream(), stream, self.len());
        let (ptr, guard) = self.device_ptr(stream);
        let slot = ArgSlot::buffer::<CudaView<'_, T>>(ptr, kind);
        (slot, keep(&slot, stream, guard))
    }
}

impl<T> KernelArg for CudaViewMut<'_, T> {
    #[inline(always)]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let kind = ArgSlot::kind_of::<T>(self.stream(), stream, self.len());
        let (ptr, guard) = self.device_ptr(stream);
        let slot = ArgSlot::buffer::<CudaViewMut<'_, T>>(ptr, kind);
        (slot, keep(&slot, stream, guard))
    }
}

impl<T> KernelArgMut for CudaSlice<T> {
    #[inline(always)]
    fn slot_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let kind = ArgSlot::kind_of::<T>(self.stream(), stream, self.len());
        let (ptr, guard) = self.device_ptr_mut(stream);
        let slot = ArgSlot::buffer::<CudaSlice<T>>(ptr, kind);
        (slot, keep(&slot, stream, guard))
    }
}

impl<T> KernelArgMut for CudaViewMut<'_, T> {
    #[inline(always)]
    fn slot_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let kind = ArgSlot::kind_of::<T>(self.stream(), stream, self.len());
        let (ptr, guard) = self.device_ptr_mut(stream);
        let slot = ArgSlot::buffer::<CudaViewMut<'_, T>>(ptr, kind);
        (slot, keep(&slot, stream, guard))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_record_their_size_and_type() {
        assert_eq!(
            size_of::<ArgSlot>(),
            24,
            "keep slots small: launches copy them"
        );
        let v = 3.0f64;
        let s = ArgSlot::scalar(&v);
        assert_eq!(s.param_size(), 8);
        assert_eq!(s.buffer_len(), None);
        assert_eq!((s.ty)(), "f64");
        assert_eq!(s.kind, SlotKind::Scalar);
        assert_eq!(
            s.param_ptr() as usize,
            &v as *const f64 as usize,
            "points at the value"
        );
        let a = ArgSlot::scalar(&[1u16; 3]);
        assert_eq!(a.param_size(), 6);
    }

    #[test]
    fn buffers_record_40_bits_of_length_the_element_size_and_8_parameter_bytes() {
        let len = (5u64 << 32) + 7;
        let kind = SlotKind::Buffer {
            len_hi: (len >> 32) as u8,
            elem_size: 12,
        };
        let s = ArgSlot::buffer::<u8>(0x1000, (kind, len as u32));
        assert_eq!(s.param_size(), 8);
        assert_eq!(s.buffer_len(), Some(len));
        assert_eq!(s.buffer_elem_size(), Some(12));
        let foreign = ArgSlot::buffer::<u8>(0x1000, (SlotKind::ForeignBuffer { ordinal: 1 }, 0));
        assert_eq!(foreign.buffer_len(), None);
        assert_eq!(foreign.buffer_elem_size(), None);
        assert_eq!(foreign.param_size(), 8);
    }
}
