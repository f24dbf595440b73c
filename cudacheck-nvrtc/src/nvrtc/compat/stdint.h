// cudacheck compatibility header: <stdint.h> for NVRTC, which ships no C library headers.
// CCCL's <cuda/std/cstdint> defines the same types and macros under NVRTC (64-bit types are
// `long long` there too). It is included first, where there is one, and every macro below is
// defined only if it is still undefined: CCCL's own definitions always come first, so including
// CCCL's header before or after this one never redefines a macro, whatever CCCL's spelling (CCCL
// 3.5 writes `((::int_least8_t) (X))`, 2.3 `((int_least8_t)(X))`, both differ from 3.0's). The
// type aliases redeclare CCCL's with the same types, which is silent.
#ifndef CUDACHECK_COMPAT_STDINT_H
#define CUDACHECK_COMPAT_STDINT_H
#include <limits.h>
#if __cplusplus >= 201703L && __has_include(<cuda/std/cstdint>)
#include <cuda/std/cstdint>
#endif

using int8_t   = signed char;
using int16_t  = signed short;
using int32_t  = signed int;
using int64_t  = signed long long;
using uint8_t  = unsigned char;
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using uint64_t = unsigned long long;

using int_fast8_t   = int8_t;
using int_fast16_t  = int16_t;
using int_fast32_t  = int32_t;
using int_fast64_t  = int64_t;
using uint_fast8_t  = uint8_t;
using uint_fast16_t = uint16_t;
using uint_fast32_t = uint32_t;
using uint_fast64_t = uint64_t;

using int_least8_t   = int8_t;
using int_least16_t  = int16_t;
using int_least32_t  = int32_t;
using int_least64_t  = int64_t;
using uint_least8_t  = uint8_t;
using uint_least16_t = uint16_t;
using uint_least32_t = uint32_t;
using uint_least64_t = uint64_t;

using intptr_t  = int64_t;
using uintptr_t = uint64_t;

using intmax_t  = int64_t;
using uintmax_t = uint64_t;

#ifndef INT8_MIN
#define INT8_MIN   SCHAR_MIN
#endif
#ifndef INT16_MIN
#define INT16_MIN  SHRT_MIN
#endif
#ifndef INT32_MIN
#define INT32_MIN  INT_MIN
#endif
#ifndef INT64_MIN
#define INT64_MIN  LLONG_MIN
#endif
#ifndef INT8_MAX
#define INT8_MAX   SCHAR_MAX
#endif
#ifndef INT16_MAX
#define INT16_MAX  SHRT_MAX
#endif
#ifndef INT32_MAX
#define INT32_MAX  INT_MAX
#endif
#ifndef INT64_MAX
#define INT64_MAX  LLONG_MAX
#endif
#ifndef UINT8_MAX
#define UINT8_MAX  UCHAR_MAX
#endif
#ifndef UINT16_MAX
#define UINT16_MAX USHRT_MAX
#endif
#ifndef UINT32_MAX
#define UINT32_MAX UINT_MAX
#endif
#ifndef UINT64_MAX
#define UINT64_MAX ULLONG_MAX
#endif

#ifndef INT_FAST8_MIN
#define INT_FAST8_MIN   INT8_MIN
#endif
#ifndef INT_FAST16_MIN
#define INT_FAST16_MIN  INT16_MIN
#endif
#ifndef INT_FAST32_MIN
#define INT_FAST32_MIN  INT32_MIN
#endif
#ifndef INT_FAST64_MIN
#define INT_FAST64_MIN  INT64_MIN
#endif
#ifndef INT_FAST8_MAX
#define INT_FAST8_MAX   INT8_MAX
#endif
#ifndef INT_FAST16_MAX
#define INT_FAST16_MAX  INT16_MAX
#endif
#ifndef INT_FAST32_MAX
#define INT_FAST32_MAX  INT32_MAX
#endif
#ifndef INT_FAST64_MAX
#define INT_FAST64_MAX  INT64_MAX
#endif
#ifndef UINT_FAST8_MAX
#define UINT_FAST8_MAX  UINT8_MAX
#endif
#ifndef UINT_FAST16_MAX
#define UINT_FAST16_MAX UINT16_MAX
#endif
#ifndef UINT_FAST32_MAX
#define UINT_FAST32_MAX UINT32_MAX
#endif
#ifndef UINT_FAST64_MAX
#define UINT_FAST64_MAX UINT64_MAX
#endif

