/*
 * A fake CUDA driver (`libcuda.so.1`) for testing the interposer of `cudacheck run` where no
 * GPU is: tests/fake_driver.rs compiles it with the system C compiler and puts it first on
 * LD_LIBRARY_PATH, under a program that uses the driver API and the preloaded interposer.
 *
 * What it models, and why:
 *   - one device, an H100 (sm_90) by its attributes, so that launch validation has real limits;
 *   - "device" memory is host memory from one arena: copies and memsets are memcpy/memset, and
 *     a pointer outside the arena is refused, as the real driver refuses an address it did not
 *     hand out (that catches the interposer passing a host address as a device one);
 *   - modules of PTX text only: a function is any `.entry` of the text, with its parameters
 *     read from the entry's declaration (the checked build's hidden ones included);
 *   - a launch runs nothing, except `add` (the test program's kernel), whose effect it computes
 *     so the program can check that its arguments reached the kernel; each launch is one line
 *     of the log named by FAKE_CUDA_LOG, with every parameter's value by its PTX name;
 *   - with FAKE_CUDA_FAULT=1, a launch of a bounds-checked build (its entry declares
 *     `__cc_rec`) writes into the fault record what the instrumented kernel writes when its
 *     first device check fails, for the thread that accesses the first element past the end of
 *     the allocation that check is against (read from the build's PTX: `write_fault`);
 *   - the primary context with a retain count: released to zero (or reset) it is destroyed,
 *     with the modules loaded and the memory allocated in it, as on the real driver; a call
 *     that needs it fails (CUDA_ERROR_CONTEXT_IS_DESTROYED), and a handle of the old context
 *     is refused (CUDA_ERROR_INVALID_HANDLE), so an interposer that uses what the program
 *     let go is seen to.
 *
 * Our own code (no NVIDIA header is used); the values are those of cuda.h.
 */

#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUlibrary;
typedef void *CUkernel;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUmemoryPool;
typedef uint64_t CUmemGenericAllocationHandle;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_CONTEXT_IS_DESTROYED 709
#define CUDA_ERROR_NOT_SUPPORTED 801

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;

/* Device 0's primary context. Each time it is made again (retained from zero, or after a
 * reset) it is a new context: what was loaded or allocated in the one before is gone, as the
 * real driver destroys a context's modules and memory with it. `generation` tells them apart. */
struct ctx {
    int retained;
    int active;
    unsigned generation;
};
static struct ctx primary;

/* ---- device memory: one arena, bump-allocated ------------------------------------------ */

#define ARENA_BYTES (64u << 20)
#define MAX_ALLOCS 4096

static unsigned char *arena;
static size_t arena_used;
static struct {
    uint64_t base, bytes;
    int live;
    unsigned generation; /* of the context it was made in */
} allocs[MAX_ALLOCS];
static int nallocs;

/* The first byte of a new allocation, 256-aligned as cudaMalloc's are; 0 when out of room. */
static uint64_t arena_take(size_t bytes) {
    uint64_t p = 0;
    pthread_mutex_lock(&lock);
    if (!arena)
        arena = aligned_alloc(4096, ARENA_BYTES);
    size_t at = (arena_used + 255) & ~(size_t)255;
    if (arena && bytes <= ARENA_BYTES - at && nallocs < MAX_ALLOCS) {
        arena_used = at + bytes;
        p = (uint64_t)(uintptr_t)(arena + at);
        allocs[nallocs].base = p;
        allocs[nallocs].bytes = bytes;
        allocs[nallocs].live = 1;
        allocs[nallocs].generation = primary.generation;
        nallocs++;
    }
    pthread_mutex_unlock(&lock);
    return p;
}

/* The live allocation holding [p, p + n), or -1: freed memory, and memory of a context that
 * is gone, is no allocation. */
static int alloc_holding(uint64_t p, size_t n) {
    int found = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nallocs; i++)
        if (allocs[i].live && primary.active && allocs[i].generation == primary.generation &&
            p >= allocs[i].base && p - allocs[i].base <= allocs[i].bytes &&
            n <= allocs[i].bytes - (p - allocs[i].base)) {
            found = i;
            break;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

static int device_range_ok(uint64_t p, size_t n) { return n == 0 || alloc_holding(p, n) >= 0; }

/* ---- contexts: device 0's primary context, a per-thread stack ----------------------------- */


#define STACK_DEPTH 32
static __thread struct ctx *stack[STACK_DEPTH];
static __thread int depth;

static struct ctx *current(void) { return depth > 0 ? stack[depth - 1] : NULL; }

/* What a call that works in the current context answers when there is none usable. */
static CUresult need_ctx(void) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct ctx *c = current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!c->active)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    initialized = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    *n = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "NVIDIA H100 80GB HBM3 (fake driver)");
    return CUDA_SUCCESS;
}

/* An H100 SXM (sm_90), as its driver reports it. */
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case 1: *v = 1024; break;           /* MAX_THREADS_PER_BLOCK */
    case 2: *v = 1024; break;           /* MAX_BLOCK_DIM_X */
    case 3: *v = 1024; break;           /* MAX_BLOCK_DIM_Y */
    case 4: *v = 64; break;             /* MAX_BLOCK_DIM_Z */
    case 5: *v = 2147483647; break;     /* MAX_GRID_DIM_X */
    case 6: *v = 65535; break;          /* MAX_GRID_DIM_Y */
    case 7: *v = 65535; break;          /* MAX_GRID_DIM_Z */
    case 8: *v = 48 * 1024; break;      /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 10: *v = 32; break;            /* WARP_SIZE */
    case 12: *v = 65536; break;         /* MAX_REGISTERS_PER_BLOCK */
    case 16: *v = 132; break;           /* MULTIPROCESSOR_COUNT */
    case 39: *v = 2048; break;          /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 75: *v = 9; break;             /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = 0; break;             /* COMPUTE_CAPABILITY_MINOR */
    case 81: *v = 228 * 1024; break;    /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    case 82: *v = 65536; break;         /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    case 97: *v = 227 * 1024; break;    /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 106: *v = 32; break;           /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    case 111: *v = 1024; break;         /* RESERVED_SHARED_MEMORY_PER_BLOCK */
    case 120: *v = 1; break;            /* CLUSTER_LAUNCH */
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *flags = 0;
    *active = primary.active;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    primary.retained++;
    if (!primary.active) {
        primary.active = 1;
        primary.generation++;
    }
    pthread_mutex_unlock(&lock);
    *ctx = &primary;
    return CUDA_SUCCESS;
}

