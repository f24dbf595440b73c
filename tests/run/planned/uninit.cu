// Reads of memory nothing wrote: the planted cases of the uninitialized-read check, written
// before the check exists. Each `bug_*` case plants one such read (the line carries
// `RUN-BUG(<case>)`); `correct` runs every kernel with its memory written first. Global memory
// counts as written by a kernel, a copy or a memset since it was allocated; shared memory by a
// thread of the block since the block began.
//
// Conventions of tests/run/cpp/common.cuh. Outputs are printed as hashes only for `correct`:
// a planted case's output depends on what the memory held, which is the point.
//
// global memory
// bug_never_written   a buffer from cudaMalloc read by a kernel before anything wrote it
//                     (`alloc` where `alloc_zeros` was meant).
// bug_copy_short      the host copies n - 1 elements of n; the kernel reads all n.
// bug_memset_short    cudaMemset over n * 4 - 2 bytes: the last element's two high bytes
//                     are not written.
// bug_half_written    one kernel writes the even elements, the next reads them all.
// bug_pitch_padding   cudaMemcpy2D writes each row's width; the kernel reads a row to the pitch.
// bug_accumulate      a histogram accumulated with atomicAdd into bins nobody zeroed.
// bug_async_pool      cudaMallocAsync memory, written for the first half only, read whole.
// bug_struct_field    a kernel fills three of an array of structs' four fields; the next
//                     reads the fourth.
// shared memory
// bug_shared_early    a tile read one iteration early: the first round reads its neighbour's
//                     slot before anyone filled it.
// bug_shared_tail     a block reduction over a non-power-of-two block: the first step reads
//                     s[t + 128] for slots the 160-thread block never fills (in bounds of the
//                     256-slot array).
// bug_shared_pad      a read of a padded tile that reaches the padding column (`tile[y][32]`,
//                     inside the array), which no thread writes.
#include "../cpp/common.cuh"

struct Particle {
    float x, y, z, mass;
};

__global__ void scale_read(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i]; // RUN-BUG(scale)
}

__global__ void write_even(float* a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && (i % 2 == 0)) a[i] = static_cast<float>(i);
}

__global__ void write_all(float* a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = static_cast<float>(i);
}

__global__ void row_sums(const float* m, size_t pitch_elems, int cols_read, int rows, float* out)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols_read; ++c) s += m[r * pitch_elems + c]; // RUN-BUG(bug_pitch_padding)
    out[r] = s;
}

__global__ void histogram(const int* keys, int n, unsigned* bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[keys[i] % 16], 1u); // RUN-BUG(bug_accumulate)
}

__global__ void fill_particles(Particle* p, int n, bool with_mass)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    p[i].x = static_cast<float>(i);
    p[i].y = static_cast<float>(2 * i);
    p[i].z = static_cast<float>(3 * i);
    if (with_mass) p[i].mass = 1.0f;
}

__global__ void total_mass(const Particle* p, int n, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = p[i].mass * p[i].x; // RUN-BUG(bug_struct_field)
}

// Each round every thread reads its left neighbour's slot, then writes its own.
__global__ void shift_rounds(const float* in, float* out, bool planted)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    float v = in[blockIdx.x * 128 + t];
    if (!planted) {
        s[t] = v;
        __syncthreads();
    }
    for (int r = 0; r < 3; ++r) {
        float left = s[(t + 127) % 128]; // RUN-BUG(bug_shared_early)
        __syncthreads();
        v += left;
        s[t] = v;
        __syncthreads();
    }
    out[blockIdx.x * 128 + t] = v;
}

// A tree reduction of blockDim.x <= 256 values; `fill_tail` writes 0 to the unused slots.
__global__ void reduce_block(const float* in, float* out, bool fill_tail)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    if (fill_tail && t + blockDim.x < 256) s[t + blockDim.x] = 0.0f;
    if (fill_tail && blockDim.x < 128 && t + 2 * blockDim.x < 256) s[t + 2 * blockDim.x] = 0.0f;
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride]; // RUN-BUG(bug_shared_tail)
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

// 32 x 32 tile with one padding column; the planted read goes one column too far.
__global__ void transpose_pad(const float* in, float* out, bool planted)
{
    __shared__ float tile[32][33];
    int x = threadIdx.x, y = threadIdx.y;
    tile[y][x] = in[y * 32 + x];
    __syncthreads();
    int col = planted && x == 31 ? 32 : x;
    out[y * 32 + x] = tile[x][y] + tile[y][col]; // RUN-BUG(bug_shared_pad)
}

