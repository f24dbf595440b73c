// Loops in the styles the first 32 kernels lack: a column loop and strided loops with
// runtime trip counts, a block-stride row reduction over a pitched matrix, channels-last
// depthwise convolutions with unrolled windows, a 1-D convolution over a runtime window, segment
// sums over CSR offsets, a row scatter-add and a histogram with atomics, many small mat-vecs, a
// z-marching 3-D stencil with a register queue, block-per-row RMSnorm and softmax, and a
// templated strided loop stamped out for float and half by a macro.
#include <cuda_fp16.h>

// ---- Column sums: a thread per column walks down the rows -------------------------------------

extern "C" __global__ void col_sum(float* __restrict__ out, const float* __restrict__ in, int rows,
                                   int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) {
        s += in[r * cols + c];
    }
    out[c] = s;
}

// ---- Row means of a pitched matrix (`ld` >= cols, as cudaMallocPitch gives): a block of 256 per
// row, block-stride loop, shared-memory tree down to a warp, then shuffles ----------------------

#define ROW_BLOCK 256
extern "C" __global__ void row_mean_pitched(float* __restrict__ out, const float* __restrict__ in,
                                            int rows, int cols, int ld)
{
    __shared__ float partial[ROW_BLOCK];
    int row = blockIdx.x;
    const float* x = in + (size_t)row * ld;
    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        s += x[i];
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 32; stride >>= 1) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        float v = partial[threadIdx.x];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (threadIdx.x == 0 && row < rows) out[row] = v / cols;
    }
}

// ---- Strided scale-copy: each thread owns one lane and bumps its pointers by runtime 64-bit
// strides, `iters` times (out[k * out_stride + lane] = scale * in[k * in_stride + lane]) ------

extern "C" __global__ void strided_scale_copy(float* __restrict__ out, const float* __restrict__ in,
                                              long long out_stride, long long in_stride, int lanes,
                                              int iters, float scale)
{
    int lane = blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const float* src = in + lane;
    float* dst = out + lane;
    for (int k = 0; k < iters; ++k) {
        *dst = scale * *src;
        src += in_stride;
        dst += out_stride;
    }
}

// ---- Depthwise 3x3 convolution, channels last (NHWC), padding 1, unrolled window ---------------
// A thread per output (x, channel), channel fastest; blockIdx.y is image * h + row. The weights
// are [3][3][c] (HWC, as TensorFlow stores depthwise filters).

extern "C" __global__ void dwconv3x3_nhwc(float* __restrict__ out, const float* __restrict__ in,
                                          const float* __restrict__ w,
                                          const float* __restrict__ bias, int h, int wd, int c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int ny = blockIdx.y;
    if (i >= wd * c) return;
    int x = i / c, ch = i - x * c;
    int b = ny / h, y = ny - b * h;
    float acc = bias[ch];
#pragma unroll
    for (int ky = 0; ky < 3; ++ky) {
        int iy = y + ky - 1;
        if (iy < 0 || iy >= h) continue;
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
            int ix = x + kx - 1;
            if (ix < 0 || ix >= wd) continue;
            acc += in[((size_t)(b * h + iy) * wd + ix) * c + ch] * w[(ky * 3 + kx) * c + ch];
        }
    }
    out[((size_t)ny * wd + x) * c + ch] = acc;
}

// ---- Depthwise KxK convolution, NHWC, runtime stride, "same" padding, fused ReLU6 -------------
// A thread per output element, flat 64-bit index decomposed channel-fastest; the window is
// unrolled by the template parameter.

template <int K>
__global__ void dwconv_nhwc_relu6(float* __restrict__ out, const float* __restrict__ in,
                                  const float* __restrict__ w, const float* __restrict__ bias,
                                  int n, int h, int wd, int c, int oh, int ow, int stride)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long total = (long long)n * oh * ow * c;
    if (i >= total) return;
    int ch = (int)(i % c);
    long long t = i / c;
    int ox = (int)(t % ow);
    t /= ow;
    int oy = (int)(t % oh);
    int b = (int)(t / oh);
    const int pad = K / 2;
    const float* src = in + (size_t)b * h * wd * c + ch;
    float acc = bias[ch];
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
        int iy = oy * stride + ky - pad;
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
            int ix = ox * stride + kx - pad;
            if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
                acc = fmaf(src[((size_t)iy * wd + ix) * c], w[(ky * K + kx) * c + ch], acc);
            }
        }
    }
    out[i] = fminf(fmaxf(acc, 0.0f), 6.0f);
}

template __global__ void dwconv_nhwc_relu6<3>(float*, const float*, const float*, const float*,
                                              int, int, int, int, int, int, int);
template __global__ void dwconv_nhwc_relu6<5>(float*, const float*, const float*, const float*,
                                              int, int, int, int, int, int, int);