/* Released to zero, the primary context is destroyed (its handle stays, unusable, until the
 * next retain makes it again). */
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (primary.retained == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (--primary.retained == 0)
        primary.active = 0;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    primary.active = 0;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx && ctx != (CUcontext)&primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx) {
        if (depth > 0)
            depth--;
    } else if (depth == 0) {
        stack[depth++] = ctx;
    } else {
        stack[depth - 1] = ctx;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    *ctx = current();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx != (CUcontext)&primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == STACK_DEPTH)
        return CUDA_ERROR_INVALID_VALUE;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (ctx)
        *ctx = stack[depth];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
    CUresult r = need_ctx();
    if (r == CUDA_SUCCESS)
        *dev = 0;
    return r;
}

EXPORT CUresult cuCtxSynchronize(void) { return need_ctx(); }

/* Only the primary context exists here: destroying it is what releasing it to zero does. */
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    if (ctx != (CUcontext)&primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    primary.active = 0;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ---- modules, libraries, functions -------------------------------------------------------- */

#define MAX_PARAMS 128
#define MAX_FUNCS 32

struct func {
    char name[256];
    int nparams;
    int sizes[MAX_PARAMS];
    char pnames[MAX_PARAMS][64];
    int max_dynamic_shared;
    struct module *module;
    size_t entry_at; /* where its `.entry` is in the module's text */
};

struct module {
    char *ptx;
    int loaded;
    /* The context generation it was loaded in; 0 for a library, which no context owns. */
    unsigned generation;
    struct func funcs[MAX_FUNCS];
    int nfuncs;
};

/* Bytes of a PTX parameter type (`.u64`, `.b8` and so on). */
static int type_bytes(const char *t, size_t n) {
    if (n < 3 || t[0] != '.')
        return 0;
    char c = t[1];
    if (c != 'u' && c != 's' && c != 'b' && c != 'f')
        return 0;
    int bits = atoi(t + 2);
    return bits >= 8 ? bits / 8 : 0;
}

/* Reads the parameter list starting at `p` (just after the entry's `(`) into `f`: each
 * `.param [.ptr ...] [.align N] .TYPE name[[N]]`, separated by commas, up to `)`. */
static int read_params(const char *p, struct func *f) {
    f->nparams = 0;
    while (*p && *p != ')') {
        const char *end = p;
        while (*end && *end != ',' && *end != ')')
            end++;
        const char *at = strstr(p, ".param");
        if (at && at < end) {
            if (f->nparams == MAX_PARAMS)
                return -1;
            int k = f->nparams++;
            int bytes = 0;
            const char *q = at + 6;
            char name[64] = "";
            while (q < end) {
                while (q < end && isspace((unsigned char)*q))
                    q++;
                const char *tok = q;
                while (q < end && !isspace((unsigned char)*q))
                    q++;
                size_t n = (size_t)(q - tok);
                if (n == 0)
                    break;
                if (tok[0] == '.') {
                    int b = type_bytes(tok, n);
                    if (b)
                        bytes = b;
                    continue;
                }
                if (isdigit((unsigned char)tok[0]))
                    continue; /* `.align N`'s number */
                size_t len = n < sizeof name - 1 ? n : sizeof name - 1;
                memcpy(name, tok, len);
                name[len] = 0;
                char *bracket = strchr(name, '[');
                if (bracket) {
                    /* `.b8 name[24]`: an array of bytes, a struct passed by value. */
                    bytes *= atoi(bracket + 1);
                    *bracket = 0;
                }
            }
            f->sizes[k] = bytes;
            snprintf(f->pnames[k], sizeof f->pnames[k], "%s", name);
        }
        p = *end == ',' ? end + 1 : end;
    }
    return *p == ')' ? 0 : -1;
}

/* Finds `.entry NAME(` in the module's text and reads its parameters. */
static int find_entry(struct module *m, const char *name, struct func *f) {
    size_t n = strlen(name);
    for (const char *p = strstr(m->ptx, ".entry"); p; p = strstr(p + 1, ".entry")) {
        const char *q = p + 6;
        while (isspace((unsigned char)*q))
            q++;
        if (strncmp(q, name, n) != 0)
            continue;
        q += n;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != '(')
            continue;
        snprintf(f->name, sizeof f->name, "%s", name);
        f->module = m;
        f->entry_at = (size_t)(p - m->ptx);
        f->max_dynamic_shared = 48 * 1024;
        return read_params(q + 1, f);
    }
    return -1;
}

/* With FAKE_CUDA_PTX_DIR set, each module's text is kept there (module-<n>.ptx), for reading
 * what the interposer loaded when a test fails. */
static void dump(const char *ptx) {
    static int count;
    const char *dir = getenv("FAKE_CUDA_PTX_DIR");
    if (!dir || !*dir)
        return;
    char path[4096];
    pthread_mutex_lock(&lock);
    snprintf(path, sizeof path, "%s/module-%d.ptx", dir, count++);
    pthread_mutex_unlock(&lock);
    FILE *out = fopen(path, "w");
    if (out) {
        fputs(ptx, out);
        fclose(out);
    }
}

