#!/usr/bin/env bash
# Installs NVRTC, nvJitLink and the CUDA headers from PyPI into the project-local folder .cuda/ (no system
# CUDA needed, no root needed) and prints the line to source for using them. Idempotent: a
# second run with everything in place does nothing.
#
# Versions are pinned to CUDA 13.0, the toolkit of the GPU machine the GPU tier runs on, so the
# CUBINs NVRTC writes here load under that machine's 13.0 driver.
#
# Beside the default, an NVRTC matrix: every NVRTC release cudacheck is tested
# against, each with the headers of its own release, in a folder of its own. The line printed
# lists them as CUDACHECK_NVRTC_MATRIX="12.4=LIB 12.9=LIB 13.0=LIB 13.5=LIB"; the NVRTC tier
# compiles our kernels and the compatibility headers' cases with each (tests/tests/nvrtc_matrix.rs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.cuda/py"
stamp="$dest/.cudacheck-installed-v2"
# nvidia-cuda-crt: the toolkit's crt/ headers, which <mma.h> (WMMA) includes.
pkgs=(nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  nvidia-cuda-crt==13.0.88)
# CUDA 13 dropped Volta (sm_70/sm_72); NVRTC 12.9 still targets it. Installed beside, used only
# where a test or a user asks for it (CUDACHECK_NVRTC12), and as the matrix's 12.9. CUDA 12
# wheels split the headers: CCCL (cuda/std, CUB) is nvidia-cuda-cccl-cu12, and the crt/ headers
# <mma.h> includes come only with nvidia-cuda-nvcc-cu12 (there is no nvidia-cuda-crt-cu12).
dest12="$root/.cuda/py12"
stamp12="$dest12/.cudacheck-installed-v2"
pkgs12=(nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79
  nvidia-cuda-cccl-cu12==12.9.27 nvidia-cuda-nvcc-cu12==12.9.86)
# The rest of the matrix, one folder each under .cuda/m/: the oldest CUDA 12 tested (12.4), and
# the newest NVRTC on PyPI with the newest headers there, what `pip install nvidia-cuda-nvrtc
# nvidia-cuda-runtime nvidia-cuda-cccl` gives (CCCL's wheel numbers itself 13.3.<CCCL version>:
# 13.3.5.0.6 is CCCL 3.5.0).
pkgs124=(nvidia-cuda-nvrtc-cu12==12.4.127 nvidia-cuda-runtime-cu12==12.4.127
  nvidia-cuda-cccl-cu12==12.4.127.post1 nvidia-cuda-nvcc-cu12==12.4.131)
pkgs135=(nvidia-cuda-nvrtc==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6
  nvidia-cuda-crt==13.5.37)

install() { # folder, stamp, packages...
  local into="$1" done="$2"; shift 2
  [ -f "$done" ] && return 0
  local py
  py="$(command -v python3 || command -v python || true)"
  if [ -z "$py" ]; then
    echo "setup-cuda: python3 is needed to install NVRTC from PyPI; install python3 and pip" >&2
    exit 2
  fi
  echo "setup-cuda: installing $* into $into" >&2
  rm -rf "$into"
  mkdir -p "$into"
  # --no-cache-dir: pip's cache would keep a second copy of every wheel (CI's disk is tight).
  "$py" -m pip install --quiet --no-cache-dir --disable-pip-version-check \
    --no-warn-script-location --root-user-action=ignore --target "$into" "$@" >&2
  # Of nvidia-cuda-nvcc-cu12 only include/crt is used: its compiler binaries and NVVM (about
  # 55 MB per release) go.
  rm -rf "$into/nvidia/cuda_nvcc/bin" "$into/nvidia/cuda_nvcc/nvvm" "$into/nvidia/cuda_nvcc/lib"
  touch "$done"
}
install "$dest" "$stamp" "${pkgs[@]}"
lib="$dest/nvidia/cu13/lib/libnvrtc.so.13"
# `--main`: only what the main job (`cudacheck check`) needs, one NVRTC release and its headers
# (about 150 MB); the test suite installs the rest (scripts/test.sh, without the flag).
if [ "${1:-}" = "--main" ]; then
  [ -f "$lib" ] || { echo "setup-cuda: $lib is missing after install" >&2; exit 2; }
  # nvJitLink (for `cudacheck instrument`) when the test suite installed it already.
  jl="$root/.cuda/jl/nvidia/cu13/lib/libnvJitLink.so.13"
  echo "export CUDACHECK_NVRTC=$lib$([ -f "$jl" ] && echo " CUDACHECK_NVJITLINK=$jl")"
  exit 0
fi
install "$dest12" "$stamp12" "${pkgs12[@]}"
# nvJitLink assembles the PTX that bounds checking rewrites (ptxas inside a library). Its own
# folder: pip --target will not add files under the existing nvidia/ of the first install.
destjl="$root/.cuda/jl"
install "$destjl" "$destjl/.cudacheck-installed-v1" nvidia-nvjitlink==13.0.88
libjl="$destjl/nvidia/cu13/lib/libnvJitLink.so.13"

lib12="$dest12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
dest124="$root/.cuda/m/12.4"
install "$dest124" "$dest124/.cudacheck-installed-v1" "${pkgs124[@]}"
lib124="$dest124/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
dest135="$root/.cuda/m/13.5"
install "$dest135" "$dest135/.cudacheck-installed-v1" "${pkgs135[@]}"
lib135="$dest135/nvidia/cu13/lib/libnvrtc.so.13"
matrix="12.4=$lib124 12.9=$lib12 13.0=$lib 13.5=$lib135"
for f in "$lib" "$lib12" "$libjl" "$lib124" "$lib135"; do
  if [ ! -f "$f" ]; then
    echo "setup-cuda: $f is missing after install" >&2
    exit 2
  fi
done
# cudacheck's NVRTC discovery reads CUDACHECK_NVRTC first (see docs/guide.md, "Finding NVRTC").
echo "export CUDACHECK_NVRTC=$lib CUDACHECK_NVRTC12=$lib12 CUDACHECK_NVJITLINK=$libjl \
CUDACHECK_NVRTC_MATRIX=\"$matrix\""
