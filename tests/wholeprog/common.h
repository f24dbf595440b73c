// Host utilities shared by the whole-program fixtures, in the style of benchmark programs:
// error checking, random inputs, a cuBLAS handle and a wall-clock timer, beside two device
// helpers the kernels use. Written for cudacheck's tests.
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define WARP 32

extern cudaDeviceProp device_props;
static cublasHandle_t blas;
static size_t scratch_bytes = 8 << 20;
int sm_count = 0;

template <class T>
__host__ __device__ T div_up(T a, T b) { return (a + b - 1) / b; }

__device__ float warp_sum(float v) {
    for (int o = WARP / 2; o > 0; o /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

void check_cuda(cudaError_t e, const char* file, int line) {
    if (e != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s\n", file, line, cudaGetErrorString(e));
        exit(EXIT_FAILURE);
    }
}
#define CHECK(e) check_cuda((e), __FILE__, __LINE__)

void check_blas(cublasStatus_t s, const char* file, int line) {
    if (s != CUBLAS_STATUS_SUCCESS) {
        printf("cuBLAS error %d at %s:%d\n", (int)s, file, line);
        exit(EXIT_FAILURE);
    }
}
#define CHECK_BLAS(s) check_blas((s), __FILE__, __LINE__)

typedef struct {
    cublasHandle_t handle;
    cudaStream_t stream;
    int repeats;
} BenchContext;

struct WallTimer {
    timespec start;
    void begin() { clock_gettime(CLOCK_MONOTONIC, &start); }
    double seconds() const {
        timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (now.tv_sec - start.tv_sec) + 1e-9 * (now.tv_nsec - start.tv_nsec);
    }
};

float* random_floats(size_t n) {
    float* p = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        p[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
    }
    return p;
}

void setup_device() {
    srand(7);
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDeviceProperties(&device_props, 0));
    sm_count = device_props.multiProcessorCount;
    CHECK_BLAS(cublasCreate(&blas));
}

template <class Launch, class... Args>
double time_launches(int repeats, Launch launch, Args... args) {
    WallTimer t;
    t.begin();
    for (int i = 0; i < repeats; i++) {
        launch(args...);
    }
    CHECK(cudaDeviceSynchronize());
    return t.seconds() / repeats;
}