/* A module of PTX text. Machine code (an ELF CUBIN, a fatbin) is refused: this driver has
 * no GPU to run it on. */
static CUresult load_text(CUmodule *module, const char *image, size_t len, unsigned generation) {
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    /* ELF; a fatbin (0xBA55ED50); a fatbin wrapper (0x466243B1). */
    if (len >= 4 &&
        (memcmp(image, "\x7f" "ELF", 4) == 0 || memcmp(image, "\x50\xed\x55\xba", 4) == 0 ||
         memcmp(image, "\xb1\x43\x62\x46", 4) == 0))
        return CUDA_ERROR_INVALID_IMAGE;
    struct module *m = calloc(1, sizeof *m);
    m->ptx = strndup(image, len);
    if (!strstr(m->ptx, ".version") || !strstr(m->ptx, ".target")) {
        free(m->ptx);
        free(m);
        return CUDA_ERROR_INVALID_PTX;
    }
    m->loaded = 1;
    m->generation = generation;
    *module = m;
    dump(m->ptx);
    return CUDA_SUCCESS;
}

static CUresult load_file(CUmodule *module, const char *fname, unsigned generation) {
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(fname, "rb");
    if (!f)
        return CUDA_ERROR_NOT_FOUND;
    char *buf = NULL;
    size_t cap = 0, len = 0, got;
    do {
        if (len + 4096 > cap) {
            cap = (cap + 4096) * 2;
            buf = realloc(buf, cap);
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    CUresult r = load_text(module, buf, len, generation);
    free(buf);
    return r;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    CUresult r = need_ctx();
    return r ? r : load_text(module, image, image ? strlen(image) : 0, primary.generation);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                   int *options, void **values) {
    (void)n, (void)options, (void)values;
    return cuModuleLoadData(module, image);
}

EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname) {
    CUresult r = need_ctx();
    return r ? r : load_file(module, fname, primary.generation);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatbin) {
    (void)module, (void)fatbin;
    return CUDA_ERROR_INVALID_IMAGE;
}

/* Whether a module handle is usable: loaded, not unloaded, and its context (if it has one)
 * not destroyed since. */
static int alive(const struct module *m) {
    return m && m->loaded &&
           (m->generation == 0 || (primary.active && m->generation == primary.generation));
}

/* Unloaded modules are kept (not freed): a stale handle is then an error, not a crash. */
EXPORT CUresult cuModuleUnload(CUmodule module) {
    struct module *m = module;
    if (!alive(m))
        return CUDA_ERROR_INVALID_HANDLE;
    m->loaded = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name) {
    struct module *m = module;
    if (!f || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!alive(m))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_ERROR_NOT_FOUND;
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0) {
            *f = &m->funcs[i];
            r = CUDA_SUCCESS;
        }
    if (r != CUDA_SUCCESS && m->nfuncs < MAX_FUNCS &&
        find_entry(m, name, &m->funcs[m->nfuncs]) == 0) {
        *f = &m->funcs[m->nfuncs++];
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Module-scope variables are not modelled: the test's kernel has none. */
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule module,
                                     const char *name) {
    (void)dptr, (void)bytes, (void)module, (void)name;
    return CUDA_ERROR_NOT_FOUND;
}

/* A library is a module loaded without a context; its kernels are its functions. */
EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, int *jo, void **jv,
                                  unsigned int jn, int *lo, void **lv, unsigned int ln) {
    (void)jo, (void)jv, (void)jn, (void)lo, (void)lv, (void)ln;
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    return load_text(library, code, code ? strlen(code) : 0, 0);
}

EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fname, int *jo,
                                      void **jv, unsigned int jn, int *lo, void **lv,
                                      unsigned int ln) {
    (void)jo, (void)jv, (void)jn, (void)lo, (void)lv, (void)ln;
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    return load_file(library, fname, 0);
}

EXPORT CUresult cuLibraryUnload(CUlibrary library) { return cuModuleUnload(library); }

EXPORT CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name) {
    return cuModuleGetFunction(kernel, library, name);
}

EXPORT CUresult cuLibraryGetModule(CUmodule *module, CUlibrary library) {
    struct module *m = library;
    if (!alive(m))
        return CUDA_ERROR_INVALID_HANDLE;
    *module = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                   const char *name) {
    return cuModuleGetGlobal_v2(dptr, bytes, library, name);
}

EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel kernel) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!kernel)
        return CUDA_ERROR_INVALID_HANDLE;
    *f = kernel;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
    if (!f || !name)
        return CUDA_ERROR_INVALID_VALUE;
    *name = ((struct func *)f)->name;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel k) { return cuFuncGetName(name, k); }

/* Small numbers, as a simple kernel compiled for sm_90 has. */
EXPORT CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) {
    struct func *fn = f;
    if (!fn || !v)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case 0: *v = 1024; break;                   /* MAX_THREADS_PER_BLOCK */
    case 1: *v = 0; break;                      /* SHARED_SIZE_BYTES */
    case 2: *v = 0; break;                      /* CONST_SIZE_BYTES */
    case 3: *v = 0; break;                      /* LOCAL_SIZE_BYTES */
    case 4: *v = 16; break;                     /* NUM_REGS */
    case 5: *v = 90; break;                     /* PTX_VERSION */
    case 6: *v = 90; break;                     /* BINARY_VERSION */
    case 8: *v = fn->max_dynamic_shared; break; /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    case 9: *v = -1; break;                     /* PREFERRED_SHARED_MEMORY_CARVEOUT */
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attr, int v) {
    struct func *fn = f;
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (attr == 8) {
        if (v < 0 || v > 227 * 1024)
            return CUDA_ERROR_INVALID_VALUE;
        fn->max_dynamic_shared = v;
    }
    return CUDA_SUCCESS;
}

