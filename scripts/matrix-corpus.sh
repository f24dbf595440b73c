#!/usr/bin/env bash
# candle's and mistral.rs's kernel files (results/corpus.md's 92) under each NVRTC release of
# the matrix, on the GPU machine's cores (a release takes over an hour on a 2-core machine). The release's NVRTC and headers travel in the bundle, laid out as
# pip installs them, so cudacheck finds the headers beside the library as it does here.
#
#   scripts/matrix-corpus.sh bundle LABEL        # here: target/gpu-carry/matrix-LABEL.tar.xz
#       (LABEL: 12.4, 12.9 or 13.5 from scripts/setup-cuda.sh's matrix; "toolkit" carries no
#       NVRTC and uses the GPU machine's own CUDA 13.0), with the corpus files and
#       target/release/cudacheck
#   scripts/matrix-corpus.sh run LABEL OUTDIR    # GPU machine: `cudacheck check --json` of
#       the 92 files with the release's NVRTC, all cores; OUTDIR/LABEL-*.json, doctor's report
#   scripts/matrix-corpus.sh summary OUTDIR...   # here: per release, files that compile with
#       kernels, and the ones that do not
#   scripts/matrix-corpus.sh instrument LABEL OUTDIR  # GPU machine: `cudacheck instrument
#       --json` of candle's and mistral.rs quant's files (whole-library bounds-check
#       coverage), one process per file on all cores, largest first; OUTDIR/instrument-*.json
#   scripts/matrix-corpus.sh coverage OUTDIR     # here: kernels with every access checked,
#       per group, and the files whose instrumented build failed
#
# The files: candle @ candle-kernels/src (26); mistral.rs @ mistralrs-quant/kernels and
# mistralrs-core/src/cuda (51), mistralrs-paged-attn/src/cuda (15, with -DENABLE_FP8); paths
# containing cutlass, dummy or fa3/ left out (results/corpus.md). CANDLE_REPO and MISTRAL_REPO
# are the checkouts (default $CORPUS_ROOT/huggingface+candle and
# $CORPUS_ROOT/EricLBuehler+mistral.rs; CORPUS_ROOT defaults to .corpus/, ignored by git).
# The GPU machine runs the bundle with its own CUDA 13.0 toolkit and no Rust (target/gpu-carry
# carried; scripts/gpu-suite.sh nvrtc-matrix and coverage).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"
shift || true
corpus_root="${CORPUS_ROOT:-$root/.corpus}"
candle_repo="${CANDLE_REPO:-$corpus_root/huggingface+candle}"
mistral_repo="${MISTRAL_REPO:-$corpus_root/EricLBuehler+mistral.rs}"
# Each group: a name, its folder inside the bundle, the flags it is checked with.
groups=("candle candle/candle-kernels/src" "mistral mistral/mistralrs-quant/kernels"
  "mistral-core mistral/mistralrs-core/src/cuda" "paged mistral/mistralrs-paged-attn/src/cuda -DENABLE_FP8")
