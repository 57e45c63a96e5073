#!/bin/bash
# The privileged schedule log's tests (docs/trace.md, "The privileged
# schedule log"): trace PROG ARGS on one CPU (taskset -c 0, so that its
# threads preempt one another) and run schedule_check on the trace.
#   schedule_log.sh ATOMX CHECKER tickets TICKETS_PROG   the interleaving oracle
#   schedule_log.sh ATOMX CHECKER merged TICKETS_PROG    the same through regen --merge
#   schedule_log.sh ATOMX CHECKER steps TICKETS_PROG steps|indirect   the iteration oracle (with data)
#   schedule_log.sh ATOMX CHECKER consistent PROG [ARGS...]
#   schedule_log.sh ATOMX CHECKER none PROG [ARGS...]      without the log
#   schedule_log.sh ATOMX CHECKER unreported TICKETS_PROG  a switch left out of the log is said
# Exits 77 (skipped) where atomx has no schedule log: built without libbpf,
# clang and bpftool, or run without root (CAP_BPF and CAP_PERFMON).
# Under heavy load the kernel's tracepoint sometimes does not run the eBPF
# program for a switch (atomx finds such gaps: a record that does not
# follow its CPU's last one, trace::ScheduleChain, and says "switches
# missing" in its closing line): such a run is made again, up to three
# times, and the test is skipped (77) if every run had gaps -- the oracles
# hold only for a complete log.
# ATOMX_TEST_SCHEDULE_SHIFT / ATOMX_TEST_SCHEDULE_SWAP pass through to the
# recording (the must-fail twins).
set -euo pipefail
atomx=$1 checker=$2 mode=$3 prog=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$mode" = none ]; then
  # Without the log (ATOMX_TEST_NO_BPF=1, as a build without libbpf or a
  # run without privilege): one line says why, the manifest names no
  # schedule, and regen --switches says there is none.  Its twin
  # (SCHEDULE_LOG_KEEP=1) leaves the log on: where it loads, this fails.
  if [ "${SCHEDULE_LOG_KEEP:-}" = 1 ]; then
    "$atomx" trace -o "$work/t" -- "$prog" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    grep -q '^atomx: no schedule log: ' "$work/err" && { echo "SKIP: the log does not load here"; exit 77; }
  else
    ATOMX_TEST_NO_BPF=1 "$atomx" trace -o "$work/t" -- "$prog" "$@" >/dev/null 2>"$work/err" ||
      { cat "$work/err" >&2; exit 1; }
  fi
  if grep '^schedule .*switches' "$work/t/manifest" >&2; then echo "the manifest names a schedule log (above) though none was logged" >&2; exit 1; fi
  if [ "$(grep -c '^atomx: no schedule log: ' "$work/err")" != 1 ]; then
    echo "expected one line 'atomx: no schedule log: WHY' on stderr, got:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  if "$atomx" regen "$work/t" --switches >/dev/null 2>"$work/err"; then echo "regen --switches succeeded without a log" >&2; exit 1; fi
  grep -q 'no schedule log' "$work/err" || { cat "$work/err" >&2; exit 1; }
  echo "no schedule log: said in one line, none in the manifest, regen --switches refuses"
  exit 0
fi
if ! "$atomx" trace --help | grep -q '^Schedule log: built in'; then
  echo "SKIP: atomx was built without the schedule log (libbpf, clang, bpftool)"
  exit 77
