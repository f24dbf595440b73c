// Kernels that use shared memory correctly, for the race detector (cudacheck-core/src/race): none
// of them has a shared-memory race or a barrier error, so the detector must report nothing.
//
// The line directly above each kernel's signature is
//   // launch: grid=G block=B shared=S       (1-D grid and block; S = dynamic shared bytes)
// Every kernel reads `in` and writes `out` only below index grid*block <= 1024 <= n, and writes a
// result that does not depend on the schedule.

// Tree reduction with a barrier after every block-wide step; the last warp finishes with
// __syncwarp() between every step (each step's writes s[0 .. off) and reads s[off .. 2off) are
// disjoint, and the steps are ordered by the __syncwarp()s, executed by all 32 lanes).
// launch: grid=2 block=128 shared=0
extern "C" __global__ void ok_reduce_syncwarp(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    __syncthreads();
    for (int stride = 64; stride >= 32; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        if (t < 16) s[t] += s[t + 16];
        __syncwarp();
        if (t < 8) s[t] += s[t + 8];
        __syncwarp();
        if (t < 4) s[t] += s[t + 4];
        __syncwarp();
        if (t < 2) s[t] += s[t + 2];
        __syncwarp();
        if (t < 1) s[t] += s[t + 1];
        __syncwarp();
        if (t == 0) out[blockIdx.x] = s[0];
    }
}

// Tree reduction with barriers down to 32 partial sums, then warp 0 finishes in registers with
// __shfl_down_sync.
// launch: grid=4 block=256 shared=0
extern "C" __global__ void ok_reduce_shfl(float* out, const float* in, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    __syncthreads();
    for (int stride = 128; stride >= 32; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        float v = s[t];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (t == 0) out[blockIdx.x] = v;
    }
}

// Double buffering over 4 tiles of 128 floats with both barriers: one after the first tile's
// load, one at the end of every iteration (it orders iteration k's read of buf[k % 2] before
// iteration k + 1's overwrite of it, and iteration k's load of buf[(k + 1) % 2] before iteration
// k + 1's read of it).
// launch: grid=2 block=128 shared=0
extern "C" __global__ void ok_double_buffer(float* out, const float* in, int n)
{
    __shared__ float buf[2][128];
    int t = threadIdx.x;
    int base = blockIdx.x * 4 * 128;
    float acc = 0.0f;
    buf[0][t] = in[base + t];
    __syncthreads();
    for (int k = 0; k < 4; ++k) {
        if (k + 1 < 4) buf[(k + 1) % 2][t] = in[base + (k + 1) * 128 + t];
        acc += buf[k % 2][(t + 1) % 128];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}

// Histogram with shared-memory atomics: clear, barrier, atomicAdd, barrier, read.
// launch: grid=4 block=256 shared=0
extern "C" __global__ void ok_histogram_atomic(float* out, const float* in, int n)
{
    __shared__ int bins[16];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    if (t < 16) bins[t] = 0;
    __syncthreads();
    atomicAdd(&bins[(t * 7) % 16], 1);
    __syncthreads();
    out[gid] = (float)bins[t % 16] + 0.0f * in[gid];
}

// Warp-synchronous code: a butterfly sum with __shfl_xor_sync, then an exchange through shared
// memory inside each warp, every step separated by __syncwarp() (no data crosses warps).
// launch: grid=2 block=128 shared=0
extern "C" __global__ void ok_warp_shuffle_syncwarp(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    int lane = t & 31;
    float x = in[gid];
    float sum = x;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    s[t] = x;
    __syncwarp();
    float nb = s[t ^ 1];
    __syncwarp();
    s[t] = nb + sum;
    __syncwarp();
    out[gid] = s[(t & ~31) | ((lane + 1) & 31)];
}

// Transpose through a padded 2-D tile with a barrier between the write and the transposed read:
// 256 threads as 16x16 (tx = t % 16, ty = t / 16).
// launch: grid=4 block=256 shared=0
extern "C" __global__ void ok_transpose_padded(float* out, const float* in, int n)
{
    __shared__ float tile[16][17];
    int t = threadIdx.x;
    int tx = t % 16, ty = t / 16;
    int base = blockIdx.x * 256;
    tile[ty][tx] = in[base + ty * 16 + tx];
    __syncthreads();
    out[base + ty * 16 + tx] = tile[tx][ty];
}

// Dynamic shared memory: fill, barrier, read the neighbour (wrapping).
// launch: grid=2 block=128 shared=512
extern "C" __global__ void ok_dynamic_barrier(float* out, const float* in, int n)
{
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    dyn[t] = in[gid];
    __syncthreads();
    out[gid] = dyn[(t + 1) % blockDim.x] - dyn[t];
}

// Three-point stencil with halo loading: thread t fills s[t + 1], threads 0 and 127 also the
// halo cells s[0] and s[129] (each cell has one writer), then a barrier, then the reads.
// launch: grid=4 block=128 shared=0
extern "C" __global__ void ok_stencil_halo(float* out, const float* in, int n)
{
    __shared__ float s[130];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t + 1] = in[gid];
    if (t == 0) s[0] = gid > 0 ? in[gid - 1] : 0.0f;
    if (t == 127) s[129] = gid + 1 < n ? in[gid + 1] : 0.0f;
    __syncthreads();
    out[gid] = s[t] + s[t + 1] + s[t + 2];
}

