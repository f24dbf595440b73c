#!/usr/bin/env bash
# `cudacheck run` on public programs nobody here wrote, built and run unchanged: llm.c's
# dev/cuda kernel benchmarks (karpathy/llm.c) and NVIDIA's cuda-samples. Each program runs
# plain, under `cudacheck run` twice (cold module cache, then warm) and under compute-sanitizer
# memcheck; scripts/run-thirdparty-report.py tabulates times, findings and whether the
# program's output was the same.
#
#   scripts/run-thirdparty.sh bundle [CORPUS_DIR...]
#       here: the chosen programs' sources and what they include (no binaries, no data) into
#       target/gpu-carry/run-thirdparty.tar.xz, with each checkout's commit and the program
#       list (programs.tsv). CORPUS_DIR: checkouts of karpathy/llm.c and NVIDIA/cuda-samples
#       (default $CORPUS_ROOT/karpathy+llm.c and $CORPUS_ROOT/NVIDIA+cuda-samples; CORPUS_ROOT
#       defaults to .corpus/, ignored by git)
#   scripts/run-thirdparty.sh run CUDACHECK_BIN OUTDIR
#       GPU machine (bash, coreutils, tar/xz, nvcc, compute-sanitizer, python3): unpack the
#       bundle, build every program (`xargs -P`, all cores), then
#         phase 1, per program: plain; `cudacheck run --json` cold; the same again, warm
#         phase 2, per program: compute-sanitizer --tool memcheck, while time is left
#       and write OUTDIR/run-thirdparty.{md,json}. The whole mode stays inside
#       $RUN_THIRDPARTY_BUDGET_S seconds (330) from its start, building included: a run that
#       would pass the deadline is cut to it, and those after it are recorded as skipped.
#       Every finished build and run is in OUTDIR/build.tsv and OUTDIR/runs.tsv at once, so a
#       run that is killed still leaves what it did; the report can be made from it later.
#   scripts/run-thirdparty.sh build OUTDIR
#       unpack and build only (here: with the pip nvcc, to check the bundle compiles)
#   scripts/run-thirdparty.sh list
#       the program list
#
# The GPU call, after `scripts/run-thirdparty.sh bundle` and with the cudacheck binary
# at target/gpu-carry/cudacheck: carry ["target/gpu-carry"], command
#   "scripts/run-thirdparty.sh run target/gpu-carry/cudacheck $OUT"
#
# Environment:
#   NVCC (/usr/local/cuda/bin/nvcc), COMPUTE_SANITIZER (/usr/local/cuda/bin/compute-sanitizer)
#   RUN_THIRDPARTY_NVCC_FLAGS   flags for every nvcc call besides the program's own (here:
#                               -ccbin, -I and -L of the pip wheels' headers and libraries)
#   RUN_THIRDPARTY_CUDACHECK_FLAGS  flags for `cudacheck run` besides --json
#   RUN_THIRDPARTY_BUDGET_S (330), RUN_THIRDPARTY_BUILD_LIMIT (180), RUN_THIRDPARTY_RUN_LIMIT
#   (45: each plain and cudacheck run), RUN_THIRDPARTY_MEMCHECK_LIMIT (30): seconds
#   RUN_THIRDPARTY_ONLY         a regular expression: only the program ids it matches
#
# Builds: `-arch=sm_90 -lineinfo` for every program (sm_90 SASS and compute_90 PTX, so that
# the interposer finds PTX to check and a fault can name a line) with each project's own
# flags: llm.c's Makefile's `-O3 --use_fast_math -std=c++17 -lcublas -lcublasLt`, the samples'
# CMake `-std=c++17 --extended-lambda -I Common`, and -O3. No -rdc: the samples' CMake asks
# for separable compilation, which none of the chosen ones needs (no device call crosses a
# file), and a whole-program build registers each file's own fatbin, PTX included.
# vectorAddDrv loads a fatbin with the driver API (cuModuleLoadData): it is made beside the
# program as the sample's CMake does, but with -arch=sm_90 (CMake's has SASS only).
#
# Cold and warm: each program gets its own CUDACHECK_CACHE_DIR and CUDA_CACHE_PATH (the
# driver's JIT cache, for PTX that cudacheck hands the driver), empty for the first run and
# kept for the second. Each program runs in its build directory (vectorAddDrv finds its fatbin
# through "./"), with stdin from /dev/null.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"
shift || true
bundle="$root/target/gpu-carry/run-thirdparty.tar.xz"
corpus_root="${CORPUS_ROOT:-$root/.corpus}"
default_corpora=("$corpus_root/karpathy+llm.c" "$corpus_root/NVIDIA+cuda-samples")

