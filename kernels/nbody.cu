// All-pairs n-body accelerations, unrolled over UNROLL bodies at a time with many live
// accumulators: the register-heavy kernel of the set (its registers limit the block size).
#define UNROLL 16

extern "C" __global__ void nbody_accel(float4* __restrict__ accel, const float4* __restrict__ pos,
                                       int n, float softening)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 p = pos[i];
    float ax[UNROLL], ay[UNROLL], az[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { ax[u] = 0.0f; ay[u] = 0.0f; az[u] = 0.0f; }
    int j = 0;
    for (; j + UNROLL <= n; j += UNROLL) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float4 q = pos[j + u];
            float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            float d2 = dx * dx + dy * dy + dz * dz + softening;
            float inv = rsqrtf(d2);
            float s = q.w * inv * inv * inv;
            ax[u] += dx * s; ay[u] += dy * s; az[u] += dz * s;
        }
    }
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { sx += ax[u]; sy += ay[u]; sz += az[u]; }
    for (; j < n; ++j) {
        float4 q = pos[j];
        float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
        float d2 = dx * dx + dy * dy + dz * dz + softening;
        float inv = rsqrtf(d2);
        float s = q.w * inv * inv * inv;
        sx += dx * s; sy += dy * s; sz += dz * s;
    }
    accel[i] = make_float4(sx, sy, sz, 0.0f);
}
