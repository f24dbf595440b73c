// Windows with stride, padding and clamped edges: max pooling that writes argmax indices,
// Sobel and Gaussian filters with clamped or min/max edges (through a templated `__ldg`
// helper and an image accessor), bilinear resize of interleaved bytes, grid sampling,
// trilinear upsampling, and a pitched 2x2 average pool in a 2-d grid-stride loop.
//
// Built with PLANTED defined, each kernel has one realistic out-of-bounds bug (see the
// comment at its `#ifdef PLANTED`).
#include <cuda_fp16.h>

// 3x3 max pooling, stride 2, padding 1, NCHW; writes the maximum and its index in the plane
// (64-bit, as frameworks return it).
extern "C" __global__ void maxpool3s2_argmax(const float* __restrict__ in,
                                             float* __restrict__ out,
                                             long long* __restrict__ argmax, int NC, int H,
                                             int W, int OH, int OW)
{
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= (long long)NC * OH * OW) return;
    int ow = idx % OW, oh = (idx / OW) % OH;
    long long nc = idx / ((long long)OW * OH);
    int hs = oh * 2 - 1, ws = ow * 2 - 1;
#ifdef PLANTED
    // The window's end clamped to H + 1: the last row window of the last plane reads a row
    // past the input.
    int he = min(hs + 3, H + 1), we = min(ws + 3, W);
#else
    int he = min(hs + 3, H), we = min(ws + 3, W);
#endif
    hs = max(hs, 0);
    ws = max(ws, 0);
    const float* p = in + nc * H * W;
    float best = -INFINITY;
    long long bi = -1;
    for (int h = hs; h < he; ++h)
        for (int w = ws; w < we; ++w) {
            float v = p[h * W + w];
            if (v > best || isnan(v)) {
                best = v;
                bi = h * W + w;
            }
        }
    out[idx] = best;
    argmax[idx] = bi;
}

// A read through the read-only cache, for any element type.
template <typename T>
__device__ __forceinline__ T ldg(const T* __restrict__ p)
{
    return __ldg(p);
}

// An image seen through an accessor that clamps coordinates to the edge.
template <typename T>
struct ClampedImage {
    const T* __restrict__ data;
    int w, h;
    __device__ float at(int x, int y) const
    {
        x = min(max(x, 0), w - 1);
#ifdef PLANTED
        // The row clamped to h instead of h - 1: the bottom row's neighbours below are read
        // past the image.
        y = min(max(y, 0), h);
#else
        y = min(max(y, 0), h - 1);
#endif
        return (float)ldg(data + (size_t)y * w + x);
    }
};

template <typename T>
__device__ void sobel(const T* __restrict__ img, float* __restrict__ mag, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    ClampedImage<T> a{img, w, h};
    float gx = -a.at(x - 1, y - 1) - 2.0f * a.at(x - 1, y) - a.at(x - 1, y + 1) +
               a.at(x + 1, y - 1) + 2.0f * a.at(x + 1, y) + a.at(x + 1, y + 1);
    float gy = -a.at(x - 1, y - 1) - 2.0f * a.at(x, y - 1) - a.at(x + 1, y - 1) +
               a.at(x - 1, y + 1) + 2.0f * a.at(x, y + 1) + a.at(x + 1, y + 1);
    mag[(size_t)y * w + x] = sqrtf(gx * gx + gy * gy);
}

extern "C" __global__ void sobel_clamp_ldg(const float* __restrict__ img,
                                           float* __restrict__ mag, int w, int h)
{
    sobel<float>(img, mag, w, h);
}

// 5x5 Gaussian blur of a half image, edges by min/max, arithmetic in float.
__constant__ float GAUSS5[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};

