// Launch configurations the device refuses. The program is written as one that checks its
// launches: it prints the error the launch returned and goes on, with a launch that fits.
// Under cudacheck the same error must reach the program (stdout is identical to a plain run)
// and cudacheck reports a `launch_error` naming the kernel and the limit.
//
// bug_block_2048: fill_iota with a block of 2048 threads (the limit is 1024 per block).
// bug_shared_too_big: reverse_tiles with 300 KiB of dynamic shared memory (sm_90 allows at
// most 227 KiB per block, and only after opting in; the default is 48 KiB).
#include "common.cuh"

__global__ void fill_iota(int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3 * i + 1;
}

// Reverses each blockDim.x-long tile of `in` through dynamic shared memory.
__global__ void reverse_tiles(const float* in, float* out, int n)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) out[j] = tile[threadIdx.x];
}

// Reports the launch's own error on stdout (the program's expected output) and clears it.
static bool launch_refused(const char* what)
{
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) return false;
    std::printf("launch %s refused: %s\n", what, cudaGetErrorName(err));
    return true;
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_block_2048", "bug_shared_too_big"});
    const int N = 4096, TILE = 256;

    int* d_iota = nullptr;
    CHECK(cudaMalloc(&d_iota, N * sizeof(int)));
    poison(d_iota, N * sizeof(int));
    if (is_case(which, "bug_block_2048")) {
        fill_iota<<<N / 2048, 2048>>>(d_iota, N);
        if (!launch_refused("fill_iota<<<2, 2048>>>")) CHECK(cudaDeviceSynchronize());
    }
    fill_iota<<<N / 256, 256>>>(d_iota, N);
    CHECK_LAUNCH();
    std::vector<int> iota = to_host(d_iota, N), want_iota(N);
    for (int i = 0; i < N; ++i) want_iota[i] = 3 * i + 1;
    print_result("iota", iota);
    check_result("iota", iota, want_iota);

    std::vector<float> in(N), want_rev(N);
    for (int i = 0; i < N; ++i) in[i] = static_cast<float>(i % 333);
    for (int i = 0; i < N; ++i) want_rev[(i / TILE) * TILE + (TILE - 1 - i % TILE)] = in[i];
    float* d_in = to_device(in);
    float* d_rev = nullptr;
    CHECK(cudaMalloc(&d_rev, N * sizeof(float)));
    poison(d_rev, N * sizeof(float));
    if (is_case(which, "bug_shared_too_big")) {
        reverse_tiles<<<N / TILE, TILE, 300 * 1024>>>(d_in, d_rev, N);
        if (!launch_refused("reverse_tiles with 300 KiB of shared memory"))
            CHECK(cudaDeviceSynchronize());
    }
    reverse_tiles<<<N / TILE, TILE, TILE * sizeof(float)>>>(d_in, d_rev, N);
    CHECK_LAUNCH();
    std::vector<float> rev = to_host(d_rev, N);
    print_result("reverse_tiles", rev);
    check_result("reverse_tiles", rev, want_rev);

    CHECK(cudaFree(d_iota));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_rev));
    return 0;
}
