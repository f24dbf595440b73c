#!/usr/bin/env python3
"""Checks what `cudacheck run` reported on the programs of tests/run against
tests/run/expected.json, from the files `scripts/run-programs.sh check` left in OUTDIR.

    run-check.py [--manifest FILE] OUTDIR     compare; table on stdout, OUTDIR/run-programs.{md,json}
    run-check.py [--manifest FILE] --plan     the runs to make, one a line (see main_plan)
    run-check.py [--manifest FILE] --self-test

OUTDIR/<program>/ holds, per case, <case>.<mode>.{stdout,stderr,rc,ms} for mode plain (the
program alone), run (under `cudacheck run [OPTIONS] --json <case>.jsonl`, with the options the
manifest gives the case), memcheck (under `compute-sanitizer --tool memcheck`, or the tool the
manifest names for the case, planted cases, when present) and exitcode (under
`cudacheck run --error-exitcode N`, the probe the manifest names); <case>.jsonl, the findings;
cases.txt, what `PROGRAM --list` printed. OUTDIR/env.txt, when present, heads the report.

Verdicts: a correct twin passes with no finding, exit 0 both ways, and the run's stdout
bit-identical to the plain run's. A planted case passes when its findings are exactly the
expected ones (each bad launch reported once per access or once in all, see the manifest's
`about`), every finding names what it must (kernel, param, allocation, index, thread, line),
and the program finished (the plain run's exit status, or 0). The exit status is 1 when any
row fails or the programs' case lists and the manifest disagree.

Expected lines are never written in the manifest: each comes from a `RUN-BUG(<marker>)`
comment in the program's source, so moving code cannot make the manifest stale.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Optional
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MANIFEST = os.path.join(ROOT, "tests", "run", "expected.json")
KINDS = {"out_of_bounds", "device_assert", "misaligned", "launch_error", "race", "barrier",
         "uninitialized"}
# What an out-of-bounds finding must name for a person to act on it.
REQUIRED_OOB = ["kernel", "param", "param_index", "access", "byte_offset", "access_bytes", "index",
                "allocation", "thread", "block", "line"]
TIMEOUT_RCS = {124, 137}


# ---------------------------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------------------------

@dataclass
class Access:
    """One bad access the program plants: what a finding describing it must say."""
    kind: str
    kernel: str
    param_index: object  # int or None
    param: object  # str or None
    access: str
    index: object
    byte_offset: object
    access_bytes: object
    alloc_bytes: object
    thread: object
    block: object
    marker: str
    line: int = 0  # from the marker

    def identity(self):
        return (self.kind, self.kernel, self.param_index if self.param is None else self.param,
                self.access)

    def describe(self):
        p = f"param {self.param_index}" if self.param is None else f"param {self.param}"
        where = self.index if self.index is not None else f"byte {self.byte_offset}"
        return f"{self.kernel}: {self.access} of {p} at index {where}, line {self.line}"


# Kinds a fault is told by its kernel and the lines it may be reported at (markers), not by
# accesses: which of a race's two accesses a report names depends on the order the threads ran.
LINE_KINDS = {"race", "barrier", "uninitialized"}


@dataclass
class Fault:
    """One bad launch: its bad accesses (out of bounds), the launch error it is, or a race or
    barrier error with the lines a report of it may name."""
    kind: str
    kernel: str
    words: list
    accesses: list
    lines: dict = field(default_factory=dict)  # marker -> line (race, barrier)

    def describe(self):
        if self.kind == "launch_error":
            return f"launch_error of {self.kernel}"
        if self.kind in LINE_KINDS:
            return f"{self.kind} in {self.kernel} at line {' or '.join(map(str, self.lines.values()))}"
        return "; ".join(a.describe() for a in self.accesses)


@dataclass
class Case:
    name: str
    faults: list
    same_stdout: bool = False
    stdout_as_correct: bool = False
    # compute-sanitizer's tool to compare with (planted cases), and `cudacheck run` options.
    sanitizer: str = "memcheck"
    flags: list = field(default_factory=list)
    # With `--init`: how many checked launches look up global memory's shadow (the summary's
    # `init:` line), when the case says.
    init_global_launches: Optional[int] = None

    @property
    def planted(self):
        return bool(self.faults)


@dataclass
class Program:
    name: str
    source: str
    program_source: str
    cases: dict  # name -> Case


class ManifestError(Exception):
    pass


def markers(path):
    """RUN-BUG(<marker>) comments of a source file: marker -> 1-based line. A marker is a name
    (letters, digits, `_`, `/`, `-`): a comment that explains the convention, `RUN-BUG(<case>)`,
    marks nothing."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in re.finditer(r"RUN-BUG\(([\w/-]+)\)", line):
                if m.group(1) in found:
                    raise ManifestError(f"{path}: marker RUN-BUG({m.group(1)}) on lines "
                                        f"{found[m.group(1)]} and {n}")
                found[m.group(1)] = n
    return found


