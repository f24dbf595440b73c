// Reads of __shared__ memory the block has not written yet, for the library's init checking
// (`Launch::init`). Each `init_*` kernel reads one kind of unwritten shared memory on the line
// marked UNINIT; its `fine_*` twin computes the same thing correctly. Every kernel stores the
// shared address of its array in at[blockIdx.x], so a test can turn the address a report gives
// into an index of the array. Signature of all: (out, in, at, n).

// launch: grid=2 block=128 shared=0
extern "C" __global__ void init_tile_early(float* out, const float* in, unsigned* at, int n)
{
    __shared__ float stage[128];
    const int t = threadIdx.x;
    const float* src = in + blockIdx.x * 512;
    float acc = 0.0f;
    for (int step = 0; step < 4; ++step) {
        float ahead = stage[t]; // UNINIT
        stage[t] = src[step * 128 + t];
        __syncthreads();
        acc += ahead * 0.25f + stage[(t + 3) & 127];
        __syncthreads();
    }
    out[blockIdx.x * 128 + t] = acc;
    if (t == 0) at[blockIdx.x] = (unsigned)__cvta_generic_to_shared(stage);
}

// launch: grid=2 block=128 shared=0
extern "C" __global__ void fine_tile_early(float* out, const float* in, unsigned* at, int n)
{
    __shared__ float stage[128];
    const int t = threadIdx.x;
    const float* src = in + blockIdx.x * 512;
    float acc = 0.0f;
    float ahead = 0.0f;
    for (int step = 0; step < 4; ++step) {
        stage[t] = src[step * 128 + t];
        __syncthreads();
        acc += ahead * 0.25f + stage[(t + 3) & 127];
        ahead = stage[t];
        __syncthreads();
    }
    out[blockIdx.x * 128 + t] = acc;
    if (t == 0) at[blockIdx.x] = (unsigned)__cvta_generic_to_shared(stage);
}

// launch: grid=2 block=96 shared=0
extern "C" __global__ void init_reduce_tail(float* out, const float* in, unsigned* at, int n)
{
    __shared__ float part[128];
    const int t = threadIdx.x;
    part[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int half = 64; half > 0; half >>= 1) {
        if (t < half) part[t] += part[t + half]; // UNINIT
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = part[0];
        at[blockIdx.x] = (unsigned)__cvta_generic_to_shared(part);
    }
}

// launch: grid=2 block=96 shared=0
extern "C" __global__ void fine_reduce_tail(float* out, const float* in, unsigned* at, int n)
{
    __shared__ float part[128];
    const int t = threadIdx.x;
    part[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int half = 64; half > 0; half >>= 1) {
        if (t < half && t + half < (int)blockDim.x) part[t] += part[t + half];
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = part[0];
        at[blockIdx.x] = (unsigned)__cvta_generic_to_shared(part);
    }
}

// launch: grid=2 block=32x8 shared=0
extern "C" __global__ void init_padding_column(float* out, const float* in, unsigned* at, int n)
{
    __shared__ float rows[32][33];
    const int x = threadIdx.x, y = threadIdx.y;
    const float* src = in + blockIdx.x * 1024;
    for (int r = y; r < 32; r += 8) rows[r][x] = src[r * 32 + x];
    __syncthreads();
    if (y == 0) {
        float sum = 0.0f;
        for (int c = 0; c < 33; ++c) sum += rows[x][c]; // UNINIT
        out[blockIdx.x * 32 + x] = sum;
        if (x == 0) at[blockIdx.x] = (unsigned)__cvta_generic_to_shared(rows);
    }
}

// launch: grid=2 block=32x8 shared=0
extern "C" __global__ void fine_padding_column(float* out, const float* in, unsigned* at, int n)
{
    __shared__ float rows[32][33];
    const int x = threadIdx.x, y = threadIdx.y;
    const float* src = in + blockIdx.x * 1024;
    for (int r = y; r < 32; r += 8) rows[r][x] = src[r * 32 + x];
    __syncthreads();
    if (y == 0) {
        float sum = 0.0f;
        for (int c = 0; c < 32; ++c) sum += rows[x][c];
        out[blockIdx.x * 32 + x] = sum;
        if (x == 0) at[blockIdx.x] = (unsigned)__cvta_generic_to_shared(rows);
    }
}
