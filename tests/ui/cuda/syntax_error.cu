// A kernel missing the semicolon that ends line 5 (NVRTC reports it at the next token, line 6).
extern "C" __global__ void broken(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 1.0f
}
