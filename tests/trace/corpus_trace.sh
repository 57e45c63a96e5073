#!/usr/bin/env bash
# corpus_trace.sh ATOMX [PROGRAM...]: `atomx trace` + `atomx regen` on corpus
# programs (default: gzip-gcc-O2 bzip2-gcc-O2; lzip-gcc-O2 passes too), compressing a
# 150 KB file: output unchanged, the block sequence equal to the naive
# tracer's, and every instruction's executions equal to callgrind's Ir
# (tests/trace/regen_oracle.py).
set -euo pipefail
atomx=$(realpath "$1")
shift
progs=("$@")
((${#progs[@]})) || progs=(gzip-gcc-O2 bzip2-gcc-O2)
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
here=$(dirname "$(realpath "$0")")
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
head -c 150000 "$atomx" >"$w/input"
failed=0
for p in "${progs[@]}"; do
  python3 "$here/regen_oracle.py" --atomx "$atomx" --callgrind "$bin_dir/$p" -- -c "$w/input" || failed=1
done
exit $failed
