#!/usr/bin/env bash
# Building the examples twice in a row, the second build calls no NVRTC.
# `#[checked_kernel(arch = ..)]` compiles its kernel at `cargo build`; CUDACHECK_BUILD_LOG makes
# each expansion log where its resources came from (compiled / cache / prepared / none).
# Usage: scripts/build-twice.sh  (prints a markdown table; uses a fresh module cache)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
eval "$(scripts/setup-cuda.sh)"
CUDACHECK_CACHE_DIR="$(mktemp -d)"
CUDACHECK_BUILD_LOG="$(mktemp)"
export CUDACHECK_CACHE_DIR CUDACHECK_BUILD_LOG
trap 'rm -rf "$CUDACHECK_CACHE_DIR" "$CUDACHECK_BUILD_LOG"' EXIT
# Dependencies, outside the timing, with the module cache off (so the timed builds start cold).
CUDACHECK_CACHE=0 cargo build -q -p cudacheck-examples --example 05_macro
echo "| build | expansions: where the resources came from | wall time of \`cargo build\` |"
echo "|---|---|---|"
for n in 1 2; do
  : >"$CUDACHECK_BUILD_LOG"
  touch examples/05_macro.rs
  start=$(date +%s.%N)
  cargo build -q -p cudacheck-examples --example 05_macro
  end=$(date +%s.%N)
  outcomes=$(cut -f1,3 "$CUDACHECK_BUILD_LOG" | tr '\t' ' ' | paste -sd ',' | sed 's/,/, /g')
  printf '| %s | %s | %.2f s |\n' "$n" "$outcomes" "$(echo "$end - $start" | bc)"
done
