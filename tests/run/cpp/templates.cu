// Kernels whose names need demangling: one template in two instantiations, and a kernel in a
// namespace. Reports must name them as a person wrote them (`scale_add<double>`,
// `imgproc::apply_lut`), not as mangled symbols.
//
// bug_template_double: scale_add<double> is launched for N + 1 elements (scale_add<float>,
// launched right, must stay silent): thread N reads x[N] and writes y[N].
// bug_namespace: apply_lut maps 8-bit pixels through a 256-entry table with a bias of 1 (the
// table was meant for 1-based levels); the image has exactly one pixel of value 255, at
// (HOT_X, HOT_Y), whose thread reads lut[256], one past the end.
#include "common.cuh"

template <typename T>
__global__ void scale_add(T a, const T* x, T b, T* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + b; // RUN-BUG(bug_template_double)
    }
}

namespace imgproc {

__global__ void apply_lut(const unsigned char* pixels, const float* lut, float* out, int width,
                          int height, int bias)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int i = y * width + x;
    out[i] = lut[pixels[i] + bias]; // RUN-BUG(bug_namespace)
}

} // namespace imgproc

template <typename T>
static void run_scale_add(const char* name, int n_launch, int N)
{
    std::vector<T> x(N), want(N);
    for (int i = 0; i < N; ++i) {
        x[i] = static_cast<T>(i % 64);
        want[i] = static_cast<T>(2) * x[i] + static_cast<T>(1);
    }
    T* dx = to_device(x);
    T* dy = nullptr;
    CHECK(cudaMalloc(&dy, N * sizeof(T)));
    poison(dy, N * sizeof(T));
    const int block = 64;
    scale_add<T><<<(n_launch + block - 1) / block, block>>>(T(2), dx, T(1), dy, n_launch);
    CHECK_LAUNCH();
    std::vector<T> y = to_host(dy, N);
    print_result(name, y);
    check_result(name, y, want);
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_template_double", "bug_namespace"});

    const int N = 500;
    run_scale_add<float>("scale_add<float>", N, N);
    run_scale_add<double>("scale_add<double>", is_case(which, "bug_template_double") ? N + 1 : N, N);

    const int W = 64, H = 32, HOT_X = 37, HOT_Y = 21;
    std::vector<unsigned char> pixels(W * H);
    for (int i = 0; i < W * H; ++i) pixels[i] = static_cast<unsigned char>((i * 7) % 255);
    pixels[HOT_Y * W + HOT_X] = 255;
    std::vector<float> lut(256);
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<float>(255 - v) * 0.5f;
    std::vector<float> want(W * H);
    for (int i = 0; i < W * H; ++i) want[i] = lut[pixels[i]];
    unsigned char* d_pixels = to_device(pixels);
    float* d_lut = to_device(lut);
    float* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, W * H * sizeof(float)));
    poison(d_out, W * H * sizeof(float));
    dim3 block(16, 16), grid(W / 16, H / 16);
    imgproc::apply_lut<<<grid, block>>>(d_pixels, d_lut, d_out, W, H,
                                        is_case(which, "bug_namespace") ? 1 : 0);
    CHECK_LAUNCH();
    std::vector<float> out = to_host(d_out, W * H);
    print_result("apply_lut", out);
    check_result("apply_lut", out, want);
    CHECK(cudaFree(d_pixels));
    CHECK(cudaFree(d_lut));
    CHECK(cudaFree(d_out));
    return 0;
}
