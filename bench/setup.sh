#!/usr/bin/env bash
# Installs what the benchmarks need beside atomx's own dependencies
# (scripts/setup.sh): the peers bench/tools.py runs next to atomx, all
# from Debian 12 (valgrind, strace, ltrace, BOLT 16's llvm-bolt, QEMU user
# mode; the QEMU block-count plugin is compiled from bench/qemu_bbcount.c at
# run time), and the zstd command, with which bench/trace.py compresses the
# peers' traces (gzip -1 if it is missing).  Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
packages=(valgrind strace ltrace bolt-16 qemu-user zstd)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
SUDO=""
[ "$(id -u)" != 0 ] && SUDO="sudo"
echo "bench/setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
