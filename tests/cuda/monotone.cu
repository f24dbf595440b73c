// Loops whose offsets are monotone in the loop's counter but not affine in it: shifts, masks
// that clear low bits, clamps. Bounds checking versions them (one range check per access
// before the loop, `cudacheck-core/src/instrument/version/monotone.rs`). Each kernel has a
// planted twin under `#ifdef PLANTED` that reads one word past its buffer in its last
// iteration.

// A bit per element, eight to a byte; a 64-bit grid-stride loop (NVRTC unrolls it by four).
extern "C" __global__ void mask_bytes(const float* __restrict__ x,
                                      const unsigned char* __restrict__ bits,
                                      float* __restrict__ out, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
#ifdef PLANTED
        unsigned char b = bits[(i >> 3) + 1];
#else
        unsigned char b = bits[i >> 3];
#endif
        out[i] = (b >> (i & 7)) & 1u ? x[i] : 0.0f;
    }
}

// A box filter whose taps are clamped to the row: `x[min(max(i + k, 0), n - 1)]`.
extern "C" __global__ void box_clamp(const float* __restrict__ x, float* __restrict__ y,
                                     int n, int r)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s = 0.0f;
    for (int k = -r; k <= r; ++k) {
#ifdef PLANTED
        s += x[min(max(i + k, 0), n)];
#else
        s += x[min(max(i + k, 0), n - 1)];
#endif
    }
    y[i] = s;
}

// A suffix sum over pairs, the counter going down: `x[j / 2]` for `j` from `m - 1` to `t`.
extern "C" __global__ void suffix_pairs(const float* __restrict__ x, float* __restrict__ y,
                                        int m)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = m - 1; j >= t; --j) {
#ifdef PLANTED
        s += x[(j + 2) >> 1];
#else
        s += x[j >> 1];
#endif
    }
    if (t < m)
        y[t] = s;
}

// Each element takes the first of its group of four: `x[i & ~3]`, a 32-bit grid-stride loop.
extern "C" __global__ void quad_first(const float* __restrict__ x, float* __restrict__ y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
#ifdef PLANTED
        y[i] = x[(i & ~3) + 4];
#else
        y[i] = x[i & ~3];
#endif
    }
}