int main(int argc, char** argv)
{
    const char* which = pick_case(
        argc, argv,
        {"correct", "bug_never_written", "bug_copy_short", "bug_memset_short", "bug_half_written",
         "bug_pitch_padding", "bug_accumulate", "bug_async_pool", "bug_struct_field",
         "bug_shared_early", "bug_shared_tail", "bug_shared_pad"});
    const bool all = is_case(which, "correct");
    auto want = [&](const char* c) { return all || is_case(which, c); };
    auto show = [&](const char* name, const auto& v) {
        if (all) print_result(name, v);
    };
    const int n = 1024;
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 17);
    float* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, n * sizeof(float)));

    if (want("bug_never_written")) {
        float* a = nullptr;
        CHECK(cudaMalloc(&a, n * sizeof(float)));
        if (all) CHECK(cudaMemset(a, 0, n * sizeof(float)));
        scale_read<<<(n + 255) / 256, 256>>>(a, d_out, n);
        CHECK_LAUNCH();
        show("never_written", to_host(d_out, n));
        CHECK(cudaFree(a));
    }
    if (want("bug_copy_short")) {
        float* a = nullptr;
        CHECK(cudaMalloc(&a, n * sizeof(float)));
        CHECK(cudaMemcpy(a, h.data(), (all ? n : n - 1) * sizeof(float), cudaMemcpyHostToDevice));
        scale_read<<<(n + 255) / 256, 256>>>(a, d_out, n);
        CHECK_LAUNCH();
        show("copy_short", to_host(d_out, n));
        CHECK(cudaFree(a));
    }
    if (want("bug_memset_short")) {
        float* a = nullptr;
        CHECK(cudaMalloc(&a, n * sizeof(float)));
        CHECK(cudaMemset(a, 0, all ? n * sizeof(float) : n * sizeof(float) - 2));
        scale_read<<<(n + 255) / 256, 256>>>(a, d_out, n);
        CHECK_LAUNCH();
        show("memset_short", to_host(d_out, n));
        CHECK(cudaFree(a));
    }
    if (want("bug_half_written")) {
        float* a = nullptr;
        CHECK(cudaMalloc(&a, n * sizeof(float)));
        if (all) write_all<<<(n + 255) / 256, 256>>>(a, n);
        else write_even<<<(n + 255) / 256, 256>>>(a, n);
        CHECK_LAUNCH();
        scale_read<<<(n + 255) / 256, 256>>>(a, d_out, n);
        CHECK_LAUNCH();
        show("half_written", to_host(d_out, n));
        CHECK(cudaFree(a));
    }
    if (want("bug_pitch_padding")) {
        const int rows = 40, cols = 100;
        float* m = nullptr;
        size_t pitch = 0;
        CHECK(cudaMallocPitch(&m, &pitch, cols * sizeof(float), rows));
        std::vector<float> hm(rows * cols, 1.0f);
        CHECK(cudaMemcpy2D(m, pitch, hm.data(), cols * sizeof(float), cols * sizeof(float), rows,
                           cudaMemcpyHostToDevice));
        const int cols_read = all ? cols : cols + 1;
        row_sums<<<1, 64>>>(m, pitch / sizeof(float), cols_read, rows, d_out);
        CHECK_LAUNCH();
        show("pitch", to_host(d_out, rows));
        CHECK(cudaFree(m));
    }
    if (want("bug_accumulate")) {
        std::vector<int> keys(n);
        for (int i = 0; i < n; ++i) keys[i] = (i * 7) % 23;
        int* d_keys = to_device(keys);
        unsigned* bins = nullptr;
        CHECK(cudaMalloc(&bins, 16 * sizeof(unsigned)));
        if (all) CHECK(cudaMemset(bins, 0, 16 * sizeof(unsigned)));
        histogram<<<(n + 255) / 256, 256>>>(d_keys, n, bins);
        CHECK_LAUNCH();
        show("histogram", to_host(bins, 16));
        CHECK(cudaFree(d_keys));
        CHECK(cudaFree(bins));
    }
    if (want("bug_async_pool")) {
        cudaStream_t st;
        CHECK(cudaStreamCreate(&st));
        float* a = nullptr;
        CHECK(cudaMallocAsync(&a, n * sizeof(float), st));
        CHECK(cudaMemcpyAsync(a, h.data(), (all ? n : n / 2) * sizeof(float),
                              cudaMemcpyHostToDevice, st));
        scale_read<<<(n + 255) / 256, 256, 0, st>>>(a, d_out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaFreeAsync(a, st));
        CHECK(cudaStreamSynchronize(st));
        CHECK(cudaStreamDestroy(st));
        show("async_pool", to_host(d_out, n));
    }
    if (want("bug_struct_field")) {
        Particle* p = nullptr;
        CHECK(cudaMalloc(&p, n * sizeof(Particle)));
        fill_particles<<<(n + 255) / 256, 256>>>(p, n, all);
        CHECK_LAUNCH();
        total_mass<<<(n + 255) / 256, 256>>>(p, n, d_out);
        CHECK_LAUNCH();
        show("particles", to_host(d_out, n));
        CHECK(cudaFree(p));
    }
    float* d_in = to_device(h);
    if (want("bug_shared_early")) {
        shift_rounds<<<n / 128, 128>>>(d_in, d_out, !all);
        CHECK_LAUNCH();
        show("shift_rounds", to_host(d_out, (n / 128) * 128));
    }
    if (want("bug_shared_tail")) {
        // 160 threads: slots 160..255 are left unwritten unless `fill_tail`.
        reduce_block<<<n / 160, 160>>>(d_in, d_out, all);
        CHECK_LAUNCH();
        show("reduce_block", to_host(d_out, n / 160));
    }
    if (want("bug_shared_pad")) {
        transpose_pad<<<1, dim3(32, 32)>>>(d_in, d_out, !all);
        CHECK_LAUNCH();
        show("transpose_pad", to_host(d_out, 1024));
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return 0;
}
