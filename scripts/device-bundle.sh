#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/device-bundle.sh [--no-search] - prepare .devbundle/, what a
# lent GPU machine needs besides the working tree to run
# scripts/device-check.sh (docs/GPU.md).  That machine has nvcc, cuBLAS
# and PyTorch but no Z3, MPICH or Check and reaches no package registry,
# so the bundle holds, in under 64 MiB (the tool's limit, the working
# tree included):
#   bin/mirsearch   a host build of this tree (--without-mpi, the library
#                   linked in statically), made in .devbundle-build/
#   lib/            the shared libraries it needs that are not the C and
#                   C++ runtimes (those the machine has, newer): libz3,
#                   libgomp, ...; device-check.sh puts them on
#                   LD_LIBRARY_PATH for mirsearch alone; and
#                   libmirsearch.so, the same build as a shared library,
#                   for the Python package (its torch.compile backend,
#                   the device check's `backend` step)
#   best/NAME.ugraph  the best µGraph of each of the 22 examples (published
#                   and small shapes): examples/best/NAME.ugraph when the
#                   tree has it (scripts/search-bests.sh), else searched
#                   here (--no-search: left out; device-check.sh then
#                   reports it MISSING)
#   rank/gqa/       8 of the 16 best candidates of a search of gqa
#                   (published shape), 4 from each group of equal
#                   predicted cost, and its report.json, for `bench --rank`
#                   (the cost model's order against measured time) and
#                   for the search step (the device's search must find
#                   the same 16 best)
#   MANIFEST, COMMIT  what was built from what, when, and the newest
#                   glibc/libstdc++ symbol versions it asks of the machine
# It fails when a library is left unresolved, or would come from the
# system without being a C or C++ runtime.  Both folders are ignored by git.  At the end it prints the `run` call
# that starts the check.  Exit 0 when the bundle is complete and fits.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$root/.devbundle
build=$root/.devbundle-build
search=1
for a in "$@"; do
  case $a in
  --no-search) search=0 ;;
  *) echo "usage: scripts/device-bundle.sh [--no-search]" >&2; exit 2 ;;
  esac
done
jobs=$(nproc 2>/dev/null || echo 2)

# ---------------------------------------------------------------- the build
# A copy of the working tree's files (tracked, and new ones git does not
# ignore), so the tree's own build, configured in place or not, is left
# alone; files unchanged since the last bundle keep their times, so make
# rebuilds only what changed.  A changed file gets the time of its copy,
# not its own: edited after the last bundle copied it but before that
# bundle compiled it, its own time is older than its object's, and make
# would keep the stale object.
rm -rf "$build/tree.new"
mkdir -p "$build/src" "$build/tree.new"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$build/tree.new"
(cd "$build/tree.new" && find . -type f) | while read -r f; do
  cmp -s "$build/tree.new/$f" "$build/src/$f" || { mkdir -p "$build/src/$(dirname "$f")"; cp "$build/tree.new/$f" "$build/src/$f"; }
done
rm -rf "$build/tree.new"
src=$build/src
log=$build/make.log
# Shared and static: the program links the static library
# (-static-libtool-libs, so it needs no libmirsearch.so beside it), the
# Python package loads the shared one.  A bundle build configured
# otherwise (an older bundle script) or at another commit is configured
# again: configure writes the commit into config.h (`mirsearch
# --version`'s git line), and the copy has no .git of its own.
cfg="--without-mpi -q"
head=$(cd "$root" && git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
{
  [ -x "$src/configure" ] || (cd "$src" && ./autogen.sh)
  if [ ! -f "$src/Makefile" ] || [ "$(cat "$build/configure.args" 2>/dev/null)" != "$cfg $head" ]; then
    (cd "$src" && ./configure $cfg) && echo "$cfg $head" >"$build/configure.args"
  fi
  make -C "$src" -j"$jobs" libmirsearch.la &&
    make -C "$src" -j"$jobs" src/mirsearch LDFLAGS=-static-libtool-libs
} >"$log" 2>&1 || { tail -n 30 "$log" >&2; echo "device-bundle.sh: the build failed ($log)" >&2; exit 3; }
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/best"
# Linked statically against libtool's libraries, src/mirsearch is the
# program itself, not a libtool wrapper.
if ! head -c 4 "$src/src/mirsearch" | grep -q 'ELF'; then
  echo "device-bundle.sh: $src/src/mirsearch is not a program (a libtool wrapper?)" >&2
  exit 3
fi
cp "$src/src/mirsearch" "$bundle/bin/mirsearch"
cp -L "$src/.libs/libmirsearch.so" "$bundle/lib/libmirsearch.so"
strip "$bundle/bin/mirsearch" 2>/dev/null || true
strip --strip-unneeded "$bundle/lib/libmirsearch.so" 2>/dev/null || true

# ---------------------------------------------------------------- libraries
# Every resolved dependency of the program and the shared library but the
# C/C++ runtime and the loader (what every Linux machine has).
system_lib() {
  case $(basename "$1") in
  libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libstdc++.so* | libgcc_s.so*) return 0 ;;
  esac
  return 1
}
for f in "$bundle/bin/mirsearch" "$bundle/lib/libmirsearch.so"; do
  ldd "$f" | awk '/=> \// {print $3}' | while read -r lib; do
    system_lib "$lib" || [ -f "$bundle/lib/$(basename "$lib")" ] || cp -L "$lib" "$bundle/lib/"
  done
