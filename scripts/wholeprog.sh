#!/usr/bin/env bash
# Whole programs: does `cudacheck check` compile every file whose device code
# nvcc compiles, with each kernel's registers and static shared memory equal to nvcc's?
#
#   scripts/wholeprog.sh bundle [CORPUS_DIR...]
#       here: the corpora's source files (no data, no binaries) into
#       target/gpu-carry/wholeprog.tar.xz, each with its checkout's commit
#   scripts/wholeprog.sh reference CORPUS_DIR... OUTDIR
#       GPU machine (nvcc): `nvcc -arch=sm_90 -std=c++17 -Xptxas -v -c` per `.cu` file, with
#       the include flags its project needs; OUTDIR/reference.tsv records per file whether nvcc
#       compiles it (and nvcc's first error when not) and per kernel its registers, static
#       shared memory and stack frame from ptxas's report; OUTDIR/logs/ keeps nvcc's output
#   scripts/wholeprog.sh reference-bundle OUTDIR     (also: reference-carried, gpu-suite.sh's name)
#       GPU machine: unpack target/gpu-carry/wholeprog.tar.xz and run `reference` on it: needs
#       bash, coreutils, find/xargs, tar, xz and nvcc, nothing else; all cores (`xargs -P`), each
#       file at most $WHOLEPROG_FILE_LIMIT s (180); every finished file's lines are in
#       OUTDIR/reference.tsv at once, so a run that is killed still leaves what it did
#   scripts/wholeprog.sh compare REFERENCE_DIR CORPUS_DIR...
#       here: `cudacheck check --arch sm_90 --json` per corpus, compared kernel by kernel with
#       REFERENCE_DIR/reference.tsv; prints the table and the files that fail, with why
#   scripts/wholeprog.sh device-reference CORPUS_DIR... OUTDIR
#       reference's nvcc compile of what cudacheck hands NVRTC for each file (host code set
#       aside; CUDACHECK_DUMP_DEVICE_CODE), with --expt-relaxed-constexpr for the host
#       constexpr helpers NVRTC compiles with -default-device
#   scripts/wholeprog.sh compare-refs REFERENCE_DIR OTHER_DIR
#       files both compile, and whether each kernel's registers and shared memory are equal
#   scripts/wholeprog.sh layout
#       here, with nvcc ($NVCC) and NVRTC: one device-only kernel (a shared-memory tile copy,
#       no host code, no include) compiled by both; prints each one's registers and how nvcc's
#       PTX addresses shared memory. nvcc's front end lays shared pointers out in 32 bits,
#       NVRTC's in 64: the registers of such kernels differ for the same source
#   scripts/wholeprog.sh check-bundle OUTDIR
#       GPU machine (its cores, its toolkit's NVRTC and library headers; with
#       WHOLEPROG_NO_SETUP=1 and CUDACHECK_BIN): `cudacheck check --json` of the bundle's
#       corpora into OUTDIR, for compare-from
#   scripts/wholeprog.sh compare-from REFERENCE_DIR CHECK_DIR
#       here: compare's table and lists from check-bundle's OUTDIR
#   scripts/wholeprog.sh standin OUTDIR CORPUS_DIR...
#       here, without nvcc: a reference.tsv from another cudacheck build ($CUDACHECK_BIN, e.g.
#       the one before a change), for `compare` to check that kernels did not change
#
# `compare` and `standin` pass $WHOLEPROG_CHECK_FLAGS to `cudacheck check` besides the
# corpus's own flags: `-I DIR` of the CUDA libraries' headers (cuRAND's `curand_kernel.h`,
# cuFFT's `cufft.h`) where NVRTC's own include directory lacks them, as the toolkit's has them.
#
# On the GPU machine (CUDA 13.0 toolkit, nvcc at /usr/local/cuda/bin/nvcc or $NVCC, no Rust),
# with target/gpu-carry carried: "scripts/wholeprog.sh reference-bundle $OUT" (or
# scripts/gpu-suite.sh wholeprog). Then here:
#   scripts/wholeprog.sh compare DIR_WITH_reference.tsv CORPUS_DIR...
# CORPUS_DIR defaults to the three corpora under $CORPUS_ROOT (checkouts named owner+name;
# default .corpus/, ignored by git): karpathy+llm.c/dev/cuda, NVIDIA+cuda-samples/Samples,
# olcf+cuda-training-series/exercises.
#
# A file is named by its path below the parent of its checkout (`karpathy+llm.c/dev/cuda/
# adamw.cu`), the checkout being the nearest directory above it with `.git` or
# `.wholeprog-commit`, so that the reference made from the bundle and the checkout here name
# it the same. Include flags: a checkout with `Common/helper_cuda.h` (NVIDIA/cuda-samples) gets
# `-I CHECKOUT/Common`; every file gets its own directory, as both compilers do. No
# `--use_fast_math` or `-O` flags: `cudacheck check` compiles as NVRTC's defaults do, and the
# reference must compile the same way for registers to compare.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"
shift || true
corpus_root="${CORPUS_ROOT:-$root/.corpus}"
default_corpora=("$corpus_root/karpathy+llm.c/dev/cuda" "$corpus_root/NVIDIA+cuda-samples/Samples"
  "$corpus_root/olcf+cuda-training-series/exercises")
