// Barriers that only part of a block reaches: the planted cases of the barrier-completeness
// check, written before the check exists (so that it is measured on cases it was not built
// around). Each `bug_*` case runs one kernel with one mistake; `correct` runs every kernel's
// correct twin. The line that makes the mistake carries a `RUN-BUG` marker with the case's name
// in parentheses; where a report could name either of two places (the barrier reached, or where
// the others went), both are marked, the name followed by `/barrier` and `/elsewhere`.
//
// Conventions of tests/run/cpp/common.cuh: `prog CASE`, `prog --list`, results as hashes and a
// comparison with a CPU reference. A case that hangs on the hardware is killed by the runner's
// time limit: which of them do is part of what these cases record.
//
// bug_half_block     a 128-thread block: threads 0..63 fill a tile and wait at a barrier inside
//                    `if (t < 64)`; warps 2 and 3 skip it and exit.
// bug_trip_count     a barrier in a loop whose trip count depends on the thread (t / 32 % 3
//                    rounds): warps reach different numbers of barriers.
// bug_break_early    a loop with a barrier per round, and a `break` that threads whose value
//                    converged take: they leave while the others wait at the next round's barrier.
// bug_count_subset   `__syncthreads_count` called by the threads of three warps of four.
// bug_cg_subset      cooperative groups' `this_thread_block().sync()` inside `if (warp != 1)`.
// bug_lanes_split    lanes of one warp at two different `__syncthreads()` (odd and even lanes):
//                    `bar.sync` is aligned, so this may hang before any check can run.
// probe_early_exit   not a planted bug: the common `if (i >= n) return;` before a barrier, in a
//                    last block only partly inside the data. Threads that exited are not
//                    waited for on current GPUs, and compute-sanitizer's synccheck says nothing
//                    of it; it still breaks CUDA's rule that a barrier in conditional code is
//                    reached by the whole block, and race-checked runs report it (marked like
//                    the bugs, and left out of `correct`).
#include "../cpp/common.cuh"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Correct: every thread of the block reaches the barrier.
__global__ void half_block_tile(const float* in, float* out, bool planted)
{
    __shared__ float tile[64];
    int t = threadIdx.x;
    float v = 0.0f;
    if (planted) {
        if (t < 64) {
            tile[t] = in[blockIdx.x * 64 + t];
            __syncthreads(); // RUN-BUG(bug_half_block)
            v = tile[63 - t];
            out[blockIdx.x * 64 + t] = v;
        }
        return;
    }
    if (t < 64) tile[t] = in[blockIdx.x * 64 + t];
    __syncthreads();
    if (t < 64) out[blockIdx.x * 64 + t] = tile[63 - t];
}

__global__ void trip_count_rounds(const float* in, float* out, bool planted)
{
    __shared__ float acc[128];
    int t = threadIdx.x;
    acc[t] = in[blockIdx.x * 128 + t];
    __syncthreads();
    int rounds = planted ? (t / 32) % 3 + 1 : 3;
    for (int r = 0; r < rounds; ++r) {
        float left = acc[(t + 127) % 128];
        __syncthreads(); // RUN-BUG(bug_trip_count)
        acc[t] += left * 0.5f;
        __syncthreads();
    }
    out[blockIdx.x * 128 + t] = acc[t];
}

__global__ void converge_rounds(const float* in, float* out, bool planted)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    float v = in[blockIdx.x * 128 + t];
    s[t] = v;
    __syncthreads();
    for (int r = 0; r < 8; ++r) {
        float nb = s[t ^ 1];
        __syncthreads(); // RUN-BUG(bug_break_early/barrier)
        v = 0.5f * (v + nb);
        s[t] = v;
        __syncthreads();
        // Planted: a thread whose value stopped changing leaves the loop alone.
        if (planted && t >= 96 && r == 2) break; // RUN-BUG(bug_break_early/elsewhere)
    }
    out[blockIdx.x * 128 + t] = v;
}

