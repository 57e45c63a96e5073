#!/bin/sh
# threads_identical.sh ATOMX PROG... [-- TOOL...]: the rewritten file is
# byte-identical whether the rewrite runs on 1 thread or on 4 (ATOMX_THREADS,
# support/Parallel.h; with it set, even a small program's procedures are
# split, one at a time).  With tools, each PROG is also rewritten with each
# `-T TOOL`: their inserted code is emitted on several threads too.
set -eu
atomx=$1; shift
progs=""; tools=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do progs="$progs $1"; shift; done
[ $# -gt 0 ] && shift && tools="$*"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
for prog in $progs; do
  for tool in none $tools; do
    set --; [ "$tool" = none ] || set -- -T "$tool"
    # One output name for both runs: a tool's data names the program it wrote.
    for n in 1 4; do ATOMX_THREADS=$n "$atomx" "$prog" "$@" -o "$tmp/out" -q; mv "$tmp/out" "$tmp/out$n"; done
    if cmp -s "$tmp/out1" "$tmp/out4"; then echo "PASS $prog $*: same bytes with 1 and 4 threads"
    else echo "FAIL $prog $*: 1 and 4 threads differ: $(cmp "$tmp/out1" "$tmp/out4" 2>&1 | head -1)"; status=1; fi
  done
done
exit $status