#ifndef INT_LEAST8_MIN
#define INT_LEAST8_MIN   INT8_MIN
#endif
#ifndef INT_LEAST16_MIN
#define INT_LEAST16_MIN  INT16_MIN
#endif
#ifndef INT_LEAST32_MIN
#define INT_LEAST32_MIN  INT32_MIN
#endif
#ifndef INT_LEAST64_MIN
#define INT_LEAST64_MIN  INT64_MIN
#endif
#ifndef INT_LEAST8_MAX
#define INT_LEAST8_MAX   INT8_MAX
#endif
#ifndef INT_LEAST16_MAX
#define INT_LEAST16_MAX  INT16_MAX
#endif
#ifndef INT_LEAST32_MAX
#define INT_LEAST32_MAX  INT32_MAX
#endif
#ifndef INT_LEAST64_MAX
#define INT_LEAST64_MAX  INT64_MAX
#endif
#ifndef UINT_LEAST8_MAX
#define UINT_LEAST8_MAX  UINT8_MAX
#endif
#ifndef UINT_LEAST16_MAX
#define UINT_LEAST16_MAX UINT16_MAX
#endif
#ifndef UINT_LEAST32_MAX
#define UINT_LEAST32_MAX UINT32_MAX
#endif
#ifndef UINT_LEAST64_MAX
#define UINT_LEAST64_MAX UINT64_MAX
#endif

#ifndef INTPTR_MIN
#define INTPTR_MIN  INT64_MIN
#endif
#ifndef INTPTR_MAX
#define INTPTR_MAX  INT64_MAX
#endif
#ifndef UINTPTR_MAX
#define UINTPTR_MAX UINT64_MAX
#endif

#ifndef INTMAX_MIN
#define INTMAX_MIN  INT64_MIN
#endif
#ifndef INTMAX_MAX
#define INTMAX_MAX  INT64_MAX
#endif
#ifndef UINTMAX_MAX
#define UINTMAX_MAX UINT64_MAX
#endif

#ifndef PTRDIFF_MIN
#define PTRDIFF_MIN INT64_MIN
#endif
#ifndef PTRDIFF_MAX
#define PTRDIFF_MAX INT64_MAX
#endif

#ifndef SIZE_MAX
#define SIZE_MAX UINT64_MAX
#endif

#ifndef INT8_C
#define INT8_C(X)   ((::int_least8_t)(X))
#endif
#ifndef INT16_C
#define INT16_C(X)  ((::int_least16_t)(X))
#endif
#ifndef INT32_C
#define INT32_C(X)  ((::int_least32_t)(X))
#endif
#ifndef INT64_C
#define INT64_C(X)  ((::int_least64_t)(X))
#endif
#ifndef UINT8_C
#define UINT8_C(X)  ((::uint_least8_t)(X))
#endif
#ifndef UINT16_C
#define UINT16_C(X) ((::uint_least16_t)(X))
#endif
#ifndef UINT32_C
#define UINT32_C(X) ((::uint_least32_t)(X))
#endif
#ifndef UINT64_C
#define UINT64_C(X) ((::uint_least64_t)(X))
#endif

#ifndef INTMAX_C
#define INTMAX_C(X)  ((::intmax_t)(X))
#endif
#ifndef UINTMAX_C
#define UINTMAX_C(X) ((::uintmax_t)(X))
#endif

#endif // CUDACHECK_COMPAT_STDINT_H
