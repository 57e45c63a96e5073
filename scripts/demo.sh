#!/usr/bin/env bash
# Sets up, builds atomx, and rewrites the bundled example with the null tool:
# the rewritten program moves all its code and prints exactly what the
# original prints.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -g -Wl,--emit-relocs examples/wordfreq.c -o "$work/wordfreq"
build/bin/atomx "$work/wordfreq" -o "$work/wordfreq.atomx" --poison-original
echo "--- original:"
"$work/wordfreq" < examples/wordfreq.c | tee "$work/a"
echo "--- rewritten:"
"$work/wordfreq.atomx" < examples/wordfreq.c | tee "$work/b"
cmp -s "$work/a" "$work/b" && echo "--- identical output"
