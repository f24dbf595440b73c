// Sliding-window median of WINDOW samples per output, sorted per thread in a local array. The
// array is indexed with run-time values, so it lives in local memory: the kernel of the set with
// a stack frame.
#define WINDOW 25

extern "C" __global__ void window_median(float* __restrict__ out, const float* __restrict__ in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float w[WINDOW];
    int count = 0;
    for (int k = -WINDOW / 2; k <= WINDOW / 2; ++k) {
        int j = min(max(i + k, 0), n - 1);
        float v = in[j];
        // Insertion sort: the position depends on the data, so `w` cannot stay in registers.
        int p = count++;
        while (p > 0 && w[p - 1] > v) {
            w[p] = w[p - 1];
            --p;
        }
        w[p] = v;
    }
    out[i] = w[WINDOW / 2];
}
