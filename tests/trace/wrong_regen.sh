#!/usr/bin/env bash
# wrong_regen.sh ARGS...: atomx ($ATOMX_REAL), wrong in the `atomx regen` runs
# whose arguments hold $WRONG_REGEN_ON and right in every other run, so that
# the rest of regen_oracle.py passes and the half under test alone must fail:
#   WRONG_REGEN_DROP=N   one block less (ATOMX_TEST_REGEN_DROP=N): with
#                        WRONG_REGEN_ON=--counts the callgrind half fails
#                        (trace.fails.callgrind), with --cachegrind-out the
#                        cachegrind half (trace.fails.cachegrind);
#   WRONG_REGEN_MOVE=1   with WRONG_REGEN_ON=--cachegrind-out: the second
#                        source line's cost of the file's first function
#                        moved to its first line, the function's total
#                        unchanged (trace.fails.cachegrind_lines).
set -euo pipefail
on=0
out=
prev=
for a in "$@"; do
  [ "$a" = "${WRONG_REGEN_ON:?}" ] && on=1
  [ "$prev" = --cachegrind-out ] && out=$a
  prev=$a
done
if [ "$on" = 0 ]; then exec "${ATOMX_REAL:?}" "$@"; fi
if [ -n "${WRONG_REGEN_DROP:-}" ]; then exec env ATOMX_TEST_REGEN_DROP="$WRONG_REGEN_DROP" "${ATOMX_REAL:?}" "$@"; fi
"${ATOMX_REAL:?}" "$@"
[ "${WRONG_REGEN_MOVE:-}" = 1 ] && [ -n "$out" ] || exit 0
awk '
  /^fn=/ && n == 1 && !done { print held }             # a function of one line: left as it is
  /^fn=/ && !done { infn = 1; n = 0 }
  infn && !done && /^[0-9]/ {
    if (++n == 1) { held = $0; line = $1; cost = $2; next }
    print line, cost + $2; done = 1; next
  }
  { print }' "$out" >"$out.moved"
mv "$out.moved" "$out"
