#!/usr/bin/env bash
# term.sh ATOMX SLEEPER: SIGTERM sent to `atomx run` alone (kill PID, as a
# job scheduler does) reaches the program: it ends as a program killed by
# SIGTERM ends under the tool (its report written), atomx waits for it and
# exits 143, and nothing is left running.
set -u
atomx=$1 prog=$2
work=$(mktemp -d /tmp/atomx-term.XXXXXX)
child=
trap '[ -n "$child" ] && kill -KILL "$child" 2>/dev/null; rm -rf "$work"' EXIT
cp "$prog" "$work/sleeper"
cd "$work"
"$atomx" run -q --cache-dir "$work/cache" -T dyninst -- "$work/sleeper" >out.txt 2>err.txt &
pid=$!
# Wait for the program itself (atomx's child, after the rewrite) to run.
child=
for _ in $(seq 1 600); do
  child=$(pgrep -P $pid) && break
  sleep 0.1
done
[ -n "$child" ] || { echo "FAIL: the program never started"; cat err.txt; exit 1; }
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
sleep 0.5
fail=0
[ $rc -eq 143 ] && echo "PASS atomx exited 143" || { echo "FAIL: atomx exited $rc, not 143"; fail=1; }
if kill -0 "$child" 2>/dev/null; then echo "FAIL: the program (pid $child) is still running after atomx exited"; fail=1
else echo "PASS the program ended with atomx"; fi
[ -s dyninst.out ] && echo "PASS dyninst.out written" || { echo "FAIL: no dyninst.out (the program's report)"; fail=1; }
exit $fail