def load_manifest(path, root=ROOT):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    raw = {p["name"]: p for p in data["programs"]}
    programs = []
    for p in data["programs"]:
        case_data = raw[p["cases_from"]]["cases"] if "cases_from" in p else p["cases"]
        source = os.path.join(root, p["source"])
        program_source = os.path.join(root, p.get("program_source", p["source"]))
        marks = markers(source)
        cases = {}
        for cname, c in case_data.items():
            faults = []
            for fd in c.get("faults", []):
                kind = fd.get("kind", "out_of_bounds")
                if kind not in KINDS:
                    raise ManifestError(f"{p['name']} {cname}: unknown kind {kind}")
                accesses = []
                for ad in fd.get("accesses", []):
                    merged = {**{k: v for k, v in fd.items() if k != "accesses"}, **ad}
                    marker = merged.get("marker", cname)
                    if marker not in marks:
                        raise ManifestError(f"{p['name']} {cname}: no RUN-BUG({marker}) in "
                                            f"{p['source']}")
                    accesses.append(Access(
                        kind=kind, kernel=merged["kernel"],
                        param_index=merged.get("param_index"), param=merged.get("param"),
                        access=merged["access"], index=merged.get("index"),
                        byte_offset=merged.get("byte_offset"),
                        access_bytes=merged.get("access_bytes"),
                        alloc_bytes=merged.get("alloc_bytes"), thread=merged.get("thread"),
                        block=merged.get("block"), marker=marker, line=marks[marker]))
                if kind == "out_of_bounds" and not accesses:
                    raise ManifestError(f"{p['name']} {cname}: an out_of_bounds fault needs accesses")
                lines = {}
                if kind in LINE_KINDS:
                    for marker in fd.get("markers") or [fd.get("marker", cname)]:
                        if marker not in marks:
                            raise ManifestError(f"{p['name']} {cname}: no RUN-BUG({marker}) in "
                                                f"{p['source']}")
                        lines[marker] = marks[marker]
                faults.append(Fault(kind=kind, kernel=fd["kernel"], words=fd.get("words", []),
                                    accesses=accesses, lines=lines))
            ids = [a.identity() for f in faults for a in f.accesses]
            if len(ids) != len(set(ids)):
                raise ManifestError(f"{p['name']} {cname}: two accesses with one identity "
                                    "(kind, kernel, param, access): findings could not tell them apart")
            kernels = [f.kernel for f in faults if f.kind == "launch_error"]
            if len(kernels) != len(set(kernels)):
                raise ManifestError(f"{p['name']} {cname}: two launch errors of one kernel")
            flags = p.get("flags", []) + c.get("flags", [])
            if any(not f.startswith("--") or " " in f for f in flags):
                raise ManifestError(f"{p['name']} {cname}: flags must be options, one word each")
            cases[cname] = Case(name=cname, faults=faults,
                                same_stdout=bool(c.get("same_stdout")),
                                stdout_as_correct=bool(c.get("stdout_as_correct")),
                                sanitizer=c.get("sanitizer", p.get("sanitizer", "memcheck")),
                                flags=flags,
                                init_global_launches=c.get("init_global_launches"))
        if "correct" not in cases:
            raise ManifestError(f"{p['name']}: no `correct` case")
        used = {a.marker for c in cases.values() for f in c.faults for a in f.accesses}
        used |= {m for c in cases.values() for f in c.faults for m in f.lines}
        if "cases_from" not in p:
            unused = sorted(set(marks) - used)
            if unused:
                raise ManifestError(f"{p['source']}: markers no case expects: {unused}")
        programs.append(Program(name=p["name"], source=source, program_source=program_source,
                                cases=cases))
    return programs, data.get("error_exitcode_probe")


def source_case_list(path):
    """The case names a program declares in its source (C++ pick_case list, Rust CASES)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = (re.search(r"pick_case\(\s*argc\s*,\s*argv\s*,\s*\{([^}]*)\}", text)
         or re.search(r"CASES:\s*&\[&str\]\s*=\s*&\[([^\]]*)\]", text))
    return re.findall(r'"([^"]+)"', m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------
# What the runs left
# ---------------------------------------------------------------------------------------------

@dataclass
class RunFiles:
    rc: int
    stdout: bytes
    stderr: str
    ms: int


def read_run(prefix):
    try:
        with open(prefix + ".rc") as f:
            rc = int(f.read().strip())
    except (OSError, ValueError):
        return None

    def read(ext, binary):
        try:
            with open(prefix + ext, "rb") as f:
                b = f.read()
            return b if binary else b.decode("utf-8", "replace")
        except OSError:
            return b"" if binary else ""

    try:
        with open(prefix + ".ms") as f:
            ms = int(f.read().strip())
    except (OSError, ValueError):
        ms = -1
    return RunFiles(rc=rc, stdout=read(".stdout", True), stderr=read(".stderr", False), ms=ms)


def read_findings(path):
    """(findings, problems): one JSON object per line."""
    findings, problems = [], []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return [], []  # no file: nothing was reported
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            problems.append(f"{os.path.basename(path)} line {n} is not JSON ({e})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{os.path.basename(path)} line {n} is not a JSON object")
            continue
        findings.append(obj)
    return findings, problems


def parse_memcheck(text):
    """(error count or None, first error in words or None, its line or None)."""
    count = None
    m = re.search(r"ERROR SUMMARY:\s*(\d+)\s+error", text)
    if m:
        count = int(m.group(1))
    # racecheck counts hazards ("RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)").
    m = re.search(r"RACECHECK SUMMARY:\s*\d+\s+hazards? displayed\s*\((\d+)\s+error", text)
    if m:
        count = int(m.group(1))
    first = line = None
    lines = text.splitlines()
    for i, l in enumerate(lines):
        body = re.sub(r"^=+\s*", "", l).strip()
        if not l.startswith("=") or not body:
            continue
        if re.match(r"(Invalid |Program hit |Malformed |Misaligned |Out-of-range |Barrier |"
                    r"Race |Uninitialized |Cuda API error|.*[Ee]rror.*detected)", body) \
                and not body.startswith("ERROR SUMMARY"):
            first = body
            for l2 in lines[i + 1:i + 6]:
                # "at kernel(args)+0x90 in /path/file.cu:11" (CUDA 12, 13), or
                # "at 0x90 in /path/file.cu:11:kernel(args)" (older releases).
                m2 = re.search(r"\bat .* in (\S+?\.(?:cu|cuh|cpp|cc|h|hpp|ptx)):(\d+)", l2)
                if m2:
                    first += f" @ {os.path.basename(m2.group(1))}:{m2.group(2)}"
                    line = int(m2.group(2))
                    break
            break
    return count, first, line


# ---------------------------------------------------------------------------------------------
# Comparing findings with the manifest
# ---------------------------------------------------------------------------------------------

def finding_identity(f, a):
    """The finding's key in the terms the expected access `a` uses (param index or name)."""
    param = f.get("param_index") if a.param is None else f.get("param")
    return (f.get("kind"), f.get("kernel"), param, f.get("access"))