bundle=target/gpu-carry/wholeprog.tar.xz

# The checkout a path lies in: the nearest directory above it with .git or .wholeprog-commit.
checkout_of() {
  local d
  d="$(cd "$1" && pwd)"
  while [ "$d" != / ]; do
    if [ -e "$d/.git" ] || [ -e "$d/.wholeprog-commit" ]; then
      echo "$d"
      return
    fi
    d="$(dirname "$d")"
  done
  echo "wholeprog: $1 is in no checkout (no .git or .wholeprog-commit above it)" >&2
  exit 2
}

# The include flags a checkout's files need.
flags_for() {
  if [ -f "$1/Common/helper_cuda.h" ]; then
    echo "-I$1/Common"
  fi
}

# Every .cu file below a corpus directory, sorted.
cu_files() { find "$1" -name '*.cu' -type f | LC_ALL=C sort; }

case "$mode" in
bundle)
  cd "$root"
  [ $# -gt 0 ] || set -- "${default_corpora[@]}"
  stage=target/wholeprog-stage
  rm -rf "$stage"
  mkdir -p "$stage" target/gpu-carry
  : > "$stage/corpora"
  for dir in "$@"; do
    co="$(checkout_of "$dir")"
    name="$(basename "$co")"
    dir="$(cd "$dir" && pwd)"
    mkdir -p "$stage/$name"
    git -C "$co" rev-parse HEAD > "$stage/$name/.wholeprog-commit" 2>/dev/null ||
      echo unknown > "$stage/$name/.wholeprog-commit"
    # The corpus directory's sources, and the checkout's shared headers (cuda-samples'
    # Common/): what the files include.
    rel="${dir#"$co"}"
    rel="${rel#/}"
    (cd "$co" && find "${rel:-.}" $( [ -d Common ] && echo Common ) -type f \
      \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.hpp' -o -name '*.hxx' \
      -o -name '*.inl' -o -name '*.inc' -o -name '*.c' -o -name '*.cpp' \) -print0 |
      tar -cf - --null -T -) | tar -C "$stage/$name" -xf -
    echo "$name/${rel:-.}" >> "$stage/corpora"
  done
  tar -C "$stage" -cJf "$bundle" .
  du -sh "$stage" "$bundle"
  cat "$stage/corpora"
  ;;
reference-bundle | reference-carried | device-reference-bundle)
  out="${1:?usage: wholeprog.sh $mode OUTDIR}"
  cd "$root"
  stage="$(mktemp -d)"
  tar -C "$stage" -xJf "$bundle"
  corpora=()
  while IFS= read -r c; do corpora+=("$stage/$c"); done < "$stage/corpora"
  if [ "$mode" = device-reference-bundle ]; then
    "$0" device-reference "${corpora[@]}" "$out"
  else
    "$0" reference "${corpora[@]}" "$out"
  fi
  rm -rf "$stage"
  ;;
device-reference)
  # Like reference, on the device code cudacheck hands NVRTC (CUDACHECK_DUMP_DEVICE_CODE):
  # equal to reference's kernels means setting host code aside changed no kernel as nvcc
  # compiles it; what then differs from cudacheck's own figures is NVRTC against nvcc.
  WP_CUDACHECK="${CUDACHECK_BIN:-$root/target/release/cudacheck}"
  WP_CUDACHECK="$(cd "$(dirname "$WP_CUDACHECK")" && pwd)/$(basename "$WP_CUDACHECK")"
  export WP_CUDACHECK
  [ -n "${WHOLEPROG_NO_SETUP:-}" ] || eval "$("$root/scripts/setup-cuda.sh")"
  "$0" reference "$@"
  ;;
