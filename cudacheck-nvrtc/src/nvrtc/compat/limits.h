// cudacheck compatibility header: <limits.h> for NVRTC, which ships no C library headers.
// CCCL's <cuda/std/climits> defines these under NVRTC too; it is included first, where there is
// one, and each macro below is defined only if still undefined, so CCCL's definitions always come
// first and including its header before or after this one redefines nothing (see stdint.h).
#ifndef CUDACHECK_COMPAT_LIMITS_H
#define CUDACHECK_COMPAT_LIMITS_H
#if __cplusplus >= 201703L && __has_include(<cuda/std/climits>)
#include <cuda/std/climits>
#endif

#ifndef CHAR_BIT
#define CHAR_BIT 8
#endif

#ifndef SCHAR_MIN
#define SCHAR_MIN         (-128)
#endif
#ifndef SCHAR_MAX
#define SCHAR_MAX         127
#endif
#ifndef UCHAR_MAX
#define UCHAR_MAX         255
#endif
#ifndef __CHAR_UNSIGNED__
#define __CHAR_UNSIGNED__ ('\xff' > 0)
#endif
#if __CHAR_UNSIGNED__
#ifndef CHAR_MIN
#define CHAR_MIN 0
#endif
#ifndef CHAR_MAX
#define CHAR_MAX UCHAR_MAX
#endif
#else
#ifndef CHAR_MIN
#define CHAR_MIN SCHAR_MIN
#endif
#ifndef CHAR_MAX
#define CHAR_MAX SCHAR_MAX
#endif
#endif
#ifndef SHRT_MIN
#define SHRT_MIN  (-SHRT_MAX - 1)
#endif
#ifndef SHRT_MAX
#define SHRT_MAX  0x7fff
#endif
#ifndef USHRT_MAX
#define USHRT_MAX 0xffff
#endif
#ifndef INT_MIN
#define INT_MIN   (-INT_MAX - 1)
#endif
#ifndef INT_MAX
#define INT_MAX   0x7fffffff
#endif
#ifndef UINT_MAX
#define UINT_MAX  0xffffffff
#endif
#ifndef LONG_MIN
#define LONG_MIN  (-LONG_MAX - 1)
#endif
#ifdef __LP64__
#ifndef LONG_MAX
#define LONG_MAX  LLONG_MAX
#endif
#ifndef ULONG_MAX
#define ULONG_MAX ULLONG_MAX
#endif
#else
#ifndef LONG_MAX
#define LONG_MAX  INT_MAX
#endif
#ifndef ULONG_MAX
#define ULONG_MAX UINT_MAX
#endif
#endif
#ifndef LLONG_MIN
#define LLONG_MIN  (-LLONG_MAX - 1)
#endif
#ifndef LLONG_MAX
#define LLONG_MAX  0x7fffffffffffffffLL
#endif
#ifndef ULLONG_MAX
#define ULLONG_MAX 0xffffffffffffffffUL
#endif

#endif // CUDACHECK_COMPAT_LIMITS_H
