#!/usr/bin/env bash
# changed.sh ATOMX PROG: a trace of a copy of PROG, then the copy changed
# (one byte appended): `atomx regen` must refuse it with one clear line.
set -euo pipefail
atomx=$1 prog=$2
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cp "$prog" "$w/prog"
"$atomx" trace -q --cache-dir "$w/cache" -o "$w/t" -- "$w/prog" >/dev/null || true  # its own status
"$atomx" regen "$w/t" --summary >/dev/null
printf '\0' >>"$w/prog"
if "$atomx" regen "$w/t" --summary >"$w/out" 2>"$w/err"; then echo "FAIL: regen accepted a changed program"; exit 1; fi
cat "$w/err"
[[ $(wc -l <"$w/err") == 1 ]] && grep -q "has changed since it was traced" "$w/err" || { echo "FAIL: not the expected message"; exit 1; }
echo PASS