def describe_finding(f):
    if f.get("kind") == "launch_error":
        return f"launch_error of {f.get('kernel')!r}"
    return (f"{f.get('kind')} in {f.get('kernel')!r}: {f.get('access')} of param "
            f"{f.get('param_index')} ({f.get('param')}) at index {f.get('index')}, "
            f"line {f.get('line')}")


def access_details(f, a, source):
    """How a finding that is about access `a` differs from what `a` expects."""
    diffs = []

    def want(name, expected, got):
        if expected is not None and got != expected:
            diffs.append(f"{name} {got!r}, expected {expected!r}")

    want("index", a.index, f.get("index"))
    want("byte_offset", a.byte_offset, f.get("byte_offset"))
    if a.index is not None and a.access_bytes is not None and a.byte_offset is None:
        want("byte_offset", a.index * a.access_bytes, f.get("byte_offset"))
    want("access_bytes", a.access_bytes, f.get("access_bytes"))
    alloc = f.get("allocation")
    if a.alloc_bytes is not None:
        got = alloc.get("bytes") if isinstance(alloc, dict) else None
        want("allocation bytes", a.alloc_bytes, got)
    want("line", a.line, f.get("line"))
    if f.get("file") and os.path.basename(f["file"]) != os.path.basename(source):
        diffs.append(f"file {f['file']!r}, expected {os.path.basename(source)}")
    want("thread", a.thread, f.get("thread"))
    want("block", a.block, f.get("block"))
    return diffs


def missing_fields(f):
    """What a finding of its kind must name and does not."""
    kind = f.get("kind")
    if kind == "launch_error":
        gaps = [k for k in ("kernel", "message") if not f.get(k)]
        if not f.get("violations"):
            gaps.append("violations")
        return gaps
    if kind == "out_of_bounds":
        gaps = [k for k in REQUIRED_OOB if f.get(k) is None]
        alloc = f.get("allocation")
        if isinstance(alloc, dict) and (alloc.get("base") is None or alloc.get("bytes") is None):
            gaps.append("allocation base/bytes")
        if not f.get("message"):
            gaps.append("message")
        return gaps
    if kind == "uninitialized":
        gaps = [k for k in ("kernel", "message", "thread", "block", "line") if f.get(k) is None]
        # A read of global memory names the allocation it is in (every planted one is in an
        # allocation the program made), the byte offset, and so the index.
        if "global memory" in str(f.get("message", "")):
            alloc = f.get("allocation")
            if not isinstance(alloc, dict) or alloc.get("base") is None:
                gaps.append("allocation")
            if f.get("byte_offset") is None:
                gaps.append("byte_offset")
        return gaps
    return [k for k in ("kernel", "message") if not f.get(k)]


def words_missing(f, words):
    text = " ".join([str(f.get("message", ""))] + [str(v) for v in f.get("violations") or []]).lower()
    missing = []
    for w in words:
        options = w if isinstance(w, list) else [w]
        if not any(str(o).lower() in text for o in options):
            missing.append(" or ".join(map(str, options)))
    return missing


