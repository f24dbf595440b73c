// Memory from cudaMallocManaged and from the stream-ordered allocator (cudaMallocAsync /
// cudaFreeAsync), each with one overrun.
//
// Managed: a histogram of N samples in [0, 1] into NBINS bins, bin = (int)(x * NBINS). The
// top sample is exactly 1.0, which lands in bin NBINS unless it is clamped to the last bin.
// bug_managed: the clamp is off, so one thread does atomicAdd on bins[NBINS], one past the end.
// The host writes the samples and reads the bins through the managed pointers directly.
//
// Async: gather dst[i] = src[idx[i]] with idx reversing src (idx[i] = M - 1 - i), all three
// buffers allocated and freed on a stream. bug_async: the reversal is written M - i, so
// thread 0 reads src[M], one past the end.
#include "common.cuh"

constexpr int NBINS = 16;

__global__ void histogram(const float* x, int n, unsigned* bins, bool clamp_top)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int b = static_cast<int>(x[i] * NBINS);
    if (clamp_top && b == NBINS) b = NBINS - 1;
    atomicAdd(&bins[b], 1u); // RUN-BUG(bug_managed)
}

__global__ void gather(const float* src, const int* idx, float* dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[idx[i]]; // RUN-BUG(bug_async)
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_managed", "bug_async"});

    // Managed histogram.
    const int N = 1000;
    float* x = nullptr;
    unsigned* bins = nullptr;
    CHECK(cudaMallocManaged(&x, N * sizeof(float)));
    CHECK(cudaMallocManaged(&bins, NBINS * sizeof(unsigned)));
    for (int i = 0; i < N; ++i) x[i] = static_cast<float>(i) / static_cast<float>(N - 1);
    for (int b = 0; b < NBINS; ++b) bins[b] = 0;
    std::vector<unsigned> want_bins(NBINS, 0);
    for (int i = 0; i < N; ++i) {
        int b = static_cast<int>(x[i] * NBINS);
        ++want_bins[b == NBINS ? NBINS - 1 : b];
    }
    histogram<<<(N + 255) / 256, 256>>>(x, N, bins, !is_case(which, "bug_managed"));
    CHECK_LAUNCH();
    std::vector<unsigned> got_bins(bins, bins + NBINS);
    print_result("bins", got_bins);
    check_result("bins", got_bins, want_bins);
    CHECK(cudaFree(x));
    CHECK(cudaFree(bins));

    // Stream-ordered gather.
    const int M = 777;
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<float> src(M);
    std::vector<int> idx(M);
    const int top = is_case(which, "bug_async") ? M : M - 1;
    for (int i = 0; i < M; ++i) {
        src[i] = static_cast<float>((i * 11) % 101);
        idx[i] = top - i;
    }
    std::vector<float> want_dst(M);
    for (int i = 0; i < M; ++i) want_dst[i] = src[M - 1 - i];
    float *d_src = nullptr, *d_dst = nullptr;
    int* d_idx = nullptr;
    CHECK(cudaMallocAsync(&d_src, M * sizeof(float), stream));
    CHECK(cudaMallocAsync(&d_idx, M * sizeof(int), stream));
    CHECK(cudaMallocAsync(&d_dst, M * sizeof(float), stream));
    CHECK(cudaMemcpyAsync(d_src, src.data(), M * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(d_idx, idx.data(), M * sizeof(int), cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemsetAsync(d_dst, 0xFF, M * sizeof(float), stream));
    gather<<<(M + 127) / 128, 128, 0, stream>>>(d_src, d_idx, d_dst, M);
    CHECK(cudaGetLastError());
    std::vector<float> dst(M);
    CHECK(cudaMemcpyAsync(dst.data(), d_dst, M * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaFreeAsync(d_src, stream));
    CHECK(cudaFreeAsync(d_idx, stream));
    CHECK(cudaFreeAsync(d_dst, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    print_result("gather", dst);
    check_result("gather", dst, want_dst);
    return 0;
}