reference)
  # Needs bash, coreutils, findutils (find, xargs), tar/xz for the bundle and nvcc: no awk,
  # grep or python, which a GPU image need not have. Each file's lines are appended to
  # reference.tsv as soon as nvcc finishes it, in one write, so a run that is killed leaves
  # every finished file's result behind (sorted at the end when the run gets there).
  [ $# -ge 2 ] || { echo "usage: wholeprog.sh reference CORPUS_DIR... OUTDIR" >&2; exit 2; }
  out="${*: -1}"
  set -- "${@:1:$#-1}"
  mkdir -p "$out/logs" "$out/objects"
  out="$(cd "$out" && pwd)"
  nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
  [ -x "$nvcc" ] || nvcc="$(command -v nvcc)" ||
    { echo "wholeprog: no nvcc at /usr/local/cuda/bin or on PATH (set NVCC)" >&2; exit 2; }
  "$nvcc" --version > "$out/nvcc-version.txt"
  list="$out/files.tsv"
  : > "$list"
  : > "$out/reference.tsv"
  for dir in "$@"; do
    co="$(checkout_of "$dir")"
    base="$(dirname "$co")"
    flags="$(flags_for "$co")"
    printf '%s\t%s\n' "$(basename "$co")" \
      "$(cat "$co/.wholeprog-commit" 2>/dev/null || git -C "$co" rev-parse HEAD)" >> "$out/commits.tsv"
    while IFS= read -r f; do
      f="$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
      printf '%s\t%s\t%s\n' "$f" "${f#"$base"/}" "$flags" >> "$list"
    done < <(cu_files "$dir")
  done
  # One file (a line of files.tsv): nvcc's verdict and ptxas's report of each entry function.
  one() {
    local f key flags name log rc line entry="" fn="" regs smem reason="" lines
    local -A stack=()
    IFS=$'\t' read -r f key flags <<< "$1"
    name="${key//\//%}"
    log="$WP_OUT/logs/$name.log"
    if [ -n "${WP_CUDACHECK:-}" ]; then
      # device-reference: nvcc compiles what cudacheck handed NVRTC (host code set aside),
      # with the file's own directory after the dump's for what was not dumped.
      local dump="$WP_OUT/device/$name" orig
      orig="$(dirname "$f")"
      # shellcheck disable=SC2086
      (cd "$orig" && CUDACHECK_DUMP_DEVICE_CODE="$dump" CUDACHECK_CACHE=0 "$WP_CUDACHECK" check \
        --arch sm_90 -j 1 $flags "$f" > /dev/null 2>&1)
      if [ ! -f "$dump/$(basename "$f")" ]; then
        printf 'file\t%s\tfail\tcudacheck check did not compile it\n' "$key" >> "$WP_OUT/reference.tsv"
        return
      fi
      f="$dump/$(basename "$f")"
      flags="$flags -I$orig --expt-relaxed-constexpr"
    fi
    # shellcheck disable=SC2086
    timeout "$WP_FILE_LIMIT" "$WP_NVCC" -arch=sm_90 -std=c++17 -Xptxas -v -c "$f" \
      -o "$WP_OUT/objects/$name.o" -I"$(dirname "$f")" $flags > "$log" 2>&1
    rc=$?
    rm -f "$WP_OUT/objects/$name.o"
    # Which entry functions address shared memory through 32-bit registers in nvcc's PTX
    # (`ld.shared.f32 %f1, [%r4]`): nvcc's front end lays shared pointers out in 32 bits,
    # NVRTC's in 64 (see results/wholeprog.md), which changes such kernels' registers.
    local -A short=()
    if [ $rc -eq 0 ] && timeout "$WP_FILE_LIMIT" "$WP_NVCC" -arch=sm_90 -std=c++17 -ptx "$f" \
      -o "$WP_OUT/objects/$name.ptx" -I"$(dirname "$f")" $flags > /dev/null 2>&1; then
      local current="" re_ptx_entry="\.entry ([A-Za-z0-9_\$]+)"
      local re_short="\.shared[.a-z0-9:]*[[:space:]].*\[%r[0-9]"
      while IFS= read -r line; do
        if [[ $line =~ $re_ptx_entry ]]; then
          current="${BASH_REMATCH[1]}"
        elif [[ -n $current && $line =~ $re_short ]]; then
          short[$current]=1
        fi
      done < "$WP_OUT/objects/$name.ptx"
    fi
    rm -f "$WP_OUT/objects/$name.ptx"
    local re_entry="Compiling entry function '([^']+)'" re_props="Function properties for ([^ ]+)"
    local re_stack="([0-9]+) bytes stack frame" re_regs="Used ([0-9]+) registers"
    local re_smem="([0-9]+) bytes smem"
    if [ $rc -eq 0 ]; then
      lines="$(printf 'file\t%s\tok\t' "$key")"
      while IFS= read -r line; do
        if [[ $line =~ $re_entry ]]; then
          entry="${BASH_REMATCH[1]}"
        elif [[ $line =~ $re_props ]]; then
          fn="${BASH_REMATCH[1]}"
        elif [[ $line =~ $re_stack ]]; then
          stack[$fn]="${BASH_REMATCH[1]}"
        elif [[ -n $entry && $line =~ $re_regs ]]; then
          regs="${BASH_REMATCH[1]}"
          smem=0
          [[ $line =~ $re_smem ]] && smem="${BASH_REMATCH[1]}"
          lines+=$'\n'"$(printf 'kernel\t%s\t%s\t%d\t%d\t%d\t%d' "$key" "$entry" "$regs" \
            "$smem" "${stack[$entry]:-0}" "${short[$entry]:-0}")"
          entry=""
        fi
      done < "$log"
    else
      while IFS= read -r line; do
        if [[ $line == *error* || $line == *fatal* ]]; then reason="${line//$'\t'/ }"; break; fi
      done < "$log"
      reason="${reason//"${f%"$key"}"/}"
      [ $rc -eq 124 ] && reason="nvcc ran past ${WP_FILE_LIMIT} s"
      lines="$(printf 'file\t%s\tfail\t%s' "$key" "${reason:0:300}")"
      [ -n "$reason" ] || lines+="nvcc exit status $rc"
    fi
    printf '%s\n' "$lines" >> "$WP_OUT/reference.tsv"
  }
  export -f one
  export WP_OUT="$out" WP_NVCC="$nvcc" WP_FILE_LIMIT="${WHOLEPROG_FILE_LIMIT:-180}"
  jobs="$(nproc 2>/dev/null || echo 4)"
  echo "wholeprog: $(wc -l < "$list") files, $jobs at a time, $nvcc" >&2
  tr '\n' '\0' < "$list" | xargs -0 -n 1 -P "$jobs" bash -c 'one "$1"' _
  LC_ALL=C sort -o "$out/reference.tsv" "$out/reference.tsv"
  rmdir "$out/objects" 2>/dev/null || true
  ok=0 n=0 k=0
  while IFS=$'\t' read -r kind _ verdict _; do
    case "$kind" in
    file) n=$((n + 1)); [ "$verdict" = ok ] && ok=$((ok + 1)) ;;
    kernel) k=$((k + 1)) ;;
    esac
  done < "$out/reference.tsv"
  echo "nvcc compiles $ok of $n files, $k kernels" | tee "$out/summary.txt"
  ;;