// Every thread touches only its own element: no barrier needed. Through a volatile pointer so
// that the shared loads and stores stay in the code.
// launch: grid=2 block=128 shared=0
extern "C" __global__ void ok_own_element(float* out, const float* in, int n)
{
    __shared__ float s[128];
    volatile float* vs = s;
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    vs[t] = in[gid] * 2.0f;
    vs[t] = vs[t] + 1.0f;
    out[gid] = vs[t];
}

// Block-wide inclusive prefix sum (Hillis-Steele) with a double buffer: each step reads one
// buffer and writes the other, with a barrier after every step.
// launch: grid=2 block=256 shared=0
extern "C" __global__ void ok_prefix_sum(float* out, const float* in, int n)
{
    __shared__ float buf[2][256];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    int pout = 0;
    buf[0][t] = in[gid];
    __syncthreads();
    for (int off = 1; off < 256; off <<= 1) {
        int pin = pout;
        pout = 1 - pout;
        if (t >= off) buf[pout][t] = buf[pin][t] + buf[pin][t - off];
        else buf[pout][t] = buf[pin][t];
        __syncthreads();
    }
    out[gid] = buf[pout][t];
}

// Early `if (i >= n) return;` after the shared phase (write, barrier, read): no thread leaves
// before the barrier.
// launch: grid=4 block=256 shared=0
extern "C" __global__ void ok_early_return(float* out, const float* in, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    float v = s[t] + s[255 - t];
    if (i >= n) return;
    out[i] = v;
}

// SGEMM-like tiled product C = A * A of the 32x32 matrix A = in[0 .. 1024): 4 blocks of 16x16
// output tiles, 256 threads as 16x16, a loop over the 2 tiles of K with a barrier after the
// loads and one at the end of the body.
// launch: grid=4 block=256 shared=0
extern "C" __global__ void ok_sgemm_tiles(float* out, const float* in, int n)
{
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    int t = threadIdx.x;
    int tx = t % 16, ty = t / 16;
    int row = (blockIdx.x / 2) * 16 + ty;
    int col = (blockIdx.x % 2) * 16 + tx;
    float acc = 0.0f;
    for (int kt = 0; kt < 2; ++kt) {
        As[ty][tx] = in[row * 32 + kt * 16 + tx];
        Bs[ty][tx] = in[(kt * 16 + ty) * 32 + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    out[row * 32 + col] = acc;
}

// Two-level block reduction: each warp reduces with shuffles, lane 0 of each warp writes its sum
// to s[warp], a barrier, then warp 0 reduces the 8 partial sums with shuffles.
// launch: grid=4 block=256 shared=0
extern "C" __global__ void ok_block_reduce_two_level(float* out, const float* in, int n)
{
    __shared__ float s[8];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    int lane = t & 31, warp = t >> 5;
    float v = in[gid];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) s[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < 8 ? s[lane] : 0.0f;
        for (int off = 4; off > 0; off >>= 1) w += __shfl_down_sync(0xffffffffu, w, off);
        if (lane == 0) out[blockIdx.x] = w;
    }
}

// Reusing one buffer for two phases: the barrier between the phases orders phase 1's reads
// before phase 2's overwrites (the WAR that race_second_round lacks).
// launch: grid=2 block=128 shared=0
extern "C" __global__ void ok_two_phase_reuse(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    float acc = 0.0f;
    for (int r = 0; r < 2; ++r) {
        s[t] = in[gid] + (float)r;
        __syncthreads();
        acc += s[(t + 1) % 128];
        __syncthreads();
    }
    out[gid] = acc;
}

// Double buffering with cp.async: tile k + 1 is copied into buf[(k + 1) % 2] asynchronously
// while buf[k % 2] is read; `cp.async.wait_group 1` and a barrier before the reads, a barrier
// after them. The asynchronous copy counts as a write by its thread when it is issued.
// launch: grid=2 block=128 shared=0
extern "C" __global__ void ok_cp_async_double_buffer(float* out, const float* in, int n)
{
    __shared__ float buf[2][128];
    int t = threadIdx.x;
    int base = blockIdx.x * 4 * 128;
    float acc = 0.0f;
    unsigned s0 = (unsigned)__cvta_generic_to_shared(&buf[0][t]);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s0), "l"(in + base + t));
    asm volatile("cp.async.commit_group;\n" ::);
    for (int k = 0; k < 4; ++k) {
        if (k + 1 < 4) {
            unsigned sn = (unsigned)__cvta_generic_to_shared(&buf[(k + 1) % 2][t]);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sn),
                         "l"(in + base + (k + 1) * 128 + t));
        }
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 1;\n" ::);
        __syncthreads();
        acc += buf[k % 2][(t + 1) % 128];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}
