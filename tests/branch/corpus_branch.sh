#!/usr/bin/env bash
# corpus_branch.sh ATOMX [PROGRAM...]
#
# The branch tool against Valgrind's Bc (branch_vs_cachegrind.py) on the
# gcc -O2 variant of every corpus program, with its workload, two at a time.
# Needs the corpus (corpus/build.sh).  What is compared is the oracle's
# decision (tests/setaside.py): every procedure, except those that
# corpus/set_aside.txt names with their reasons; each program runs its
# workload 3 times instrumented, and a procedure whose counts vary between
# them without being named fails, as does a program where less than 99% of
# the branches counted were compared (or the floor set_aside.txt gives).
# The workloads run deterministically under Valgrind where the program lets
# them (WORKLOAD_ONE_THREAD=1: xz single-threaded); pbzip2 cannot be, and is
# checked with the thread-safe tool (--tool modern) and --vary-schedule
# (runs 2 on one CPU, its threads one at a time as under Valgrind).
# Exit status 0 when every program passes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
atomx=${1:?usage: corpus_branch.sh ATOMX [PROGRAM...]}
shift
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
progs=("$@")
((${#progs[@]})) || progs=(gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser bc)

options() {
  case $1 in
    pbzip2) echo "--tool modern --vary-schedule" ;;
  esac
}

one() {
  local p=$1 log set_aside
  mapfile -t set_aside < <("$root/corpus/set_aside.sh" "$p" branch) || return 2
  # shellcheck disable=SC2046 # options are words
  log=$(WORKLOAD_ONE_THREAD=1 python3 "$here/branch_vs_cachegrind.py" --atomx "$atomx" --runs 3 \
          $(options "$p") "${set_aside[@]}" --workload "$root/corpus/workloads/$p.sh" "$bin_dir/$p-gcc-O2" 2>&1)
  local rc=$?
  printf '%s\n' "$log" | sed "s|$bin_dir/||"
  return $rc
}
export -f one options
export here root atomx bin_dir
printf '%s\n' "${progs[@]}" | xargs -P 2 -I{} bash -c 'one {}'