compare-refs)
  python3 - "${1:?usage: wholeprog.sh compare-refs REF OTHER}/reference.tsv" "${2:?}/reference.tsv" <<'PY'
import sys
from collections import defaultdict
def read(path):
    verdict, kernels = {}, defaultdict(dict)
    for line in open(path):
        p = line.rstrip("\n").split("\t")
        if p[0] == "file":
            verdict[p[1]] = (p[2], p[3] if len(p) > 3 else "")
        elif p[0] == "kernel":
            kernels[p[1]][p[2]] = (int(p[3]), int(p[4]))
    return verdict, kernels
(va, ka), (vb, kb) = read(sys.argv[1]), read(sys.argv[2])
rows = defaultdict(lambda: defaultdict(int))
notes = []
for key in sorted(va):
    if va[key][0] != "ok" or key not in vb:
        continue
    corpus = key.split("/")[0]
    r = rows[corpus]
    r["ok"] += 1
    if vb[key][0] != "ok":
        notes.append("- %s: the device code does not compile: %s" % (key, vb[key][1][:200]))
        continue
    r["compiles"] += 1
    diff = ["%s %s -> %s" % (s, ka[key].get(s), kb[key].get(s))
            for s in sorted(set(ka[key]) | set(kb[key])) if ka[key].get(s) != kb[key].get(s)]
    if diff:
        notes.append("- %s: %s" % (key, "; ".join(diff[:3]) + (" ..." if len(diff) > 3 else "")))
    else:
        r["equal"] += 1
