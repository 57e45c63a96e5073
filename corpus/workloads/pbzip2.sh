#!/usr/bin/env bash
# pbzip2 workload (C++, pthreads): parallel compression and decompression
# with 2 threads (-p2) and small blocks so that both threads get work; the
# output order is fixed by pbzip2's output queue, not by scheduling.
# Usage: pbzip2.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

gen_text 4 20000 >text.txt
awk 'BEGIN { for (i = 0; i < 15000; i++) print substr("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxyyyyyyyyyyyyyyyyyyyyzzzzzzzzz", 1, 1 + (i * 11) % 60) }' >runs.txt

run "compress -p2 -b1 -9" "$B" -p2 -b1 -9 -c text.txt >text.b1.bz2
run "compress -p2 -b3 -5" "$B" -p2 -b3 -5 -c text.txt >text.b3.bz2
run "compress -p2 stdin" "$B" -p2 -b2 -c <runs.txt >runs.bz2
run "compress -p2 -m" "$B" -p2 -m5 -b1 -1 -c text.txt >text.m.bz2
cp text.txt keep.txt
run "compress in place" "$B" -p2 -b2 -k keep.txt

run "decompress -p2" "$B" -p2 -d -c text.b1.bz2 >text.b1.out
run "decompress -p2 b3" "$B" -p2 -d -c text.b3.bz2 >text.b3.out
run "decompress -p2 stdin" "$B" -p2 -d -c <runs.bz2 >runs.out
run "decompress -p2 in place" "$B" -p2 -d -f keep.txt.bz2
run "test -p2" "$B" -p2 -t text.b1.bz2 text.m.bz2 runs.bz2
run "decompress -p1" "$B" -p1 -d -c text.m.bz2 >text.m.out

# error paths
# A corrupt or truncated input ends the process from a consumer thread
# (exit): how much output precedes the error, and how many blocks the other
# threads have started by then, depend on thread timing.  The output is
# discarded; and the oracles that compare counts (WORKLOAD_ONE_THREAD=1)
# leave these two runs out (BZ2_bzDecompressInit's calls varied between
# dyninst's runs, main's last calls between syscall's).
if [[ ${WORKLOAD_ONE_THREAD:-} != 1 ]]; then
  cp text.b1.bz2 corrupt.bz2
  printf 'XYZ' | dd of=corrupt.bz2 bs=1 seek=100000 conv=notrunc status=none
  run "corrupt" "$B" -p2 -d -c corrupt.bz2 >/dev/null
  head -c 120000 text.b3.bz2 >trunc.bz2
  run "truncated" "$B" -p2 -d -c trunc.bz2 >/dev/null
fi
run "not bzip2" "$B" -p2 -d -c text.txt >/dev/null
run "missing" "$B" -p2 -d no-such-file.bz2
