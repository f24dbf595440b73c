// Reads of memory nothing wrote, in styles of their own (`cudacheck run --init`): a grid-stride
// reduction over a buffer an asynchronous copy filled three quarters of, float4 loads of a
// buffer an asynchronous memset left two bytes short of, a reversal of a buffer a device-to-device
// copy filled half of, a buffer allocated where a freed and fully written one was, a struct of
// pointers whose second array nothing wrote, a pitched image a 2D memset left the last column
// of unwritten, and a 3-point stencil whose tile's right halo no thread loads (shared memory).
// Each bug case then launches a healthy kernel on written memory and checks
// it against the CPU (`check next: ok`, the same with and without the checker); `correct`
// writes everything first and prints every result.
#include "common.cuh"

struct Pair {
    const float* a;
    const float* b;
    int n;
};

__global__ void sum_squares(const float* x, int n, float* out)
{
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc += x[i] * x[i]; // RUN-BUG(bug_stride_copy_async)
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void norms4(const float4* v, int n4, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 q = v[i]; // RUN-BUG(bug_vec4_memset)
        out[i] = q.x + q.y + q.z + q.w;
    }
}

__global__ void reverse(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[n - 1 - i]; // RUN-BUG(bug_dtod_half)
}

__global__ void fill_iota(int* a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = i;
}

__global__ void add_one(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + 1; // RUN-BUG(bug_reuse_after_free)
}

__global__ void dot_terms(Pair p, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) out[i] = p.a[i] * p.b[i]; // RUN-BUG(bug_struct_of_ptrs)
}

__global__ void last_column(const unsigned char* img, size_t pitch, int width, int rows,
                            unsigned* out)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) out[r] = img[r * pitch + width - 1]; // RUN-BUG(bug_memset2d_narrow)
}

// out[g] = in[g - 1] + in[g] + in[g + 1] through a tile with a halo on each side; the right
// halo is loaded by the block's last thread unless `forget_right`.
__global__ void stencil3(const float* in, float* out, int n, bool forget_right)
{
    __shared__ float tile[128 + 2];
    int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    tile[t + 1] = g < n ? in[g] : 0.0f;
    if (t == 0) tile[0] = g > 0 ? in[g - 1] : 0.0f;
    if (t == blockDim.x - 1 && !forget_right) tile[t + 2] = g + 1 < n ? in[g + 1] : 0.0f;
    __syncthreads();
    if (g < n) out[g] = tile[t] + tile[t + 1] + tile[t + 2]; // RUN-BUG(bug_shared_halo)
}

// A healthy launch on written memory after the planted read: y = 2x + 1, checked on the CPU.
static void next_launch_is_healthy(int n)
{
    std::vector<int> h(n);
    for (int i = 0; i < n; ++i) h[i] = 3 * i - 7;
    int* d_in = to_device(h);
    int* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, n * sizeof(int)));
    poison(d_out, n * sizeof(int));
    add_one<<<(n + 127) / 128, 128>>>(d_in, d_out, n);
    CHECK_LAUNCH();
    std::vector<int> want(n);
    for (int i = 0; i < n; ++i) want[i] = h[i] + 1;
    check_result("next", to_host(d_out, n), want);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
}

