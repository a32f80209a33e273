#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/run_limits.sh - `mirsearch run` is bounded: --time-limit stops it,
# and so do SIGTERM and SIGINT, and in every case the child's whole
# process group (a compiler, the generated program and anything they
# started) is killed and the temporary directory is removed.  The child
# is a stand-in compiler (--codegen-cxx) that starts a grandchild and
# never finishes, so the test needs no slow µGraph.
#
# Run by `make check` with top_srcdir and top_builddir set.
# Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
[ -x "$prog" ] || { echo "run_limits.sh: $prog not built" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_run_limits.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() {
  echo "FAIL: $1" >&2
  [ -f "$tmp/err" ] && echo "  stderr: $(head -c 400 "$tmp/err")" >&2
  failures=$((failures + 1))
}

# The stand-in compiler: records its grandchild's pid, then waits forever.
cat >"$tmp/slowcc" <<'CC'
#!/bin/sh
echo $$ >"$MIRS_TEST_PIDFILE.cc"
sleep 300 &
echo $! >"$MIRS_TEST_PIDFILE"
while :; do sleep 1; done
CC
chmod +x "$tmp/slowcc"
mkdir "$tmp/t"
ex=$top_srcdir/examples/rmsnorm_linear_small.ugraph

# check WHAT START: the run ended within 20 s of START, no process of its
# group is left and its temporary directory is gone.
check() {
  [ $(($(date +%s) - $2)) -le 20 ] || fail "$1: took $(($(date +%s) - $2)) s"
  gp=$(cat "$tmp/pid" 2>/dev/null)
  if [ -z "$gp" ]; then
    fail "$1: the stand-in compiler did not start"
  else
    sleep 0.2
    state=$(ps -o stat= -p "$gp" 2>/dev/null)
    case $state in "" | Z*) ;; *) false ;; esac || { fail "$1: the child's child (pid $gp) is still running"; kill "$gp"; }
  fi
  cc=$(cat "$tmp/pid.cc" 2>/dev/null)
  if [ -n "$cc" ] && kill -0 "$cc" 2>/dev/null && ! ps -o stat= -p "$cc" | grep -q Z; then
    fail "$1: the child (pid $cc) is still running"
    kill "$cc"
  fi
  [ -z "$(ls "$tmp/t")" ] || fail "$1: the temporary directory is left: $(ls "$tmp/t")"
  rm -f "$tmp/pid" "$tmp/pid.cc"
}

t0=$(date +%s)
TMPDIR=$tmp/t MIRS_TEST_PIDFILE=$tmp/pid timeout -s KILL 60 "$prog" run --codegen-cxx="$tmp/slowcc" --time-limit=1 "$ex" \
  >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 3 ] || fail "--time-limit: exit $st, expected 3"
grep -q 'time limit' "$tmp/err" || fail "--time-limit: the message does not name the time limit"
check "--time-limit" $t0

for sig in TERM INT; do
  t0=$(date +%s)
  TMPDIR=$tmp/t MIRS_TEST_PIDFILE=$tmp/pid "$prog" run --codegen-cxx="$tmp/slowcc" "$ex" \
    >/dev/null 2>"$tmp/err" &
  pid=$!
  n=0
  while [ ! -s "$tmp/pid" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  kill -s $sig $pid
  wait $pid
  st=$?
  [ $st -ne 0 ] && [ $st -lt 128 ] || fail "SIG$sig: exit $st (expected a stop status, not death by the signal)"
  check "SIG$sig" $t0
done

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
