// A kernel whose prepared resources the offline UI test marks as taken from an older version.
extern "C" __global__ void stale(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * out[i];
}
