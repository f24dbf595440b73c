//! Allocation helpers that turn `CUDA_ERROR_OUT_OF_MEMORY` into [`Error::OutOfMemory`], with
//! the free and total memory of the device and what to do about it.

use std::mem::size_of;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};

use crate::context::{bind, state_of, ContextState};
use crate::driver;
use crate::error::{bytes, DriverError, Error};

/// `len` zeroed elements of `T` on the stream's device.
///
/// # Errors
///
/// [`Error::OutOfMemory`] when the device cannot hold them, [`Error::ContextPoisoned`] after a
/// sticky fault, or the driver's error.
#[track_caller]
pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, Error> {
    let state = before_alloc::<T>(stream, len)?;
    stream
        .alloc_zeros::<T>(len)
        .map_err(|e| alloc_error(&state, stream, request::<T>(len), e))
}

/// A device copy of `data`.
///
/// # Errors
///
/// As [`alloc_zeros`].
#[track_caller]
pub fn alloc_copy<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    data: &[T],
) -> Result<CudaSlice<T>, Error> {
    let state = before_alloc::<T>(stream, data.len())?;
    stream
        .clone_htod(data)
        .map_err(|e| alloc_error(&state, stream, request::<T>(data.len()), e))
}

/// Bytes for `len` elements, saturating: a request too large to express cannot fit anyway.
fn request<T>(len: usize) -> u64 {
    (len as u128 * size_of::<T>() as u128).min(u64::MAX as u128) as u64
}

/// Health first; then refuse at once what is larger than the whole device, without asking the
/// allocator (which may try to grow its pool first).
fn before_alloc<T>(stream: &Arc<CudaStream>, len: usize) -> Result<Arc<ContextState>, Error> {
    let state = state_of(stream.context())?;
    state.check_health()?;
    let requested = request::<T>(len);
    if requested > state.device.total_memory {
        bind(stream.context())?;
        let (free, total) = driver::mem_get_info()?;
        return Err(out_of_memory(state.device.ordinal, requested, free, total));
    }
    Ok(state)
}

#[cold]
#[track_caller]
fn alloc_error(
    state: &ContextState,
    stream: &Arc<CudaStream>,
    requested: u64,
    e: cudarc::driver::DriverError,
) -> Error {
    let e = DriverError::from_cudarc("cuMemAlloc", e);
    if e.is_out_of_memory() {
        let info = bind(stream.context()).and_then(|()| driver::mem_get_info());
        if let Ok((free, total)) = info {
            return out_of_memory(state.device.ordinal, requested, free, total);
        }
    }
    state.fault(e, std::panic::Location::caller(), None, stream.cu_stream())
}

/// The error, with a hint that depends on whether the request could ever fit.
pub(crate) fn out_of_memory(device: usize, requested: u64, free: u64, total: u64) -> Error {
    let hint = if requested > total {
        format!(
            "That is more than the device's entire memory ({}); no amount of freeing helps. \
             Process the data in chunks, or spread it over several devices.",
            bytes(total)
        )
    } else {
        format!(
            "Free buffers you no longer need (drop their CudaSlice), allocate less at once \
             (chunks of at most {} fit now), or check for a leak.",
            bytes(free)
        )
    };
    Error::OutOfMemory {
        device,
        requested,
        free,
        total,
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_depends_on_whether_it_could_ever_fit() {
        let never = out_of_memory(0, 1 << 50, 10 << 30, 80 << 30).to_string();
        assert!(
            never.contains("more than the device's entire memory"),
            "{never}"
        );
        let later = out_of_memory(0, 20 << 30, 10 << 30, 80 << 30).to_string();
        assert!(later.contains("Free buffers"), "{later}");
        assert!(
            later.contains("chunks of at most 10737418240 bytes (10.0 GiB)"),
            "{later}"
        );
    }

    #[test]
    fn request_saturates_instead_of_overflowing() {
        assert_eq!(request::<u64>(usize::MAX), u64::MAX);
        assert_eq!(request::<f32>(10), 40);
    }
}
