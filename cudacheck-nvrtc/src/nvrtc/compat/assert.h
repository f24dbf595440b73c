// cudacheck compatibility header: <assert.h> for NVRTC, which ships no C library headers.
// NVRTC predefines `assert` itself (a device-side trap that prints the failed expression), so
// this header only makes the include resolve, and honours NDEBUG the way the C standard asks:
// the macro is re-evaluated at every inclusion, hence no include guard.
#ifdef NDEBUG
#undef assert
#define assert(e) ((void)0)
#endif