/* ---- streams and events: everything is complete at once ----------------------------------- */

EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
    (void)flags;
    CUresult r = need_ctx();
    if (r)
        return r;
    *stream = malloc(16);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
    free(stream);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream) {
    (void)stream;
    return need_ctx();
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) { return cuStreamSynchronize(stream); }

EXPORT CUresult cuStreamIsCapturing(CUstream stream, int *status) {
    (void)stream;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    *status = 0; /* CU_STREAM_CAPTURE_STATUS_NONE */
    return CUDA_SUCCESS;
}

/* Stream capture: accepted and ended, with no graph made (the programs here never capture). */
EXPORT CUresult cuStreamBeginCapture(CUstream stream, int mode) {
    (void)stream;
    (void)mode;
    return need_ctx();
}
EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s, int m) { return cuStreamBeginCapture(s, m); }
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int m) { return cuStreamBeginCapture(s, m); }
EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int m) {
    return cuStreamBeginCapture(s, m);
}
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, void *graph, const void *deps,
                                            const void *edges, size_t n, int mode) {
    (void)graph;
    (void)deps;
    (void)edges;
    (void)n;
    return cuStreamBeginCapture(s, mode);
}
EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, void *graph, const void *deps,
                                                 const void *edges, size_t n, int mode) {
    return cuStreamBeginCaptureToGraph(s, graph, deps, edges, n, mode);
}
EXPORT CUresult cuStreamEndCapture(CUstream stream, void **graph) {
    (void)stream;
    if (graph)
        *graph = NULL;
    return need_ctx();
}
EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, void **g) { return cuStreamEndCapture(s, g); }

EXPORT CUresult cuStreamGetCtx(CUstream stream, CUcontext *ctx) {
    (void)stream;
    CUresult r = need_ctx();
    if (r == CUDA_SUCCESS)
        *ctx = current();
    return r;
}

EXPORT CUresult cuEventCreate(CUevent *event, unsigned int flags) {
    (void)flags;
    CUresult r = need_ctx();
    if (r)
        return r;
    *event = malloc(16);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
    (void)stream;
    return event ? need_ctx() : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
    return cuEventRecord(event, stream);
}

EXPORT CUresult cuEventQuery(CUevent event) {
    return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventSynchronize(CUevent event) {
    return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventDestroy_v2(CUevent event) {
    free(event);
    return CUDA_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------------- */

static CUresult alloc_device(CUdeviceptr *dptr, size_t bytes) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr = arena_take(bytes);
    return *dptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) { return alloc_device(dptr, bytes); }

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                   size_t height, unsigned int elem) {
    if (!pitch || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + 511) & ~(size_t)511;
    return alloc_device(dptr, *pitch * height);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
    (void)flags;
    return alloc_device(dptr, bytes);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream) {
    (void)stream;
    return alloc_device(dptr, bytes);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream stream) {
    return cuMemAllocAsync(dptr, bytes, stream);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                        CUstream stream) {
    (void)pool, (void)stream;
    return alloc_device(dptr, bytes);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                             CUstream stream) {
    return cuMemAllocFromPoolAsync(dptr, bytes, pool, stream);
}

static CUresult free_device(CUdeviceptr dptr) {
    if (dptr == 0)
        return CUDA_SUCCESS;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nallocs; i++)
        if (allocs[i].live && allocs[i].base == dptr) {
            allocs[i].live = 0;
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { return free_device(dptr); }

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
    (void)stream;
    return free_device(dptr);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
    return cuMemFreeAsync(dptr, stream);
}

/* Pinned host memory is plain host memory; its device address is its host address (unified
 * addressing). */
EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
    (void)flags;
    if (!pp || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pp = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
    return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytes) { return cuMemHostAlloc(pp, bytes, 0); }

EXPORT CUresult cuMemFreeHost(void *p) {
    free(p);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags) {
    (void)flags;
    return p && bytes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemHostUnregister(void *p) { return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned int flags) {
    if (!dptr || !p || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *bytes, CUdeviceptr dptr) {
    int i = alloc_holding(dptr, 0);
    if (i < 0)
        return CUDA_ERROR_NOT_FOUND;
    if (base)
        *base = allocs[i].base;
    if (bytes)
        *bytes = allocs[i].bytes;
    return CUDA_SUCCESS;
}

/* Virtual memory management is not modelled. */
EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t bytes, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags) {
    (void)ptr, (void)bytes, (void)offset, (void)handle, (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t bytes) {
    (void)ptr, (void)bytes;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t bytes, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags) {
    (void)ptr, (void)bytes, (void)alignment, (void)addr, (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t bytes) {
    (void)ptr, (void)bytes;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!device_range_ok(dst, n) || (n && !src))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!device_range_ok(src, n) || (n && !dst))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
    (void)stream;
    return cuMemcpyDtoH_v2(dst, src, n);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
    (void)stream;
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!device_range_ok(dst, n) || !device_range_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                          CUstream stream) {
    return cuMemcpyDtoDAsync_v2(dst, src, n, stream);
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dptr, unsigned char v, size_t n) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!device_range_ok(dptr, n))
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dptr, v, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dptr, unsigned char v, size_t n, CUstream stream) {
    (void)stream;
    return cuMemsetD8_v2(dptr, v, n);
}


/* Copies and memsets the interposer marks for `--init`: plain host memory operations here. */
typedef struct {
    size_t srcXInBytes, srcY;
    unsigned srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    unsigned dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} FAKE_MEMCPY2D;

typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    unsigned srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    unsigned dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} FAKE_MEMCPY3D;

