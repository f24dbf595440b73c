// Row-wise softmax of a rows x cols matrix: one block per row, warp shuffles plus a small shared
// array for the block-wide max and sum. Numerically stable (subtracts the row max).
#include <math.h>
#include <float.h>

__device__ float block_reduce(float v, bool is_max)
{
    __shared__ float warp_vals[32];
    int lane = threadIdx.x % 32;
    int warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) warp_vals[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) / 32;
    v = lane < warps ? warp_vals[lane] : (is_max ? -FLT_MAX : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    __syncthreads();
    return v;
}

extern "C" __global__ void softmax_rows(float* __restrict__ out, const float* __restrict__ in,
                                        int rows, int cols)
{
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* x = in + (size_t)row * cols;
    float* y = out + (size_t)row * cols;
    float m = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(x[c] - m);
    s = block_reduce(s, false);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] = expf(x[c] - m) / s;
}