extern "C" __global__ void gauss5_minmax_f16(const __half* __restrict__ in,
                                             __half* __restrict__ out, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float acc = 0.0f;
#pragma unroll
    for (int dy = -2; dy <= 2; ++dy) {
#ifdef PLANTED
        // The top edge clamped to -1: the first row's upper taps read before the image.
        int yy = min(max(y + dy, -1), H - 1);
#else
        int yy = min(max(y + dy, 0), H - 1);
#endif
        const __half* row = in + (long long)yy * W;
        float racc = 0.0f;
#pragma unroll
        for (int dx = -2; dx <= 2; ++dx) {
            int xx = min(max(x + dx, 0), W - 1);
            racc += GAUSS5[dx + 2] * __half2float(row[xx]);
        }
        acc += GAUSS5[dy + 2] * racc;
    }
    out[(size_t)y * W + x] = __float2half(acc);
}

// Bilinear resize of an interleaved RGB byte image (H x W x 3 to OH x OW x 3), half-pixel
// centres, the far neighbour clamped to the edge.
extern "C" __global__ void resize_bilinear_rgb8(const unsigned char* __restrict__ src,
                                                unsigned char* __restrict__ dst, int H, int W,
                                                int OH, int OW)
{
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= OW || oy >= OH) return;
    float sx = fmaxf((ox + 0.5f) * ((float)W / OW) - 0.5f, 0.0f);
    float sy = fmaxf((oy + 0.5f) * ((float)H / OH) - 0.5f, 0.0f);
    int x0 = min((int)sx, W - 1), y0 = min((int)sy, H - 1);
#ifdef PLANTED
    // The far neighbour not clamped: the right column reads one pixel past the row, and
    // the last row past the image.
    int x1 = x0 + 1;
#else
    int x1 = min(x0 + 1, W - 1);
#endif
    int y1 = min(y0 + 1, H - 1);
    float fx = sx - x0, fy = sy - y0;
    for (int c = 0; c < 3; ++c) {
        float a = src[((size_t)y0 * W + x0) * 3 + c], b = src[((size_t)y0 * W + x1) * 3 + c];
        float d = src[((size_t)y1 * W + x0) * 3 + c], e = src[((size_t)y1 * W + x1) * 3 + c];
        float v = (a * (1 - fx) + b * fx) * (1 - fy) + (d * (1 - fx) + e * fx) * fy;
        dst[((size_t)oy * OW + ox) * 3 + c] = (unsigned char)fminf(v + 0.5f, 255.0f);
    }
}

// Grid sample, bilinear, zero padding, align_corners false: input [N, C, H, W], grid
// [N, OH, OW, 2] of (x, y) in [-1, 1] (and a little beyond), output [N, C, OH, OW]. One
// thread per output pixel, looping over channels with bumped pointers.
extern "C" __global__ void grid_sample_bilinear(const float* __restrict__ input,
                                                const float* __restrict__ grid,
                                                float* __restrict__ output, int N, int C,
                                                int H, int W, int OH, int OW)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * OH * OW) return;
    int n = idx / (OH * OW), pix = idx % (OH * OW);
    float gx = grid[2 * (size_t)idx], gy = grid[2 * (size_t)idx + 1];
    float ix = ((gx + 1.0f) * W - 1.0f) * 0.5f, iy = ((gy + 1.0f) * H - 1.0f) * 0.5f;
    int x0 = (int)floorf(ix), y0 = (int)floorf(iy);
    int x1 = x0 + 1, y1 = y0 + 1;
    float wx1 = ix - x0, wy1 = iy - y0, wx0 = 1.0f - wx1, wy0 = 1.0f - wy1;
    bool in_x0 = x0 >= 0 && x0 < W, in_y0 = y0 >= 0 && y0 < H, in_y1 = y1 >= 0 && y1 < H;
    bool in_x1 = x1 >= 0 && x1 < W;
    const float* ip = input + (size_t)n * C * H * W;
    float* op = output + (size_t)n * C * OH * OW + pix;
    for (int c = 0; c < C; ++c) {
#ifdef PLANTED
        // The plane pointer bumped before its first use rather than after: the last
        // channel of the last image reads a plane past the input.
        ip += H * W;
#endif
        float v = 0.0f;
        if (in_y0 && in_x0) v += ip[y0 * W + x0] * wx0 * wy0;
        if (in_y0 && in_x1) v += ip[y0 * W + x1] * wx1 * wy0;
        if (in_y1 && in_x0) v += ip[y1 * W + x0] * wx0 * wy1;
        if (in_y1 && in_x1) v += ip[y1 * W + x1] * wx1 * wy1;
        *op = v;
#ifndef PLANTED
        ip += H * W;
#endif
        op += OH * OW;
    }
}