int main(int argc, char** argv)
{
    const char* which =
        pick_case(argc, argv,
                  {"correct", "bug_stride_copy_async", "bug_vec4_memset", "bug_dtod_half",
                   "bug_reuse_after_free", "bug_struct_of_ptrs", "bug_memset2d_narrow",
                   "bug_shared_halo"});
    const bool all = is_case(which, "correct");
    auto want = [&](const char* c) { return all || is_case(which, c); };
    auto show = [&](const char* name, const auto& v) {
        if (all) print_result(name, v);
    };
    const int n = 3000;
    std::vector<float> hf(n);
    for (int i = 0; i < n; ++i) hf[i] = 0.25f * static_cast<float>(i % 29) - 1.0f;

    if (want("bug_stride_copy_async")) {
        cudaStream_t st;
        CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        float *x = nullptr, *out = nullptr;
        CHECK(cudaMalloc(&x, n * sizeof(float)));
        CHECK(cudaMalloc(&out, 4 * 64 * sizeof(float)));
        CHECK(cudaMemsetAsync(out, 0xFF, 4 * 64 * sizeof(float), st));
        CHECK(cudaMemcpyAsync(x, hf.data(), (all ? n : 3 * n / 4) * sizeof(float),
                              cudaMemcpyHostToDevice, st));
        sum_squares<<<4, 64, 0, st>>>(x, n, out);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(st));
        show("sum_squares", to_host(out, 4 * 64));
        CHECK(cudaFree(x));
        CHECK(cudaFree(out));
        CHECK(cudaStreamDestroy(st));
    }
    if (want("bug_vec4_memset")) {
        const int n4 = n / 4;
        float4* v = nullptr;
        float* out = nullptr;
        CHECK(cudaMalloc(&v, n4 * sizeof(float4)));
        CHECK(cudaMalloc(&out, n4 * sizeof(float)));
        poison(out, n4 * sizeof(float));
        CHECK(cudaMemsetAsync(v, 0, all ? n4 * sizeof(float4) : n4 * sizeof(float4) - 2));
        norms4<<<(n4 + 127) / 128, 128>>>(v, n4, out);
        CHECK_LAUNCH();
        show("norms4", to_host(out, n4));
        CHECK(cudaFree(v));
        CHECK(cudaFree(out));
    }
    if (want("bug_dtod_half")) {
        std::vector<int> hi(n);
        for (int i = 0; i < n; ++i) hi[i] = i * i % 1009;
        int* src = to_device(hi);
        int *dst = nullptr, *out = nullptr;
        CHECK(cudaMalloc(&dst, n * sizeof(int)));
        CHECK(cudaMalloc(&out, n * sizeof(int)));
        poison(out, n * sizeof(int));
        CHECK(cudaMemcpy(dst, src, (all ? n : n / 2) * sizeof(int), cudaMemcpyDeviceToDevice));
        reverse<<<(n + 255) / 256, 256>>>(dst, out, n);
        CHECK_LAUNCH();
        show("reverse", to_host(out, n));
        CHECK(cudaFree(src));
        CHECK(cudaFree(dst));
        CHECK(cudaFree(out));
    }
    if (want("bug_reuse_after_free")) {
        int *a = nullptr, *out = nullptr;
        CHECK(cudaMalloc(&out, n * sizeof(int)));
        poison(out, n * sizeof(int));
        CHECK(cudaMalloc(&a, n * sizeof(int)));
        fill_iota<<<(n + 255) / 256, 256>>>(a, n);
        CHECK_LAUNCH();
        CHECK(cudaFree(a));
        // Likely the same address: what the freed buffer held does not count for this one.
        CHECK(cudaMalloc(&a, n * sizeof(int)));
        if (all) fill_iota<<<(n + 255) / 256, 256>>>(a, n);
        add_one<<<(n + 255) / 256, 256>>>(a, out, n);
        CHECK_LAUNCH();
        show("add_one", to_host(out, n));
        CHECK(cudaFree(a));
        CHECK(cudaFree(out));
    }
    if (want("bug_struct_of_ptrs")) {
        float *a = to_device(hf), *b = nullptr, *out = nullptr;
        CHECK(cudaMalloc(&b, n * sizeof(float)));
        CHECK(cudaMalloc(&out, n * sizeof(float)));
        poison(out, n * sizeof(float));
        if (all) CHECK(cudaMemcpy(b, hf.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        dot_terms<<<(n + 255) / 256, 256>>>(Pair{a, b, n}, out);
        CHECK_LAUNCH();
        show("dot_terms", to_host(out, n));
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
        CHECK(cudaFree(out));
    }
    if (want("bug_memset2d_narrow")) {
        const int width = 77, rows = 50;
        unsigned char* img = nullptr;
        unsigned* out = nullptr;
        size_t pitch = 0;
        CHECK(cudaMallocPitch(&img, &pitch, width, rows));
        CHECK(cudaMalloc(&out, rows * sizeof(unsigned)));
        poison(out, rows * sizeof(unsigned));
        CHECK(cudaMemset2D(img, pitch, 7, all ? width : width - 1, rows));
        last_column<<<1, 64>>>(img, pitch, width, rows, out);
        CHECK_LAUNCH();
        show("last_column", to_host(out, rows));
        CHECK(cudaFree(img));
        CHECK(cudaFree(out));
    }
    if (want("bug_shared_halo")) {
        float* in = to_device(hf);
        float* out = nullptr;
        CHECK(cudaMalloc(&out, n * sizeof(float)));
        poison(out, n * sizeof(float));
        stencil3<<<(n + 127) / 128, 128>>>(in, out, n, !all);
        CHECK_LAUNCH();
        show("stencil3", to_host(out, n));
        CHECK(cudaFree(in));
        CHECK(cudaFree(out));
    }
    next_launch_is_healthy(1000);
    return 0;
}
