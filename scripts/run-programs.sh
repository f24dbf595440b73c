#!/usr/bin/env bash
# The programs `cudacheck run` is tested on (tests/run): unmodified CUDA programs with planted
# bugs and their correct twins, C++ (tests/run/cpp, nvcc) and Rust on raw cudarc
# (tests/run/rust, one binary with cudarc's dynamic-linking, one with dynamic-loading). What each
# case must produce is tests/run/expected.json; scripts/run-check.py compares.
#
#   scripts/run-programs.sh build        Rust binaries (release), and the C++ programs when an
#                                        nvcc is found ($NVCC, else /usr/local/cuda/bin/nvcc)
#   scripts/run-programs.sh build-rust   the Rust binaries only
#   scripts/run-programs.sh build-cpp    the C++ programs only (nvcc -arch=sm_90 -lineinfo:
#                                        sm_90 SASS and compute_90 PTX in the fatbin)
#   scripts/run-programs.sh ptx          regenerate tests/run/rust/kernels/kernels.ptx (nvcc)
#   scripts/run-programs.sh check CUDACHECK_BIN OUTDIR [--no-memcheck]
#
# Everything lands in target/run-programs/bin/. The GPU machine has no Rust but has nvcc, so:
# here `scripts/run-programs.sh build`, carry target/run-programs/bin, and there
# `scripts/run-programs.sh build-cpp && scripts/run-programs.sh check path/to/cudacheck $OUT`.
#
# RUN_PROGRAMS_FLAGS adds options to every `cudacheck run` of check (`--races`: the same
# verdicts must hold with race checking on).
#
# check runs every case of the manifest three ways, each under a time limit (RUN_TIMEOUT,
# default 60 s), keeping stdout, stderr, exit status and wall time in OUTDIR/<program>/:
# plainly; under `CUDACHECK_BIN run [OPTIONS] --json OUTDIR/<program>/<case>.jsonl --` (options
# from the manifest: `--races` for the race program); and, for planted cases, under
# `compute-sanitizer --tool memcheck` (or the tool the manifest names: racecheck, synccheck, initcheck) when
# it is found (for comparison; never part of the verdict). Then the probe of `--error-exitcode`, and run-check.py, which prints the table,
# writes OUTDIR/run-programs.{md,json} and exits non-zero on any mismatch.
#
# With a toolkit from pip wheels (nvidia-cuda-nvcc + nvidia-nvvm unpacked, as on machines
# without CUDA), the headers and libcudart_static.a of the project's .cuda/py are used.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$root/target/run-programs"
bin="$out/bin"
rust="tests/run/rust"
manifest="tests/run/expected.json"

die() { echo "run-programs: $*" >&2; exit 2; }

find_nvcc() {
  local c
  for c in "${NVCC:-}" /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  return 1
}

# Flags a toolkit without headers of its own needs (the pip nvcc wheel ships the compiler only).
nvcc_paths() { # nvcc
  local top pip="$root/.cuda/py/nvidia/cu13"
  top="$(cd "$(dirname "$1")/.." && pwd)"
  if [ ! -f "$top/include/cuda_runtime.h" ] && [ -f "$pip/include/cuda_runtime.h" ]; then
    echo "-I$pip/include -isystem $pip/include/cccl -L$pip/lib"
  fi
}

