// Loop shapes whose accesses are checked once per launch over every iteration:
// each kernel's loads and stores inside its loop have offsets affine in the loop's counter and
// launch values. Written for the tests of `cudacheck_core::instrument::guard` (`Counted`).

// A thread per column, a loop over rows: the address is a pointer stepping by `cols`.
extern "C" __global__ void column_sum(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += in[r * cols + c];
    out[c] = s;
}

// A strided loop with a runtime trip count and stride.
extern "C" __global__ void strided_scale(float* x, int count, int stride, float a) {
    int t = threadIdx.x;
    for (int k = 0; k < count; ++k) x[t + k * stride] *= a;
}

// A 3-D stencil's z loop: each thread walks one (x, y) column through the z planes.
extern "C" __global__ void z_column_diff(const float* in, float* out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    int plane = nx * ny;
    for (int z = 1; z < nz; ++z) {
        int i = z * plane + y * nx + x;
        out[i] = in[i] - in[i - plane];
    }
}

// A row loop counting down.
extern "C" __global__ void row_sum_backwards(const float* in, float* out, int cols) {
    int r = blockIdx.x;
    float s = 0.0f;
    for (int c = cols - 1; c >= 0; --c) s += in[r * cols + c];
    if (threadIdx.x == 0) out[r] = s;
}

// Pointers bumped by 64-bit runtime strides; NVRTC unrolls the loop and merges each pointer
// through a copy (`mov`) at the bottom.
extern "C" __global__ void bump_copy(float* __restrict__ out, const float* __restrict__ in,
                                     long long ostride, long long istride, int lanes, int iters)
{
    int lane = blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const float* s = in + lane;
    float* d = out + lane;
    for (int k = 0; k < iters; ++k) {
        *d = 2.0f * *s;
        s += istride;
        d += ostride;
    }
}

// A z loop whose neighbours are read only inside the boundary (`z > 0 && z < nz - 1`): NVRTC
// unrolls it by four and tests each copy's `z` (`z != 0` in the first), recomputing the
// remainder loop's count after testing it. The guards on the counter bound the pointer
// stepped beside it.
extern "C" __global__ void z_guarded_neighbours(float* __restrict__ out,
                                                const float* __restrict__ in, int n, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    for (int z = 0; z < nz; ++z) {
        size_t i = (size_t)z * n + x;
        if (z > 0 && z < nz - 1) {
            out[i] = in[i - n] + in[i + n];
        } else {
            out[i] = in[i];
        }
    }
}
