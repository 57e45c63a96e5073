#!/usr/bin/env bash
# corpus/set_aside.sh PROGRAM ORACLE
#
# The options (one per line) with which ORACLE's checker compares PROGRAM:
# a --set-aside=PROC=REASON per procedure corpus/set_aside.txt names for
# them, and the --OPTION lines.  Read them with mapfile.
set -euo pipefail
prog=${1:?usage: set_aside.sh PROGRAM ORACLE}
oracle=${2:?usage: set_aside.sh PROGRAM ORACLE}
while read -r p oracles what reason; do
  [[ -z $p || $p == \#* || $p != "$prog" ]] && continue
  [[ $oracles == '*' || ,$oracles, == *,"$oracle",* ]] || continue
  if [[ $what == --* ]]; then
    echo "$what"
  elif [[ $what == misses:* ]]; then  # the cache checker: misses not held to the per-procedure tolerance
    [[ -n $reason ]] || { echo "set_aside.sh: $prog $what has no reason" >&2; exit 2; }
    echo "--miss-aside=${what#misses:}=$reason"
  else
    [[ -n $reason ]] || { echo "set_aside.sh: $prog $what has no reason" >&2; exit 2; }
    echo "--set-aside=$what=$reason"
  fi
done <"$(dirname "$0")/set_aside.txt"
