//! Copies and memsets, for `--init`: what each one wrote is marked in the shadow (`shadow.rs`)
//! after the driver accepted it, on the call's stream. Every entry point passes through
//! unchanged when `--init` is off.

use std::ffi::c_void;

use cudacheck_core::init::shadow::{pitched, pitched3};

use super::ffi::{call, CUcontext, CUdeviceptr, CUresult, CUstream, CUDA_SUCCESS};
use super::shadow::{self, stream_of};
use super::state::state;

/// `CUmemorytype`: the destinations with a device address.
const MEMORY_DEVICE: u32 = 2;
const MEMORY_UNIFIED: u32 = 4;

/// `CUDA_MEMCPY2D`.
#[repr(C)]
pub struct Memcpy2D {
    src_x: usize,
    src_y: usize,
    src_type: u32,
    src_host: *const c_void,
    src_device: CUdeviceptr,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: u32,
    dst_host: *mut c_void,
    dst_device: CUdeviceptr,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

/// `CUDA_MEMCPY3D`.
#[repr(C)]
pub struct Memcpy3D {
    src_x: usize,
    src_y: usize,
    src_z: usize,
    src_lod: usize,
    src_type: u32,
    src_host: *const c_void,
    src_device: CUdeviceptr,
    src_array: *mut c_void,
    reserved0: *mut c_void,
    src_pitch: usize,
    src_height: usize,
    dst_x: usize,
    dst_y: usize,
    dst_z: usize,
    dst_lod: usize,
    dst_type: u32,
    dst_host: *mut c_void,
    dst_device: CUdeviceptr,
    dst_array: *mut c_void,
    reserved1: *mut c_void,
    dst_pitch: usize,
    dst_height: usize,
    width: usize,
    height: usize,
    depth: usize,
}

/// The device bytes a 2D copy writes.
fn ranges_2d(p: &Memcpy2D) -> Vec<std::ops::Range<u64>> {
    if p.dst_type != MEMORY_DEVICE && p.dst_type != MEMORY_UNIFIED {
        return Vec::new();
    }
    let start = p.dst_device + (p.dst_y * p.dst_pitch + p.dst_x) as u64;
    pitched(
        start,
        p.width as u64,
        p.dst_pitch.max(p.width) as u64,
        p.height as u64,
    )
}

/// The device bytes a 3D copy writes.
fn ranges_3d(p: &Memcpy3D) -> Vec<std::ops::Range<u64>> {
    if p.dst_type != MEMORY_DEVICE && p.dst_type != MEMORY_UNIFIED {
        return Vec::new();
    }
    let pitch = p.dst_pitch.max(p.width) as u64;
    let height = p.dst_height.max(p.height) as u64;
    let start = p.dst_device + (p.dst_z as u64 * height + p.dst_y as u64) * pitch + p.dst_x as u64;
    pitched3(
        start,
        p.width as u64,
        pitch,
        p.height as u64,
        pitch * height,
        p.depth as u64,
    )
}

/// Marks `ranges` written on `stream`; a synchronous call (`sync`) waits for the marks, so
/// that a kernel the program launches next on any stream finds them.
fn mark(ranges: &[std::ops::Range<u64>], stream: CUstream, sync: bool) {
    if !state().opts.init {
        return;
    }
    for r in ranges {
        shadow::written(r.start, r.end - r.start, stream);
    }
    if sync {
        // SAFETY: the call's own stream.
        unsafe { call!(cuStreamSynchronize(stream)) };
    }
}

/// [`mark`] with `ctx` current (a peer copy's destination context).
fn mark_in(ctx: CUcontext, ranges: &[std::ops::Range<u64>], stream: CUstream, sync: bool) {
    // SAFETY: the program's context, made current on this thread for the marks and popped.
    if unsafe { call!(cuCtxPushCurrent_v2(ctx)) } != CUDA_SUCCESS {
        return;
    }
    mark(ranges, stream, sync);
    let mut popped: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; pops what was pushed above.
    unsafe { call!(cuCtxPopCurrent_v2(&mut popped)) };
}

/// One handler per entry point: the real call, then the marks of what it wrote.
macro_rules! written_by {
    ($($name:ident ( $($a:ident : $t:ty),* ) => $marks:expr;)*) => {$(
        /// Marks what the call wrote (`--init`).
        ///
        /// # Safety
        /// The entry point's own contract.
        pub unsafe fn $name(
            real: unsafe extern "C" fn($($t),*) -> CUresult,
            $($a: $t),*
        ) -> CUresult {
            // SAFETY: the program's arguments, to the entry point they were for.
            let r = unsafe { real($($a),*) };
            if r == CUDA_SUCCESS {
                $marks;
            }
            r
        }
    )*};
}

fn one(dst: CUdeviceptr, bytes: usize) -> Vec<std::ops::Range<u64>> {
    std::iter::once(dst..dst + bytes as u64).collect()
}

fn rows(dst: CUdeviceptr, pitch: usize, width: usize, height: usize) -> Vec<std::ops::Range<u64>> {
    pitched(dst, width as u64, pitch.max(width) as u64, height as u64)
}

written_by! {
    memcpy_htod(dst: CUdeviceptr, src: *const c_void, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), false), true);
    memcpy_htod_ptds(dst: CUdeviceptr, src: *const c_void, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), true), true);
    memcpy_htod_async(dst: CUdeviceptr, src: *const c_void, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream, false);
    memcpy_htod_async_ptsz(dst: CUdeviceptr, src: *const c_void, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream_of(stream, true), false);
    memcpy_dtod(dst: CUdeviceptr, src: CUdeviceptr, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), false), true);
    memcpy_dtod_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), true), true);
    memcpy_dtod_async(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream, false);
    memcpy_dtod_async_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream_of(stream, true), false);
    memcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), false), true);
    memcpy_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), true), true);
    memcpy_async(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream, false);
    memcpy_async_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream_of(stream, true), false);
    memcpy_peer(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize)
        => mark_in(dctx, &one(dst, n), stream_of(std::ptr::null_mut(), false), true);
    memcpy_peer_ptds(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize)
        => mark_in(dctx, &one(dst, n), stream_of(std::ptr::null_mut(), true), true);
    memcpy_peer_async(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize, stream: CUstream)
        => mark_in(dctx, &one(dst, n), stream, false);
    memcpy_peer_async_ptsz(dst: CUdeviceptr, dctx: CUcontext, src: CUdeviceptr, sctx: CUcontext, n: usize, stream: CUstream)
        => mark_in(dctx, &one(dst, n), stream_of(stream, true), false);
    // SAFETY (each below): the driver accepted the descriptor, so it is readable.
    memcpy_2d(p: *const Memcpy2D)
        => mark(&ranges_2d(unsafe { &*p }), stream_of(std::ptr::null_mut(), false), true);
    memcpy_2d_ptds(p: *const Memcpy2D)
        => mark(&ranges_2d(unsafe { &*p }), stream_of(std::ptr::null_mut(), true), true);
    memcpy_2d_async(p: *const Memcpy2D, stream: CUstream)
        => mark(&ranges_2d(unsafe { &*p }), stream, false);
    memcpy_2d_async_ptsz(p: *const Memcpy2D, stream: CUstream)
        => mark(&ranges_2d(unsafe { &*p }), stream_of(stream, true), false);
    memcpy_3d(p: *const Memcpy3D)
        => mark(&ranges_3d(unsafe { &*p }), stream_of(std::ptr::null_mut(), false), true);
    memcpy_3d_ptds(p: *const Memcpy3D)
        => mark(&ranges_3d(unsafe { &*p }), stream_of(std::ptr::null_mut(), true), true);
    memcpy_3d_async(p: *const Memcpy3D, stream: CUstream)
        => mark(&ranges_3d(unsafe { &*p }), stream, false);
    memcpy_3d_async_ptsz(p: *const Memcpy3D, stream: CUstream)
        => mark(&ranges_3d(unsafe { &*p }), stream_of(stream, true), false);
    memset_d8(dst: CUdeviceptr, v: u8, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), false), true);
    memset_d8_ptds(dst: CUdeviceptr, v: u8, n: usize)
        => mark(&one(dst, n), stream_of(std::ptr::null_mut(), true), true);
    memset_d16(dst: CUdeviceptr, v: u16, n: usize)
        => mark(&one(dst, 2 * n), stream_of(std::ptr::null_mut(), false), true);
    memset_d16_ptds(dst: CUdeviceptr, v: u16, n: usize)
        => mark(&one(dst, 2 * n), stream_of(std::ptr::null_mut(), true), true);
    memset_d32(dst: CUdeviceptr, v: u32, n: usize)
        => mark(&one(dst, 4 * n), stream_of(std::ptr::null_mut(), false), true);
    memset_d32_ptds(dst: CUdeviceptr, v: u32, n: usize)
        => mark(&one(dst, 4 * n), stream_of(std::ptr::null_mut(), true), true);
    memset_d8_async(dst: CUdeviceptr, v: u8, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream, false);
    memset_d8_async_ptsz(dst: CUdeviceptr, v: u8, n: usize, stream: CUstream)
        => mark(&one(dst, n), stream_of(stream, true), false);
    memset_d16_async(dst: CUdeviceptr, v: u16, n: usize, stream: CUstream)
        => mark(&one(dst, 2 * n), stream, false);
    memset_d16_async_ptsz(dst: CUdeviceptr, v: u16, n: usize, stream: CUstream)
        => mark(&one(dst, 2 * n), stream_of(stream, true), false);
    memset_d32_async(dst: CUdeviceptr, v: u32, n: usize, stream: CUstream)
        => mark(&one(dst, 4 * n), stream, false);
    memset_d32_async_ptsz(dst: CUdeviceptr, v: u32, n: usize, stream: CUstream)
        => mark(&one(dst, 4 * n), stream_of(stream, true), false);
    memset_d2d8(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize)
        => mark(&rows(dst, pitch, w, h), stream_of(std::ptr::null_mut(), false), true);
    memset_d2d8_ptds(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize)
        => mark(&rows(dst, pitch, w, h), stream_of(std::ptr::null_mut(), true), true);
    memset_d2d16(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize)
        => mark(&rows(dst, pitch, 2 * w, h), stream_of(std::ptr::null_mut(), false), true);
    memset_d2d16_ptds(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize)
        => mark(&rows(dst, pitch, 2 * w, h), stream_of(std::ptr::null_mut(), true), true);
    memset_d2d32(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize)
        => mark(&rows(dst, pitch, 4 * w, h), stream_of(std::ptr::null_mut(), false), true);
    memset_d2d32_ptds(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize)
        => mark(&rows(dst, pitch, 4 * w, h), stream_of(std::ptr::null_mut(), true), true);
    memset_d2d8_async(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, stream: CUstream)
        => mark(&rows(dst, pitch, w, h), stream, false);
    memset_d2d8_async_ptsz(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, stream: CUstream)
        => mark(&rows(dst, pitch, w, h), stream_of(stream, true), false);
    memset_d2d16_async(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, stream: CUstream)
        => mark(&rows(dst, pitch, 2 * w, h), stream, false);
    memset_d2d16_async_ptsz(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, stream: CUstream)
        => mark(&rows(dst, pitch, 2 * w, h), stream_of(stream, true), false);
    memset_d2d32_async(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, stream: CUstream)
        => mark(&rows(dst, pitch, 4 * w, h), stream, false);
    memset_d2d32_async_ptsz(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, stream: CUstream)
        => mark(&rows(dst, pitch, 4 * w, h), stream_of(stream, true), false);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_have_the_drivers_layout() {
        // cuda.h: CUDA_MEMCPY2D is 128 bytes, CUDA_MEMCPY3D 200 on 64-bit hosts.
        assert_eq!(std::mem::size_of::<Memcpy2D>(), 128);
        assert_eq!(std::mem::size_of::<Memcpy3D>(), 200);
    }

    fn zero2d() -> Memcpy2D {
        // SAFETY: every field is an integer or a raw pointer, for which zero is valid.
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn a_2d_copy_writes_its_rows_and_not_the_padding() {
        let mut p = zero2d();
        p.dst_type = MEMORY_DEVICE;
        p.dst_device = 0x1000;
        p.dst_pitch = 512;
        p.dst_x = 8;
        p.dst_y = 1;
        p.width = 100;
        p.height = 3;
        assert_eq!(
            ranges_2d(&p),
            vec![
                0x1208..0x1208 + 100,
                0x1408..0x1408 + 100,
                0x1608..0x1608 + 100
            ]
        );
        p.dst_type = 1; // host
        assert!(ranges_2d(&p).is_empty());
    }

    #[test]
    fn a_3d_copy_writes_its_boxes_rows() {
        // SAFETY: as above.
        let mut p: Memcpy3D = unsafe { std::mem::zeroed() };
        p.dst_type = MEMORY_UNIFIED;
        p.dst_device = 0;
        p.dst_pitch = 64;
        p.dst_height = 4;
        p.dst_z = 1;
        p.width = 16;
        p.height = 2;
        p.depth = 2;
        assert_eq!(ranges_3d(&p), vec![256..272, 320..336, 512..528, 576..592]);
    }
}
