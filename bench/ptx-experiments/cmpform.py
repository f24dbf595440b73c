# Experiment: check `base <= addr+k < base+lim` with two compares against loop-invariant
# bounds instead of `(addr + k - base) >=u lim`.
import re, sys
t = open(sys.argv[1]).read()
pat = re.compile(r"ld\.param\.u64 %__cc_u, \[(\w+)\];\n\tcvta\.to\.global\.u64 %__cc_u, %__cc_u;\n\tsub\.s64 %__cc_o, (%\w+), %__cc_u;\n\t(?:add\.s64 %__cc_o, %__cc_o, (-?\d+);\n\t)?ld\.param\.u64 %__cc_t, \[(\w+)\];\n\tadd\.s64 %__cc_u, %__cc_t, (-?\d+);\n\tmax\.s64 %__cc_u, %__cc_u, 0;\n\tsetp\.ge\.u64 %__cc_p, %__cc_o, %__cc_u;")
def sub(m):
    p, reg, k, ln, keep = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
    k = int(k or 0)
    s = f"ld.param.u64 %__cc_u, [{p}];\n\tcvta.to.global.u64 %__cc_u, %__cc_u;\n\tld.param.u64 %__cc_t, [{ln}];\n\tadd.s64 %__cc_t, %__cc_t, {keep};\n\tmax.s64 %__cc_t, %__cc_t, 0;\n\tadd.s64 %__cc_t, %__cc_u, %__cc_t;\n\t"
    if k:
        s += f"add.s64 %__cc_u, %__cc_u, {-k};\n\tadd.s64 %__cc_t, %__cc_t, {-k};\n\t"
    s += f"setp.lt.u64 %__cc_p, {reg}, %__cc_u;\n\tsetp.ge.or.u64 %__cc_p, {reg}, %__cc_t, %__cc_p;\n\tsub.s64 %__cc_o, {reg}, %__cc_u;"
    return s
t2, n = pat.subn(sub, t)
open(sys.argv[2], "w").write(t2)
sys.stderr.write(f"{n} checks rewritten\n")
