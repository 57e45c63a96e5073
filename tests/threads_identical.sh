#!/bin/sh
# threads_identical.sh ATOMX PROG...: the rewritten file is byte-identical
# whether analysis runs on 1 thread or on 4 (ATOMX_THREADS, support/Parallel.h;
# with it set, even a small program's procedures are split, one at a time).
set -eu
atomx=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
for prog in "$@"; do
  for n in 1 4; do ATOMX_THREADS=$n "$atomx" "$prog" -o "$tmp/out$n" -q; done
  if cmp -s "$tmp/out1" "$tmp/out4"; then echo "PASS $prog: same bytes with 1 and 4 threads"
  else echo "FAIL $prog: 1 and 4 threads differ: $(cmp "$tmp/out1" "$tmp/out4" 2>&1 | head -1)"; status=1; fi
done
exit $status
