#!/usr/bin/env bash
# merge_single.sh ATOMX PROG [ARGS...]: PROG (one thread; @WORK@ in ARGS is a
# scratch directory) traced, and `atomx regen --merge` of its trace must exit
# 0 (every mark tied to its call: docs/trace.md, "Ordering threads and
# processes") and equal `atomx regen` byte for byte.  Prints PASS, or FAIL
# and the first line that differs (exit 1).
set -euo pipefail
atomx=$1
shift
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
args=()
for a in "$@"; do args+=("${a//@WORK@/$w}"); done
"$atomx" trace -q -o "$w/t" -- "${args[@]}" >/dev/null
"$atomx" regen -q "$w/t" >"$w/alone"
if ! "$atomx" regen -q "$w/t" --merge >"$w/merged" 2>"$w/err"; then
  echo "FAIL: atomx regen --merge failed: $(grep -v '^threads ' "$w/err" | head -3)"
  exit 1
fi
if ! cmp -s "$w/alone" "$w/merged"; then
  line=$( (cmp "$w/alone" "$w/merged" || true) | sed -n 's/.* line \([0-9]*\).*/\1/p')
  echo "FAIL: the merged trace differs from regen at line ${line:-?}: '$(sed -n "${line:-1}p" "$w/merged")' merged," \
       "'$(sed -n "${line:-1}p" "$w/alone")' alone"
  exit 1
fi
echo "PASS: $(grep -c . "$w/alone") lines, merged equal to regen"
