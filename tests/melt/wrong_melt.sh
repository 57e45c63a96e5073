#!/usr/bin/env bash
# wrong_melt.sh ARGS...: atomx ($ATOMX_REAL) whose `atomx melt ... --json -`
# is wrong in one way, $WRONG_MELT, for melt_oracle.py's self-tests:
#   drop-best  the exact method's best sequence left out (the others are
#              right: only the brute force, --brute, can see it)
#   recount    the exact method's best sequence said to occur once more
#   intervals  the first top chunk's first instruction said to occur once more
#              (the seed's Table 2, COUNT)
#   static     the seed's best sequence's first procedure said one instruction larger
# Every other command is atomx's own.
set -euo pipefail
if [ "${1:-}" != melt ]; then exec "${ATOMX_REAL:?}" "$@"; fi
"${ATOMX_REAL:?}" "$@" | python3 -c '
import json, sys
j = json.load(sys.stdin)
seqs = j["exact"]["sequences"]
if sys.argv[1] == "drop-best":
    del seqs[0]
elif sys.argv[1] == "intervals":
    j["seed"]["top_chunks"][0]["intervals"][0]["count"] += 1
elif sys.argv[1] == "static":
    j["seed"]["sequences"][0]["static"]["procedures"][0]["of"] += 1
else:
    seqs[0]["occurrences"] += 1
    seqs[0]["coverage"] += seqs[0]["length"]
json.dump(j, sys.stdout)' "${WRONG_MELT:?}"
