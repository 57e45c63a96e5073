#!/usr/bin/env bash
# scripts/test.sh [--full]
#
# Sets up a fresh Debian 12 machine, builds atomx and runs every test:
# unit tests, the pitfall programs, the instrumentation tests and the shipped
# tools against their oracles (ctest), then the real-program corpus:
# rewritten with the null tool in check mode (--poison-original),
# instrumented with the paper's branch tool (against Valgrind), with the
# state-clobbering tool, with inline counters everywhere, with every shipped
# tool (each against its oracle; all of them with the programs' output
# unchanged), and traced (against callgrind, cachegrind and the naive tracer).
#
# Without an option: what CI runs (`.ci/run`), which must fit 60 minutes on
# 2 cores on a fresh machine (no ~/.cache: the corpus and the tool cache
# built first).  Its corpus checks take one or a few programs each.
#
# --full: the same, and every corpus program under every oracle: the branch
# tool on all nine (bc's Valgrind run is the long one), the clobber tool and
# the inline counters on all nine (their gcc -O2 builds), each shipped tool
# against its oracle on all nine (corpus_oracle.sh --all), every tool with
# the output unchanged on all nine.  That is many hours on 2 cores, more than
# a session has, so it comes in parts, each run on its own:
#
#   --full PART...   setup, the build and the corpus, then only those parts:
#     instrumenter   the branch tool vs Valgrind, the clobber tool and the
#                    inline counters, all nine
#     oracles-a      corpus_oracle.sh --all: syscall io malloc branch dyninst unalign
#     oracles-b      corpus_oracle.sh --all: pipe prof gprof inline cache
#     oracles-c      corpus_oracle.sh --all: cachesim
#     outputs        every tool, output unchanged, all nine
#   --full           what CI runs, then every part (the whole: hours)
#
# Run the parts that cover what you changed before closing an issue that
# touches the instrumenter, the trace or a tool.  Each writes its result as
# it goes, with the date and the commit, to tests/results/full-PART.md (the
# whole: tests/results/full.md), which is kept in the repository; a run that
# was stopped leaves its steps so far, marked unfinished.
#
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
parts=()
case ${1:-} in
  --full)
    full=1
    shift
    for p in "$@"; do
      case $p in
        instrumenter | oracles-a | oracles-b | oracles-c | outputs) parts+=("$p") ;;
        *) echo "test.sh: unknown part '$p' (instrumenter, oracles-a, oracles-b, oracles-c, outputs)" >&2; exit 2 ;;
      esac
    done ;;
  "") ;;
  -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown option '$1' (scripts/test.sh [--full [PART...]])" >&2; exit 2 ;;
