#!/usr/bin/env bash
# Installs NVRTC, nvJitLink and the CUDA headers from PyPI into the project-local folder .cuda/ (no system
# CUDA needed, no root needed) and prints the line to source for using them. Idempotent: a
# second run with everything in place does nothing.
#
# Versions are pinned to CUDA 13.0, the toolkit on our GPU machine (shared/GPU.md), so the
# CUBINs NVRTC writes here load under that machine's 13.0 driver.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.cuda/py"
stamp="$dest/.cudacheck-installed-v2"
# nvidia-cuda-crt: the toolkit's crt/ headers, which <mma.h> (WMMA) includes.
pkgs=(nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  nvidia-cuda-crt==13.0.88)
# CUDA 13 dropped Volta (sm_70/sm_72); NVRTC 12.9 still targets it. Installed beside, used only
# where a test or a user asks for it (CUDACHECK_NVRTC12).
dest12="$root/.cuda/py12"
stamp12="$dest12/.cudacheck-installed-v1"
pkgs12=(nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79)

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
  "$py" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore --target "$into" "$@" >&2
  touch "$done"
}
install "$dest" "$stamp" "${pkgs[@]}"
install "$dest12" "$stamp12" "${pkgs12[@]}"
# nvJitLink assembles the PTX that bounds checking rewrites (ptxas inside a library). Its own
# folder: pip --target will not add files under the existing nvidia/ of the first install.
destjl="$root/.cuda/jl"
install "$destjl" "$destjl/.cudacheck-installed-v1" nvidia-nvjitlink==13.0.88
libjl="$destjl/nvidia/cu13/lib/libnvJitLink.so.13"

lib="$dest/nvidia/cu13/lib/libnvrtc.so.13"
lib12="$dest12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
for f in "$lib" "$lib12" "$libjl"; do
  if [ ! -f "$f" ]; then
    echo "setup-cuda: $f is missing after install" >&2
    exit 2
  fi
done
# cudacheck's NVRTC discovery reads CUDACHECK_NVRTC first (see README, "Finding NVRTC").
echo "export CUDACHECK_NVRTC=$lib CUDACHECK_NVRTC12=$lib12 CUDACHECK_NVJITLINK=$libjl"
