# The plain PTX of FILE.cu as NVRTC gives it to the instrumenter (-lineinfo, compute_90).
# Usage: python3 nvrtc_ptx.py LIBNVRTC FILE.cu OUT.ptx [NVRTC OPTION...] (e.g. -I and
# --pre-include for files that need the CUDA headers or cudacheck's implicit header).
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); src = open(sys.argv[2]).read().encode()
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None) == 0
opts = [b"--gpu-architecture=compute_90", b"-lineinfo", b"--std=c++17"] + [a.encode() for a in sys.argv[4:]]
arr = (ctypes.c_char_p * len(opts))(*opts)
r = lib.nvrtcCompileProgram(prog, len(opts), arr)
n = ctypes.c_size_t(); lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n)); log = ctypes.create_string_buffer(n.value); lib.nvrtcGetProgramLog(prog, log); sys.stderr.write(log.value.decode())
assert r == 0
lib.nvrtcGetPTXSize(prog, ctypes.byref(n)); b = ctypes.create_string_buffer(n.value); lib.nvrtcGetPTX(prog, b)
open(sys.argv[3], "w").write(b.value.decode())
