#!/usr/bin/env bash
# One named suite of GPU work, run on the GPU machine in one command:
#
#   scripts/gpu-bundle.sh && scripts/thirdparty.sh bundle      # build machine
#   scripts/gpu-suite.sh [SUITE]                                 # GPU machine, target/gpu-carry carried
#
# The GPU machine has an NVIDIA GPU, its driver and the CUDA 13.0 toolkit at /usr/local/cuda
# (NVRTC, nvcc, compute-sanitizer), no Rust and no network: every binary is built on the build
# machine (scripts/gpu-bundle.sh, scripts/thirdparty.sh bundle, scripts/matrix-corpus.sh
# bundle, scripts/wholeprog.sh bundle) and travels in target/gpu-carry. A command there may run
# at most 600 s, so each step has a time limit and a suite ends inside 575 s. Everything a
# suite writes lands in $OUT/run/ (target/gpu-suite/run/ without $OUT) and, at the end, in one
# archive, run.tgz beside it; run/suite.log lists each step, its limit and its exit.
#
# Suites:
#   full (default)  the GPU tier, the compat fixtures and the examples (scripts/gpu-run.sh),
#                   the launch benchmark, candle's kernels from nvcc's PTX
#                   (scripts/thirdparty.sh run-ptx), then the third-party harness from source
#                   with the time left
#   tier            the third-party harness when carried (scripts/thirdparty.sh run), the whole
#                   GPU tier, then the compat fixtures and the examples with the time left
#   bench-set       the benchmark set (bench_set), compute-sanitizer memcheck over one
#                   bounds-checked launch of each kernel (--checked-only), the kernels/ set
#                   (bench_instrument)
#   bench-set-cubin the benchmark set with bounds-checked builds loaded through the driver's JIT
#                   (the default) and from nvJitLink's CUBIN (CUDACHECK_CHECKED_JIT=0) on one
#                   machine, memcheck over the checked launches, the kernels/ set
#   bench-set-no-versioning  the bounds-checking GPU tests, the benchmark set with and without
#                   loop versioning (CUDACHECK_KEEP_LOOP_CHECKS=1), memcheck over the checked
#                   launches
#   memcheck-plain  compute-sanitizer memcheck over one launch of each plain kernel of the set
#   launch-cost     the launch benchmark (bench_launch) three times: its ratios move by a few
#                   percent from run to run
#   warm-start      fresh processes in a row on one module cache (bench_cache --sequence), then
#                   the same without manifests (--sequence --full-lookup)
#   ptx             the PTX tests, the old-driver test and candle's kernels from nvcc's PTX
#   races           the race tests (planted races and barrier errors, correct patterns), the
#                   benchmark set race-checked (--races), the kernels/ set race-checked
#                   (CUDACHECK_RACES=1), racecheck over the set's plain launches of kernels with
#                   shared memory, and the table of both (scripts/race-compare.py); a
#                   GPU_BUNDLE_QUICK=1 bundle is enough
#   thirdparty-races  the third-party harness with every checked launch race-checked too
#   coverage        whole-library bounds-check coverage of candle and mistral.rs quant, one
#                   `cudacheck instrument --json` per file on all cores (needs
#                   scripts/matrix-corpus.sh bundle toolkit), then its summary
#   nvrtc-matrix    candle's and mistral.rs's 92 kernel files under each NVRTC release carried
#                   (scripts/matrix-corpus.sh bundle LABEL), all cores; no GPU needed
#   wholeprog       nvcc's reference compile of the whole-program corpora (which kernels nvcc's
#                   PTX addresses shared memory through 32-bit registers), then `cudacheck
#                   check` of the same files on all cores with the toolkit's NVRTC and library
#                   headers; needs only target/gpu-carry/wholeprog.tar.xz and
#                   target/gpu-carry/cudacheck
#   wholeprog-device  as wholeprog, with nvcc compiling the device code cudacheck keeps of each
#                   file (CUDACHECK_DUMP_DEVICE_CODE) instead of the file itself
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
suite="${1:-full}"
case " full tier bench-set bench-set-cubin bench-set-no-versioning memcheck-plain launch-cost \
  warm-start ptx races thirdparty-races coverage nvrtc-matrix wholeprog wholeprog-device " in
