#!/usr/bin/env bash
# Step 1 of a GPU run: build here the GPU-tier test binaries, the examples and
# the benchmarks, and copy them (stripped) into target/gpu-bundle/, which the device tool
# carries to the GPU machine. Step 2 runs scripts/gpu-run.sh there:
#
#   scripts/gpu-bundle.sh
#   device run, carry ["target/gpu-carry"], command "scripts/gpu-run.sh"
#
# The GPU machine has no Rust; it has CUDA 13.0 at /usr/local/cuda, where cudacheck's NVRTC
# discovery finds libnvrtc by itself.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
eval "$(scripts/setup-cuda.sh)"
bundle=target/gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/tests" "$bundle/debug" "$bundle/release"

copy_executables() { # dest dir; reads cargo's JSON messages on stdin
  python3 -c '
import json, shutil, sys, os
dest = sys.argv[1]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    exe = m.get("executable") if m.get("reason") == "compiler-artifact" else None
    name = m["target"]["name"] if exe else ""
    if exe and name.startswith(sys.argv[2]):
        shutil.copy2(exe, os.path.join(dest, name))
        print("bundled", os.path.join(dest, name))
' "$1" "${2:-}"
}

# GPU-tier test binaries, named gpu_* (dev profile: debug_assertions on, as in a user's debug build).
cargo test --workspace --no-run --message-format=json-render-diagnostics 2>/dev/null \
  | copy_executables "$bundle/tests" gpu_
# Examples in both profiles: the same bug behaves differently in debug and release.
# GPU_BUNDLE_QUICK=1 (a GPU run of test binaries and benchmarks only, e.g. gpu-suite.sh
# races): release examples only, no compat fixtures.
if [ -z "${GPU_BUNDLE_QUICK:-}" ]; then
  cargo build -p cudacheck-examples --examples --message-format=json-render-diagnostics \
    | copy_executables "$bundle/debug"
fi
cargo build -p cudacheck-examples --examples --release --message-format=json-render-diagnostics \
  | copy_executables "$bundle/release"
# cudacheck next to the cudarc lines users have (tests/compat): built here against link stubs,
# run there against the driver and /usr/local/cuda's libraries.
if [ -z "${GPU_BUNDLE_QUICK:-}" ]; then
  COMPAT_BUNDLE="$root/$bundle/compat" scripts/compat.sh >/dev/null
fi
# What the GPU run does not use, then the size: the device tool carries at most 64 MiB.
rm -f "$bundle"/debug/bench_* "$bundle"/release/0[1345]_*
strip --strip-all "$bundle"/*/* 2>/dev/null || true
mkdir -p target/gpu-carry
tar -C target -cJf target/gpu-carry/bundle.tar.xz gpu-bundle
du -sh "$bundle" target/gpu-carry/bundle.tar.xz