excluded() { case "$1" in *cutlass* | *dummy* | *fa3/*) return 0 ;; *) return 1 ;; esac; }

# `unpack MODE LABEL OUTDIR`: sets label, out (absolute, made) and stage (the bundle unpacked
# in a temporary folder), and points CUDACHECK_NVRTC at the bundle's NVRTC when it has one.
unpack() {
  label="${2:?usage: matrix-corpus.sh $1 LABEL OUTDIR}"
  out="${3:?usage: matrix-corpus.sh $1 LABEL OUTDIR}"
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  stage="$(mktemp -d)"
  tar -C "$stage" -xJf "$root/target/gpu-carry/matrix-$label.tar.xz"
  if [ -f "$stage/nvrtc-path" ]; then
    export CUDACHECK_NVRTC="$stage/$(cat "$stage/nvrtc-path")"
  fi
}

case "$mode" in
bundle)
  label="${1:?usage: matrix-corpus.sh bundle LABEL}"
  cd "$root"
  stage="$(mktemp -d)"
  mkdir -p "$stage/corpus/candle" "$stage/corpus/mistral" target/gpu-carry
  cp -r "$candle_repo/candle-kernels" "$stage/corpus/candle/"
  git -C "$candle_repo" rev-parse HEAD > "$stage/corpus/candle/.commit"
  for d in mistralrs-quant/kernels mistralrs-core/src/cuda mistralrs-paged-attn/src/cuda; do
    mkdir -p "$stage/corpus/mistral/$(dirname "$d")"
    cp -r "$mistral_repo/$d" "$stage/corpus/mistral/$d"
  done
  git -C "$mistral_repo" rev-parse HEAD > "$stage/corpus/mistral/.commit"
  # Sources and headers only.
  find "$stage/corpus" -type f ! \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.hpp' \
    -o -name '*.inl' -o -name '.commit' \) -delete
  cp target/release/cudacheck "$stage/cudacheck"
  strip "$stage/cudacheck" 2>/dev/null || true
  if [ "$label" != toolkit ]; then
    eval "$(scripts/setup-cuda.sh)"
    lib=""
    for entry in $CUDACHECK_NVRTC_MATRIX; do
      [ "${entry%%=*}" = "$label" ] && lib="${entry#*=}"
    done
    [ -n "$lib" ] || { echo "matrix-corpus: no NVRTC $label in $CUDACHECK_NVRTC_MATRIX" >&2; exit 2; }
    # The pip root of that release: the folder holding nvidia/.
    pip_root="${lib%/nvidia/*}"
    (cd "$pip_root" && find nvidia \( -path '*/include/*' -o -name 'libnvrtc.so*' \
      -o -name 'libnvrtc-builtins.so*' \) ! -name '*.alt.*' \( -type f -o -type l \) -print0 |
      tar -cf - --null -T -) | tar -C "$stage" -xf -
    echo "${lib#"$pip_root"/}" > "$stage/nvrtc-path"
  fi
  echo "$label" > "$stage/label"
  tar -C "$stage" -cJf "target/gpu-carry/matrix-$label.tar.xz" .
  rm -rf "$stage"
  ls -la "target/gpu-carry/matrix-$label.tar.xz"
  ;;
run)
  unpack run "$@"
  "$stage/cudacheck" doctor > "$out/$label-doctor.txt" 2>&1 || true
  # The groups side by side: each is bounded by its slowest file, not by the cores.
  for g in "${groups[@]}"; do
    (
      read -r name dir flags <<< "$g"
      mapfile -t files < <(cd "$stage/corpus" && find "$dir" -name '*.cu' -type f | LC_ALL=C sort)
      keep=()
      for f in "${files[@]}"; do excluded "$f" || keep+=("$f"); done
      start=$(date +%s)
      # shellcheck disable=SC2086
      (cd "$stage/corpus" && CUDACHECK_CACHE=0 "$stage/cudacheck" check --arch sm_90 --json \
        $flags "${keep[@]}" > "$out/$label-$name.json" 2> "$out/$label-$name.err") || true
      echo "$name: ${#keep[@]} files, $(( $(date +%s) - start )) s" >> "$out/$label-times.txt"
    ) &
  done
  wait
  cat "$out/$label-times.txt"
  rm -rf "$stage"
  ;;
instrument)
  unpack instrument "$@"
  cp "$stage/corpus/candle/.commit" "$out/candle.commit" 2>/dev/null || true
  cp "$stage/corpus/mistral/.commit" "$out/mistral.commit" 2>/dev/null || true
  # "group<TAB>flags<TAB>file" lines, the largest file first (the slowest to instrument).
  list="$out/instrument-files.txt"
  : > "$list"
  for g in "candle candle/candle-kernels/src" "mistral mistral/mistralrs-quant/kernels"; do
    read -r name dir flags <<< "$g"
    (cd "$stage/corpus" && find "$dir" -name '*.cu' -type f) | while read -r f; do
      excluded "$f" || printf '%s\t%s\t%s\t%s\n' "$(stat -c %s "$stage/corpus/$f")" "$name" "${flags:-}" "$f"
    done >> "$list"
  done
  sort -rn "$list" -o "$list"
  # MATRIX_ONLY=REGEX keeps the matching files (a quick try of the script).
  if [ -n "${MATRIX_ONLY:-}" ]; then
    grep -E "$MATRIX_ONLY" "$list" > "$list.only" || true
    mv "$list.only" "$list"
  fi
  start=$(date +%s)
  # shellcheck disable=SC2016
  # MATRIX_DEADLINE (seconds since the epoch): files not finished by then are stopped (their
  # report is then missing, and `coverage` lists them).
  cut -f2- "$list" | tr '\t' '\037' | xargs -d '\n' -P "$(nproc)" -I{} bash -c '
    IFS=$'"'"'\037'"'"' read -r name flags f <<< "$1"
    key="$(echo "$f" | tr / _)"
    left=$(( ${MATRIX_DEADLINE:-0} - $(date +%s) ))
    limit=()
    if [ "${MATRIX_DEADLINE:-0}" -gt 0 ]; then
      [ "$left" -gt 5 ] || exit 0
      limit=(timeout "$left")
    fi
    cd "$2/corpus" && CUDACHECK_CACHE=0 RAYON_NUM_THREADS=1 "${limit[@]}" "$2/cudacheck" instrument \
      --arch sm_90 --json $flags "$f" > "$3/instrument-$name-$key.json" 2> "$3/instrument-$name-$key.err" || true
  ' _ {} "$stage" "$out"
  echo "instrument: $(wc -l < "$list") files, $(( $(date +%s) - start )) s" | tee "$out/instrument-times.txt"
  rm -rf "$stage"
  ;;
coverage)
  python3 - "$@" <<'PY'
import glob, json, os, sys
groups = {}
for d in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(d, "instrument-*.json"))):
        group = os.path.basename(path)[len("instrument-"):].split("-", 1)[0]
        g = groups.setdefault(group, {"files": 0, "kernels": 0, "complete": 0, "failed": [], "why": {}})
        g["files"] += 1
        try:
            report = json.load(open(path))
        except ValueError:
            g["failed"].append((path, "no report (cut short or crashed)"))
            continue
        for f in report["files"]:
            if f.get("error"):
                g["failed"].append((f["path"], f["error"].strip().splitlines()[0][:200]))
            for k in f["kernels"]:
                g["kernels"] += 1
                if not k["unchecked"]:
                    g["complete"] += 1
                for u in k["unchecked"]:
                    why = str(u.get("reason", "?"))[:80]
                    g["why"][why] = g["why"].get(why, 0) + 1
print("| library | files | kernels | every access checked | files whose build failed |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, g in sorted(groups.items()):
    pct = 100.0 * g["complete"] / g["kernels"] if g["kernels"] else 0.0
    print("| %s | %d | %d | %d (%.1f%%) | %d |" % (name, g["files"], g["kernels"], g["complete"], pct, len(g["failed"])))
for name, g in sorted(groups.items()):
    for why, n in sorted(g["why"].items(), key=lambda x: -x[1]):
        print("- %s unchecked: %d accesses: %s" % (name, n, why))
    for path, why in g["failed"]:
        print("- %s FAILED %s: %s" % (name, path, why))
PY
  ;;
summary)
  python3 - "$@" <<'PY'
import glob, json, os, sys
rows, kernels = {}, {}
for d in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(d, "*-*.json"))):
        label, group = os.path.basename(path)[:-5].split("-", 1)
        try:
            report = json.load(open(path))
        except ValueError:
            rows.setdefault(label, []).append((group, None, "no report (the run was cut short)"))
            continue
        for f in report["files"]:
            ok = not f["error"] and len(f["kernels"]) > 0
            kernels[label] = kernels.get(label, 0) + len(f["kernels"])
            why = "" if ok else ((f["error"] or f.get("note") or "no kernels").strip().splitlines() or [""])[0]
            rows.setdefault(label, []).append((group, f["path"], why))
print("| NVRTC | files | compile, with kernels | kernels |")
print("| --- | ---: | ---: | ---: |")
for label in sorted(rows):
    files = [r for r in rows[label] if r[1]]
    ok = [r for r in files if not r[2]]
    print("| %s | %d | %d | %d |" % (label, len(files), len(ok), kernels.get(label, 0)))
for label in sorted(rows):
    bad = [r for r in rows[label] if r[2]]
    for group, path, why in bad:
        print("- %s %s %s: %s" % (label, group, path or "", why[:200]))
PY
  ;;
*)
  sed -n '2,18p' "$0"
  exit 2
  ;;
esac
