use cudacheck::cudarc::driver::{sys, CudaContext};
use cudacheck::nvrtc::CudaSource;
use cudacheck::{Kernel, SyncMode};
fn r(name: &str, x: sys::CUresult) { println!("{name}: {x:?}"); }
fn main() {
    let variant = std::env::args().nth(1).unwrap_or_default();
    let stream = cudacheck::default_stream(0).unwrap();
    let ctx = stream.context().clone();
    let dev = ctx.cu_device();
    let old = ctx.cu_ctx();
    let k = Kernel::new(CudaSource::from_str("b.cu", "#include <assert.h>\nextern \"C\" __global__ void boom(int x){ assert(x==0); }"), "boom").sync(SyncMode::Always).build();
    let e = unsafe { k.launch(&stream).grid(1).block(1).arg(&1i32).run() }.unwrap_err();
    println!("fault: {e}");
    unsafe {
        let (mut flags, mut active) = (0u32, 0i32);
        r("getstate", sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active)); println!("active={active}");
        if variant == "unset" { r("setcurrent(null)", sys::cuCtxSetCurrent(std::ptr::null_mut())); }
        if variant == "drop" { drop(k); drop(stream); drop(ctx); println!("dropped"); }
        r("reset", sys::cuDevicePrimaryCtxReset_v2(dev));
        r("getstate2", sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active)); println!("active={active}");
        let mut cur: sys::CUcontext = std::ptr::null_mut();
        r("getcurrent", sys::cuCtxGetCurrent(&mut cur)); println!("cur={cur:?} old={old:?}");
        r("init", sys::cuInit(0));
        let mut c: sys::CUcontext = std::ptr::null_mut();
        r("retain", sys::cuDevicePrimaryCtxRetain(&mut c, dev)); println!("new={c:?}");
        r("setcurrent", sys::cuCtxSetCurrent(c));
        r("sync", sys::cuCtxSynchronize());
        let mut p = 0u64;
        r("memalloc", sys::cuMemAlloc_v2(&mut p, 1024));
        let mut v = 0i32;
        r("attr", sys::cuDeviceGetAttribute(&mut v, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev));
    }
    match CudaContext::new(0) { Ok(c) => { println!("CudaContext::new ok"); let s = c.default_stream(); println!("alloc: {:?}", s.alloc_zeros::<f32>(16).map(|_| ())); } Err(e) => println!("CudaContext::new: {e:?}") }
}