build_cpp() {
  local nvcc status=0 src name
  nvcc="$(find_nvcc)" || die "no nvcc (set NVCC, or install CUDA at /usr/local/cuda)"
  mkdir -p "$bin"
  # shellcheck disable=SC2046 # the paths are words of their own
  # The planned programs whose checks exist are in the manifest too.
  for src in tests/run/cpp/*.cu tests/run/planned/barriers.cu tests/run/planned/uninit.cu; do
    name="$(basename "$src" .cu)"
    if "$nvcc" -arch=sm_90 -lineinfo -O2 $(nvcc_paths "$nvcc") -o "$bin/$name" "$src"; then
      echo "built $bin/$name"
    else
      echo "run-programs: $src did not compile" >&2
      status=1
    fi
  done
  return "$status"
}

build_rust() {
  eval "$(scripts/setup-cuda.sh)" || die "setup-cuda.sh failed"
  export CARGO_TARGET_DIR="$out/cargo"
  local stubs="$out/cuda-stubs" nvrtc_dir cudarc_src
  nvrtc_dir="$(dirname "$CUDACHECK_NVRTC")"
  # cudarc's dynamic-linking links libcuda by name: without a toolkit, against the link stubs
  # scripts/cuda-link-stubs.py makes (the soname is the real one, so the binary runs against
  # the real driver on the GPU machine).
  cudarc_src="$(cargo metadata --format-version 1 --manifest-path "$rust/Cargo.toml" \
    | python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"]=="cudarc"))')" \
    || die "cannot locate cudarc's source"
  python3 scripts/cuda-link-stubs.py "$cudarc_src" "$nvrtc_dir" "$nvrtc_dir/libcudart_static.a" "$stubs" \
    || die "cannot make the link stubs"
  mkdir -p "$bin"
  CUDA_HOME="$stubs" cargo build --release --manifest-path "$rust/Cargo.toml" \
    --features dynamic-linking --bin rust_dynamic_linking || return 1
  cargo build --release --manifest-path "$rust/Cargo.toml" \
    --features dynamic-loading --bin rust_dynamic_loading || return 1
  local b
  for b in rust_dynamic_linking rust_dynamic_loading; do
    cp "$CARGO_TARGET_DIR/release/$b" "$bin/$b" && strip --strip-all "$bin/$b" 2>/dev/null
    echo "built $bin/$b"
  done
}

gen_ptx() {
  local nvcc
  nvcc="$(find_nvcc)" || die "no nvcc (set NVCC, or install CUDA at /usr/local/cuda)"
  # shellcheck disable=SC2046
  "$nvcc" -ptx -arch=compute_90 -lineinfo $(nvcc_paths "$nvcc") \
    -o "$rust/kernels/kernels.ptx" "$rust/kernels/kernels.cu" || return 1
  # nvcc writes the source's absolute path into `.file`; the repository-relative path keeps the
  # committed PTX free of this machine's layout and resolves from the repository root there.
  sed -i "s|\"$root/|\"|" "$rust/kernels/kernels.ptx"
  echo "wrote $rust/kernels/kernels.ptx"
}

run_one() { # prefix, command...: stdout, stderr, exit status and milliseconds under prefix.*
  local prefix="$1" t0 t1 rc
  shift
  t0=$(date +%s%N)
  timeout -k 10 "${RUN_TIMEOUT:-60}" "$@" >"$prefix.stdout" 2>"$prefix.stderr" </dev/null
  rc=$?
  t1=$(date +%s%N)
  echo "$rc" >"$prefix.rc"
  echo $(((t1 - t0) / 1000000)) >"$prefix.ms"
}

check() {
  [ $# -ge 2 ] || die "usage: run-programs.sh check CUDACHECK_BIN OUTDIR [--no-memcheck]"
  local cudacheck outdir sanitizer="" kind program case arg exe d
  cudacheck="$(realpath "$1")" || die "no $1"
  [ -x "$cudacheck" ] || die "$1 is not executable"
  outdir="$2"
  mkdir -p "$outdir" && outdir="$(realpath "$outdir")"
  if [ "${3:-}" != "--no-memcheck" ]; then
    sanitizer="$(command -v compute-sanitizer 2>/dev/null || true)"
    [ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] \
      && sanitizer=/usr/local/cuda/bin/compute-sanitizer
  fi
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "cudacheck: $cudacheck ($("$cudacheck" --version 2>/dev/null | head -1))"
    echo "nvcc: $( (find_nvcc >/dev/null && "$(find_nvcc)" --version | tail -1) 2>/dev/null)"
    echo "memcheck: ${sanitizer:-not run}"
    echo "command: scripts/run-programs.sh check $*"
  } >"$outdir/env.txt"
  local plan
  local -A listed=()
  plan="$(python3 scripts/run-check.py --manifest "$manifest" --plan)" || die "bad manifest"
  while read -r kind program case arg tool flags; do
    exe="$bin/$program"
    d="$outdir/$program"
    mkdir -p "$d"
    if [ ! -x "$exe" ]; then
      touch "$d/missing"
      echo "run-programs: $exe is missing" >&2
      continue
    fi
    rm -f "$d/missing"
    if [ -z "${listed[$program]:-}" ]; then
      "$exe" --list >"$d/cases.txt" 2>/dev/null
      listed[$program]=1
    fi
    if [ "$kind" = probe ]; then
      rm -f "$d/$case.exitcode".*
      run_one "$d/$case.exitcode" "$cudacheck" run --error-exitcode "$arg" -- "$exe" "$case"
      echo "$program $case --error-exitcode $arg: exit $(cat "$d/$case.exitcode.rc")"
      continue
    fi
    # Nothing of an earlier check in the same OUTDIR may stand in for this one's.
    rm -f "$d/$case".*
    run_one "$d/$case.plain" "$exe" "$case"
    # shellcheck disable=SC2086 # the case's and RUN_PROGRAMS_FLAGS' `cudacheck run` options, as words
    run_one "$d/$case.run" "$cudacheck" run ${RUN_PROGRAMS_FLAGS:-} $flags --json "$d/$case.jsonl" \
      -- "$exe" "$case"
    if [ "$arg" = 1 ] && [ -n "$sanitizer" ]; then
      run_one "$d/$case.memcheck" "$sanitizer" --tool "${tool:-memcheck}" "$exe" "$case"
    fi
    echo "$program $case: plain exit $(cat "$d/$case.plain.rc"), under cudacheck exit $(cat "$d/$case.run.rc")"
  done <<<"$plan"
  python3 scripts/run-check.py --manifest "$manifest" "$outdir"
}

case "${1:-}" in
  build)
    build_rust || exit 1
    if find_nvcc >/dev/null; then build_cpp; else echo "run-programs: no nvcc, C++ programs not built (build-cpp on the GPU machine)"; fi
    ;;
  build-rust) build_rust ;;
  build-cpp) build_cpp ;;
  ptx) gen_ptx ;;
  check) shift; check "$@" ;;
  *) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