print("| corpus | nvcc compiles the file | nvcc compiles its device code | every kernel equal (registers, shared) |")
print("| --- | ---: | ---: | ---: |")
for c in sorted(rows):
    r = rows[c]
    print("| %s | %d | %d | %d |" % (c, r["ok"], r["compiles"], r["equal"]))
if notes:
    print()
    print("\n".join(notes))
PY
  ;;
layout)
  nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
  [ -x "$nvcc" ] || { echo "wholeprog: set NVCC to an nvcc (pip: nvidia-cuda-nvcc)" >&2; exit 2; }
  bin="${CUDACHECK_BIN:-$root/target/release/cudacheck}"
  eval "$("$root/scripts/setup-cuda.sh")"
  work="$(mktemp -d)"
  cat > "$work/tile.cu" <<'CU'
__global__ void tile_copy(float* out, const float* in, int width, int height) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  int index = x + width * y;
  for (int i = 0; i < 32; i += 16)
    if (x < width && y < height) tile[threadIdx.y + i][threadIdx.x] = in[index + i * width];
  __syncthreads();
  for (int i = 0; i < 32; i += 16)
    if (x < height && y < width) out[index + i * width] = tile[threadIdx.y + i][threadIdx.x];
}
CU
  echo "nvcc:  $("$nvcc" -arch=sm_90 -Xptxas -v -c "$work/tile.cu" -o "$work/tile.o" 2>&1 | grep -o 'Used [0-9]* registers')"
  "$nvcc" -arch=sm_90 -ptx "$work/tile.cu" -o "$work/tile.ptx"
  echo "       PTX: $(grep -c 'shared.f32.*\[%r[0-9]' "$work/tile.ptx") shared accesses through 32-bit registers, $(grep -c 'shared.f32.*\[%rd' "$work/tile.ptx") through 64-bit"
  echo "NVRTC: Used $(CUDACHECK_CACHE=0 "$bin" check --arch sm_90 --json "$work/tile.cu" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["kernels"][0]["resources"]["registers"])') registers"
  rm -rf "$work"
  ;;
compare | standin | compare-from | check-bundle)
  # `cudacheck check --json` of each corpus into WORK/N.json, listed in WORK/runs as
  # "N.json<TAB>checkout name<TAB>commit".
  check_corpora() { # WORK CORPUS_DIR...
    local work="$1" dir co base flags n files
    shift
    bin="${CUDACHECK_BIN:-$root/target/release/cudacheck}"
    [ -x "$bin" ] || { echo "wholeprog: build it first: cargo build --release -p cudacheck-cli" >&2; exit 2; }
    # Where NVRTC is not installed by setup-cuda.sh (the GPU machine's toolkit), it is found
    # by cudacheck itself.
    [ -n "${WHOLEPROG_NO_SETUP:-}" ] || eval "$("$root/scripts/setup-cuda.sh")"
    : > "$work/runs"
    for dir in "$@"; do
      co="$(checkout_of "$dir")"
      base="$(dirname "$co")"
      flags="$(flags_for "$co")"
      n="$(wc -l < "$work/runs")"
      mapfile -t files < <(cu_files "$dir")
      # shellcheck disable=SC2086
      (cd "$base" && CUDACHECK_CACHE="${CUDACHECK_CACHE:-0}" "$bin" check --arch sm_90 --json \
        $flags ${WHOLEPROG_CHECK_FLAGS:-} "${files[@]#"$base"/}" > "$work/$n.json" \
        2> "$work/$n.err") || true
      printf '%s\t%s\t%s\n' "$n.json" "$(basename "$co")" \
        "$(git -C "$co" rev-parse HEAD 2>/dev/null || cat "$co/.wholeprog-commit")" >> "$work/runs"
    done
  }
  case "$mode" in
  compare | standin)
    ref="${1:?usage: wholeprog.sh $mode REFERENCE_DIR CORPUS_DIR...}"
    [ "$mode" = compare ] || mkdir -p "$ref"
    shift
    [ $# -gt 0 ] || set -- "${default_corpora[@]}"
    work="$(mktemp -d)"
    check_corpora "$work" "$@"
    ;;
  check-bundle)
    # GPU machine (16 cores): the bundle's corpora checked into OUTDIR, for compare-from here.
    out="${1:?usage: wholeprog.sh check-bundle OUTDIR}"
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    stage="$(mktemp -d)"
    tar -C "$stage" -xJf "$root/$bundle"
    corpora=()
    while IFS= read -r c; do corpora+=("$stage/$c"); done < "$stage/corpora"
    check_corpora "$out" "${corpora[@]}"
    "$bin" --version > "$out/cudacheck-version.txt" 2>&1 || true
    rm -rf "$stage"
    exit 0
    ;;
  compare-from)
    ref="${1:?usage: wholeprog.sh compare-from REFERENCE_DIR CHECK_DIR}"
    work="${2:?usage: wholeprog.sh compare-from REFERENCE_DIR CHECK_DIR}"
    mode=compare
    ;;
  esac
  MODE="$mode" REF="$ref" DEVICE_REF="${WHOLEPROG_DEVICE_REF:-}" python3 - "$work/runs" <<'PY'
