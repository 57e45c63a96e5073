#!/usr/bin/env bash
# cli.progress: regen, analyze, melt and cachesim show a progress line on a terminal
# (script(1) gives them one), and none with -q or when stderr is not a
# terminal.
#   progress.sh ATOMX PROG
set -euo pipefail
atomx=$1 prog=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$atomx" trace -q -o "$t/trace" -- "$prog" >/dev/null 2>&1 || true
echo "I1 size=4K assoc=4 line=64" >"$t/i1.cache"
for cmd in "regen $t/trace --summary" "analyze $t/trace --tool procs" "melt $t/trace --top 2" \
           "cachesim $t/trace --config $t/i1.cache"; do
  name=${cmd%% *}
  script -qec "$atomx $cmd" /dev/null >"$t/tty" 2>&1 || fail "$cmd failed on a terminal"
  grep -q "atomx: $name: " "$t/tty" || fail "$cmd: no progress line on a terminal: $(head -c 300 "$t/tty")"
  script -qec "$atomx $cmd -q" /dev/null >"$t/quiet" 2>&1 || fail "$cmd -q failed"
  ! grep -q "atomx: $name: " "$t/quiet" || fail "$cmd -q: a progress line"
  $atomx $cmd >"$t/out" 2>"$t/err" || fail "$cmd failed"
  ! grep -q "atomx: $name: " "$t/err" || fail "$cmd: a progress line when stderr is a file"
done
echo PASS
