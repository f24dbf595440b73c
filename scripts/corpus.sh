#!/usr/bin/env bash
# Runs the env-driven corpus test (tests/tests/nvrtc_corpus.rs) on a third-party kernel library
# checked out outside this repository; results/corpus.md records the projects and commands.
# Usage: scripts/corpus.sh PATH... [-- -DNAME -IDIR ...]   (exclusions via CUDACHECK_CORPUS_EXCLUDE)
# CUDACHECK_CORPUS_NVRTC=LABEL compiles with that release of the NVRTC matrix (12.4, 12.9, 13.0,
# 13.5: scripts/setup-cuda.sh) instead of the default 13.0.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
eval "$("$root/scripts/setup-cuda.sh")"
if [ -n "${CUDACHECK_CORPUS_NVRTC:-}" ]; then
  pick=""
  for entry in $CUDACHECK_NVRTC_MATRIX; do
    [ "${entry%%=*}" = "$CUDACHECK_CORPUS_NVRTC" ] && pick="${entry#*=}"
  done
  if [ -z "$pick" ]; then
    echo "corpus: no NVRTC $CUDACHECK_CORPUS_NVRTC in the matrix ($CUDACHECK_NVRTC_MATRIX)" >&2
    exit 2
  fi
  export CUDACHECK_NVRTC="$pick"
fi
paths=() flags=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; flags=("$@"); break; fi
  paths+=("$1"); shift
done
CUDACHECK_CORPUS="$(IFS=:; echo "${paths[*]}")" CUDACHECK_CORPUS_FLAGS="${flags[*]:-}" \
  cargo test --release --manifest-path "$root/Cargo.toml" -p cudacheck-tests --test nvrtc_corpus \
  -- --nocapture