static char *fake_addr(unsigned type, const void *host, CUdeviceptr dev) {
    return type == 1 ? (char *)host : (char *)(uintptr_t)dev;
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    CUresult r = need_ctx();
    if (r)
        return r;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return cuMemcpy(d, s, n); }
EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    (void)st;
    return cuMemcpy(d, s, n);
}
EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    return cuMemcpyAsync(d, s, n, st);
}
EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *s, size_t n) {
    return cuMemcpyHtoD_v2(d, s, n);
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) {
    (void)st;
    return cuMemcpyHtoD_v2(d, s, n);
}
EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *s, size_t n, CUstream st) {
    return cuMemcpyHtoDAsync_v2(d, s, n, st);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
    return cuMemcpyDtoDAsync_v2(d, s, n, NULL);
}
EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
    return cuMemcpyDtoD_v2(d, s, n);
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {
    (void)dc, (void)sc;
    return cuMemcpy(d, s, n);
}
EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                  size_t n) {
    return cuMemcpyPeer(d, dc, s, sc, n);
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                  size_t n, CUstream st) {
    (void)st;
    return cuMemcpyPeer(d, dc, s, sc, n);
}
EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                       size_t n, CUstream st) {
    return cuMemcpyPeerAsync(d, dc, s, sc, n, st);
}
EXPORT CUresult cuMemcpy2D_v2(const FAKE_MEMCPY2D *p) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t y = 0; y < p->Height; y++)
        memmove(fake_addr(p->dstMemoryType, p->dstHost, p->dstDevice) +
                    (p->dstY + y) * p->dstPitch + p->dstXInBytes,
                fake_addr(p->srcMemoryType, p->srcHost, p->srcDevice) +
                    (p->srcY + y) * p->srcPitch + p->srcXInBytes,
                p->WidthInBytes);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy2D_v2_ptds(const FAKE_MEMCPY2D *p) { return cuMemcpy2D_v2(p); }
EXPORT CUresult cuMemcpy2DUnaligned_v2(const FAKE_MEMCPY2D *p) { return cuMemcpy2D_v2(p); }
EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const FAKE_MEMCPY2D *p) { return cuMemcpy2D_v2(p); }
EXPORT CUresult cuMemcpy2DAsync_v2(const FAKE_MEMCPY2D *p, CUstream st) {
    (void)st;
    return cuMemcpy2D_v2(p);
}
EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const FAKE_MEMCPY2D *p, CUstream st) {
    return cuMemcpy2DAsync_v2(p, st);
}
EXPORT CUresult cuMemcpy3D_v2(const FAKE_MEMCPY3D *p) {
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t z = 0; z < p->Depth; z++)
        for (size_t y = 0; y < p->Height; y++)
            memmove(fake_addr(p->dstMemoryType, p->dstHost, p->dstDevice) +
                        ((p->dstZ + z) * p->dstHeight + p->dstY + y) * p->dstPitch +
                        p->dstXInBytes,
                    fake_addr(p->srcMemoryType, p->srcHost, p->srcDevice) +
                        ((p->srcZ + z) * p->srcHeight + p->srcY + y) * p->srcPitch +
                        p->srcXInBytes,
                    p->WidthInBytes);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy3D_v2_ptds(const FAKE_MEMCPY3D *p) { return cuMemcpy3D_v2(p); }
EXPORT CUresult cuMemcpy3DAsync_v2(const FAKE_MEMCPY3D *p, CUstream st) {
    (void)st;
    return cuMemcpy3D_v2(p);
}
EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const FAKE_MEMCPY3D *p, CUstream st) {
    return cuMemcpy3DAsync_v2(p, st);
}

/* Memsets of 1, 2 and 4-byte values, 1D and 2D, each with its stream and per-thread forms. */
#define FAKE_MEMSET(W, T)                                                                         \
    EXPORT CUresult cuMemsetD2D##W##_v2(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h) {   \
        CUresult r = need_ctx();                                                                  \
        if (r)                                                                                    \
            return r;                                                                             \
        for (size_t y = 0; y < h; y++)                                                            \
            for (size_t x = 0; x < w; x++)                                                        \
                ((T *)(uintptr_t)(d + y * pitch))[x] = v;                                         \
        return CUDA_SUCCESS;                                                                      \
    }                                                                                             \
    EXPORT CUresult cuMemsetD2D##W##_v2_ptds(CUdeviceptr d, size_t p, T v, size_t w, size_t h) {  \
        return cuMemsetD2D##W##_v2(d, p, v, w, h);                                                \
    }                                                                                             \
    EXPORT CUresult cuMemsetD2D##W##Async(CUdeviceptr d, size_t p, T v, size_t w, size_t h,       \
                                          CUstream st) {                                          \
        (void)st;                                                                                 \
        return cuMemsetD2D##W##_v2(d, p, v, w, h);                                                \
    }                                                                                             \
    EXPORT CUresult cuMemsetD2D##W##Async_ptsz(CUdeviceptr d, size_t p, T v, size_t w, size_t h,  \
                                               CUstream st) {                                     \
        return cuMemsetD2D##W##Async(d, p, v, w, h, st);                                          \
    }
FAKE_MEMSET(8, unsigned char)
FAKE_MEMSET(16, unsigned short)
FAKE_MEMSET(32, unsigned int)

EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
    return cuMemsetD8_v2(d, v, n);
}
EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
    return cuMemsetD8Async(d, v, n, st);
}
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
    return cuMemsetD2D16_v2(d, 2 * n, v, n, 1);
}
EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) {
    return cuMemsetD16_v2(d, v, n);
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st) {
    (void)st;
    return cuMemsetD16_v2(d, v, n);
}
EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream st) {
    return cuMemsetD16Async(d, v, n, st);
}
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
    return cuMemsetD2D32_v2(d, 4 * n, v, n, 1);
}
EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) {
    return cuMemsetD32_v2(d, v, n);
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream st) {
    (void)st;
    return cuMemsetD32_v2(d, v, n);
}
EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream st) {
    return cuMemsetD32Async(d, v, n, st);
}

