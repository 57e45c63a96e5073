#!/usr/bin/env bash
# analyze.jobs_identical: the analyser slot's promise (include/atomx/
# analyzer.hpp) that results do not depend on how many shards run at once.
# Traces PROG ARGS, then runs several analysers over the trace with -j1,
# -j2 and -j3 (`atomx analyze`) and `atomx regen` (text, blocks, counts,
# cachegrind, binary) with -j1 and -j2, and compares every output byte for
# byte.  The trace must have at least two threads' streams whose sizes do
# not fall with the thread id, so that the longest-first schedule of -j2
# finishes shards out of stream order.
#
#   analyze_jobs.sh ATOMX PROG [ARGS...]
#
# With ATOMX_TEST_SHARD_ORDER=schedule (the must-fail twin) the runner
# merges the shards in the order it scheduled them, not in stream order:
# this check must then fail.
set -euo pipefail
atomx=$1
shift
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t"
# Fixed input data for the program (a program reading a file reads data.txt).
awk 'BEGIN { x = 7; for (i = 0; i < 2500; i++) { line = ""; for (k = 0; k < 12; k++) { x = (x * 16807) % 2147483647;
     line = line sprintf("%x ", x % 65536) } print line } }' >data.txt
# The program's exit status is its own (tls_threads exits 6 on purpose).
native=0
"$@" >native.out || native=$?
traced=0
"$atomx" trace -q -o trace -- "$@" >prog.out || traced=$?
((traced == native)) || { echo "analyze_jobs: traced exit status $traced, native $native" >&2; exit 1; }
cmp -s native.out prog.out || { echo "analyze_jobs: the traced program's output differs from native" >&2; exit 1; }
streams=$(ls trace | grep -c '\.axt$' || true)
((streams >= 2)) || { echo "analyze_jobs: the trace has $streams stream(s); it needs two or more" >&2; exit 1; }
tools=counts=counts.J,cachegrind=cg.J,procs=procs.J,threads=threads.J,summary=summary.J,blocks=blocks.J,binary=bin.J
for j in 1 2 3; do
  "$atomx" analyze trace -j$j --tool "${tools//.J/.$j}"
done
for j in 1 2; do
  "$atomx" regen trace -j$j >text.$j 2>text.err.$j
  "$atomx" regen trace -j$j --blocks >rblocks.$j 2>/dev/null
  "$atomx" regen trace -j$j --counts --cachegrind-out rcg.$j --binary rbin.$j >rcounts.$j 2>/dev/null
done
failed=0
for f in counts cg procs threads summary blocks bin; do
  for j in 2 3; do
    cmp -s $f.1 $f.$j || { echo "analyze_jobs: $f differs between -j1 and -j$j" >&2; failed=1; }
  done
  [ -s $f.1 ] || { echo "analyze_jobs: $f is empty" >&2; failed=1; }
done
for f in text text.err rblocks rcg rbin rcounts; do
  cmp -s $f.1 $f.2 || { echo "analyze_jobs: regen's $f differs between -j1 and -j2" >&2; failed=1; }
done
# The outputs of analyze and regen are the same analysers.
cmp -s counts.1 rcounts.1 || { echo "analyze_jobs: analyze's counts differ from regen --counts" >&2; failed=1; }
cmp -s blocks.1 rblocks.1 || { echo "analyze_jobs: analyze's blocks differ from regen --blocks" >&2; failed=1; }
# Every thread's stream is a row of the threads table, complete.
rows=$(grep -c ' complete$' threads.1 || true)
((rows == streams)) || { echo "analyze_jobs: $rows complete thread rows for $streams streams" >&2; failed=1; }
((failed == 0)) || exit 1
echo "analyze_jobs: $streams streams; 7 analysers identical with -j1, -j2, -j3; regen's 6 outputs identical with -j1, -j2"