// Trilinear 2x upsampling of [NC, D, H, W] volumes, half-voxel centres, far neighbours
// clamped with min.
extern "C" __global__ void upsample_trilinear2x(const float* __restrict__ in,
                                                float* __restrict__ out, int NC, int D, int H,
                                                int W)
{
    int OD = 2 * D, OH = 2 * H, OW = 2 * W;
    long long total = (long long)NC * OD * OH * OW;
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total;
         o += (long long)blockDim.x * gridDim.x) {
        int ox = o % OW, oy = (o / OW) % OH, oz = (o / ((long long)OW * OH)) % OD;
        long long nc = o / ((long long)OW * OH * OD);
        float sz = fmaxf((oz + 0.5f) * 0.5f - 0.5f, 0.0f);
        float sy = fmaxf((oy + 0.5f) * 0.5f - 0.5f, 0.0f);
        float sx = fmaxf((ox + 0.5f) * 0.5f - 0.5f, 0.0f);
        int z0 = (int)sz, y0 = (int)sy, x0 = (int)sx;
#ifdef PLANTED
        // The far plane not clamped: the last depth slice reads the next volume, and the
        // last volume's reads run past the input.
        int z1 = z0 + 1;
#else
        int z1 = min(z0 + 1, D - 1);
#endif
        int y1 = min(y0 + 1, H - 1), x1 = min(x0 + 1, W - 1);
        float fz = sz - z0, fy = sy - y0, fx = sx - x0;
        const float* v = in + nc * D * H * W;
#define AT(z, y, x) v[((long long)(z) * H + (y)) * W + (x)]
        float c00 = AT(z0, y0, x0) * (1 - fx) + AT(z0, y0, x1) * fx;
        float c01 = AT(z0, y1, x0) * (1 - fx) + AT(z0, y1, x1) * fx;
        float c10 = AT(z1, y0, x0) * (1 - fx) + AT(z1, y0, x1) * fx;
        float c11 = AT(z1, y1, x0) * (1 - fx) + AT(z1, y1, x1) * fx;
#undef AT
        float c0 = c00 * (1 - fy) + c01 * fy, c1 = c10 * (1 - fy) + c11 * fy;
        out[o] = c0 * (1 - fz) + c1 * fz;
    }
}

// 2x2 average pooling of a pitched image (rows `pitch` floats apart, as cudaMallocPitch
// gives), into a pitched output, in a 2-d grid-stride loop.
extern "C" __global__ void avgpool2_pitched(const float* __restrict__ in, size_t in_pitch,
                                            float* __restrict__ out, size_t out_pitch, int OW,
                                            int OH)
{
    for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < OH; y += blockDim.y * gridDim.y) {
        const float* r0 = in + 2 * (size_t)y * in_pitch;
#ifdef PLANTED
        // The second row two rows down (a row stride counted twice): the last output row
        // reads a row past the input.
        const float* r1 = r0 + 2 * in_pitch;
#else
        const float* r1 = r0 + in_pitch;
#endif
        float* o = out + (size_t)y * out_pitch;
        for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < OW;
             x += blockDim.x * gridDim.x)
            o[x] = 0.25f * (r0[2 * x] + r0[2 * x + 1] + r1[2 * x] + r1[2 * x + 1]);
    }
}
