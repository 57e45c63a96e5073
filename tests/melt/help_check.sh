#!/usr/bin/env bash
# help_check.sh CMD...: `atomx melt --help` (CMD) must exit 0 and print the
# usage, options included.  melt.help runs it; melt.help.fails runs it on a
# command that prints the usage and exits 3, and must fail naming the status.
set -uo pipefail
out=$("$@")
rc=$?
if [ "$rc" -ne 0 ]; then echo "FAIL: '$*' exited with status $rc"; exit 1; fi
for want in 'usage: atomx melt' '--identity address|text'; do
  grep -qF -- "$want" <<<"$out" || { echo "FAIL: the usage does not say '$want'"; exit 1; }
done
echo "PASS: melt --help"
