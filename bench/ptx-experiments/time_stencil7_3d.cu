// Times stencil7_3d (bench/kernels/stencil.cu, 512 x 512 x 256, block 32 x 8) from PTX files given
// on the command line, plain or bounds-checked (then with 7 lengths and a record), through the
// driver API: median of 50 CUDA-event timings after 10 warm-up runs, output compared with the
// first file's. Build on the GPU machine: nvcc -O2 -o t time_stencil7_3d.cu -lcuda
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>
#include <fstream>
#include <sstream>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s:%d %s\n", __FILE__, __LINE__, s); exit(1);} } while (0)
int main(int argc, char** argv) {
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  int nx = 512, ny = 512, nz = 256; size_t n = (size_t)nx * ny * nz;
  std::vector<float> h(n); for (size_t i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
  CUdeviceptr in, out, rec; CK(cuMemAlloc(&in, n * 4)); CK(cuMemAlloc(&out, n * 4)); CK(cuMemAlloc(&rec, 4096));
  CK(cuMemcpyHtoD(in, h.data(), n * 4)); CK(cuMemsetD8(rec, 0, 4096));
  std::vector<float> ref;
  for (int a = 1; a < argc; ++a) {
    std::ifstream f(argv[a]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    CUmodule m; CK(cuModuleLoadData(&m, ptx.c_str())); CUfunction fn; CK(cuModuleGetFunction(&fn, m, "stencil7_3d"));
    int regs; cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    float c0 = 0.4f, c1 = 0.1f; unsigned long long len[7] = {n * 4, n * 4, 0, 0, 0, 0, 0}; unsigned long long recp = rec;
    void* args[16] = {&out, &in, &nx, &ny, &nz, &c0, &c1, &len[0], &len[1], &len[2], &len[3], &len[4], &len[5], &len[6], &recp};
    CUevent e0, e1; CK(cuEventCreate(&e0, 0)); CK(cuEventCreate(&e1, 0));
    std::vector<float> t;
    for (int r = 0; r < 60; ++r) {
      CK(cuMemsetD32(out, 0x7fc00001u, n));
      CK(cuEventRecord(e0, 0));
      CK(cuLaunchKernel(fn, (nx + 31) / 32, (ny + 7) / 8, 1, 32, 8, 1, 0, 0, args, 0));
      CK(cuEventRecord(e1, 0)); CK(cuEventSynchronize(e1)); float ms; CK(cuEventElapsedTime(&ms, e0, e1)); if (r >= 10) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    std::vector<float> o(n); CK(cuMemcpyDtoH(o.data(), out, n * 4)); unsigned rc[2]; CK(cuMemcpyDtoH(rc, rec, 8));
    bool same = true; if (ref.empty()) ref = o; else for (size_t i = 0; i < n; ++i) if (memcmp(&o[i], &ref[i], 4)) { same = false; break; }
    printf("%-12s regs %3d median %.4f ms  identical %s  rec %u %u\n", argv[a], regs, t[t.size() / 2], same ? "yes" : "NO", rc[0], rc[1]);
  }
}