// ---- 1-D convolution (NCL), runtime window, stride, padding and dilation ----------------------
// A thread per output (b, co, l); taps that fall in the padding are skipped. Weights [co][ci][k].

extern "C" __global__ void conv1d_ncl(float* __restrict__ out, const float* __restrict__ in,
                                      const float* __restrict__ w, int batch, int c_in, int c_out,
                                      int l_in, int l_out, int k_size, int stride, int padding,
                                      int dilation)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch * c_out * l_out) return;
    int ol = i % l_out;
    int co = (i / l_out) % c_out;
    int b = i / (l_out * c_out);
    float acc = 0.0f;
    for (int k = 0; k < k_size; ++k) {
        int il = ol * stride + k * dilation - padding;
        if (il < 0 || il >= l_in) continue;
        for (int ci = 0; ci < c_in; ++ci) {
            acc += in[(b * c_in + ci) * l_in + il] * w[(co * c_in + ci) * k_size + k];
        }
    }
    out[i] = acc;
}

// ---- Segment sums over CSR offsets: out[s, :] = sum of in[j, :], j in [offsets[s], offsets[s+1])
// A thread per (segment, column): each output is written by one thread, in row order. -----------

extern "C" __global__ void segment_sum_rows(float* __restrict__ out, const float* __restrict__ in,
                                            const int* __restrict__ offsets, int segments, int dim)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int seg = blockIdx.y;
    if (col >= dim || seg >= segments) return;
    int begin = offsets[seg], end = offsets[seg + 1];
    float s = 0.0f;
    for (int j = begin; j < end; ++j) {
        s += in[(size_t)j * dim + col];
    }
    out[(size_t)seg * dim + col] = s;
}

// ---- Row scatter-add of integers (index_add): out[idx[r], :] += src[r, :] ---------------------
// A block per source row, block-stride loop over the row, global atomics (rows collide).

extern "C" __global__ void index_add_rows_i32(int* __restrict__ out, const int* __restrict__ src,
                                              const int* __restrict__ idx, int rows, int dim)
{
    int r = blockIdx.x;
    if (r >= rows) return;
    size_t dst = (size_t)idx[r] * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        atomicAdd(&out[dst + c], src[(size_t)r * dim + c]);
    }
}

// ---- Histogram of floats into `nbins` equal bins of [lo, hi): each thread bins `per_thread`
// consecutive elements into dynamic shared memory (nbins words), merged with global atomics ----

extern "C" __global__ void histogram_range(unsigned int* __restrict__ bins,
                                           const float* __restrict__ x, int n, int per_thread,
                                           int nbins, float lo, float hi)
{
    extern __shared__ unsigned int local[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    float scale = nbins / (hi - lo);
    int start = (blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
    for (int k = 0; k < per_thread; ++k) {
        int i = start + k;
        if (i >= n) break;
        int b = (int)((x[i] - lo) * scale);
        b = min(max(b, 0), nbins - 1);
        atomicAdd(&local[b], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
        if (local[b]) atomicAdd(&bins[b], local[b]);
    }
}

// ---- Many small mat-vecs: y[b, i] = A[b, i, :] . x[b, :], a thread per output row, loop over k -

extern "C" __global__ void batched_matvec(float* __restrict__ y, const float* __restrict__ A,
                                          const float* __restrict__ x, int batch, int m, int k)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= batch * m) return;
    int b = t / m;
    const float* a = A + (size_t)t * k;
    const float* xb = x + (size_t)b * k;
    float s = 0.0f;
    for (int j = 0; j < k; ++j) {
        s += a[j] * xb[j];
    }
    y[t] = s;
}

// ---- 13-point (radius-2 star) 3-D stencil: a thread per (x, y) marches in z, keeping the five
// z-neighbours in a register queue; x/y neighbours from global. Two-wide borders are copied. ---

extern "C" __global__ void stencil13_zqueue(float* __restrict__ out, const float* __restrict__ in,
                                            int nx, int ny, int nz, float c0, float c1, float c2)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    size_t plane = (size_t)nx * ny;
    size_t i = (size_t)y * nx + x;
    bool interior = x >= 2 && x < nx - 2 && y >= 2 && y < ny - 2;
    float zm2 = in[i], zm1 = in[i + plane], zc = in[i + 2 * plane], zp1 = in[i + 3 * plane];
    out[i] = zm2;
    out[i + plane] = zm1;
    for (int z = 2; z < nz - 2; ++z) {
        size_t k = i + (size_t)z * plane;
        float zp2 = in[k + 2 * plane];
        if (interior) {
            out[k] = c0 * zc + c1 * (zm1 + zp1 + in[k - 1] + in[k + 1] + in[k - nx] + in[k + nx]) +
                     c2 * (zm2 + zp2 + in[k - 2] + in[k + 2] + in[k - 2 * nx] + in[k + 2 * nx]);
        } else {
            out[k] = zc;
        }
        zm2 = zm1;
        zm1 = zc;
        zc = zp1;
        zp1 = zp2;
    }
    out[i + (size_t)(nz - 2) * plane] = zc;
    out[i + (size_t)(nz - 1) * plane] = zp1;
}

