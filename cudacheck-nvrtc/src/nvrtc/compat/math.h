// cudacheck compatibility header: <math.h> for NVRTC, which ships no C library headers.
// The math functions themselves (sqrtf, sin, fabs, isnan, ...) are declared by NVRTC without any
// include, so this header only adds the macros a C library's <math.h> has: the POSIX M_*
// constants (double, as glibc writes them) and INFINITY/NAN/HUGE_VAL. Of CUDA's headers only
// <cuda/std/cmath> defines any of them (see below).
#ifndef CUDACHECK_COMPAT_MATH_H
#define CUDACHECK_COMPAT_MATH_H

// INFINITY and NAN: CCCL's <cuda/std/cmath> defines them too under NVRTC, unconditionally, and
// each CCCL release spells them its own way. This header comes first in every compile
// (cudacheck's implicit header includes it, as nvcc's implicit <cuda_runtime.h> includes the C
// library's), so any other body would draw warning #47-D ("incompatible redefinition") from a
// file that includes <cuda/std/cmath> later; an identical redefinition is silent. Including
// <cuda/std/cmath> here instead would settle it for every release, but it adds 14 device
// globals (CCCL's `__numeric_type<float>::value` and friends) and 568 bytes of constant bank to
// every module, so the spelling of the CCCL in use is copied:
// - CCCL 2.3 (CUDA 12.4, libc++'s tree) writes `__builtin_huge_val()`, a double: its header is
//   included (it emits no globals) and its definitions replaced by float ones, as glibc's are;
// - CCCL 2.8 and 3.0 (CUDA 12.9, 13.0) write `_CUDA_VSTD::numeric_limits<float>::...`;
// - CCCL 3.5 (CUDA 13.5), which has no `_CUDA_VSTD`, writes `::cuda::std::...`.
// The NVRTC matrix of the tests (tests/tests/nvrtc_matrix.rs) fails on a release that differs.
#if __cplusplus >= 201703L && __has_include(<cuda/std/detail/libcxx/include/__pragma_push>)
#include <cuda/std/cmath>
#undef INFINITY
#undef NAN
#elif __cplusplus >= 201703L && __has_include(<cuda/std/limits>)
#include <cuda/std/limits>
#ifndef INFINITY
#ifdef _CUDA_VSTD
#define INFINITY _CUDA_VSTD::numeric_limits<float>::infinity()
#define NAN      _CUDA_VSTD::numeric_limits<float>::quiet_NaN()
#else
#define INFINITY ::cuda::std::numeric_limits<float>::infinity()
#define NAN      ::cuda::std::numeric_limits<float>::quiet_NaN()
#endif
#endif
#endif

#ifndef M_E
#define M_E 2.7182818284590452354
#endif
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
#ifndef M_LOG10E
#define M_LOG10E 0.43429448190325182765
#endif
#ifndef M_LN2
#define M_LN2 0.69314718055994530942
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_PI_2
#define M_PI_2 1.57079632679489661923
#endif
#ifndef M_PI_4
#define M_PI_4 0.78539816339744830962
#endif
#ifndef M_1_PI
#define M_1_PI 0.31830988618379067154
#endif
#ifndef M_2_PI
#define M_2_PI 0.63661977236758134308
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif

// NVRTC has no __builtin_huge_valf/__builtin_nanf, but it has __builtin_bit_cast, which keeps
// these usable in constant expressions.
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000u))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ull))
#endif

#endif // CUDACHECK_COMPAT_MATH_H
