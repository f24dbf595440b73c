// What `cudacheck run` costs a program, measured from inside it (CUDA runtime API, built by
// nvcc): per-launch host cost of an empty kernel, and the GPU time of kernels of several
// styles, each timed with events over many repetitions. Run plainly and under `cudacheck run`
// (with and without bounds checking) by scripts/run-bench.sh, which compares medians.
//
//   launch_cost launches   -> "launch_us <median host us per launch, over batches>" and
//                             "launch_us_min <the fastest batch's>"
//   launch_cost kernels    -> "kernel <name> <median GPU us per launch>" for each kernel
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
                         cudaGetErrorString(e_));                                           \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

__global__ void empty() {}

__global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

// A 5-point stencil on a w x h grid, edges clamped.
__global__ void stencil(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int xl = max(x - 1, 0), xr = min(x + 1, w - 1), yu = max(y - 1, 0), yd = min(y + 1, h - 1);
    out[y * w + x] = 0.2f * (in[y * w + x] + in[y * w + xl] + in[y * w + xr] + in[yu * w + x] +
                             in[yd * w + x]);
}

// A block reduction through shared memory, one partial sum per block.
__global__ void block_sum(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.f;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// A gather through an index array.
__global__ void gather(const float* __restrict__ src, const int* __restrict__ idx,
                       float* __restrict__ dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[idx[i]];
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F>
static float time_us(F launch, int reps) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 15; ++r) {
        CHECK(cudaEventRecord(a));
        for (int k = 0; k < reps; ++k) launch();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.f / reps);
    }
    CHECK(cudaGetLastError());
    return median(t);
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "kernels";
    if (!std::strcmp(mode, "launches")) {
        // Host cost per launch: batches of back-to-back launches of an empty kernel, timed on
        // the host, the device synchronized per batch (the GPU runs an empty kernel faster
        // than the host queues the next one, so the host's cost is what is measured).
        empty<<<1, 32>>>();
        CHECK(cudaDeviceSynchronize());
        std::vector<float> per;
        const int batch = 2000;
        for (int r = 0; r < 25; ++r) {
            auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < batch; ++k) empty<<<1, 32>>>();
            CHECK(cudaDeviceSynchronize());
            auto t1 = std::chrono::steady_clock::now();
            per.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count() / batch);
        }
        std::printf("launch_us %.3f\n", median(per));
        // The fastest batch: what the launch path costs with the least interference from the
        // rest of the machine (the median moves with it between processes).
        std::printf("launch_us_min %.3f\n", *std::min_element(per.begin(), per.end()));
        return 0;
    }
    // Large enough that each kernel runs longer than a checked launch takes on the host, so
    // the GPU stays busy and its time per launch is the kernel's own.
    const int n = 1 << 25, w = 4096, h = 4096;
    float *x, *y, *a, *b, *part;
    int* idx;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&a, w * h * sizeof(float)));
    CHECK(cudaMalloc(&b, w * h * sizeof(float)));
    CHECK(cudaMalloc(&part, n / 512 * sizeof(float)));
    CHECK(cudaMalloc(&idx, n * sizeof(int)));
    std::vector<int> hidx(n);
    for (int i = 0; i < n; ++i) hidx[i] = (int)((i * 2654435761u) % n);
    CHECK(cudaMemcpy(idx, hidx.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    CHECK(cudaMemset(a, 0, w * h * sizeof(float)));
    std::printf("kernel saxpy %.3f\n",
                time_us([&] { saxpy<<<1056, 256>>>(2.f, x, y, n); }, 20));
    dim3 blk(32, 8), grd(w / 32, h / 8);
    std::printf("kernel stencil %.3f\n",
                time_us([&] { stencil<<<grd, blk>>>(a, b, w, h); }, 20));
    std::printf("kernel block_sum %.3f\n",
                time_us([&] { block_sum<<<n / 512, 256>>>(x, part, n); }, 20));
    std::printf("kernel gather %.3f\n",
                time_us([&] { gather<<<n / 256, 256>>>(x, idx, y, n); }, 20));
    std::printf("kernel empty %.3f\n", time_us([&] { empty<<<1, 32>>>(); }, 500));
    return 0;
}
