#!/usr/bin/env python3
"""The GPU time of bounds-checked kernels under `cudacheck run` beside the library's, on the
benchmark set (examples/bench_set, bench/kernels/), from three runs of one device call:

    library.json      bench_set: plain versus the library's bounds-checked launches
    plain.json        bench_set --plain-timed: the plain launches alone, timed
    interposed.json   cudacheck run -- bench_set --plain-timed: the same launches, which the
                      interposer replaces by its own bounds-checked builds (each pointer bounded
                      by its allocation, both sides), timed by the same events

    run-benchset-compare.py library.json plain.json interposed.json > run-benchset.md
    run-benchset-compare.py --pair LABEL plain.json checked.json > OUT.md

`--pair`: two `--plain-timed` runs only, the second under a checking mode (LABEL, e.g.
"`cudacheck run --init`"): per kernel both times and their ratio, the geometric mean and the
worst.

Per kernel: the plain time of each run, the library's slowdown and the interposer's (its time
over the plain-timed run's). Geometric means and the worst of each. Prints markdown.
"""
import json
import math
import sys


def rows(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data, {r["kernel"]: r for r in data["rows"]}


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def pair(label, plain_path, checked_path):
    plain_data, plain = rows(plain_path)
    _, checked = rows(checked_path)
    out = [
        f"date: {plain_data.get('date_utc')}, device: {plain_data.get('device')}",
        "",
        f"| kernel | plain-timed ms | under {label} ms | ratio |",
        "|---|---:|---:|---:|",
    ]
    ratios, missing = [], []
    for name, p in plain.items():
        c = checked.get(name)
        if not (c and p.get("plain_kernel_ms") and c.get("plain_kernel_ms")):
            missing.append(name)
            continue
        r = c["plain_kernel_ms"] / p["plain_kernel_ms"]
        ratios.append((r, name))
        out.append(f"| {name} | {p['plain_kernel_ms']:.4f} | {c['plain_kernel_ms']:.4f} | {r:.3f}x |")
    out.append("")
    if ratios:
        worst = max(ratios)
        out.append(f"{label}: geometric mean {geomean([x for x, _ in ratios]):.3f}x over "
                   f"{len(ratios)} kernels, worst {worst[0]:.3f}x ({worst[1]})")
    if missing:
        out.append(f"not in both runs: {', '.join(missing)}")
    print("\n".join(out))
    return 0 if ratios else 1


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--pair":
        return pair(*sys.argv[2:])
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    lib_data, lib = rows(sys.argv[1])
    _, plain = rows(sys.argv[2])
    _, inter = rows(sys.argv[3])
    out = [
        f"date: {lib_data.get('date_utc')}, device: {lib_data.get('device')}",
        "",
        "| kernel | plain ms | library checked / plain | plain-timed ms | under `cudacheck run` ms | `cudacheck run` / plain |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lib_ratios, run_ratios, missing = [], [], []
    for name, r in lib.items():
        p, i = plain.get(name), inter.get(name)
        lr = r.get("slowdown")
        if not (p and i and p.get("plain_kernel_ms") and i.get("plain_kernel_ms")):
            missing.append(name)
            continue
        rr = i["plain_kernel_ms"] / p["plain_kernel_ms"]
        if lr:
            lib_ratios.append((lr, name))
        run_ratios.append((rr, name))
        out.append(f"| {name} | {r.get('plain_kernel_ms', float('nan')):.4f} | "
                   f"{lr if lr is not None else float('nan'):.3f}x | {p['plain_kernel_ms']:.4f} | "
                   f"{i['plain_kernel_ms']:.4f} | {rr:.3f}x |")
    out.append("")
    if lib_ratios:
        worst = max(lib_ratios)
        out.append(f"library: geometric mean {geomean([x for x, _ in lib_ratios]):.3f}x over "
                   f"{len(lib_ratios)} kernels, worst {worst[0]:.3f}x ({worst[1]})")
    if run_ratios:
        worst = max(run_ratios)
        out.append(f"`cudacheck run`: geometric mean {geomean([x for x, _ in run_ratios]):.3f}x "
                   f"over {len(run_ratios)} kernels, worst {worst[0]:.3f}x ({worst[1]})")
    if missing:
        out.append(f"not in every run: {', '.join(missing)}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
