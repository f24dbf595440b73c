// Stencils and convolutions: guarded neighbourhoods with small fixed loops, the way image and
// signal code writes them, a shared-memory tile with a halo, and pooling.

// ---- Guarded 3x3 convolution, one output per thread, zero padding ---------------------------
// in/out: [channels, h, w]; w3: [channels, 3, 3] (depthwise).

extern "C" __global__ void conv3x3_guarded(float* __restrict__ out, const float* __restrict__ in,
                                           const float* __restrict__ w3, int channels, int h,
                                           int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (x >= w || y >= h || c >= channels) return;
    const float* plane = in + (size_t)c * h * w;
    const float* k = w3 + c * 9;
    float acc = 0.0f;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            int yy = y + dy, xx = x + dx;
            if (yy >= 0 && yy < h && xx >= 0 && xx < w) {
                acc += k[(dy + 1) * 3 + (dx + 1)] * plane[yy * w + xx];
            }
        }
    }
    out[(size_t)c * h * w + y * w + x] = acc;
}

// ---- Depthwise 1-D convolution, kernel width KW, "same" padding ------------------------------
// in/out: [channels, len]; wt: [channels, KW]; bias: [channels].

#define KW 7
extern "C" __global__ void conv1d_depthwise(float* __restrict__ out, const float* __restrict__ in,
                                            const float* __restrict__ wt,
                                            const float* __restrict__ bias, int channels, int len)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (t >= len) return;
    float acc = bias[c];
#pragma unroll
    for (int k = 0; k < KW; ++k) {
        int s = t + k - KW / 2;
        if (s >= 0 && s < len) {
            acc += wt[c * KW + k] * in[c * len + s];
        }
    }
    out[c * len + t] = acc;
}

// ---- 3-D 7-point stencil, interior points only; the boundary copies the input ----------------

extern "C" __global__ void stencil7_3d(float* __restrict__ out, const float* __restrict__ in,
                                       int nx, int ny, int nz, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    size_t plane = (size_t)nx * ny;
    for (int z = 0; z < nz; ++z) {
        size_t i = z * plane + (size_t)y * nx + x;
        if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1 && z > 0 && z < nz - 1) {
            out[i] = c0 * in[i] + c1 * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] +
                                         in[i - plane] + in[i + plane]);
        } else {
            out[i] = in[i];
        }
    }
}

// ---- 5x5 box blur through a shared-memory tile with a 2-wide halo, clamped at the edges ------

#define TILE_X 32
#define TILE_Y 8
#define R 2
extern "C" __global__ void blur5x5_tiled(float* __restrict__ out, const float* __restrict__ in,
                                         int h, int w)
{
    __shared__ float tile[TILE_Y + 2 * R][TILE_X + 2 * R];
    int x0 = blockIdx.x * TILE_X, y0 = blockIdx.y * TILE_Y;
    for (int ty = threadIdx.y; ty < TILE_Y + 2 * R; ty += blockDim.y) {
        for (int tx = threadIdx.x; tx < TILE_X + 2 * R; tx += blockDim.x) {
            int gx = min(max(x0 + tx - R, 0), w - 1);
            int gy = min(max(y0 + ty - R, 0), h - 1);
            tile[ty][tx] = in[gy * w + gx];
        }
    }
    __syncthreads();
    int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x < w && y < h) {
        float s = 0.0f;
        for (int dy = 0; dy <= 2 * R; ++dy)
            for (int dx = 0; dx <= 2 * R; ++dx)
                s += tile[threadIdx.y + dy][threadIdx.x + dx];
        out[y * w + x] = s * (1.0f / ((2 * R + 1) * (2 * R + 1)));
    }
}

// ---- 2x2 max pooling, stride 2, NCHW, odd edges handled by the guard --------------------------

extern "C" __global__ void maxpool2x2_nchw(float* __restrict__ out, const float* __restrict__ in,
                                           int planes, int h, int w)
{
    int oh = (h + 1) / 2, ow = (w + 1) / 2;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= planes * oh * ow) return;
    int ox = i % ow, oy = (i / ow) % oh, p = i / (ow * oh);
    float m = -INFINITY;
    for (int dy = 0; dy < 2; ++dy) {
        for (int dx = 0; dx < 2; ++dx) {
            int y = oy * 2 + dy, x = ox * 2 + dx;
            if (y < h && x < w) m = fmaxf(m, in[(p * h + y) * w + x]);
        }
    }
    out[i] = m;
}
