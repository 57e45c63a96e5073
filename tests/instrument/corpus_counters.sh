#!/usr/bin/env bash
# corpus_counters.sh ATOMX [PROGRAM...]
#
# The counters check (tools/counters_inst.cpp + tools/counters_anal.c:
# inline counters before every instruction and on every edge, beside a call
# per block) on corpus programs, through corpus/check.sh: every workload
# output of the instrumented program must equal the original's byte for
# byte, and any difference between the inline counts and the call path's
# (or between an instruction's count and its block's, or a block's and its
# out-edges') is a line on stderr, which fails the comparison.  Real code
# puts increments between every flag setter and its reader, so this is the
# check of analysis/FlagsLiveness on programs nobody here wrote.
# Default programs: gzip and muparser (C, and C++ with exceptions).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
atomx=${1:?usage: corpus_counters.sh ATOMX [PROGRAM...]}
shift
atomx=$(cd "$(dirname "$atomx")" && pwd)/$(basename "$atomx")
progs=("$@")
((${#progs[@]})) || progs=(gzip muparser)
export ATOMX_COUNTERS_STRICT=1 ATOMX_CHECK_TIMEOUT=${ATOMX_CHECK_TIMEOUT:-600}
rc=0
for p in "${progs[@]}"; do
  "$here/../../corpus/check.sh" --only "$p" --ignore 'counters.out*' -- \
    "$atomx" "$here/tools/counters_inst.cpp" "$here/tools/counters_anal.c" -q || rc=1
done
exit $rc
