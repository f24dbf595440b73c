// Written the way kernels in the wild are: libc and CUDA headers, <cmath> constants, fp16/bf16.
#include <stdint.h>
#include <stddef.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <assert.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float gelu(float x)
{
    return 0.5f * x * (1.0f + tanhf(sqrtf(2.0f / (float)M_PI) * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void gelu_half(__half* out, const __half* in, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = __half2float(in[i]);
    if (isinf(v) || v > FLT_MAX || n > INT_MAX) v = 0.0f;
    out[i] = __float2half(gelu(v));
}

extern "C" __global__ void scale_bf16(__nv_bfloat16* out, const __nv_bfloat16* in, float s, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(n < UINT_MAX);
    if (i < n) out[i] = __float2bfloat16(__bfloat162float(in[i]) * s * (float)M_SQRT2 + (float)INFINITY * 0.0f);
}
