#!/usr/bin/env bash
# What `cudacheck run` costs, measured on the GPU machine (nvcc there):
#
#   scripts/run-bench.sh CUDACHECK_BIN OUTDIR [ROUNDS]
#
# tests/run/bench/launch_cost.cu is built twice: with PTX in its fatbin (what nvcc's default
# -arch=sm_90 embeds; launches are bounds-checked) and with SASS only (launches are validated
# and run unchanged). Each round runs, side by side in one process order per round:
#   - host cost per launch of an empty kernel: plain, under `run` with SASS only (validation
#     only: the path of a launch that needs no check), under `run --no-bounds` (validation
#     only, PTX present), under `run` (bounds-checked, host stacks of each kernel's first
#     launch), and bounds-checked with no stacks (`--stacks off`) and every launch's
#     (`--stacks all`);
#   - GPU time per launch of four kernels (saxpy, a clamped stencil, a shared-memory block
#     reduction, a gather; each longer than a checked launch takes on the host): plain and
#     under `run`.
# A warm-up run under `run` first fills the module cache. OUTDIR/run-bench.tsv holds every
# figure; OUTDIR/run-bench.md the medians over rounds and the ratios.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$1"; out="$2"; rounds="${3:-7}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
mkdir -p "$out/bench-bin"
src="$root/tests/run/bench/launch_cost.cu"
"$nvcc" -arch=sm_90 -lineinfo -O2 -o "$out/bench-bin/launch_cost" "$src"
"$nvcc" -gencode arch=compute_90,code=sm_90 -lineinfo -O2 -o "$out/bench-bin/launch_cost_sass" "$src"
b="$out/bench-bin"
tsv="$out/run-bench.tsv"
printf 'round\tmode\tmeasure\tvalue\n' > "$tsv"
"$bin" run -- "$b/launch_cost" kernels > /dev/null 2> "$out/bench-warmup.stderr"
"$bin" run -- "$b/launch_cost" launches > /dev/null 2>> "$out/bench-warmup.stderr"
record() { # round mode command...
  local r="$1" m="$2"; shift 2
  # One core for every run: the host cost of a launch varies less when the process stays put.
  taskset -c 2 "$@" 2>> "$out/bench.stderr" | while read -r kind a b2; do
    case "$kind" in
      launch_us|launch_us_min) printf '%s\t%s\t%s\t%s\n' "$r" "$m" "$kind" "$a" ;;
      kernel) printf '%s\t%s\t%s\t%s\n' "$r" "$m" "$a" "$b2" ;;
    esac
  done >> "$tsv"
}
for r in $(seq 1 "$rounds"); do
  record "$r" plain "$b/launch_cost" launches
  record "$r" run-sass-only "$bin" run -- "$b/launch_cost_sass" launches
  record "$r" run-no-bounds "$bin" run --no-bounds -- "$b/launch_cost" launches
  record "$r" run "$bin" run -- "$b/launch_cost" launches
  record "$r" run-stacks-off "$bin" run --stacks off -- "$b/launch_cost" launches
  record "$r" run-stacks-all "$bin" run --stacks all -- "$b/launch_cost" launches
  record "$r" plain "$b/launch_cost" kernels
  record "$r" run "$bin" run -- "$b/launch_cost" kernels
done
python3 - "$tsv" "$out/run-bench.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
med = {}
for r in rows:
    med.setdefault((r["mode"], r["measure"]), []).append(float(r["value"]))
med = {k: statistics.median(v) for k, v in med.items()}
out = ["| measure | mode | median | vs plain |", "|---|---|---|---|"]
for (mode, m), v in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    base = med.get(("plain", m))
    ratio = f"{v / base:.3f}x" if base else ""
    out.append(f"| {m} | {mode} | {v:.3f} us | {ratio} |")
# Ratios of modes run in the same round (one after the other, same core): the median of the
# per-round ratios, which the drift of the machine between rounds does not move.
by_round = {}
for r in rows:
    by_round.setdefault((r["measure"], r["round"]), {})[r["mode"]] = float(r["value"])
paired = {}
for (m, _), modes in by_round.items():
    if "plain" in modes:
        for mode, v in modes.items():
            if mode != "plain":
                paired.setdefault((m, mode), []).append(v / modes["plain"])
out += ["", "| measure | mode | median of per-round ratios to plain | rounds |", "|---|---|---|---|"]
for (m, mode), v in sorted(paired.items()):
    out.append(f"| {m} | {mode} | {statistics.median(v):.3f}x | {len(v)} |")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
