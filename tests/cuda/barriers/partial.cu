// Barriers that only part of a block reaches, and lanes of one warp at two barrier
// statements: the race-checked build's barrier checks (tests/tests/gpu_barriers.rs and
// nvrtc_barriers.rs). Every kernel takes `(out, in, n, planted)`: with `planted == 0` it is
// correct (every thread reaches every barrier), with `planted != 0` it makes the mistake its
// comment names.
//
// Format:
//   // expect: KIND          (KIND: exited | divergent)
//   // launch: grid=G bx=X by=Y   (1-D grid, 2-D block)
// The launch line is the line directly above the kernel's signature. The barrier a report must
// name carries BARRIER-1 (BARRIER-2: the other barrier statement of a divergent one); the line
// threads leave from carries EXIT-1 where the source has one (`return`, `break`).
#include <cooperative_groups.h>

// Rows 0..3 of a 16 x 8 block stage a tile and meet at a barrier inside their branch; rows 4..7
// skip the branch and leave.
// expect: exited
// launch: grid=4 bx=16 by=8
extern "C" __global__ void rows_stage_tile(float* out, const float* in, int n, int planted)
{
    __shared__ float tile[8][17];
    int x = threadIdx.x, y = threadIdx.y;
    int g = (blockIdx.x * 8 + y) * 16 + x;
    float r = in[g];
    if (planted) {
        if (y < 4) {
            tile[y][x] = r * 3.0f;
            __syncthreads();                         // BARRIER-1
            out[g] = tile[3 - y][15 - x];
        }
        return;
    }
    tile[y][x] = r * 3.0f;
    __syncthreads();
    out[g] = y < 4 ? tile[3 - y][15 - x] : r;
}

// A scan whose number of steps a thread computes from its own warp: warps of the block stop
// after different numbers of barriers.
// expect: exited
// launch: grid=3 bx=128 by=1
extern "C" __global__ void scan_steps_per_warp(float* out, const float* in, int n, int planted)
{
    __shared__ float buf[128];
    int t = threadIdx.x;
    int g = blockIdx.x * 128 + t;
    buf[t] = in[g];
    int steps = planted ? 2 + (t >> 5) : 5;
    for (int d = 1, k = 0; k < steps; d <<= 1, ++k) {
        __syncthreads();                             // BARRIER-1
        float add = t >= d ? buf[t - d] : 0.0f;
        __syncthreads();
        buf[t] += add;
    }
    out[g] = buf[t];
}

// Iterates until a thread's value settles; with `planted`, a settled thread leaves the loop
// (and the block) while the others wait for it at the next round.
// expect: exited
// launch: grid=2 bx=64 by=1
extern "C" __global__ void settle_rounds(float* out, const float* in, int n, int planted)
{
    __shared__ float v[64];
    int t = threadIdx.x;
    int g = blockIdx.x * 64 + t;
    float mine = in[g];
    int round = 0;
    while (round < 6) {
        v[t] = mine;
        __syncthreads();                             // BARRIER-1
        float right = v[(t + 1) & 63];
        __syncthreads();
        mine = 0.75f * mine + 0.25f * right;
        ++round;
        if (planted && (t & 32) && round == 3) break; // EXIT-1
    }
    out[g] = mine;
}

// `__syncthreads_or` (a `bar.red.or`) that warp 2 of 3 does not call.
// expect: exited
// launch: grid=2 bx=96 by=1
extern "C" __global__ void any_negative_vote(float* out, const float* in, int n, int planted)
{
    int t = threadIdx.x;
    int g = blockIdx.x * 96 + t;
    float x = in[g];
    int any = 0;
    if (!planted || t < 64) any = __syncthreads_or(x < 0.0f); // BARRIER-1
    out[g] = any ? -x : x;
}

// The common `if (i >= n) return;` before a barrier, in a last block only partly inside the
// data; the correct form guards the work and lets every thread reach the barrier.
// expect: exited
// launch: grid=3 bx=64 by=1
extern "C" __global__ void tail_block_return(float* out, const float* in, int n, int planted)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    int g = blockIdx.x * 64 + t;
    if (planted && g >= n) return;                   // EXIT-1
    s[t] = g < n ? in[g] : 0.0f;
    __syncthreads();                                 // BARRIER-1
    if (g < n) out[g] = s[t] + s[63 - t];
}

// Cooperative groups' block `sync()` skipped by the lanes 0..7 of every warp.
// expect: exited
// launch: grid=2 bx=64 by=1
extern "C" __global__ void group_sync_some_lanes(float* out, const float* in, int n, int planted)
{
    __shared__ float s[64];
    cooperative_groups::thread_block b = cooperative_groups::this_thread_block();
    int t = threadIdx.x;
    int g = blockIdx.x * 64 + t;
    s[t] = in[g] + 1.0f;
    if (planted && (t & 31) < 8) return;             // EXIT-1
    b.sync();                                        // BARRIER-1
    out[g] = s[t] * s[(t + 32) & 63];
}

// The upper and lower half-warps at two different `__syncthreads()`, in every warp.
// expect: divergent
// launch: grid=2 bx=96 by=1
extern "C" __global__ void half_warps_two_barriers(float* out, const float* in, int n, int planted)
{
    __shared__ float s[96];
    int t = threadIdx.x;
    int g = blockIdx.x * 96 + t;
    float x = in[g];
    s[t] = x;
    float y;
    if (planted && (t & 16)) {
        y = x * 0.5f;
        __syncthreads();                             // BARRIER-1
        y += s[95 - t];
    } else {
        y = x + 2.0f;
        __syncthreads();                             // BARRIER-2
        y += s[95 - t];
    }
    out[g] = y;
}
