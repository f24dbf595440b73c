// The launch APIs beside <<<>>>: cudaLaunchKernelEx (cuLaunchKernelEx underneath) and
// cudaLaunchCooperativeKernel (cuLaunchCooperativeKernel), whose kernel synchronizes the whole
// grid. A checked build must be launched the same way, or grid.sync() deadlocks or fails.
//
// Both compute the sum of squares of N small integers with a fixed-order tree reduction, so
// the result is exact and the same on every run.
//
// bug_ex_one_past: the cudaLaunchKernelEx launch is given N + 1 elements: the thread of global
// index N reads v[N], one past the end.
#include "common.cuh"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int BLOCK = 256;

// partial[b] = sum of v[i]^2 over block b's elements.
__global__ void sum_squares(const float* v, float* partial, int n)
{
    __shared__ float s[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = 0.0f;
    if (i < n) {
        x = v[i]; // RUN-BUG(bug_ex_one_past)
    }
    s[threadIdx.x] = x * x;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// The same sum in one cooperative launch: blocks write partials, the grid synchronizes, block
// 0 adds them up in order.
__global__ void sum_squares_grid(const float* v, float* partial, float* total, int n)
{
    cg::grid_group grid = cg::this_grid();
    __shared__ float s[BLOCK];
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc += v[i] * v[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        float t = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
        *total = t;
    }
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_ex_one_past"});
    const int N = 2000;
    std::vector<float> v(N);
    float want_total = 0.0f;
    for (int i = 0; i < N; ++i) {
        v[i] = static_cast<float>(i % 10);
        want_total += v[i] * v[i];
    }
    float* dv = to_device(v);

    // cudaLaunchKernelEx.
    const int n = is_case(which, "bug_ex_one_past") ? N + 1 : N;
    const int blocks = (n + BLOCK - 1) / BLOCK;
    float* d_partial = nullptr;
    CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
    poison(d_partial, blocks * sizeof(float));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(BLOCK);
    config.dynamicSmemBytes = 0;
    config.stream = 0;
    config.attrs = nullptr;
    config.numAttrs = 0;
    CHECK(cudaLaunchKernelEx(&config, sum_squares, static_cast<const float*>(dv), d_partial, n));
    CHECK_LAUNCH();
    std::vector<float> partial = to_host(d_partial, blocks);
    float total_ex = 0.0f;
    for (float p : partial) total_ex += p;
    print_result("ex partials", partial);
    check_result("ex total", std::vector<float>{total_ex}, std::vector<float>{want_total});

    // cudaLaunchCooperativeKernel.
    int coop = 0;
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    if (!coop) {
        std::printf("cooperative launch: not supported on this device\n");
    } else {
        const int grid_blocks = 8;
        float *d_partial_g = nullptr, *d_total = nullptr;
        CHECK(cudaMalloc(&d_partial_g, grid_blocks * sizeof(float)));
        CHECK(cudaMalloc(&d_total, sizeof(float)));
        poison(d_partial_g, grid_blocks * sizeof(float));
        poison(d_total, sizeof(float));
        const float* cv = dv;
        int count = N;
        void* args[] = {&cv, &d_partial_g, &d_total, &count};
        CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(sum_squares_grid),
                                          dim3(grid_blocks), dim3(BLOCK), args, 0, 0));
        CHECK_LAUNCH();
        std::vector<float> total = to_host(d_total, 1);
        print_result("cooperative total", total);
        check_result("cooperative total", total, std::vector<float>{want_total});
        CHECK(cudaFree(d_partial_g));
        CHECK(cudaFree(d_total));
    }
    CHECK(cudaFree(dv));
    CHECK(cudaFree(d_partial));
    return 0;
}
