// ---- cudacheck bounds-checking prelude (injected by `cudacheck instrument`; do not edit) ----
// The `#line` directive after this block points diagnostics and __LINE__ back at the user's file.
#ifndef CUDACHECK_PRELUDE_CUH
#define CUDACHECK_PRELUDE_CUH

#define __CC_READ 1u
#define __CC_WRITE 2u
#define __CC_READ_WRITE 3u
#define __CC_ATOMIC 4u
#define __CC_ASSERT 5u
// Or'ed into a kind to say which memory the checked element lives in, so that a miss lands in a
// sink of the same address space. Keeping both sides of the choice in one space matters for
// speed: a shared-memory access whose miss could land in local memory would have to use generic
// addressing (LD instead of LDS), which costs more than the check itself.
// __CC_GLOBAL: global memory (pointer parameters, `__ldg`, atomics); the default.
// __CC_SHARED: `__shared__` arrays, static or `extern`.
// __CC_LOCAL: arrays local to the thread.
#define __CC_GLOBAL 0x100u
#define __CC_SHARED 0x200u
#define __CC_LOCAL 0x400u

// What the runtime knows of the launch at compile time. It compiles one instrumented build per
// block size (and dynamic shared size), defining __CC_BX/__CC_BY/__CC_BZ and __CC_DYN_SMEM, so
// that the compiler knows threadIdx's range and can drop every check it then proves (a tile
// indexed by threadIdx inside a block no larger than the tile): the checks that remain are the
// ones that can fail. Without the definitions (`cudacheck instrument`, other hosts) every check
// stays. Only threadIdx's range is assumed, not blockDim's value: with `blockDim.x == 128` known,
// ptxas scheduled n-body's unrolled loop with fewer loads in flight (1.67x against 1.12x on our
// H200, results/README.md), and the plain build, which does not know it, would no longer be the
// same program.
#if defined(__CC_BX) && defined(__CC_BY) && defined(__CC_BZ)
#define __CC_ASSUME_BLOCK()                                                                        \
    do {                                                                                           \
        __builtin_assume(threadIdx.x < (__CC_BX));                                                 \
        __builtin_assume(threadIdx.y < (__CC_BY));                                                 \
        __builtin_assume(threadIdx.z < (__CC_BZ));                                                 \
    } while (0)
#else
#define __CC_ASSUME_BLOCK() do { } while (0)
#endif
#ifdef __CC_DYN_SMEM
#define __CC_DYN_BYTES(passed) ((unsigned long long)(__CC_DYN_SMEM))
#else
#define __CC_DYN_BYTES(passed) (passed)
#endif

// Mirrors cudacheck_core::instrument::FaultRecord field for field (little-endian, no padding).
struct __cc_record {
    unsigned int faulted;
    unsigned int count;
    unsigned int site;
    unsigned int kind;
    long long index;
    unsigned long long len;
    unsigned int block[3];
    unsigned int thread[3];
    unsigned int assert_line;
    unsigned int dim;
    char msg[64];
};
static_assert(sizeof(__cc_record) == @CC_RECORD_BYTES@,
              "cudacheck: __cc_record no longer matches cudacheck_core::instrument::FaultRecord");

// Where an out-of-bounds write to a thread-local array lands: one per thread, declared at the
// top of each instrumented kernel (it costs nothing where no local array is checked).
struct alignas(16) __cc_slot_t {
    unsigned char bytes[128];
};

// Where out-of-bounds writes (and atomics) to global and shared memory land: the write is
// dropped there. Threads may race on a sink; nothing reads it as data: out-of-bounds reads do
// not go through the sinks (see __cc_rd), and the value an atomic or a compound assignment reads
// from a sink only feeds the dropped write.
__device__ unsigned long long __cc_sink[16];
__shared__ unsigned long long __cc_shared_sink[16];

__device__ __noinline__ void __cc_record_thread(__cc_record* rec)
{
    rec->block[0] = blockIdx.x;
    rec->block[1] = blockIdx.y;
    rec->block[2] = blockIdx.z;
    rec->thread[0] = threadIdx.x;
    rec->thread[1] = threadIdx.y;
    rec->thread[2] = threadIdx.z;
}

