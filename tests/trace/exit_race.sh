#!/usr/bin/env bash
# exit_race.sh ATOMX PROG RUNS: PROG (exit_race.c) traced RUNS times; every
# run's trace must regenerate whole (no stream cut short, no bytes after a
# stream's last chunk).  Fails with the first run that does not.
set -uo pipefail
atomx=$1 prog=$2 runs=${3:-12}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
for ((i = 1; i <= runs; i++)); do
  rm -rf "$w/t"
  if ! "$atomx" trace -q --cache-dir "$w/cache" -o "$w/t" -- "$prog"; then
    echo "FAIL run $i: the traced program failed"
    exit 1
  fi
  if ! "$atomx" regen "$w/t" --summary >"$w/summary" 2>&1; then
    echo "FAIL run $i: $(grep -m1 -i 'problem\|error' "$w/summary")"
    exit 1
  fi
done
echo "PASS: $runs runs, every stream whole ($(ls "$w/t" | grep -c '\.axt$') streams in the last)"
