#!/usr/bin/env bash
# killed.sh ATOMX PROG [THREADS]: PROG (spin.c), traced, killed by SIGKILL
# once it has written a few chunks: `atomx regen` must regenerate every whole
# chunk (as many blocks as the naive count of a prefix of the run: at least
# one chunk's worth) and say that the stream was cut short, with exit
# status 1.
# With THREADS: PROG THREADS starts that many threads, which record a little
# and wait (each prints `thread TID` on stderr), so they leave no stream:
# regen must name each of them (as the program printed them, not as the
# event log has them) as a thread that left no stream because its process
# was killed, and count them in its summary (streamless-threads N).
# ATOMX_TEST_KILLED_FORGET=1 (the must-fail twin) takes the first such
# thread's `thread` line out of the event log before regen reads it.
set -euo pipefail
atomx=$1 prog=$2 threads=${3:-}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
"$atomx" trace -q --cache-dir "$w/cache" -o "$w/t" -- "$prog" $threads >/dev/null 2>"$w/prog.err" &
pid=$!
# Wait for the first chunk (1 MiB of stream before compression), let a few
# more come, then kill the program (atomx's child).
for _ in $(seq 1200); do
  size=$(stat -c %s "$w"/t/thread.*.axt 2>/dev/null | head -n 1 || true)
  [[ -n "$size" && "$size" -gt 0 ]] && break
  sleep 0.05
done
# (With THREADS, the first chunk is enough: the check is of the threads.)
[[ -n "$threads" ]] || sleep 0.5
child=""
for stat in /proc/[0-9]*/stat; do  # atomx's child (pgrep needs procps)
  read -r cpid _ _ ppid _ <"$stat" 2>/dev/null || continue
  [[ $ppid == "$pid" ]] && child=$cpid
done
[[ -n "$child" ]] || { echo "FAIL: the traced program ended before it could be killed"; exit 1; }
kill -KILL "$child"
wait "$pid" && { echo "FAIL: atomx trace exited 0 for a killed program"; exit 1; } || status=$?
[[ $status == 137 ]] || { echo "FAIL: atomx trace exited $status, not 137 (128+SIGKILL)"; exit 1; }
# The program's threads that left no stream (none without THREADS).
lost=()
if [[ -n "$threads" ]]; then
  mapfile -t tids < <(sed -n 's/^thread \([0-9]*\) .*/\1/p' "$w/prog.err")
  [[ ${#tids[@]} == "$threads" ]] || { echo "FAIL: the program printed ${#tids[@]} thread(s), not $threads"; exit 1; }
  for t in "${tids[@]}"; do [[ -e "$w/t/thread.$t.axt" ]] || lost+=("$t"); done
  [[ ${#lost[@]} -gt 0 ]] || { echo "FAIL: every thread of the program left a stream"; exit 1; }
  if [[ -n "${ATOMX_TEST_KILLED_FORGET:-}" ]]; then
    awk -v t="${lost[0]}" '!($3 == t && $4 == "thread")' "$w/t/events" >"$w/events" && cp "$w/events" "$w/t/events"
  fi
fi
set +e
"$atomx" regen "$w/t" --summary >"$w/summary" 2>"$w/err"
rc=$?
set -e
cat "$w/summary" "$w/err"
[[ $rc == 1 ]] || { echo "FAIL: regen exited $rc, not 1"; exit 1; }
grep -q "without its final chunk (the process was killed?)" "$w/err" || { echo "FAIL: no word of the cut"; exit 1; }
blocks=$(sed -n 's/.* blocks \([0-9]*\) .*/\1/p' "$w/summary")
# A chunk of 1 MiB of witnesses holds far more than 100000 blocks here.
[[ $blocks -gt 100000 ]] || { echo "FAIL: only $blocks blocks regenerated"; exit 1; }
for t in "${lost[@]}"; do
  grep -q "^atomx: thread $t (process $child): started (thread in the event log) but left no stream: its process was killed" "$w/err" ||
    { echo "FAIL: thread $t left no stream, and regen does not say so"; exit 1; }
done
if [[ -n "$threads" ]]; then
  n=$(sed -n 's/.* streamless-threads \([0-9]*\).*/\1/p' "$w/summary")
  [[ "$n" == "${#lost[@]}" ]] || { echo "FAIL: the summary counts ${n:-no} streamless thread(s), not ${#lost[@]}"; exit 1; }
fi
echo "PASS: $blocks blocks regenerated from the whole chunks of a killed program${threads:+; its ${#lost[@]} thread(s) without a stream named}"