// Counts every fault; only the first (atomicCAS on `faulted`) fills in the details, so the
// fields all describe the same fault. Never traps: a trap would poison the CUDA context.
// A call, not inlined: inlining it (with the loads predicated on the check) was measured slower
// on our H200 (1.50x against 1.44x geometric mean over kernels/, results/README.md): the inlined
// atomics raised register use (nbody: 132 registers against 76) more than it saved.
__device__ __noinline__ void __cc_fault(__cc_record* rec, unsigned site, unsigned kind,
                                        long long index, unsigned long long len, unsigned dim)
{
    if (rec == 0) return;
    atomicAdd(&rec->count, 1u);
    if (atomicCAS(&rec->faulted, 0u, 1u) != 0u) return;
    rec->site = site;
    rec->kind = kind & 0xffu;
    rec->index = index;
    rec->len = len;
    rec->assert_line = 0u;
    rec->dim = dim;
    __cc_record_thread(rec);
    __threadfence();
}

__device__ __noinline__ void __cc_assert_fail(__cc_record* rec, unsigned site, const char* msg,
                                              unsigned line)
{
    if (rec == 0) return;
    atomicAdd(&rec->count, 1u);
    if (atomicCAS(&rec->faulted, 0u, 1u) != 0u) return;
    rec->site = site;
    rec->kind = __CC_ASSERT;
    rec->index = 0;
    rec->len = 0;
    rec->assert_line = line;
    rec->dim = 0u;
    unsigned i = 0;
    for (; i < 63u && msg != 0 && msg[i] != 0; ++i) rec->msg[i] = msg[i];
    rec->msg[i] = 0;
    __cc_record_thread(rec);
    __threadfence();
}

template <typename T>
__device__ __forceinline__ T& __cc_miss(__cc_slot_t& slot, unsigned kind)
{
    static_assert(sizeof(T) <= sizeof(__cc_slot_t),
                  "cudacheck: element types larger than 128 bytes cannot be bounds-checked");
    if ((kind & __CC_SHARED) != 0u) return *reinterpret_cast<T*>(__cc_shared_sink);
    if ((kind & __CC_LOCAL) != 0u) {
        // Zeroed on every miss: a read through the reference form gives 0.
        for (unsigned i = 0; i < sizeof(T); ++i) slot.bytes[i] = 0;
        return *reinterpret_cast<T*>(slot.bytes);
    }
    return *reinterpret_cast<T*>(__cc_sink);
}

// Out-of-bounds reads in value contexts give a zero of the element type, with no load at all.
template <typename T>
__device__ __forceinline__ T __cc_zero()
{
    T v;
    unsigned char* b = reinterpret_cast<unsigned char*>(&v);
    for (unsigned i = 0; i < sizeof(T); ++i) b[i] = 0;
    return v;
}

// Whether a hoisted index (see below) is in range: 0 <= i < len, and below 2^31 so that the loop,
// which computes the index in its own (possibly 32-bit) types, gets the same value.
__device__ __forceinline__ bool __cc_in(long long i, unsigned long long len)
{
    return i >= 0 && (unsigned long long)i < len && i <= 0x7fffffffLL;
}

// Makes `v` opaque to the optimizer at this point (its value unchanged; no instruction emitted).
// A versioned loop's two copies end by passing every variable they assign through it: otherwise
// the compiler may rewrite `phi(a + x, a + y)` after the copies into `a + phi(x, y)`, separating
// each add from its multiply, and fused multiply-adds in the plain build would become a multiply
// and an add (a different last bit) in the instrumented one.
template <typename T>
__device__ __forceinline__ void __cc_opaque(T& v)
{
    unsigned char* b = reinterpret_cast<unsigned char*>(&v);
    if (sizeof(T) % 4 == 0) {
#pragma unroll
        for (unsigned i = 0; i < sizeof(T); i += 4) {
            unsigned w;
            memcpy(&w, b + i, 4);
            asm volatile("" : "+r"(w));
            memcpy(b + i, &w, 4);
        }
    } else {
#pragma unroll
        for (unsigned i = 0; i < sizeof(T); ++i) {
            unsigned w = b[i];
            asm volatile("" : "+r"(w));
            b[i] = (unsigned char)w;
        }
    }
}

template <typename T, unsigned long long N>
__device__ __forceinline__ void __cc_opaque(T (&a)[N])
{
#pragma unroll
    for (unsigned long long i = 0; i < N; ++i) __cc_opaque(a[i]);
}

// `base[i]` when 0 <= i < len, else the fault is recorded and the thread gets the slot.
// `Proven` is true in the fast copy of a versioned loop, whose checks ran once before it (the
// instrumenter's loop versioning: every iteration's index was proven in range there).
template <bool Proven = false, typename T>
__device__ __forceinline__ T& __cc_at(T* base, __cc_record* rec, unsigned site, unsigned kind,
                                      __cc_slot_t& slot, long long i, unsigned long long len)
{
    if (!Proven && __builtin_expect(i < 0 || (unsigned long long)i >= len, 0)) {
        __cc_fault(rec, site, kind, i, len, 0u);
        return __cc_miss<T>(slot, kind);
    }
    return base[i];
}