def compare_findings(case, findings, source):
    """(problems, notes) of a case's findings against its expected faults."""
    problems, notes = [], []
    accesses = [(fi, a) for fi, fault in enumerate(case.faults) for a in fault.accesses]
    by_fault = {fi: [] for fi in range(len(case.faults))}  # fault -> [(finding, access or None)]
    for f in findings:
        kind = f.get("kind")
        if kind not in KINDS:
            problems.append(f"finding of unknown kind {kind!r}: {describe_finding(f)}")
            continue
        gaps = missing_fields(f)
        if gaps:
            problems.append(f"finding does not name {', '.join(gaps)}: {describe_finding(f)}")
        if kind == "launch_error":
            hit = [fi for fi, fault in enumerate(case.faults)
                   if fault.kind == "launch_error" and fault.kernel == f.get("kernel")]
            if not hit:
                problems.append(f"unexpected {describe_finding(f)}: {f.get('message')!r}")
                continue
            by_fault[hit[0]].append((f, None))
            missing = words_missing(f, case.faults[hit[0]].words)
            if missing:
                problems.append(f"launch_error of {f.get('kernel')!r} does not say "
                                f"{', '.join(missing)}: {f.get('message')!r}")
            continue
        if kind in LINE_KINDS:
            hit = [fi for fi, fault in enumerate(case.faults)
                   if fault.kind == kind and fault.kernel == f.get("kernel")]
            if not hit:
                problems.append(f"unexpected {describe_finding(f)}: {f.get('message')!r}")
                continue
            by_fault[hit[0]].append((f, None))
            want = case.faults[hit[0]].lines
            if f.get("line") not in want.values():
                problems.append(f"{kind} in {f.get('kernel')!r} reported at line {f.get('line')}, "
                                f"expected one of {sorted(want.values())} "
                                f"({', '.join(sorted(want))}): {f.get('message')!r}")
            continue
        hit = [(fi, a) for fi, a in accesses if finding_identity(f, a) == a.identity()]
        if not hit:
            problems.append(f"unexpected {describe_finding(f)}")
            continue
        fi, a = hit[0]
        by_fault[fi].append((f, a))
        diffs = access_details(f, a, source)
        if diffs:
            problems.append(f"{a.describe()}: reported with {'; '.join(diffs)}")
    for fi, fault in enumerate(case.faults):
        got = by_fault[fi]
        if not got:
            problems.append(f"missing: {fault.describe()}")
            continue
        if fault.kind == "launch_error":
            if len(got) > 1:
                problems.append(f"{fault.describe()} reported {len(got)} times")
            continue
        if fault.kind in LINE_KINDS:
            # One report per pair of sites: a race seen from both of its accesses is two.
            continue
        per_access = {}
        for f, a in got:
            per_access.setdefault(a.identity(), []).append(f)
        n = len(fault.accesses)
        if len(got) == 1:
            # One finding for the launch, describing its first bad access.
            count = got[0][0].get("count")
            if n > 1 and count != n:
                notes.append(f"{fault.accesses[0].kernel}: one finding for {n} bad accesses, "
                             f"count {count!r} (expected {n})")
        elif any(len(v) > 1 for v in per_access.values()):
            problems.append(f"one bad access reported more than once: {fault.describe()}")
        elif len(got) != n:
            problems.append(f"{len(got)} findings for a launch with {n} bad accesses "
                            f"(either one per launch or one per access): {fault.describe()}")
    return problems, notes


# ---------------------------------------------------------------------------------------------
# One row per (program, case)
# ---------------------------------------------------------------------------------------------

@dataclass
class Row:
    program: str
    case: str
    expected: str
    found: str = "-"
    verdict: str = "FAIL"
    plain_s: object = None
    run_s: object = None
    memcheck_errors: object = None
    memcheck_first: object = None
    memcheck_line_ok: object = None
    memcheck_s: object = None
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def expected_words(case):
    if not case.planted:
        return "none"
    parts = []
    for f in case.faults:
        parts.append(f.kind if f.kind == "launch_error" or f.kind in LINE_KINDS
                     else f"{len(f.accesses)} access{'es' if len(f.accesses) > 1 else ''}")
    return ", ".join(parts)


def secs(run):
    return None if run is None or run.ms < 0 else run.ms / 1000.0


def evaluate_case(program, case, outdir):
    d = os.path.join(outdir, program.name)
    row = Row(program=program.name, case=case.name, expected=expected_words(case))
    plain = read_run(os.path.join(d, f"{case.name}.plain"))
    run = read_run(os.path.join(d, f"{case.name}.run"))
    memcheck = read_run(os.path.join(d, f"{case.name}.memcheck"))
    row.plain_s, row.run_s, row.memcheck_s = secs(plain), secs(run), secs(memcheck)
    if memcheck is not None:
        text = memcheck.stdout.decode("utf-8", "replace") + "\n" + memcheck.stderr
        row.memcheck_errors, row.memcheck_first, mline = parse_memcheck(text)
        marked = {a.line for f in case.faults for a in f.accesses}
        marked |= {l for f in case.faults for l in f.lines.values()}
        if mline is not None and marked:
            row.memcheck_line_ok = mline in marked
    if os.path.exists(os.path.join(d, "missing")):
        row.problems.append("the program's executable is missing (not built?)")
        return row
    if plain is None or run is None:
        row.problems.append("not run" if plain is None else "the run under cudacheck left no exit status")
        return row
    findings, problems = read_findings(os.path.join(d, f"{case.name}.jsonl"))
    row.problems += problems
    row.found = str(len(findings)) if not findings else \
        f"{len(findings)} ({', '.join(sorted({str(f.get('kind')) for f in findings}))})"
    if run.rc in TIMEOUT_RCS:
        row.problems.append(f"the run under cudacheck timed out (exit {run.rc})")
    if plain.rc in TIMEOUT_RCS:
        row.notes.append(f"the plain run timed out (exit {plain.rc})")

    if not case.planted:
        if findings:
            row.problems += [f"finding in a correct program: {describe_finding(f)}" for f in findings]
        if plain.rc != 0:
            row.problems.append(f"the plain run exited {plain.rc}: {last_line(plain.stderr)}")
        if run.rc != 0:
            row.problems.append(f"the run under cudacheck exited {run.rc}: {last_line(run.stderr)}")
        if b"MISMATCH" in plain.stdout:
            row.problems.append("the program's own check failed in the plain run (test program or GPU wrong)")
        if run.stdout != plain.stdout:
            row.problems.append("stdout under cudacheck differs from the plain run's" +
                                first_difference(plain.stdout, run.stdout))
    else:
        if run.rc not in (plain.rc, 0) and run.rc not in TIMEOUT_RCS:
            row.problems.append(f"the run under cudacheck exited {run.rc}, the plain run {plain.rc}: "
                                f"{last_line(run.stderr)}")
        if case.same_stdout and run.stdout != plain.stdout:
            row.problems.append("stdout under cudacheck differs from the plain run's (the program "
                                "must see the same CUDA errors)" + first_difference(plain.stdout, run.stdout))
        if case.stdout_as_correct:
            correct = read_run(os.path.join(d, "correct.plain"))
            if correct is None:
                row.problems.append("no plain run of `correct` to compare stdout with")
            elif run.stdout != correct.stdout:
                row.problems.append("stdout under cudacheck differs from the correct program's (a "
                                    "suppressed access must read 0 and write nothing)" +
                                    first_difference(correct.stdout, run.stdout))
        p, n = compare_findings(case, findings, program.source)
        row.problems += p
        row.notes += n
        for fault in case.faults:
            if fault.kernel not in run.stderr:
                row.problems.append(f"stderr does not name {fault.kernel!r} (reports go to stderr)")
    if case.init_global_launches is not None:
        m = re.search(r"init: (\d+) of (\d+) checked launch", run.stderr)
        if not m:
            row.problems.append("the summary has no `init:` line (was --init on?)")
        elif int(m.group(1)) != case.init_global_launches:
            row.problems.append(f"{m.group(1)} of {m.group(2)} checked launches looked up global "
                                f"memory's shadow, expected {case.init_global_launches}")
    row.verdict = "ok" if not row.problems else "FAIL"
    return row


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else "(no stderr)"


