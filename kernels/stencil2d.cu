// 5-point Jacobi stencil on a width x height grid with a one-cell halo loaded into shared memory.
// Launch with block (BX, BY, 1) = (32, 8, 1) and grid covering the grid; border cells copy through.
#define BX 32
#define BY 8

extern "C" __global__ void stencil2d(float* __restrict__ out, const float* __restrict__ in,
                                     int width, int height)
{
    __shared__ float tile[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    int tx = threadIdx.x + 1;
    int ty = threadIdx.y + 1;
    bool inside = x < width && y < height;

    tile[ty][tx] = inside ? in[y * width + x] : 0.0f;
    // Halo: edge threads of the block also load the neighbouring cell outside it.
    if (threadIdx.x == 0) tile[ty][0] = (inside && x > 0) ? in[y * width + x - 1] : 0.0f;
    if (threadIdx.x == BX - 1) tile[ty][BX + 1] = (y < height && x + 1 < width) ? in[y * width + x + 1] : 0.0f;
    if (threadIdx.y == 0) tile[0][tx] = (inside && y > 0) ? in[(y - 1) * width + x] : 0.0f;
    if (threadIdx.y == BY - 1) tile[BY + 1][tx] = (x < width && y + 1 < height) ? in[(y + 1) * width + x] : 0.0f;
    __syncthreads();

    if (!inside) return;
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
        out[y * width + x] = tile[ty][tx];
    } else {
        out[y * width + x] = 0.2f * (tile[ty][tx] + tile[ty][tx - 1] + tile[ty][tx + 1]
                                     + tile[ty - 1][tx] + tile[ty + 1][tx]);
    }
}
