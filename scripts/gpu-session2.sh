#!/usr/bin/env bash
# The session's second device call (2026-11-26): what call 1 left to confirm. The PTX tests
# with the fixed helper, candle's PTX again with PTX mode's case filter, and bench_launch three
# times for the spread of the launch-cost ratios. Output as scripts/gpu-session.sh's.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
base="${OUT:-$root/results/gpu-session}"
run="$base/run"
mkdir -p "$run"
start=$(date +%s)
step() { # seconds, name, command...
  local limit="$1" name="$2"; shift 2
  echo "== $name (limit ${limit} s)" | tee -a "$run/session.log"
  OUT="$run" timeout "$limit" "$@" > "$run/$name.out" 2>&1
  echo "== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$run/session.log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$run/session.log"
tar -C target -xJf target/gpu-carry/bundle.tar.xz
export CUDACHECK_REQUIRE_GPU=1 CUDACHECK_REQUIRE_NVRTC=1 CUDACHECK_REPO="$root"
step 120 gpu_ptx target/gpu-bundle/tests/gpu_ptx gpu_ --test-threads=1 --nocapture
step 60 gpu_old_driver target/gpu-bundle/tests/gpu_old_driver gpu_ --test-threads=1 --nocapture
step 170 thirdparty_ptx scripts/thirdparty.sh run-ptx
for i in 2 3 4; do
  step 90 "bench_launch_$i" target/gpu-bundle/release/bench_launch "$run/bench_launch_h200_$i.md"
done
tar -C "$base" -czf "$base/run.tgz" run && rm -rf "$run"
