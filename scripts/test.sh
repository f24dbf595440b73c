#!/usr/bin/env bash
# The whole test suite, in its three tiers, each announced in the output:
#   1. pure tests: unit tests, doc tests, the trybuild UI suite (no NVRTC, no GPU);
#   2. NVRTC tests: compile real kernels with NVRTC (installed into .cuda/ by setup-cuda.sh);
#      a missing NVRTC here is a failure, never a skip (CUDACHECK_REQUIRE_NVRTC=1);
#   3. GPU tests: run where a CUDA driver and GPU exist; elsewhere each prints why it skipped.
# Then cudacheck beside other cudarc users (scripts/compat.sh), and every crate as crates.io
# and docs.rs would get it (scripts/publish-check.sh), each check a pass or a failure.
# Ends with one summary line "cudacheck tests: N passed, N failed, N skipped".
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
eval "$(scripts/setup-cuda.sh)" || { echo "setup-cuda.sh failed: cannot install NVRTC" >&2; exit 2; }
export CUDACHECK_REQUIRE_NVRTC=1
# One build per run: incremental state would double the disk a clean run takes, for nothing.
export CARGO_INCREMENTAL=0
echo "disk before the run: $(df -h --output=avail "$root" | tail -1 | tr -d ' ') free under $root"
log="$(mktemp)"
# A module cache of the run's own: the suite never reads entries an earlier run or the user left
# (tests of the cache itself use directories of their own).
CUDACHECK_CACHE_DIR="$(mktemp -d)"
export CUDACHECK_CACHE_DIR
trap 'rm -f "$log"; rm -rf "$CUDACHECK_CACHE_DIR"' EXIT
status=0

# The interposer `cudacheck run` preloads, built once as a shared object and handed to the CLI's
# build script (which carries it inside the binary) and to the fake-driver tests of
# cudacheck-run, instead of a build of its own in each (cudacheck-cli/build.rs).
printf '\n===== the interposer (cudacheck-run as a shared object) =====\n' | tee -a "$log"
if cargo rustc -q -p cudacheck-run --lib --features interpose --crate-type cdylib 2>&1 | tee -a "$log"; then
  export CUDACHECK_PRELOAD_SO="$root/target/debug/libcudacheck_run.so"
  echo "built $CUDACHECK_PRELOAD_SO" | tee -a "$log"
else
  status=1
fi

run_tier() { # title, then the cargo test arguments
  local title="$1"; shift
  printf '\n===== %s =====\n' "$title" | tee -a "$log"
  cargo test --workspace "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || status=1
}

# Tiers are chosen by test name: NVRTC tests are named nvrtc_*, GPU tests gpu_*, in every crate.
run_tier "tier 1/3: pure tests (no NVRTC, no GPU)" -- --skip nvrtc_ --skip gpu_
run_tier "tier 2/3: NVRTC tests (NVRTC required)" nvrtc_
run_tier "tier 3/3: GPU tests (skipped with a reason where no GPU is present)" \
  gpu_ -- --nocapture --test-threads=1

# cudacheck next to the cudarc dependency lines users have (tests/compat: candle's, cudarc's
# defaults, static-linking), each running its pure, NVRTC and (skipping here) GPU tests; the
# library against CUDA 12.0's and 13.4's bindings.
printf '\n===== compat: cudacheck beside other cudarc users (scripts/compat.sh) =====\n' | tee -a "$log"
scripts/compat.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# Every publishable crate packaged and built from its package alone, in dependency order (the
# CLI's nested build of the interposer included), and the library crates' docs as docs.rs builds
# them; one pass or fail per check, counted below.
printf '\n===== publish: the crates as crates.io and docs.rs get them (scripts/publish-check.sh) =====\n' | tee -a "$log"
scripts/publish-check.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

echo "disk after the run: $(df -h --output=avail "$root" | tail -1 | tr -d ' ') free; target/ holds $(du -sh "$root/target" 2>/dev/null | cut -f1)"

passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
# A skipped test returns early and cargo counts it as passed: count it once, as skipped.
# (Tiers 2 and 3 run with --nocapture --test-threads=1, so a skip line follows "test NAME ... ".)
skipped=$(grep -Eo '^test [^ ]+ \.\.\. skipped \(' "$log" | sort -u | wc -l)
passed=$((passed - skipped))
gpu_skips=$(grep -Eo '^test [^ ]+ \.\.\. skipped \(GPU tier\)' "$log" | sort -u | wc -l)
printf '\nGPU tier: %s test(s) skipped for want of a GPU (see the reasons above).\n' "$gpu_skips"
[ "$failed" -eq 0 ] || status=1
printf 'cudacheck tests: %s passed, %s failed, %s skipped\n' "$passed" "$failed" "$skipped"
exit "$status"
