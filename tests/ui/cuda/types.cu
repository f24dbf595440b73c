// One kernel per scalar spelling the type checks care about.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stddef.h>

extern "C" __global__ void fill_u32(unsigned int* out, unsigned value, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

extern "C" __global__ void halve(__half* out, const __half* in, __nv_bfloat16 unused, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmul(in[i], __float2half(0.5f));
}

extern "C" __global__ void bytes(unsigned char* out, const double* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] > 0.0 ? 1 : 0;
}
