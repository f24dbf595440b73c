# Assemble PTX files with nvJitLink 13 (-arch=sm_90 -verbose): registers and shared memory per
# kernel, and the cubin beside each (for nvdisasm). Usage: python3 jl.py LIB FILE.ptx...
import ctypes, re, sys
lib = ctypes.CDLL(sys.argv[1])
for path in sys.argv[2:]:
    h = ctypes.c_void_p()
    opts = (ctypes.c_char_p * 2)(b"-arch=sm_90", b"-verbose")
    assert lib.__nvJitLinkCreate_13_0(ctypes.byref(h), 2, opts) == 0
    data = open(path, "rb").read()
    r = lib.__nvJitLinkAddData_13_0(h, 2, data, len(data), path.encode())
    r = r or lib.__nvJitLinkComplete_13_0(h)
    n = ctypes.c_size_t()
    lib.__nvJitLinkGetInfoLogSize_13_0(h, ctypes.byref(n)); log = ctypes.create_string_buffer(n.value + 1); lib.__nvJitLinkGetInfoLog_13_0(h, log)
    if r:
        lib.__nvJitLinkGetErrorLogSize_13_0(h, ctypes.byref(n)); e = ctypes.create_string_buffer(n.value + 1); lib.__nvJitLinkGetErrorLog_13_0(h, e)
        print(path, "error", r, e.value.decode()[:300]); continue
    kernel = None
    for l in log.value.decode().splitlines():
        m = re.search(r"Function properties for (\S+)", l)
        if m:
            kernel = m.group(1).strip("':")
        m = re.search(r"used (\d+) registers.*?(\d+) bytes smem", l)
        if m and kernel:
            print(f"{path} {kernel}: {m.group(1)} registers, {m.group(2)} bytes smem")
            kernel = None
    lib.__nvJitLinkGetLinkedCubinSize_13_0(h, ctypes.byref(n)); c = ctypes.create_string_buffer(n.value); lib.__nvJitLinkGetLinkedCubin_13_0(h, c)
    open(path[:-4] + ".jl.cubin", "wb").write(c.raw)
