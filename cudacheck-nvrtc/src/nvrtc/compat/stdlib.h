// cudacheck compatibility header: <stdlib.h> for NVRTC, which ships no C library headers.
// Device code can call malloc, free and abs, and NVRTC declares them without any include; the
// rest of the C library's <stdlib.h> (getenv, qsort, exit, ...) is host-only. CUDA's own
// <cuda.h> includes this header, so it must resolve for `#include <cuda.h>` to compile.
// No CUDA or CCCL header defines these names under NVRTC, so nothing can clash.
#ifndef CUDACHECK_COMPAT_STDLIB_H
#define CUDACHECK_COMPAT_STDLIB_H

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1

// glibc's <stdlib.h> includes <sys/types.h>, whose System V shorthands every Linux nvcc build
// sees (g++ defines _DEFAULT_SOURCE); kernels written there use them without an include.
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

#endif // CUDACHECK_COMPAT_STDLIB_H
