#!/usr/bin/env bash
# Fake rewriter for testing check.sh: copies IN and overwrites the first two
# bytes of main() with ud2, so every run of OUT dies of SIGILL.
# Usage: break-main.sh IN -o OUT
set -euo pipefail
[[ ${2:-} == -o && $# -eq 3 ]] || { echo "usage: $0 IN -o OUT" >&2; exit 2; }
in=$1 out=$3
syms=$(nm "$in")   # (no pipe into an early-exiting awk: SIGPIPE + pipefail)
addr=$(awk '$3 == "main" && ($2 == "T" || $2 == "t") { print $1; exit }' <<<"$syms")
[[ -n $addr ]] || { echo "break-main: no main symbol in $in" >&2; exit 1; }
# file offset of main = addr - section address + section offset, section = .text
sections=$(readelf -S -W "$in")
read -r saddr soff < <(awk '$2 == ".text" { print $4, $5 }' <<<"$sections")
off=$(( 0x$addr - 0x$saddr + 0x$soff ))
cp "$in" "$out"
printf '\x0f\x0b' | dd of="$out" bs=1 seek="$off" conv=notrunc status=none
