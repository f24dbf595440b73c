// The kernel every compat fixture compiles: with cudacheck (checked launches) and, in the
// candle fixture, to PTX loaded by raw cudarc as candle loads its build-time kernels.
extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
