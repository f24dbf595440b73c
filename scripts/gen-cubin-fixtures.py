#!/usr/bin/env python3
"""Regenerates the CUBIN fixtures of cudacheck-core/tests/data with NVRTC (through ctypes).

For each (source, architecture) pair it writes `<name>.<arch>.cubin` and the ptxas info log
NVRTC printed for it (`-Xptxas -v`) as `<name>.<arch>.ptxas.txt`. The tests compare what
`read_cubin` finds in the CUBIN with what ptxas said in that log, so both must come from the
same compilation: always regenerate them together.

Usage:  eval "$(scripts/setup-cuda.sh)"; python3 scripts/gen-cubin-fixtures.py

With `--driver-attrs OUT.json` it instead loads every fixture the local GPU can run into the CUDA
driver and writes what `cuFuncGetAttribute` reports for each kernel: the ground truth the
`driver_attrs` test compares `read_cubin` with (run it on a GPU machine, save the file as
cudacheck-core/tests/data/driver-attrs.json).

CUDA 13 NVRTC no longer targets Volta (sm_70/sm_72), so the oldest fixture architecture is sm_75.

A build may name another release of the NVRTC matrix (`CUDACHECK_NVRTC_MATRIX`, exported by
setup-cuda.sh): `params_nvrtc124.sm_90` is NVRTC 12.4's CUBIN, whose sm_90 kernels hold the
driver's reserved 1 KB of shared memory without the `.nv.shared.reserved.0` marker later
releases add.
"""

import ctypes
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "cudacheck-core", "tests", "data")

