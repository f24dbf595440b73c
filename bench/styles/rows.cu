// Per-row and per-element work in the styles of model code: rotary embeddings on half2
// pairs, argmax per row with warp shuffles and float4 reads, an attention row with an
// online softmax in half (a warp per query, the next key prefetched), LayerNorm backward,
// one bitonic sort step, warp-aggregated atomics, an array-of-structs update, and an
// `axpby` with `#pragma unroll 4`, a remainder loop and offsets from a struct of parameters.
//
// Built with PLANTED defined, each kernel has one realistic out-of-bounds bug (see the
// comment at its `#ifdef PLANTED`).
#include <cuda_fp16.h>

// Rotary embedding, interleaved pairs: x [tokens, heads, dim] half; cos_sin [max_pos, dim]
// holds cos for pair k at k and sin at dim / 2 + k; positions [tokens], 64-bit.
extern "C" __global__ void rope_half2(const __half2* __restrict__ x,
                                      const float* __restrict__ cos_sin,
                                      const long long* __restrict__ positions,
                                      __half2* __restrict__ out, int tokens, int heads,
                                      int dim)
{
    int half_dim = dim / 2;
    long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (p >= (long long)tokens * heads * half_dim) return;
    int k = p % half_dim;
    long long t = p / ((long long)heads * half_dim);
    long long pos = positions[t];
#ifdef PLANTED
    // Positions counted from one: the last position's row is past the cache.
    const float* cs = cos_sin + (pos + 1) * dim;
#else
    const float* cs = cos_sin + pos * dim;
#endif
    float c = cs[k], s = cs[half_dim + k];
    float2 v = __half22float2(x[p]);
    out[p] = __floats2half2_rn(v.x * c - v.y * s, v.x * s + v.y * c);
}

// Argmax of each row (the lowest index among equal maxima), a warp per row, float4 reads;
// cols is a multiple of 4.
extern "C" __global__ void argmax_rows_warp(const float* __restrict__ x,
                                            long long* __restrict__ idx,
                                            float* __restrict__ val, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float4* r4 = reinterpret_cast<const float4*>(x + (size_t)row * cols);
    float best = -INFINITY;
    int bi = 0x7fffffff;
#ifdef PLANTED
    // `<=` over the float4s: the last row reads one float4 past x.
    for (int c4 = lane; c4 <= cols / 4; c4 += 32) {
#else
    for (int c4 = lane; c4 < cols / 4; c4 += 32) {
#endif
        float4 v = r4[c4];
        float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k)
            if (e[k] > best) {
                best = e[k];
                bi = 4 * c4 + k;
            }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ob > best || (ob == best && oi < bi)) {
            best = ob;
            bi = oi;
        }
    }
    if (lane == 0) {
        idx[row] = bi;
        val[row] = best;
    }
}

// One attention row per warp, head dimension 64 in half2 (two dimensions a lane): scores by
// a warp-shuffle dot product, an online softmax, values accumulated in float. The next key
// is loaded while the current one is used.
extern "C" __global__ void attn_row_online_f16(const __half2* __restrict__ q,
                                               const __half2* __restrict__ k,
                                               const __half2* __restrict__ v,
                                               __half2* __restrict__ out, int nq, int nk,
                                               float scale)
{
    int qi = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (qi >= nq) return;
    float2 qf = __half22float2(q[(size_t)qi * 32 + lane]);
    float m = -INFINITY, l = 0.0f;
    float2 acc = make_float2(0.0f, 0.0f);
    __half2 kc = k[lane];
    for (int j = 0; j < nk; ++j) {
#ifdef PLANTED
        // The prefetch of the next key not guarded: the last step reads a key past k.
        __half2 kn = k[(size_t)(j + 1) * 32 + lane];
#else
        __half2 kn = j + 1 < nk ? k[(size_t)(j + 1) * 32 + lane] : kc;
#endif
        float2 kf = __half22float2(kc);
        float s = qf.x * kf.x + qf.y * kf.y;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        s *= scale;
        float mn = fmaxf(m, s);
        float corr = __expf(m - mn), p = __expf(s - mn);
        float2 vf = __half22float2(v[(size_t)j * 32 + lane]);
        l = l * corr + p;
        acc.x = acc.x * corr + p * vf.x;
        acc.y = acc.y * corr + p * vf.y;
        m = mn;
        kc = kn;
    }
    out[(size_t)qi * 32 + lane] = __floats2half2_rn(acc.x / l, acc.y / l);
}

