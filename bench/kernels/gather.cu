// Indirect access through index buffers: embedding gather, permutation scatter, integer
// scatter-add with atomics, and CSR sparse matrix-vector products (a thread per row and a warp
// per row).

// ---- Embedding lookup: out[r, :] = table[ids[r], :] ------------------------------------------

extern "C" __global__ void embedding_gather(float* __restrict__ out, const float* __restrict__ table,
                                            const int* __restrict__ ids, int rows, int dim)
{
    int r = blockIdx.x;
    if (r >= rows) return;
    int id = ids[r];
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        out[(size_t)r * dim + c] = table[(size_t)id * dim + c];
    }
}

// ---- Row scatter through a permutation: out[perm[r], :] = in[r, :] ---------------------------

extern "C" __global__ void scatter_rows(float* __restrict__ out, const float* __restrict__ in,
                                        const long long* __restrict__ perm, int rows, int dim)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * dim) return;
    int r = i / dim, c = i % dim;
    out[perm[r] * dim + c] = in[i];
}

// ---- Scatter-add of integers (deterministic with atomics): out[idx[i]] += val[i] --------------

extern "C" __global__ void scatter_add_i32(int* __restrict__ out, const int* __restrict__ idx,
                                           const int* __restrict__ val, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&out[idx[i]], val[i]);
    }
}

// ---- Gather by index on one axis of a 2-D tensor: out[i, j] = src[i, index[i, j]] ------------

extern "C" __global__ void gather_axis1(float* __restrict__ out, const float* __restrict__ src,
                                        const unsigned int* __restrict__ index, int rows,
                                        int src_cols, int out_cols)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y;
    if (j < out_cols && i < rows) {
        out[i * out_cols + j] = src[i * src_cols + index[i * out_cols + j]];
    }
}

// ---- CSR SpMV, one thread per row ---------------------------------------------------------------

extern "C" __global__ void spmv_csr_scalar(float* __restrict__ y, const int* __restrict__ row_ptr,
                                           const int* __restrict__ col_idx,
                                           const float* __restrict__ vals,
                                           const float* __restrict__ x, int rows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
            sum += vals[j] * x[col_idx[j]];
        }
        y[row] = sum;
    }
}

// ---- CSR SpMV, one warp per row, shuffle reduction ----------------------------------------------

extern "C" __global__ void spmv_csr_warp(float* __restrict__ y, const int* __restrict__ row_ptr,
                                         const int* __restrict__ col_idx,
                                         const float* __restrict__ vals,
                                         const float* __restrict__ x, int rows)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= rows) return;
    int begin = row_ptr[warp], end = row_ptr[warp + 1];
    float sum = 0.0f;
    for (int j = begin + lane; j < end; j += 32) {
        sum += vals[j] * __ldg(&x[col_idx[j]]);
    }
    for (int off = 16; off > 0; off /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, off);
    }
    if (lane == 0) y[warp] = sum;
}
