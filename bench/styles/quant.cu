// Packed sub-byte weights and quantization: a 4-bit dequantizing matrix-vector product that
// reads the vector as float4, 2-bit weights unpacked four to a byte, a bit-packed mask
// applied to activations, and quantization of bf16 rows to int8 with a scale per row.
//
// Built with PLANTED defined, each kernel has one realistic out-of-bounds bug (see the
// comment at its `#ifdef PLANTED`).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// y[rows] = W x for 4-bit weights: row r holds cols/2 bytes, two weights a byte (low nibble
// first), each a value in [0, 16) offset by 8 and scaled by a half scale per group of 32 of
// the row. A warp per row; each lane takes eight weights (one 32-bit word) and two float4
// of x a step.
extern "C" __global__ void dequant_int4_matvec(const unsigned char* __restrict__ w,
                                               const __half* __restrict__ scales,
                                               const float* __restrict__ x,
                                               float* __restrict__ y, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const unsigned int* wr = reinterpret_cast<const unsigned int*>(w + (size_t)row * (cols / 2));
    const __half* sr = scales + (size_t)row * (cols / 32);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float acc = 0.0f;
    for (int c = lane * 8; c < cols; c += 32 * 8) {
        unsigned int q = wr[c / 8];
        float s = __half2float(sr[c / 32]);
        float4 xa = x4[c / 4];
#ifdef PLANTED
        // The second float4 two ahead instead of one (a stride of eight floats for the
        // pair): the last lane's read runs past x.
        float4 xb = x4[c / 4 + 2];
#else
        float4 xb = x4[c / 4 + 1];
#endif
        float xs[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
        for (int k = 0; k < 8; ++k) acc += s * (float)((int)((q >> (4 * k)) & 15u) - 8) * xs[k];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

// 2-bit weights, four to a byte, to half: out[i] = (q - zero[row]) * scale[row], a thread
// per packed byte writing four halves (two half2).
extern "C" __global__ void unpack_int2_f16(const unsigned char* __restrict__ packed,
                                           const float* __restrict__ scale,
                                           const unsigned char* __restrict__ zero,
                                           __half2* __restrict__ out, int rows, int cols)
{
    int per_row = cols / 4;
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)rows * per_row) return;
    int row = i / per_row;
    unsigned int b = packed[i];
    float s = scale[row];
#ifdef PLANTED
    // The zero points indexed by packed byte instead of by row.
    float z = zero[i];
#else
    float z = zero[row];
#endif
    float v0 = ((b & 3u) - z) * s, v1 = (((b >> 2) & 3u) - z) * s;
    float v2 = (((b >> 4) & 3u) - z) * s, v3 = (((b >> 6) & 3u) - z) * s;
    out[2 * i] = __floats2half2_rn(v0, v1);
    out[2 * i + 1] = __floats2half2_rn(v2, v3);
}

// Dropout-style masking: out[i] = bit i of the mask ? x[i] * scale : 0, the mask 32 bits a
// word; a grid-stride loop.
extern "C" __global__ void apply_bitmask(const float* __restrict__ x,
                                         const unsigned int* __restrict__ mask,
                                         float* __restrict__ out, float scale, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
#ifdef PLANTED
        // A 16-bit word's shift on 32-bit words: the upper half of the elements read
        // past the mask.
        unsigned int word = mask[i >> 4];
#else
        unsigned int word = mask[i >> 5];
#endif
        out[i] = (word >> (i & 31)) & 1u ? x[i] * scale : 0.0f;
    }
}

// Symmetric int8 quantization of bf16 rows: a block per row finds the absolute maximum
// (shared memory), writes scale = amax / 127 and q = round(x / scale).
extern "C" __global__ void quantize_rows_int8(const __nv_bfloat16* __restrict__ x,
                                              signed char* __restrict__ q,
                                              float* __restrict__ scales, int cols)
{
    __shared__ float red[32];
    int row = blockIdx.x;
    const __nv_bfloat16* xr = x + (size_t)row * cols;
    float amax = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        amax = fmaxf(amax, fabsf(__bfloat162float(xr[c])));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = amax;
    __syncthreads();
    if (threadIdx.x < 32) {
        amax = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        if (threadIdx.x == 0) red[0] = amax;
    }
    __syncthreads();
    float scale = red[0] / 127.0f;
    float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        q[(size_t)row * cols + c] = (signed char)__float2int_rn(__bfloat162float(xr[c]) * inv);
    if (threadIdx.x == 0)
#ifdef PLANTED
        // The scale stored one row on (as for a table with a leading total).
        scales[row + 1] = scale;
#else
        scales[row] = scale;
#endif
}
