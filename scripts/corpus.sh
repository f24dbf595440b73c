#!/usr/bin/env bash
# Runs the env-driven corpus test (tests/tests/nvrtc_corpus.rs) on a third-party kernel library
# checked out outside this repository; results/corpus.md records the projects and commands.
# Usage: scripts/corpus.sh PATH... [-- -DNAME -IDIR ...]   (exclusions via CUDACHECK_CORPUS_EXCLUDE)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
eval "$("$root/scripts/setup-cuda.sh")"
paths=() flags=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; flags=("$@"); break; fi
  paths+=("$1"); shift
done
CUDACHECK_CORPUS="$(IFS=:; echo "${paths[*]}")" CUDACHECK_CORPUS_FLAGS="${flags[*]:-}" \
  cargo test --release --manifest-path "$root/Cargo.toml" -p cudacheck-tests --test nvrtc_corpus \
  -- --nocapture
