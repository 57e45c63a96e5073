#!/usr/bin/env bash
# null_call.sh ATOMX PROG: PROG (null_call.c) traced prints what it prints
# untraced and exits with the same status (its own SIGSEGV handler ran),
# and `atomx regen` reads the trace.
set -uo pipefail
atomx=$1 prog=$2
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
"$prog" >"$w/plain.out"
plain=$?
"$atomx" trace -q --cache-dir "$w/cache" -o "$w/t" -- "$prog" >"$w/traced.out"
traced=$?
[[ $traced == "$plain" ]] || { echo "FAIL: traced, the program exited $traced, untraced $plain"; exit 1; }
cmp "$w/plain.out" "$w/traced.out" || { echo "FAIL: traced, the program printed otherwise:"; cat "$w/traced.out"; exit 1; }
"$atomx" regen "$w/t" --summary || { echo "FAIL: atomx regen refused the trace"; exit 1; }
echo "ok: exit status $traced, output as untraced"
