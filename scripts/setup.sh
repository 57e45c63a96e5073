#!/usr/bin/env bash
# Installs every Debian 12 package atomx needs to build, test and benchmark.
# Safe to run again: packages already installed are skipped quickly.
set -euo pipefail

packages=(
  cmake make g++ gcc clang            # build atomx; clang builds test variants
  libzydis-dev libzycore-dev          # x86 decoder/encoder (docs/DEPENDENCIES.md)
  libdw-dev pkg-config                # DWARF line tables (Inst::sourceLine)
  libgtest-dev                        # unit tests
  valgrind strace                     # independent oracles in tests
  python3 file binutils               # test and corpus scripts
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
