# Experiment: the fast copy's check branches become predicated redirects of the access's
# address (a fresh register per access, pointing at a sink when the check fails), the fault
# flag accumulated and reported at the kernel's return; the user's registers are not touched.
import re, sys
lines = open(sys.argv[1]).read().split("\n")
end_fast = next(i for i, l in enumerate(lines) if "the slow copy" in l)
entry_line = next(i for i, l in enumerate(lines) if ".entry" in l)
out = []; n = 0; pending = None
i = 0
while i < len(lines):
    l = lines[i]
    if i < end_fast and re.match(r"\s*@%__cc_p bra \$__cc_(cold|slow)\d+__s;", l):
        kind = "slow" if "slow" in l else "cold"
        out.append("\tor.pred %__cc_f, %__cc_f, %__cc_p;")
        # the accesses the check covers: the next access (cold) or the group's accesses (slow,
        # up to the next label-free run of accesses through the same register)
        j = i + 1; reg = None
        while j < len(lines):
            m = re.search(r"\[(%rd\d+)([+-]?-?\d*)\]", lines[j])
            if m and re.search(r"\b(ld|st|atom|red)\.", lines[j]) and "param" not in lines[j]:
                if reg is None:
                    reg = m.group(1)
                    out.append(f"\tselp.b64 %__cc_a{n}, %__cc_z, {reg}, %__cc_p;")
                if m.group(1) != reg:
                    break
                lines[j] = lines[j].replace("[" + reg, f"[%__cc_a{n}")
                if kind == "cold":
                    break
            elif lines[j].strip().startswith("@%__cc_p bra") or lines[j].startswith("$"):
                break
            j += 1
        n += 1
        i += 1
        continue
    if i < end_fast and l.strip() == "ret;" and i > entry_line:
        out.append("\t@%__cc_f st.global.u32 [%__cc_z+4], %r1;")
    out.append(l)
    if l.strip().startswith(".reg .pred %__cc_p"):
        out.append("\t.reg .pred %__cc_f;\n\t.reg .b64 %__cc_z;\n\t.reg .b64 %__cc_a<" + "NNN" + ">;")
    i += 1
src = "\n".join(out).replace("NNN", str(max(n, 1)))
k = src.index(".entry"); m = src.index("ld.param.u64", k)
src = src[:m] + "ld.param.u64 %__cc_z, [__cc_rec];\n\tcvta.to.global.u64 %__cc_z, %__cc_z;\n\tadd.s64 %__cc_z, %__cc_z, 256;\n\tsetp.eq.u64 %__cc_f, %__cc_z, 0;\n\t" + src[m:]
open(sys.argv[2], "w").write(src)
sys.stderr.write(f"{n} checks redirected\n")
