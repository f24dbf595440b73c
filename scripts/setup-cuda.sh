#!/usr/bin/env bash
# Installs NVRTC and the CUDA headers from PyPI into the project-local folder .cuda/ (no system
# CUDA needed, no root needed) and prints the line to source for using them. Idempotent: a
# second run with everything in place does nothing.
#
# Versions are pinned to CUDA 13.0, the toolkit on our GPU machine (shared/GPU.md), so the
# CUBINs NVRTC writes here load under that machine's 13.0 driver.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.cuda/py"
stamp="$dest/.cudacheck-installed-v1"
pkgs=(nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85)

if [ ! -f "$stamp" ]; then
  py="$(command -v python3 || command -v python || true)"
  if [ -z "$py" ]; then
    echo "setup-cuda: python3 is needed to install NVRTC from PyPI; install python3 and pip" >&2
    exit 2
  fi
  echo "setup-cuda: installing ${pkgs[*]} into $dest" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  "$py" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore --target "$dest" "${pkgs[@]}" >&2
  touch "$stamp"
fi
lib="$dest/nvidia/cu13/lib"
if [ ! -f "$lib/libnvrtc.so.13" ]; then
  echo "setup-cuda: $lib/libnvrtc.so.13 is missing after install" >&2
  exit 2
fi
# cudacheck's NVRTC discovery reads this variable first (see README, "Finding NVRTC").
echo "export CUDACHECK_NVRTC=$lib/libnvrtc.so.13"
