#!/usr/bin/env bash
# Step 2 of a GPU run, on the GPU machine (see scripts/gpu-bundle.sh): runs every bundled test
# binary with the GPU required, the examples in debug and release, and the benchmarks. Writes
# the log and the benchmark results under $OUT (the device tool brings them back) or results/.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/results/gpu-run}"
mkdir -p "$out"
bundle=target/gpu-bundle
export CUDACHECK_REQUIRE_GPU=1 CUDACHECK_REQUIRE_NVRTC=1 CUDACHECK_REPO="$root"
status=0
{
  echo "== device"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "== GPU-tier tests"
  for t in "$bundle"/tests/*; do
    echo "-- $t"
    "$t" gpu_ --include-ignored --test-threads=1 --nocapture || status=1
  done
  echo "== examples (debug build)"
  for e in "$bundle"/debug/[0-9]*; do echo "-- $e"; "$e" || echo "exit status $?"; done
  echo "== examples (release build)"
  for e in "$bundle"/release/[0-9]*; do echo "-- $e"; "$e" || echo "exit status $?"; done
  echo "== benchmarks"
  for b in "$bundle"/release/bench_*; do
    echo "-- $b"; "$b" "$out/$(basename "$b").json" || status=1
  done
  echo "gpu-run status: $status"
} 2>&1 | tee "$out/gpu-run.log"
exit "$status"
