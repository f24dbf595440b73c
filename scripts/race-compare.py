#!/usr/bin/env python3
"""Race checking's cost beside compute-sanitizer's racecheck, from two runs of
examples/bench_set on one GPU machine: `--races` (plain versus race- and bounds-checked) and
`--plain-timed` under `compute-sanitizer --tool racecheck`. Only the kernels with race-checked
shared accesses count. Prints markdown.

    race-compare.py bench_set_races.json racecheck.json [bench_instrument_races.json]
"""
import json
import math
import sys

def from_log(path):
    """The per-kernel lines `NAME: P ms plain, C ms checked, bit-identical` of a bench_set log,
    for a run that ran out of time before writing its JSON."""
    rows = []
    for line in open(path):
        name, sep, rest = line.rpartition(": ")
        if not sep or " ms plain" not in rest:
            continue
        p = float(rest.split(" ms plain")[0])
        c = rest.split(", ")[1].split(" ms checked")[0] if ", " in rest else "nan"
        rows.append({"kernel": name, "plain_kernel_ms": p,
                     "checked_kernel_ms": None if c == "NaN" else float(c),
                     "bit_identical": rest.strip().endswith("bit-identical"),
                     "races": {"checked": 1}})
    return {"device": "(from the log)", "date_utc": "(from the log)", "rows": rows}


try:
    races = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    races = from_log(sys.argv[1][:-len(".json")] + ".out")
# The racecheck run: its JSON, or (when it ran out of time before writing it) the per-kernel
# lines of its log, `NAME: X ms plain, ...`.
under = {}
try:
    under = {r["kernel"]: r for r in json.load(open(sys.argv[2]))["rows"]}
except (OSError, ValueError):
    log = sys.argv[2][:-len(".json")] + ".out" if sys.argv[2].endswith(".json") else sys.argv[2]
    try:
        for line in open(log):
            name, sep, rest = line.rpartition(": ")
            if sep and " ms plain" in rest:
                under[name] = {"plain_kernel_ms": float(rest.split(" ms plain")[0])}
    except OSError:
        pass
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

print(f"Race checking on {races['device']}, {races['date_utc']}: kernels of the benchmark set "
      "with race-checked shared-memory accesses; medians of CUDA-event kernel times; the same "
      "binary's plain launches timed under `compute-sanitizer --tool racecheck` on the same "
      "machine. cudacheck's race-checked build is also bounds-checked.\n")
print("| kernel | shared accesses checked | plain (ms) | race-checked (ms) | vs plain | plain under racecheck (ms) | vs plain | bit-identical, no report |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
ours, theirs = [], []
for r in races["rows"]:
    c = r.get("races") or {}
    if not c.get("checked"):
        continue
    p, ch = r["plain_kernel_ms"], r["checked_kernel_ms"]
    ok = "yes" if r.get("bit_identical") else f"**no**: {r.get('failure') or 'outputs differ'}"
    if p is None or ch is None:
        print(f"| {r['kernel']} | {c['checked']} | - | - | - | - | - | {ok} |")
        continue
    a = ch / p
    ours.append(a)
    m = under.get(r["kernel"], {}).get("plain_kernel_ms")
    if m:
        b = m / p
        theirs.append(b)
        cell = f"{m:.3f} | {b:.1f}x"
    else:
        cell = "- | -"
    print(f"| {r['kernel']} | {c['checked']} | {p:.3f} | {ch:.3f} | {a:.2f}x | {cell} | {ok} |")
print(f"\nGeometric mean over {len(ours)} kernels with shared accesses: cudacheck race checking "
      f"{g(ours):.2f}x; over the {len(theirs)} timed under it, compute-sanitizer racecheck "
      f"{g(theirs):.1f}x.")
if len(sys.argv) > 3:
    ki = json.load(open(sys.argv[3]))
    rows = [r for r in ki["rows"] if r.get("plain_kernel_ms") and r.get("checked_kernel_ms")]
    xs = [r["checked_kernel_ms"] / r["plain_kernel_ms"] for r in rows]
    print(f"\n`kernels/` (bench_instrument with CUDACHECK_RACES=1, every checked launch race- and "
          f"bounds-checked): geometric mean {g(xs):.2f}x over {len(xs)} kernels.")