# The programs: id, checkout, directory in it, binary, sources, nvcc flags ({co} is the
# checkout's root), fatbin to make first ("SOURCE>OUTPUT" or -), arguments (the rest of the
# line; - for none). Tab-separated; - for an empty field (bash's read joins adjacent tabs).
#
# llm.c dev/cuda: each file benchmarks one kernel family at several block sizes after checking
# it against a CPU reference; the argument picks the kernel. Chosen: the files whose CPU
# reference takes under a second or so, each with its most developed kernel (what llm.c's
# train_gpt2.cu grew from: Packed128 loads, cooperative groups, dynamic shared memory above
# 48 KiB set with cudaFuncSetAttribute) and, for two, the file's default kernel too.
# Left out: attention_forward, attention_backward, trimat_forward (single-threaded CPU
# attention references of 3 to 10 billion multiply-adds: many seconds a run, four runs each),
# matmul_forward and matmul_backward (CPU matmuls of 19 to 77 billion multiply-adds),
# softmax_forward, classifier_fused and crossentropy_softmax_backward (1.6 GB arrays of 411M
# rand() floats and CPU softmaxes over them), nccl_all_reduce (MPI, NCCL, several GPUs).
# No cuDNN: attention_forward's cuDNN kernel is only built with -DENABLE_CUDNN. Kept although
# it fills 411M floats (a few seconds): crossentropy_forward, last, for its gather by target.
#
# cuda-samples: self-checking samples that build from their own directory and Common/, run
# in about a second, read no input file and need no display: runtime API launches, templates,
# cooperative launches (reductionMultiBlockCG), CUDA graphs (simpleCudaGraphs), cp.async and
# cuda::barrier (globalToShmemAsyncCopy, simpleAWBarrier), dynamic shared memory, the driver
# API (vectorAddDrv). Left out: samples needing OpenGL/EGL/Vulkan/D3D, MPI, several GPUs, NPP,
# nvJPEG, cuFFT, cuSOLVER or input images (dct8x8, FunctionPointers, ...), -rdc (cdp*), the
# *_nvrtc samples (they compile their .cu with NVRTC at run time: not an nvcc build), samples
# whose output is timing or CPU polling counts only (clock, asyncAPI), and dwtHaar1D (its
# data files are not in the mirror).
programs() {
  local llmc='-O3 --use_fast_math -std=c++17 -lcublas -lcublasLt'
  local cs='-O3 -std=c++17 --extended-lambda -I{co}/Common'
  local L=karpathy+llm.c C=NVIDIA+cuda-samples
  local S=Samples
  while read -r id co dir bin srcs fl fatbin args; do
    case "$fl" in llmc) fl="$llmc" ;; cs) fl="$cs" ;; cs+cuda) fl="$cs -lcuda" ;; esac
    case "$co" in L) co=$L ;; C) co=$C ;; esac
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$co" "${dir/#S\//$S/}" "$bin" \
      "${srcs//,/ }" "$fl" "$fatbin" "${args:--}"
  done <<'EOF'
adamw-2 L dev/cuda adamw adamw.cu llmc - 2
encoder_forward-3 L dev/cuda encoder_forward encoder_forward.cu llmc - 3
encoder_backward-2 L dev/cuda encoder_backward encoder_backward.cu llmc - 2
gelu_forward-2 L dev/cuda gelu_forward gelu_forward.cu llmc - 2
gelu_backward-2 L dev/cuda gelu_backward gelu_backward.cu llmc - 2
residual_forward-2 L dev/cuda residual_forward residual_forward.cu llmc - 2
fused_residual_forward-5 L dev/cuda fused_residual_forward fused_residual_forward.cu llmc - 5
layernorm_forward-2 L dev/cuda layernorm_forward layernorm_forward.cu llmc - 2
layernorm_forward-6 L dev/cuda layernorm_forward layernorm_forward.cu llmc - 6
layernorm_backward-10 L dev/cuda layernorm_backward layernorm_backward.cu llmc - 10
global_norm-4 L dev/cuda global_norm global_norm.cu llmc - 4
matmul_backward_bias-1 L dev/cuda matmul_backward_bias matmul_backward_bias.cu llmc - 1
matmul_backward_bias-8 L dev/cuda matmul_backward_bias matmul_backward_bias.cu llmc - 8
permute L dev/cuda permute permute.cu llmc - -
crossentropy_forward-1 L dev/cuda crossentropy_forward crossentropy_forward.cu llmc - 1
vectorAdd C S/0_Introduction/vectorAdd vectorAdd vectorAdd.cu cs - -
matrixMul C S/0_Introduction/matrixMul matrixMul matrixMul.cu cs - -
simpleTemplates C S/0_Introduction/simpleTemplates simpleTemplates simpleTemplates.cu cs - -
simpleAtomicIntrinsics C S/0_Introduction/simpleAtomicIntrinsics simpleAtomicIntrinsics simpleAtomicIntrinsics.cu,simpleAtomicIntrinsics_cpu.cpp cs - -
simpleVoteIntrinsics C S/0_Introduction/simpleVoteIntrinsics simpleVoteIntrinsics simpleVoteIntrinsics.cu cs - -
simpleCooperativeGroups C S/0_Introduction/simpleCooperativeGroups simpleCooperativeGroups simpleCooperativeGroups.cu cs - -
simpleAWBarrier C S/0_Introduction/simpleAWBarrier simpleAWBarrier simpleAWBarrier.cu cs - -
mergeSort C S/0_Introduction/mergeSort mergeSort mergeSort.cu,main.cpp,mergeSort_host.cpp,mergeSort_validate.cpp cs - -
vectorAddDrv C S/0_Introduction/vectorAddDrv vectorAddDrv vectorAddDrv.cpp cs+cuda vectorAdd_kernel.cu>vectorAdd_kernel64.fatbin -
reduction C S/2_Concepts_and_Techniques/reduction reduction reduction.cpp,reduction_kernel.cu cs - -
reductionMultiBlockCG C S/2_Concepts_and_Techniques/reductionMultiBlockCG reductionMultiBlockCG reductionMultiBlockCG.cu cs - -
scan C S/2_Concepts_and_Techniques/scan scan main.cpp,scan_gold.cpp,scan.cu cs - -
histogram C S/2_Concepts_and_Techniques/histogram histogram histogram256.cu,histogram64.cu,histogram_gold.cpp,main.cpp cs - -
convolutionSeparable C S/2_Concepts_and_Techniques/convolutionSeparable convolutionSeparable convolutionSeparable.cu,convolutionSeparable_gold.cpp,main.cpp cs - -
sortingNetworks C S/2_Concepts_and_Techniques/sortingNetworks sortingNetworks main.cpp,bitonicSort.cu,sortingNetworks_validate.cpp cs - -
simpleCudaGraphs C S/3_CUDA_Features/simpleCudaGraphs simpleCudaGraphs simpleCudaGraphs.cu cs - -
globalToShmemAsyncCopy C S/3_CUDA_Features/globalToShmemAsyncCopy globalToShmemAsyncCopy globalToShmemAsyncCopy.cu cs - -
BlackScholes C S/5_Domain_Specific/BlackScholes BlackScholes BlackScholes.cu,BlackScholes_gold.cpp cs - -
fastWalshTransform C S/5_Domain_Specific/fastWalshTransform fastWalshTransform fastWalshTransform.cu,fastWalshTransform_gold.cpp cs - -
transpose C S/6_Performance/transpose transpose transpose.cu cs - -
EOF
}

