// cudacheck compatibility header: <limits.h> for NVRTC, which ships no C library headers.
// The macro bodies are token-for-token those of CCCL's <cuda/std/climits> under NVRTC, so that
// including both, in either order, is an identical (and therefore silent) redefinition.
#ifndef CUDACHECK_COMPAT_LIMITS_H
#define CUDACHECK_COMPAT_LIMITS_H

#define CHAR_BIT 8

#define SCHAR_MIN         (-128)
#define SCHAR_MAX         127
#define UCHAR_MAX         255
#ifndef __CHAR_UNSIGNED__
#define __CHAR_UNSIGNED__ ('\xff' > 0)
#endif
#if __CHAR_UNSIGNED__
#define CHAR_MIN 0
#define CHAR_MAX UCHAR_MAX
#else
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#endif
#define SHRT_MIN  (-SHRT_MAX - 1)
#define SHRT_MAX  0x7fff
#define USHRT_MAX 0xffff
#define INT_MIN   (-INT_MAX - 1)
#define INT_MAX   0x7fffffff
#define UINT_MAX  0xffffffff
#define LONG_MIN  (-LONG_MAX - 1)
#ifdef __LP64__
#define LONG_MAX  LLONG_MAX
#define ULONG_MAX ULLONG_MAX
#else
#define LONG_MAX  INT_MAX
#define ULONG_MAX UINT_MAX
#endif
#define LLONG_MIN  (-LLONG_MAX - 1)
#define LLONG_MAX  0x7fffffffffffffffLL
#define ULLONG_MAX 0xffffffffffffffffUL

#endif // CUDACHECK_COMPAT_LIMITS_H
