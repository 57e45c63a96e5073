#!/usr/bin/env bash
# wrong_rewrite.sh ARGS...: atomx ($ATOMX_REAL) whose successful rewrites
# write a program that does nothing (a copy of true) -- a rewrite that exits
# 0 with an output that does not run as its input, for check_bad_inputs.sh's
# self-test (badinput.fails).
set -uo pipefail
"${ATOMX_REAL:?}" "$@"
rc=$?
prev=
for a in "$@"; do
  if [ "$prev" = -o ] && [ "$rc" -eq 0 ]; then cp "$(type -P true)" "$a"; fi
  prev=$a
done
exit $rc
