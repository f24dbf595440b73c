#!/usr/bin/env bash
# The GPU work of one device call, in named parts (a call that starts a machine costs minutes,
# so the parts that belong together run in one). Each
# step has a time limit so that the call ends inside the device tool's 600 s; everything lands
# in $OUT/run/ and, at the end, in $OUT/run.tgz (the tool brings back at most 8 files).
#
#   scripts/gpu-bundle.sh && scripts/thirdparty.sh bundle     # here
#   device run, carry ["target/gpu-carry"], command "scripts/gpu-session.sh [full|confirm]"
#
# full (default): the GPU tier, the compat fixtures and the examples (scripts/gpu-run.sh), the
#   launch benchmark, candle's kernels from nvcc's PTX (thirdparty.sh run-ptx), then the
#   third-party harness from source with what time is left.
# loops: the GPU tier, compat fixtures and examples; the benchmark set (46 kernels: loops
#   checked once per launch on the host) and the kernels/ set (bench_instrument).
# sixth (issue 21, sixth session): as loops. sixth-b: the compat fixtures and the examples,
#   compute-sanitizer memcheck over the benchmark set's plain kernels, then whole-library bounds-check coverage of candle and
#   mistral.rs quant on all cores (scripts/matrix-corpus.sh bundle toolkit, then instrument).
# seventh (issue 21, seventh session): the GPU tier, then the benchmark set (loop versioning).
#   seventh-b: the set without loop versioning (CUDACHECK_KEEP_LOOP_CHECKS=1) on the same machine,
#   compute-sanitizer memcheck over each bounds-checked kernel's launch (--checked-only), the
#   kernels/ set, then the compat fixtures and the examples. seventh-c: the bounds-checking
#   GPU tests, the set with and without loop versioning, memcheck over the checked launches.
#   seventh-d: the whole GPU tier, the kernels/ set, the compat fixtures and the examples.
# sanitize: compute-sanitizer --tool memcheck over the benchmark set's plain kernels (one
#   launch each), and nvcc's reference compile of the whole-program corpora when carried.
# confirm: the PTX tests, the old-driver test, candle's PTX, and the launch benchmark three
#   times (its ratios move by a few percent from run to run).
# issues: the GPU tier, compat fixtures and examples; the benchmark set (bounds checking's
#   cost, with the alignment checks); fresh processes in a row on one module cache
#   (bench_cache --sequence); and, when carried, nvcc's reference compile of the
#   whole-program corpora (scripts/wholeprog.sh reference) with the time left.
# eighth (issue 21, eighth session): the benchmark set, memcheck over the checked launches,
#   kernels/, and stencil13_zqueue's checked build under register caps (target/gpu-carry/ptx13).
#   eighth-b: the whole GPU tier, the third-party harness when carried, the compat fixtures
#   and the examples. eighth-c: the set with checked builds loaded through the driver's JIT
#   and from nvJitLink's CUBIN (CUDACHECK_CHECKED_JIT=0), memcheck, kernels/.
# ninth (issue 21, ninth session: every rewrite one list of edits): as eighth-b. ninth-b: as
#   eighth (the benchmark set, memcheck over the checked launches, the kernels/ set).
# races (issue 24; a GPU_BUNDLE_QUICK=1 bundle is enough): the race tests (planted races and
#   barrier errors, correct patterns), the bounds tests they share a launch path with, the
#   benchmark set race-checked (--races), the kernels/ set race-checked (CUDACHECK_RACES=1),
#   the set's plain launches under compute-sanitizer --tool racecheck, and the race table
#   (scripts/race-compare.py).
# races-final: the race tests, the race-checked benchmark (kernels with shared memory only),
#   racecheck on the ones not timed under it yet, then the third-party harness race-checked.
# races-example: examples/06_races (release build).
# races-confirm: the race tests, and kernels/ race-checked (CUDACHECK_RACES=1 bench_instrument).
# races-tier: the whole GPU tier (scripts/gpu-run.sh tests), then the third-party harness with
#   CUDACHECK_RACES=1 (every checked launch race-checked too) when carried.
# matrix: candle's and mistral.rs's 92 kernel files under each NVRTC release carried
#   (scripts/matrix-corpus.sh bundle LABEL), all cores.
# wholeprog-device: as wholeprog, with nvcc compiling the device code cudacheck keeps of each
#   file (CUDACHECK_DUMP_DEVICE_CODE) instead of the file itself.
# tier-warm: the GPU tier (scripts/gpu-run.sh tests), then fresh processes in a row on one
#   module cache (bench_cache --sequence, and --sequence --full-lookup), then the matrix
#   bundles carried, with the time left.
# wholeprog (issue 23; needs only target/gpu-carry/wholeprog.tar.xz and target/gpu-carry/cudacheck,
#   no test bundle): nvcc's reference compile of the whole-program corpora, with which kernels
#   nvcc's PTX addresses shared memory through 32-bit registers, then `cudacheck check` of the
#   same files on this machine's cores with its toolkit's NVRTC and library headers.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-full}"
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
if [ "$mode" = matrix ]; then
  # Issue 23 item 3: candle and mistral.rs under each carried NVRTC release
  # (scripts/matrix-corpus.sh bundle LABEL here first), one after the other.
  nproc >> "$run/session.log"
  for b in target/gpu-carry/matrix-*.tar.xz; do
    label="${b##*/matrix-}"
    label="${label%.tar.xz}"
    rest=$(( 570 - ($(date +%s) - start) ))
    [ "$rest" -gt 30 ] && step "$rest" "matrix_$label" scripts/matrix-corpus.sh run "$label" "$run/matrix"
  done
  tar -C "$base" -czf "$base/run.tgz" run
  exit 0
