#!/usr/bin/env bash
# Bounds checking on third-party kernels (examples/thirdparty.rs) on the GPU machine, which has
# no network and no Rust: the binary and the third-party sources travel in an ignored path.
#
#   scripts/thirdparty.sh bundle [CANDLE_REPO] [MISTRAL_REPO]   # here: build, copy, pack
#   scripts/thirdparty.sh run        # GPU machine, target/gpu-carry carried
#   scripts/thirdparty.sh run-ptx    # GPU machine: candle's kernels as candle ships them, from
#                                    # the PTX nvcc makes there (see below)
#   scripts/thirdparty.sh dry-run [CANDLE_REPO] [MISTRAL_REPO]  # here, no GPU: build every
#                                                               # kernel plain and checked
#
# CANDLE_REPO and MISTRAL_REPO are checkouts of huggingface/candle and EricLBuehler/mistral.rs
# (default: $CORPUS_ROOT/huggingface+candle and $CORPUS_ROOT/EricLBuehler+mistral.rs, where
# CORPUS_ROOT, a directory of third-party checkouts named owner+name, defaults to .corpus/,
# ignored by git). The measured commits are candle 2a13b0f3 and mistral.rs 9e922623. The bundle
# copies only the kernel directories the harness reads (candle-kernels/src; mistral.rs's
# ops, rotary and vector_fp8 kernels and mistralrs-core/src/cuda) into
# target/gpu-carry/thirdparty.tar.xz, with each checkout's commit: a run-time input, never
# committed (target/ is ignored). `run` unpacks it and writes thirdparty.json, thirdparty.md
# and the log under $OUT, else target/thirdparty-run/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-}"
corpus_root="${CORPUS_ROOT:-$root/.corpus}"
candle_repo="${2:-$corpus_root/huggingface+candle}"
mistral_repo="${3:-$corpus_root/EricLBuehler+mistral.rs}"
mistral_dirs=(mistralrs-quant/kernels/ops mistralrs-quant/kernels/rotary
  mistralrs-quant/kernels/vector_fp8 mistralrs-core/src/cuda)

commit() { git -C "$1" rev-parse HEAD 2>/dev/null || echo unknown; }
# On the GPU machine: the output folder, and the bundle unpacked into $stage.
stage=target/thirdparty-stage
unpack() {
  out="${OUT:-$root/target/thirdparty-run}"
  mkdir -p "$out"
  rm -rf "$stage"
  mkdir -p "$stage"
  tar -C "$stage" -xJf target/gpu-carry/thirdparty.tar.xz
}

case "$mode" in
bundle)
  eval "$(scripts/setup-cuda.sh)"
  cargo build --release -p cudacheck-examples --example thirdparty
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/candle" "$stage/mistral"
  cp target/release/examples/thirdparty "$stage/bin/"
  strip --strip-all "$stage/bin/thirdparty" 2>/dev/null || true
  cp -r "$candle_repo/candle-kernels/src" "$stage/candle/src"
  commit "$candle_repo" > "$stage/candle/.thirdparty-commit"
  for d in "${mistral_dirs[@]}"; do
    mkdir -p "$stage/mistral/$(dirname "$d")"
    cp -r "$mistral_repo/$d" "$stage/mistral/$d"
  done
  commit "$mistral_repo" > "$stage/mistral/.thirdparty-commit"
  mkdir -p target/gpu-carry
  tar -C "$stage" -cJf target/gpu-carry/thirdparty.tar.xz .
  du -sh "$stage" target/gpu-carry/thirdparty.tar.xz
  ;;
run)
  unpack
  shift || true
  "$stage/bin/thirdparty" --candle "$stage/candle/src" --mistral "$stage/mistral" \
    "$@" "$out/thirdparty.json" "$out/thirdparty.md" 2>&1 | tee "$out/thirdparty.log"
  exit "${PIPESTATUS[0]}"
  ;;
run-ptx)
  # candle's build script (candle-kernels/build.rs, through cudaforge) runs nvcc on each
  # src/*.cu with `--expt-relaxed-constexpr -std=c++17 -O3` and embeds the PTX. The same here,
  # plus -lineinfo so that faults can name lines; for the GPU's own architecture. quantized.cu
  # has no case in the harness and takes nvcc minutes: left out.
  unpack
  mkdir -p "$stage/ptx"
  shift || true
  nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')"
  "$nvcc" --version | tail -2 > "$out/thirdparty_ptx.nvcc"
  ls "$stage"/candle/src/*.cu | grep -v -e quantized.cu -e mmvq_gguf.cu \
    | xargs -P 16 -I{} sh -c 'f="$1"; "$2" --ptx -arch="sm_$3" -lineinfo --expt-relaxed-constexpr \
        -std=c++17 -O3 -o "$4/$(basename "$f" .cu).ptx" "$f"' _ {} "$nvcc" "$cc" "$stage/ptx"
  ls -l "$stage/ptx" >> "$out/thirdparty_ptx.nvcc"
  "$stage/bin/thirdparty" --candle "$stage/candle/src" --ptx "$stage/ptx" \
    "$@" "$out/thirdparty_ptx.json" "$out/thirdparty_ptx.md" 2>&1 | tee "$out/thirdparty_ptx.log"
  exit "${PIPESTATUS[0]}"
  ;;
dry-run)
  eval "$(scripts/setup-cuda.sh)"
  cargo build --release -p cudacheck-examples --example thirdparty
  out=target/thirdparty-dry
  mkdir -p "$out"
  target/release/examples/thirdparty --dry-run --arch sm_90 \
    --candle "$candle_repo/candle-kernels/src" --mistral "$mistral_repo" \
    "$out/dry.json" "$out/dry.md"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
  exit 2
  ;;
esac
