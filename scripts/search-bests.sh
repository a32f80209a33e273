#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate examples/best/: the best µGraph the search finds for each of
# the 8 published examples, causal_attention, gqa_safe, mha_safe and
# gqa_hd128, at its published shape
# (NAME.ugraph) and at its small shape (NAME_small.ugraph).
# tests/ptx_static.sh reads the published
# ones; rerun this after a change to the search space or the cost model
# (the best may change), and commit the files it writes.
#
#   scripts/search-bests.sh [NAME...]
#
# Default: all 12 examples.  One search at a time (a published-shape search
# takes up to ~80 CPU s), each in a private temporary --out directory, its
# best.ugraph copied into place only when the search succeeds.  MIRSEARCH
# picks the binary (default src/mirsearch), THREADS its --threads (default:
# the library's default).  Exit 0 when every search wrote a best.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MIRSEARCH:-$top/src/mirsearch}
names=${*:-gated_mlp gqa lora mha mqa ntrans qknorm_attention rmsnorm_linear causal_attention gqa_safe mha_safe gqa_hd128}
[ -x "$bin" ] || { echo "search-bests: $bin is not built (make first)" >&2; exit 2; }
mkdir -p "$top/examples/best"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_bests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
threads=""
[ -n "${THREADS:-}" ] && threads="--threads=$THREADS"
rc=0
for name in $names; do
  for variant in "$name" "${name}_small"; do
    src="$top/examples/$variant.graph"
    [ -f "$src" ] || { echo "search-bests: no $src" >&2; rc=1; continue; }
    out="$tmp/$variant.out"
    start=$(date +%s)
    # The example's own options (its `# options:` comment line, if any).
    exopts=$(sed -n 's/^# options: *//p' "$src" | head -n 1)
    # shellcheck disable=SC2086 # $threads and $exopts are lists of options
    if "$bin" -q $threads $exopts --out="$out" "$src" >"$tmp/$variant.log" 2>&1 &&
      [ -s "$out/best.ugraph" ]; then
      cp "$out/best.ugraph" "$top/examples/best/$variant.ugraph.tmp" &&
        mv -f "$top/examples/best/$variant.ugraph.tmp" "$top/examples/best/$variant.ugraph"
      echo "search-bests: $variant: examples/best/$variant.ugraph ($(($(date +%s) - start)) s)"
    else
      echo "search-bests: $variant: the search failed:" >&2
      head -20 "$tmp/$variant.log" >&2
      rc=1
    fi
    rm -rf "$out"
  done
done
exit $rc