fi
record() {
  rm -rf "$work/t" "$work/record"
  if [ "$mode" = tickets ] || [ "$mode" = merged ] || [ "$mode" = unreported ]; then
    taskset -c 0 "$atomx" trace -o "$work/t" -- "$prog" "$work/record" 3 20000 400 2>"$work/err" ||
      { cat "$work/err" >&2; exit 1; }
  elif [ "$mode" = steps ]; then
    taskset -c 0 "$atomx" trace --data -o "$work/t" -- "$prog" "$work/record" 3 600 3000 "$1" 2>"$work/err" ||
      { cat "$work/err" >&2; exit 1; }
  else
    # (the program's own status is its own: fork_exec's is 9; SCHEDULE_LOG_DATA=1:
    # a trace with data, whose loops of evaluated predicates make switches ambiguous)
    taskset -c 0 "$atomx" trace ${SCHEDULE_LOG_DATA:+--data} -o "$work/t" -- "$prog" "$@" >/dev/null 2>"$work/err" || true
    [ -f "$work/t/manifest" ] || { cat "$work/err" >&2; exit 1; }
  fi
}
if [ "$mode" = unreported ]; then
  # The collector leaves out its 5th switch-out (ATOMX_TEST_SCHEDULE_DROP):
  # atomx must say switches are missing, flag the next record of that CPU
  # `unreported` in regen --switches and warn in regen --merge.
  export ATOMX_TEST_SCHEDULE_DROP=5
  record
  grep -qx 'schedule sync-points switches' "$work/t/manifest" || { echo "SKIP: no privileged schedule log in this run"; exit 77; }
  grep -q 'switches missing before' "$work/err" || { echo "FAIL the closing line does not say switches are missing:"; cat "$work/err"; exit 1; }
  "$atomx" regen "$work/t" --switches >"$work/switches"
  grep -qE '[ ,]unreported([ ,]|$)' "$work/switches" || { echo "FAIL regen --switches flags no switch unreported"; exit 1; }
  "$atomx" regen "$work/t" --merge --summary >/dev/null 2>"$work/merge"
  grep -q 'warning: the schedule log lacks switches' "$work/merge" || { echo "FAIL regen --merge does not warn:"; cat "$work/merge"; exit 1; }
  echo "a switch left out of the log: said by atomx trace, flagged by regen --switches ($(grep -cE '[ ,]unreported([ ,]|$)' "$work/switches") line(s)), warned by regen --merge"
  exit 0
fi
for attempt in 1 2 3; do
  record "$@"
  grep -q 'switches missing before' "$work/err" || break
  echo "attempt $attempt: $(grep -o 'switches missing before.*' "$work/err")" >&2
  [ "$attempt" = 3 ] && { echo "SKIP: the kernel left switches out of the log in 3 runs (the oracles need a complete log)"; exit 77; }
done
if ! grep -qx 'schedule sync-points switches' "$work/t/manifest"; then
  echo "SKIP: no privileged schedule log in this run: $(grep 'no schedule log' "$work/err" || true)"
  exit 77
fi
if [ "$mode" = tickets ] || [ "$mode" = merged ]; then
  # The ticket instruction, found by objdump (not by atomx).
  pcs=$(objdump -d --no-show-raw-insn "$prog" | awk '/lock xadd/ { sub(":", "", $1); print $1 }')
  [ "$(echo "$pcs" | wc -w)" = 1 ] || { echo "expected one lock xadd in $prog, found: $pcs" >&2; exit 1; }
  exec "$checker" "$work/t" "--${mode/merged/merged-tickets}" "$work/record" "$pcs"
fi
if [ "$mode" = steps ]; then
  # The ticket (lock xadd) and the busy loops' steps (lock add), found by
  # objdump (not by atomx).
  ticket=$(objdump -d --no-show-raw-insn "$prog" | awk '/lock xadd/ { sub(":", "", $1); print $1 }')
  steps=$(objdump -d --no-show-raw-insn "$prog" | awk '/lock add/ { sub(":", "", $1); print $1 }' | paste -sd,)
  [ "$(echo "$ticket" | wc -w)" = 1 ] && [ -n "$steps" ] || { echo "expected one lock xadd and lock adds in $prog: $ticket / $steps" >&2; exit 1; }
  exec "$checker" "$work/t" --merged-steps "$work/record" "$ticket" "$steps"
fi
exec "$checker" "$work/t" --consistent
