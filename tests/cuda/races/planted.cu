// Planted shared-memory races and barrier errors for the race detector (cudacheck-core/src/race).
//
// Every kernel has exactly ONE planted mistake. Above each kernel:
//   // expect: KIND array=ARRAY element=E   (KIND: raw | war | waw | divergent-barrier | warp-mask;
//                                            E: the smallest flat element index, in units of the
//                                            array's element type, that is certainly raced on;
//                                            array=- element=- for barrier errors)
//   // launch: grid=G block=B shared=S       (1-D grid and block; S = dynamic shared bytes)
// The launch line is always the line directly above the kernel's signature.
// The two conflicting accesses are on the lines with the trailing markers RACE-n, n = 1 for the
// access that comes first, 2 for the second (only the first marker where both accesses are the
// same statement run by two threads); barrier errors mark their barrier statements BARRIER-n
// (n = 2 only when two different barrier statements take part).
//
// Every race is certain in the happens-before sense: two different threads of one block access
// the same shared element, at least one of them writes, and no __syncthreads() (threads of
// different warps) or __syncwarp()/shuffle (threads of one warp) lies between them on any path.
// None of them relies on the race producing wrong numbers. Every kernel reads `in` and writes
// `out` only below index grid*block <= 1024 <= n.

// 1. RAW across warps: thread t writes s[t], then, with no barrier, reads s[(t + 64) % 128],
//    which thread t + 64 (another warp) wrote. Element 0: written by thread 0, read by thread 64.
// expect: raw array=s element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_raw_across_warps(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid] * 2.0f;           // RACE-1
    float v = s[(t + 64) % 128];     // RACE-2
    out[gid] = v;
}

// 2. RAW inside one warp: a block of 32 threads, lane t writes s[t] and reads s[t ^ 1] with no
//    __syncwarp() between. Element 0: written by lane 0, read by lane 1.
// expect: raw array=s element=0
// launch: grid=2 block=32 shared=0
extern "C" __global__ void race_raw_in_warp(float* out, const float* in, int n)
{
    __shared__ float s[32];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid] + 1.0f;           // RACE-1
    float v = s[t ^ 1];              // RACE-2
    out[gid] = v;
}

// 3. WAR: an in-place shift left. Thread t reads s[t + 1], then, with no barrier, writes s[t]:
//    thread t + 1 may already have overwritten s[t + 1]. Element 0 is only touched by thread 0;
//    element 1: read by thread 0, written by thread 1.
// expect: war array=s element=1
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_war_shift(float* out, const float* in, int n)
{
    __shared__ float s[129];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    if (t == 0) s[128] = 0.0f;
    __syncthreads();
    float v = s[t + 1];              // RACE-1
    s[t] = v;                        // RACE-2
    __syncthreads();
    out[gid] = s[t];
}

// 4. WAW: threads 2k and 2k + 1 both write s[k]. The barrier after orders the writes with the
//    reads, not with each other. Element 0: written by threads 0 and 1.
// expect: waw array=s element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_waw_pairs(float* out, const float* in, int n)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t / 2] = in[gid] + (float)t;   // RACE-1
    __syncthreads();
    out[gid] = s[t / 2];
}

// 5. Tree reduction missing the barrier inside its loop. Element 0 is only touched by thread 0;
//    element 1: written by thread 1 (strides 64 .. 2), read by thread 0 at stride 1, no barrier
//    or __syncwarp() between. (Across warps too: s[32] written by thread 32 at stride 64, read by
//    thread 0 at stride 32.) Both accesses are the same statement.
// expect: raw array=s element=1
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_reduce_no_barrier(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    __syncthreads();
    for (int stride = 64; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];   // RACE-1
        // (missing barrier)
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

// 6. Tree reduction with barriers down to stride 32, whose last steps run in warp 0 with
//    __syncwarp() between them, except between the last two (strides 2 and 1): the classic
//    warp-synchronous bug, in one place. Element 1:
//    last written by lane 1 at stride 2, read by lane 0 at stride 1. (Element 0 is only touched by
//    lane 0.)
// expect: raw array=s element=1
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_reduce_warp_unsynced(float* out, const float* in, int n)
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
    if (t < 16) s[t] += s[t + 16];
    __syncwarp();
    if (t < 8) s[t] += s[t + 8];
    __syncwarp();
    if (t < 4) s[t] += s[t + 4];
    __syncwarp();
    if (t < 2) s[t] += s[t + 2];     // RACE-1
    if (t < 1) s[t] += s[t + 1];     // RACE-2
    if (t == 0) out[blockIdx.x] = s[0];
}

