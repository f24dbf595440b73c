// cudacheck compatibility header: <time.h> for NVRTC, which ships no C library headers.
// Device code can call clock() and clock64(), which NVRTC declares (with clock_t) without any
// include; the rest of the C library's <time.h> (time, clock_gettime, struct timespec) is
// host-only, and the host code that uses it is set aside before NVRTC compiles the file. This
// header exists so that `#include <time.h>` in a file written for nvcc resolves.
#ifndef CUDACHECK_COMPAT_TIME_H
#define CUDACHECK_COMPAT_TIME_H
#endif // CUDACHECK_COMPAT_TIME_H
