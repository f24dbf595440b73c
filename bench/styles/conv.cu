// Image-to-column and back, a padded direct convolution, depth-to-space, a channels-last to
// channels-first permute through a shared tile, and a permute through a strided accessor
// passed by value: pointers advanced through padded windows, as framework kernels write them.
//
// Built with PLANTED defined, each kernel has one realistic out-of-bounds bug (see the
// comment at its `#ifdef PLANTED`): the benchmark's `--planted` mode launches those twins.
#include <cuda_fp16.h>

// im2col, NCHW image of C x H x W, K x K windows with padding and stride; one thread per
// (channel, output pixel) in a grid-stride loop. The column pointer is bumped by a column
// plane per tap; the image pointer starts at the window's corner, in the padding when the
// window hangs over the edge (taps there write zeros).
extern "C" __global__ void im2col_bump(const float* __restrict__ im, float* __restrict__ col,
                                       int C, int H, int W, int K, int pad, int stride,
                                       int OH, int OW)
{
    int n = C * OH * OW;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n;
         idx += blockDim.x * gridDim.x) {
        int ow = idx % OW;
        int oh = (idx / OW) % OH;
        int c = idx / (OW * OH);
        int h0 = oh * stride - pad, w0 = ow * stride - pad;
        float* dst = col + ((size_t)c * K * K * OH + oh) * OW + ow;
        const float* src = im + ((size_t)c * H + h0) * W + w0;
        for (int i = 0; i < K; ++i) {
            for (int j = 0; j < K; ++j) {
                int h = h0 + i, w = w0 + j;
#ifdef PLANTED
                // The row guard forgotten: windows below the last row read the next plane,
                // and past the image for the last channel.
                *dst = (h >= 0 && w >= 0 && w < W) ? src[i * W + j] : 0.0f;
#else
                *dst = (h >= 0 && w >= 0 && h < H && w < W) ? src[i * W + j] : 0.0f;
#endif
                dst += (size_t)OH * OW;
            }
        }
    }
}

// col2im for stride 1: one thread per image pixel sums the column entries of every window
// tap that covers it.
extern "C" __global__ void col2im_s1(const float* __restrict__ col, float* __restrict__ im,
                                     int C, int H, int W, int K, int pad, int OH, int OW)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= C * H * W) return;
    int w = idx % W, h = (idx / W) % H, c = idx / (W * H);
    float acc = 0.0f;
    const float* cp = col + (size_t)c * K * K * OH * OW;
#ifdef PLANTED
    // `<=` over the window's rows: a row of taps past the channel's columns, past the
    // columns for the last channel.
    for (int i = 0; i <= K; ++i) {
#else
    for (int i = 0; i < K; ++i) {
#endif
        int oh = h + pad - i;
        for (int j = 0; j < K; ++j) {
            int ow = w + pad - j;
            if (oh >= 0 && oh < OH && ow >= 0 && ow < OW)
                acc += cp[((size_t)(i * K + j) * OH + oh) * OW + ow];
        }
    }
    im[idx] = acc;
}

// Direct 3x3 convolution with zero padding, NCHW, one image; a thread per output pixel of
// one output channel (blockIdx.z). Input and weight pointers are bumped per input channel.
extern "C" __global__ void conv3x3_pad_bump(const float* __restrict__ in,
                                            const float* __restrict__ wt,
                                            const float* __restrict__ bias,
                                            float* __restrict__ out, int CI, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int co = blockIdx.z;
    if (x >= W || y >= H) return;
    const float* ip = in;
    const float* wp = wt + (size_t)co * CI * 9;
    float acc = bias[co];
    for (int ci = 0; ci < CI; ++ci) {
        for (int i = 0; i < 3; ++i) {
            int yy = y + i - 1;
            if (yy < 0 || yy >= H) continue;
            for (int j = 0; j < 3; ++j) {
                int xx = x + j - 1;
                if (xx < 0 || xx >= W) continue;
                acc += ip[yy * W + xx] * wp[i * 3 + j];
            }
        }
        ip += H * W;
#ifdef PLANTED
        // A weight stride of 10 (as for a padded 3x3 filter) over filters stored 9 apart.
        wp += 10;
#else
        wp += 9;
#endif
    }
    out[((size_t)co * H + y) * W + x] = acc;
}

// Pixel shuffle (depth to space), half: [N, C*r*r, H, W] to [N, C, H*r, W*r], a grid-stride
// loop over the output.
extern "C" __global__ void pixel_shuffle_f16(const __half* __restrict__ in,
                                             __half* __restrict__ out, int N, int C, int H,
                                             int W, int r)
{
    int OW = W * r, OH = H * r;
    long long total = (long long)N * C * OH * OW;
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
#ifdef PLANTED
         // `<=`: one element past the output.
         o <= total;
#else
         o < total;
#endif
         o += (long long)blockDim.x * gridDim.x) {
        int w2 = o % OW;
        int h2 = (o / OW) % OH;
        long long nc = o / ((long long)OW * OH);
        int c = nc % C, n = nc / C;
        int ic = (c * r + h2 % r) * r + w2 % r;
        out[o] = in[(((long long)n * C * r * r + ic) * H + h2 / r) * W + w2 / r];
    }
}

// Channels-last to channels-first for bytes: [N, HW, C] to [N, C, HW] through a 32 x 33
// shared tile; block 32 x 8, each thread moves four elements each way.
extern "C" __global__ void nhwc_to_nchw_u8(const unsigned char* __restrict__ in,
                                           unsigned char* __restrict__ out, int HW, int C)
{
    __shared__ unsigned char tile[32][33];
    int n = blockIdx.z;
    int hw0 = blockIdx.x * 32, c0 = blockIdx.y * 32;
    const unsigned char* src = in + (size_t)n * HW * C;
    unsigned char* dst = out + (size_t)n * HW * C;
    for (int k = threadIdx.y; k < 32; k += 8) {
        int hw = hw0 + k, c = c0 + threadIdx.x;
#ifdef PLANTED
        // Only the channel guarded: the last tile of the last image reads past the input.
        if (c < C)
#else
        if (hw < HW && c < C)
#endif
            tile[k][threadIdx.x] = src[(size_t)hw * C + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < 32; k += 8) {
        int c = c0 + k, hw = hw0 + threadIdx.x;
        if (hw < HW && c < C) dst[(size_t)c * HW + hw] = tile[threadIdx.x][k];
    }
}

// A 4-d permute through a strided accessor: the input's sizes and strides, and the
// permutation, passed by value in a struct; 64-bit index math.
struct Strided4 {
    long long size[4];
    long long stride[4];
    int perm[4];
};

extern "C" __global__ void permute4_strided(const float* __restrict__ in,
                                            float* __restrict__ out, Strided4 s)
{
    long long osize[4];
    for (int d = 0; d < 4; ++d) osize[d] = s.size[s.perm[d]];
    long long total = osize[0] * osize[1] * osize[2] * osize[3];
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total;
         o += (long long)blockDim.x * gridDim.x) {
        long long rem = o, off = 0;
        for (int d = 3; d >= 0; --d) {
#ifdef PLANTED
            // The input's sizes where the output's belong (the permutation forgotten): an
            // index runs past its dimension, and the read past the input.
            long long i = rem % s.size[d];
            rem /= s.size[d];
#else
            long long i = rem % osize[d];
            rem /= osize[d];
#endif
            off += i * s.stride[s.perm[d]];
        }
        out[o] = in[off];
    }
}
