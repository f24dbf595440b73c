#!/usr/bin/env bash
# What the interposer itself costs a launch, with no GPU: the fake driver of
# cudacheck-run/tests/fake_driver (a launch there copies and adds 1000 floats on the CPU, the
# same work every time) and its test program built with `cc`, launching one kernel N times,
# plainly and under the interposer in each mode; medians over ROUNDS rounds.
#
#   scripts/run-cost-offline.sh [N] [ROUNDS]
#
# Needs NVRTC and nvJitLink for the bounds-checked mode (scripts/setup-cuda.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
n="${1:-200000}"; rounds="${2:-7}"
eval "$(scripts/setup-cuda.sh)"
cargo rustc -q --release -p cudacheck-run --lib --features interpose --crate-type cdylib
so="$root/target/release/libcudacheck_run.so"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src=cudacheck-run/tests/fake_driver
cc -O2 -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$work/libcuda.so.1" "$src/fake_cuda.c" -lpthread
cc -O2 -DROUTE=1 -o "$work/program" "$src/program.c" -L"$work" -l:libcuda.so.1 \
  -Wl,-rpath,"$work" -ldl
export CUDACHECK_CACHE_DIR="$work/cache"
LD_PRELOAD="$so" LAUNCH_BENCH=10 "$work/program" >/dev/null 2>&1 # fills the module cache
run() { LAUNCH_BENCH="$n" "$@" 2>/dev/null | awk '/ns_per_launch/ {print $2}'; }
declare -A all
for r in $(seq 1 "$rounds"); do
  all[plain]+="$(run "$work/program") "
  all[validated]+="$(CUDACHECK_RUN_BOUNDS=0 LD_PRELOAD="$so" run "$work/program") "
  all[checked]+="$(LD_PRELOAD="$so" run "$work/program") "
  all[checked_stacks_all]+="$(CUDACHECK_RUN_STACKS=all LD_PRELOAD="$so" run "$work/program") "
done
for m in plain validated checked checked_stacks_all; do
  printf '%-20s %s ns per launch (median of %s)\n' "$m" \
    "$(tr ' ' '\n' <<<"${all[$m]}" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" "$rounds"
done
