// Kernels of the Rust programs (tests/run/rust), loaded from PTX text embedded in the binary.
// kernels.ptx is generated from this file: `scripts/run-programs.sh ptx` (nvcc -ptx
// -arch=compute_90 -lineinfo), so reports can name these lines. The line of each planted bad
// access carries a RUN-BUG marker naming its case; the checker takes the expected line from it.
// Plain C ABI names (extern "C"): what Rust projects loading PTX usually write.

// out[i] = a[i] + b[i].
extern "C" __global__ void add(const float* a, const float* b, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i]; // RUN-BUG(bug_shape_too_long)
}

// x[i] *= s; launched with a block size that does not fit in bug_block_size.
extern "C" __global__ void scale(float* x, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s;
}

// out[r] = sum of the `cols` elements of row r of a strided view: rows are `ld` apart.
extern "C" __global__ void row_sums(const float* m, int ld, int rows, int cols, float* out)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) {
        s += m[r * ld + c]; // RUN-BUG(bug_view_stride)
    }
    out[r] = s;
}

// out[i] = p[i] - p[i - lag]: p must have `lag` valid elements before it.
extern "C" __global__ void lag_diff(const float* p, float* out, int n, int lag)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float earlier = p[i - lag]; // RUN-BUG(bug_interior_below)
        out[i] = p[i] - earlier;
    }
}
