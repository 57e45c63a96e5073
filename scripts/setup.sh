#!/usr/bin/env bash
# Installs every Debian 12 package atomx needs to build, test and benchmark.
# Safe to run again: packages already installed are skipped quickly.  Runs
# as root or through sudo (scripts/apt_install.sh).
set -euo pipefail

packages=(
  cmake make g++ gcc clang            # build atomx; clang builds test variants
  libclang-rt-14-dev                  # libFuzzer (tests/fuzz)
  libzydis-dev libzycore-dev          # x86 decoder/encoder (docs/DEPENDENCIES.md)
  libdw-dev pkg-config                # DWARF line tables (Inst::sourceLine)
  libzstd-dev                         # trace chunks (runtime/trace/stream.c, src/trace)
  nlohmann-json3-dev                  # reading the tools' JSON (atomx trace --profile)
  libgtest-dev                        # unit tests
  valgrind strace                     # independent oracles in tests
  zstd                                # the zstd command: the schedule log's frames read without atomx (tests/trace/schedule_frames.py)
  llvm                                # llvm-dwarfdump: the DWARF oracle of ease's causes (tests/oracles/ease_causes.py)
  python3 file binutils               # test and corpus scripts
  chromium                            # melt.html renders atomx melt --html headless (tests/melt)
  openmpi-bin libopenmpi-dev          # OPTIONAL: atomx cachesim --sweep under mpirun (docs/DEPENDENCIES.md)
  libbpf-dev bpftool                  # OPTIONAL: atomx trace's privileged schedule log (bpf/; with clang above; docs/DEPENDENCIES.md)
  dpkg-dev tcl xz-utils bzip2         # the corpus build (corpus/build.sh: dpkg-source; tclsh for sqlite3)
  flex ed libreadline-dev libncurses-dev  # the corpus's bc: configure --with-readline insists on flex; ed makes libmath.h
)

exec "$(dirname "$0")/apt_install.sh" "${packages[@]}"