done
# What the device must have: nothing unresolved with lib/ alone on the
# loader's path, and from the system only the runtimes above (at least
# the symbol versions printed in MANIFEST).
needs=$(LD_LIBRARY_PATH=$bundle/lib ldd "$bundle/bin/mirsearch" "$bundle"/lib/*.so* 2>&1)
if echo "$needs" | grep -q 'not found'; then
  echo "device-bundle.sh: unresolved libraries:" >&2
  echo "$needs" | grep 'not found' >&2
  exit 3
fi
outside=$(echo "$needs" | awk '/=> \// {print $3}' | grep -v "^$bundle/lib/" | sort -u |
  while read -r lib; do system_lib "$lib" || echo "$lib"; done)
if [ -n "$outside" ]; then
  echo "device-bundle.sh: needed from the system but not in the bundle:" $outside >&2
  exit 3
fi
# The newest glibc and libstdc++ symbol versions the bundle asks for (the
# device's Ubuntu 24.04 has glibc 2.39 and GCC 14's libstdc++).
symvers=$(objdump -T "$bundle/bin/mirsearch" "$bundle"/lib/*.so* 2>/dev/null |
  grep -o -E '\b(GLIBC|GLIBCXX|CXXABI)_[0-9.]+' | sort -u -t_ -k1,1 -k2,2V |
  awk -F_ '{v[$1] = $2} END {for (k in v) printf "%s_%s ", k, v[k]}')
LD_LIBRARY_PATH=$bundle/lib "$bundle/bin/mirsearch" --version >/dev/null

# ---------------------------------------------------------------- best µGraphs
missing=""
mkdir -p "$build/search"
for n in rmsnorm_linear gqa qknorm_attention lora gated_mlp ntrans mha mqa causal_attention gqa_safe mha_safe gqa_hd128; do
  for name in "$n" "${n}_small"; do
    if [ -f "$root/examples/best/$name.ugraph" ]; then
      cp "$root/examples/best/$name.ugraph" "$bundle/best/"
    elif [ -f "$build/search/$name/best.ugraph" ] &&
      cmp -s "$root/examples/$name.graph" "$build/search/$name/program.graph"; then
      # A search of an earlier bundle, of the same program.
      cp "$build/search/$name/best.ugraph" "$bundle/best/$name.ugraph"
    elif [ "$search" -eq 1 ]; then
      echo "device-bundle.sh: no examples/best/$name.ugraph: searching it (--threads=$jobs)" >&2
      rm -rf "$build/search/$name"
      if LD_LIBRARY_PATH=$bundle/lib nice "$bundle/bin/mirsearch" -q --threads="$jobs" --out="$build/search/$name" \
        "$root/examples/$name.graph" && [ -f "$build/search/$name/best.ugraph" ]; then
        cp "$build/search/$name/best.ugraph" "$bundle/best/$name.ugraph"
        cp "$root/examples/$name.graph" "$build/search/$name/program.graph"
      else
        missing="$missing $name"
      fi
    else
      missing="$missing $name"
    fi
  done
done

# ---------------------------------------------------------------- ranking input
# gqa's 16 best by the model.  The search is reused while its program and
# the program searching it are unchanged: the device check's search step
# compares its own results with these.
rank_out=$build/search/rank_gqa
rank_key=$(cat "$root/examples/gqa.graph" "$bundle/bin/mirsearch" | cksum | cut -d' ' -f1)
if [ ! -f "$rank_out/report.json" ] || [ "$(cat "$rank_out/key" 2>/dev/null)" != "$rank_key" ]; then
  echo "device-bundle.sh: searching gqa for the ranking input (--top=16)" >&2
  rm -rf "$rank_out"
  LD_LIBRARY_PATH=$bundle/lib nice "$bundle/bin/mirsearch" -q --threads="$jobs" --top=16 --out="$rank_out" "$root/examples/gqa.graph" &&
    echo "$rank_key" >"$rank_out/key" || missing="$missing rank/gqa"
fi
if [ -f "$rank_out/report.json" ]; then
  # 8 of them, as evenly as may be from each group of equal predicted
  # cost (gqa's 16 are two groups of 8), so the model's order has levels
  # to compare the measured one with; names keep their model rank.
  mkdir -p "$bundle/rank/gqa/candidates"
  cp "$rank_out/report.json" "$bundle/rank/gqa/"
  python3 - "$rank_out/report.json" 8 >"$build/rank_pick" <<'EOF' || ls "$rank_out/candidates" | head -n 8 | sed 's|^|candidates/|' >"$build/rank_pick"
import json, sys
r, k = json.load(open(sys.argv[1])), int(sys.argv[2])
groups = r.get("groups") or [{"first_rank": 1, "last_rank": len(r["results"])}]
files = {x["rank"]: x["file"] for x in r["results"]}
per = max(1, -(-k // len(groups)))
pick = [files[q] for g in groups for q in range(g["first_rank"], g["last_rank"] + 1)[:per] if q in files]
print("\n".join(pick[:k]))
EOF
  while read -r f; do cp "$rank_out/$f" "$bundle/rank/gqa/candidates/"; done <"$build/rank_pick"
fi

# ---------------------------------------------------------------- manifest
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -c 1)
echo "$commit${dirty:+ (with uncommitted changes)}" >"$bundle/COMMIT"
{
  echo "mirsearch device bundle of $commit${dirty:+ (with uncommitted changes)}, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
  LD_LIBRARY_PATH=$bundle/lib "$bundle/bin/mirsearch" --version 2>/dev/null | sed 's/^/  /' || true
  echo "needs from the system: the C and C++ runtimes, symbol versions up to: ${symvers:-unknown}"
  echo "files:"
  (cd "$bundle" && find . -type f ! -name MANIFEST | sort | while read -r f; do
    printf '  %-40s %10d\n' "$f" "$(stat -c %s "$f")"
  done)
} >"$bundle/MANIFEST"

# ---------------------------------------------------------------- size
size=$(du -sb "$bundle" | cut -f1)
tree=$(git -C "$root" ls-files -z 2>/dev/null | (cd "$root" && xargs -0 stat -c %s 2>/dev/null) | awk '{s += $1} END {print s + 0}')
untracked=$(git -C "$root" ls-files -z --others --exclude-standard 2>/dev/null | (cd "$root" && xargs -0 -r stat -c %s 2>/dev/null) | awk '{s += $1} END {print s + 0}')
total=$((size + tree + untracked))
awk -v b="$size" -v t="$total" 'BEGIN {
  printf "device-bundle.sh: .devbundle is %.1f MiB; with the working tree %.1f MiB of the 64 MiB a run carries\n",
         b / 1048576, t / 1048576 }'
status=0
if [ "$total" -ge $((64 * 1048576)) ]; then
  echo "device-bundle.sh: too large for the device tool (64 MiB)" >&2
  status=3
fi
if [ -n "$missing" ]; then
  echo "device-bundle.sh: no best µGraph for:$missing (device-check.sh reports them MISSING)" >&2
  status=1
fi
cat <<EOF

The device check, as one call of the device tool's \`run\` (from the root of
this checkout; about 9 minutes of the 15 a session is lent):
  command:   bash scripts/device-check.sh "\$OUT"
  carry:     [".devbundle"]
  timeout_s: 570
Every finished unit (example, program, thread count) is in the files the call
brings back, even when its timeout kills it. summary.txt ends with the follow-up
call for the units not done: copy this call's files into .devresume/ here (the
"here:" line), then make that call (--resume=.devresume, carry .devresume); on a
fresh machine as on the same one, it runs only what is left and its files hold
the tables of both calls, merged. Then copy the last call's tables (summary.txt,
runs.tsv, bench.tsv, bench.json, scaling.tsv, fingerprints.tsv, device.profile)
into a dated section of bench/RESULTS.md ("Device check log") with the device,
the commit ($commit) and the commands.
EOF
exit "$status"
