#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds atomx and runs every test:
# unit tests, the pitfall programs, the instrumentation tests and the shipped
# tools against their oracles (ctest), then the real-program corpus:
# rewritten with the null tool in check mode (--poison-original),
# instrumented with the paper's branch tool (against Valgrind), with the
# state-clobbering tool, with inline counters everywhere, and with every
# shipped tool (each against its
# oracle; all of them with the programs' output unchanged).
set -euo pipefail
cd "$(dirname "$0")/.."
# How long each part takes on 2 cores (CI: 90 minutes for all of it): setup
# and build ~5 min, the corpus ~20 (cached after the first run), ctest ~15,
# the fuzzing pass ~7, the corpus checks below ~27; CI measured 54 minutes
# for all of it on a clean clone before the trace checks were added, 52
# with gzip's and bzip2's (corpus_trace.sh on 16 programs then, ~8 minutes).
# bc, the ninth corpus program, adds ~2 minutes: its two builds ~1, its
# trace checks, dumps and workloads under check.sh ~1 (its branch oracle
# under Valgrind, 3-4 more, is left to corpus_branch.sh run by hand).  CI
# measured 78 minutes with every tool test compiling its tool again; built
# tools are now kept between runs (~/.cache/atomx/tools, ToolCache.h), and
# ctest took 10 minutes here instead of 22.
start=$SECONDS
trap 'echo "test.sh: $(((SECONDS - start) / 60)) min"' EXIT
scripts/setup.sh
# Every oracle must be there: a test is registered only when the program it
# compares with is found, and none may go missing in silence.
for p in valgrind callgrind_annotate strace clang clang++; do
  command -v "$p" >/dev/null || { echo "test.sh: $p is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
scripts/build.sh
# The corpus first: the CFG check over every corpus program is a unit test.
corpus/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" 2>&1 | tee build/ctest.log
# ... and no test was skipped, unless tests/allowed_skips.txt says why it may be.
python3 tests/ctest_skips.py build/ctest.log
# The corpus checker proves it can fail (a fake rewriter that breaks main).
corpus/selftest.sh
# The ELF reader and the analysis behind it survive a million fuzzed inputs
# from the six seed programs (libFuzzer with ASan and UBSan, tests/fuzz; about
# 2 minutes, and 5 to build the target).
rm -rf build-fuzz/corpus
ATOMX_FUZZ_ARGS="-seed=1 -runs=1000000" tests/fuzz/run_fuzz.sh 900 >build/fuzz.log 2>&1 ||
  { tail -n 40 build/fuzz.log; echo "test.sh: the fuzzing pass failed (build/fuzz.log)" >&2; exit 1; }
grep -E "INITED|DONE" build/fuzz.log
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
# atomx dump agrees with binutils on every real program ...
for b in "$bin_dir"/*; do
  python3 tests/dump/check_dump.py build/bin/atomx "$b" | tail -n 5
done
# ... atomx moves at least 99% of each one's procedures, by count and bytes ...
python3 tests/moved_share.py build/bin/atomx 99 "$bin_dir"/*
# ... each one, with 3 nops inserted before every instruction, behaves exactly
# as before (the machinery instrumentation relies on) ...
corpus/check.sh -- "$PWD/build/bin/atomx" --poison-original --pad-instructions 3
# ... the ATOM paper's branch tool counts exactly Valgrind's Bc per
# procedure on every program but bc (3-4 minutes under Valgrind; run
# corpus_branch.sh with no program to include it), with the program's
# output unchanged ...
tests/branch/corpus_branch.sh build/bin/atomx gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser
# ... an analysis routine that clobbers everything a C function may, before
# and after every instruction of every 8th procedure, changes no output of
# gzip (the others take 10 minutes and more that way; run corpus_clobber.sh
# with their names) ...
tests/instrument/corpus_clobber.sh build/bin/atomx gzip
# ... inline counters before every instruction and on every edge of gzip,
# muparser and sqlite3 change no output and agree with a call per block, and
# every block's and edge's count from the fewest counters (Counters::count)
# equals its own increment's (sqlite3: procedures whose jump tables share
# targets, ~1 minute more) ...
tests/instrument/corpus_counters.sh build/bin/atomx gzip muparser sqlite3
# ... each shipped tool agrees with its oracle (Valgrind, strace, an
# LD_PRELOAD shim) on one corpus program that exercises it (more with
# `corpus_oracle.sh TOOL ATOMX --all`; CI's 90 minutes allow one each) ...
failed=()
for tp in syscall:gzip io:bzip2 malloc:muparser branch:lzip dyninst:lzip unalign:lzip pipe:muparser \
          prof:bzip2 gprof:muparser inline:lzip cache:gzip cachesim:gzip; do
  tests/tools/corpus_oracle.sh "${tp%%:*}" build/bin/atomx "${tp#*:}" || failed+=("$tp")
done
((${#failed[@]} == 0)) || { echo "corpus oracle failed for: ${failed[*]}" >&2; exit 1; }
# ... every shipped tool leaves the output of gzip, lzip and muparser (C++)
# unchanged (corpus_all.sh with no program list: all nine, ~45 minutes) ...
tests/tools/corpus_all.sh build/bin/atomx gzip lzip muparser
# ... `atomx trace` and `atomx regen` reproduce, instruction for instruction,
# what callgrind counts and the naive tracer records, and per function what
# cachegrind counts, on every corpus program's gcc and clang -O2 builds
# (~8 minutes) ...
tests/trace/corpus_trace.sh build/bin/atomx
# ... and each one rewritten with the null tool in check mode behaves
# exactly as before (this prints the closing "N passed, N failed" line).
corpus/check.sh -- "$PWD/build/bin/atomx" --poison-original