esac
# part NAME: whether this run does it (every part under --full alone).
part() { ((full)) && { ((${#parts[@]} == 0)) || [[ " ${parts[*]} " == *" $1 "* ]]; }; }
ci=1
((${#parts[@]} == 0)) || ci=0 # --full PART...: the CI checks are not repeated
results=
if ((full)); then
  mkdir -p tests/results
  results=tests/results/full.md
  ((${#parts[@]} == 0)) || results=tests/results/full-$(IFS=-; echo "${parts[*]}").md
fi
start=$SECONDS
steps=() # "NAME|PASS or FAIL|seconds"
failed=()
summary() {
  local s
  echo "== test.sh summary ($(((SECONDS - start) / 60)) min) =="
  for s in "${steps[@]}"; do
    IFS='|' read -r n r t <<<"$s"
    awk -v r="$r" -v t="$t" -v n="$n" 'BEGIN { printf "%-4s %5.1f min  %s\n", r, t / 60, n }'
  done
}
trap 'summary' EXIT
# step NAME CMD...: runs CMD, records PASS or FAIL and its time.  CMD runs
# where `set -e` does not act (the left of `||`): a function given as CMD
# must return its failure itself (`|| return 1` after every check).
step() {
  local name=$1 t=$SECONDS r=PASS
  shift
  echo "== step: $name"
  "$@" || r=FAIL
  steps+=("$name|$r|$((SECONDS - t))")
  echo "== $r ($(((SECONDS - t) / 60)) min): $name"
  [[ $r == PASS ]] || failed+=("$name")
  [[ -z $results ]] || write_results unfinished
}
# write_results unfinished|finished: tests/results/full*.md, so far.
write_results() {
  local s n r t
  {
    echo "# scripts/test.sh --full${parts[*]:+ ${parts[*]}}: the last result"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!tests/results' || echo ' (with uncommitted changes)')"
    echo "- machine: $(nproc) cores; $(((SECONDS - start) / 60)) minutes $([[ $1 == unfinished ]] && echo "so far" || echo "in all")"
    if [[ $1 == unfinished ]]; then
      echo "- result: UNFINISHED (the steps so far; a run stopped here leaves this)${failed[*]:+; FAILED: ${failed[*]}}"
    else
      echo "- result: $( ((${#failed[@]} == 0)) && echo "every step passed" || echo "FAILED: ${failed[*]}")"
    fi
    echo
    echo "| step | result | minutes |"
    echo "|---|---|---|"
    for s in "${steps[@]}"; do
      IFS='|' read -r n r t <<<"$s"
      echo "| $n | $r | $((t / 60)) |"
    done
  } >"$results"
}
# required NAME CMD...: a step nothing after it can do without.
required() {
  step "$@"
  ((${#failed[@]} == 0)) || { echo "test.sh: '$1' failed; nothing after it can run" >&2; exit 1; }
}

oracles_present() {
  # Every oracle must be there: a test is registered only when the program it
  # compares with is found, and none may go missing in silence.
  local p
  for p in valgrind callgrind_annotate cg_annotate strace clang clang++ llvm-dwarfdump; do
    command -v "$p" >/dev/null || { echo "test.sh: $p is missing (scripts/setup.sh installs it)" >&2; return 1; }
  done
}
ctest_all() {
  ctest --test-dir build --output-on-failure -j"$(nproc)" 2>&1 | tee build/ctest.log || return 1
  # ... and no test was skipped, unless tests/allowed_skips.txt says why it may be.
  python3 tests/ctest_skips.py build/ctest.log
}
fuzz() {
  rm -rf build-fuzz/corpus
  ATOMX_FUZZ_ARGS="-seed=1 -runs=1000000" tests/fuzz/run_fuzz.sh 900 >build/fuzz.log 2>&1 ||
    { tail -n 40 build/fuzz.log; echo "test.sh: the fuzzing pass failed (build/fuzz.log)" >&2; return 1; }
  grep -E "INITED|DONE" build/fuzz.log
}
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
dumps() {
  local b bad=0
  for b in "$bin_dir"/*; do
    python3 tests/dump/check_dump.py build/bin/atomx "$b" | tail -n 5 || bad=1
  done
  return $bad
}
oracles() { # oracles PROGRAMS_OR_--all TOOL:PROGRAM... (PROGRAM ignored with --all)
  local all=$1 tp bad=()
  shift
  for tp in "$@"; do
    if [[ $all == --all ]]; then
      tests/tools/corpus_oracle.sh "${tp%%:*}" build/bin/atomx --all || bad+=("${tp%%:*}")
    else
      tests/tools/corpus_oracle.sh "${tp%%:*}" build/bin/atomx "${tp#*:}" || bad+=("$tp")
    fi
  done
  ((${#bad[@]} == 0)) || { echo "corpus oracle failed for: ${bad[*]}" >&2; return 1; }
}
corpus_names() { corpus/build.sh --list | sed 's/-\(gcc\|clang\).*//' | sort -u; }

required "setup (scripts/setup.sh)" scripts/setup.sh
required "every oracle program present" oracles_present
required "build (scripts/build.sh)" scripts/build.sh
# The corpus first: the CFG check over every corpus program is a unit test.
required "corpus build (corpus/build.sh)" corpus/build.sh
if ((ci)); then
# The README's first command, as a new user runs it (a few seconds: the
# build is done).
step "demo (scripts/demo.sh)" scripts/demo.sh
step "ctest, no test skipped" ctest_all
# The corpus checker proves it can fail (a fake rewriter that breaks main).
step "corpus checker must fail (corpus/selftest.sh)" corpus/selftest.sh
# The ELF reader and the analysis behind it survive a million fuzzed inputs
# from the six seed programs (libFuzzer with ASan and UBSan, tests/fuzz; about
# 2 minutes, and 5 to build the target).
step "fuzzing, a million inputs" fuzz
# atomx dump agrees with binutils on every real program ...
step "atomx dump vs binutils, every corpus binary" dumps
# ... atomx moves at least 99% of each one's procedures, by count and bytes ...
step "99% of procedures moved" python3 tests/moved_share.py build/bin/atomx 99 "$bin_dir"/*
# ... each one, with 3 nops inserted before every instruction, behaves exactly
# as before (the machinery instrumentation relies on) ...
step "corpus, 3 nops before every instruction" corpus/check.sh -- "$PWD/build/bin/atomx" --poison-original --pad-instructions 3
if ((full)); then
  : # the long checks come in parts, below
else
  # ... the ATOM paper's branch tool counts exactly Valgrind's Bc per
  # procedure on every program but bc (3-4 minutes under Valgrind; --full
  # includes it), with the program's output unchanged ...
  step "branch tool vs Valgrind" tests/branch/corpus_branch.sh build/bin/atomx gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser
  # ... an analysis routine that clobbers everything a C function may, before
  # and after every instruction of every 8th procedure, changes no output of
  # gzip (the others take 10 minutes and more that way: --full) ...
  step "clobber tool, gzip" tests/instrument/corpus_clobber.sh build/bin/atomx gzip
  # ... inline counters before every instruction and on every edge of gzip,
  # muparser and sqlite3 change no output and agree with a call per block, and
  # every block's and edge's count from the fewest counters (Counters::count)
  # equals its own increment's (sqlite3: procedures whose jump tables share
  # targets, ~1 minute more) ...
  step "inline counters, gzip muparser sqlite3" tests/instrument/corpus_counters.sh build/bin/atomx gzip muparser sqlite3
  # ... each shipped tool agrees with its oracle (Valgrind, strace, an
  # LD_PRELOAD shim) on one corpus program that exercises it (all nine:
  # --full) ...
  step "each tool vs its oracle, one program each" oracles one syscall:gzip io:bzip2 malloc:muparser branch:lzip \
    dyninst:lzip unalign:lzip pipe:muparser prof:bzip2 gprof:muparser inline:lzip cache:gzip cachesim:gzip
  # ... every shipped tool leaves the output of gzip, lzip and muparser (C++)
  # unchanged (all nine: --full outputs, about 7 minutes) ...
  step "every tool, output unchanged, gzip lzip muparser" tests/tools/corpus_all.sh build/bin/atomx gzip lzip muparser
fi
# ... `atomx trace` and `atomx regen` reproduce, instruction for instruction,
# what callgrind counts and the naive tracer records, and per function what
# cachegrind counts, on every corpus program's gcc and clang -O2 builds
# (~8 minutes) ...
step "traces vs callgrind, cachegrind, naive tracer" tests/trace/corpus_trace.sh build/bin/atomx
# ... and each one rewritten with the null tool in check mode behaves
# exactly as before (this prints the closing "N passed, N failed" line).
step "corpus, null rewrite in check mode" corpus/check.sh -- "$PWD/build/bin/atomx" --poison-original
fi # ci

# --full's parts: every corpus program under every oracle.
mapfile -t every < <(corpus_names)
if part instrumenter; then
  # The branch tool against Valgrind's Bc per procedure on all nine.
  step "branch tool vs Valgrind, all nine" tests/branch/corpus_branch.sh build/bin/atomx
  # The clobber tool and the counters on each one's gcc -O2 build (every
  # variant of all nine would take hours: the clobbers run vector loops at
  # every call).
  step "clobber tool, all nine (gcc -O2)" tests/instrument/corpus_clobber.sh build/bin/atomx "${every[@]/%/-gcc-O2}"
  step "inline counters, all nine (gcc -O2)" tests/instrument/corpus_counters.sh build/bin/atomx "${every[@]/%/-gcc-O2}"
fi
# A step per tool, so that a stopped run keeps the tools it did.
if part oracles-a; then
  for t in syscall io malloc branch dyninst unalign; do step "$t vs its oracle, all nine" oracles --all "$t:"; done
fi
if part oracles-b; then
  for t in pipe prof gprof inline cache; do step "$t vs its oracle, all nine" oracles --all "$t:"; done
fi
part oracles-c && step "cachesim vs cachegrind and refsim, all nine" oracles --all cachesim:
part outputs && step "every tool, output unchanged, all nine" tests/tools/corpus_all.sh build/bin/atomx

if [[ -n $results ]]; then
  write_results finished
  echo "test.sh: wrote $results"
fi
((${#failed[@]} == 0)) || { echo "test.sh: failed: ${failed[*]}" >&2; exit 1; }
