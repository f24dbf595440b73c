// Shared accesses whose element indices no two threads share (thread-private in their barrier
// interval), and variants where they are shared, for the race checker's index proof
// (cudacheck-core/src/race/index.rs). Lines marked `// SHARED-n` race when the block has more
// than one row (the index is in threadIdx.x alone) or in every block (the racing kernels);
// `// PRIVATE` lines cannot race in a one-row block of a power-of-two width.

// A tree reduction indexed by threadIdx.x: thread-private in a (64, 1, 1) block; in a (32, 2, 1)
// block the two rows write s[0..31] together (a write-write race on element 0 between threads
// (0, 0) and (0, 1)).
extern "C" __global__ void tree_tid_x(float* out, const float* in, int n)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    int gid = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + t;
    s[t] = in[gid];                          // SHARED-1 PRIVATE
    __syncthreads();
    if (t < 32) s[t] += s[t + 32];           // PRIVATE
    __syncthreads();
    if (t < 16) s[t] += s[t + 16];           // PRIVATE
    __syncthreads();
    if (t == 0 && threadIdx.y == 0) out[blockIdx.x] = s[0];
}

// A row cache filled, rescaled in place and written out by block-stride loops (the row softmax's
// pattern): thread-private for a power-of-two block width, checked for any other (96: the
// stride argument needs blockDim.x to divide 2^32).
extern "C" __global__ void stride_rescale(float* out, const float* in, int n)
{
    extern __shared__ float row[];
    int cols = n;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = in[c];   // PRIVATE
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        row[c] = row[c] * 0.5f + 1.0f;                                    // PRIVATE
    }
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c];
}

// The same loop shifting by one element: thread t writes row[c + 1], which thread t + 1 reads
// as its row[c] in the same interval (read-after-write or write-after-read on element 1 in
// every block of more than one thread).
extern "C" __global__ void stride_shift(float* out, const float* in, int n)
{
    extern __shared__ float row[];
    int cols = n - 1;
    for (int c = threadIdx.x; c <= cols; c += blockDim.x) row[c] = in[c];
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        row[c + 1] = row[c] * 0.5f;          // SHARED-1
    }
    __syncthreads();
    for (int c = threadIdx.x; c <= cols; c += blockDim.x) out[c] = row[c];
}
