#!/usr/bin/env python3
"""Side-by-side table of kernel times: plain, cudacheck bounds-checked, and plain under
`compute-sanitizer --tool memcheck`, from two runs of examples/bench_instrument on one GPU
machine (scripts/gpu-run.sh): one plain, one under memcheck. Prints markdown."""
import json
import math
import sys

plain = json.load(open(sys.argv[1]))
memcheck = json.load(open(sys.argv[2]))
under = {r["kernel"]: r for r in memcheck["rows"]}
print(f"Kernel times on {plain['device']}, {plain['date_utc']}: medians of {plain['runs']} "
      f"CUDA-event timings after {plain['warmup']} warm-ups, the same benchmark binary run "
      "plainly and under `compute-sanitizer --tool memcheck` on the same machine.\n")
print("| kernel | size | plain (ms) | cudacheck checked (ms) | vs plain | plain under memcheck (ms) | vs plain |")
print("|---|---|---:|---:|---:|---:|---:|")
ours, theirs = [], []
for r in plain["rows"]:
    m = under.get(r["kernel"])
    if m is None:
        continue
    a = r["checked_kernel_ms"] / r["plain_kernel_ms"]
    b = m["plain_kernel_ms"] / r["plain_kernel_ms"]
    ours.append(a)
    theirs.append(b)
    print(f"| {r['kernel']} | {r['size']} | {r['plain_kernel_ms']:.3f} | {r['checked_kernel_ms']:.3f} "
          f"| {a:.2f}x | {m['plain_kernel_ms']:.3f} | {b:.1f}x |")
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"\nGeometric mean over {len(ours)} kernels: cudacheck bounds checking {g(ours):.2f}x, "
      f"compute-sanitizer memcheck {g(theirs):.1f}x.")