// `ptr[i]` for a pointer `ptr = param + base`: the check is on `base + i` against the
// parameter's length, so an alias declared as `T* row = p + r * n` is checked like `p` itself.
template <bool Proven = false, typename T>
__device__ __forceinline__ T& __cc_at_off(T* ptr, __cc_record* rec, unsigned site, unsigned kind,
                                          __cc_slot_t& slot, long long base, long long i,
                                          unsigned long long len)
{
    const long long at = base + i;
    if (!Proven && __builtin_expect(at < 0 || (unsigned long long)at >= len, 0)) {
        __cc_fault(rec, site, kind, at, len, 0u);
        return __cc_miss<T>(slot, kind);
    }
    return ptr[i];
}

// A fixed-size array `a[i0][i1]...` checked per dimension: `ie` is (index, extent) pairs and
// `base` is `&a[0][0]...`; a miss records the first dimension out of range. A negative extent
// marks a dimension the instrumenter proved in range: it is not checked.
template <typename T, typename... I>
__device__ __forceinline__ T& __cc_at_md(T* base, __cc_record* rec, unsigned site, unsigned kind,
                                         __cc_slot_t& slot, I... ie)
{
    const long long v[] = {(long long)ie...};
    long long flat = 0;
    for (unsigned d = 0; d < sizeof...(I) / 2; ++d) {
        const long long i = v[2 * d];
        const long long e = v[2 * d + 1];
        if (e < 0) { // proven in range by the instrumenter (a loop counter below the extent)
            flat = flat * -e + i;
            continue;
        }
        if (__builtin_expect(i < 0 || i >= e, 0)) {
            __cc_fault(rec, site, kind, i, (unsigned long long)e, d);
            return __cc_miss<T>(slot, kind);
        }
        flat = flat * e + i;
    }
    return base[flat];
}

// Value forms of the three accessors, for reads whose result is only used as a value (most of
// them): a miss gives zero and no load is made, so the hit path is a plain predicated load of the
// element in its own address space.
template <bool Proven = false, typename T>
__device__ __forceinline__ T __cc_rd(const T* base, __cc_record* rec, unsigned site, unsigned kind,
                                     __cc_slot_t&, long long i, unsigned long long len)
{
    if (!Proven && __builtin_expect(i < 0 || (unsigned long long)i >= len, 0)) {
        __cc_fault(rec, site, kind, i, len, 0u);
        return __cc_zero<T>();
    }
    return base[i];
}

template <bool Proven = false, typename T>
__device__ __forceinline__ T __cc_rd_off(const T* ptr, __cc_record* rec, unsigned site,
                                         unsigned kind, __cc_slot_t&, long long base, long long i,
                                         unsigned long long len)
{
    const long long at = base + i;
    if (!Proven && __builtin_expect(at < 0 || (unsigned long long)at >= len, 0)) {
        __cc_fault(rec, site, kind, at, len, 0u);
        return __cc_zero<T>();
    }
    return ptr[i];
}

template <typename T, typename... I>
__device__ __forceinline__ T __cc_rd_md(const T* base, __cc_record* rec, unsigned site,
                                        unsigned kind, __cc_slot_t&, I... ie)
{
    const long long v[] = {(long long)ie...};
    long long flat = 0;
    for (unsigned d = 0; d < sizeof...(I) / 2; ++d) {
        const long long i = v[2 * d];
        const long long e = v[2 * d + 1];
        if (e < 0) { // proven in range by the instrumenter (a loop counter below the extent)
            flat = flat * -e + i;
            continue;
        }
        if (__builtin_expect(i < 0 || i >= e, 0)) {
            __cc_fault(rec, site, kind, i, (unsigned long long)e, d);
            return __cc_zero<T>();
        }
        flat = flat * e + i;
    }
    return base[flat];
}

// An assertion records the condition text, the line and the thread, then the thread goes on:
// it does not return or trap, so later faults of the same launch are still counted.
#define __cc_assert(cond, site, msg, line, rec) \
    ((cond) ? (void)0 : __cc_assert_fail((rec), (site), (msg), (line)))

// Usable inside instrumented kernels (the instrumenter rewrites it with a site id); elsewhere
// `__cc_rec` is not in scope.
#ifndef CUDACHECK_ASSERT
#define CUDACHECK_ASSERT(cond, msg) __cc_assert((cond), 0xFFFFFFFFu, (msg), __LINE__, __cc_rec)
#endif

#endif // CUDACHECK_PRELUDE_CUH
// ---- end of cudacheck prelude ----