/* ---- launches ----------------------------------------------------------------------------- */

static int param_index(const struct func *f, const char *name) {
    for (int k = 0; k < f->nparams; k++)
        if (strcmp(f->pnames[k], name) == 0)
            return k;
    return -1;
}

static uint64_t param_value(const struct func *f, void **params, int k) {
    uint64_t v = 0;
    if (k >= 0 && params && params[k] && f->sizes[k] > 0)
        memcpy(&v, params[k], f->sizes[k] < 8 ? (size_t)f->sizes[k] : 8);
    return v;
}

/* Bytes from `p` to the end of the live allocation holding it (0 outside every one). The
 * allocation holding its first byte: one that ends where the next begins holds `p` as its
 * end only. */
static uint64_t bytes_left(uint64_t p) {
    int i = alloc_holding(p, 1);
    return i < 0 ? 0 : allocs[i].base + allocs[i].bytes - p;
}

/* The test program's kernel, `y[i] = x[i] + y[i]` for `i < n`, on the arena. Elements past
 * either allocation's end are left alone: what the checked build does (the read gives 0, the
 * write is skipped); the plain build is only ever launched in bounds by the tests. */
static void run_add(const struct func *f, void **params, unsigned long long threads) {
    if (!params || f->nparams < 3 || f->sizes[0] != 8 || f->sizes[1] != 8 || f->sizes[2] != 4)
        return;
    uint64_t x = param_value(f, params, 0), y = param_value(f, params, 1);
    int n = (int)param_value(f, params, 2);
    unsigned long long m = n < 0 ? 0 : (unsigned long long)n;
    if (m > threads)
        m = threads;
    if (m > bytes_left(x) / 4)
        m = bytes_left(x) / 4;
    if (m > bytes_left(y) / 4)
        m = bytes_left(y) / 4;
    const float *xs = (const float *)(uintptr_t)x;
    float *ys = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < m; i++)
        ys[i] = xs[i] + ys[i];
}

/* The number in the `mov.u32 %__cc_x, N;` nearest before `store` (a store into the record, such
 * as `[%__cc_r+8]`) within [from, to); -1 when there is none. */
static long stored_constant(const char *from, const char *to, const char *store) {
    const char *at = strstr(from, store);
    if (!at || at >= to)
        return -1;
    const char *mov = NULL;
    for (const char *p = strstr(from, "mov.u32 %__cc_x, "); p && p < at;
         p = strstr(p + 1, "mov.u32 %__cc_x, "))
        mov = p;
    if (!mov)
        return -1;
    const char *num = mov + strlen("mov.u32 %__cc_x, ");
    return isdigit((unsigned char)*num) ? strtol(num, NULL, 10) : -1;
}

/* What the first device check of a bounds-checked build records when it fails (the code
 * cudacheck-core's instrument/emit.rs writes after the kernel's `ret`, at `$__cc_cold<k>`):
 * the slot it checks against (`__cc_len_<slot>`), its site id, its kind and access width. */
struct check {
    char slot[32];
    long site, kind, bytes;
};

/* The first definition (`name:`, not a branch to it) of a label starting with `prefix`. */
static const char *label(const char *from, const char *prefix) {
    const char *p = from ? strstr(from, prefix) : NULL;
    while (p && p[strcspn(p, ":;\n")] != ':')
        p = strstr(p + 1, prefix);
    return p;
}

static int first_check(const struct func *f, struct check *c) {
    const char *cold = label(f->module->ptx + f->entry_at, "$__cc_cold");
    const char *end = label(cold, "$__cc_skip");
    if (!cold || !end)
        return -1;
    const char *len = strstr(cold, "[__cc_len_");
    if (!len || len > end)
        return -1;
    len += strlen("[__cc_len_");
    size_t n = strcspn(len, "]");
    if (n == 0 || n >= sizeof c->slot)
        return -1;
    memcpy(c->slot, len, n);
    c->slot[n] = 0;
    c->site = stored_constant(cold, end, "[%__cc_r+8]");
    c->kind = stored_constant(cold, end, "[%__cc_r+12]");
    c->bytes = stored_constant(cold, end, "[%__cc_r+60]");
    return c->site < 0 || c->kind < 0 || c->bytes <= 0 ? -1 : 0;
}

/* FAKE_CUDA_FAULT=1: the build's first device check fails once, for the thread whose access
 * is the first past the end of its slot's allocation, and the record (cudacheck-core's
 * instrument/record.rs: 128 bytes, little-endian) is written as the instrumented kernel writes
 * it: the count, the first-wins flag, then, when this is the first fault, site, kind, offset
 * from the allocation's base, its length, the thread's block and thread index, the access's
 * width and the base in the message's first 8 bytes. A build without device checks (every
 * access proved by host checks) has nothing that could fail: the launch records nothing. */
