#!/usr/bin/env bash
# Every publishable crate as crates.io would receive it, and its docs as docs.rs would build them:
#   1. `cargo publish --workspace --dry-run`: packages each crate (its `include` list only), then
#      builds each from its package alone, in dependency order, against the packages before it
#      (a local registry that stands in for crates.io). cudacheck-cli's build script builds the
#      interposer from cudacheck-run's package there (cudacheck-cli/build.rs), as it does for
#      `cargo install cudacheck-cli`: CUDACHECK_PRELOAD_SO is unset for it.
#   2. each library crate's docs with docs.rs's settings ([package.metadata.docs.rs] features,
#      DOCS_RS=1, no CUDA) and warnings as errors.
# One line per check, then "publish: N passed, N failed" (scripts/test.sh counts it).
#
# Usage: scripts/publish-check.sh (no CUDA needed; crates.io's index is read, nothing uploaded)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="$root/target/publish" CARGO_INCREMENTAL=0
# These builds only prove that the packages compile: no debug info (a third of the time and
# most of the disk).
export CARGO_PROFILE_DEV_DEBUG=false
unset CUDACHECK_PRELOAD_SO
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
passed=0 failed=0 listed=""
result() { # ok|FAILED, what
  printf 'publish-check: %-56s %s\n' "$2" "$1"
  if [ "$1" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

crates="$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
m = json.load(sys.stdin)
for p in m["packages"]:
    if p["publish"] != []:
        print(p["name"])
')" || { echo "publish-check: cargo metadata failed" >&2; exit 2; }

printf '\n----- publish-check: cargo publish --workspace --dry-run -----\n'
# Cargo unpacks the local registry's packages once per version under
# $CARGO_HOME/registry/src/-<hash>/ and never again, and takes a registry crate's build as fresh
# by its version: a package of an earlier run would be compiled instead of today's. Those
# copies (never crates.io's) and what was built from them go first.
rm -rf "$cargo_home"/registry/src/-*/cudacheck* "$cargo_home"/registry/cache/-*/cudacheck* \
  "$CARGO_TARGET_DIR"/debug/.fingerprint/cudacheck* "$CARGO_TARGET_DIR"/debug/build/cudacheck* 2>/dev/null
start=$SECONDS
# --allow-dirty: scripts/test.sh runs in working trees too; CI's clone is clean anyway.
cargo publish --workspace --dry-run --allow-dirty 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "(cargo publish --dry-run took $((SECONDS - start)) s)"
# A crate passes when its verification build finished: "Verifying NAME" followed by "Finished"
# before the next "Verifying". Cargo stops at the first failure: the crates after it are not
# verified. Listed in the order cargo packaged them (dependencies first).
verified="$(awk '$1 == "Verifying" { n = $2 } $1 == "Finished" && n != "" { print n; n = "" }' "$log")"
reached="$(awk '$1 == "Verifying" { print $2 }' "$log")"
order="$(awk '$1 == "Packaging" { print $2 }' "$log")"
for c in $order $crates; do
  grep -qx "$c" <<<"$listed" && continue
  listed+="$c"$'\n'
  if [ "$rc" -eq 0 ] || grep -qx "$c" <<<"$verified"; then
    result ok "$c packaged and built from its package"
  elif grep -qx "$c" <<<"$reached"; then
    result FAILED "$c packaged and built from its package"
  else
    result FAILED "$c not verified (see the error above)"
  fi
done
# A failure after every build (none so far): still one.
[ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || result FAILED "cargo publish --workspace --dry-run (exit $rc)"

printf '\n----- publish-check: docs as docs.rs builds them -----\n'
cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
m = json.load(sys.stdin)
for p in m["packages"]:
    if p["publish"] == [] or not any("lib" in t["kind"] or "proc-macro" in t["kind"] for t in p["targets"]):
        continue
    docs = ((p.get("metadata") or {}).get("docs") or {}).get("rs") or {}
    print(p["name"], ",".join(docs.get("features", [])) or "-")
' >"$log" || { echo "publish-check: cargo metadata failed" >&2; exit 2; }
start=$SECONDS
# The workspace's profile builds dependencies optimized; the packages above were built without
# it. The same settings here share their build scripts' runs and proc macros.
profile=(--config 'profile.dev.package."*".opt-level=0')
while read -r crate features; do
  args=(-p "$crate")
  [ "$features" = - ] || args+=(--features "$features")
  if DOCS_RS=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" \
    cargo doc -q --no-deps "${profile[@]}" "${args[@]}"; then
    result ok "$crate docs (DOCS_RS=1, features: $features)"
  else
    result FAILED "$crate docs (DOCS_RS=1, features: $features)"
  fi
done <"$log"
echo "(docs took $((SECONDS - start)) s)"

echo "publish: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
