// Planted bugs for the GPU tier (tests/tests/gpu_instrument.rs): every kernel but `fill` has one
// mistake, on the line marked `BUG(<kernel>)`; the tests find the line by its marker. Sizes are
// chosen so that exactly one thread faults, which makes the recorded thread deterministic.
#include <assert.h>

// A correct kernel: the launch after each bug must still work.
extern "C" __global__ void fill(float* out, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}

// Off-by-one grid guard: `<=` lets thread n write out[n].
extern "C" __global__ void off_by_one(float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f; // BUG(off_by_one)
}

// Missing guard: the grid has one thread more than `in` has elements.
extern "C" __global__ void missing_guard(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] * 2.0f; // BUG(missing_guard)
}

// Negative index: thread 0 reads in[-1].
extern "C" __global__ void negative_index(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i - 1]; // BUG(negative_index)
}

// Row/column swap: the row stride should be `cols`, not `rows`.
extern "C" __global__ void col_sum(float* out, const float* m, int rows, int cols, int col)
{
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += m[r * rows + col]; // BUG(col_sum)
    out[0] = s;
}

// Shared tile read at tid + 1: the last thread reads past the tile.
extern "C" __global__ void shared_shift(float* out, const float* in, int n)
{
    __shared__ float tile[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = tile[t + 1]; // BUG(shared_shift)
}

// Derived pointer: `row` points into `m`; `j <= cols` runs past the last row.
extern "C" __global__ void row_fill(float* m, int rows, int cols, float v)
{
    int r = blockIdx.x;
    float* row = m + r * cols;
    for (int j = threadIdx.x; j <= cols; j += blockDim.x) row[j] = v; // BUG(row_fill)
}

// Atomic out of range: byte 255 lands in bin 256 of 256.
extern "C" __global__ void histogram_bad(unsigned int* bins, const unsigned char* data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i] + 1], 1u); // BUG(histogram_bad)
}

// Dynamic shared overflow: launched with one float too few of dynamic shared memory.
extern "C" __global__ void dyn_overflow(float* out, int n)
{
    extern __shared__ float s[];
    int t = threadIdx.x;
    s[t] = (float)t; // BUG(dyn_overflow)
    __syncthreads();
    if (t < n) out[t] = s[0];
}

// 2D grid: `x <= w` writes one past the end on the last row.
extern "C" __global__ void grid2d(float* img, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x <= w && y < h) img[y * w + x] = 1.0f; // BUG(grid2d)
}

// 3D grid: the same mistake in a volume.
extern "C" __global__ void grid3d(float* vol, int w, int h, int d)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x <= w && y < h && z < d) vol[(z * h + y) * w + x] = 1.0f; // BUG(grid3d)
}

// Pointer arithmetic and dereference: the last thread writes out[n].
extern "C" __global__ void deref(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) *(out + (i + 1)) = in[i]; // BUG(deref)
}

// Compound assignment one past the end.
extern "C" __global__ void accumulate(float* acc, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i + 1] += in[i]; // BUG(accumulate)
}

// A device assert that one thread fails.
extern "C" __global__ void checked_copy(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(i < n); // BUG(checked_copy)
    if (i < n) out[i] = in[i];
}

// Static shared 2D array: the last column's neighbour below runs off the tile.
extern "C" __global__ void tile2d(float* out)
{
    __shared__ float t[8][8];
    int x = threadIdx.x, y = threadIdx.y;
    t[y][x] = (float)(y * 8 + x);
    __syncthreads();
    out[y * 8 + x] = t[y + x / 7][x]; // BUG(tile2d)
}

// Local array: a window of 4 indexed modulo 5.
extern "C" __global__ void local_window(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float w[4];
    for (int k = 0; k < 4; ++k) w[k] = in[i] + k;
    out[i] = w[i % 5]; // BUG(local_window)
}

// Loops checked once per launch on the host over every iteration: when the host
// check fails, the launch runs the build that checks each access on the device, which names
// the exact index, thread and line.

// A column past the matrix: `col` comes from the caller and nothing checks it against `cols`.
extern "C" __global__ void loop_column_past_end(float* out, const float* m, int rows, int cols, int col)
{
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += m[r * cols + col]; // BUG(loop_column_past_end)
    out[threadIdx.x] = s;
}

// One trip too many: `r <= rows` reads a row past the matrix.
extern "C" __global__ void loop_one_trip_too_many(float* out, const float* m, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r <= rows; ++r) s += m[r * cols + c]; // BUG(loop_one_trip_too_many)
    out[c] = s;
}

// Loops whose bounds come from memory: no launch value bounds them, so each thread
// checks every access's range once before the loop, on the device, and runs the loop without
// those checks; a thread whose range fails runs the checked loop, which names the exact index,
// thread and line.

// CSR row sums: a last offset one past the values reads `vals[nnz]`.
extern "C" __global__ void csr_row_sum(float* out, const float* vals, const int* offsets, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int j = offsets[r]; j < offsets[r + 1]; ++j) s += vals[j]; // BUG(csr_row_sum)
    out[r] = s;
}

// A warp per row, its lanes striding by 32 over a length read from memory: a length one past
// the row reads into the next row, or past the matrix after the last one.
extern "C" __global__ void lane_stride_row(float* out, const float* m, const int* lens, int cols)
{
    int row = blockIdx.x;
    int lane = threadIdx.x & 31;
    int n = lens[row];
    float s = 0.0f;
    for (int c = lane; c < n; c += 32) s += m[row * cols + c]; // BUG(lane_stride_row)
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) out[row] = s;
}