def first_difference(a, b):
    la, lb = a.decode("utf-8", "replace").splitlines(), b.decode("utf-8", "replace").splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<none>"
        y = lb[i] if i < len(lb) else "<none>"
        if x != y:
            return f" (line {i + 1}: {x[:120]!r} vs {y[:120]!r})"
    return ""


def evaluate_probe(probe, programs, outdir):
    """Rows of the --error-exitcode probe: the exit status is N exactly when something was found."""
    rows = []
    if not probe:
        return rows
    program = next((p for p in programs if p.name == probe["program"]), None)
    for cname, want in probe["cases"].items():
        row = Row(program=probe["program"], case=f"{cname} --error-exitcode {probe['code']}",
                  expected=f"exit {want}")
        if program is None or cname not in program.cases:
            row.problems.append("the probe names a program or case the manifest does not have")
            rows.append(row)
            continue
        run = read_run(os.path.join(outdir, probe["program"], f"{cname}.exitcode"))
        if run is None:
            row.problems.append("not run")
        else:
            row.found, row.run_s = f"exit {run.rc}", secs(run)
            if run.rc != want:
                row.problems.append(f"exit {run.rc}, expected {want}: {last_line(run.stderr)}")
        row.verdict = "ok" if not row.problems else "FAIL"
        rows.append(row)
    return rows


def check_case_lists(programs, outdir):
    """Problems where a program's `--list` and the manifest disagree."""
    problems = []
    for p in programs:
        path = os.path.join(outdir, p.name, "cases.txt")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            listed = [l.strip() for l in f if l.strip()]
        if sorted(listed) != sorted(p.cases):
            problems.append(f"{p.name}: `--list` gives {sorted(listed)}, the manifest {sorted(p.cases)}")
    return problems


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v).replace("|", "\\|")


def render(rows, header_lines, global_problems):
    out = list(header_lines)
    out.append("| program | case | expected | found | verdict | plain s | run s | memcheck errors "
               "| memcheck first error | memcheck at marker | memcheck s |")
    out.append("|---|---|---|---|---|---:|---:|---:|---|---|---:|")
    for r in rows:
        out.append("| " + " | ".join(fmt(v) for v in (
            r.program, r.case, r.expected, r.found, r.verdict, r.plain_s, r.run_s,
            r.memcheck_errors, r.memcheck_first, r.memcheck_line_ok, r.memcheck_s)) + " |")
    failed = [r for r in rows if r.verdict != "ok"]
    out.append("")
    out.append(f"{len(rows) - len(failed)} of {len(rows)} rows pass.")
    for p in global_problems:
        out.append(f"- PROBLEM: {p}")
    for r in rows:
        if r.problems or r.notes:
            out.append("")
            out.append(f"**{r.program} {r.case}** ({r.verdict})")
            out += [f"- {p}" for p in r.problems]
            out += [f"- note: {n}" for n in r.notes]
    return "\n".join(out) + "\n"


def evaluate(manifest_path, outdir, root=ROOT):
    programs, probe = load_manifest(manifest_path, root)
    rows = [evaluate_case(p, c, outdir) for p in programs for c in p.cases.values()]
    rows += evaluate_probe(probe, programs, outdir)
    global_problems = check_case_lists(programs, outdir)
    return rows, global_problems


