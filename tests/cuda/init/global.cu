// Reads of global memory nothing wrote, for the library's init checking of tracked buffers
// (`cudacheck::alloc_uninit`). `fill` writes buf[i] for i < m; `gather` reads in[i] for i < n
// on the line marked READ and writes out[i]. Launched with 128 threads per block.

extern "C" __global__ void fill(float* buf, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) buf[i] = 0.5f * i - 7.0f;
}

extern "C" __global__ void gather(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i]; // READ
        out[i] = v * 2.0f + 1.0f;
    }
}
