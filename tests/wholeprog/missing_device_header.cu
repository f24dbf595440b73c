// A kernel that needs a header nobody passed the directory of: `tile_config.h` defines the
// tile the kernel is written for. Its error must name the header and the fix, not hide it.
// Written for cudacheck's tests.
#include <cuda_runtime.h>
#include <time.h>
#include "tile_config.h"

__global__ void tiled_copy(float* out, const float* in, int n) {
    __shared__ float tile[TILE_ROWS * TILE_COLS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tile[threadIdx.x] = in[i];
    __syncthreads();
    if (i < n) out[i] = tile[threadIdx.x];
}

int main() {
    clock_t start = clock();
    printf("%ld\n", (long)(clock() - start));
    return 0;
}