static CUresult write_fault(const struct func *f, void **params, unsigned int block_x) {
    struct check c;
    if (first_check(f, &c) != 0)
        return CUDA_SUCCESS;
    char name[64];
    snprintf(name, sizeof name, "__cc_len_%s", c.slot);
    int len = param_index(f, name);
    snprintf(name, sizeof name, "__cc_base_%s", c.slot);
    int base = param_index(f, name);
    int rec = param_index(f, "__cc_rec");
    /* `<param>`, or `<param>_<offset>` for a pointer field of a struct passed by value. */
    int user = atoi(c.slot);
    const char *field = strchr(c.slot, '_');
    int offset_in = field ? atoi(field + 1) : 0;
    if (rec < 0 || len < 0 || base < 0 || !params || user >= f->nparams ||
        offset_in + 8 > f->sizes[user])
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t at = param_value(f, params, rec);
    uint64_t bytes = param_value(f, params, len);
    uint64_t first = param_value(f, params, base);
    uint64_t ptr;
    memcpy(&ptr, (const unsigned char *)params[user] + offset_in, 8);
    /* The record lives in device memory the launch's caller allocated. */
    if (!device_range_ok(at, 128))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *r = (unsigned char *)(uintptr_t)at;
    uint32_t count, faulted;
    memcpy(&count, r + 4, 4);
    count++;
    memcpy(r + 4, &count, 4);
    memcpy(&faulted, r, 4);
    if (faulted != 0)
        return CUDA_SUCCESS;
    uint32_t one = 1, site = (uint32_t)c.site, kind = (uint32_t)c.kind, access = (uint32_t)c.bytes;
    uint32_t zero = 0;
    int64_t offset = (int64_t)bytes;
    uint64_t element = (first + bytes - ptr) / access;
    uint32_t block[3] = {(uint32_t)(element / block_x), 0, 0};
    uint32_t thread[3] = {(uint32_t)(element % block_x), 0, 0};
    memcpy(r + 0, &one, 4);
    memcpy(r + 8, &site, 4);
    memcpy(r + 12, &kind, 4);
    memcpy(r + 16, &offset, 8);
    memcpy(r + 24, &bytes, 8);
    memcpy(r + 32, block, 12);
    memcpy(r + 44, thread, 12);
    memcpy(r + 56, &zero, 4);
    memcpy(r + 60, &access, 4);
    memcpy(r + 64, &first, 8);
    return CUDA_SUCCESS;
}

/* One line per launch: how it came, its shape, its result, every parameter by name. */
static void log_launch(const char *via, const struct func *f, const unsigned int g[3],
                       const unsigned int b[3], unsigned int shared, void **params, CUresult r) {
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path || !*path)
        return;
    char line[8192];
    int n = snprintf(line, sizeof line,
                     "launch via=%s kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u params=%d "
                     "hidden=%d result=%d",
                     via, f->name, g[0], g[1], g[2], b[0], b[1], b[2], shared, f->nparams,
                     param_index(f, "__cc_rec") >= 0, r);
    for (int k = 0; params && k < f->nparams && n > 0 && (size_t)n < sizeof line - 128; k++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s=0x%llx", f->pnames[k],
                      (unsigned long long)param_value(f, params, k));
    if (n > 0 && (size_t)n < sizeof line - 1) {
        line[n++] = '\n';
        line[n] = 0;
    }
    pthread_mutex_lock(&lock);
    FILE *out = fopen(path, "a");
    if (out) {
        fputs(line, out);
        fclose(out);
    }
    pthread_mutex_unlock(&lock);
}

