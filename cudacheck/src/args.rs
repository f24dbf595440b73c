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

/// The most arguments one launch takes (CUDA allows 32 KiB of parameters, but kernels with
/// more than a few dozen parameters pass structs).
pub const MAX_ARGS: usize = 32;

/// One recorded argument. Built only by the [`KernelArg`]/[`KernelArgMut`] impls of this
/// crate, which is what keeps the pointers in it honest.
#[derive(Clone, Copy, Debug)]
pub struct ArgSlot {
    /// For a scalar: the value's address (alive for the launch's lifetime).
    pub(crate) value: *const c_void,
    /// For a buffer: the device pointer, passed by address like any other parameter.
    pub(crate) device_ptr: u64,
    /// Bytes the kernel parameter must have: 8 for a buffer, `size_of::<T>()` for a scalar.
    pub(crate) size: u32,
    /// The Rust type, for messages.
    pub(crate) ty: &'static str,
    /// For a buffer: which context it belongs to.
    pub(crate) buffer: Option<BufferInfo>,
}

/// Where a buffer argument lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferInfo {
    pub(crate) ctx_key: usize,
    pub(crate) ordinal: usize,
    pub(crate) len: usize,
}

impl ArgSlot {
    pub(crate) const EMPTY: ArgSlot = ArgSlot {
        value: std::ptr::null(),
        device_ptr: 0,
        size: 0,
        ty: "",
        buffer: None,
    };

    fn scalar<T>(v: &T) -> Self {
        ArgSlot {
            value: v as *const T as *const c_void,
            device_ptr: 0,
            size: size_of::<T>() as u32,
            ty: std::any::type_name::<T>(),
            buffer: None,
        }
    }

    fn buffer<T>(ptr: u64, info: BufferInfo) -> Self {
        ArgSlot {
            value: std::ptr::null(),
            device_ptr: ptr,
            size: size_of::<u64>() as u32,
            ty: std::any::type_name::<T>(),
            buffer: Some(info),
        }
    }
}

impl BufferInfo {
    fn of(len: usize, owner: &CudaStream) -> Self {
        BufferInfo {
            ctx_key: owner.context().cu_ctx() as usize,
            ordinal: owner.context().ordinal(),
            len,
        }
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
    #[inline]
    fn slot<'a>(&'a self, _: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let mut s = ArgSlot::scalar(&self.0);
        s.ty = std::any::type_name::<T>();
        (s, None)
    }
}

impl<T> KernelArg for CudaSlice<T> {
    #[inline]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.device_ptr(stream);
        let info = BufferInfo::of(self.len(), self.stream());
        (ArgSlot::buffer::<CudaSlice<T>>(ptr, info), Some(guard))
    }
}

impl<T> KernelArg for CudaView<'_, T> {
    #[inline]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.device_ptr(stream);
        let info = BufferInfo::of(self.len(), self.stream());
        (ArgSlot::buffer::<CudaView<'_, T>>(ptr, info), Some(guard))
    }
}

impl<T> KernelArg for CudaViewMut<'_, T> {
    #[inline]
    fn slot<'a>(&'a self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.device_ptr(stream);
        let info = BufferInfo::of(self.len(), self.stream());
        (
            ArgSlot::buffer::<CudaViewMut<'_, T>>(ptr, info),
            Some(guard),
        )
    }
}

impl<T> KernelArgMut for CudaSlice<T> {
    #[inline]
    fn slot_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let info = BufferInfo::of(self.len(), self.stream());
        let (ptr, guard) = self.device_ptr_mut(stream);
        (ArgSlot::buffer::<CudaSlice<T>>(ptr, info), Some(guard))
    }
}

impl<T> KernelArgMut for CudaViewMut<'_, T> {
    #[inline]
    fn slot_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (ArgSlot, Option<SyncOnDrop<'a>>) {
        let info = BufferInfo::of(self.len(), self.stream());
        let (ptr, guard) = self.device_ptr_mut(stream);
        (
            ArgSlot::buffer::<CudaViewMut<'_, T>>(ptr, info),
            Some(guard),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_record_their_size_and_type() {
        let s = ArgSlot::scalar(&3.0f64);
        assert_eq!(s.size, 8);
        assert_eq!(s.ty, "f64");
        assert!(s.buffer.is_none());
        let a = ArgSlot::scalar(&[1u16; 3]);
        assert_eq!(a.size, 6);
    }
}
