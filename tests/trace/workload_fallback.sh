#!/usr/bin/env bash
# workload_fallback.sh ATOMX PROG [ARGS...]: `atomx trace -f` run under
# `strace -f` (ATOMX_TEST_FALLBACK_TRACER, default "strace -f -qq -o
# /dev/null"), where atomx cannot ptrace its child: it must say so on
# stderr, trace PROG alone (a manifest of one program), regenerate it whole,
# and leave the workload's output and status as native.  The must-fail
# twin sets ATOMX_TEST_FALLBACK_TRACER=env (no tracer): atomx then follows
# the workload, and the check must name the missing note.
set -euo pipefail
atomx=$1
shift
tracer=${ATOMX_TEST_FALLBACK_TRACER:-strace -f -qq -o /dev/null}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
status=0
"$@" >"$w/native.out" 2>"$w/native.err" || status=$?
traced=0
$tracer "$atomx" trace -f --cache-dir "$w/cache" -o "$w/t" -- "$@" >"$w/traced.out" 2>"$w/traced.err" || traced=$?
fail=0
[[ $traced == "$status" ]] || { echo "FAIL status $traced traced, $status native"; fail=1; }
cmp -s "$w/native.out" "$w/traced.out" || { echo "FAIL the output differs from native"; fail=1; }
grep -q "cannot follow the command's processes (ptrace: Operation not permitted" "$w/traced.err" ||
  { echo "FAIL no fallback note on stderr:"; sed 's/^/  /' "$w/traced.err"; fail=1; }
if grep -q '^program-2 ' "$w/t/manifest"; then echo "FAIL the trace holds more than the named program"; fail=1; fi
"$atomx" regen "$w/t" --summary >"$w/summary" || { echo "FAIL atomx regen exited $?"; fail=1; }
grep -q ' incomplete-threads 0' "$w/summary" || { echo "FAIL: $(cat "$w/summary")"; fail=1; }
((fail == 0)) && echo "PASS fallback under '$tracer': $(cat "$w/summary")"
exit $fail