// 7. Double buffering over 4 tiles of 128 floats: tile k + 1 is loaded into buf[(k + 1) % 2]
//    while buf[k % 2] is read; the loop's barrier is there, the one after the first tile's load
//    (before the loop) is missing. Element 0 (buf[0][0]): written by thread 0 before the loop,
//    read by thread 127 in iteration 0. Nothing else races: buf[0]'s next write (iteration 1) is
//    by the same threads, after the loop's barrier.
// expect: raw array=buf element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_double_buffer(float* out, const float* in, int n)
{
    __shared__ float buf[2][128];
    int t = threadIdx.x;
    int base = blockIdx.x * 4 * 128;
    float acc = 0.0f;
    buf[0][t] = in[base + t];                            // RACE-1
    // (missing barrier)
    for (int k = 0; k < 4; ++k) {
        if (k + 1 < 4) buf[(k + 1) % 2][t] = in[base + (k + 1) * 128 + t];
        acc += buf[k % 2][(t + 1) % 128];                // RACE-2
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}

// 8. Transpose through a padded 2-D tile, missing its barrier: 256 threads as 16x16
//    (tx = t % 16, ty = t / 16). tile[r][c] is written by thread 16r + c and read by thread
//    16c + r: the diagonal is private, element 1 (tile[0][1]) is written by thread 1 and read by
//    thread 16. Flat index = row * 17 + column.
// expect: raw array=tile element=1
// launch: grid=4 block=256 shared=0
extern "C" __global__ void race_transpose_no_barrier(float* out, const float* in, int n)
{
    __shared__ float tile[16][17];
    int t = threadIdx.x;
    int tx = t % 16, ty = t / 16;
    int base = blockIdx.x * 256;
    tile[ty][tx] = in[base + ty * 16 + tx];              // RACE-1
    out[base + ty * 16 + tx] = tile[tx][ty];             // RACE-2
}

// 9. Dynamic shared memory: fill dyn[t], then read the right neighbour (wrapping) with no
//    barrier. Element 0: written by thread 0, read by thread 127.
// expect: raw array=dyn element=0
// launch: grid=2 block=128 shared=512
extern "C" __global__ void race_dynamic_neighbour(float* out, const float* in, int n)
{
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    dyn[t] = in[gid];                                    // RACE-1
    out[gid] = dyn[(t + 1) % blockDim.x] - dyn[t];       // RACE-2
}

// 10. Three-point stencil with no barrier between filling s and reading the neighbours (edges
//     guarded). Element 0: written by thread 0, read by thread 1 as s[t - 1].
// expect: raw array=s element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_stencil(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];                                                               // RACE-1
    out[gid] = (t > 0 ? s[t - 1] : 0.0f) + s[t] + (t < 127 ? s[t + 1] : 0.0f);    // RACE-2
}

// 11. Atomic against plain access: odd threads atomicAdd the shared counter while thread 0 reads
//     it with a plain load, no barrier between. (The initialisation is ordered by the barrier;
//     the atomics among themselves do not race.)
// expect: raw array=hits element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_atomic_vs_plain(float* out, const float* in, int n)
{
    __shared__ int hits[1];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    if (t == 0) hits[0] = 0;
    __syncthreads();
    if (t % 2 == 1) atomicAdd(&hits[0], 1);                      // RACE-1
    if (t == 0) out[blockIdx.x] = (float)hits[0] + in[gid];      // RACE-2
}

