// cudacheck compatibility header: <string.h> for NVRTC, which ships no C library headers.
// Device code can call memcpy and memset, which NVRTC declares without any include; the
// string functions (strlen, strcpy, ...) do not exist on the device.
#ifndef CUDACHECK_COMPAT_STRING_H
#define CUDACHECK_COMPAT_STRING_H
#endif // CUDACHECK_COMPAT_STRING_H
