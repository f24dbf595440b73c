#!/usr/bin/env bash
# cudacheck built next to the cudarc dependency lines users have (tests/compat/*, each a crate
# of its own with its own Cargo.lock-free workspace), each running the pure and NVRTC tiers (and
# the GPU tier, which skips here):
#   candle          candle's exact cudarc line: dynamic-linking, cuda-version-from-build-system,
#                   cublas/cublaslt/curand/nvrtc/f8 (CUDARC_CUDA_VERSION stands in for nvcc);
#   defaults        cudarc's default features (no CUDA version named);
#   static-linking  cudarc's static-linking of the runtime, CUDA 13.0.
# Then cudacheck alone against the extremes of cudarc's CUDA versions it supports (cargo check).
#
# dynamic-linking and static-linking link the CUDA libraries by name at build time; CI has no
# toolkit, so scripts/cuda-link-stubs.py makes a CUDA_HOME of link stubs (and the real NVRTC and
# libcudart_static.a of the pip wheels). Test binaries run here with the stubs on
# LD_LIBRARY_PATH; the stub driver answers every call with an error, so the GPU tier skips.
#
# Usage: scripts/compat.sh [cargo test arguments, e.g. a test-name filter]
# Needs NVRTC set up (scripts/test.sh runs it after setup-cuda.sh).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
eval "$(scripts/setup-cuda.sh)" || { echo "compat: setup-cuda.sh failed" >&2; exit 2; }
export CARGO_TARGET_DIR="$root/target/compat"
# The compat crates are workspaces of their own, so the main workspace's profile (line tables
# only, no debug info for dependencies) does not reach them: the same settings, by environment.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only CARGO_INCREMENTAL=0
stubs="$root/target/compat-cuda"
nvrtc_dir="$(dirname "$CUDACHECK_NVRTC")"

cudarc_src="$(cargo metadata --format-version 1 --manifest-path tests/compat/candle/Cargo.toml \
  | python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"]=="cudarc"))')" \
  || { echo "compat: cannot locate cudarc's source" >&2; exit 2; }
python3 scripts/cuda-link-stubs.py "$cudarc_src" "$nvrtc_dir" "$nvrtc_dir/libcudart_static.a" "$stubs" \
  || { echo "compat: cannot make the link stubs" >&2; exit 2; }

# cudarc's static-linking asks for libstdc++ as a static archive: the C++ compiler's own.
stdcxx="$(${CXX:-c++} -print-file-name=libstdc++.a 2>/dev/null || cc -print-file-name=libstdc++.a)"
if [ -f "$stdcxx" ]; then
  ln -sf "$stdcxx" "$stubs/lib64/libstdc++.a"
else
  echo "compat: no libstdc++.a (install g++), the static-linking fixture cannot link" >&2
fi

status=0
fixture() { # name, then env assignments for its build
  local name="$1"; shift
  printf '\n----- compat: %s -----\n' "$name"
  env "$@" LD_LIBRARY_PATH="$stubs/lib64:$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo test --manifest-path "tests/compat/$name/Cargo.toml" -- --test-threads=1 --nocapture \
    "${extra[@]}" || status=1
  # For the GPU run (scripts/gpu-bundle.sh): the test binary, which runs there against the
  # real driver and toolkit libraries.
  if [ -n "${COMPAT_BUNDLE:-}" ]; then
    mkdir -p "$COMPAT_BUNDLE"
    env "$@" cargo test --manifest-path "tests/compat/$name/Cargo.toml" --no-run \
      --message-format=json 2>/dev/null | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        shutil.copy2(m["executable"], sys.argv[1])
        print("bundled", sys.argv[1])
' "$COMPAT_BUNDLE/$name" || status=1
  fi
}
extra=("$@")
fixture candle CUDA_HOME="$stubs" CUDARC_CUDA_VERSION=13000
fixture defaults
fixture static-linking CUDA_HOME="$stubs"

# The library alone against the oldest and newest CUDA bindings it supports (the forwarded
# version features). (The crates as published, and their docs as docs.rs builds them:
# scripts/publish-check.sh.)
for v in cuda-12000 cuda-13040; do
  printf '\n----- compat: cudacheck with cudarc %s -----\n' "$v"
  cargo check -q -p cudacheck --no-default-features --features "$v" && echo "ok" || status=1
done
# One summary line in the form scripts/test.sh counts (its runner's lines are cargo test's).
echo "compat: $([ "$status" -eq 0 ] && echo 'library checks passed' || echo 'a library check FAILED')"
exit "$status"
