#!/usr/bin/env python3
"""Tabulates what `scripts/run-thirdparty.sh run` left in OUTDIR.

    run-thirdparty-report.py OUTDIR

Writes OUTDIR/run-thirdparty.md (a table per program: plain, `cudacheck run` cold and warm,
compute-sanitizer memcheck, their times and ratios to the plain run, cudacheck's findings,
memcheck's errors, whether the program printed the same as it does plain, the kernel counts of
cudacheck's exit summary; geometric means of the ratios) and OUTDIR/run-thirdparty.json, the
same as data. Reads only files: it can be run again here on an OUTDIR the device brought back,
also one of a run that was cut short (what did not run is shown as not run).

Outputs are compared line by line after masking the numbers of timing lines (a line that
mentions a time, a rate or a bandwidth: llm.c's `block_size 32 | time 0.0461 ms | bandwidth
1364.95 GB/s`, the samples' `Time= 0.045 msec`): on those lines numbers with a fraction or an
exponent, and whole numbers followed by a time unit, are masked; every other line must be equal.
"""
import difflib
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field

PHASES = ("plain", "cold", "warm", "memcheck")

TIMING_LINE = re.compile(
    r"time|\bms\b|msec|\bsecs?\b|seconds|\bus\b|usec|[GMK]i?B/s|flop|throughput|bandwidth"
    r"|elapsed|/s\b|per second", re.I)
FRACTION = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+")
WHOLE_WITH_UNIT = re.compile(r"\b\d+(\s*)(ms|msec|us|usec|ns|s|sec|secs|seconds)\b")


def normalize(text):
    """The lines of a program's output with the numbers of its timing lines masked."""
    lines = []
    for line in text.splitlines():
        if TIMING_LINE.search(line):
            line = WHOLE_WITH_UNIT.sub(r"#\1\2", FRACTION.sub("#", line))
        lines.append(line.rstrip())
    return lines


@dataclass
class Program:
    id: str
    checkout: str
    dir: str
    bin: str
    args: str

    @property
    def project(self):
        return self.checkout.split("+", 1)[-1]


@dataclass
class Run:
    rc: int
    seconds: float = None
    limit: int = 0

    @property
    def skipped(self):
        return self.rc == -1

    @property
    def timed_out(self):
        # timeout(1) exits 124 when it sent its signal, 137 when it had to kill.
        return self.rc in (124, 137) and self.seconds is not None and \
            self.seconds >= self.limit - 0.5


@dataclass
class Row:
    program: Program
    build: str = "not built"
    runs: dict = field(default_factory=dict)
    findings: dict = None
    memcheck: dict = None
    output: dict = None
    summary: dict = None


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def tsv(path):
    return [line.rstrip("\n").split("\t") for line in read(path).splitlines() if line.strip()]


def findings_of(path):
    """cudacheck's --json findings: counts by kind, and the first few, in words."""
    text = read(path, None)
    if text is None:
        return None
    kinds, first, unparsed = {}, [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            f = json.loads(line)
        except ValueError:
            unparsed += 1
            continue
        kind = f.get("kind", "?")
        kinds[kind] = kinds.get(kind, 0) + 1
        if len(first) < 5:
            where = "%s:%s" % (f.get("file"), f.get("line")) if f.get("file") else ""
            first.append({"kind": kind, "kernel": f.get("kernel"), "where": where,
                          "message": (f.get("message") or "")[:300]})
    return {"total": sum(kinds.values()), "by_kind": kinds, "first": first,
            "unparsed_lines": unparsed}


MEMCHECK_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
MEMCHECK_AT = re.compile(r"^=+\s+at (?:0x[0-9a-f]+ in )?(.+?)(?:\+0x[0-9a-f]+)?(?: in .*)?$")


def memcheck_of(path):
    """memcheck's error count (None when it did not finish) and its first distinct errors."""
    text = read(path, None)
    if text is None:
        return None
    m = MEMCHECK_SUMMARY.search(text)
    errors, pending = [], None
    for line in text.splitlines():
        body = line.lstrip("=")
        if not body.strip():
            continue
        if not body.startswith(" ") or body.startswith("  "):
            at = MEMCHECK_AT.match(line)
            if pending and at:
                pending["kernel"] = at.group(1).strip()
                pending = None
            continue
        what = body.strip()
        if what.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "Saved host backtrace",
                            "Host Frame", "Device Frame", "Target application returned")):
            continue
        pending = {"error": what[:200], "kernel": None}
        if len(errors) < 20:
            errors.append(pending)
    distinct = []
    for e in errors:
        if all((e["error"], e["kernel"]) != (d["error"], d["kernel"]) for d in distinct):
            distinct.append(e)
    return {"errors": int(m.group(1)) if m else None, "first": distinct[:5]}