fi
if [ "$mode" = wholeprog ] || [ "$mode" = wholeprog-device ]; then
  nproc >> "$run/session.log"
  if [ "$mode" = wholeprog ]; then
    step 280 wholeprog_reference scripts/wholeprog.sh reference-carried "$run/wholeprog"
  else
    # nvcc on the device code cudacheck keeps (scripts/wholeprog.sh device-reference).
    WHOLEPROG_NO_SETUP=1 CUDACHECK_BIN="$root/target/gpu-carry/cudacheck" \
      step 250 wholeprog_device scripts/wholeprog.sh device-reference-bundle "$run/wholeprog_device"
  fi
  rest=$(( 570 - ($(date +%s) - start) ))
  WHOLEPROG_NO_SETUP=1 CUDACHECK_BIN="$root/target/gpu-carry/cudacheck" \
    step "$rest" wholeprog_check scripts/wholeprog.sh check-bundle "$run/wholeprog_check"
  tar -C "$base" -czf "$base/run.tgz" run
  exit 0
fi
tar -C target -xJf target/gpu-carry/bundle.tar.xz
export CUDACHECK_REQUIRE_GPU=1 CUDACHECK_REQUIRE_NVRTC=1 CUDACHECK_REPO="$root"
bench=target/gpu-bundle/release/bench_launch
case "$mode" in
full)
  step 260 tests scripts/gpu-run.sh tests compat examples
  step 90 bench_launch "$bench" "$run/bench_launch.json" "$run/bench_launch.md"
  step 170 thirdparty_ptx scripts/thirdparty.sh run-ptx
  rest=$(( 560 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && step "$rest" thirdparty scripts/thirdparty.sh run
  ;;
tier-warm)
  step 300 tests scripts/gpu-run.sh tests
  CUDACHECK_BENCH_RUNS=5 step 90 bench_cache_sequence target/gpu-bundle/release/bench_cache \
    --sequence "$run/bench_cache_sequence.json" "$run/bench_cache_sequence.md"
  CUDACHECK_BENCH_RUNS=5 step 90 bench_cache_sequence_full target/gpu-bundle/release/bench_cache \
    --sequence --full-lookup "$run/bench_cache_sequence_full.json" "$run/bench_cache_sequence_full.md"
  # With the time left, the matrix bundles carried (scripts/matrix-corpus.sh).
  for b in target/gpu-carry/matrix-*.tar.xz; do
    [ -f "$b" ] || continue
    label="${b##*/matrix-}"
    label="${label%.tar.xz}"
    rest=$(( 570 - ($(date +%s) - start) ))
    [ "$rest" -gt 30 ] && step "$rest" "matrix_$label" scripts/matrix-corpus.sh run "$label" "$run/matrix"
  done
  ;;
issues)
  step 260 tests scripts/gpu-run.sh tests compat examples
  step 150 bench_set target/gpu-bundle/release/bench_set "$run/bench_set.json" "$run/bench_set.md"
  CUDACHECK_BENCH_RUNS=3 step 80 bench_cache_sequence target/gpu-bundle/release/bench_cache \
    --sequence "$run/bench_cache_sequence.json" "$run/bench_cache_sequence.md"
  rest=$(( 570 - ($(date +%s) - start) ))
  if [ -x scripts/wholeprog.sh ] && [ -f target/gpu-carry/wholeprog.tar.xz ] && [ "$rest" -gt 30 ]; then
    step "$rest" wholeprog_reference scripts/wholeprog.sh reference-carried "$run/wholeprog"
  fi
  ;;
