// Times a stencil of bench/kernels/ from PTX files given on the command line, plain or
// bounds-checked (then with a length per parameter and a record): median of 50 CUDA-event
// timings after 10 warm-up runs, registers and local memory per thread, the output compared
// with the first file's.
//   t stencil7_3d FILE.ptx...        (stencil.cu, 512 x 512 x 256, block 32 x 8)
//   t stencil13_zqueue FILE.ptx...   (loops2.cu, 512 x 512 x 256, block 32 x 8)
// Build on the GPU machine: nvcc -O2 -o t time_stencil.cu -lcuda
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <string>
#include <fstream>
#include <sstream>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s:%d %s\n", __FILE__, __LINE__, s); exit(1);} } while (0)
int main(int argc, char** argv) {
  if (argc < 3) { printf("usage: %s stencil7_3d|stencil13_zqueue FILE.ptx...\n", argv[0]); return 2; }
  const std::string kernel = argv[1];
  const bool z13 = kernel == "stencil13_zqueue";
  if (!z13 && kernel != "stencil7_3d") { printf("unknown kernel %s\n", argv[1]); return 2; }
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  char name[256]; CK(cuDeviceGetName(name, sizeof name, d)); printf("device: %s, kernel %s\n", name, argv[1]);
  int nx = 512, ny = 512, nz = 256; size_t n = (size_t)nx * ny * nz;
  std::vector<float> h(n); for (size_t i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
  CUdeviceptr in, out, rec; CK(cuMemAlloc(&in, n * 4)); CK(cuMemAlloc(&out, n * 4)); CK(cuMemAlloc(&rec, 4096));
  CK(cuMemcpyHtoD(in, h.data(), n * 4)); CK(cuMemsetD8(rec, 0, 4096));
  std::vector<float> ref;
  for (int a = 2; a < argc; ++a) {
    std::ifstream f(argv[a]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    CUmodule m; CK(cuModuleLoadData(&m, ptx.c_str())); CUfunction fn; CK(cuModuleGetFunction(&fn, m, argv[1]));
    int regs, lmem; cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn); cuFuncGetAttribute(&lmem, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn);
    // User parameters (out, in, nx, ny, nz, then 2 or 3 coefficients), then, for a checked
    // build, one byte length per user parameter and the fault record's address.
    float coef[3] = {0.4f, 0.1f, 0.05f}; int ncoef = z13 ? 3 : 2;
    unsigned long long len[8] = {n * 4, n * 4, 0, 0, 0, 0, 0, 0}; unsigned long long recp = rec;
    std::vector<void*> args = {&out, &in, &nx, &ny, &nz};
    for (int k = 0; k < ncoef; ++k) args.push_back(&coef[k]);
    for (int k = 0; k < 5 + ncoef; ++k) args.push_back(&len[k]);
    args.push_back(&recp);
    CUevent e0, e1; CK(cuEventCreate(&e0, 0)); CK(cuEventCreate(&e1, 0));
    std::vector<float> t;
    for (int r = 0; r < 60; ++r) {
      CK(cuMemsetD32(out, 0x7fc00001u, n));
      CK(cuEventRecord(e0, 0));
      CK(cuLaunchKernel(fn, (nx + 31) / 32, (ny + 7) / 8, 1, 32, 8, 1, 0, 0, args.data(), 0));
      CK(cuEventRecord(e1, 0)); CK(cuEventSynchronize(e1)); float ms; CK(cuEventElapsedTime(&ms, e0, e1)); if (r >= 10) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    std::vector<float> o(n); CK(cuMemcpyDtoH(o.data(), out, n * 4)); unsigned rc[2]; CK(cuMemcpyDtoH(rc, rec, 8));
    bool same = true; if (ref.empty()) ref = o; else for (size_t i = 0; i < n; ++i) if (memcmp(&o[i], &ref[i], 4)) { same = false; break; }
    printf("%-44s regs %3d lmem %4d median %.4f ms  identical %s  rec %u %u\n", argv[a], regs, lmem, t[t.size() / 2], same ? "yes" : "NO", rc[0], rc[1]);
  }
}
