#!/usr/bin/env bash
# One device call for the whole session's GPU work (shared/GPU.md: one or two calls a
# session): the GPU tier, the compat fixtures and the examples (scripts/gpu-run.sh), the
# launch benchmark, candle's kernels from nvcc's PTX (scripts/thirdparty.sh run-ptx), then the
# third-party harness from source with what time is left. Each step has a time limit so that
# the whole call ends inside the device tool's 600 s; everything lands in $OUT/run/ and, at the
# end, in $OUT/run.tgz (the tool brings back at most 8 files).
#
#   scripts/gpu-bundle.sh && scripts/thirdparty.sh bundle     # here
#   device run, carry ["target/gpu-carry"], command "scripts/gpu-session.sh"
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
base="${OUT:-$root/results/gpu-session}"
run="$base/run"
mkdir -p "$run"
start=$(date +%s)
left() { echo $(( ${1} - ($(date +%s) - start) )); }
step() { # seconds, name, command...
  local limit="$1" name="$2"; shift 2
  echo "== $name (limit ${limit} s)" | tee -a "$run/session.log"
  OUT="$run" timeout "$limit" "$@" > "$run/$name.out" 2>&1
  echo "== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$run/session.log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$run/session.log"
step 260 tests scripts/gpu-run.sh tests compat examples
step 90 bench_launch target/gpu-bundle/release/bench_launch "$run/bench_launch.json" "$run/bench_launch.md"
step 170 thirdparty_ptx scripts/thirdparty.sh run-ptx
rest=$(left 560)
[ "$rest" -gt 30 ] && step "$rest" thirdparty scripts/thirdparty.sh run
tar -C "$base" -czf "$base/run.tgz" run && rm -rf "$run"
