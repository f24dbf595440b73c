// Elementwise c = a + alpha * b over three cudaMalloc buffers of N floats.
//
// bug_one_past: the element count passed to the kernel is N + 1 (a length that counts the
// terminator of a host-side list). The one-dimensional grid is sized from that count, so
// exactly one thread, global index N, reads a[N] and b[N] and writes c[N].
#include "common.cuh"

__global__ void add_scaled(const float* a, const float* b, float* c, float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + alpha * b[i]; // RUN-BUG(bug_one_past)
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_one_past"});
    const int N = 1000;
    const float alpha = 0.5f;
    std::vector<float> a(N), b(N), want(N);
    for (int i = 0; i < N; ++i) {
        a[i] = static_cast<float>(i % 97);
        b[i] = static_cast<float>((i * 7) % 31);
        want[i] = a[i] + alpha * b[i];
    }
    float* da = to_device(a);
    float* db = to_device(b);
    float* dc = nullptr;
    CHECK(cudaMalloc(&dc, N * sizeof(float)));
    poison(dc, N * sizeof(float));

    const int n = is_case(which, "bug_one_past") ? N + 1 : N;
    const int block = 128;
    add_scaled<<<(n + block - 1) / block, block>>>(da, db, dc, alpha, n);
    CHECK_LAUNCH();

    std::vector<float> c = to_host(dc, N);
    print_result("c", c);
    check_result("c", c, want);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    return 0;
}