*" $suite "*) ;;
*) sed -n '2,/^set -uo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
base="${OUT:-$root/target/gpu-suite}"
run="$base/run"
mkdir -p "$run"
start=$(date +%s)
step() { # seconds, name, command...
  local limit="$1" name="$2"; shift 2
  echo "== $name (limit ${limit} s)" | tee -a "$run/suite.log"
  OUT="$run" timeout "$limit" "$@" > "$run/$name.out" 2>&1
  echo "== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$run/suite.log"
}
left() { # seconds left before the suite's deadline of $1 s
  echo $(( $1 - ($(date +%s) - start) ))
}
finish() { # everything the suite wrote, in one archive
  tar -C "$base" -czf "$base/run.tgz" run && rm -rf "$run"
  exit 0
}
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
release=target/gpu-bundle/release
tests=target/gpu-bundle/tests
# Kernels of the benchmark set with shared accesses (racecheck takes seconds a launch on some).
shared=block_reduce,scan_block,histogram256,softmax_smem,layernorm,row_dot,absmax,row_mean,rmsnorm_block,softmax_rows_3pass,transpose_padded,histogram_range,sgemm,blur5x5,attention
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$run/suite.log"

# Suites that need no test bundle.
case "$suite" in
nvrtc-matrix)
  nproc >> "$run/suite.log"
  for b in target/gpu-carry/matrix-*.tar.xz; do
    [ -f "$b" ] || continue
    label="${b##*/matrix-}"
    label="${label%.tar.xz}"
    rest=$(left 570)
    [ "$rest" -gt 30 ] && step "$rest" "matrix_$label" scripts/matrix-corpus.sh run "$label" "$run/matrix"
  done
  finish
  ;;
coverage)
  nproc >> "$run/suite.log"
  rest=$(left 560)
  MATRIX_DEADLINE=$(( $(date +%s) + rest - 10 )) \
    step "$rest" coverage scripts/matrix-corpus.sh instrument toolkit "$run/coverage"
  scripts/matrix-corpus.sh coverage "$run/coverage" > "$run/coverage.md" 2>&1
  finish
  ;;
wholeprog | wholeprog-device)
  nproc >> "$run/suite.log"
  if [ "$suite" = wholeprog ]; then
    step 280 wholeprog_reference scripts/wholeprog.sh reference-carried "$run/wholeprog"
  else
    WHOLEPROG_NO_SETUP=1 CUDACHECK_BIN="$root/target/gpu-carry/cudacheck" \
      step 250 wholeprog_device scripts/wholeprog.sh device-reference-bundle "$run/wholeprog_device"
  fi
  WHOLEPROG_NO_SETUP=1 CUDACHECK_BIN="$root/target/gpu-carry/cudacheck" \
    step "$(left 570)" wholeprog_check scripts/wholeprog.sh check-bundle "$run/wholeprog_check"
  finish
  ;;
esac

tar -C target -xJf target/gpu-carry/bundle.tar.xz
export CUDACHECK_REQUIRE_GPU=1 CUDACHECK_REQUIRE_NVRTC=1 CUDACHECK_REPO="$root"
case "$suite" in
full)
  step 260 tests scripts/gpu-run.sh tests compat examples
  step 90 bench_launch "$release/bench_launch" "$run/bench_launch.json" "$run/bench_launch.md"
  step 170 thirdparty_ptx scripts/thirdparty.sh run-ptx
  rest=$(left 560)
  [ "$rest" -gt 30 ] && step "$rest" thirdparty scripts/thirdparty.sh run
  ;;
tier)
  # The harness takes about 175 s; the tier about 190 s on a warm H100, over 300 s on a fresh one.
  [ -f target/gpu-carry/thirdparty.tar.xz ] && step 220 thirdparty scripts/thirdparty.sh run
  step "$(left 560)" tests scripts/gpu-run.sh tests
  rest=$(left 575)
  [ "$rest" -gt 30 ] && step "$rest" compat_examples scripts/gpu-run.sh compat examples
  ;;