// ---- Block reductions for the row kernels below: every thread gets the result ------------------

__device__ __forceinline__ float warp_reduce_sum(float v)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, mask, 32);
    return v;
}

__device__ __forceinline__ float warp_reduce_max(float v)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask, 32));
    }
    return v;
}

// ---- RMSnorm as candle writes it: a block per row, block-stride loops over the columns, warp
// sums then a shared s_sum[32]; templated on the element type, stamped out by a macro ----------

template <typename T>
__device__ void rmsnorm_rows(const T* x, T* dst, const T* alpha, const int ncols, const float eps)
{
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int block_size = blockDim.x;
    float tmp = 0.0f;
    for (int col = tid; col < ncols; col += block_size) {
        const float xi = static_cast<float>(x[row * ncols + col]);
        tmp += xi * xi;
    }
    tmp = warp_reduce_sum(tmp);
    if (block_size > 32) {
        __shared__ float s_sum[32];
        int warp_id = tid / 32, lane_id = tid % 32;
        if (lane_id == 0) s_sum[warp_id] = tmp;
        __syncthreads();
        tmp = lane_id < block_size / 32 ? s_sum[lane_id] : 0.0f;
        tmp = warp_reduce_sum(tmp);
    }
    const float scale = rsqrtf(tmp / ncols + eps);
    for (int col = tid; col < ncols; col += block_size) {
        const float a = static_cast<float>(alpha[col]);
        const float xi = static_cast<float>(x[row * ncols + col]);
        dst[row * ncols + col] = static_cast<T>(scale * xi * a);
    }
}

#define RMSNORM_OP(TYPENAME, FN_NAME)                                                           \
    extern "C" __global__ void FN_NAME(const TYPENAME* src, TYPENAME* dst,                      \
                                       const TYPENAME* alpha, const int n_cols, const float eps) \
    {                                                                                           \
        rmsnorm_rows<TYPENAME>(src, dst, alpha, n_cols, eps);                                   \
    }

RMSNORM_OP(float, rmsnorm_block_f32)
RMSNORM_OP(__half, rmsnorm_block_f16)

// ---- Softmax over the last dim, a block per row, three passes over global memory (max, sum,
// write), rows as long as a vocabulary ------------------------------------------------------------

__device__ float block_reduce(float v, float* shared32, bool is_max)
{
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    v = is_max ? warp_reduce_max(v) : warp_reduce_sum(v);
    __syncthreads();  // shared32 may still be read by the previous reduction
    if (lane == 0) shared32[wid] = v;
    __syncthreads();
    float init = is_max ? -INFINITY : 0.0f;
    v = lane < blockDim.x / 32 ? shared32[lane] : init;
    return is_max ? warp_reduce_max(v) : warp_reduce_sum(v);
}

extern "C" __global__ void softmax_rows_3pass(float* __restrict__ y, const float* __restrict__ x,
                                              int rows, int cols)
{
    __shared__ float red[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, xr[i]);
    m = block_reduce(m, red, true);
    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(xr[i] - m);
    s = block_reduce(s, red, false);
    float inv = 1.0f / s;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = __expf(xr[i] - m) * inv;
}

// ---- Strided affine over a runtime trip count, templated on the element type and unroll, and
// stamped out per type by a macro: out[i] = in[offset + i * step] * mul + add, i < n ------------

template <typename T, int UNROLL>
__device__ void strided_affine(T* __restrict__ out, const T* __restrict__ in, size_t n,
                               size_t offset, size_t step, float mul, float add)
{
    const size_t total = (size_t)blockDim.x * gridDim.x;
    for (size_t base = blockIdx.x * (size_t)blockDim.x + threadIdx.x; base < n;
         base += total * UNROLL) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            size_t i = base + u * total;
            if (i < n) out[i] = T(float(in[offset + i * step]) * mul + add);
        }
    }
}

#define STRIDED_AFFINE_OP(TYPENAME, FN_NAME, UNROLL)                                             \
    extern "C" __global__ void FN_NAME(TYPENAME* out, const TYPENAME* in, const size_t n,       \
                                       const size_t offset, const size_t step, const float mul, \
                                       const float add)                                         \
    {                                                                                           \
        strided_affine<TYPENAME, UNROLL>(out, in, n, offset, step, mul, add);                    \
    }

STRIDED_AFFINE_OP(float, strided_affine_f32, 4)
STRIDED_AFFINE_OP(__half, strided_affine_f16, 4)
