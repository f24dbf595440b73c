#!/usr/bin/env bash
# Step 2 of a GPU run, on the GPU machine (see scripts/gpu-bundle.sh): runs every bundled test
# binary with the GPU required, the examples in debug and release, and the benchmarks. Writes
# the log and the benchmark results under $OUT, or target/gpu-run/ without it.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/target/gpu-run}"
mkdir -p "$out"
bundle=target/gpu-bundle
if [ -f target/gpu-carry/bundle.tar.xz ]; then
  tar -C target -xJf target/gpu-carry/bundle.tar.xz
fi
export CUDACHECK_REQUIRE_GPU=1 CUDACHECK_REQUIRE_NVRTC=1 CUDACHECK_REPO="$root"
status=0
parts="${*:-tests compat examples bench sanitizer}"   # any subset, e.g. `scripts/gpu-run.sh sanitizer`
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
log="$out/gpu-run-${parts// /-}.log"
{
  echo "== device"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  if want tests; then
    echo "== GPU-tier tests"
    for t in "$bundle"/tests/*; do
      echo "-- $t"
      "$t" gpu_ --include-ignored --test-threads=1 --nocapture || status=1
    done
  fi
  if want compat; then
    echo "== compat: cudacheck next to candle's, cudarc's default and a static-linking cudarc line"
    for t in "$bundle"/compat/*; do
      echo "-- $t"
      LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$t" --test-threads=1 --nocapture || status=1
    done
  fi
  if want examples; then
    echo "== examples (debug build)"
    for e in "$bundle"/debug/[0-9]*; do echo "-- $e"; "$e" || { echo "exit status $?"; status=1; }; done
    echo "== examples (release build)"
    for e in "$bundle"/release/[0-9]*; do echo "-- $e"; "$e" || { echo "exit status $?"; status=1; }; done
  fi
  if want bench; then
    echo "== benchmarks"
    for b in "$bundle"/release/bench_*; do
      echo "-- $b"; "$b" "$out/$(basename "$b").json" "$out/$(basename "$b").md" || status=1
    done
  fi
  # compute-sanitizer's price, same benchmark binary, same machine: run under memcheck too
  # (capped at 450 s), then the kernel times side by side (needs the `bench` part first).
  if want sanitizer && [ -x "$bundle/release/bench_instrument" ]; then
    sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
    echo "-- bench_instrument under $sanitizer --tool memcheck"
    timeout 450 "$sanitizer" --tool memcheck "$bundle/release/bench_instrument" \
      "$out/memcheck.json" "$out/memcheck.md" > "$out/memcheck.log" 2>&1 || status=1
    tail -4 "$out/memcheck.log"
    if [ -f "$out/bench_instrument.json" ] && [ -f "$out/memcheck.json" ]; then
      python3 scripts/sanitizer-compare.py "$out/bench_instrument.json" "$out/memcheck.json" \
        | tee "$out/sanitizer.md"
    fi
  fi
  echo "gpu-run status: $status" > "$out/.status"
} 2>&1 | tee "$log"
exit "$(sed -n 's/gpu-run status: //p' "$out/.status" 2>/dev/null || echo 1)"
