#!/usr/bin/env bash
# Sets up, builds atomx, and runs it on the bundled example
# (examples/wordfreq.c): first the null tool (the rewritten program moves all
# its code and prints exactly what the original prints), then the ATOM
# paper's branch-counting tool (tools/paper): same output, plus btaken.out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$PWD
cc -O2 -g -Wl,--emit-relocs examples/wordfreq.c -o "$work/wordfreq"

echo "=== rewrite (null tool): build/bin/atomx wordfreq -o wordfreq.atomx --poison-original"
build/bin/atomx "$work/wordfreq" -o "$work/wordfreq.atomx" --poison-original
"$work/wordfreq" < examples/wordfreq.c > "$work/native.txt"
"$work/wordfreq.atomx" < examples/wordfreq.c > "$work/rewritten.txt"
echo "--- output of the rewritten program (first lines):"
head -n 5 "$work/rewritten.txt"
cmp -s "$work/native.txt" "$work/rewritten.txt" ||
  { echo "demo.sh: FAIL: the rewritten program's output differs from the original's" >&2; exit 1; }
echo "--- identical to the original's"

echo
echo "=== instrument: build/bin/atomx wordfreq tools/paper/branch_inst.c tools/paper/branch_anal.c -o wordfreq.atom"
build/bin/atomx "$work/wordfreq" tools/paper/branch_inst.c tools/paper/branch_anal.c -o "$work/wordfreq.atom"
(cd "$work" && ./wordfreq.atom < "$root/examples/wordfreq.c" > instrumented.txt)
cmp -s "$work/native.txt" "$work/instrumented.txt" ||
  { echo "demo.sh: FAIL: the instrumented program's output differs from the original's" >&2; exit 1; }
echo "--- output identical to the original's"
echo "--- btaken.out, the 5 most executed conditional branches (PCs are the original's: addr2line finds them):"
tail -n +2 "$work/btaken.out" | awk '{ print $2 + $3, $1, $2, $3 }' | sort -k1,1nr | head -n 5 |
  while read -r total pc taken not; do
    printf '%s  taken %6d  not taken %6d  %s\n' "$pc" "$taken" "$not" \
      "$(addr2line -s -e "$work/wordfreq" "$pc")"
  done
echo "--- $(($(wc -l < "$work/btaken.out") - 1)) conditional branches in all; btaken.out lists each"