def main_compare(manifest_path, outdir):
    rows, global_problems = evaluate(manifest_path, outdir)
    header = ["# cudacheck run on the test programs", ""]
    env = os.path.join(outdir, "env.txt")
    if os.path.exists(env):
        with open(env, encoding="utf-8") as f:
            header += [f"    {l.rstrip()}" for l in f if l.strip()]
        header.append("")
    text = render(rows, header, global_problems)
    sys.stdout.write(text)
    with open(os.path.join(outdir, "run-programs.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(outdir, "run-programs.json"), "w", encoding="utf-8") as f:
        json.dump({"rows": [r.__dict__ for r in rows], "problems": global_problems,
                   "passed": all(r.verdict == "ok" for r in rows) and not global_problems},
                  f, indent=1)
    return 0 if all(r.verdict == "ok" for r in rows) and not global_problems else 1


def main_plan(manifest_path):
    """The runs scripts/run-programs.sh makes: `case PROGRAM CASE PLANTED SANITIZER_TOOL
    [OPTION...]` (the options are `cudacheck run`'s) and `probe PROGRAM CASE CODE`."""
    programs, probe = load_manifest(manifest_path)
    for p in programs:
        for c in p.cases.values():
            print(" ".join([f"case {p.name} {c.name} {1 if c.planted else 0} {c.sanitizer}"]
                           + c.flags))
    if probe:
        for cname in probe["cases"]:
            print(f"probe {probe['program']} {cname} {probe['code']}")
    return 0


# ---------------------------------------------------------------------------------------------
# Self-test: the real manifest against the real sources, then runs made up from it
# ---------------------------------------------------------------------------------------------

def synthesize(programs, probe, outdir, per_launch=False):
    """An OUTDIR as a perfect cudacheck would leave it."""
    for p in programs:
        d = os.path.join(outdir, p.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "cases.txt"), "w") as f:
            f.write("".join(c + "\n" for c in p.cases))
        for c in p.cases.values():
            correct_out = b"c: n=4 fnv=0123 head 1 2 3 tail 2 3 4\ncheck c: ok\n"
            plain_out = correct_out if not c.planted else correct_out.replace(b"ok", b"MISMATCH 1 of 4")
            if c.same_stdout:
                plain_out = b"launch refused: cudaErrorInvalidConfiguration\n" + correct_out
            run_out = correct_out if c.stdout_as_correct else plain_out
            findings, stderr = [], ""
            for fault in c.faults:
                stderr += f"cudacheck: {fault.kind} in {fault.kernel}\n"
                if fault.kind == "launch_error":
                    findings.append({"kind": "launch_error", "kernel": fault.kernel, "pid": 1,
                                     "violations": [" ".join(str(w[0] if isinstance(w, list) else w)
                                                             for w in fault.words)],
                                     "message": f"kernel `{fault.kernel}`: refused"})
                    continue
                if fault.kind in LINE_KINDS:
                    findings.append({"kind": fault.kind, "kernel": fault.kernel, "pid": 1,
                                     "line": next(iter(fault.lines.values())),
                                     "thread": [0, 0, 0], "block": [0, 0, 0],
                                     "message": f"kernel `{fault.kernel}`: {fault.kind}"})
                    continue
                chosen = fault.accesses[:1] if per_launch else fault.accesses
                for a in chosen:
                    ab = a.access_bytes or 4
                    idx = a.index if a.index is not None else a.byte_offset // ab
                    findings.append({
                        "kind": a.kind, "kernel": a.kernel, "param": f"{a.kernel}_param_{a.param_index}",
                        "param_index": a.param_index, "access": a.access, "byte_offset": idx * ab,
                        "access_bytes": ab, "index": idx,
                        "allocation": {"base": "0x7f0000000000", "bytes": a.alloc_bytes or 4096,
                                       "api": "cuMemAlloc_v2"},
                        "thread": a.thread or [0, 0, 0], "block": a.block or [0, 0, 0],
                        "file": "/somewhere/" + os.path.basename(p.source), "line": a.line,
                        "count": len(fault.accesses) if per_launch else 1, "pid": 1,
                        "message": f"out of bounds in {a.kernel}"})
            write_run(os.path.join(d, f"{c.name}.plain"), 0, plain_out, "", 100)
            if c.init_global_launches is not None:
                stderr += (f"  init: {c.init_global_launches} of 9 checked launch(es) looked up "
                           "global memory's shadow\n")
            write_run(os.path.join(d, f"{c.name}.run"), 0, run_out, stderr, 300)
            with open(os.path.join(d, f"{c.name}.jsonl"), "w") as f:
                f.write("".join(json.dumps(x) + "\n" for x in findings))
            if c.planted:
                write_run(os.path.join(d, f"{c.name}.memcheck"), 1, SAMPLE_MEMCHECK.encode(), "", 2500)
    if probe:
        for cname, code in probe["cases"].items():
            write_run(os.path.join(outdir, probe["program"], f"{cname}.exitcode"), code, b"", "", 300)


def write_run(prefix, rc, stdout, stderr, ms):
    for ext, content in ((".rc", str(rc)), (".ms", str(ms)), (".stderr", stderr)):
        with open(prefix + ext, "w") as f:
            f.write(content)
    with open(prefix + ".stdout", "wb") as f:
        f.write(stdout)


SAMPLE_MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at add_scaled(const float *, const float *, float *, float, int)+0x90 in /w/elementwise.cu:11
=========     by thread (104,0,0) in block (7,0,0)
=========     Address 0x7f3a00000fa0 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""


def self_test(manifest_path):
    failures = []

    def expect(name, cond, detail=""):
        print(f"  {'ok  ' if cond else 'FAIL'} {name}{': ' + detail if detail and not cond else ''}")
        if not cond:
            failures.append(name)

    print("manifest and sources:")
    try:
        programs, probe = load_manifest(manifest_path)
        expect("the manifest loads, every marker it needs is in its source, none is left over", True)
    except (ManifestError, KeyError, OSError, ValueError) as e:
        expect("the manifest loads", False, str(e))
        return 1
    for p in programs:
        declared = source_case_list(p.program_source)
        expect(f"{p.name}: the cases the program declares are the manifest's",
               declared is not None and sorted(declared) == sorted(p.cases),
               f"source {declared}, manifest {sorted(p.cases)}")

    # The second marked line of two race faults (the synthesized report gives the first).
    race = next((p for p in programs if p.name == "race"), None)
    if race is None:
        expect("the manifest has the race program", False)
        return 1
    RACE_OTHER_LINE = list(race.cases["bug_scan"].faults[0].lines.values())[1]
    RACE_OTHER_LINE_T = list(race.cases["bug_transpose"].faults[0].lines.values())[1]

    def run_scenario(name, mutate=None, per_launch=False, want_fail=None, want_text=None):
        tmp = tempfile.mkdtemp(prefix="run-check-")
        try:
            synthesize(programs, probe, tmp, per_launch=per_launch)
            if mutate:
                mutate(tmp)
            rows, gp = evaluate(manifest_path, tmp)
            failed = {(r.program, r.case) for r in rows if r.verdict != "ok"}
            text = " | ".join(p for r in rows for p in r.problems + r.notes) + " | ".join(gp)
            if want_fail is None:
                expect(name, not failed and not gp, f"{sorted(failed)} {text[:400]}")
            else:
                ok = failed == set(want_fail) and (want_text is None or want_text in text)
                expect(name, ok, f"failed {sorted(failed)}, wanted {sorted(want_fail)}; {text[:400]}")
            return rows
        finally:
            shutil.rmtree(tmp)

    def edit_stderr(program, case, fn):
        def mutate(tmp):
            path = os.path.join(tmp, program, f"{case}.run.stderr")
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(fn(text))
        return mutate

    def edit_jsonl(program, case, fn):
        def mutate(tmp):
            path = os.path.join(tmp, program, f"{case}.jsonl")
            with open(path) as f:
                lines = [json.loads(l) for l in f if l.strip()]
            lines = fn(lines)
            with open(path, "w") as f:
                f.write("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines))
        return mutate

    def set_field(k, v, i=0):
        def fn(lines):
            lines[i][k] = v
            return lines
        return fn

    print("checker on made-up runs:")
    rows = run_scenario("a perfect run passes (one finding per access)")
    run_scenario("an uninitialized global read that names no allocation fails",
                 edit_jsonl("init_written", "bug_fill_short",
                            set_field("message", "read of uninitialized global memory at 0x7f00")),
                 want_fail=[("init_written", "bug_fill_short")], want_text="does not name allocation")
    run_scenario("an uninitialized global read that names its allocation and offset passes",
                 edit_jsonl("init_written", "bug_fill_short", lambda ls: [dict(
                     ls[0], message="read of uninitialized global memory through `a`",
                     allocation={"base": "0x7f00", "bytes": 20000}, byte_offset=19996)]))
    run_scenario("a wrong count of launches that looked up global memory fails",
                 edit_stderr("init_written", "correct",
                             lambda t: t.replace("init: 1 of", "init: 9 of")),
                 want_fail=[("init_written", "correct")], want_text="expected 1")
    run_scenario("a summary without its init line fails (--init expected)",
                 edit_stderr("init_written", "bug_fill_short",
                             lambda t: t.replace("init:", "nit:")),
                 want_fail=[("init_written", "bug_fill_short")], want_text="no `init:` line")
    memrow = next(r for r in rows if r.program == "elementwise" and r.case == "bug_one_past")
    expect("memcheck's count and first error are read", memrow.memcheck_errors == 1 and
           memrow.memcheck_first.endswith("@ elementwise.cu:11") and memrow.memcheck_line_ok,
           f"{memrow.memcheck_errors} {memrow.memcheck_first} {memrow.memcheck_line_ok}")
    run_scenario("one finding per launch with the right count passes", per_launch=True)
    run_scenario("per launch with a wrong count passes with a note", per_launch=True,
                 mutate=edit_jsonl("elementwise", "bug_one_past", set_field("count", 1)),
                 want_fail=[], want_text="count 1")
    run_scenario("a finding in a correct twin fails",
                 mutate=lambda t: shutil.copy(os.path.join(t, "graph", "bug_bad_entry.jsonl"),
                                              os.path.join(t, "graph", "correct.jsonl")),
                 want_fail=[("graph", "correct")])
    run_scenario("a correct twin whose stdout changes fails",
                 mutate=lambda t: write_run(os.path.join(t, "interior", "correct.run"), 0, b"x\n", "", 1),
                 want_fail=[("interior", "correct")])
    run_scenario("a missing finding fails",
                 mutate=edit_jsonl("pitched", "bug_last_row", lambda l: []),
                 want_fail=[("pitched", "bug_last_row")], want_text="missing")
    run_scenario("an access reported twice fails",
                 mutate=edit_jsonl("managed", "bug_async", lambda l: l + l),
                 want_fail=[("managed", "bug_async")], want_text="more than once")
    run_scenario("two of a launch's three accesses fail",
                 mutate=edit_jsonl("elementwise", "bug_one_past", lambda l: l[:2]),
                 want_fail=[("elementwise", "bug_one_past")], want_text="either one per launch")
    run_scenario("a wrong line fails",
                 mutate=edit_jsonl("templates", "bug_namespace", set_field("line", 1)),
                 want_fail=[("templates", "bug_namespace")], want_text="line 1")
    run_scenario("a race reported at its other marked line passes",
                 mutate=edit_jsonl("race", "bug_scan", set_field("line", RACE_OTHER_LINE)))
    run_scenario("a race reported twice, once from each access, passes",
                 mutate=edit_jsonl("race", "bug_transpose", lambda ls: ls + [
                     {**ls[0], "line": RACE_OTHER_LINE_T}]))
    run_scenario("a race at an unmarked line fails",
                 mutate=edit_jsonl("race", "bug_scan", set_field("line", 1)),
                 want_fail=[("race", "bug_scan")], want_text="reported at line 1")
    run_scenario("a barrier error reported as a race fails",
                 mutate=edit_jsonl("race", "bug_barrier", set_field("kind", "race")),
                 want_fail=[("race", "bug_barrier")], want_text="unexpected race")
    run_scenario("a race found in a correct twin fails",
                 mutate=edit_jsonl("race", "correct", lambda ls: ls + [
                     {"kind": "race", "kernel": "scan_block", "pid": 1,
                      "line": RACE_OTHER_LINE, "message": "race"}]),
                 want_fail=[("race", "correct")], want_text="finding in a correct program")
    run_scenario("a null line fails (every finding names its line)",
                 mutate=edit_jsonl("interior", "bug_below_start", set_field("line", None)),
                 want_fail=[("interior", "bug_below_start")], want_text="does not name line")
    run_scenario("a wrong index fails",
                 mutate=edit_jsonl("interior", "bug_below_start", set_field("index", 3)),
                 want_fail=[("interior", "bug_below_start")], want_text="index 3")
    run_scenario("a wrong allocation fails",
                 mutate=edit_jsonl("managed", "bug_managed",
                                   set_field("allocation", {"base": "0x1", "bytes": 4000, "api": "x"})),
                 want_fail=[("managed", "bug_managed")], want_text="allocation bytes")
    run_scenario("a mangled kernel name fails",
                 mutate=edit_jsonl("templates", "bug_template_double",
                                   lambda l: [dict(x, kernel="_Z9scale_addIdEvT_PKS0_S0_PS0_i") for x in l]),
                 want_fail=[("templates", "bug_template_double")], want_text="unexpected")
    run_scenario("a launch error without the limit's numbers fails",
                 mutate=edit_jsonl("launch_config", "bug_block_2048",
                                   lambda l: [dict(l[0], message="bad launch", violations=["too big"])]),
                 want_fail=[("launch_config", "bug_block_2048")], want_text="does not say 2048")
    run_scenario("a launch error the program did not see fails (same stdout)",
                 mutate=lambda t: write_run(os.path.join(t, "launch_config", "bug_shared_too_big.run"),
                                            0, b"c: n=4\n", "reverse_tiles", 1),
                 want_fail=[("launch_config", "bug_shared_too_big")])
    run_scenario("a suppressed write that still lands fails (stdout as correct)",
                 mutate=lambda t: write_run(os.path.join(t, "launch_ex", "bug_ex_one_past.run"),
                                            0, b"garbage\n", "sum_squares", 1),
                 want_fail=[("launch_ex", "bug_ex_one_past")])
    run_scenario("a run that dies where the plain run did not fails",
                 mutate=lambda t: write_run(os.path.join(t, "graph", "bug_wrong_n.run"), 139, b"", "neighbour_sum", 1),
                 want_fail=[("graph", "bug_wrong_n")], want_text="exited 139")
    run_scenario("a report missing from stderr fails",
                 mutate=lambda t: write_run(os.path.join(t, "graph", "bug_bad_entry.run"), 0,
                                            b"c: n=4 fnv=0123 head 1 2 3 tail 2 3 4\ncheck c: MISMATCH 1 of 4\n", "", 1),
                 want_fail=[("graph", "bug_bad_entry")], want_text="stderr does not name")
    run_scenario("a line that is not JSON fails",
                 mutate=edit_jsonl("pitched", "bug_last_row", lambda l: l + ["{not json"]),
                 want_fail=[("pitched", "bug_last_row")], want_text="not JSON")
    run_scenario("a finding of an unknown kind fails",
                 mutate=edit_jsonl("pitched", "bug_last_row", set_field("kind", "oops")),
                 want_fail=[("pitched", "bug_last_row")], want_text="unknown kind")
    run_scenario("a wrong --error-exitcode status fails",
                 mutate=lambda t: write_run(os.path.join(t, "elementwise", "bug_one_past.exitcode"), 0, b"", "", 1),
                 want_fail=[("elementwise", "bug_one_past --error-exitcode 42")])
    run_scenario("a case list that differs from the program's fails",
                 mutate=lambda t: open(os.path.join(t, "graph", "cases.txt"), "a").write("bug_new\n"),
                 want_fail=[], want_text="--list")
    run_scenario("a missing executable fails",
                 mutate=lambda t: open(os.path.join(t, "managed", "missing"), "w").close(),
                 want_fail=[("managed", c) for c in programs[[p.name for p in programs].index("managed")].cases])

    print("manifest rules:")
    tmp = tempfile.mkdtemp(prefix="run-check-")
    try:
        with open(manifest_path) as f:
            data = json.load(f)
        data["programs"][0]["cases"]["bug_one_past"]["faults"][0]["accesses"][0]["marker"] = "nowhere"
        bad = os.path.join(tmp, "m.json")
        with open(bad, "w") as f:
            json.dump(data, f)
        try:
            load_manifest(bad)
            expect("a marker missing from the source is refused", False)
        except ManifestError as e:
            expect("a marker missing from the source is refused", "nowhere" in str(e), str(e))
    finally:
        shutil.rmtree(tmp)
    print(f"self-test: {'all passed' if not failures else f'{len(failures)} FAILED'}")
    return 0 if not failures else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=DEFAULT_MANIFEST)
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("outdir", nargs="?")
    args = ap.parse_args()
    try:
        if args.self_test:
            return self_test(args.manifest)
        if args.plan:
            return main_plan(args.manifest)
        if not args.outdir:
            ap.error("OUTDIR is needed (or --plan, --self-test)")
        return main_compare(args.manifest, args.outdir)
    except ManifestError as e:
        print(f"run-check: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