now_us() { # wall clock in microseconds
  local t="${EPOCHREALTIME:-}"
  if [ -n "$t" ]; then echo "${t//[.,]/}"; else echo $(($(date +%s%N) / 1000)); fi
}
secs() { printf '%d.%03d' $(($1 / 1000000)) $((($1 % 1000000) / 1000)); }

# The checkout a path lies in: the nearest directory above it with .git (as wholeprog.sh).
checkout_of() {
  local d
  d="$(cd "$1" && pwd)"
  while [ "$d" != / ]; do
    [ -e "$d/.git" ] && { echo "$d"; return; }
    d="$(dirname "$d")"
  done
  echo "run-thirdparty: $1 is in no git checkout" >&2
  exit 2
}

# Unpacks the bundle into $work and sets out, deadline and the tools' paths.
prepare() { # OUTDIR
  start_us="$(now_us)"
  deadline_us=$((start_us + ${RUN_THIRDPARTY_BUDGET_S:-330} * 1000000))
  mkdir -p "$1"
  out="$(cd "$1" && pwd)"
  [ -f "$bundle" ] || { echo "run-thirdparty: no $bundle: run 'bundle' here first" >&2; exit 2; }
  work="$root/target/run-thirdparty-stage"
  rm -rf "$work"
  mkdir -p "$work/src" "$work/build"
  tar -C "$work/src" -xJf "$bundle"
  cp "$work/src/corpora.tsv" "$out/"
  nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
  command -v "$nvcc" > /dev/null || nvcc="$(command -v nvcc || true)"
  [ -n "$nvcc" ] || { echo "run-thirdparty: no nvcc (set NVCC)" >&2; exit 2; }
  # Each binary once (two llm.c entries share one), in list order.
  local id co dir bin srcs fl fatbin args
  : > "$work/builds"
  while IFS=$'\t' read -r id co dir bin srcs fl fatbin args; do
    grep -qF "$co/$dir/$bin"$'\t' "$work/builds" ||
      printf '%s/%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$co" "$dir" "$bin" "$co" "$dir" "$bin" "$srcs" \
        "$fl" "$fatbin" >> "$work/builds"
  done < <(selected)
  # The order of the runs: alternating between the projects (the first program of each, then
  # the second, ...), so that when time runs short both have some of each kind of run.
  declare -A rank=()
  while IFS=$'\t' read -r id co rest; do
    rank[$co]=$((${rank[$co]:-0} + 1))
    printf '%d\t%s\t%s\t%s\n' "${rank[$co]}" "$id" "$co" "$rest"
  done < <(selected) | sort -s -n -k1,1 | cut -f2- > "$work/order"
  selected > "$out/programs.tsv"
}