static CUresult launch(const char *via, CUfunction fn, unsigned int gx, unsigned int gy,
                       unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                       unsigned int shared, void **params, void **extra) {
    struct func *f = fn;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    const unsigned int g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    CUresult r = need_ctx();
    unsigned long long threads = (unsigned long long)bx * by * bz;
    if (r == CUDA_SUCCESS && !alive(f->module))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (r == CUDA_SUCCESS &&
             (threads == 0 || threads > 1024 || bx > 1024 || by > 1024 || bz > 64 || gx == 0 ||
              gy == 0 || gz == 0 || gy > 65535 || gz > 65535 ||
              shared > (unsigned int)f->max_dynamic_shared || (params && extra)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && strcmp(f->name, "add") == 0)
        run_add(f, params, threads * gx * gy * gz);
    if (r == CUDA_SUCCESS && param_index(f, "__cc_rec") >= 0) {
        const char *fault = getenv("FAKE_CUDA_FAULT");
        if (fault && strcmp(fault, "1") == 0)
            r = write_fault(f, params, bx);
    }
    log_launch(via, f, g, b, shared, params, r);
    return r;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz,
                               unsigned int shared, CUstream stream, void **params, void **extra) {
    (void)stream;
    return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shared, params, extra);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                    unsigned int gz, unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int shared, CUstream stream,
                                    void **params, void **extra) {
    (void)stream;
    return launch("cuLaunchKernel_ptsz", f, gx, gy, gz, bx, by, bz, shared, params, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by,
                                          unsigned int bz, unsigned int shared, CUstream stream,
                                          void **params) {
    (void)stream;
    return launch("cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, shared, params, NULL);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                               unsigned int gz, unsigned int bx, unsigned int by,
                                               unsigned int bz, unsigned int shared,
                                               CUstream stream, void **params) {
    (void)stream;
    return launch("cuLaunchCooperativeKernel_ptsz", f, gx, gy, gz, bx, by, bz, shared, params,
                  NULL);
}

/* CUlaunchConfig as cuda.h lays it out since 12.0. */
struct launch_config {
    unsigned int grid[3], block[3], shared;
    CUstream stream;
    void *attrs;
    unsigned int num_attrs;
};

EXPORT CUresult cuLaunchKernelEx(const struct launch_config *c, CUfunction f, void **params,
                                 void **extra) {
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return launch("cuLaunchKernelEx", f, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                  c->block[1], c->block[2], c->shared, params, extra);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const struct launch_config *c, CUfunction f, void **params,
                                      void **extra) {
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return launch("cuLaunchKernelEx_ptsz", f, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                  c->block[1], c->block[2], c->shared, params, extra);
}

/* ---- errors ------------------------------------------------------------------------------- */

static const char *error_name(CUresult e) {
    switch (e) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return "CUDA_ERROR_CONTEXT_IS_DESTROYED";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return NULL;
    }
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
    *s = error_name(e);
    return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
    *s = error_name(e);
    return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- cuGetProcAddress: every entry point above, by name ----------------------------------- */

/* One row per exported entry point, so that a name asked for is answered with this library's
 * own function, as the real driver answers the CUDA runtime (which finds everything this way).
 * A name missing here fails to compile where the function is missing. */
#define FAKE_ENTRY_POINTS(X)                                                                     \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)         \
    X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)           \
    X(cuDevicePrimaryCtxGetState) X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz)          \
    X(cuStreamBeginCapture_v2) X(cuStreamBeginCapture_v2_ptsz) X(cuStreamBeginCaptureToGraph)   \
    X(cuStreamBeginCaptureToGraph_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)        \
    X(cuDevicePrimaryCtxReset_v2) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxPushCurrent_v2)  \
    X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuCtxDestroy_v2)               \
    X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleLoad) X(cuModuleLoadFatBinary)           \
    X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal_v2) X(cuLibraryLoadData)        \
    X(cuLibraryLoadFromFile) X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuLibraryGetModule)      \
    X(cuLibraryGetGlobal) X(cuKernelGetFunction) X(cuFuncGetName) X(cuKernelGetName)             \
    X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuStreamCreate) X(cuStreamDestroy_v2)         \
    X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuStreamIsCapturing) X(cuStreamGetCtx)  \
    X(cuEventCreate) X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventQuery)                      \
    X(cuEventSynchronize) X(cuEventDestroy_v2) X(cuMemAlloc_v2) X(cuMemAllocPitch_v2)            \
    X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync)   \
    X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFree_v2) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)     \
    X(cuMemHostAlloc) X(cuMemAllocHost_v2) X(cuMemFreeHost) X(cuMemHostRegister_v2)              \
    X(cuMemHostUnregister) X(cuMemHostGetDevicePointer_v2) X(cuMemGetAddressRange_v2) X(cuMemMap) \
    X(cuMemUnmap) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemcpyHtoD_v2)                 \
    X(cuMemcpyDtoH_v2) X(cuMemcpyDtoHAsync_v2)                                                   \
    X(cuMemcpyDtoDAsync_v2) X(cuMemcpyDtoDAsync_v2_ptsz) X(cuMemsetD8_v2) X(cuMemsetD8Async)     \
    X(cuMemcpy) X(cuMemcpy_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz) X(cuMemcpyHtoD_v2_ptds)  \
    X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoDAsync_v2_ptsz) X(cuMemcpyDtoD_v2)                      \
    X(cuMemcpyDtoD_v2_ptds) X(cuMemcpyPeer) X(cuMemcpyPeer_ptds) X(cuMemcpyPeerAsync)            \
    X(cuMemcpyPeerAsync_ptsz) X(cuMemcpy2D_v2) X(cuMemcpy2D_v2_ptds) X(cuMemcpy2DUnaligned_v2)   \
    X(cuMemcpy2DUnaligned_v2_ptds) X(cuMemcpy2DAsync_v2) X(cuMemcpy2DAsync_v2_ptsz)              \
    X(cuMemcpy3D_v2) X(cuMemcpy3D_v2_ptds) X(cuMemcpy3DAsync_v2) X(cuMemcpy3DAsync_v2_ptsz)      \
    X(cuMemsetD8_v2_ptds) X(cuMemsetD8Async_ptsz) X(cuMemsetD16_v2) X(cuMemsetD16_v2_ptds)       \
    X(cuMemsetD16Async) X(cuMemsetD16Async_ptsz) X(cuMemsetD32_v2) X(cuMemsetD32_v2_ptds)        \
    X(cuMemsetD32Async) X(cuMemsetD32Async_ptsz) X(cuMemsetD2D8_v2) X(cuMemsetD2D8_v2_ptds)      \
    X(cuMemsetD2D8Async) X(cuMemsetD2D8Async_ptsz) X(cuMemsetD2D16_v2) X(cuMemsetD2D16_v2_ptds)  \
    X(cuMemsetD2D16Async) X(cuMemsetD2D16Async_ptsz) X(cuMemsetD2D32_v2)                         \
    X(cuMemsetD2D32_v2_ptds) X(cuMemsetD2D32Async) X(cuMemsetD2D32Async_ptsz)                    \
    X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchCooperativeKernel)                        \
    X(cuLaunchCooperativeKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)               \
    X(cuGetErrorName) X(cuGetErrorString) X(cuGetProcAddress) X(cuGetProcAddress_v2)

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                                 unsigned long long flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                    unsigned long long flags, int *status);

#define FAKE_ROW(name) {#name, (void *)name},
static const struct {
    const char *name;
    void *fn;
} entry_points[] = {FAKE_ENTRY_POINTS(FAKE_ROW)};

static void *entry_point(const char *name) {
    for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++)
        if (strcmp(entry_points[i].name, name) == 0)
            return entry_points[i].fn;
    return NULL;
}

/* The newest version of `symbol` (the runtime asks by the unversioned name: `cuMemAlloc` is
 * `cuMemAlloc_v2`); with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (2), its `_ptsz` form
 * where there is one. */
static void *lookup(const char *symbol, unsigned long long flags) {
    char name[256];
    const char *suffixes[] = {"_v2_ptsz", "_ptsz", "_v2", ""};
    for (size_t i = (flags & 2) ? 0 : 2; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(name, sizeof name, "%s%s", symbol, suffixes[i]);
        void *p = entry_point(name);
        if (p)
            return p;
    }
    return NULL;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                                 unsigned long long flags) {
    (void)version;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = lookup(symbol, flags);
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                    unsigned long long flags, int *status) {
    CUresult r = cuGetProcAddress(symbol, pfn, version, flags);
    if (status)
        *status = r == CUDA_SUCCESS ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS, _SYMBOL_NOT_FOUND */
    return r;
}
