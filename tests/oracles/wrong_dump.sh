#!/usr/bin/env bash
# wrong_dump.sh dump BINARY: `atomx dump BINARY` ($ATOMX_REAL) with one
# instruction line of the procedure `main` left out -- an atomx that is off
# by one instruction, for check_dump.py's self-test (oracle.fails.dump).
set -euo pipefail
"${ATOMX_REAL:?}" "$@" | awk '
  /^proc / { inmain = ($2 == "main"); n = 0 }
  inmain && /^    0x/ && ++n == 3 { next }
  { print }'
