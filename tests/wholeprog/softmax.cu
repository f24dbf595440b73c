// A whole program in the style of kernel benchmark suites: a CPU reference, several versions
// of one kernel (plain, shared memory, cooperative groups, a template), host launchers and a
// dispatch by version number, and a `main` that allocates, copies, checks and times. Only the
// kernels are device code; nvcc's device pass drops the rest. Written for cudacheck's tests.
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <float.h>
#include <unistd.h>
#include <omp.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "common.h"

namespace cg = cooperative_groups;

void softmax_cpu(float* out, const float* in, int rows, int cols) {
#pragma omp parallel for
    for (int r = 0; r < rows; r++) {
        float m = -FLT_MAX, s = 0.0f;
        for (int c = 0; c < cols; c++) m = fmaxf(m, in[r * cols + c]);
        for (int c = 0; c < cols; c++) s += expf(in[r * cols + c] - m);
        for (int c = 0; c < cols; c++) out[r * cols + c] = expf(in[r * cols + c] - m) / s;
    }
}

// Version 1: one thread per row.
__global__ void softmax_kernel1(float* out, const float* in, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -INFINITY, s = 0.0f;
    for (int c = 0; c < cols; c++) m = fmaxf(m, in[r * cols + c]);
    for (int c = 0; c < cols; c++) s += expf(in[r * cols + c] - m);
    for (int c = 0; c < cols; c++) out[r * cols + c] = expf(in[r * cols + c] - m) / s;
}

// Version 2: one block per row, a shared-memory reduction.
__global__ void softmax_kernel2(float* out, const float* in, int rows, int cols) {
    extern __shared__ float partial[];
    const float* x = in + blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
    partial[threadIdx.x] = m;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (threadIdx.x < step) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + step]);
        __syncthreads();
    }
    m = partial[0];
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(x[c] - m);
    s = warp_sum(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = expf(x[c] - m) / s;
}

// Version 3: one warp per row, cooperative groups.
__global__ void softmax_kernel3(float* out, const float* in, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int r = blockIdx.x * (blockDim.x / 32) + warp.meta_group_rank();
    if (r >= rows) return;
    const float* x = in + r * cols;
    float m = -INFINITY;
    for (int c = warp.thread_rank(); c < cols; c += warp.size()) m = fmaxf(m, x[c]);
    m = cg::reduce(warp, m, cg::greater<float>());
    float s = 0.0f;
    for (int c = warp.thread_rank(); c < cols; c += warp.size()) s += expf(x[c] - m);
    s = cg::reduce(warp, s, cg::plus<float>());
    for (int c = warp.thread_rank(); c < cols; c += warp.size()) out[r * cols + c] = expf(x[c] - m) / s;
}

// Version 4: a template on the number of columns each thread keeps in registers.
template <int PER_THREAD>
__global__ void softmax_kernel4(float* out, const float* in, int rows, int cols) {
    float v[PER_THREAD];
    int r = blockIdx.x;
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < PER_THREAD; k++) {
        int c = threadIdx.x + k * blockDim.x;
        v[k] = c < cols ? in[r * cols + c] : -INFINITY;
        m = fmaxf(m, v[k]);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER_THREAD; k++) s += expf(v[k] - m);
    s = warp_sum(s);
#pragma unroll
    for (int k = 0; k < PER_THREAD; k++) {
        int c = threadIdx.x + k * blockDim.x;
        if (c < cols) out[r * cols + c] = expf(v[k] - m) / s;
    }
}

void softmax1(float* out, const float* in, int rows, int cols, int block) {
    softmax_kernel1<<<div_up(rows, block), block>>>(out, in, rows, cols);
    CHECK(cudaGetLastError());
}

void softmax2(float* out, const float* in, int rows, int cols, int block) {
    softmax_kernel2<<<rows, block, block * sizeof(float)>>>(out, in, rows, cols);
    CHECK(cudaGetLastError());
}

void softmax3(float* out, const float* in, int rows, int cols, int block) {
    softmax_kernel3<<<div_up(rows * 32, block), block>>>(out, in, rows, cols);
    CHECK(cudaGetLastError());
}

void softmax4(float* out, const float* in, int rows, int cols, int block) {
    if (cols <= 4 * block) {
        softmax_kernel4<4><<<rows, block>>>(out, in, rows, cols);
    } else {
        softmax_kernel4<8><<<rows, block>>>(out, in, rows, cols);
    }
    CHECK(cudaGetLastError());
}

void softmax(int version, float* out, const float* in, int rows, int cols, int block) {
    switch (version) {
    case 1: softmax1(out, in, rows, cols, block); break;
    case 2: softmax2(out, in, rows, cols, block); break;
    case 3: softmax3(out, in, rows, cols, block); break;
    case 4: softmax4(out, in, rows, cols, block); break;
    default: printf("no version %d\n", version); exit(EXIT_FAILURE);
    }
}

int main(int argc, char** argv) {
    setup_device();
    int version = 1, opt;
    while ((opt = getopt(argc, argv, "v:")) != -1) {
        if (opt == 'v') version = atoi(optarg);
    }
    printf("%d OpenMP threads\n", omp_get_max_threads());
    const int rows = 4096, cols = 1024;
    float* in = random_floats((size_t)rows * cols);
    float* ref = (float*)malloc((size_t)rows * cols * sizeof(float));
    softmax_cpu(ref, in, rows, cols);
    float *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, (size_t)rows * cols * sizeof(float)));
    CHECK(cudaMalloc(&d_out, (size_t)rows * cols * sizeof(float)));
    CHECK(cudaMemcpy(d_in, in, (size_t)rows * cols * sizeof(float), cudaMemcpyHostToDevice));
    BenchContext ctx = {blas, 0, 100};
    for (int block : {64, 128, 256, 512}) {
        double t = time_launches(ctx.repeats, softmax, version, d_out, d_in, rows, cols, block);
        printf("block %4d: %.3f ms\n", block, t * 1e3);
    }
    free(in);
    free(ref);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return 0;
}
