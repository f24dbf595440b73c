#!/usr/bin/env bash
# `cudacheck run` on the GPU machine, every check in one command:
#
#   scripts/gpu-run-mode.sh bundle [benchset]
#       here: the CLI (release, the interposer inside) into target/gpu-carry/cudacheck, the
#       Rust test programs into target/run-programs/bin, the third-party sources into
#       target/gpu-carry/run-thirdparty.tar.xz; with `benchset`, only the benchmark binary
#       (target/gpu-carry/bench_set: enough for the styles parts)
#   scripts/gpu-run-mode.sh run OUTDIR [PART...]
#       GPU machine (carry ["target/gpu-carry", "target/run-programs/bin"]); parts, in order:
#         programs    tests/run: planted bugs and correct twins (C++ built there by nvcc, Rust
#                     built here), each plain, under `cudacheck run` and under memcheck
#                     (scripts/run-programs.sh)
#         bench       the interposer's cost per launch and per kernel (scripts/run-bench.sh)
#         thirdparty  llm.c dev/cuda and cuda-samples, plain / run cold / run warm / memcheck
#                     (scripts/run-thirdparty.sh)
#         benchset    the benchmark set's kernels (examples/bench_set) bounds-checked by the
#                     library and by `cudacheck run`, GPU time of each beside plain
#                     (scripts/run-benchset-compare.py)
#         benchset-init  the benchmark set's plain launches alone, under `cudacheck run
#                     --init` (uninitialized reads, bounds too) and the same with every launch
#                     looking up global memory's shadow, GPU time of each
#         styles      the styles set (bench/styles/, examples/bench_set --set styles): both
#                     halves timed plain and bounds-checked, with per-half geometric means
#         styles-planted  the styles set's planted twins, each bounds-checked: the buffer named,
#                     the next launch healthy
#         styles-races    the styles set race- and bounds-checked (--races, 10 timed runs)
#       default: programs, bench and thirdparty. Everything each part wrote is packed into OUTDIR/logs.tar.xz; its
#       tables (run-programs.md, run-bench.md, run-thirdparty.md) and the console log are put
#       beside it (the device tool brings back at most 8 files).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
case "${1:-}" in
  bundle)
    set -e
    eval "$(scripts/setup-cuda.sh)"
    mkdir -p target/gpu-carry
    cargo build --release -p cudacheck-examples --example bench_set
    cp target/release/examples/bench_set target/gpu-carry/bench_set
    if [ "${2:-}" = benchset ]; then
      du -sh target/gpu-carry/bench_set
      exit 0
    fi
    cargo rustc --release -p cudacheck-run --lib --features interpose --crate-type cdylib
    CUDACHECK_PRELOAD_SO="$root/target/release/libcudacheck_run.so" cargo build --release -p cudacheck-cli
    cp target/release/cudacheck target/gpu-carry/cudacheck
    strip --strip-all target/gpu-carry/cudacheck
    scripts/run-programs.sh build-rust
    scripts/run-thirdparty.sh bundle
    du -sh target/gpu-carry/* target/run-programs/bin
    ;;
  run)
    out="${2:?usage: gpu-run-mode.sh run OUTDIR [PART...]}"
    shift 2
    parts=("$@")
    [ ${#parts[@]} -gt 0 ] || parts=(programs bench thirdparty)
    bin="$root/target/gpu-carry/cudacheck"
    work="$out/work"
    mkdir -p "$work"
    # A module cache of this run's own, so that "cold" means cold.
    export CUDACHECK_CACHE_DIR="$work/module-cache"
    {
      date -u +%Y-%m-%dT%H:%M:%SZ
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      "${NVCC:-/usr/local/cuda/bin/nvcc}" --version | tail -2
      "$bin" doctor 2>&1 | head -40
    } > "$work/env.txt" 2>&1
    for p in "${parts[@]}"; do
      echo "===== $p ($(date -u +%H:%M:%S)) ====="
      case "$p" in
        programs)
          scripts/run-programs.sh build-cpp > "$work/programs-build.log" 2>&1 || echo "some C++ programs did not build (see programs-build.log)"
          # PROGRAMS_NO_MEMCHECK=1: without compute-sanitizer's runs (recorded once is enough).
          RUN_TIMEOUT="${RUN_TIMEOUT:-60}" scripts/run-programs.sh check "$bin" "$work/programs" \
            ${PROGRAMS_NO_MEMCHECK:+--no-memcheck}
          cp "$work/programs/run-programs.md" "$out/" 2>/dev/null
          ;;
        bench)
          scripts/run-bench.sh "$bin" "$work/bench" "${BENCH_ROUNDS:-7}"
          cp "$work/bench/run-bench.md" "$out/" 2>/dev/null
          ;;
        benchset)
          # One process each: the library's checked launches, the plain launches alone, and
          # the same under `cudacheck run` (which checks them with its own builds). The plain
          # builds of the last two are loaded from PTX (CUDACHECK_PLAIN_JIT=1), which the
          # interposer needs to check them, so both are assembled by the driver's JIT alike.
          b="$work/benchset"
          mkdir -p "$b"
          bs="$root/target/gpu-carry/bench_set"
          CUDACHECK_REPO="$root" "$bs" "$b/library.json" "$b/library.md" > "$b/library.out" 2>&1
          CUDACHECK_PLAIN_JIT=1 CUDACHECK_REPO="$root" "$bs" --plain-timed "$b/plain.json" \
            > "$b/plain.out" 2>&1
          CUDACHECK_PLAIN_JIT=1 CUDACHECK_REPO="$root" "$bin" run -- "$bs" --plain-timed "$b/interposed.json" \
            > "$b/interposed.out" 2>&1
          python3 scripts/run-benchset-compare.py "$b/library.json" "$b/plain.json" \
            "$b/interposed.json" | tee "$out/run-benchset.md"
          tail -25 "$b/interposed.out"
          ;;
        benchset-init)
          b="$work/benchset-init"
          mkdir -p "$b"
          bs="$root/target/gpu-carry/bench_set"
          CUDACHECK_PLAIN_JIT=1 CUDACHECK_REPO="$root" "$bs" --plain-timed "$b/plain.json" \
            > "$b/plain.out" 2>&1
          CUDACHECK_PLAIN_JIT=1 CUDACHECK_REPO="$root" "$bin" run --init -- "$bs" --plain-timed \
            "$b/init.json" > "$b/init.out" 2>&1
          echo "run --init: exit $?"
          CUDACHECK_RUN_INIT_LOOKUPS=always CUDACHECK_PLAIN_JIT=1 CUDACHECK_REPO="$root" \
            "$bin" run --init -- "$bs" --plain-timed "$b/init-always.json" > "$b/init-always.out" 2>&1
          echo "run --init, every launch looking up: exit $?"
          {
            python3 scripts/run-benchset-compare.py --pair '`cudacheck run --init`' "$b/plain.json" \
              "$b/init.json"
            echo
            python3 scripts/run-benchset-compare.py --pair \
              '`cudacheck run --init` with CUDACHECK_RUN_INIT_LOOKUPS=always' "$b/plain.json" \
              "$b/init-always.json"
          } | tee "$out/run-benchset-init.md"
          tail -8 "$b/init.out" "$b/init-always.out"
          ;;
        styles | styles-planted | styles-races)
          # One process each; its table and JSON come back beside the logs.
          b="$work/styles"
          mkdir -p "$b"
          case "$p" in
            styles) flags=() ;;
            styles-planted) flags=(--planted) ;;
            styles-races) flags=(--races) ;;
          esac
          CUDACHECK_BENCH_RUNS="${STYLES_RUNS:-$([ "$p" = styles-races ] && echo 10 || echo 30)}" \
            CUDACHECK_REPO="$root" timeout "${STYLES_TIMEOUT:-280}" \
            "$root/target/gpu-carry/bench_set" --set styles "${flags[@]}" "$out/$p.json" \
            "$out/$p.md" > "$b/$p.out" 2>&1
          echo "$p: exit $?"
          tail -6 "$b/$p.out"
          ;;
        thirdparty)
          scripts/run-thirdparty.sh run "$bin" "$work/thirdparty"
          cp "$work/thirdparty/run-thirdparty.md" "$out/" 2>/dev/null
          ;;
        *) echo "unknown part $p" ;;
      esac
    done
    rm -rf "$work/module-cache"
    tar -C "$out" -cJf "$out/logs.tar.xz" work && rm -rf "$work"
    ls -la "$out"
    ;;
  *) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
