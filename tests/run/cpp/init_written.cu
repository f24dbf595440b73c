// Memory a kernel wrote, under `cudacheck run --init`: one kernel fills a buffer nothing else
// wrote, then eight launches read it. A launch whose reachable memory is all known written
// needs no lookups of global memory's shadow; the interposer learns that a kernel filled a
// buffer by scanning the buffer's shadow before the next launch that reads it. The summary's
// `init:` line counts the launches that made lookups (`init_global_launches` in the manifest).
// `correct`: `fill` writes all of `a` (it looks up: `a` has unwritten bytes), then eight
// `scale` launches read `a` into `out` (memset first); the first one's scan finds `a` full, so
// none of the eight looks up. `bug_fill_short`: `fill` writes all but the last element, which
// every `scale` reads: reported, and every launch looks up (scans at the 1st, 2nd, 4th and 8th
// read find `a` still short). Both print the first n - 1 results, checked against the CPU.
#include "common.cuh"

__global__ void fill(float* a, int upto)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < upto) a[i] = 0.5f * static_cast<float>(i % 17);
}

__global__ void scale(float* out, const float* a, int n, float k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = k * a[i]; // RUN-BUG(bug_fill_short)
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_fill_short"});
    const bool short_fill = is_case(which, "bug_fill_short");
    const int n = 5000, rounds = 8;
    float *a = nullptr, *out = nullptr;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMemset(out, 0, n * sizeof(float)));
    fill<<<(n + 255) / 256, 256>>>(a, short_fill ? n - 1 : n);
    CHECK_LAUNCH();
    for (int r = 1; r <= rounds; ++r) {
        scale<<<(n + 127) / 128, 128>>>(out, a, n, static_cast<float>(r));
        CHECK_LAUNCH();
    }
    std::vector<float> got = to_host(out, n), want(n - 1);
    got.resize(n - 1);
    for (int i = 0; i < n - 1; ++i) want[i] = static_cast<float>(rounds) * 0.5f * static_cast<float>(i % 17);
    print_result("scale", got);
    check_result("scale", got, want);
    CHECK(cudaFree(a));
    CHECK(cudaFree(out));
    return 0;
}
