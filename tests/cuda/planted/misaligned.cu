// Kernels whose wide accesses become misaligned when a launch passes an offset view or a
// skew (tests/tests/gpu_misaligned.rs). Without bounds checking each raises CUDA error 716
// and poisons the context; bounds-checked, each is a typed `Error::Misaligned`.
#include <cuda_fp16.h>

// 16 bytes at a time from `in` to `out`.
extern "C" __global__ void copy4(float* out, const float* in, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i]; // ACCESS(copy4)
}

// The same from `in + skew`: misaligned inside the kernel when skew is not a multiple of 4.
extern "C" __global__ void copy4_skewed(float* out, const float* in, int skew, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in + skew)[i]; // ACCESS(copy4_skewed)
}

// `half2` stores: 4 bytes at a time into a buffer of `__half`.
extern "C" __global__ void fill_half2(__half* out, float v, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) reinterpret_cast<__half2*>(out)[i] = __float2half2_rn(v); // ACCESS(fill_half2)
}

// 8-byte reads at a byte skew: misaligned when skew is not a multiple of 8.
extern "C" __global__ void read8(double* out, const unsigned char* bytes, int skew, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = *reinterpret_cast<const double*>(bytes + skew + 8 * i); // ACCESS(read8)
}