bench-set)
  step 260 bench_set "$release/bench_set" "$run/bench_set.json" "$run/bench_set.md"
  step 150 memcheck_checked "$sanitizer" --tool memcheck "$release/bench_set" --checked-only
  rest=$(left 575)
  [ "$rest" -gt 20 ] && step "$rest" bench_instrument "$release/bench_instrument" \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  ;;
bench-set-cubin)
  step 260 bench_set "$release/bench_set" "$run/bench_set.json" "$run/bench_set.md"
  CUDACHECK_CHECKED_JIT=0 step 150 bench_set_cubin \
    "$release/bench_set" "$run/bench_set_cubin.json" "$run/bench_set_cubin.md"
  step 120 memcheck_checked "$sanitizer" --tool memcheck "$release/bench_set" --checked-only
  rest=$(left 575)
  [ "$rest" -gt 20 ] && step "$rest" bench_instrument "$release/bench_instrument" \
    "$run/bench_instrument.json" "$run/bench_instrument.md"
  ;;
bench-set-no-versioning)
  step 150 gpu_instrument "$tests/gpu_instrument" --test-threads=1 --nocapture
  step 200 bench_set "$release/bench_set" "$run/bench_set.json" "$run/bench_set.md"
  CUDACHECK_KEEP_LOOP_CHECKS=1 step 150 bench_set_keep_loop_checks \
    "$release/bench_set" "$run/bench_set_keep.json" "$run/bench_set_keep.md"
  rest=$(left 575)
  [ "$rest" -gt 30 ] && step "$rest" memcheck_checked "$sanitizer" --tool memcheck \
    "$release/bench_set" --checked-only
  ;;
memcheck-plain)
  step 400 memcheck_plain "$sanitizer" --tool memcheck "$release/bench_set" --plain-only
  ;;
launch-cost)
  for i in 1 2 3; do
    step 90 "bench_launch_$i" "$release/bench_launch" "$run/bench_launch_$i.json" "$run/bench_launch_$i.md"
  done
  ;;
warm-start)
  CUDACHECK_BENCH_RUNS=5 step 120 bench_cache_sequence "$release/bench_cache" \
    --sequence "$run/bench_cache_sequence.json" "$run/bench_cache_sequence.md"
  CUDACHECK_BENCH_RUNS=5 step 120 bench_cache_sequence_full "$release/bench_cache" \
    --sequence --full-lookup "$run/bench_cache_sequence_full.json" "$run/bench_cache_sequence_full.md"
  ;;
ptx)
  step 120 gpu_ptx "$tests/gpu_ptx" gpu_ --test-threads=1 --nocapture
  step 60 gpu_old_driver "$tests/gpu_old_driver" gpu_ --test-threads=1 --nocapture
  step 170 thirdparty_ptx scripts/thirdparty.sh run-ptx
  ;;
races)
  step 100 gpu_races_planted "$tests/gpu_races" gpu_planted_races --test-threads=1 --nocapture
  step 60 gpu_races_correct "$tests/gpu_races" gpu_correct --test-threads=1 --nocapture
  step 60 gpu_races_barriers "$tests/gpu_races" gpu_planted_barrier --test-threads=1 --nocapture
  CUDACHECK_BENCH_RUNS=10 step 150 bench_set_races "$release/bench_set" --races \
    "$run/bench_set_races.json" "$run/bench_set_races.md"
  CUDACHECK_RACES=1 step 40 bench_instrument_races "$release/bench_instrument" \
    "$run/bench_instrument_races.json" "$run/bench_instrument_races.md"
  rest=$(left 570)
  [ "$rest" -gt 20 ] && CUDACHECK_BENCH_RUNS=1 step "$rest" racecheck "$sanitizer" --tool racecheck \
    "$release/bench_set" --plain-timed --only "$shared" "$run/racecheck.json"
  python3 scripts/race-compare.py "$run/bench_set_races.json" "$run/racecheck.json" \
    "$run/bench_instrument_races.json" > "$run/race_compare.md" 2>&1
  ;;
thirdparty-races)
  CUDACHECK_RACES=1 step 560 thirdparty_races scripts/thirdparty.sh run
  ;;
esac
finish
