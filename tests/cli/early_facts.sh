#!/usr/bin/env bash
# early_facts.sh ATOMX PROG
#
# The run-time queries of <atomx/facts.h> asked from a constructor of the
# analysis object, before the runtime hands the facts over (issue: a tool
# sized a table there by AtomxProcCount() and got 0): refused loudly, the
# query named and the process aborted; asked at program start, the same
# query answers as many procedures as atomx moved (its own summary line).
set -euo pipefail
atomx=$1 prog=$2
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$atomx" "$prog" "$here/early_facts_inst.cpp" "$here/early_facts_anal.c" -o "$t/p.atom" 2>"$t/rewrite"
moved=$(sed -n 's/.*: moved \([0-9]*\) of [0-9]* procedures.*/\1/p' "$t/rewrite")
"$t/p.atom" >/dev/null 2>"$t/late" || true
grep -qx "procs at start: $moved" "$t/late" || { echo "FAIL: at program start: $(cat "$t/late"), atomx moved $moved procedures"; exit 1; }
set +e
EARLY=1 "$t/p.atom" >/dev/null 2>"$t/early"
rc=$?
set -e
((rc == 134)) || { echo "FAIL: a query in a constructor: exit status $rc, not 134 (SIGABRT)"; cat "$t/early"; exit 1; }
grep -q "atomx: AtomxProcCount() was called while the analysis object loads (from a constructor)" "$t/early" ||
  { echo "FAIL: no message naming the query: $(cat "$t/early")"; exit 1; }
grep -q "procs in a constructor" "$t/early" && { echo "FAIL: the constructor's query answered"; exit 1; }
echo "PASS: at program start AtomxProcCount() = $moved; from a constructor refused (status 134, the query named)"
