#!/usr/bin/env bash
# slices_oracle.sh ATOMX PROG [--workload SCRIPT] [ARGS...]
#
# Proves analysis::DataSlices exact on one run of PROG: the table of `atomx
# dump --slices --table PROG` drives an instrumentation (slices_inst.cpp,
# slices_anal.cpp) that keeps shadow registers holding only what the
# regenerator would know, and compares every memory operand's computed
# address with the real one.  The program runs with ARGS, or, with
# --workload SCRIPT, SCRIPT runs in an empty directory with the program as
# its argument (corpus/workloads/NAME.sh); the original program runs the
# same way, and its output (stdout, stderr, exit status, files) must be the
# instrumented one's.  Prints one line per process and the totals; exit 0
# when no reference mismatched, no frame was lost and some were checked.
# ATOMX_SLICES_BREAK=drop|emu (slices_inst.cpp) breaks the analysis on
# purpose: the must-fail twins.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
atomx=${1:?usage: slices_oracle.sh ATOMX PROG [--workload SCRIPT] [ARGS...]}
prog=${2:?usage: slices_oracle.sh ATOMX PROG [--workload SCRIPT] [ARGS...]}
shift 2
workload=
if [[ ${1:-} == --workload ]]; then workload=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2; fi
atomx=$(cd "$(dirname "$atomx")" && pwd)/$(basename "$atomx")
prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
dir=$(mktemp -d /tmp/atomx-slices.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# The instrumented program has the original's name (programs print it).
mkdir -p "$dir/inst"
inst=$dir/inst/$(basename "$prog")
"$atomx" dump --slices --table "$prog" >"$dir/table" || { echo "slices oracle: atomx dump --slices failed"; exit 1; }
"$atomx" dump --slices "$prog" | tail -1
ATOMX_SLICES_TABLE="$dir/table" ATOMX_SLICES_REPORT="$dir/report" "$atomx" "$prog" "$here/slices_inst.cpp" "$here/slices_anal.cpp" \
  --cflags "-I$root/src -mgeneral-regs-only -fno-jump-tables" -o "$inst" >"$dir/rewrite.log" 2>&1 \
  || { cat "$dir/rewrite.log"; echo "slices oracle: the rewrite failed"; exit 1; }

# run NAME BINARY: the run's output in $dir/NAME.out, its files in $dir/NAME/
# (the report goes where the rewrite was told: $dir/report).
args=("$@")
run() {
  mkdir -p "$dir/$1"
  if [[ -n $workload ]]; then
    (cd "$dir/$1" && bash "$workload" "$2") >"$dir/$1.out" 2>&1
  else
    (cd "$dir/$1" && "$2" "${args[@]}") >"$dir/$1.out" 2>&1
  fi
  echo "exit $?" >>"$dir/$1.out"
}
run native "$prog"
run slices "$inst"
status=0
sed -i "s|$inst|$prog|g" "$dir/slices.out"  # (a program that prints its whole path)
if ! diff -q "$dir/native.out" "$dir/slices.out" >/dev/null; then
  echo "slices oracle: the output differs:"; diff "$dir/native.out" "$dir/slices.out" | head -20; status=1
fi
if ! diff -r -q "$dir/native" "$dir/slices" >/dev/null; then
  echo "slices oracle: the files differ:"; diff -r -q "$dir/native" "$dir/slices" | head; status=1
fi
[[ -f $dir/report ]] || { echo "slices oracle: no report written"; exit 1; }
cat "$dir/report"
awk -v name="$(basename "$prog")" '
  /^slices:/ { n++; s += $8; c += $10; r += $12; m += $14; l += $16; o += $18 }
  END {
    printf "slices oracle: %s: %d processes, references checked %.0f (static %.0f, computed %.0f), recorded %.0f, mismatches %.0f, lost frames %.0f\n",
           name, n, s + c, s, c, r, m, l
    exit (m || l || o || s + c == 0) ? 1 : 0
  }' "$dir/report" || status=1
exit $status
