// cudacheck compatibility header: <cuda.h> for NVRTC. The toolkit's own <cuda.h> declares the
// driver API, and NVRTC rejects every host function declaration in it ("host functions are not
// allowed in JIT mode"), so a kernel file that includes it for a type or for CUDA_VERSION cannot
// compile. This header keeps what device code can use: CUDA_VERSION, computed from the
// compiler's version the way the toolkit's header hard-codes it (13.0 gives 13000), and the
// handle types, spelled as the toolkit's header spells them so that both agree.
#ifndef CUDACHECK_COMPAT_CUDA_H
#define CUDACHECK_COMPAT_CUDA_H

#ifndef CUDA_VERSION
#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
#endif

typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUarray_st* CUarray;
// Texture and surface objects are kernel parameters.
typedef unsigned long long CUtexObject_v1;
typedef CUtexObject_v1 CUtexObject;
typedef unsigned long long CUsurfObject_v1;
typedef CUsurfObject_v1 CUsurfObject;

#endif // CUDACHECK_COMPAT_CUDA_H