# programs.tsv of the bundle, less the ids RUN_THIRDPARTY_ONLY does not match.
selected() {
  local line
  while IFS= read -r line; do
    if [[ "${line%%$'\t'*}" =~ ${RUN_THIRDPARTY_ONLY:-.} ]]; then printf '%s\n' "$line"; fi
  done < "$work/src/programs.tsv"
}

remaining_s() { echo $(((deadline_us - $(now_us)) / 1000000)); }

# Builds line N of $work/builds (run by xargs -P); appends to $out/build.tsv when done.
build_one() {
  local key co dir bin srcs fl fatbin src bdir lim t0 rc=0 s
  IFS=$'\t' read -r key co dir bin srcs fl fatbin < <(sed -n "${1}p" "$work/builds")
  src="$work/src/$co/$dir"
  bdir="$work/build/$co/$bin"
  mkdir -p "$bdir" "$out/build"
  fl="${fl//\{co\}/$work/src/$co}"
  lim=$(($(remaining_s) < ${RUN_THIRDPARTY_BUILD_LIMIT:-180} ? $(remaining_s) : ${RUN_THIRDPARTY_BUILD_LIMIT:-180}))
  t0="$(now_us)"
  if [ "$lim" -lt 5 ]; then
    rc=-1
    echo "not built: the time budget was spent" > "$out/build/$bin.log"
  else
    # shellcheck disable=SC2086
    (
      cd "$bdir"
      if [ "$fatbin" != - ]; then
        # The program's flags less its libraries: a fatbin is not linked.
        timeout -k 5 "$lim" "$nvcc" -arch=sm_90 -lineinfo ${RUN_THIRDPARTY_NVCC_FLAGS:-} \
          $(for f in $fl; do [ "${f#-l}" != "$f" ] || echo "$f"; done) \
          -fatbin "$src/${fatbin%%>*}" -o "${fatbin#*>}"
      fi
      timeout -k 5 "$lim" "$nvcc" -arch=sm_90 -lineinfo ${RUN_THIRDPARTY_NVCC_FLAGS:-} \
        $(for f in $srcs; do echo "$src/$f"; done) $fl -o "$bin"
    ) > "$out/build/$bin.log" 2>&1 || rc=$?
  fi
  s="$(secs $(($(now_us) - t0)))"
  printf '%s\t%s\t%s\t%d\t%s\n' "$co" "$dir" "$bin" "$rc" "$s" >> "$out/build.tsv"
  echo "build $bin: rc $rc, $s s" >&2
}

