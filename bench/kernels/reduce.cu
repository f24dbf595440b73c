// Reductions, scan and histogram: a templated shared-memory tree reduction, a warp-shuffle
// max over a grid-stride loop, a block-wide inclusive scan (warp shuffles, then the warps'
// totals), a dot product whose scratch is dynamic shared memory, and a 256-bin histogram with
// shared-memory atomics.

// ---- Tree reduction in static shared memory, BLOCK threads, two loads per thread -------------

template <int BLOCK>
__global__ void block_reduce_sum(float* __restrict__ partial, const float* __restrict__ in, int n)
{
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * (BLOCK * 2) + tid;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v += in[i + BLOCK];
    s[tid] = v;
    __syncthreads();
#pragma unroll
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

template __global__ void block_reduce_sum<256>(float*, const float*, int);

// ---- Max of |x| over a grid-stride loop, warp shuffles, one partial per block ---------------

extern "C" __global__ void absmax_warp(float* __restrict__ partial, const float* __restrict__ in,
                                       int n)
{
    __shared__ float warp_max[32];
    float m = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        m = fmaxf(m, fabsf(in[i]));
    }
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, off));
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) warp_max[wid] = m;
    __syncthreads();
    if (wid == 0) {
        m = lane < (blockDim.x >> 5) ? warp_max[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, off));
        if (lane == 0) partial[blockIdx.x] = m;
    }
}

// ---- Inclusive scan of each block's 1024 elements; block totals go to `sums` ----------------

extern "C" __global__ void scan_block_inclusive(int* __restrict__ out, int* __restrict__ sums,
                                                const int* __restrict__ in, int n)
{
    __shared__ int warp_tot[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int v = i < n ? in[i] : 0;
    for (int off = 1; off < 32; off <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += t;
    }
    if (lane == 31) warp_tot[wid] = v;
    __syncthreads();
    if (wid == 0) {
        int w = lane < (blockDim.x >> 5) ? warp_tot[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            int t = __shfl_up_sync(0xffffffffu, w, off);
            if (lane >= off) w += t;
        }
        warp_tot[lane] = w;
    }
    __syncthreads();
    if (wid > 0) v += warp_tot[wid - 1];
    if (i < n) out[i] = v;
    if (threadIdx.x == blockDim.x - 1) sums[blockIdx.x] = v;
}

// ---- Row dot products a[r, :] . b[r, :], scratch in dynamic shared memory (blockDim floats) --

extern "C" __global__ void row_dot_dynsmem(float* __restrict__ out, const float* __restrict__ a,
                                           const float* __restrict__ b, int rows, int cols)
{
    extern __shared__ float scratch[];
    int r = blockIdx.x;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        s += a[(size_t)r * cols + c] * b[(size_t)r * cols + c];
    }
    scratch[threadIdx.x] = s;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0 && r < rows) out[r] = scratch[0];
}

// ---- 256-bin histogram: per-block bins in shared memory, merged with global atomics ----------

extern "C" __global__ void histogram256_shared(unsigned int* __restrict__ bins,
                                               const unsigned char* __restrict__ data, size_t n)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    // Four bytes per load where the data allows it.
    size_t n4 = n / 4;
    const uchar4* d4 = reinterpret_cast<const uchar4*>(data);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)blockDim.x * gridDim.x) {
        uchar4 q = d4[i];
        atomicAdd(&local[q.x], 1u);
        atomicAdd(&local[q.y], 1u);
        atomicAdd(&local[q.z], 1u);
        atomicAdd(&local[q.w], 1u);
    }
    for (size_t i = n4 * 4 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        if (local[b]) atomicAdd(&bins[b], local[b]);
    }
}
