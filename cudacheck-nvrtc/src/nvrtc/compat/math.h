// cudacheck compatibility header: <math.h> for NVRTC, which ships no C library headers.
// The math functions themselves (sqrtf, sin, fabs, isnan, ...) are declared by NVRTC without any
// include, so this header only adds the macros a C library's <math.h> has: the POSIX M_*
// constants (double, as glibc writes them) and INFINITY/NAN/HUGE_VAL. Of CUDA's headers only
// <cuda/std/cmath> defines any of them (see below); each is guarded, so an earlier one wins.
#ifndef CUDACHECK_COMPAT_MATH_H
#define CUDACHECK_COMPAT_MATH_H

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

// INFINITY and NAN are spelled exactly as <cuda/std/cmath> spells them under NVRTC, where it
// defines them unconditionally: this header comes first in every compile (cudacheck's implicit
// header includes it, as nvcc's implicit <cuda_runtime.h> includes the C library's), so any
// other body would draw warning #47-D ("incompatible redefinition") from every file that also
// includes <cuda/std/cmath>. An identical redefinition is silent.
// Without CCCL on the include path (or below C++17, which CCCL needs), the bit patterns below do
// the same job.
#if __cplusplus >= 201703L && __has_include(<cuda/std/limits>)
#include <cuda/std/limits>
#ifndef INFINITY
#define INFINITY _CUDA_VSTD::numeric_limits<float>::infinity()
#endif
#ifndef NAN
#define NAN      _CUDA_VSTD::numeric_limits<float>::quiet_NaN()
#endif
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
