// Shared-memory races and a barrier that not every thread of a block reaches: what
// `cudacheck run --races` must name (this program's runs use that option; see
// tests/run/expected.json). Inputs are small integers, so every correct result is exact.
//
// transpose_tiles: a 64 x 64 matrix transposed through a 32 x 32 tile of shared memory, blocks
//   of 32 x 8 threads, each thread moving four rows (the tiled transpose of the CUDA samples).
//   bug_transpose: no barrier between filling the tile and reading it transposed, so a thread
//   reads elements that threads of other warps write.
// scan_block: an inclusive scan of 256 values (Hillis and Steele): at each step every thread
//   reads its neighbour `off` to the left, then adds it in. Correct, a barrier after the read and
//   one after the write. bug_scan: the barrier between the read and the write is missing, so a
//   thread may overwrite a value another thread has not read yet.
// normalize_rows: rows of 128 values, a block each; threads below 64 sum pairs into shared
//   memory, every thread meets at a barrier, then divides its value by the row's sum.
//   bug_barrier: the upper half of the block takes a shortcut with a barrier of its own, so
//   threads 0..63 and 64..127 wait at two different barrier statements. (The hardware lets
//   both through, as both are barrier 0: the results are right, and the bug waits for the day
//   the two paths stop matching.)
#include "common.cuh"

constexpr int TILE = 32;
constexpr int ROWS = 8;
constexpr int W = 64;

__global__ void transpose_tiles(const float* in, float* out, bool sync)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * W + x]; // RUN-BUG(bug_transpose/write)
    if (sync) __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(y + j) * W + x] = tile[threadIdx.x][threadIdx.y + j]; // RUN-BUG(bug_transpose/read)
}

__global__ void scan_block(const int* in, int* out, bool sync_between)
{
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    for (int off = 1; off < 256; off *= 2) {
        int left = t >= off ? s[t - off] : 0; // RUN-BUG(bug_scan/read)
        if (sync_between) __syncthreads();
        s[t] += left; // RUN-BUG(bug_scan/write)
        __syncthreads();
    }
    out[blockIdx.x * 256 + t] = s[t];
}

__global__ void normalize_rows(const float* in, float* out, bool split)
{
    __shared__ float pair[64];
    int t = threadIdx.x;
    const float* row = in + blockIdx.x * 128;
    if (t < 64) pair[t] = row[2 * t] + row[2 * t + 1];
    float mine;
    if (split && t >= 64) {
        // A shortcut for the upper half, with a barrier of its own.
        mine = row[t] * 0.5f;
        __syncthreads(); // RUN-BUG(bug_barrier/shortcut)
        mine *= 2.0f;
    } else {
        __syncthreads(); // RUN-BUG(bug_barrier/main)
        mine = row[t];
    }
    float s = 0.0f;
    for (int k = 0; k < 64; ++k) s += pair[k];
    out[blockIdx.x * 128 + t] = mine / s;
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_transpose", "bug_scan", "bug_barrier"});

    // Transpose.
    {
        std::vector<float> h(W * W), want(W * W);
        for (int i = 0; i < W * W; ++i) h[i] = static_cast<float>((i * 7) % 97);
        for (int r = 0; r < W; ++r)
            for (int c = 0; c < W; ++c) want[c * W + r] = h[r * W + c];
        float* d_in = to_device(h);
        float* d_out = nullptr;
        CHECK(cudaMalloc(&d_out, W * W * sizeof(float)));
        poison(d_out, W * W * sizeof(float));
        transpose_tiles<<<dim3(W / TILE, W / TILE), dim3(TILE, ROWS)>>>(
            d_in, d_out, !is_case(which, "bug_transpose"));
        CHECK_LAUNCH();
        std::vector<float> got = to_host(d_out, W * W);
        print_result("transpose", got);
        check_result("transpose", got, want);
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
    }

    // Scan.
    {
        const int blocks = 4, n = blocks * 256;
        std::vector<int> h(n), want(n);
        for (int i = 0; i < n; ++i) h[i] = (i * 5) % 11;
        for (int b = 0; b < blocks; ++b) {
            int acc = 0;
            for (int t = 0; t < 256; ++t) want[b * 256 + t] = acc += h[b * 256 + t];
        }
        int* d_in = to_device(h);
        int* d_out = nullptr;
        CHECK(cudaMalloc(&d_out, n * sizeof(int)));
        poison(d_out, n * sizeof(int));
        scan_block<<<blocks, 256>>>(d_in, d_out, !is_case(which, "bug_scan"));
        CHECK_LAUNCH();
        std::vector<int> got = to_host(d_out, n);
        print_result("scan", got);
        check_result("scan", got, want);
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
    }

    // Row normalization: every row sums to a power of two, so each quotient is exact.
    {
        const int rows = 3, n = rows * 128;
        std::vector<float> h(n, 0.0f), want(n);
        for (int r = 0; r < rows; ++r) {
            for (int c = 0; c < 128; ++c) h[r * 128 + c] = static_cast<float>((c * 3 + r) % 4);
            float s = 0.0f;
            for (int c = 0; c < 127; ++c) s += h[r * 128 + c];
            // The last value tops the row up to 256.
            h[r * 128 + 127] = 256.0f - s;
            for (int c = 0; c < 128; ++c) want[r * 128 + c] = h[r * 128 + c] / 256.0f;
        }
        float* d_in = to_device(h);
        float* d_out = nullptr;
        CHECK(cudaMalloc(&d_out, n * sizeof(float)));
        poison(d_out, n * sizeof(float));
        normalize_rows<<<rows, 128>>>(d_in, d_out, is_case(which, "bug_barrier"));
        CHECK_LAUNCH();
        std::vector<float> got = to_host(d_out, n);
        print_result("normalize", got);
        check_result("normalize", got, want);
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
    }
    return 0;
}
