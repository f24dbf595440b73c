// Row-wise normalizations as transformer code writes them: layernorm (a block per row, warp
// shuffles then shared memory), RMSnorm (a warp per row), softmax (a warp per row with an online
// max and sum) and a softmax that caches its row in dynamic shared memory.

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

// Sum over the block; every thread gets the result. blockDim.x is a multiple of 32, <= 1024.
__device__ __forceinline__ float block_sum(float v, float* shared32)
{
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) shared32[wid] = v;
    __syncthreads();
    v = lane < blockDim.x / 32 ? shared32[lane] : 0.0f;
    return warp_sum(v);
}

// ---- LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta ------------------------------

extern "C" __global__ void layernorm_rows(float* __restrict__ y, const float* __restrict__ x,
                                          const float* __restrict__ gamma,
                                          const float* __restrict__ beta, int rows, int cols,
                                          float eps)
{
    __shared__ float red[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    float mean = block_sum(s, red) / cols;
    float v = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean;
        v += d * d;
    }
    float rstd = rsqrtf(block_sum(v, red) / cols + eps);
    float* yr = y + (size_t)row * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    }
}

// ---- RMSNorm, a warp per row: y = x / sqrt(mean(x^2) + eps) * w ------------------------------

extern "C" __global__ void rmsnorm_warp(float* __restrict__ y, const float* __restrict__ x,
                                        const float* __restrict__ w, int rows, int cols, float eps)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float ss = 0.0f;
    for (int c = lane; c < cols; c += 32) ss += xr[c] * xr[c];
    ss = warp_sum(ss);
    float scale = rsqrtf(ss / cols + eps);
    for (int c = lane; c < cols; c += 32) y[(size_t)row * cols + c] = xr[c] * scale * w[c];
}

// ---- Softmax, a warp per row, online max and sum in one pass ---------------------------------

extern "C" __global__ void softmax_warp_online(float* __restrict__ y, const float* __restrict__ x,
                                               int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float m = -INFINITY, d = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = xr[c];
        float nm = fmaxf(m, v);
        d = d * __expf(m - nm) + __expf(v - nm);
        m = nm;
    }
    // Combine the lanes' (max, sum) pairs.
    for (int off = 16; off > 0; off >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, off);
        float od = __shfl_xor_sync(0xffffffffu, d, off);
        float nm = fmaxf(m, om);
        d = d * __expf(m - nm) + od * __expf(om - nm);
        m = nm;
    }
    float inv = 1.0f / d;
    for (int c = lane; c < cols; c += 32) y[(size_t)row * cols + c] = __expf(xr[c] - m) * inv;
}

// ---- Softmax, a block per row, the row cached in dynamic shared memory (cols floats) ---------

extern "C" __global__ void softmax_smem_row(float* __restrict__ y, const float* __restrict__ x,
                                            int rows, int cols)
{
    extern __shared__ float row_cache[];
    __shared__ float red[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = x[(size_t)row * cols + c];
        row_cache[c] = v;
        m = fmaxf(m, v);
    }
    // Block max through the same shared scratch.
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    m = warp_max(m);
    if (lane == 0) red[wid] = m;
    __syncthreads();
    m = lane < blockDim.x / 32 ? red[lane] : -INFINITY;
    m = warp_max(m);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float e = __expf(row_cache[c] - m);
        row_cache[c] = e;
        s += e;
    }
    s = block_sum(s, red);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(size_t)row * cols + c] = row_cache[c] * inv;
}
