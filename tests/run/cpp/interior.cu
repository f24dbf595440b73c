// Interior pointers: kernels handed `base + offset` that legitimately index below it.
//
// trailing_sum: out[i] = p[i] + p[i-1] + ... + p[i-(WIDTH-1)], a moving sum over a history.
// The input buffer holds WIDTH - 1 history elements, then N samples, and p points at the first
// sample: p = base + (WIDTH - 1). Reading p[-(WIDTH-1)] is reading base[0], inside.
//
// bug_below_start: the history length is taken as WIDTH - 2 (p = base + (WIDTH - 2)), so
// thread 0 reads p[-(WIDTH-1)] = base[-1], one element below the allocation.
//
// stencil3 (correct in every case): a 3-point stencil over p = base + 1 with one halo element
// on each side. p[-1] at i = 0 is base[0]: below the pointer, inside the allocation, no report.
#include "common.cuh"

constexpr int WIDTH = 4;

// Grid-stride loop: any grid covers any n.
__global__ void trailing_sum(const float* p, float* out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < WIDTH; ++k) {
            s += p[i - k]; // RUN-BUG(bug_below_start)
        }
        out[i] = s;
    }
}

__global__ void stencil3(const float* p, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.25f * p[i - 1] + 0.5f * p[i] + 0.25f * p[i + 1];
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_below_start"});
    const int N = 2048;

    // Moving sum.
    std::vector<float> hist(WIDTH - 1 + N);
    for (size_t i = 0; i < hist.size(); ++i) hist[i] = static_cast<float>((i * 5) % 23);
    std::vector<float> want_sum(N);
    for (int i = 0; i < N; ++i) {
        float s = 0.0f;
        for (int k = 0; k < WIDTH; ++k) s += hist[WIDTH - 1 + i - k];
        want_sum[i] = s;
    }
    float* dhist = to_device(hist);
    float* dsum = nullptr;
    CHECK(cudaMalloc(&dsum, N * sizeof(float)));
    poison(dsum, N * sizeof(float));
    const int history = is_case(which, "bug_below_start") ? WIDTH - 2 : WIDTH - 1;
    trailing_sum<<<4, 256>>>(dhist + history, dsum, N);
    CHECK_LAUNCH();
    std::vector<float> sum = to_host(dsum, N);
    print_result("trailing_sum", sum);
    check_result("trailing_sum", sum, want_sum);

    // Stencil with a one-element halo on each side.
    std::vector<float> halo(N + 2);
    for (size_t i = 0; i < halo.size(); ++i) halo[i] = static_cast<float>((i * 3) % 17);
    std::vector<float> want_st(N);
    for (int i = 0; i < N; ++i)
        want_st[i] = 0.25f * halo[i] + 0.5f * halo[i + 1] + 0.25f * halo[i + 2];
    float* dhalo = to_device(halo);
    float* dst = nullptr;
    CHECK(cudaMalloc(&dst, N * sizeof(float)));
    poison(dst, N * sizeof(float));
    stencil3<<<(N + 255) / 256, 256>>>(dhalo + 1, dst, N);
    CHECK_LAUNCH();
    std::vector<float> st = to_host(dst, N);
    print_result("stencil3", st);
    check_result("stencil3", st, want_st);

    CHECK(cudaFree(dhist));
    CHECK(cudaFree(dsum));
    CHECK(cudaFree(dhalo));
    CHECK(cudaFree(dst));
    return 0;
}
