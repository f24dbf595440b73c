#!/usr/bin/env bash
# compute-sanitizer beside cudacheck on the planted cases written before the barrier and
# uninitialized-read checks existed (tests/run/planned: barriers only part of a block reaches,
# uninitialized reads): per case, what the plain run does (its exit
# status, or that it hangs) and what synccheck (barriers.cu) or initcheck (uninit.cu) reports,
# with its first error's line and whether that line is one the case marks.
#
#   scripts/sanitizer-planned.sh OUTDIR
#
# PLANNED_ONLY=uninit (or barriers): one of the two programs.
# With CUDACHECK_BIN set, each case also runs under `$CUDACHECK_BIN run` (`--races` for the
# barrier cases, `--init` for the uninitialized reads), and the table
# says what cudacheck found today (the kinds of its findings and the first one's line).
#
# GPU machine (nvcc and compute-sanitizer at /usr/local/cuda, or $NVCC and
# $COMPUTE_SANITIZER). Builds with `nvcc -arch=sm_90 -lineinfo -O2`; each run has a time limit
# (PLANNED_TIMEOUT, 10 s; compute-sanitizer twice that): a barrier some threads never reach may hang. Writes
# OUTDIR/sanitizer-planned.md and the runs' output under OUTDIR/runs/.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: sanitizer-planned.sh OUTDIR}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
san="${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}"
limit="${PLANNED_TIMEOUT:-10}"
mkdir -p "$out/bin" "$out/runs"
tsv="$out/runs.tsv"
printf 'program\tcase\ttool\tmode\trc\tseconds\n' > "$tsv"
for prog in ${PLANNED_ONLY:-barriers uninit}; do
  "$nvcc" -arch=sm_90 -lineinfo -O2 -o "$out/bin/$prog" "$root/tests/run/planned/$prog.cu" \
    || { echo "sanitizer-planned: $prog did not build" >&2; continue; }
  tool=initcheck check=--init
  [ "$prog" = barriers ] && tool=synccheck check=--races
  for c in $("$out/bin/$prog" --list); do
    modes="plain sanitizer"
    [ -n "${CUDACHECK_BIN:-}" ] && modes="$modes cudacheck"
    for mode in $modes; do
      f="$out/runs/$prog.$c.$mode"
      s=$(date +%s%N)
      if [ "$mode" = plain ]; then
        timeout -k 5 "$limit" "$out/bin/$prog" "$c" > "$f.out" 2> "$f.err"
      elif [ "$mode" = cudacheck ]; then
        rm -f "$f.jsonl"
        timeout -k 5 "$limit" "$CUDACHECK_BIN" run "$check" --json "$f.jsonl" -- "$out/bin/$prog" "$c" \
          > "$f.out" 2> "$f.err"
      else
        timeout -k 5 "$((limit * 2))" "$san" --tool "$tool" "$out/bin/$prog" "$c" > "$f.out" 2> "$f.err"
      fi
      rc=$?
      e=$(date +%s%N)
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$prog" "$c" "$tool" "$mode" "$rc" \
        "$(( (e - s) / 1000000 ))" >> "$tsv"
      echo "$prog $c $mode: exit $rc"
    done
  done
done
python3 - "$root" "$out" <<'PY'
import csv, importlib.util, os, re, sys
root, out = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("run_check", os.path.join(root, "scripts/run-check.py"))
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)
rows = list(csv.DictReader(open(os.path.join(out, "runs.tsv")), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault((r["program"], r["case"]), {})[r["mode"]] = r
lines = ["| program | case | plain | tool | errors | first error | at a marked line | tool s "
         "| `cudacheck run` (`--races` for barriers, `--init` for uninit) | run s |",
         "|---|---|---|---|---:|---|---|---:|---|---:|"]
for (prog, case), m in by.items():
    marks = rc.markers(os.path.join(root, "tests/run/planned", prog + ".cu"))
    marked = {l for k, l in marks.items() if k == case or k.startswith(case + "/")}
    if case.startswith("bug_never") or case in ("bug_copy_short", "bug_memset_short",
                                                "bug_half_written", "bug_async_pool"):
        marked |= {marks.get("scale")}
    p, s = m.get("plain", {}), m.get("sanitizer", {})
    plain = {"124": "hangs (killed)", "137": "hangs (killed)"}.get(p.get("rc"), f"exit {p.get('rc')}")
    text = ""
    base = os.path.join(out, "runs", f"{prog}.{case}.sanitizer")
    for ext in (".out", ".err"):
        if os.path.exists(base + ext):
            text += open(base + ext, errors="replace").read() + "\n"
    count, first, line = rc.parse_memcheck(text)
    if s.get("rc") in ("124", "137"):
        first = (first or "") + " (killed at the time limit)"
    at = "-" if line is None or not marked else ("yes" if line in marked else f"no (line {line})")
    ours = "-"
    cc = m.get("cudacheck")
    if cc is not None:
        import json
        found = []
        path = os.path.join(out, "runs", f"{prog}.{case}.cudacheck.jsonl")
        if os.path.exists(path):
            found = [json.loads(l) for l in open(path) if l.strip()]
        if cc.get("rc") in ("124", "137"):
            ours = "hangs (killed)"
        elif not found:
            ours = f"nothing (exit {cc.get('rc')})"
        else:
            kinds = sorted({f.get("kind", "?") for f in found})
            ours = f"{len(found)}: {', '.join(kinds)} at line {found[0].get('line')}"
    lines.append(f"| {prog} | {case} | {plain} | {s.get('tool')} | {count if count is not None else '-'} "
                 f"| {first or '-'} | {at} | {int(s.get('seconds', 0)) / 1000:.2f} | {ours} "
                 f"| {int(cc.get('seconds', 0)) / 1000 if cc else 0:.2f} |")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "sanitizer-planned.md"), "w").write(text)
print(text)
PY
