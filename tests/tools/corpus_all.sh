#!/usr/bin/env bash
# corpus_all.sh ATOMX [--tools a,b,...] [PROGRAM...]
#
# Every shipped tool (or those given) on the gcc -O2 variant of every corpus
# program (or those given), through corpus/check.sh: the instrumented
# program's stdout, stderr, exit status and files must equal the original's;
# the tool's own output files (NAME.*: .out, .json, .html, .cg; btaken.out*,
# callgrind.out.atomx-*) are not compared.  Whether the tool's numbers are
# right is each tool's oracle test (tests/tools/NAME).  Needs the corpus
# (corpus/build.sh).  Prints one PASS/FAIL line per tool and program; exit
# status 1 if any failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
atomx=${1:?usage: corpus_all.sh ATOMX [--tools a,b,...] [PROGRAM...]}
shift
atomx=$(cd "$(dirname "$atomx")" && pwd)/$(basename "$atomx")
tools=()
if [[ ${1:-} == --tools ]]; then
  IFS=, read -r -a tools <<<"${2:?--tools needs a comma-separated list}"
  shift 2
fi
if ((${#tools[@]} == 0)); then
  share=$(dirname "$atomx")/../share/atomx/tools
  for d in "$share"/*/; do tools+=("$(basename "$d")"); done
fi
progs=("$@")
((${#progs[@]})) || progs=(gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser bc)

# A tool may slow a workload well past check.sh's 60 s (a cache simulation
# runs 10-30x native); this test is about output, not speed.
export ATOMX_CHECK_TIMEOUT=${ATOMX_CHECK_TIMEOUT:-300}
failed=0
for t in "${tools[@]}"; do
  for p in "${progs[@]}"; do
    out=$("$root/corpus/check.sh" --only "$p-gcc-O2" --ignore "$t.*" \
            --ignore 'btaken.out*' --ignore 'callgrind.out.atomx*' -- "$atomx" -T "$t" 2>&1)
    if grep -q '^PASS ' <<<"$out"; then echo "PASS $t $p"
    else
      echo "FAIL $t $p"
      sed 's/^/    /' <<<"$out" | head -40
      failed=1
    fi
  done
done
exit $failed
