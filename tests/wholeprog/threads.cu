// A program that feeds each GPU from its own CPU thread and is told by a stream callback when
// a batch is done, in the shape of many samples' portable thread helpers: the thread entry's
// return type is a macro defined once for Windows and once for POSIX, and the callback carries
// the CUDA runtime's calling convention (`CUDART_CB`). Written for cudacheck's tests.
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#if defined(WIN32) || defined(_WIN32) || defined(WIN64) || defined(_WIN64)
#include <windows.h>
typedef HANDLE Thread;
#define THREAD_ENTRY unsigned WINAPI
#define THREAD_RETURN return 0
#else
#include <pthread.h>
typedef pthread_t Thread;
#define THREAD_ENTRY void *
#define THREAD_RETURN return NULL
#endif

struct Batch {
    int device;
    int n;
    float *host;
    float *dev;
    cudaStream_t stream;
};

__global__ void scale(float *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

__global__ void offset(float *x, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += b;
}

static int batches_done = 0;

void CUDART_CB batch_done(cudaStream_t stream, cudaError_t status, void *data) {
    Batch *b = (Batch *)data;
    if (status != cudaSuccess) fprintf(stderr, "device %d: %s\n", b->device, cudaGetErrorString(status));
    batches_done++;
}

THREAD_ENTRY feed(void *arg) {
    Batch *b = (Batch *)arg;
    cudaSetDevice(b->device);
    cudaStreamCreate(&b->stream);
    cudaMalloc(&b->dev, b->n * sizeof(float));
    cudaMemcpyAsync(b->dev, b->host, b->n * sizeof(float), cudaMemcpyHostToDevice, b->stream);
    scale<<<(b->n + 255) / 256, 256, 0, b->stream>>>(b->dev, 2.0f, b->n);
    offset<<<(b->n + 255) / 256, 256, 0, b->stream>>>(b->dev, 1.0f, b->n);
    cudaMemcpyAsync(b->host, b->dev, b->n * sizeof(float), cudaMemcpyDeviceToHost, b->stream);
    cudaStreamAddCallback(b->stream, batch_done, b, 0);
    THREAD_RETURN;
}

int main() {
    int devices = 0;
    cudaGetDeviceCount(&devices);
    Batch *batches = (Batch *)calloc(devices, sizeof(Batch));
    for (int d = 0; d < devices; ++d) {
        batches[d].device = d;
        batches[d].n = 1 << 20;
        batches[d].host = (float *)malloc(batches[d].n * sizeof(float));
        feed(&batches[d]);
    }
    cudaDeviceSynchronize();
    printf("%d batches\n", batches_done);
    return 0;
}
