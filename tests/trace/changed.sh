#!/usr/bin/env bash
# changed.sh ATOMX PROG: a trace of a copy of PROG, then the copy changed
# (one byte appended): `atomx regen` must refuse it with one clear line;
# given a saved copy of the traced file (--program), regen, analyze and
# melt read the trace as before; given another file, they refuse it.
set -euo pipefail
atomx=$1 prog=$2
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cp "$prog" "$w/prog"
"$atomx" trace -q --cache-dir "$w/cache" -o "$w/t" -- "$w/prog" >/dev/null || true  # its own status
"$atomx" regen "$w/t" --blocks >"$w/before" 2>/dev/null
cp "$prog" "$w/saved"
printf '\0' >>"$w/prog"
if "$atomx" regen "$w/t" --summary >"$w/out" 2>"$w/err"; then echo "FAIL: regen accepted a changed program"; exit 1; fi
cat "$w/err"
[[ $(wc -l <"$w/err") == 1 ]] && grep -q "has changed since it was traced" "$w/err" || { echo "FAIL: not the expected message"; exit 1; }
"$atomx" regen "$w/t" --blocks --program "$w/saved" >"$w/after" 2>/dev/null
cmp -s "$w/before" "$w/after" || { echo "FAIL: regen --program SAVED differs from regen before the change"; exit 1; }
"$atomx" analyze "$w/t" --tool summary --program "$w/saved" >/dev/null || { echo "FAIL: analyze --program"; exit 1; }
"$atomx" melt "$w/t" --program "$w/saved" --top 2 >/dev/null || { echo "FAIL: melt --program"; exit 1; }
if "$atomx" regen "$w/t" --summary --program "$w/prog" >"$w/out" 2>"$w/err"; then echo "FAIL: --program accepted another file"; exit 1; fi
cat "$w/err"
grep -q "is not the program this trace was recorded from" "$w/err" || { echo "FAIL: not the expected message"; exit 1; }
echo PASS
