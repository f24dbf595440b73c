// Sum reduction: each block reduces blockDim.x * 2 elements in dynamic shared memory and writes
// one partial sum; a second launch (or the host) sums the partials. Needs
// blockDim.x * sizeof(float) bytes of dynamic shared memory and a power-of-two block.
extern "C" __global__ void reduce_sum(float* __restrict__ partial, const float* __restrict__ in, int n)
{
    extern __shared__ float sdata[];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float v = 0.0f;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        // Last warp: shuffle instead of shared memory, no __syncthreads needed.
        float sum = sdata[tid] + (blockDim.x >= 64 ? sdata[tid + 32] : 0.0f);
        for (int offset = 16; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        }
        if (tid == 0) partial[blockIdx.x] = sum;
    }
}
