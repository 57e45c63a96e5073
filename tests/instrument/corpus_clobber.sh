#!/usr/bin/env bash
# corpus_clobber.sh ATOMX [PROGRAM...]
#
# The clobber tool (tools/clobber_inst.cpp + tools/clobber_anal.c: an
# analysis routine that clobbers everything a C function may, before every
# instruction and after every one control comes back to) on corpus programs,
# through corpus/check.sh: every workload output of the instrumented program
# must equal the original's byte for byte.  Needs the corpus (corpus/build.sh).
# Default programs: gzip and lzip (C and C++ with exceptions); gzip takes
# seconds, lzip more than ten minutes (every call also runs vector loops).
# Environment: ATOMX_CLOBBER_PERIOD (default 256): the expensive clobbers
# (64 KiB memcpy, stdio, malloc) run on every Nth call only, the rest on
# every call; ATOMX_CLOBBER_STRIDE=K (default 8) instruments every Kth
# procedure only, from ATOMX_CLOBBER_OFFSET (default 0; run with 0..K-1 to
# cover all); ATOMX_CHECK_TIMEOUT (default here 3600 s per workload run: bzip2 alone takes 12 minutes on a quiet machine).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
atomx=${1:?usage: corpus_clobber.sh ATOMX [PROGRAM...]}
shift
atomx=$(cd "$(dirname "$atomx")" && pwd)/$(basename "$atomx")
progs=("$@")
((${#progs[@]})) || progs=(gzip lzip)
export ATOMX_CLOBBER_PERIOD=${ATOMX_CLOBBER_PERIOD:-256}
export ATOMX_CLOBBER_STRIDE=${ATOMX_CLOBBER_STRIDE:-8} ATOMX_CLOBBER_OFFSET=${ATOMX_CLOBBER_OFFSET:-0}
export ATOMX_CHECK_TIMEOUT=${ATOMX_CHECK_TIMEOUT:-3600}
rc=0
for p in "${progs[@]}"; do
  "$here/../../corpus/check.sh" --only "$p" -- "$atomx" "$here/tools/clobber_inst.cpp" "$here/tools/clobber_anal.c" -q || rc=1
done
exit $rc
