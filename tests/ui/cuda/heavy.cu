// A kernel that keeps many values live at once: NVRTC gives it well over 64 registers per
// thread, so 1024 threads per block need more than the 65,536 registers a block may use.
#define N 96

extern "C" __global__ void heavy(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = in[(i + k * 977) % n];
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
#pragma unroll
        for (int j = k + 1; j < N; j += 7) acc += v[k] * v[j];
    }
    out[i] = acc;
}

template <typename T>
__global__ void heavy_t(const T* in, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = in[(i + k * 977) % n];
    T acc = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
#pragma unroll
        for (int j = k + 1; j < N; j += 7) acc += v[k] * v[j];
    }
    out[i] = acc;
}
template __global__ void heavy_t<float>(const float*, float*, int);
template __global__ void heavy_t<double>(const double*, double*, int);