build_all() {
  : > "$out/build.tsv"
  {
    echo "nvcc: $nvcc"
    "$nvcc" --version 2>&1 | tail -2
    echo "flags: -arch=sm_90 -lineinfo ${RUN_THIRDPARTY_NVCC_FLAGS:-}"
  } > "$out/build-env.txt"
  local n t0
  n="$(wc -l < "$work/builds")"
  t0="$(now_us)"
  export -f build_one now_us secs remaining_s
  export work out nvcc deadline_us
  seq 1 "$n" | xargs -P "$(nproc)" -I{} bash -c 'build_one "$1"' _ {}
  echo "built $n programs in $(secs $(($(now_us) - t0))) s with $(nproc) jobs" >&2
}

# Runs one program in one way, appending "id, phase, exit code, seconds, limit" to runs.tsv;
# exit code -1: skipped, the time budget being spent.
run_one() { # id phase cap cwd command...
  local id="$1" phase="$2" cap="$3" cwd="$4" lim t0 rc=0 d="$out/runs/$1"
  shift 4
  mkdir -p "$d"
  lim=$(($(remaining_s) - 2))
  [ "$lim" -lt "$cap" ] || lim="$cap"
  if [ "$lim" -lt 3 ]; then
    printf '%s\t%s\t-1\t\t0\n' "$id" "$phase" >> "$out/runs.tsv"
    return
  fi
  t0="$(now_us)"
  (cd "$cwd" && exec timeout -k 5 "$lim" "$@" > "$d/$phase.out" 2> "$d/$phase.err" < /dev/null) ||
    rc=$?
  printf '%s\t%s\t%d\t%s\t%d\n' "$id" "$phase" "$rc" "$(secs $(($(now_us) - t0)))" "$lim" \
    >> "$out/runs.tsv"
  echo "$id $phase: rc $rc, $(tail -1 "$out/runs.tsv" | cut -f4) s" >&2
}

case "$mode" in
list)
  programs
  ;;
bundle)
  cd "$root"
  [ $# -gt 0 ] || set -- "${default_corpora[@]}"
  declare -A checkout=()
  for dir in "$@"; do
    co="$(checkout_of "$dir")"
    checkout[$(basename "$co")]="$co"
  done
  stage="$root/target/run-thirdparty-bundle"
  rm -rf "$stage"
  mkdir -p "$stage" "$(dirname "$bundle")"
  programs > "$stage/programs.tsv"
  : > "$stage/corpora.tsv"
  while IFS=$'\t' read -r id co dir bin srcs fl fatbin args; do
    src="${checkout[$co]:-}"
    [ -n "$src" ] || { echo "run-thirdparty: no checkout of $co given" >&2; exit 2; }
    if ! grep -qF "$co"$'\t' "$stage/corpora.tsv"; then
      printf '%s\t%s\n' "$co" "$(git -C "$src" rev-parse HEAD)" >> "$stage/corpora.tsv"
      # The checkout's license, and its shared headers (cuda-samples' Common/*.h).
      mkdir -p "$stage/$co"
      (cd "$src" && { find . -maxdepth 1 -type f -name 'LICENSE*'
        [ ! -d Common ] || find Common -maxdepth 1 -type f -name '*.h'; } |
        tar -cf - -T -) | tar -C "$stage/$co" -xf -
    fi
    # The program's sources, its fatbin's source and the headers beside them.
    files=()
    for f in $srcs ${fatbin%%>*}; do [ "$f" = - ] || files+=("$dir/$f"); done
    while IFS= read -r f; do files+=("$f"); done < <(cd "$src" && find "$dir" -maxdepth 1 \
      -type f \( -name '*.h' -o -name '*.cuh' -o -name '*.hpp' -o -name '*.inl' \))
    (cd "$src" && tar -cf - "${files[@]}") | tar -C "$stage/$co" -xf -
  done < "$stage/programs.tsv"
  tar -C "$stage" -cJf "$bundle" .
  du -sh "$stage" "$bundle"
  cat "$stage/corpora.tsv"
  echo "$(wc -l < "$stage/programs.tsv") programs"
  ;;
build)
  prepare "${1:?usage: run-thirdparty.sh build OUTDIR}"
  build_all
  cut -f3,4,5 "$out/build.tsv"
  # Fails when a program did not build.
  ! cut -f4 "$out/build.tsv" | grep -qvx 0
  ;;
