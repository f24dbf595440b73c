// Irregular access through offset arrays: an embedding bag with 64-bit indices and offsets,
// ragged batches by cumulative sequence lengths, ELL and COO sparse matrix-vector products,
// and a triangular loop over a packed lower-triangular matrix.
//
// Built with PLANTED defined, each kernel has one realistic out-of-bounds bug (see the
// comment at its `#ifdef PLANTED`).
#include <cuda_fp16.h>

// Embedding bag, sum mode: bag b sums rows indices[offsets[b] .. offsets[b + 1]) of the
// [num, D] table (the last bag ends at the indices' end). A block per bag, a thread per
// feature.
extern "C" __global__ void embedding_bag_sum(const float* __restrict__ table,
                                             const long long* __restrict__ indices,
                                             const long long* __restrict__ offsets,
                                             float* __restrict__ out, int bags,
                                             long long n_indices, int D)
{
    int b = blockIdx.x;
    long long start = offsets[b];
#ifdef PLANTED
    // The last bag's end read from offsets[bags], one past the offsets.
    long long end = offsets[b + 1];
#else
    long long end = b + 1 < bags ? offsets[b + 1] : n_indices;
#endif
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (long long i = start; i < end; ++i) acc += table[indices[i] * D + d];
        out[(size_t)b * D + d] = acc;
    }
}

// Mean over each sequence of a ragged batch of half vectors: cu_seqlens[b] .. cu_seqlens[b+1]
// are sequence b's rows of values [total, D]; a thread per (sequence, feature pair).
extern "C" __global__ void ragged_mean_h2(const __half2* __restrict__ values,
                                          const int* __restrict__ cu_seqlens,
                                          float2* __restrict__ out, int batch, int D2)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    int b = blockIdx.y;
    if (d >= D2 || b >= batch) return;
    int s = cu_seqlens[b], e = cu_seqlens[b + 1];
    float2 acc = make_float2(0.0f, 0.0f);
#ifdef PLANTED
    // `<=`: one row past the sequence (past the values for the last one).
    for (int t = s; t <= e; ++t) {
#else
    for (int t = s; t < e; ++t) {
#endif
        float2 v = __half22float2(values[(size_t)t * D2 + d]);
        acc.x += v.x;
        acc.y += v.y;
    }
    float inv = e > s ? 1.0f / (e - s) : 0.0f;
    out[(size_t)b * D2 + d] = make_float2(acc.x * inv, acc.y * inv);
}

// ELL SpMV: K slots a row, column-major (slot k of row r at k * rows + r), unused slots
// with column -1.
extern "C" __global__ void spmv_ell(const int* __restrict__ cols, const float* __restrict__ vals,
                                    const float* __restrict__ x, float* __restrict__ y,
                                    int rows, int K)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
#ifdef PLANTED
    // `<=` over the slots: reads a slot past the column indices.
    for (int k = 0; k <= K; ++k) {
#else
    for (int k = 0; k < K; ++k) {
#endif
        int c = cols[(size_t)k * rows + r];
        if (c >= 0) acc += vals[(size_t)k * rows + r] * x[c];
    }
    y[r] = acc;
}

// COO SpMV with atomics, a grid-stride loop over the nonzeros; row -1 marks a dropped entry.
// Values and x hold small integers, so the sums are exact whatever the order of the atomics.
extern "C" __global__ void spmv_coo_atomic(const int* __restrict__ row,
                                           const int* __restrict__ col,
                                           const float* __restrict__ val,
                                           const float* __restrict__ x, float* __restrict__ y,
                                           int nnz)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef PLANTED
         // `<=`: one nonzero past the end.
         i <= nnz;
#else
         i < nnz;
#endif
         i += blockDim.x * gridDim.x) {
        int r = row[i];
        if (r < 0) continue;  // an explicit zero's slot
        atomicAdd(&y[r], val[i] * x[col[i]]);
    }
}

// y = L x for a lower-triangular L stored packed by rows (row i: i + 1 entries from
// i (i + 1) / 2), 64-bit offsets; a warp per row.
extern "C" __global__ void tri_lower_matvec_packed(const float* __restrict__ L,
                                                   const float* __restrict__ x,
                                                   float* __restrict__ y, int n)
{
    int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (i >= n) return;
#ifdef PLANTED
    // The row's start one row on ((i + 1)(i + 2) / 2): the last row reads past L.
    const float* Li = L + (long long)(i + 1) * (i + 2) / 2;
#else
    const float* Li = L + (long long)i * (i + 1) / 2;
#endif
    float acc = 0.0f;
    for (int j = lane; j <= i; j += 32) acc += Li[j] * x[j];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[i] = acc;
}
