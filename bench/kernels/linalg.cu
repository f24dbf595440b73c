// Dense linear algebra on tiles: a shared-memory tiled SGEMM with 4x4 outputs per thread and
// guarded edges, a padded-tile transpose of a non-square matrix, a batched GEMV with a warp per
// row, and attention over small tiles (a thread per query, keys and values staged in shared
// memory, an online softmax).
#include <cuda_fp16.h>

// ---- C[M, N] = alpha * A[M, K] B[K, N] + beta * C0 -------------------------------------------
// Block 16x16 threads computes a 64x64 tile of C, 4x4 per thread; tiles of K are 16 wide.

#define BM 64
#define BN 64
#define BK 16
extern "C" __global__ void sgemm_tiled_4x4(float* __restrict__ C, const float* __restrict__ A,
                                           const float* __restrict__ B,
                                           const float* __restrict__ C0, int M, int N, int K,
                                           float alpha, float beta)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * 16 + tx;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // 256 threads load 64x16 of A and 16x64 of B: four elements each.
        for (int l = tid; l < BM * BK; l += 256) {
            int r = l / BK, c = l % BK;
            int gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
        }
        for (int l = tid; l < BK * BN; l += 256) {
            int r = l / BN, c = l % BN;
            int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[k][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int r = row0 + ty * 4 + i, c = col0 + tx * 4 + j;
            if (r < M && c < N) C[r * N + c] = alpha * acc[i][j] + beta * C0[r * N + c];
        }
    }
}

// ---- Transpose out[cols, rows] = in[rows, cols] through a 32x33 tile (no bank conflicts) -----

extern "C" __global__ void transpose_padded(float* __restrict__ out, const float* __restrict__ in,
                                            int rows, int cols)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += blockDim.y) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += blockDim.y) {
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

// ---- Batched GEMV in half precision with float accumulation: y[b, r] = A[b, r, :] . x[b, :] --
// A warp per row, half2 loads.

extern "C" __global__ void gemv_batched_h2(float* __restrict__ y, const __half* __restrict__ A,
                                           const __half* __restrict__ x, int batch, int rows,
                                           int cols)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= batch * rows) return;
    int b = warp / rows;
    const __half2* a2 = reinterpret_cast<const __half2*>(A + (size_t)warp * cols);
    const __half2* x2 = reinterpret_cast<const __half2*>(x + (size_t)b * cols);
    float s = 0.0f;
    for (int c = lane; c < cols / 2; c += 32) {
        float2 p = __half22float2(__hmul2(a2[c], x2[c]));
        s += p.x + p.y;
    }
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) y[warp] = s;
}

// ---- Attention over small tiles: O = softmax(Q K^T * scale) V per (batch*head) ---------------
// q, k, v, o: [bh, seq, HD]. A block of QB threads takes QB queries of one head, a thread per
// query with its q and output rows in registers; K and V come through shared memory, KB keys
// at a time.

#define HD 64
#define QB 64
#define KB 32
extern "C" __global__ void attention_small_tiles(float* __restrict__ o, const float* __restrict__ q,
                                                 const float* __restrict__ k,
                                                 const float* __restrict__ v, int seq,
                                                 float scale, int causal)
{
    __shared__ float ks[KB][HD];
    __shared__ float vs[KB][HD];
    int bh = blockIdx.y;
    int qi = blockIdx.x * QB + threadIdx.x;
    size_t base = (size_t)bh * seq * HD;
    float qr[HD], acc[HD];
    bool live = qi < seq;
#pragma unroll
    for (int d = 0; d < HD; ++d) {
        qr[d] = live ? q[base + (size_t)qi * HD + d] * scale : 0.0f;
        acc[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    int kend = causal ? min(seq, (blockIdx.x + 1) * QB) : seq;
    for (int k0 = 0; k0 < kend; k0 += KB) {
        for (int e = threadIdx.x; e < KB * HD; e += blockDim.x) {
            int kr = e / HD, d = e % HD;
            bool in = k0 + kr < seq;
            ks[kr][d] = in ? k[base + (size_t)(k0 + kr) * HD + d] : 0.0f;
            vs[kr][d] = in ? v[base + (size_t)(k0 + kr) * HD + d] : 0.0f;
        }
        __syncthreads();
        for (int j = 0; j < KB; ++j) {
            int kj = k0 + j;
            if (kj >= seq || (causal && kj > qi)) continue;
            float sc = 0.0f;
#pragma unroll
            for (int d = 0; d < HD; ++d) sc += qr[d] * ks[j][d];
            float nm = fmaxf(m, sc);
            float corr = __expf(m - nm), p = __expf(sc - nm);
            l = l * corr + p;
#pragma unroll
            for (int d = 0; d < HD; ++d) acc[d] = acc[d] * corr + p * vs[j][d];
            m = nm;
        }
        __syncthreads();
    }
    if (live) {
        float inv = 1.0f / l;
#pragma unroll
        for (int d = 0; d < HD; ++d) o[base + (size_t)qi * HD + d] = acc[d] * inv;
    }
}