run)
  cudacheck="${1:?usage: run-thirdparty.sh run CUDACHECK_BIN OUTDIR}"
  cudacheck="$(cd "$(dirname "$cudacheck")" && pwd)/$(basename "$cudacheck")"
  prepare "${2:?usage: run-thirdparty.sh run CUDACHECK_BIN OUTDIR}"
  sanitizer="${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}"
  command -v "$sanitizer" > /dev/null || sanitizer="$(command -v compute-sanitizer || true)"
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "device: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1 | head -1)"
    echo "nvcc: $("$nvcc" --version 2>&1 | grep -m1 release)"
    echo "compute-sanitizer: $("$sanitizer" --version 2>&1 | grep -m1 -i version)"
    echo "cudacheck: $("$cudacheck" --version 2>&1 | head -1)"
    echo "cores: $(nproc)"
    echo "budget_s: ${RUN_THIRDPARTY_BUDGET_S:-330}"
  } > "$out/env.txt"
  cat "$out/env.txt" >&2
  build_all
  : > "$out/runs.tsv"
  built() { grep -qF "$1"$'\t'"$2"$'\t'"$3"$'\t0\t' "$out/build.tsv"; }
  # The first CUDA process on a machine pays for the driver's start: not one of the timed runs.
  while IFS=$'\t' read -r id co dir bin srcs fl fatbin args; do
    if built "$co" "$dir" "$bin"; then
      [ "$args" = - ] && args=
      # shellcheck disable=SC2086
      run_one "$id" warmup 30 "$work/build/$co/$bin" "./$bin" $args
      break
    fi
  done < "$work/order"
  # The toolkit's libraries (cuBLAS) for programs linked against them, where no ld.so.conf
  # entry names them.
  cuda_lib="$(dirname "$(dirname "$nvcc")")/lib64"
  [ ! -d "$cuda_lib" ] || export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_lib"
  # Phase 1: plain, cold, warm, program by program.
  while IFS=$'\t' read -r id co dir bin srcs fl fatbin args; do
    built "$co" "$dir" "$bin" || continue
    [ "$args" = - ] && args=
    bdir="$work/build/$co/$bin"
    cache="$work/cache/$id"
    rm -rf "$cache"
    mkdir -p "$cache/cudacheck" "$cache/driver"
    # shellcheck disable=SC2086
    run_one "$id" plain "${RUN_THIRDPARTY_RUN_LIMIT:-45}" "$bdir" "./$bin" $args
    for phase in cold warm; do
      # shellcheck disable=SC2086
      run_one "$id" "$phase" "${RUN_THIRDPARTY_RUN_LIMIT:-45}" "$bdir" \
        env CUDACHECK_CACHE_DIR="$cache/cudacheck" CUDA_CACHE_PATH="$cache/driver" \
        "$cudacheck" run --json "$out/runs/$id/$phase.jsonl" ${RUN_THIRDPARTY_CUDACHECK_FLAGS:-} \
        -- "./$bin" $args
    done
  done < "$work/order"
  # Phase 2: memcheck, while time is left.
  while IFS=$'\t' read -r id co dir bin srcs fl fatbin args; do
    built "$co" "$dir" "$bin" || continue
    [ "$args" = - ] && args=
    # shellcheck disable=SC2086
    run_one "$id" memcheck "${RUN_THIRDPARTY_MEMCHECK_LIMIT:-30}" "$work/build/$co/$bin" \
      "$sanitizer" --tool memcheck --print-limit 20 --log-file "$out/runs/$id/memcheck.log" \
      "./$bin" $args
  done < "$work/order"
  echo "run-thirdparty: done in $(secs $(($(now_us) - start_us))) s" >&2
  python3 "$root/scripts/run-thirdparty-report.py" "$out" || true
  ;;
*)
  sed -n '2,31p' "$0" >&2
  exit 2
  ;;
esac
