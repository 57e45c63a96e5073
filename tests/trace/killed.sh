#!/usr/bin/env bash
# killed.sh ATOMX PROG: PROG, traced, killed by SIGKILL once it has written a
# few chunks: `atomx regen` must regenerate every whole chunk (as many
# blocks as the naive count of a prefix of the run: at least one chunk's
# worth) and say that the stream was cut short, with exit status 1.
set -euo pipefail
atomx=$1 prog=$2
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
"$atomx" trace -q --cache-dir "$w/cache" -o "$w/t" -- "$prog" >/dev/null &
pid=$!
# Wait for the first chunk (1 MiB of stream before compression), let a few
# more come, then kill the program (atomx's child).
for _ in $(seq 1200); do
  size=$(stat -c %s "$w"/t/thread.*.axt 2>/dev/null | head -n 1 || true)
  [[ -n "$size" && "$size" -gt 0 ]] && break
  sleep 0.05
done
sleep 0.5
child=""
for stat in /proc/[0-9]*/stat; do  # atomx's child (pgrep needs procps)
  read -r cpid _ _ ppid _ <"$stat" 2>/dev/null || continue
  [[ $ppid == "$pid" ]] && child=$cpid
done
[[ -n "$child" ]] || { echo "FAIL: the traced program ended before it could be killed"; exit 1; }
kill -KILL "$child"
wait "$pid" && { echo "FAIL: atomx trace exited 0 for a killed program"; exit 1; } || status=$?
[[ $status == 137 ]] || { echo "FAIL: atomx trace exited $status, not 137 (128+SIGKILL)"; exit 1; }
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
echo "PASS: $blocks blocks regenerated from the whole chunks of a killed program"