// 12. The barrier is there but in the wrong place: before the write instead of between the write
//     and the read. Element 0: written by thread 0, read by thread 127 (s[127 - t]).
// expect: raw array=s element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_barrier_misplaced(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    float x = in[gid] * 3.0f;
    __syncthreads();                 // misplaced: belongs between the two lines below
    s[t] = x;                        // RACE-1
    out[gid] = s[127 - t];           // RACE-2
}

// 13. Histogram with a plain (non-atomic) read-modify-write: 16 threads per bin (bin = t % 8).
//     Element 0: threads 0, 8, 16, ... all do bins[0] += 1. Every pair of these read-modify-writes
//     conflicts write against write (and read against write, in both orders); waw is the kind
//     that does not depend on the order the detector sees them in.
// expect: waw array=bins element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_histogram_plain(float* out, const float* in, int n)
{
    __shared__ int bins[8];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    if (t < 8) bins[t] = 0;
    __syncthreads();
    bins[t % 8] += 1;                // RACE-1
    __syncthreads();
    out[gid] = (float)bins[t % 8] + 0.0f * in[gid];
}

// 14. A race only in the loop's second round: the barrier at the end of the loop body is
//     missing, so round 1's write s[t] races with round 0's read s[(t + 1) % 128] by thread t - 1.
//     (Round 0's write and read are ordered by the barrier in the middle.) Element 0: read by
//     thread 127 in round 0, written by thread 0 in round 1. The first marker is on the read
//     (round 0, the earlier access), the second on the write (round 1).
// expect: war array=s element=0
// launch: grid=2 block=128 shared=0
extern "C" __global__ void race_second_round(float* out, const float* in, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    float acc = 0.0f;
    for (int r = 0; r < 2; ++r) {
        s[t] = in[gid] + (float)r;   // RACE-2
        __syncthreads();
        acc += s[(t + 1) % 128];     // RACE-1
        // (missing barrier)
    }
    out[gid] = acc;
}

// 15. Divergent __syncthreads(): warp 0 and warp 1 wait at two different barrier statements.
//     No race: after the first (correct) barrier, s is only read.
// expect: divergent-barrier array=- element=-
// launch: grid=2 block=64 shared=0
extern "C" __global__ void barrier_divergent_branches(float* out, const float* in, int n)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    __syncthreads();
    float v = s[63 - t];
    if (t < 32) {
        v *= 2.0f;
        __syncthreads();             // BARRIER-1
        v += s[t + 32];
    } else {
        v += 1.0f;
        __syncthreads();             // BARRIER-2
        v -= s[t - 32];
    }
    out[gid] = v;
}

// 16. A __syncthreads() inside `if (t < 32)` (warp 0 only), followed by an unconditional one:
//     warp 0's conditional barrier matches warp 1's unconditional one, then warp 0 would wait
//     alone at the unconditional one. No race: after the first (correct) barrier, s is only
//     read. (Lanes of one warp at different barriers are not detected: the hardware's aligned
//     barrier hangs before any check can run; see the race module's docs.)
// expect: divergent-barrier array=- element=-
// launch: grid=2 block=64 shared=0
extern "C" __global__ void barrier_conditional_then_unconditional(float* out, const float* in, int n)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    __syncthreads();
    float v = s[63 - t];
    if (t < 32) {
        v *= 2.0f;
        __syncthreads();             // BARRIER-1
        v += s[(t + 2) % 32];
    }
    v += 1.0f;
    __syncthreads();                 // BARRIER-2
    out[gid] = v;
}

// 17. __syncwarp() with a mask that excludes the calling lane: all 32 lanes of each warp execute
//     __syncwarp(0x0000ffff), lanes 16 .. 31 are not in it. No race: the exchange through s is
//     ordered by the correct full-warp __syncwarp() before it.
// expect: warp-mask array=- element=-
// launch: grid=2 block=64 shared=0
extern "C" __global__ void barrier_syncwarp_bad_mask(float* out, const float* in, int n)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + t;
    s[t] = in[gid];
    __syncwarp();
    float v = s[t ^ 1];
    __syncwarp(0x0000ffffu);         // BARRIER-1
    out[gid] = v + 1.0f;
}
