// out = in^T for a rows x cols row-major matrix, through a 32 x 33 shared tile (the extra column
// avoids shared-memory bank conflicts). Launch with block (32, 8, 1), grid (ceil(cols/32), ceil(rows/32), 1).
#define TDIM 32
#define ROWS_PER_PASS 8

extern "C" __global__ void transpose(float* __restrict__ out, const float* __restrict__ in,
                                     int rows, int cols)
{
    __shared__ float tile[TDIM][TDIM + 1];
    int x = blockIdx.x * TDIM + threadIdx.x;
    int y = blockIdx.y * TDIM + threadIdx.y;
    for (int j = 0; j < TDIM; j += ROWS_PER_PASS) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TDIM + threadIdx.x;
    y = blockIdx.x * TDIM + threadIdx.y;
    for (int j = 0; j < TDIM; j += ROWS_PER_PASS) {
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