# The exit summary, one line per process the interposer was in, then a line per kernel:
#   cudacheck run: PROG (pid N): K kernel(s), L launch(es), C bounds-checked; KC kernel(s)
#   checked, KV only validated; F finding(s)
# Other lines that start with "cudacheck run:" are findings and notes.
SUMMARY_HEAD = re.compile(r"^cudacheck run: .*\(pid \d+\): ")
SUMMARY_FIELDS = {
    "kernels": re.compile(r"(\d+) kernel\(s\),"),
    "launches": re.compile(r"(\d+) launch\(es\)"),
    "checked_launches": re.compile(r"(\d+) bounds-checked"),
    "kernels_checked": re.compile(r"(\d+) kernel\(s\) checked"),
    "kernels_validated_only": re.compile(r"(\d+) only validated"),
    "findings": re.compile(r"(\d+) finding\(s\)"),
}


def summary_of(stderr):
    """The `cudacheck run:` exit summaries (one per process), and their counts added up."""
    lines = stderr.splitlines()
    heads = [i for i, l in enumerate(lines) if SUMMARY_HEAD.match(l)]
    if not heads:
        return None
    text, counts = [], {}
    for i in heads:
        text.append(lines[i])
        for line in lines[i + 1:i + 41]:
            if not line.startswith("  "):
                break
            text.append(line)
        for key, pattern in SUMMARY_FIELDS.items():
            m = pattern.search(lines[i])
            if m:
                counts[key] = counts.get(key, 0) + int(m.group(1))
    return {"text": "\n".join(text), "processes": len(heads),
            **{key: counts.get(key) for key in SUMMARY_FIELDS}}


