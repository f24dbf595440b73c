// Atomics through a checked index (results/instrument_cost.md, 2026-11-26): a global atomic
// whose check fails runs on the module's sink instead of the user's memory, and the fault is
// recorded after it; a shared-memory atomic keeps the branch before it. Every width and form
// NVRTC writes for global memory: 2-byte CAS, 4-byte add/CAS/exchange/max/min/and/or/xor/inc,
// 8-byte add returning the old value, f64 add at an immediate offset, half2, and (sm_90)
// float2 and float4 vector adds. `SITE(name)` marks the line a kernel's checked atomic is on.
#include <cuda_fp16.h>

// out[idx[i]] += val[i]: a reduction (the result is unused).
extern "C" __global__ void scatter_add_i32(int* out, const int* idx, const int* val, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&out[idx[i]], val[i]); // SITE(scatter_add_i32)
}

// An atomic whose old value is used: 8 bytes.
extern "C" __global__ void scatter_add_u64_old(unsigned long long* out, unsigned long long* old,
                                               const int* idx, const unsigned long long* val,
                                               int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) old[i] = atomicAdd(&out[idx[i]], val[i]); // SITE(scatter_add_u64_old)
}

// An immediate offset in the address: out[idx[i] + 1].
extern "C" __global__ void scatter_add_f64_next(double* out, const int* idx, const double* val,
                                                int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&out[idx[i] + 1], val[i]); // SITE(scatter_add_f64_next)
}

// The other read-modify-writes on one checked index (a group of them, at constant offsets).
extern "C" __global__ void atomic_ops(int* out, unsigned* uout, int* old, const int* idx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int j = idx[i];
    int a = atomicCAS(&out[j], 0, i);
    int b = atomicExch(&out[j + 1], i);
    int c = atomicMax(&out[j + 2], i);
    int d = atomicMin(&out[j + 3], i);
    int e = atomicAnd(&out[j + 4], ~i);
    int f = atomicOr(&out[j + 5], i);
    int g = atomicXor(&out[j + 6], i);
    unsigned h = atomicInc(&uout[j], 7u);
    old[i] = a + b + c + d + e + f + g + (int)h;
}

// Narrow and vector widths: 2 bytes, 4 bytes of half2, and sm_90's float2 and float4 adds.
extern "C" __global__ void narrow_and_vector(unsigned short* h, __half2* h2, float2* f2,
                                             float4* f4, const int* idx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int j = idx[i];
    atomicCAS(&h[j], (unsigned short)0, (unsigned short)1);
    atomicAdd(&h2[j], __floats2half2_rn(1.0f, 2.0f));
#if __CUDA_ARCH__ >= 900
    atomicAdd(&f2[j], make_float2(1.0f, 2.0f));
    atomicAdd(&f4[j], make_float4(1.0f, 2.0f, 3.0f, 4.0f));
#endif
}

// A shared-memory atomic over a checked bin: keeps the branch (no shared sink).
extern "C" __global__ void shared_hist(unsigned* bins, const int* idx, const unsigned* w, int n,
                                       int nbins)
{
    extern __shared__ unsigned local[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&local[idx[i]], w[i]);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// index_add over rows, a block per source row (a loop: the fast copy's redirected atomic
// leaves for the slow copy).
extern "C" __global__ void index_add_rows(int* out, const int* src, const int* idx, int rows,
                                          int dim)
{
    int r = blockIdx.x;
    if (r >= rows) return;
    size_t dst = (size_t)idx[r] * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        atomicAdd(&out[dst + c], src[(size_t)r * dim + c]); // SITE(index_add_rows)
    }
}