__global__ void count_positive(const float* in, int* out, bool planted)
{
    int t = threadIdx.x;
    float v = in[blockIdx.x * 128 + t];
    int n = 0;
    if (!planted || t < 96) n = __syncthreads_count(v > 0.0f); // RUN-BUG(bug_count_subset)
    if (t == 0) out[blockIdx.x] = n;
}

__global__ void cg_block_sync(const float* in, float* out, bool planted)
{
    __shared__ float s[128];
    cg::thread_block block = cg::this_thread_block();
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 128 + t];
    if (!planted || t / 32 != 1) block.sync(); // RUN-BUG(bug_cg_subset)
    out[blockIdx.x * 128 + t] = s[127 - t] + s[t];
}

__global__ void lanes_split(const float* in, float* out, bool planted)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 64 + t];
    float v;
    if (planted && (t & 1)) {
        v = s[t] * 2.0f;
        __syncthreads(); // RUN-BUG(bug_lanes_split/barrier)
        v -= s[63 - t];
    } else {
        v = s[t] + 1.0f;
        __syncthreads(); // RUN-BUG(bug_lanes_split/elsewhere)
        v += s[63 - t];
    }
    out[blockIdx.x * 64 + t] = v;
}

__global__ void early_exit_then_sync(const float* in, float* out, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    int i = blockIdx.x * 128 + t;
    if (i >= n) return; // RUN-BUG(probe_early_exit/elsewhere)
    s[t] = in[i];
    __syncthreads(); // RUN-BUG(probe_early_exit/barrier)
    int partner = (t + 1 < 128 && i + 1 < n) ? t + 1 : t;
    out[i] = s[t] + s[partner];
}

template <typename T>
static T* upload(const std::vector<T>& h)
{
    return to_device(h);
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv,
                                  {"correct", "bug_half_block", "bug_trip_count", "bug_break_early",
                                   "bug_count_subset", "bug_cg_subset", "bug_lanes_split",
                                   "probe_early_exit"});
    const bool all = is_case(which, "correct");
    const int blocks = 3;
    std::vector<float> h(blocks * 128);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((static_cast<int>(i) * 7) % 13 - 6);
    float* d_in = upload(h);
    float* d_out = nullptr;
    int* d_count = nullptr;
    CHECK(cudaMalloc(&d_out, h.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_count, blocks * sizeof(int)));

    auto run_float = [&](const char* name, auto launch) {
        poison(d_out, h.size() * sizeof(float));
        launch();
        CHECK_LAUNCH();
        print_result(name, to_host(d_out, h.size()));
    };

    if (all || is_case(which, "bug_half_block")) {
        run_float("half_block", [&] {
            half_block_tile<<<blocks, 128>>>(d_in, d_out, !all);
        });
    }
    if (all || is_case(which, "bug_trip_count")) {
        run_float("trip_count", [&] { trip_count_rounds<<<blocks, 128>>>(d_in, d_out, !all); });
    }
    if (all || is_case(which, "bug_break_early")) {
        run_float("converge", [&] { converge_rounds<<<blocks, 128>>>(d_in, d_out, !all); });
    }
    if (all || is_case(which, "bug_count_subset")) {
        poison(d_count, blocks * sizeof(int));
        count_positive<<<blocks, 128>>>(d_in, d_count, !all);
        CHECK_LAUNCH();
        print_result("count_positive", to_host(d_count, blocks));
    }
    if (all || is_case(which, "bug_cg_subset")) {
        run_float("cg_block_sync", [&] { cg_block_sync<<<blocks, 128>>>(d_in, d_out, !all); });
    }
    if (all || is_case(which, "bug_lanes_split")) {
        run_float("lanes_split", [&] { lanes_split<<<blocks * 2, 64>>>(d_in, d_out, !all); });
    }
    // Not part of `correct`: the early return before a barrier is reported (see the top).
    if (is_case(which, "probe_early_exit")) {
        const int n = blocks * 128 - 50;
        run_float("early_exit", [&] { early_exit_then_sync<<<blocks, 128>>>(d_in, d_out, n); });
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_count));
    return 0;
}
