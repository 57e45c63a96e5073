#!/usr/bin/env bash
# corpus.sh ATOMX [--all | PROGRAM...]
#
# The branch tool on corpus programs (their gcc -O2 variant, with their
# workloads, corpus/workloads/), two at a time: the program's output must be
# unchanged and branch.json's taken + not taken per function must equal
# Valgrind's Bc (branch_json_vs_callgrind.py); each line also gives the
# 2-bit predictor's accuracy.  Default: gzip and lzip (a few minutes); --all:
# the eight programs.  What is set aside for lua, sqlite3, xz and pbzip2 (and
# why) is explained in tests/branch/corpus_branch.sh: the same options here.
# Needs the corpus (corpus/build.sh).  Exit status 0 when every program passes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
atomx=${1:?usage: corpus.sh ATOMX [--all | PROGRAM...]}
shift
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
progs=("$@")
if [[ ${1:-} == --all ]]; then progs=(gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser); fi
((${#progs[@]})) || progs=(gzip lzip)

options() {
  case $1 in
    lua) echo "--runs 3" ;;
    sqlite3) echo "--runs 3 --allow-differ sqlite3AtoF --allow-differ sqlite3_str_vappendf" \
                  "--allow-differ local_getline --allow-differ quickscan" \
                  "--allow-differ sqlite3GetToken --allow-differ sqlite3_complete" \
                  "--allow-differ appendAllPathElements" ;;
    xz) echo "--runs 5 --allow-differ block_encode --allow-differ lz_encode" \
             "--allow-differ lzma2_encode --allow-differ lzma_lzma_encode --allow-differ rc_encode" ;;
    pbzip2) echo "--runs 5 --allow-differ _Z20syncSetTerminateFlagi --allow-differ _Z8produceriiP5queue" ;;
  esac
}

one() {
  local p=$1 log
  [[ -x $bin_dir/$p-gcc-O2 ]] || { echo "FAIL $p: $bin_dir/$p-gcc-O2 missing (corpus/build.sh)"; return 1; }
  log=$(python3 "$here/branch_json_vs_callgrind.py" --atomx "$atomx" $(options "$p") \
          --workload "$root/corpus/workloads/$p.sh" "$bin_dir/$p-gcc-O2" 2>&1)
  local rc=$?
  printf '%s\n' "$log" | grep -v '^note:' | sed "s|$bin_dir/||"
  return $rc
}
export -f one options
export here root atomx bin_dir
printf '%s\n' "${progs[@]}" | xargs -P 2 -I{} bash -c 'one {}'
