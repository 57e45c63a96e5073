#!/usr/bin/env bash
# wrong_melt.sh ARGS...: atomx ($ATOMX_REAL) whose `atomx melt ... --json -`
# is wrong in one way, $WRONG_MELT, for melt_oracle.py's self-tests:
#   drop-best  the exact method's best sequence left out (the others are
#              right: only the brute force, --brute, can see it)
#   recount    the exact method's best sequence said to occur once more
# Every other command is atomx's own.
set -euo pipefail
if [ "${1:-}" != melt ]; then exec "${ATOMX_REAL:?}" "$@"; fi
"${ATOMX_REAL:?}" "$@" | python3 -c '
import json, sys
j = json.load(sys.stdin)
seqs = j["exact"]["sequences"]
if sys.argv[1] == "drop-best":
    del seqs[0]
else:
    seqs[0]["occurrences"] += 1
    seqs[0]["coverage"] += seqs[0]["length"]
json.dump(j, sys.stdout)' "${WRONG_MELT:?}"