def compare_output(d, runs):
    """Per cudacheck run that finished, whether it printed what the plain run printed."""
    plain = read(os.path.join(d, "plain.out"), None)
    if plain is None or "plain" not in runs or runs["plain"].timed_out:
        return None
    want = normalize(plain)
    result = {}
    for phase in ("cold", "warm"):
        got = read(os.path.join(d, phase + ".out"), None)
        if got is None or phase not in runs or runs[phase].skipped or runs[phase].timed_out:
            continue
        got = normalize(got)
        if got == want:
            result[phase] = {"equal": True}
        else:
            diff = list(difflib.unified_diff(want, got, "plain", phase, n=0, lineterm=""))
            result[phase] = {"equal": False, "diff": diff[:16]}
    return result


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def ratio(row, phase):
    run, plain = row.runs.get(phase), row.runs.get("plain")
    if not run or not plain or run.skipped or plain.skipped or run.timed_out or plain.rc != 0:
        return None
    if not plain.seconds:
        return None
    return run.seconds / plain.seconds


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out = sys.argv[1]
    programs = [Program(p[0], p[1], p[2], p[3], "" if p[7] == "-" else p[7])
                for p in tsv(os.path.join(out, "programs.tsv"))]
    commits = dict((c[0], c[1]) for c in tsv(os.path.join(out, "corpora.tsv")))
    builds = {(b[0], b[1], b[2]): (int(b[3]), float(b[4])) for b in tsv(os.path.join(out, "build.tsv"))}
    runs = {}
    for r in tsv(os.path.join(out, "runs.tsv")):
        runs[(r[0], r[1])] = Run(int(r[2]), float(r[3]) if r[3] else None, int(r[4]))
    env = dict(l.split(": ", 1) for l in read(os.path.join(out, "env.txt")).splitlines() if ": " in l)

    rows = []
    for p in programs:
        row = Row(p)
        b = builds.get((p.checkout, p.dir, p.bin))
        if b is not None:
            row.build = "ok" if b[0] == 0 else ("not built (time)" if b[0] == -1 else "failed")
        row.runs = {ph: runs[(p.id, ph)] for ph in PHASES if (p.id, ph) in runs}
        d = os.path.join(out, "runs", p.id)
        row.findings = findings_of(os.path.join(d, "cold.jsonl"))
        warm = findings_of(os.path.join(d, "warm.jsonl"))
        if row.findings is not None and warm is not None:
            row.findings["warm_total"] = warm["total"]
        row.memcheck = memcheck_of(os.path.join(d, "memcheck.log"))
        row.output = compare_output(d, row.runs)
        row.summary = summary_of(read(os.path.join(d, "cold.err")))
        warm_summary = summary_of(read(os.path.join(d, "warm.err")))
        if row.summary is None:
            row.summary = warm_summary
        rows.append(row)

    def seconds(row, phase):
        r = row.runs.get(phase)
        if r is None:
            return "not run"
        if r.skipped:
            return "skipped"
        if r.timed_out:
            return ">%d (timeout)" % r.limit
        s = "%.2f" % r.seconds
        return s if r.rc == 0 or phase == "memcheck" else "%s (exit %d)" % (s, r.rc)

    def fmt_ratio(x):
        return "%.2f" % x if x is not None else ""

    def findings_cell(row):
        f = row.findings
        if f is None:
            return ""
        if not f["total"]:
            cell = "none"
        else:
            cell = ", ".join("%d %s" % (n, k) for k, n in sorted(f["by_kind"].items()))
            kernels = sorted({x["kernel"] for x in f["first"] if x["kernel"]})
            if kernels:
                cell += " (%s)" % ", ".join(kernels[:2])
        if f.get("warm_total") is not None and f["warm_total"] != f["total"]:
            cell += "; warm: %d" % f["warm_total"]
        if f["unparsed_lines"]:
            cell += "; %d lines not JSON" % f["unparsed_lines"]
        return cell

    def memcheck_cell(row):
        m = row.memcheck
        if m is None:
            return ""
        if m["errors"] is None:
            return "no summary"
        if not m["errors"]:
            return "0"
        # "Invalid __global__ read of size 4 bytes", "Program hit cudaErrorLaunchFailure".
        kinds = sorted({re.sub(r" \(error \d+\).*", "", e["error"])[:60] for e in m["first"]})
        return "%d (%s)" % (m["errors"], "; ".join(kinds[:2]))

    def output_cell(row):
        o = row.output
        if not o:
            return ""
        if all(v["equal"] for v in o.values()):
            return "yes"
        return "no (%s)" % ", ".join(k for k, v in o.items() if not v["equal"])

    def exit_cell(row):
        codes = [str(row.runs[ph].rc) for ph in ("plain", "cold", "warm")
                 if ph in row.runs and not row.runs[ph].skipped]
        return "/".join(codes)

    def counts_cell(row):
        s = row.summary
        if not s:
            return ""
        cell = "%s / %s" % tuple("?" if s[k] is None else s[k]
                                 for k in ("kernels_checked", "kernels_validated_only"))
        if s["launches"] is not None:
            cell += " (%s of %d launches checked)" % (
                "?" if s["checked_launches"] is None else s["checked_launches"], s["launches"])
        return cell

    md = ["# `cudacheck run` on third-party programs", ""]
    for key in ("date", "device", "nvcc", "compute-sanitizer", "cudacheck", "cores", "budget_s"):
        if key in env:
            md.append("- %s: %s" % (key, env[key]))
    for co, commit in commits.items():
        md.append("- %s @ %s" % (co.replace("+", "/"), commit))
    md += ["- command: `scripts/run-thirdparty.sh run CUDACHECK_BIN OUTDIR`; times are wall "
           "seconds of the whole process; `cold`: `cudacheck run` with an empty module cache "
           "(CUDACHECK_CACHE_DIR, CUDA_CACHE_PATH), `warm`: the same again",
           "", "| project | program | args | plain s | run cold s | run warm s | warm/plain | "
           "memcheck s | memcheck/plain | cudacheck findings | memcheck errors | "
           "output equal | exit plain/cold/warm | kernels checked / only validated |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | "
           "--- | --- |"]
    for row in rows:
        p = row.program
        if row.build != "ok":
            md.append("| %s | %s | %s | %s |  |  |  |  |  |  |  |  |  |  |"
                      % (p.project, p.bin, p.args, row.build))
            continue
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            p.project, p.bin, p.args, seconds(row, "plain"), seconds(row, "cold"),
            seconds(row, "warm"), fmt_ratio(ratio(row, "warm")), seconds(row, "memcheck"),
            fmt_ratio(ratio(row, "memcheck")), findings_cell(row), memcheck_cell(row),
            output_cell(row), exit_cell(row), counts_cell(row)))

    means = {}
    md.append("")
    for project in [None] + sorted({r.program.project for r in rows}):
        subset = [r for r in rows if project is None or r.program.project == project]
        entry = {}
        for phase in ("cold", "warm", "memcheck"):
            values = [ratio(r, phase) for r in subset]
            values = [v for v in values if v is not None]
            entry[phase + "/plain"] = {"geomean": geomean(values), "programs": len(values)}
        timeouts = sum(1 for r in subset if r.runs.get("memcheck") and r.runs["memcheck"].timed_out)
        entry["memcheck_timeouts"] = timeouts
        means[project or "all"] = entry
        md.append("Geometric means, %s: %s; memcheck timed out on %d." % (
            project or "all programs",
            ", ".join("%s %s over %d" % (k, fmt_ratio(v["geomean"]) or "-", v["programs"])
                      for k, v in entry.items() if isinstance(v, dict)), timeouts))
        md.append("")

    detail = [r for r in rows if (r.findings and r.findings["total"]) or
              (r.memcheck and r.memcheck["errors"])]
    if detail:
        md += ["## Findings and memcheck errors", ""]
        for r in detail:
            md.append("- **%s**" % " ".join(filter(None, (r.program.bin, r.program.args))))
            for f in (r.findings or {}).get("first", []):
                md.append("  - cudacheck: %s%s%s: %s" % (
                    f["kind"], " in `%s`" % f["kernel"] if f["kernel"] else "",
                    " at " + f["where"] if f["where"] else "", f["message"].replace("\n", " ")))
            for e in (r.memcheck or {}).get("first", []):
                md.append("  - memcheck: %s%s" % (e["error"],
                                                  " in `%s`" % e["kernel"] if e["kernel"] else ""))
        md.append("")
    differing = [r for r in rows if r.output and not all(v["equal"] for v in r.output.values())]
    if differing:
        md += ["## Output differences (after masking timings)", ""]
        for r in differing:
            for phase, v in r.output.items():
                if not v["equal"]:
                    md += ["%s %s, plain against %s:" % (r.program.bin, r.program.args, phase), "",
                           "```"] + v["diff"] + ["```", ""]
    summaries = [r for r in rows if r.summary]
    if summaries:
        md += ["## An exit summary", "", "%s %s:" % (summaries[0].program.bin,
                                                      summaries[0].program.args), "", "```",
               summaries[0].summary["text"], "```", ""]
    failed = [r for r in rows if r.build == "failed"]
    if failed:
        md += ["## Build failures", ""]
        for r in failed:
            log = read(os.path.join(out, "build", r.program.bin + ".log")).strip().splitlines()
            first = next((l for l in log if "error" in l.lower()), log[0] if log else "")
            md.append("- %s: %s" % (r.program.bin, first[:300]))
        md.append("")

    with open(os.path.join(out, "run-thirdparty.md"), "w") as f:
        f.write("\n".join(md))
    data = {
        "env": env, "corpora": commits, "geomean": means,
        "programs": [{
            "id": r.program.id, "project": r.program.project, "program": r.program.bin,
            "args": r.program.args, "build": r.build,
            "runs": {ph: {"exit": run.rc, "seconds": run.seconds, "limit": run.limit,
                          "skipped": run.skipped, "timed_out": run.timed_out}
                     for ph, run in r.runs.items()},
            "ratio": {ph + "/plain": ratio(r, ph) for ph in ("cold", "warm", "memcheck")},
            "findings": r.findings, "memcheck": r.memcheck, "output": r.output,
            "summary": r.summary,
        } for r in rows],
    }
    with open(os.path.join(out, "run-thirdparty.json"), "w") as f:
        json.dump(data, f, indent=1)
    print("\n".join(md))


if __name__ == "__main__":
    main()