import json, os, sys
from collections import defaultdict

runs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
ours = {}        # key -> (error or None, {symbol: (regs, smem, stack)})
corpus_of = {}   # key -> checkout name
commits = {}
for path, name, commit in runs:
    commits[name] = commit
    report = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), path)))
    for f in report["files"]:
        kernels = {k["resources"]["symbol"]: (k["resources"]["registers"],
                    k["resources"]["static_shared_bytes"], k["resources"]["local_bytes"])
                   for k in f["kernels"]}
        ours[f["path"]] = (f["error"], kernels)
        corpus_of[f["path"]] = name

ref = os.environ["REF"]
if os.environ["MODE"] == "standin":
    with open(os.path.join(ref, "reference.tsv"), "w") as out:
        for key in sorted(ours):
            error, kernels = ours[key]
            first = (error or "").strip().splitlines()[:1]
            out.write("file\t%s\t%s\t%s\n" % (key, "fail" if error else "ok",
                      first[0].replace("\t", " ") if first else ""))
            for s, (r, sm, st) in sorted(kernels.items()):
                out.write("kernel\t%s\t%s\t%d\t%d\t%d\n" % (key, s, r, sm, st))
    print("stand-in reference of %d files written to %s/reference.tsv" % (len(ours), ref))
    sys.exit(0)

theirs, verdict, short = defaultdict(dict), {}, set()
for line in open(os.path.join(ref, "reference.tsv")):
    p = line.rstrip("\n").split("\t")
    if p[0] == "file":
        verdict[p[1]] = (p[2], p[3] if len(p) > 3 else "")
    elif p[0] == "kernel":
        theirs[p[1]][p[2]] = tuple(int(x) for x in p[3:6])
        if len(p) > 6 and p[6] == "1":
            short.add((p[1], p[2]))

# WHOLEPROG_DEVICE_REF: a device-reference run's directory. A file then also counts as passing
# against "NVRTC's compile of the device code alone" when cudacheck finds the same kernels with
# the same shared memory, and nvcc's compile of the device code cudacheck keeps gives every
# kernel the registers and shared memory of nvcc's compile of the file (so the device code is
# the file's, and the registers cudacheck reports are NVRTC's compile of exactly it).
device_ref = defaultdict(dict)
device_ok = set()
if os.environ.get("DEVICE_REF"):
    for line in open(os.path.join(os.environ["DEVICE_REF"], "reference.tsv")):
        p = line.rstrip("\n").split("\t")
        if p[0] == "file" and p[2] == "ok":
            device_ok.add(p[1])
        elif p[0] == "kernel":
            device_ref[p[1]][p[2]] = tuple(int(x) for x in p[3:5])

# Kernels are matched by symbol, or where the symbols differ by their demangled names with
# CCCL's `cuda::std::__N::` read as `std::`: cudacheck's <type_traits> and <utility> give
# `std::integral_constant` as CCCL's, which nvcc takes from libstdc++ (same kernel, another
# namespace in its mangled name).
import re, shutil, subprocess
def demangled(symbols):
    symbols = sorted(symbols)
    if not symbols or not shutil.which("c++filt"):
        return {s: s for s in symbols}
    out = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True,
                         text=True).stdout.splitlines()
    return {s: re.sub(r"cuda::std::__\d+::", "std::", d) for s, d in zip(symbols, out)}

