#!/usr/bin/env bash
# offline_sweep.sh ATOMX jobs|jobs-data|mpi PROG [ARG...]: traces PROG once
# (in a scratch directory holding a small text file `input`), then requires
# `atomx cachesim TRACE --sweep FILE` to write the same bytes (text report,
# JSON, every configuration's cachegrind file):
#   jobs  with -j1, -j2 and -j3 (configuration groups x threads spread over
#         the cores: groups after the first simulate from events the one
#         regeneration relays to them), and the JSON equal to --config's;
#   jobs-data  the same over a trace recorded with --data (the relayed
#         events carry data references and library calls);
#   mpi   under `mpirun --oversubscribe -np 2` and in one process (exit 77,
#         skipped, when atomx was built without MPI or mpirun is missing).
# Prints `FAIL FILE differs: A and B` for each difference and exits 1.
set -euo pipefail
atomx=$(realpath "$1")
mode=$2
prog=$(realpath "$3")
shift 3
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
awk 'BEGIN { x = 7; for (i = 0; i < 200; i++) { line = ""; for (k = 0; k < 8; k++) { x = (x * 16807) % 2147483647;
     line = line sprintf("w%x ", x % 4096) } print line } }' >input
# Five hierarchies: instruction-only and split first levels, a shared last
# level and a private one, LRU, FIFO and random, a context switch.
cat >"$w/sweep.cache" <<'EOF'
config i1
I1 size=4K assoc=4 line=64
config split-ll
I1 size=2K assoc=2 line=32
D1 size=2K assoc=2 line=32
LL size=32K assoc=8 line=64
config private-l2
I1 size=1K assoc=1 line=64 policy=fifo
L2 size=8K assoc=4 line=64 shared=no
config random
U1 size=4K assoc=4 line=64 policy=random
LL size=64K assoc=16 line=64
config switching
I1 size=1K assoc=2 line=32
LL size=16K assoc=4 line=64
context-switch every=5000 unit=work
EOF
status=0
data=()
if [[ $mode == jobs-data ]]; then data=(--data); fi
"$atomx" trace -q "${data[@]}" -o trace -- "$prog" "$@" >prog.out || status=$?
if ((status >= 128)); then
  echo "FAIL atomx trace: exit status $status"
  exit 1
fi

run() {  # run NAME [PREFIX...] -- ARGS: the outputs in directory NAME, named out.*
  local name=$1
  shift
  local pre=()
  while [[ $1 != -- ]]; do pre+=("$1"); shift; done
  shift
  mkdir "$name"
  (cd "$name" && "${pre[@]}" "$atomx" cachesim ../trace -q -o out.txt --json out.json --cachegrind-out out "$@")
}

compare() {  # compare A B: every output of run A against run B's
  local a=$1 b=$2 bad=0 f
  for f in "$a"/out.*; do
    if ! cmp -s "$f" "$b/${f#"$a"/}"; then
      echo "FAIL ${f#"$a"/} differs: $a and $b"
      bad=1
    fi
  done
  return $bad
}

fails=0
case $mode in
  jobs | jobs-data)
    run j1 -- --sweep "$w/sweep.cache" -j1
    n=$(ls j1/out.*.cg | wc -l)
    if ((n != 5)); then
      echo "FAIL -j1 wrote $n cachegrind files, not 5"
      exit 1
    fi
    for j in 2 3; do
      run j$j -- --sweep "$w/sweep.cache" -j$j
      compare j1 j$j || fails=1
    done
    # cachegrind's own reader reads every file (when Valgrind is installed).
    if command -v cg_annotate >/dev/null; then
      for f in j1/out.*.cg; do
        cg_annotate "$f" >annotated 2>&1 || { echo "FAIL cg_annotate $f: $(head -c 300 annotated)"; fails=1; }
      done
    fi
    run one -- --config "$w/sweep.cache"
    if ! cmp -s j1/out.json one/out.json; then
      echo "FAIL out.json differs: j1 (--sweep) and one (--config)"
      fails=1
    fi
    ;;
  mpi)
    if ! "$atomx" cachesim --help | grep -q '^MPI: built in' || ! command -v mpirun >/dev/null; then
      echo "skipped: atomx was built without MPI, or mpirun is missing (docs/DEPENDENCIES.md)"
      exit 77
    fi
    run single -- --sweep "$w/sweep.cache" -j1
    run mpi mpirun --allow-run-as-root --oversubscribe -np 2 -- --sweep "$w/sweep.cache" -j1
    compare single mpi || fails=1
    ;;
  *)
    echo "usage: offline_sweep.sh ATOMX jobs|jobs-data|mpi PROG [ARG...]" >&2
    exit 2
    ;;
esac
if ((fails)); then exit 1; fi
echo "ok: $mode: every output the same bytes ($(basename "$prog"), $(grep -c '^config' "$w/sweep.cache") configurations)"