# Small kernels, one concern each, that together cover what the reader must decode.
SOURCES = {
    # Mixed parameter sizes and alignments, a struct by value, a static shared array, launch
    # bounds with a min-blocks value, a dynamically indexed local array (a stack frame), a
    # module-scope __constant__ array, and both an extern "C" and a C++-mangled kernel.
    "params": r"""
struct Pair { int a; double b; };
__constant__ float coeffs[10];
extern "C" __global__ void mixed(char c, double d, float* p, float4 v, Pair s, short h) {
    if (threadIdx.x == 0) { p[0] = c + d + v.x + v.w + s.a + s.b + h; }
}
__global__ void mangled(const int* __restrict__ in, int* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2 + (int)coeffs[i % 10];
}
extern "C" __global__ void __launch_bounds__(256, 2) bounded(float* x) {
    __shared__ float tile[256];
    __shared__ int flags[8];
    tile[threadIdx.x] = x[threadIdx.x];
    if (threadIdx.x < 8) flags[threadIdx.x] = threadIdx.x;
    __syncthreads();
    x[threadIdx.x] = tile[255 - threadIdx.x] + flags[threadIdx.x & 7];
}
extern "C" __global__ void local_array(const int* idx, float* out) {
    // Stores and loads at run-time indices keep `buf` out of registers: a stack frame.
    float buf[32];
#pragma unroll 1
    for (int i = 0; i < 32; ++i) buf[i] = out[i];
    buf[idx[0] & 31] += 1.0f;
    out[threadIdx.x] = buf[idx[threadIdx.x] & 31];
}
""",
    # A register-heavy kernel that spills under --maxrregcount=32.
    "spill": r"""
extern "C" __global__ void spills(const float* __restrict__ in, float* out) {
    float acc[40];
#pragma unroll
    for (int i = 0; i < 40; ++i) acc[i] = in[threadIdx.x * 40 + i];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
#pragma unroll
        for (int i = 0; i < 40; ++i) acc[i] = acc[i] * acc[(i + k + 1) % 40] + acc[(i * 7 + k) % 40];
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 40; ++i) s += acc[i] * (i + 1);
    out[threadIdx.x] = s;
}
""",
    # Hopper-era attributes: a compile-time cluster size, a required block size
    # (`__block_size__`, which ptxas records as .reqntid), a per-kernel register cap
    # (`__maxnreg__`) and a plain max-threads bound.
    "hopper": r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* x) {
    x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
}
extern "C" __global__ void __block_size__((64, 2, 1)) fixed_block(float* x) {
    x[threadIdx.y * 64 + threadIdx.x] += 1.0f;
}
extern "C" __global__ void __maxnreg__(40) capped(float* x) {
    x[threadIdx.x] += 1.0f;
}
extern "C" __global__ void __launch_bounds__(128) bounded128(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
""",
}

# (source, arch, extra options, NVRTC release: None for CUDACHECK_NVRTC's)
BUILDS = [
    ("params", "sm_75", [], None),
    ("params", "sm_80", [], None),
    ("params", "sm_90", [], None),
    ("spill", "sm_75", ["--maxrregcount=32"], None),
    ("spill", "sm_90", ["--maxrregcount=32"], None),
    ("hopper", "sm_90", [], None),
    ("params", "sm_90", [], "12.4"),
]


def release_lib(label):
    """The library of one release of the NVRTC matrix."""
    for word in os.environ.get("CUDACHECK_NVRTC_MATRIX", "").split():
        name, _, path = word.partition("=")
        if name == label:
            return path
    sys.exit(f'NVRTC {label} is not in CUDACHECK_NVRTC_MATRIX: run eval "$(scripts/setup-cuda.sh)"')


def check(lib, status, what, prog=None):
    if status != 0:
        msg = lib.nvrtcGetErrorString(status).decode()
        log = ""
        if prog is not None:
            log = get_log(lib, prog)
        sys.exit(f"{what} failed: {msg}\n{log}")


def get_log(lib, prog):
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    return buf.value.decode()


def compile_one(lib, name, src, arch, extra):
    prog = ctypes.c_void_p()
    check(
        lib,
        lib.nvrtcCreateProgram(
            ctypes.byref(prog), src.encode(), f"{name}.cu".encode(), 0, None, None
        ),
        "nvrtcCreateProgram",
    )
    opts = [f"--gpu-architecture={arch}", "-Xptxas", "-v", "-lineinfo"] + extra
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    check(lib, lib.nvrtcCompileProgram(prog, len(opts), arr), "nvrtcCompileProgram", prog)
    log = get_log(lib, prog)
    size = ctypes.c_size_t()
    check(lib, lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
    buf = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN")
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw[: size.value], log


# CUfunction_attribute values (cuda.h), the ones read_cubin has a counterpart for.
FUNC_ATTRS = {
    "max_threads_per_block": 0,
    "shared_size_bytes": 1,
    "const_size_bytes": 2,
    "local_size_bytes": 3,
    "num_regs": 4,
    "binary_version": 6,
    "required_cluster_width": 11,
    "required_cluster_height": 12,
    "required_cluster_depth": 13,
}


def driver_attrs(out_path):
    import json
    import re

    cu = ctypes.CDLL("libcuda.so.1")

    def ok(status, what):
        if status != 0:
            sys.exit(f"{what} failed with CUresult {status}")

    ok(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    major, minor = ctypes.c_int(), ctypes.c_int()
    ok(cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "cuDeviceGetAttribute")
    ok(cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev), "cuDeviceGetAttribute")
    ctx = ctypes.c_void_p()
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    arch = f"sm_{major.value}{minor.value}"
    report = {"device_arch": arch, "fixtures": {}}
    for cubin in sorted(glob.glob(os.path.join(OUT, f"*.{arch}.cubin"))):
        with open(cubin, "rb") as f:
            image = f.read()
        with open(cubin[: -len(".cubin")] + ".ptxas.txt") as f:
            names = re.findall(r"Compiling entry function '([^']+)'", f.read())
        module = ctypes.c_void_p()
        ok(cu.cuModuleLoadData(ctypes.byref(module), image), f"cuModuleLoadData({cubin})")
        kernels = {}
        for name in names:
            func = ctypes.c_void_p()
            ok(cu.cuModuleGetFunction(ctypes.byref(func), module, name.encode()), name)
            attrs = {}
            for key, code in FUNC_ATTRS.items():
                v = ctypes.c_int()
                ok(cu.cuFuncGetAttribute(ctypes.byref(v), code, func), f"{name} {key}")
                attrs[key] = v.value
            kernels[name] = attrs
        cu.cuModuleUnload(module)
        report["fixtures"][os.path.basename(cubin)] = kernels
    with open(out_path, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{out_path}: {sum(len(k) for k in report['fixtures'].values())} kernels on {arch}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--driver-attrs":
        return driver_attrs(sys.argv[2])
    path = os.environ.get("CUDACHECK_NVRTC")
    if not path:
        sys.exit('CUDACHECK_NVRTC is not set: run eval "$(scripts/setup-cuda.sh)" first')
    libs = {}
    os.makedirs(OUT, exist_ok=True)
    for name, arch, extra, release in BUILDS:
        if release not in libs:
            lib_path = release_lib(release) if release else path
            # NVRTC dlopens its builtins by soname; load the ones beside it first, as cudacheck
            # does, so that no LD_LIBRARY_PATH is needed.
            for builtins in glob.glob(os.path.join(os.path.dirname(lib_path), "libnvrtc-builtins.so.*")):
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            libs[release] = ctypes.CDLL(lib_path)
            libs[release].nvrtcGetErrorString.restype = ctypes.c_char_p
        cubin, log = compile_one(libs[release], name, SOURCES[name], arch, extra)
        tag = "_nvrtc" + release.replace(".", "") if release else ""
        stem = os.path.join(OUT, f"{name}{tag}.{arch}")
        with open(stem + ".cubin", "wb") as f:
            f.write(cubin)
        with open(stem + ".ptxas.txt", "w") as f:
            f.write(log)
        print(f"{stem}.cubin: {len(cubin)} bytes")


if __name__ == "__main__":
    main()
