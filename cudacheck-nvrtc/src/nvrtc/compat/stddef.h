// cudacheck compatibility header: <stddef.h> for NVRTC, which ships no C library headers.
// size_t, ptrdiff_t and NULL are predefined by NVRTC; offsetof is not. Its body is CCCL's
// (<cuda/std/__cstddef/types.h> under NVRTC), which also defines it only when undefined.
#ifndef CUDACHECK_COMPAT_STDDEF_H
#define CUDACHECK_COMPAT_STDDEF_H
// CCCL 2.3 (CUDA 12.4) defines offsetof unconditionally in <cuda/std/cstddef>: included first.
#if __cplusplus >= 201703L && __has_include(<cuda/std/cstddef>)
#include <cuda/std/cstddef>
#endif

#if !defined(offsetof)
#define offsetof(type, member) (::size_t) ((char*) &(((type*) 0)->member) - (char*) 0)
#endif

#endif // CUDACHECK_COMPAT_STDDEF_H
