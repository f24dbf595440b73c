// Kernels whose source fixes resources: launch bounds, large static shared memory.
extern "C" __global__ void __launch_bounds__(128) bounded(float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0f;
}

extern "C" __global__ void hoard(float* out, int n)
{
    __shared__ float big[16384];
    int i = threadIdx.x;
    big[i] = 1.0f;
    __syncthreads();
    if (i < n) out[i] = big[(i + 1) % 16384];
}
