// cudacheck's implicit header: NVRTC reads it before every source (--pre-include), standing in
// for what nvcc puts in front of every .cu file. nvcc includes <cuda_runtime.h> implicitly, and
// through it the host C library's <math.h>, <cmath>, <stdlib.h>, <string.h> and <stdio.h>, and
// the C++ library's <utility> (cuda_runtime.h includes it) and <type_traits> (<cmath> does), so
// kernels written for nvcc use INFINITY, NAN, M_PI, std::sqrt, std::swap, std::is_same_v or
// EXIT_FAILURE without any include. The toolkit's <cuda_runtime.h> compiles under NVRTC (it leaves out its host half
// there); the C library parts come from cudacheck's compatibility headers. <cuda_fp16.h> and the
// other type headers are not implicit under nvcc either, so they are not included here.
#ifndef CUDACHECK_IMPLICIT_H
#define CUDACHECK_IMPLICIT_H
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#endif
// nvcc's <cuda_runtime.h> also declares the device runtime's functions for device code
// (cudaGraphSetConditional, cudaGetParameterBuffer, ...); under NVRTC it leaves them out.
// It includes crt/host_defines.h, which warns unless included from the runtime's own headers
// (they define the macro below around it, as here).
#if __has_include(<cuda_device_runtime_api.h>)
#if !defined(__CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__)
#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#define CUDACHECK_UNDEF_INTERNAL_HEADERS
#endif
#include <cuda_device_runtime_api.h>
#if defined(CUDACHECK_UNDEF_INTERNAL_HEADERS)
#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#undef CUDACHECK_UNDEF_INTERNAL_HEADERS
#endif
#endif
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
// CCCL, which the C++ ones forward to, needs C++17; older standards go without them.
#if __cplusplus >= 201703L
#include <utility>
#include <type_traits>
#endif
#endif // CUDACHECK_IMPLICIT_H
