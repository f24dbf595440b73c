// 40 KiB of static shared memory, sized by a macro: only the compiled kernel knows how much.
#define SIZE (40 * 256)

extern "C" __global__ void big_static(float* out, int n) {
    __shared__ float buf[SIZE];
    extern __shared__ float dyn[];
    int i = threadIdx.x;
    buf[i] = dyn[i];
    __syncthreads();
    if (i < n) out[i] = buf[(i + 1) % blockDim.x];
}