sixth-b)
  step 150 compat_examples scripts/gpu-run.sh compat examples
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  step 170 memcheck_bench_set "$sanitizer" --tool memcheck \
    target/gpu-bundle/release/bench_set --plain-only
  nproc >> "$run/session.log"
  rest=$(( 575 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && MATRIX_DEADLINE=$(( $(date +%s) + rest - 10 )) \
    step "$rest" coverage scripts/matrix-corpus.sh instrument toolkit "$run/coverage"
  scripts/matrix-corpus.sh coverage "$run/coverage" > "$run/coverage.md" 2>&1
  ;;
loops | sixth)
  step 260 tests scripts/gpu-run.sh tests compat examples
  step 230 bench_set target/gpu-bundle/release/bench_set "$run/bench_set.json" "$run/bench_set.md"
  rest=$(( 570 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && step "$rest" bench_instrument target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  ;;
seventh)
  # Issue 21, seventh session (loop versioning): the GPU tier, then the benchmark set.
  step 300 tests scripts/gpu-run.sh tests
  rest=$(( 575 - ($(date +%s) - start) ))
  step "$rest" bench_set target/gpu-bundle/release/bench_set "$run/bench_set.json" "$run/bench_set.md"
  ;;
seventh-b)
  # The same set without loop versioning (every check inside loops kept), on the same
  # machine; compute-sanitizer memcheck over every bounds-checked kernel's launch; kernels/;
  # the compat fixtures and the examples with the time left.
  CUDACHECK_KEEP_LOOP_CHECKS=1 step 240 bench_set_keep_loop_checks \
    target/gpu-bundle/release/bench_set "$run/bench_set_keep.json" "$run/bench_set_keep.md"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  step 150 memcheck_checked "$sanitizer" --tool memcheck \
    target/gpu-bundle/release/bench_set --checked-only
  step 40 bench_instrument target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  rest=$(( 575 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && step "$rest" compat_examples scripts/gpu-run.sh compat examples
  ;;
seventh-c)
  # After the precheck's cost was cut (no division where the counter bounds the access,
  # short loops left alone, unrolled copies sharing one check): the bounds-checking GPU
  # tests, the set with and without loop versioning, memcheck over the checked launches.
  step 150 gpu_instrument target/gpu-bundle/tests/gpu_instrument --test-threads=1 --nocapture
  step 200 bench_set target/gpu-bundle/release/bench_set "$run/bench_set.json" "$run/bench_set.md"
  CUDACHECK_KEEP_LOOP_CHECKS=1 step 150 bench_set_keep_loop_checks \
    target/gpu-bundle/release/bench_set "$run/bench_set_keep.json" "$run/bench_set_keep.md"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  rest=$(( 575 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && step "$rest" memcheck_checked "$sanitizer" --tool memcheck \
    target/gpu-bundle/release/bench_set --checked-only
  ;;
seventh-d)
  # The final code: the whole GPU tier, the kernels/ set, the compat fixtures and examples.
  step 300 tests scripts/gpu-run.sh tests
  step 100 bench_instrument target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  rest=$(( 575 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && step "$rest" compat_examples scripts/gpu-run.sh compat examples
  ;;
eighth | ninth-b)
  # Issue 21, eighth session (unused atomic results as reductions, host checks through
  # selp and loop prologues, redirected-atomic loops unversioned): the benchmark set,
  # compute-sanitizer memcheck over every bounds-checked launch, the kernels/ set, then
  # stencil13_zqueue's checked build capped with .maxnreg (PTX files carried in
  # target/gpu-carry/ptx13, timed by bench/ptx-experiments/time_stencil.cu).
  step 260 bench_set target/gpu-bundle/release/bench_set "$run/bench_set.json" "$run/bench_set.md"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  step 150 memcheck_checked "$sanitizer" --tool memcheck \
    target/gpu-bundle/release/bench_set --checked-only
  step 60 bench_instrument target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  if [ -d target/gpu-carry/ptx13 ]; then
    # The checked build capped at 40 to 64 registers (`.maxnreg` before the entry's body).
    p=target/gpu-carry/ptx13
    for r in 40 48 56 64; do
      sed "/^\.visible \.entry stencil13_zqueue(/,/^{/ s/^{/.maxnreg $r\n{/" "$p/1-checked.ptx" > "$p/2-cap$r.ptx"
    done
    nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
    step 60 build_time13 "$nvcc" -O2 -o "$run/time13" bench/ptx-experiments/time_stencil.cu -lcuda
    step 60 stencil13_cap "$run/time13" stencil13_zqueue "$p"/*.ptx
  fi
  ;;
eighth-c)
  # Bounds-checked builds loaded from their PTX through the driver's JIT (the default now)
  # against nvJitLink's CUBIN (CUDACHECK_CHECKED_JIT=0), on the same machine; memcheck over
  # every checked launch; the kernels/ set.
  step 260 bench_set target/gpu-bundle/release/bench_set "$run/bench_set.json" "$run/bench_set.md"
  CUDACHECK_CHECKED_JIT=0 step 150 bench_set_cubin \
    target/gpu-bundle/release/bench_set "$run/bench_set_cubin.json" "$run/bench_set_cubin.md"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  step 120 memcheck_checked "$sanitizer" --tool memcheck \
    target/gpu-bundle/release/bench_set --checked-only
  rest=$(( 575 - ($(date +%s) - start) ))
  [ "$rest" -gt 20 ] && step "$rest" bench_instrument target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  ;;
eighth-b | ninth)
  # The third-party harness when carried (scripts/thirdparty.sh bundle), the whole GPU tier
  # on the same bundle, then the compat fixtures and the examples. (The harness takes about
  # 175 s; the tier 187 s on a warm H100 and more than 300 s on a fresh one, ninth session.)
  [ -f target/gpu-carry/thirdparty.tar.xz ] && step 220 thirdparty scripts/thirdparty.sh run
  rest=$(( 560 - ($(date +%s) - start) ))
  step "$rest" tests scripts/gpu-run.sh tests
  rest=$(( 575 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && step "$rest" compat_examples scripts/gpu-run.sh compat examples
  ;;
races)
  t=target/gpu-bundle/tests
  step 100 gpu_races_planted "$t/gpu_races" gpu_planted_races --test-threads=1 --nocapture
  step 60 gpu_races_correct "$t/gpu_races" gpu_correct --test-threads=1 --nocapture
  step 60 gpu_races_barriers "$t/gpu_races" gpu_planted_barrier --test-threads=1 --nocapture
  CUDACHECK_BENCH_RUNS=10 step 150 bench_set_races target/gpu-bundle/release/bench_set --races \
    "$run/bench_set_races.json" "$run/bench_set_races.md"
  CUDACHECK_RACES=1 step 40 bench_instrument_races target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument_races.json" "$run/bench_instrument_races.md"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  rest=$(( 570 - ($(date +%s) - start) ))
  # Kernels with shared accesses only (racecheck takes seconds per launch of some of them).
  shared=block_reduce,scan_block,histogram256,softmax_smem,layernorm,row_dot,absmax,row_mean,rmsnorm_block,softmax_rows_3pass,transpose_padded,histogram_range,sgemm,blur5x5,attention
  [ "$rest" -gt 20 ] && CUDACHECK_BENCH_RUNS=1 step "$rest" racecheck "$sanitizer" --tool racecheck \
    target/gpu-bundle/release/bench_set --plain-timed --only "$shared" "$run/racecheck.json"
  python3 scripts/race-compare.py "$run/bench_set_races.json" "$run/racecheck.json" \
    "$run/bench_instrument_races.json" > "$run/race_compare.md" 2>&1
  ;;
races-final)
  t=target/gpu-bundle/tests
  step 60 gpu_races_planted "$t/gpu_races" gpu_planted_races --test-threads=1 --nocapture
  step 60 gpu_races_correct "$t/gpu_races" gpu_correct --test-threads=1 --nocapture
  step 45 gpu_races_barriers "$t/gpu_races" gpu_planted_barrier --test-threads=1 --nocapture
  shared=block_reduce,scan_block,histogram256,softmax_smem,layernorm,row_dot,absmax,row_mean,rmsnorm_block,softmax_rows_3pass,transpose_padded,histogram_range,sgemm,blur5x5,attention
  CUDACHECK_BENCH_RUNS=10 step 110 bench_set_races target/gpu-bundle/release/bench_set --races \
    --only "$shared" "$run/bench_set_races.json" "$run/bench_set_races.md"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  CUDACHECK_BENCH_RUNS=1 step 50 racecheck "$sanitizer" --tool racecheck \
    target/gpu-bundle/release/bench_set --plain-timed \
    --only transpose_padded,row_mean,histogram_range,rmsnorm_block,softmax_rows_3pass,absmax \
    "$run/racecheck.json"
  rest=$(( 570 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && [ -f target/gpu-carry/thirdparty.tar.xz ] && \
    CUDACHECK_RACES=1 step "$rest" thirdparty_races scripts/thirdparty.sh run
  ;;
races-example)
  step 120 example_06_races target/gpu-bundle/release/06_races
  ;;
races-confirm)
  t=target/gpu-bundle/tests
  step 200 gpu_races "$t/gpu_races" --test-threads=1 --nocapture
  CUDACHECK_RACES=1 step 60 bench_instrument_races target/gpu-bundle/release/bench_instrument \
    "$run/bench_instrument_races.json" "$run/bench_instrument_races.md"
  ;;
races-tier)
  step 280 tests scripts/gpu-run.sh tests
  rest=$(( 570 - ($(date +%s) - start) ))
  [ "$rest" -gt 30 ] && [ -f target/gpu-carry/thirdparty.tar.xz ] && \
    CUDACHECK_RACES=1 step "$rest" thirdparty_races scripts/thirdparty.sh run
  ;;
sanitize)
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  step 200 memcheck_bench_set "$sanitizer" --tool memcheck \
    target/gpu-bundle/release/bench_set --plain-only
  rest=$(( 570 - ($(date +%s) - start) ))
  if [ -x scripts/wholeprog.sh ] && [ -f target/gpu-carry/wholeprog.tar.xz ] && [ "$rest" -gt 30 ]; then
    step "$rest" wholeprog_reference scripts/wholeprog.sh reference-bundle "$run/wholeprog"
  fi
  ;;
confirm)
  step 120 gpu_ptx target/gpu-bundle/tests/gpu_ptx gpu_ --test-threads=1 --nocapture
  step 60 gpu_old_driver target/gpu-bundle/tests/gpu_old_driver gpu_ --test-threads=1 --nocapture
  step 170 thirdparty_ptx scripts/thirdparty.sh run-ptx
  for i in 2 3 4; do step 90 "bench_launch_$i" "$bench" "$run/bench_launch_h200_$i.md"; done
  ;;
*)
  sed -n '2,22p' "$0" >&2
  exit 2
  ;;
esac
tar -C "$base" -czf "$base/run.tgz" run && rm -rf "$run"
