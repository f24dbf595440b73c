// A template kernel, reached through name expressions such as `scale<float>`.
#include <cuda_fp16.h>

template <typename T>
__global__ void scale(T* __restrict__ out, const T* __restrict__ in, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(float(in[i]) * factor);
}

template __global__ void scale<float>(float*, const float*, float, int);
template __global__ void scale<__half>(__half*, const __half*, float, int);
