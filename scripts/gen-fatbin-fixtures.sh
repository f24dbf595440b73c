#!/usr/bin/env bash
# Regenerates the fatbin fixtures of cudacheck-core/tests/fixtures/fatbin (read by
# cudacheck-core/tests/image.rs) with nvcc 13.0. Not run in CI: the fixtures are committed, and
# CI has no nvcc (only NVRTC).
#
# nvcc, ptxas, fatbinary and nvlink come from one PyPI wheel, cicc (which nvcc runs for .cu
# input) from another; unzip both into one folder:
#
#   python3 -m pip download --no-deps --only-binary=:all: nvidia-cuda-nvcc==13.0.88 -d target/nvccwhl
#   python3 -m pip download --no-deps --only-binary=:all: nvidia-nvvm==13.0.88 -d target/nvccwhl
#   mkdir -p target/nvcc13 && for w in target/nvccwhl/*.whl; do unzip -q -o "$w" -d target/nvcc13; done
#
# The CUDA headers (cuda_runtime.h, which nvcc includes into every .cu) are those that
# scripts/setup-cuda.sh installs into .cuda/py. Host steps need g++, ld and objcopy (binutils).
#
# Usage:  scripts/gen-fatbin-fixtures.sh     (NVCC_ROOT: the unzipped nvidia/cu13, default
#         target/nvcc13/nvidia/cu13)
#
# Every fixture is built from the two kernels beside the fixtures (scale_add.cu, fill_value.cu),
# written for these tests. What each file holds, and so what the tests expect of it, is in the
# comment above the command that makes it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/cudacheck-core/tests/fixtures/fatbin"
nvcc_root="${NVCC_ROOT:-$root/target/nvcc13/nvidia/cu13}"
if [ ! -x "$nvcc_root/bin/nvcc" ] || [ ! -x "$nvcc_root/nvvm/bin/cicc" ]; then
  echo "gen-fatbin-fixtures: no nvcc with cicc under $nvcc_root (set NVCC_ROOT; see the top of this script)" >&2
  exit 2
fi
"$root/scripts/setup-cuda.sh" >/dev/null
include="$root/.cuda/py/nvidia/cu13/include"
export PATH="$nvcc_root/bin:$PATH"
nvcc --version | grep -q 'release 13.0' || {
  echo "gen-fatbin-fixtures: expected nvcc 13.0, found: $(nvcc --version | tail -2 | head -1)" >&2
  exit 2
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$out"
nv() { nvcc -ccbin g++ -I"$include" "$@"; }
ptx_sass90='arch=compute_90,code=[sm_90,compute_90]'

# PTX and SASS for sm_90 with nvcc's default compression: in CUDA 13.0 that is zstd for the
# PTX entry only (flag 0x8000); the SASS entry stays uncompressed.
nv -fatbin -gencode "$ptx_sass90" scale_add.cu -o scale_add.sm_90.default.fatbin
# The same with every entry compressed (zstd, the SASS too).
nv -fatbin -gencode "$ptx_sass90" -Xfatbin -compress-all scale_add.cu -o scale_add.sm_90.compress-all.fatbin
# The same, nothing compressed (`-Xfatbin=--compress=false`; nvcc's own `-no-compress` and
# `-compress-mode=none` give identical bytes).
nv -fatbin -gencode "$ptx_sass90" -Xfatbin=--compress=false scale_add.cu -o scale_add.sm_90.uncompressed.fatbin
# The same with `-compress-mode=speed`: LZ4 (flag 0x2000) for the PTX entry.
nv -fatbin -gencode "$ptx_sass90" -compress-mode=speed scale_add.cu -o scale_add.sm_90.lz4.fatbin
# An identifier (`fatbinary --ident`) on every entry and ptxas options on the PTX entry,
# uncompressed.
nv -fatbin -gencode "$ptx_sass90" -Xfatbin=--compress=false -Xfatbin --ident=scale_add_fixture \
  -maxrregcount=32 scale_add.cu -o scale_add.sm_90.ident-options.fatbin
# SASS only: no PTX for the driver to JIT.
nv -fatbin -gencode arch=compute_90,code=sm_90 scale_add.cu -o scale_add.sm_90.sass-only.fatbin
# Two architectures, PTX and SASS for each: sm_75 and sm_90.
nv -fatbin -gencode arch=compute_75,code=[sm_75,compute_75] -gencode "$ptx_sass90" scale_add.cu \
  -o scale_add.sm_75+sm_90.fatbin
# Architecture-specific (sm_90a: loads on sm_90 only) and family-specific (sm_100f: on compute
# capability 10.x at or above 10.0) entries, marked by flags 0x100000 and 0x200000.
nv -fatbin -gencode arch=compute_90a,code=[sm_90a,compute_90a] scale_add.cu -o scale_add.sm_90a.fatbin
nv -fatbin -gencode arch=compute_100f,code=[sm_100f,compute_100f] scale_add.cu -o scale_add.sm_100f.fatbin
# LTO IR only (entry kind 8), which cudacheck lists but does not decode.
nv -fatbin -rdc=true -gencode arch=compute_90,code=lto_90 scale_add.cu -o scale_add.lto_90.fatbin
# The plain formats the driver also accepts: a CUBIN (ELF) and PTX text.
nv -cubin -arch=sm_90 scale_add.cu -o scale_add.sm_90.cubin
nv -ptx -arch=compute_90 scale_add.cu -o scale_add.compute_90.ptx
# Two translation units in one host object: `ld -r` concatenates their `.nv_fatbin` sections,
# so this section holds two fatbin containers back to back (as an executable's does).
nv -c -gencode "$ptx_sass90" scale_add.cu -o "$work/scale_add.o"
nv -c -gencode "$ptx_sass90" fill_value.cu -o "$work/fill_value.o"
ld -r "$work/scale_add.o" "$work/fill_value.o" -o "$work/both.o"
objcopy -O binary --only-section=.nv_fatbin "$work/both.o" two_units.nv_fatbin.bin

ls -l "$out"