// LayerNorm backward for the input: dx = rstd (g dy - mean(g dy) - xhat mean(g dy xhat)),
// a block of 256 threads per row, the two sums reduced in shared memory.
extern "C" __global__ void layernorm_bwd_dx(const float* __restrict__ x,
                                            const float* __restrict__ dy,
                                            const float* __restrict__ gamma,
                                            const float* __restrict__ mean,
                                            const float* __restrict__ rstd,
                                            float* __restrict__ dx, int D)
{
    __shared__ float s1[256], s2[256];
    int row = blockIdx.x;
#ifdef PLANTED
    // The statistics read as interleaved (mean, rstd) pairs from an array of means: rows
    // past the first half read past mean.
    float mu = mean[2 * row];
#else
    float mu = mean[row];
#endif
    float rs = rstd[row];
    const float* xr = x + (size_t)row * D;
    const float* dr = dy + (size_t)row * D;
    float a = 0.0f, b = 0.0f;
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
        float g = gamma[c] * dr[c];
        a += g;
        b += g * (xr[c] - mu) * rs;
    }
    s1[threadIdx.x] = a;
    s2[threadIdx.x] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s1[threadIdx.x] += s1[threadIdx.x + s];
            s2[threadIdx.x] += s2[threadIdx.x + s];
        }
        __syncthreads();
    }
    float m1 = s1[0] / D, m2 = s2[0] / D;
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
        float xh = (xr[c] - mu) * rs;
        dx[(size_t)row * D + c] = rs * (gamma[c] * dr[c] - m1 - xh * m2);
    }
}

// One step (k, j) of a bitonic sort of keys with a payload, in place; a thread per element.
extern "C" __global__ void bitonic_step_kv(unsigned int* __restrict__ keys,
                                           int* __restrict__ vals, unsigned int j,
                                           unsigned int k, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
#ifdef PLANTED
    // The partner by addition instead of exclusive or: the last j elements read past keys.
    unsigned int ixj = i + j;
#else
    unsigned int ixj = i ^ j;
#endif
    if (ixj <= i) return;
    unsigned int a = keys[i], b = keys[ixj];
    bool ascending = (i & k) == 0;
    if ((a > b) == ascending) {
        keys[i] = b;
        keys[ixj] = a;
        int t = vals[i];
        vals[i] = vals[ixj];
        vals[ixj] = t;
    }
}

// Counts, per bucket (key mod buckets), of the elements whose value passes a threshold;
// lanes of a warp with the same bucket add once (warp-aggregated atomics). blockDim is a
// multiple of 32.
extern "C" __global__ void bucket_count_warp_agg(const unsigned int* __restrict__ keys,
                                                 const float* __restrict__ vals,
                                                 int* __restrict__ counts, float threshold,
                                                 int buckets, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int bucket = -1;
#ifdef PLANTED
    // One bucket too many (as if an overflow bucket existed): keys that fall in it count
    // past counts.
    if (i < n && vals[i] > threshold) bucket = keys[i] % (unsigned int)(buckets + 1);
#else
    if (i < n && vals[i] > threshold) bucket = keys[i] % (unsigned int)buckets;
#endif
    unsigned int peers = __match_any_sync(0xffffffffu, bucket);
    if (bucket >= 0 && (int)(threadIdx.x % 32) == __ffs(peers) - 1)
        atomicAdd(&counts[bucket], __popc(peers));
}

// One Euler step of particles stored as an array of structs, a grid-stride loop; dead
// particles are copied unchanged.
struct Particle {
    float px, py, pz;
    float vx, vy, vz;
    float mass;
    int alive;
};

extern "C" __global__ void particles_step_aos(const Particle* __restrict__ in,
                                              Particle* __restrict__ out, float dt, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef PLANTED
         // `<=`: one particle past the end.
         i <= n;
#else
         i < n;
#endif
         i += blockDim.x * gridDim.x) {
        Particle p = in[i];
        if (p.alive) {
            float r2 = p.px * p.px + p.py * p.py + p.pz * p.pz + 0.01f;
            float f = -p.mass * rsqrtf(r2) / r2;
            p.vx += dt * f * p.px;
            p.vy += dt * f * p.py;
            p.vz += dt * f * p.pz;
            p.px += dt * p.vx;
            p.py += dt * p.vy;
            p.pz += dt * p.vz;
        }
        out[i] = p;
    }
}

// out[out_off + i] = a x[x_off + i] + b y[y_off + i] for i < n: each thread four consecutive
// elements a step (`#pragma unroll 4`), then a remainder loop; offsets from a struct of
// parameters passed by value.
struct AxpbyParams {
    long long x_off, y_off, out_off, n;
    float a, b;
};

extern "C" __global__ void axpby_unroll4(const float* __restrict__ x, const float* __restrict__ y,
                                         float* __restrict__ out, AxpbyParams p)
{
    long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long nthreads = (long long)blockDim.x * gridDim.x;
    const float* __restrict__ xs = x + p.x_off;
#ifdef PLANTED
    // The output's offset pasted onto y (a copy-paste slip): y is read past its end.
    const float* __restrict__ ys = y + p.out_off;
#else
    const float* __restrict__ ys = y + p.y_off;
#endif
    float* __restrict__ os = out + p.out_off;
    long long body = p.n / 4 * 4;
    for (long long base = tid * 4; base < body; base += nthreads * 4) {
#pragma unroll 4
        for (int k = 0; k < 4; ++k) os[base + k] = p.a * xs[base + k] + p.b * ys[base + k];
    }
    for (long long i = body + tid; i < p.n; i += nthreads) os[i] = p.a * xs[i] + p.b * ys[i];
}
