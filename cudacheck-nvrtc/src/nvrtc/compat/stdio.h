// cudacheck compatibility header: <stdio.h> for NVRTC, which ships no C library headers.
// Device code can only call printf, and NVRTC declares it without any include; this header
// exists so that `#include <stdio.h>` in a kernel written for nvcc resolves.
#ifndef CUDACHECK_COMPAT_STDIO_H
#define CUDACHECK_COMPAT_STDIO_H
#endif // CUDACHECK_COMPAT_STDIO_H
