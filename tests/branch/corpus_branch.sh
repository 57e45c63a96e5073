#!/usr/bin/env bash
# corpus_branch.sh ATOMX [PROGRAM...]
#
# The branch tool against Valgrind's Bc (branch_vs_cachegrind.py) on the
# gcc -O2 variant of every corpus program, with its workload, two at a time.
# Needs the corpus (corpus/build.sh).  Per program:
#   - single-threaded and deterministic: every procedure, exactly;
#   - lua: --runs 3, and procedures whose counts differ between runs of the
#     instrumented program are set aside (lua seeds its string hashes with
#     the time and addresses); three runs can agree by chance and Valgrind's
#     still differ (CI, 2026-11-24: luaS_newlstr 416286 against Bc 416287),
#     so the procedures a 6-run check found varying are named below: string
#     interning, table lookups and what compares or sorts by them;
#   - sqlite3: the procedures named below are set aside because the program
#     behaves differently under Valgrind, whose x87 long double has 64-bit
#     precision: sqlite3 prints its REAL values differently in .dump
#     (sqlite3_str_vappendf), and reads that dump back (sqlite3AtoF itself
#     computes in long double);
#   - xz -T2, pbzip2 -p2: the thread-safe tool (--tool modern), --runs 5
#     with --vary-schedule (runs 2 and 4 on one CPU, their threads one at a
#     time as under Valgrind), and the procedures named below: procedures
#     whose counts depend on thread scheduling are set aside, as they can
#     be stable natively and still differ under Valgrind (xz's
#     multi-threaded encoder hands out work in timed chunks: same output, a
#     few more or fewer loop iterations; pbzip2's producers, consumers and
#     terminate flag wait on queue state, and its signal-handler thread may
#     or may not get to handle the quit signal main sends it before the
#     process exits).  --vary-schedule alone is not enough for pbzip2: its
#     consumers' polling loops (consumer, consumer_decompress, the two
#     *DecompressCheckInterrupt) can count the same in all five runs and
#     still differ under Valgrind's one-thread-at-a-time scheduler (CI,
#     2026-11-24: consumer_decompress 99 against Bc 108), so they are named.
# Exit status 0 when every program passes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
atomx=${1:?usage: corpus_branch.sh ATOMX [PROGRAM...]}
shift
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
progs=("$@")
((${#progs[@]})) || progs=(gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser)

options() {
  case $1 in
    lua) echo "--runs 3 --allow-differ auxsort --allow-differ findfield --allow-differ getgeneric" \
              "--allow-differ index2value --allow-differ internshrstr --allow-differ l_strcmp" \
              "--allow-differ luaD_callnoyield --allow-differ luaD_precall --allow-differ luaH_get" \
              "--allow-differ luaH_getint --allow-differ luaH_getshortstr --allow-differ luaH_getstr" \
              "--allow-differ luaH_newkey --allow-differ luaH_next --allow-differ luaH_realasize" \
              "--allow-differ luaS_new --allow-differ luaS_newlstr --allow-differ luaS_remove" \
              "--allow-differ luaV_equalobj" ;;
    sqlite3) echo "--runs 3 --allow-differ sqlite3AtoF --allow-differ sqlite3_str_vappendf" \
                  "--allow-differ local_getline --allow-differ quickscan" \
                  "--allow-differ sqlite3GetToken --allow-differ sqlite3_complete" \
                  "--allow-differ appendAllPathElements" ;;
    xz) echo "--tool modern --runs 5 --vary-schedule --allow-differ block_encode --allow-differ lz_encode" \
             "--allow-differ lzma2_encode --allow-differ lzma_lzma_encode --allow-differ rc_encode" ;;
    pbzip2) echo "--tool modern --runs 5 --vary-schedule --allow-differ _Z20syncSetTerminateFlagi" \
                 "--allow-differ _Z8produceriiP5queue --allow-differ signalHandlerProc" \
                 "--allow-differ consumer --allow-differ consumer_decompress" \
                 "--allow-differ _Z19producer_decompressilP5queue" \
                 "--allow-differ _Z32consumerDecompressCheckInterruptPK7outBuff" \
                 "--allow-differ _Z32producerDecompressCheckInterruptiRP7outBuffi" ;;
  esac
}

one() {
  local p=$1 log
  log=$(python3 "$here/branch_vs_cachegrind.py" --atomx "$atomx" $(options "$p") \
          --workload "$root/corpus/workloads/$p.sh" "$bin_dir/$p-gcc-O2" 2>&1)
  local rc=$?
  printf '%s\n' "$log" | grep -v '^note:' | sed "s|$bin_dir/||"
  return $rc
}
export -f one options
export here root atomx bin_dir
printf '%s\n' "${progs[@]}" | xargs -P 2 -I{} bash -c 'one {}'