rows = defaultdict(lambda: defaultdict(int))
failures, mismatches, unreferenced, pointer_only = [], [], [], []
for key in sorted(ours):
    c = rows[corpus_of[key]]
    c["files"] += 1
    if key not in verdict:
        unreferenced.append(key)
        continue
    if verdict[key][0] != "ok":
        c["nvcc_fails"] += 1
        continue
    c["nvcc_ok"] += 1
    error, kernels = ours[key]
    if error:
        first = [l for l in error.splitlines() if l.strip()][:2]
        failures.append((key, " / ".join(first)))
        continue
    want = theirs.get(key, {})
    # Symbols cudacheck has under another mangling, renamed to nvcc's.
    names = demangled(set(want) | set(kernels))
    by_name = {names[s]: s for s in want}
    kernels = {(s if s in want else by_name.get(names[s], s)): v for s, v in kernels.items()}
    bad, explained = [], []
    for s in sorted(set(want) | set(kernels)):
        if s not in kernels:
            bad.append("%s: nvcc has it, cudacheck does not" % s)
        elif s not in want:
            bad.append("%s: cudacheck has it, nvcc does not" % s)
        elif kernels[s][1] != want[s][1]:
            bad.append("%s: shared cudacheck %d, nvcc %d" % (s, kernels[s][1], want[s][1]))
        elif kernels[s][0] != want[s][0]:
            line = "%s: registers cudacheck %d, nvcc %d" % (s, kernels[s][0], want[s][0])
            # Registers alone, in a kernel whose nvcc PTX addresses shared memory through
            # 32-bit registers: the one layout difference of the two front ends.
            (explained if (key, s) in short else bad).append(line)
    c["kernels"] += len(want)
    same_kernels = not any("does not" in b or "shared cudacheck" in b for b in bad)
    if (same_kernels and key in device_ok
            and all(device_ref[key].get(s) == want[s][:2] for s in want)
            and set(device_ref[key]) == set(want)):
        c["device"] += 1
    if bad:
        mismatches.append((key, bad + explained))
    elif explained:
        c["pointer"] += 1
        pointer_only.append((key, explained))
    else:
        c["pass"] += 1

device_col = bool(os.environ.get("DEVICE_REF"))
print("| corpus @ commit | files | nvcc compiles | cudacheck passes, resources equal to nvcc's | "
      "+ registers differing only by shared-pointer width |"
      + (" passes, equal to NVRTC's compile of the device code alone |" if device_col else "")
      + " kernels compared |")
print("| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if device_col else "") + " ---: |")
for name in sorted(rows):
    c = rows[name]
    n = c["nvcc_ok"] or 1
    dev = " %d (%.1f%%) |" % (c["device"], 100.0 * c["device"] / n) if device_col else ""
    print("| %s @ %s | %d | %d | %d (%.1f%%) | %d (%.1f%%) |%s %d |" % (name, commits[name][:8],
          c["files"], c["nvcc_ok"], c["pass"], 100.0 * c["pass"] / n,
          c["pass"] + c["pointer"], 100.0 * (c["pass"] + c["pointer"]) / n, dev, c["kernels"]))
if failures:
    print("\nnvcc compiles, cudacheck check does not:")
    for key, why in failures:
        print("- %s: %s" % (key, why[:300]))
if pointer_only:
    print("\nregisters differ only in kernels nvcc addresses shared memory with 32-bit pointers:")
    for key, why in pointer_only:
        print("- %s: %s" % (key, "; ".join(why[:4]) + (" ..." if len(why) > 4 else "")))
if mismatches:
    print("\nkernels that differ:")
    for key, bad in mismatches:
        print("- %s: %s" % (key, "; ".join(bad[:4]) + (" ..." if len(bad) > 4 else "")))
if unreferenced:
    print("\nnot in the reference (%d): %s" % (len(unreferenced), ", ".join(unreferenced[:10])))
PY
  [ "${2:-}" = "$work" ] || rm -rf "$work"
  ;;
*)
  sed -n '2,40p' "$0"
  exit 2
  ;;
esac
