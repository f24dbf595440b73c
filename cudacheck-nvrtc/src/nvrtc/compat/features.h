// cudacheck compatibility header: <features.h> for NVRTC. glibc's configuration header, which
// code that defines `__linux__` (as nvcc's device pass sees it; cudacheck defines it too) may
// include to detect the C library: libcu++ of CUDA 12.4 (CCCL 2.3) does in its `__config`,
// then tests `__GLIBC_PREREQ`. Device code uses nothing of it; declaring nothing tells such
// code that the C library is not glibc, which only host-side choices depend on.
#ifndef CUDACHECK_COMPAT_FEATURES_H
#define CUDACHECK_COMPAT_FEATURES_H
#endif // CUDACHECK_COMPAT_FEATURES_H
